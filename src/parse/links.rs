//! Turns the links found in a page into outlinks: resolution against the page
//! URL or `<base href>`, dropping of non-navigational schemes, normalization
//! with [`UrlPolicy`], de-duplication (first occurrence wins; the first
//! non-empty anchor is kept), the `parse.max_outlinks` cap, and anchor capping.

use std::collections::HashMap;

use url::Url;

use super::html::RawLink;
use super::text::truncate_chars;
use crate::records::Outlink;
use crate::urls::UrlPolicy;

/// An outlink with whether the URL policy lets it into the crawldb.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedLink {
    /// The outlink as stored in `parse_data.outlinks`.
    pub link: Outlink,
    /// Whether it passes every `[urls]` filter (scope, rules, traps, length).
    pub allowed: bool,
}

/// Schemes that never name a fetchable page.
fn is_dropped_scheme(href: &str) -> bool {
    let h = href.trim_start();
    let Some(colon) = h.find(':') else {
        return false;
    };
    // The scheme, lowercased and without ASCII whitespace, in a stack buffer:
    // no allocation per link.
    let mut scheme = [0u8; 10];
    let mut n = 0;
    for b in h[..colon].bytes().filter(|b| !b.is_ascii_whitespace()) {
        if n == scheme.len() {
            return false;
        }
        scheme[n] = b.to_ascii_lowercase();
        n += 1;
    }
    matches!(
        &scheme[..n],
        b"javascript" | b"mailto" | b"data" | b"tel" | b"vbscript" | b"about" | b"sms" | b"file"
    )
}

/// The base URL of a page: `<base href>` resolved against the page URL when it
/// gives an http(s) URL, else the page URL.
pub fn base_url(page: &Url, base_href: Option<&str>) -> Url {
    base_href
        .and_then(|b| page.join(b.trim()).ok())
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .unwrap_or_else(|| page.clone())
}

/// Resolves `href` against `base` without normalization (for cross-checks).
pub fn resolve_raw(base: &Url, href: &str) -> Option<Url> {
    base.join(href.trim()).ok()
}

/// Options of [`resolve`].
#[derive(Debug, Clone)]
pub struct LinkOptions {
    /// Schemes kept (`urls.schemes`).
    pub schemes: Vec<String>,
    /// Distinct outlinks kept.
    pub max_outlinks: usize,
    /// Anchor length cap in chars.
    pub max_anchor_length: usize,
}

/// Resolves, normalizes, filters and de-duplicates `raw` links.
pub fn resolve(
    base: &Url,
    raw: &[RawLink],
    policy: &UrlPolicy,
    opts: &LinkOptions,
) -> Vec<ResolvedLink> {
    let mut out: Vec<ResolvedLink> = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    // What each distinct raw href became (index into `out`, or `None` when it
    // was dropped or over the cap): repeated hrefs (navigation, headers and
    // footers repeat links) are resolved and normalized once.
    let mut by_href: HashMap<&str, Option<usize>> = HashMap::new();
    for r in raw {
        let anchor_src = if r.text.is_empty() { &r.alt } else { &r.text };
        if let Some(&known) = by_href.get(r.href.as_str()) {
            if let Some(i) = known {
                merge(&mut out[i].link, anchor_src, r.nofollow, opts);
            }
            continue;
        }
        let slot = resolve_one(base, r, policy, opts).and_then(|url| {
            if let Some(&i) = seen.get(url.as_str()) {
                merge(&mut out[i].link, anchor_src, r.nofollow, opts);
                return Some(i);
            }
            if out.len() >= opts.max_outlinks {
                return None;
            }
            let allowed = policy.check_normalized(&url).is_ok();
            let key: String = url.into();
            seen.insert(key.clone(), out.len());
            out.push(ResolvedLink {
                link: Outlink {
                    url: key,
                    anchor: truncate_chars(anchor_src, opts.max_anchor_length),
                    nofollow: r.nofollow,
                },
                allowed,
            });
            Some(out.len() - 1)
        });
        by_href.insert(r.href.as_str(), slot);
    }
    out
}

/// The normalized URL of one raw link, or `None` when it is dropped.
fn resolve_one(base: &Url, r: &RawLink, policy: &UrlPolicy, opts: &LinkOptions) -> Option<Url> {
    if is_dropped_scheme(&r.href) {
        return None;
    }
    let url = resolve_raw(base, &r.href)?;
    if !opts.schemes.iter().any(|s| s == url.scheme()) {
        return None;
    }
    policy.normalize(url).ok()
}

