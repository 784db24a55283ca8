//! Parsing one page: never fails; a page that cannot be parsed becomes a
//! `parse_failed` row with a reason.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use url::Url;

use super::charset::{self, Decoded};
use super::document::{self, Format};
use super::html::{self, Extract};
use super::links::{self, LinkOptions, ResolvedLink};
use super::maintext;
use super::robots_meta::RobotsDirectives;
use super::signature;
use super::text::collapse;
use crate::config::Config;
use crate::records::{Header, ParseDataRecord, ParseTextRecord};
use crate::urls::UrlPolicy;

/// `parse_data.status` of a parsed page.
pub const PARSE_SUCCESS: &str = "parse_success";
/// `parse_data.status` of a page that could not be parsed.
pub const PARSE_FAILED: &str = "parse_failed";

/// What parse needs of one `content` row.
#[derive(Debug, Clone, Copy)]
pub struct PageInput<'a> {
    /// The page URL.
    pub url: &'a str,
    /// The Content-Type header.
    pub content_type: Option<&'a str>,
    /// All response headers.
    pub headers: &'a [Header],
    /// The body.
    pub content: &'a [u8],
    /// Whether the body was cut by fetch.
    pub truncated: bool,
}

/// Parsing options (from `[parse]`, `[urls]` and `fetch.robots_agent`).
#[derive(Debug, Clone)]
pub struct PageOpts {
    /// Link options.
    pub links: LinkOptions,
    /// Pages larger than this are `parse_failed` / `too_large`.
    pub max_page_bytes: usize,
    /// Time budget per page, checked between phases; 0 = none.
    pub max_page_millis: u64,
    /// The robots agent name (`<meta name=AGENT>`, `X-Robots-Tag: AGENT: ...`).
    pub agent: String,
    /// The budget of each document (PDF) read.
    pub documents: document::Limits,
}

impl PageOpts {
    /// Options from the configuration.
    pub fn from_config(cfg: &Config) -> Self {
        PageOpts {
            links: LinkOptions {
                schemes: cfg.urls.schemes.clone(),
                max_outlinks: cfg.parse.max_outlinks,
                max_anchor_length: cfg.parse.max_anchor_length,
            },
            max_page_bytes: cfg.parse.max_page_bytes,
            max_page_millis: cfg.parse.max_page_millis,
            agent: cfg.fetch.robots_agent.clone(),
            documents: document::Limits {
                max_pages: cfg.parse.max_document_pages,
                max_millis: cfg.parse.max_document_millis,
                max_memory_mb: cfg.parse.max_document_memory_mb,
                max_text_bytes: cfg.parse.max_page_bytes,
            },
        }
    }
}

/// The result of parsing one page.
#[derive(Debug, Clone)]
pub struct ParsedPage {
    /// The `parse_data` row.
    pub data: ParseDataRecord,
    /// The `parse_text` row.
    pub text: ParseTextRecord,
    /// Outlinks with whether the URL policy allows them (parallel to `data.outlinks`).
    pub links: Vec<ResolvedLink>,
}

impl ParsedPage {
    /// A page with no text and no links (failed, or not a text type).
    fn without_text(input: &PageInput<'_>, data: ParseDataRecord) -> ParsedPage {
        ParsedPage {
            data,
            text: ParseTextRecord {
                url: input.url.to_string(),
                text: String::new(),
                main_text: None,
            },
            links: Vec::new(),
        }
    }
}

impl ParsedPage {
    /// Whether parsing succeeded.
    pub fn ok(&self) -> bool {
        self.data.status == PARSE_SUCCESS
    }
}

/// What kind of document a body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocKind {
    /// HTML or XHTML.
    Html,
    /// Plain text.
    Text,
    /// A document read by [`document`] (PDF, office formats).
    Document(Format),
    /// An RSS or Atom feed ([`document::feed`]).
    Feed,
    /// Anything else (images, binaries, ...).
    Other,
}