/// Another occurrence of a link already kept: the first non-empty anchor wins,
/// and a link is nofollow only when every occurrence is.
fn merge(existing: &mut Outlink, anchor_src: &str, nofollow: bool, opts: &LinkOptions) {
    if existing.anchor.is_empty() && !anchor_src.is_empty() {
        existing.anchor = truncate_chars(anchor_src, opts.max_anchor_length);
    }
    existing.nofollow &= nofollow;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::UrlConfig;
    use crate::parse::html::walk;

    fn links(html: &str, page: &str) -> Vec<ResolvedLink> {
        let doc = scraper::Html::parse_document(html);
        let ex = walk(&doc, "trawl");
        let page = Url::parse(page).unwrap();
        let base = base_url(&page, ex.base_href.as_deref());
        let policy = UrlPolicy::new(&UrlConfig::default(), &[]).unwrap();
        let opts = LinkOptions {
            schemes: vec!["http".into(), "https".into()],
            max_outlinks: 100,
            max_anchor_length: 10,
        };
        resolve(&base, &ex.links, &policy, &opts)
    }

    fn urls(v: &[ResolvedLink]) -> Vec<&str> {
        v.iter().map(|l| l.link.url.as_str()).collect()
    }

    #[test]
    fn relative_and_protocol_relative() {
        let v = links(
            "<a href='b/c'>x</a><a href='../up'>u</a><a href='//other.test/p'>o</a><a href='?q=1'>q</a>",
            "https://a.test/dir/page.html",
        );
        assert_eq!(
            urls(&v),
            vec![
                "https://a.test/dir/b/c",
                "https://a.test/up",
                "https://other.test/p",
                "https://a.test/dir/page.html?q=1"
            ]
        );
    }

    #[test]
    fn base_href_is_used() {
        let v = links(
            "<head><base href='http://cdn.test/root/'></head><a href='x'>x</a>",
            "http://a.test/p",
        );
        assert_eq!(urls(&v), vec!["http://cdn.test/root/x"]);
        let v = links(
            "<head><base href='/sub/'></head><a href='x'>x</a>",
            "http://a.test/p",
        );
        assert_eq!(urls(&v), vec!["http://a.test/sub/x"]);
    }

    #[test]
    fn fragments_entities_whitespace() {
        let v = links(
            "<a href='/p#top'>a</a><a href='/p#other'>b</a><a href='/q?a=1&amp;b=2'>c</a><a href='  /w\n '>d</a><a href='#'>e</a>",
            "http://a.test/",
        );
        assert_eq!(
            urls(&v),
            vec![
                "http://a.test/p",
                "http://a.test/q?a=1&b=2",
                "http://a.test/w",
                "http://a.test/"
            ]
        );
        assert_eq!(v[0].link.anchor, "a", "first anchor kept");
    }

    #[test]
    fn drops_schemes_and_keeps_first_nonempty_anchor() {
        let v = links(
            "<a href='javascript:void(0)'>j</a><a href='mailto:x@y'>m</a><a href='data:text/html,x'>d</a>\
            <a href='tel:123'>t</a><a href='ftp://f.test/'>f</a><a href='/x'></a><a href='/x'>A very long anchor text</a>",
            "http://a.test/",
        );
        assert_eq!(urls(&v), vec!["http://a.test/x"]);
        assert_eq!(v[0].link.anchor, "A very lon");
        for dropped in [
            " JavaScript:x",
            "java\tscript:x",
            "DATA:x",
            "vbscript:x",
            "about:blank",
        ] {
            assert!(is_dropped_scheme(dropped), "{dropped}");
        }
        for kept in ["http://x", "/a:b", "javascripts:x", "x", "ja\u{e9}:x"] {
            assert!(!is_dropped_scheme(kept), "{kept}");
        }
    }

    #[test]
    fn nofollow_and_cap() {
        let v = links(
            "<a rel=nofollow href=/n>n</a><a href=/f rel=nofollow>f</a><a href=/f>f2</a>",
            "http://a.test/",
        );
        assert!(v[0].link.nofollow);
        assert!(!v[1].link.nofollow);
        let many: String = (0..200).map(|i| format!("<a href=/p{i}>p</a>")).collect();
        assert_eq!(links(&many, "http://a.test/").len(), 100);
    }
}