/// The media type of a Content-Type value, lowercase, without parameters.
pub fn mime_of(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Classifies a body: a document by its first bytes whatever the Content-Type says
/// (servers send PDFs as `text/html` or `application/octet-stream`), else by its
/// Content-Type, sniffing when it is missing or generic.
pub fn classify(content_type: Option<&str>, bytes: &[u8]) -> DocKind {
    if let Some(f) = document::sniff(bytes) {
        return DocKind::Document(f);
    }
    let mime = content_type.map(mime_of).unwrap_or_default();
    if let Some(f) = Format::from_media_type(&mime) {
        return DocKind::Document(f);
    }
    let html = matches!(mime.as_str(), "text/html" | "application/xhtml+xml");
    if !html && document::feed::sniff(bytes) {
        return DocKind::Feed;
    }
    match mime.as_str() {
        "text/html" | "application/xhtml+xml" | "application/xhtml" => DocKind::Html,
        "text/plain" => DocKind::Text,
        "" | "application/octet-stream" | "unknown/unknown" => sniff(bytes),
        _ => DocKind::Other,
    }
}

fn sniff(bytes: &[u8]) -> DocKind {
    let head = &bytes[..bytes.len().min(1024)];
    let start = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(head.len());
    let lower = head[start..].to_ascii_lowercase();
    let html_marks: [&[u8]; 5] = [b"<!doctype html", b"<html", b"<head", b"<body", b"<title"];
    if html_marks.iter().any(|m| lower.starts_with(m))
        || (lower.starts_with(b"<") && lower.windows(5).any(|w| w == b"<html"))
    {
        return DocKind::Html;
    }
    if head.contains(&0)
        || std::str::from_utf8(head).is_err() && !head.iter().all(|b| b.is_ascii() || *b >= 0x80)
    {
        return DocKind::Other;
    }
    if head
        .iter()
        .filter(|b| b.is_ascii_control() && !b.is_ascii_whitespace())
        .count()
        * 20
        > head.len().max(1)
    {
        DocKind::Other
    } else {
        DocKind::Text
    }
}

struct Budget {
    start: Instant,
    limit: Option<Duration>,
}

impl Budget {
    fn exceeded(&self) -> bool {
        self.limit.is_some_and(|l| self.start.elapsed() > l)
    }
}

fn empty_data(input: &PageInput<'_>, status: &str, reason: &str) -> ParseDataRecord {
    ParseDataRecord {
        url: input.url.to_string(),
        status: status.to_string(),
        reason: reason.to_string(),
        title: None,
        content_type: input.content_type.map(str::to_string),
        charset: None,
        charset_source: None,
        lang: None,
        canonical: None,
        noindex: false,
        nofollow: false,
        noarchive: false,
        outlinks: Vec::new(),
        signature: None,
        simhash: None,
        metadata: BTreeMap::new(),
    }
}

fn failed(input: &PageInput<'_>, reason: &str, detail: String) -> ParsedPage {
    let mut data = empty_data(input, PARSE_FAILED, reason);
    data.metadata
        .insert("size".into(), input.content.len().to_string());
    if !detail.is_empty() {
        data.metadata.insert("error".into(), detail);
    }
    ParsedPage::without_text(input, data)
}

/// Robots directives from the `X-Robots-Tag` headers.
fn header_robots(headers: &[Header], agent: &str) -> RobotsDirectives {
    let mut r = RobotsDirectives::default();
    for h in headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("x-robots-tag"))
    {
        r.apply_header(&h.value, agent);
    }
    r
}

/// Parses one page. Never fails: problems become `parse_failed` rows.
pub fn parse_page(input: &PageInput<'_>, opts: &PageOpts, policy: &UrlPolicy) -> ParsedPage {
    let budget = Budget {
        start: Instant::now(),
        limit: (opts.max_page_millis > 0).then(|| Duration::from_millis(opts.max_page_millis)),
    };
    if input.content.len() > opts.max_page_bytes {
        return failed(
            input,
            "too_large",
            format!(
                "{} bytes > parse.max_page_bytes {}",
                input.content.len(),
                opts.max_page_bytes
            ),
        );
    }
    let page_url = match Url::parse(input.url) {
        Ok(u) => u,
        Err(e) => return failed(input, "bad_url", e.to_string()),
    };
    let kind = classify(input.content_type, input.content);
    let robots = header_robots(input.headers, &opts.agent);
    let tld = page_url
        .host_str()
        .and_then(|h| h.rsplit('.').next())
        .map(str::to_string);
    let mut data = empty_data(input, PARSE_SUCCESS, "ok");
    data.metadata
        .insert("size".into(), input.content.len().to_string());
    if input.truncated {
        data.metadata.insert("truncated".into(), "true".into());
    }
    match kind {
        DocKind::Other => {
            data.reason = "not_html".into();
            data.metadata.insert(
                "type".into(),
                input
                    .content_type
                    .map(mime_of)
                    .unwrap_or_else(|| "unknown".into()),
            );
            data.signature = Some(signature::bytes_signature(input.content));
            apply_robots(&mut data, robots);
            ParsedPage::without_text(input, data)
        }
        DocKind::Text => parse_text(input, data, robots, tld.as_deref()),
        DocKind::Document(format) => {
            parse_document(input, opts, policy, &page_url, format, data, robots)
        }
        DocKind::Feed => parse_feed(input, opts, policy, &page_url, data, robots, tld.as_deref()),
        DocKind::Html => parse_html(
            input,
            opts,
            policy,
            &Page {
                url: &page_url,
                tld: tld.as_deref(),
                budget,
            },
            data,
            robots,
        ),
    }
}

/// A plain-text page: decoded, collapsed and signed.
fn parse_text(
    input: &PageInput<'_>,
    mut data: ParseDataRecord,
    robots: RobotsDirectives,
    tld: Option<&str>,
) -> ParsedPage {
    let dec = charset::decode(input.content, input.content_type, tld, false);
    set_charset(&mut data, &dec);
    let text = collapse(&dec.text);
    let (sig, simhash) = signature::sign(&text);
    data.signature = Some(sig.unwrap_or_else(|| signature::bytes_signature(input.content)));
    data.simhash = simhash;
    apply_robots(&mut data, robots);
    ParsedPage {
        data,
        text: ParseTextRecord {
            url: input.url.to_string(),
            text,
            main_text: None,
        },
        links: Vec::new(),
    }
}

/// A document (PDF): read by the `docparse` helper within `opts.documents`, then
/// signed and linked like an HTML page. Its whole text is its main text (a document
/// has no navigation to leave out), a line per line of the document.
fn parse_document(
    input: &PageInput<'_>,
    opts: &PageOpts,
    policy: &UrlPolicy,
    url: &Url,
    format: Format,
    mut data: ParseDataRecord,
    robots: RobotsDirectives,
) -> ParsedPage {
    let declared = input.content_type.map(mime_of);
    let detected = format.media_type();
    if input.truncated {
        return failed(
            input,
            "truncated",
            format!(
                "the {} was cut at fetch.max_content_bytes ({} bytes); raise it to parse \
                 documents this large",
                format.name(),
                input.content.len()
            ),
        );
    }
    let ex = match document::isolate::extract(format, input.content, &opts.documents) {
        Ok(ex) => ex,
        Err(e) => {
            let mut page = failed(input, e.reason(), e.to_string());
            page.data
                .metadata
                .insert("format".into(), format.name().into());
            return page;
        }
    };
    data.content_type = Some(detected.to_string());
    if let Some(d) = declared.filter(|d| d != detected) {
        data.metadata.insert("declared_content_type".into(), d);
    }
    data.metadata.insert("format".into(), format.name().into());
    with_extracted(input, opts, policy, url, ex, data, robots)
}

/// An RSS or Atom feed: decoded like a text page, read in this process (quick-xml,
/// streaming); its items' links are its outlinks, their titles the anchors.
fn parse_feed(
    input: &PageInput<'_>,
    opts: &PageOpts,
    policy: &UrlPolicy,
    url: &Url,
    mut data: ParseDataRecord,
    robots: RobotsDirectives,
    tld: Option<&str>,
) -> ParsedPage {
    let dec = charset::decode(input.content, input.content_type, tld, false);
    set_charset(&mut data, &dec);
    let ex = match document::feed::extract(dec.text.as_bytes()) {
        Ok(ex) => ex,
        Err(e) => return failed(input, "document_failed", e),
    };
    data.metadata.insert("format".into(), "feed".into());
    with_extracted(input, opts, policy, url, ex, data, robots)
}

/// A document's parse from what was extracted: title, metadata, text (all of it main
/// text, a line per line), links resolved and filtered like a page's, signatures.
fn with_extracted(
    input: &PageInput<'_>,
    opts: &PageOpts,
    policy: &UrlPolicy,
    url: &Url,
    ex: document::Extracted,
    mut data: ParseDataRecord,
    robots: RobotsDirectives,
) -> ParsedPage {
    data.metadata.extend(ex.metadata);
    data.title = ex.title;
    let lines: Vec<String> = ex
        .text
        .lines()
        .map(collapse)
        .filter(|l| !l.is_empty())
        .collect();
    let main = lines.join("\n");
    let text = collapse(&main);
    let raw: Vec<html::RawLink> = ex
        .links
        .into_iter()
        .map(|l| html::RawLink {
            tag: "document",
            href: l.href,
            text: l.anchor,
            alt: String::new(),
            nofollow: false,
        })
        .collect();
    let resolved = links::resolve(url, &raw, policy, &opts.links);
    let (sig, simhash) = signature::sign(&main);
    data.signature = Some(sig.unwrap_or_else(|| signature::bytes_signature(input.content)));
    data.simhash = simhash;
    data.outlinks = resolved.iter().map(|l| l.link.clone()).collect();
    apply_robots(&mut data, robots);
    ParsedPage {
        data,
        text: ParseTextRecord {
            url: input.url.to_string(),
            text,
            main_text: (!main.is_empty()).then_some(main),
        },
        links: resolved,
    }
}

/// What an HTML page's parse knows of the page besides its input.
struct Page<'a> {
    url: &'a Url,
    /// The host's last label (a charset hint).
    tld: Option<&'a str>,
    budget: Budget,
}

/// An HTML page: decoded, flattened, walked once; main text, links, signatures and
/// robots directives (headers' and the page's). A `parse_failed` row when the time
/// budget runs out between two steps.
fn parse_html(
    input: &PageInput<'_>,
    opts: &PageOpts,
    policy: &UrlPolicy,
    page: &Page<'_>,
    mut data: ParseDataRecord,
    mut robots: RobotsDirectives,
) -> ParsedPage {
    let budget = &page.budget;
    let dec = charset::decode(input.content, input.content_type, page.tld, true);
    set_charset(&mut data, &dec);
    if budget.exceeded() {
        return failed(input, "time_budget", "after decoding".into());
    }
    let markup = super::nesting::flatten(&dec.text, super::nesting::MAX_DEPTH);
    if matches!(markup, std::borrow::Cow::Owned(_)) {
        data.metadata.insert("flattened".into(), "true".into());
    }
    let doc = scraper::Html::parse_document(&markup);
    if budget.exceeded() {
        return failed(input, "time_budget", "after building the DOM".into());
    }
    let ex = html::walk(&doc, &opts.agent);
    drop(doc);
    if budget.exceeded() {
        return failed(input, "time_budget", "after the DOM walk".into());
    }
    let main = maintext::main_text(&ex);
    if budget.exceeded() {
        return failed(input, "time_budget", "after main-text extraction".into());
    }
    let text = ex.text();
    robots.noindex |= ex.robots.noindex;
    robots.nofollow |= ex.robots.nofollow;
    robots.noarchive |= ex.robots.noarchive;
    let base = links::base_url(page.url, ex.base_href.as_deref());
    let resolved = links::resolve(&base, &ex.links, policy, &opts.links);
    fill_html(&mut data, &ex, &base);
    let signed = main.as_deref().filter(|m| !m.is_empty()).unwrap_or(&text);
    let (sig, simhash) = signature::sign(signed);
    let sig = match sig {
        Some(s) => Some(s),
        None => signature::text_signature(&text),
    };
    data.signature = Some(sig.unwrap_or_else(|| signature::bytes_signature(input.content)));
    data.simhash = simhash;
    data.outlinks = resolved.iter().map(|l| l.link.clone()).collect();
    apply_robots(&mut data, robots);
    ParsedPage {
        data,
        text: ParseTextRecord {
            url: input.url.to_string(),
            text,
            main_text: main,
        },
        links: resolved,
    }
}

fn set_charset(data: &mut ParseDataRecord, dec: &Decoded) {
    data.charset = Some(dec.encoding.name().to_string());
    data.charset_source = Some(dec.source.as_str().to_string());
    if let Some(d) = &dec.declared {
        data.metadata.insert("declared_charset".into(), d.clone());
    }
    if dec.had_errors {
        data.metadata.insert("decode_errors".into(), "true".into());
    }
}

fn apply_robots(data: &mut ParseDataRecord, r: RobotsDirectives) {
    data.noindex = r.noindex;
    data.nofollow = r.nofollow;
    data.noarchive = r.noarchive;
}

fn fill_html(data: &mut ParseDataRecord, ex: &Extract, base: &Url) {
    data.title = ex.title.clone();
    data.lang = ex.lang.clone();
    data.canonical = ex
        .canonical
        .as_deref()
        .and_then(|c| base.join(c.trim()).ok())
        .map(|u| u.to_string());
    let m = &mut data.metadata;
    if let Some(d) = &ex.description {
        m.insert("description".into(), d.clone());
    }
    if let Some(k) = &ex.keywords {
        m.insert("keywords".into(), k.clone());
    }
    for level in 1..=3u8 {
        let hs: Vec<&str> = ex
            .headings
            .iter()
            .filter(|(l, _)| *l == level)
            .map(|(_, h)| h.as_str())
            .collect();
        if !hs.is_empty() {
            m.insert(format!("h{level}"), hs.join("\n"));
        }
    }
    // The headings a link can point at: `level<TAB>id<TAB>text` lines (the index
    // links a result to the section that matches, docs/search.md).
    let sections: Vec<String> = ex
        .sections
        .iter()
        .filter(|(_, id, h)| !id.contains(['\t', '\n']) && !h.contains(['\t', '\n']))
        .map(|(level, id, h)| format!("{level}\t{id}\t{h}"))
        .collect();
    if !sections.is_empty() {
        m.insert("sections".into(), sections.join("\n"));
    }
    if let Some(b) = &ex.base_href {
        m.insert("base_href".into(), b.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::UrlConfig;

    fn opts() -> PageOpts {
        PageOpts::from_config(&Config::default())
    }

    fn parse(url: &str, ct: Option<&str>, headers: &[Header], body: &[u8]) -> ParsedPage {
        let policy = UrlPolicy::new(&UrlConfig::default(), &[]).unwrap();
        parse_page(
            &PageInput {
                url,
                content_type: ct,
                headers,
                content: body,
                truncated: false,
            },
            &opts(),
            &policy,
        )
    }

    #[test]
    fn html_page_fields() {
        let p = parse("http://a.test/x/p.html", Some("text/html"), &[],
            b"<html lang=en><head><title>T</title><link rel=canonical href='/canon'><meta name=robots content=noarchive></head>\
              <body><h1>Head</h1><p>Body text.</p><a href='q'>Q</a></body></html>");
        assert!(p.ok());
        assert_eq!(p.data.title.as_deref(), Some("T"));
        assert_eq!(p.data.canonical.as_deref(), Some("http://a.test/canon"));
        assert!(p.data.noarchive && !p.data.nofollow);
        assert_eq!(p.data.metadata.get("h1").map(String::as_str), Some("Head"));
        assert_eq!(p.data.outlinks.len(), 1);
        assert_eq!(p.data.outlinks[0].url, "http://a.test/x/q");
        assert_eq!(p.text.text, "Head Body text. Q");
        assert_eq!(p.data.signature.as_ref().map(String::len), Some(64));
        assert_eq!(p.data.charset_source.as_deref(), Some("detected"));
    }

    #[test]
    fn x_robots_tag_header() {
        let h = [Header {
            name: "x-robots-tag".into(),
            value: "noindex, nofollow".into(),
        }];
        let p = parse("http://a.test/", Some("text/html"), &h, b"<a href=/x>x</a>");
        assert!(p.data.noindex && p.data.nofollow);
        assert_eq!(p.data.outlinks.len(), 1, "outlinks are still recorded");
    }

    #[test]
    fn non_html_is_metadata_only() {
        let p = parse(
            "http://a.test/i.png",
            Some("image/png"),
            &[],
            &[0x89, b'P', b'N', b'G', 0, 0],
        );
        assert!(p.ok());
        assert_eq!(p.data.reason, "not_html");
        assert_eq!(
            p.data.metadata.get("type").map(String::as_str),
            Some("image/png")
        );
        assert!(p.data.outlinks.is_empty());
        let t = parse(
            "http://a.test/r.txt",
            Some("text/plain; charset=utf-8"),
            &[],
            b"plain  <a href=x>text</a>\n",
        );
        assert_eq!(t.text.text, "plain <a href=x>text</a>");
        assert!(t.data.outlinks.is_empty());
        assert_eq!(classify(None, b"  <!DOCTYPE html><p>x"), DocKind::Html);
        assert_eq!(classify(None, b"hello"), DocKind::Text);
        assert_eq!(classify(None, &[0, 1, 2, 3]), DocKind::Other);
    }

    #[test]
    fn documents_are_told_by_their_bytes_and_a_cut_one_is_not_read() {
        let pdf = Format::Pdf;
        assert_eq!(
            classify(Some("text/html"), b"%PDF-1.7\n"),
            DocKind::Document(pdf)
        );
        assert_eq!(
            classify(Some("application/octet-stream"), b"\n%PDF-1.4"),
            DocKind::Document(pdf)
        );
        assert_eq!(
            classify(Some("application/pdf"), b"garbage"),
            DocKind::Document(pdf)
        );
        assert_eq!(
            classify(Some("text/html"), b"<p>%PDF-1.4</p>"),
            DocKind::Html
        );
        let policy = UrlPolicy::new(&UrlConfig::default(), &[]).unwrap();
        let p = parse_page(
            &PageInput {
                url: "http://a.test/r.pdf",
                content_type: Some("application/pdf"),
                headers: &[],
                content: b"%PDF-1.4\n1 0 obj",
                truncated: true,
            },
            &opts(),
            &policy,
        );
        assert_eq!(
            (p.data.status.as_str(), p.data.reason.as_str()),
            ("parse_failed", "truncated")
        );
        assert!(p.data.metadata["error"].contains("fetch.max_content_bytes"));
    }

    #[test]
    fn too_large_fails() {
        let mut o = opts();
        o.max_page_bytes = 10;
        let policy = UrlPolicy::new(&UrlConfig::default(), &[]).unwrap();
        let p = parse_page(
            &PageInput {
                url: "http://a.test/",
                content_type: None,
                headers: &[],
                content: &[b'a'; 11],
                truncated: false,
            },
            &o,
            &policy,
        );
        assert!(!p.ok());
        assert_eq!(p.data.reason, "too_large");
    }

    #[test]
    fn robustness_inputs() {
        let deep = "<div>".repeat(100_000) + "deep text" + &"</div>".repeat(100_000);
        let p = parse("http://a.test/", Some("text/html"), &[], deep.as_bytes());
        assert!(p.ok());
        assert!(p.text.text.contains("deep text"));
        let deep_b = "<b><i>".repeat(50_000) + "x";
        assert!(parse("http://a.test/", Some("text/html"), &[], deep_b.as_bytes()).ok());
        let nul = b"<html><body><p>a\0b</p><a href='/x\0y'>l\0</a>\xff\xfe\x00</body>";
        let p = parse("http://a.test/", Some("text/html"), &[], nul);
        assert!(p.ok());
        let huge_attr = format!(
            "<a href='/{}' title='{}'>x</a>",
            "a".repeat(100_000),
            "t".repeat(1_000_000)
        );
        let p = parse(
            "http://a.test/",
            Some("text/html"),
            &[],
            huge_attr.as_bytes(),
        );
        assert!(p.ok());
        assert_eq!(p.links.len(), 1);
        assert!(!p.links[0].allowed, "over urls.max_length");
        let garbage: Vec<u8> = (0..100_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        assert!(parse("http://a.test/", Some("text/html"), &[], &garbage).ok());
        assert!(
            parse(
                "http://a.test/",
                Some("text/html"),
                &[],
                b"<<<>>><a href=\"><!--"
            )
            .ok()
        );
    }

    #[test]
    fn random_tag_soup_never_panics() {
        const PIECES: &[&str] = &[
            "<div>",
            "</div>",
            "<p>",
            "</p>",
            "<a href='/x'>",
            "</a>",
            "<a href=\"javascript:",
            "<table><tr><td>",
            "</td>",
            "<script>",
            "</script>",
            "<!--",
            "-->",
            "<title>",
            "</title>",
            "<base href=//b.test/>",
            "<meta charset=gbk>",
            "<meta http-equiv=refresh content='0;url=/r'>",
            "<img alt=\"",
            "\">",
            "text, ",
            "&amp;",
            "&#0;",
            "&#x110000;",
            "\u{0}",
            "é",
            "日本",
            "<svg><title>",
            "</svg>",
            "<template>",
            "<b><i>",
            "</b>",
            "<h1>",
            "</h2>",
            "<frameset><frame src=f>",
            "<noscript><a href=/n>",
            "<select><option>",
        ];
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        for _ in 0..300 {
            let mut doc = String::new();
            for _ in 0..60 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                doc.push_str(PIECES[(x % PIECES.len() as u64) as usize]);
            }
            let p = parse("http://a.test/d/", Some("text/html"), &[], doc.as_bytes());
            assert!(p.ok(), "{doc}");
            assert!(p.data.outlinks.iter().all(|l| l.url.starts_with("http")));
        }
    }
}
