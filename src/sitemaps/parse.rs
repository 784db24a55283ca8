//! The sitemap parser: XML `<urlset>` and `<sitemapindex>` (streamed with quick-xml),
//! plain-text sitemaps (one URL per line), gzip-compressed variants of both; the
//! protocol's limits (URLs and uncompressed bytes per file) and its scope rules.
//!
//! Parsing never fails as a whole: what is wrong (bad XML, bad dates, priorities,
//! change frequencies or URLs, URLs outside the scope, entries over the limit) is
//! reported as a [`Problem`] with its position, and everything before and besides it
//! is kept.

use std::cell::Cell;
use std::io::{BufRead, BufReader, Read};
use std::rc::Rc;

use quick_xml::events::Event;
use serde::{Deserialize, Serialize};
use url::Url;

use crate::datum::Millis;
use crate::urls::UrlPolicy;

/// Most URLs (or child sitemaps) one sitemap file may list (sitemaps.org).
pub const MAX_URLS: usize = 50_000;
/// Most uncompressed bytes one sitemap file may have (sitemaps.org: 50 MB = 52,428,800).
pub const MAX_BYTES: u64 = 52_428_800;
/// At most this many problems are kept per file (all are counted).
pub const MAX_PROBLEMS_KEPT: usize = 100;

/// `<changefreq>` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeFreq {
    /// Changes at every access.
    Always,
    /// Hourly.
    Hourly,
    /// Daily.
    Daily,
    /// Weekly.
    Weekly,
    /// Monthly.
    Monthly,
    /// Yearly.
    Yearly,
    /// Archived: never changes.
    Never,
}

impl ChangeFreq {
    /// Parses a `<changefreq>` value (case-insensitive, surrounding blanks ignored).
    pub fn parse(s: &str) -> Option<ChangeFreq> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "always" => ChangeFreq::Always,
            "hourly" => ChangeFreq::Hourly,
            "daily" => ChangeFreq::Daily,
            "weekly" => ChangeFreq::Weekly,
            "monthly" => ChangeFreq::Monthly,
            "yearly" => ChangeFreq::Yearly,
            "never" => ChangeFreq::Never,
            _ => return None,
        })
    }

    /// The lower-case protocol word.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeFreq::Always => "always",
            ChangeFreq::Hourly => "hourly",
            ChangeFreq::Daily => "daily",
            ChangeFreq::Weekly => "weekly",
            ChangeFreq::Monthly => "monthly",
            ChangeFreq::Yearly => "yearly",
            ChangeFreq::Never => "never",
        }
    }

    /// The re-fetch interval in seconds this frequency stands for: `always` and
    /// `hourly` one hour, `daily` one day, `weekly` 7 days, `monthly` 30 days,
    /// `yearly` 365 days, `never` `max_interval` (the longest trawl uses).
    pub fn interval_secs(self, max_interval: i64) -> i64 {
        match self {
            ChangeFreq::Always | ChangeFreq::Hourly => 3600,
            ChangeFreq::Daily => 86_400,
            ChangeFreq::Weekly => 7 * 86_400,
            ChangeFreq::Monthly => 30 * 86_400,
            ChangeFreq::Yearly => 365 * 86_400,
            ChangeFreq::Never => max_interval,
        }
    }
}

/// Parses a W3C datetime (the `<lastmod>` forms): `YYYY`, `YYYY-MM`, `YYYY-MM-DD`,
/// `YYYY-MM-DDThh:mmTZD`, `YYYY-MM-DDThh:mm:ssTZD`, `YYYY-MM-DDThh:mm:ss.sTZD`, with
/// TZD `Z` or `+hh:mm`/`-hh:mm`. A time without TZD is taken as UTC (common in the
/// wild). Returns milliseconds since the epoch, UTC.
pub fn parse_w3c_datetime(s: &str) -> Option<Millis> {
    use chrono::{NaiveDate, NaiveTime};
    let s = s.trim();
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let date = |d: &str| -> Option<NaiveDate> {
        let b = d.as_bytes();
        if d.len() != 10 || b[4] != b'-' || b[7] != b'-' {
            return None;
        }
        if !(digits(&d[..4]) && digits(&d[5..7]) && digits(&d[8..])) {
            return None;
        }
        NaiveDate::from_ymd_opt(
            d[..4].parse().ok()?,
            d[5..7].parse().ok()?,
            d[8..].parse().ok()?,
        )
    };
    let midnight = |d: NaiveDate| {
        d.and_hms_opt(0, 0, 0)
            .map(|t| t.and_utc().timestamp_millis())
    };
    if let Some((d, t)) = s.split_once('T') {
        let day = date(d)?;
        let (time, offset_secs) = split_tzd(t)?;
        let tb = time.as_bytes();
        let parsed = match time.len() {
            5 if tb[2] == b':' => NaiveTime::parse_from_str(time, "%H:%M").ok()?,
            n if n >= 8 && tb[2] == b':' && tb[5] == b':' => {
                if n > 8 && (tb[8] != b'.' || !digits(&time[9..])) {
                    return None;
                }
                NaiveTime::parse_from_str(time, "%H:%M:%S%.f").ok()?
            }
            _ => return None,
        };
        let ms = day.and_time(parsed).and_utc().timestamp_millis();
        return Some(ms - offset_secs * 1000);
    }
    match s.len() {
        4 if digits(s) => midnight(NaiveDate::from_ymd_opt(s.parse().ok()?, 1, 1)?),
        7 if digits(&s[..4]) && s.as_bytes()[4] == b'-' && digits(&s[5..]) => midnight(
            NaiveDate::from_ymd_opt(s[..4].parse().ok()?, s[5..].parse().ok()?, 1)?,
        ),
        10 => midnight(date(s)?),
        _ => None,
    }
}

/// Splits a time into the clock part and its offset from UTC in seconds.
fn split_tzd(t: &str) -> Option<(&str, i64)> {
    if let Some(clock) = t.strip_suffix(['Z', 'z']) {
        return Some((clock, 0));
    }
    let b = t.as_bytes();
    let n = b.len();
    if n >= 6 && (b[n - 6] == b'+' || b[n - 6] == b'-') {
        if b[n - 3] != b':' {
            return None;
        }
        let h: i64 = t[n - 5..n - 3].parse().ok()?;
        let m: i64 = t[n - 2..].parse().ok()?;
        if h > 23 || m > 59 {
            return None;
        }
        let sign = if b[n - 6] == b'-' { -1 } else { 1 };
        return Some((&t[..n - 6], sign * (h * 3600 + m * 60)));
    }
    Some((t, 0))
}

/// Where the URLs of a sitemap may be: a set of areas, each an origin
/// (`scheme://host[:port]`) and a path prefix.
///
/// sitemaps.org: a sitemap at `http://example.com/catalog/sitemap.xml` may list URLs
/// starting with `http://example.com/catalog/` only (same scheme, host and port); a
/// sitemap named in a host's robots.txt may list any URL of that host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scope {
    /// `(origin, path prefix)` pairs; a URL in any of them is in scope.
    pub areas: Vec<(String, String)>,
}

impl Scope {
    /// The scope of a sitemap by its location: its directory.
    pub fn of_location(sitemap: &Url) -> Scope {
        let path = sitemap.path();
        let dir = &path[..path.rfind('/').map_or(1, |i| i + 1)];
        Scope {
            areas: vec![(sitemap.origin().ascii_serialization(), dir.to_string())],
        }
    }

    /// The scope of a sitemap named in the robots.txt of `robots_origin`: that whole
    /// host, and the sitemap's own directory.
    pub fn from_robots(sitemap: &Url, robots_origin: &str) -> Scope {
        let mut s = Scope::of_location(sitemap);
        let host = (robots_origin.to_string(), "/".to_string());
        if !s.areas.contains(&host) {
            s.areas.insert(0, host);
        }
        s
    }

    /// Whether `url` is inside the scope.
    pub fn contains(&self, url: &Url) -> bool {
        let origin = url.origin().ascii_serialization();
        self.areas
            .iter()
            .any(|(o, prefix)| *o == origin && url.path().starts_with(prefix.as_str()))
    }

    /// A short description for reports (`http://a.test/dir/`, ...).
    pub fn describe(&self) -> String {
        self.areas
            .iter()
            .map(|(o, p)| format!("{o}{p}"))
            .collect::<Vec<_>>()
            .join(" or ")
    }
}

/// One `<url>` entry (or one line of a text sitemap) that was accepted.
#[derive(Debug, Clone, PartialEq)]
pub struct SitemapUrl {
    /// The URL, normalized by the URL policy.
    pub url: String,
    /// `<lastmod>` (ms UTC).
    pub lastmod: Option<Millis>,
    /// `<changefreq>`.
    pub changefreq: Option<ChangeFreq>,
    /// `<priority>`, in [0, 1].
    pub priority: Option<f64>,
}

/// One `<sitemap>` entry of a sitemap index.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildSitemap {
    /// The child sitemap's URL (normalized).
    pub url: String,
    /// Its `<lastmod>` (ms UTC).
    pub lastmod: Option<Millis>,
}

/// What kind of file it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `<urlset>`.
    UrlSet,
    /// `<sitemapindex>`.
    Index,
    /// One URL per line.
    Text,
    /// Not recognizable as a sitemap (see the problems).
    Unknown,
}

impl Format {
    /// `urlset`, `index`, `text` or `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::UrlSet => "urlset",
            Format::Index => "index",
            Format::Text => "text",
            Format::Unknown => "unknown",
        }
    }
}

/// Something wrong in a sitemap, with where it is.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Problem {
    /// `line N` (text sitemaps) or `byte N` of the uncompressed file, with the entry
    /// number when inside one (`byte 812, <url> #3`).
    pub position: String,
    /// What is wrong and what was done (`bad <priority> "high": kept the URL without it`).
    pub reason: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.position, self.reason)
    }
}

/// The result of parsing one sitemap file.
#[derive(Debug, Clone)]
pub struct Parsed {
    /// Which format it was.
    pub format: Format,
    /// Accepted URLs, in file order (at most the URL limit).
    pub urls: Vec<SitemapUrl>,
    /// Child sitemaps of an index, in file order (at most the URL limit).
    pub sitemaps: Vec<ChildSitemap>,
    /// Entries rejected: bad or filtered URL, outside the scope, no `<loc>`.
    pub rejected: u64,
    /// Entries over the URL limit, dropped.
    pub cut: u64,
    /// Whether the uncompressed file went over the byte limit (it was cut there).
    pub too_large: bool,
    /// Whether the input was gzip-compressed.
    pub gzipped: bool,
    /// Uncompressed bytes read.
    pub bytes: u64,
    /// Problems found (the first [`MAX_PROBLEMS_KEPT`]).
    pub problems: Vec<Problem>,
    /// Problems found, all of them.
    pub problem_count: u64,
}

impl Parsed {
    /// Nothing parsed (a failed fetch).
    pub fn empty() -> Parsed {
        Parsed::new()
    }

    /// Records that the download itself was cut at `limit` bytes (the body was
    /// larger than the cap before decompression).
    pub fn note_download_cut(&mut self, limit: u64) {
        self.too_large = true;
        self.problem(
            format!("byte {limit}"),
            format!(
                "download larger than {limit} bytes (the protocol's limit): everything after that was ignored"
            ),
        );
    }

    fn new() -> Parsed {
        Parsed {
            format: Format::Unknown,
            urls: Vec::new(),
            sitemaps: Vec::new(),
            rejected: 0,
            cut: 0,
            too_large: false,
            gzipped: false,
            bytes: 0,
            problems: Vec::new(),
            problem_count: 0,
        }
    }

    fn problem(&mut self, position: String, reason: String) {
        self.problem_count += 1;
        if self.problems.len() < MAX_PROBLEMS_KEPT {
            self.problems.push(Problem { position, reason });
        }
    }

    /// Whether the file had a fatal problem (bad XML, unreadable data, not a
    /// sitemap) or went over a limit; entries before it are still kept.
    pub fn malformed(&self) -> bool {
        self.problem_count > 0
    }
}

/// The limits applied while parsing.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Most URLs (or child sitemaps) accepted per file.
    pub max_urls: usize,
    /// Most uncompressed bytes read per file.
    pub max_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_urls: MAX_URLS,
            max_bytes: MAX_BYTES,
        }
    }
}

/// Counts bytes read and stops at the cap, noting whether there was more.
struct Capped<R> {
    inner: R,
    read: Rc<Cell<u64>>,
    over: Rc<Cell<bool>>,
    cap: u64,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let done = self.read.get();
        if done >= self.cap {
            if !self.over.get() {
                let mut probe = [0u8; 1];
                if self.inner.read(&mut probe)? > 0 {
                    self.over.set(true);
                }
            }
            return Ok(0);
        }
        let room = usize::try_from(self.cap - done).unwrap_or(usize::MAX);
        let n = buf.len().min(room);
        let got = self.inner.read(&mut buf[..n])?;
        self.read.set(done + got as u64);
        Ok(got)
    }
}

/// What the parser needs to judge the URLs of one file.
pub struct Context<'a> {
    /// The sitemap's own URL (child sitemaps must be on its origin).
    pub sitemap: &'a Url,
    /// Where its URLs may be.
    pub scope: &'a Scope,
    /// Normalization and filters.
    pub policy: &'a UrlPolicy,
    /// Limits.
    pub limits: Limits,
}

/// Parses a sitemap file (`body` as fetched: gzip is recognized by its magic bytes).
pub fn parse(body: &[u8], ctx: &Context<'_>) -> Parsed {
    let gzipped = body.starts_with(&[0x1f, 0x8b]);
    let read = Rc::new(Cell::new(0u64));
    let over = Rc::new(Cell::new(false));
    let source: Box<dyn Read + '_> = if gzipped {
        Box::new(flate2::read::MultiGzDecoder::new(body))
    } else {
        Box::new(body)
    };
    let capped = Capped {
        inner: source,
        read: read.clone(),
        over: over.clone(),
        cap: ctx.limits.max_bytes,
    };
    let mut input = BufReader::with_capacity(64 * 1024, capped);
    let mut out = Parsed::new();
    out.gzipped = gzipped;
    match sniff(&mut input) {
        Ok(Some(b'<')) => parse_xml(input, ctx, &mut out, &over),
        Ok(Some(_)) => parse_text(input, ctx, &mut out),
        Ok(None) => out.problem("byte 0".into(), "empty file: no URLs".into()),
        Err(e) => out.problem("byte 0".into(), format!("unreadable data: {e}")),
    }
    out.bytes = read.get();
    if over.get() {
        out.too_large = true;
        let limit = ctx.limits.max_bytes;
        out.problem(
            format!("byte {limit}"),
            format!(
                "file is larger than {limit} bytes uncompressed (the protocol's limit): everything after that was ignored"
            ),
        );
    }
    if out.cut > 0 {
        let max = ctx.limits.max_urls;
        out.problem(
            format!("entry {}", max + 1),
            format!(
                "{} entries over the limit of {max} per file (the protocol's limit) were ignored",
                out.cut
            ),
        );
    }
    out
}

/// Skips a UTF-8 BOM and leading whitespace; returns the first other byte.
fn sniff(input: &mut impl BufRead) -> std::io::Result<Option<u8>> {
    let mut first = true;
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            return Ok(None);
        }
        if first && buf.starts_with(b"\xEF\xBB\xBF") {
            input.consume(3);
            first = false;
            continue;
        }
        first = false;
        let skip = buf.iter().take_while(|b| b.is_ascii_whitespace()).count();
        if skip < buf.len() {
            let b = buf[skip];
            input.consume(skip);
            return Ok(Some(b));
        }
        let n = buf.len();
        input.consume(n);
    }
}

/// Checks one URL of the file: normalization, filters, scope.
fn admit(ctx: &Context<'_>, raw: &str) -> Result<Url, String> {
    let url = ctx
        .policy
        .check(raw)
        .map_err(|e| format!("rejected URL {raw:?}: {e}"))?;
    if !ctx.scope.contains(&url) {
        return Err(format!(
            "rejected URL {url}: outside the sitemap's scope ({})",
            ctx.scope.describe()
        ));
    }
    Ok(url)
}

fn parse_text(input: impl BufRead, ctx: &Context<'_>, out: &mut Parsed) {
    out.format = Format::Text;
    for (i, line) in input.split(b'\n').enumerate() {
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                out.problem(format!("line {}", i + 1), format!("unreadable data: {e}"));
                return;
            }
        };
        let Ok(text) = std::str::from_utf8(&line) else {
            out.rejected += 1;
            out.problem(
                format!("line {}", i + 1),
                "not UTF-8 (text sitemaps must be UTF-8): line skipped".into(),
            );
            continue;
        };
        let text = text.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
        if text.is_empty() {
            continue;
        }
        if out.urls.len() >= ctx.limits.max_urls {
            out.cut += 1;
            continue;
        }
        match admit(ctx, text) {
            Ok(u) => out.urls.push(SitemapUrl {
                url: u.to_string(),
                lastmod: None,
                changefreq: None,
                priority: None,
            }),
            Err(why) => {
                out.rejected += 1;
                out.problem(format!("line {}", i + 1), why);
            }
        }
    }
}

/// The fields of the entry being read.
#[derive(Default)]
struct Entry {
    number: u64,
    start: u64,
    loc: Option<String>,
    lastmod: Option<String>,
    changefreq: Option<String>,
    priority: Option<String>,
}

/// Parses XML; `over` tells whether the input was cut at the byte limit (then a
/// broken end is expected and reported as the size problem, not as bad XML).
///
/// About 110 lines, on purpose: one streaming event loop whose arms share the parser
/// state (the open element, the entry being built, the limits); entity resolution and
/// the end-of-file checks are already functions of their own.
fn parse_xml(input: impl BufRead, ctx: &Context<'_>, out: &mut Parsed, over: &Cell<bool>) {
    let mut reader = quick_xml::Reader::from_reader(input);
    reader.config_mut().check_end_names = true;
    let mut buf = Vec::new();
    // Local names of the open elements.
    let mut stack: Vec<String> = Vec::new();
    let mut entry: Option<Entry> = None;
    let mut entries = 0u64;
    // The text of the field being read (`loc`, `lastmod`, ...), with its name.
    let mut field: Option<(String, String)> = None;
    loop {
        let pos = reader.buffer_position();
        let event = match reader.read_event_into(&mut buf) {
            Ok(e) => e,
            Err(e) => {
                if !over.get() {
                    let at = reader.error_position();
                    let inside = entry
                        .as_ref()
                        .map(|en| format!(", <{}> #{}", entry_tag(out.format), en.number))
                        .unwrap_or_default();
                    out.problem(
                        format!("byte {at}{inside}"),
                        format!(
                            "malformed XML ({e}): the rest of the file was ignored, the {} entries before it were kept",
                            out.urls.len() + out.sitemaps.len()
                        ),
                    );
                }
                return;
            }
        };
        match event {
            Event::Start(ref s) | Event::Empty(ref s) => {
                let empty = matches!(event, Event::Empty(_));
                let name = s.local_name().as_ref().to_ascii_lowercase();
                match stack.len() {
                    0 => {
                        out.format = match name.as_str() {
                            "urlset" => Format::UrlSet,
                            "sitemapindex" => Format::Index,
                            other => {
                                out.problem(
                                    format!("byte {pos}"),
                                    format!(
                                        "not a sitemap: the root element is <{other}>, not <urlset> or <sitemapindex>"
                                    ),
                                );
                                return;
                            }
                        };
                    }
                    1 if name == entry_tag(out.format) => {
                        entries += 1;
                        entry = Some(Entry {
                            number: entries,
                            start: pos,
                            ..Entry::default()
                        });
                    }
                    2 if entry.is_some() => field = Some((name.clone(), String::new())),
                    _ => {}
                }
                if empty {
                    // `<loc/>`: an empty field; `<url/>`: an empty entry.
                    if let Some((n, text)) = field.take() {
                        set_field(&mut entry, &n, text);
                    } else if stack.len() == 1 && entry.is_some() {
                        finish_entry(entry.take(), ctx, out);
                    }
                } else {
                    stack.push(name);
                }
            }
            Event::End(_) => {
                let depth = stack.len();
                stack.pop();
                match depth {
                    3 => {
                        if let Some((n, text)) = field.take() {
                            set_field(&mut entry, &n, text);
                        }
                    }
                    2 => finish_entry(entry.take(), ctx, out),
                    _ => {}
                }
            }
            Event::Text(t) => {
                if let Some((_, text)) = field.as_mut() {
                    text.push_str(&t.xml10_content());
                }
            }
            Event::CData(t) => {
                if let Some((_, text)) = field.as_mut() {
                    text.push_str(&t.into_inner());
                }
            }
            Event::GeneralRef(r) => {
                if let Some((_, text)) = field.as_mut() {
                    push_entity(&r, text, pos, out);
                }
            }
            Event::Eof => {
                end_of_file(&stack, pos, out, over.get());
                return;
            }
            _ => {}
        }
        buf.clear();
    }
}

/// Appends the character an entity reference (`&amp;`, `&#38;`) stands for to
/// `text`; an unknown one is kept as written, with a problem.
fn push_entity(r: &quick_xml::events::BytesRef<'_>, text: &mut String, pos: u64, out: &mut Parsed) {
    let name = r.xml10_content().into_owned();
    match crate::xml::entity_char(r) {
        Some(c) => text.push(c),
        None => {
            out.problem(
                format!("byte {pos}"),
                format!("unknown entity &{name}; left as written"),
            );
            text.push_str(&format!("&{name};"));
        }
    }
}

/// The end of the input with the elements of `stack` still open: a problem unless
/// the input was cut at the byte limit (`over`), or when there was no root element.
fn end_of_file(stack: &[String], pos: u64, out: &mut Parsed, over: bool) {
    if !stack.is_empty() && !over {
        out.problem(
            format!("byte {pos}"),
            format!(
                "malformed XML: the file ends inside <{}>; the {} entries before were kept",
                stack.join("><"),
                out.urls.len() + out.sitemaps.len()
            ),
        );
    } else if stack.is_empty() && out.format == Format::Unknown {
        out.problem(
            format!("byte {pos}"),
            "no root element: not a sitemap".into(),
        );
    }
}

fn entry_tag(format: Format) -> &'static str {
    if format == Format::Index {
        "sitemap"
    } else {
        "url"
    }
}

fn set_field(entry: &mut Option<Entry>, name: &str, text: String) {
    let Some(e) = entry.as_mut() else { return };
    let slot = match name {
        "loc" => &mut e.loc,
        "lastmod" => &mut e.lastmod,
        "changefreq" => &mut e.changefreq,
        "priority" => &mut e.priority,
        _ => return,
    };
    *slot = Some(text);
}

fn finish_entry(entry: Option<Entry>, ctx: &Context<'_>, out: &mut Parsed) {
    let Some(e) = entry else { return };
    let tag = entry_tag(out.format);
    let position = format!("byte {}, <{tag}> #{}", e.start, e.number);
    let accepted = out.urls.len() + out.sitemaps.len();
    if accepted >= ctx.limits.max_urls {
        out.cut += 1;
        return;
    }
    let Some(loc) = e.loc.as_deref().map(str::trim).filter(|l| !l.is_empty()) else {
        out.rejected += 1;
        out.problem(position, format!("<{tag}> without <loc>: skipped"));
        return;
    };
    let lastmod = match e.lastmod.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(s) => match parse_w3c_datetime(s) {
            Some(ms) => Some(ms),
            None => {
                out.problem(
                    position.clone(),
                    format!("bad <lastmod> {s:?} (not a W3C datetime): kept {loc} without it"),
                );
                None
            }
        },
    };
    if out.format == Format::Index {
        let child = match ctx.policy.check(loc) {
            Ok(u) if u.origin() == ctx.sitemap.origin() => u,
            Ok(u) => {
                out.rejected += 1;
                out.problem(
                    position,
                    format!(
                        "rejected sitemap {u}: an index may only name sitemaps on its own site ({})",
                        ctx.sitemap.origin().ascii_serialization()
                    ),
                );
                return;
            }
            Err(e) => {
                out.rejected += 1;
                out.problem(position, format!("rejected sitemap URL {loc:?}: {e}"));
                return;
            }
        };
        out.sitemaps.push(ChildSitemap {
            url: child.to_string(),
            lastmod,
        });
        return;
    }
    let url = match admit(ctx, loc) {
        Ok(u) => u,
        Err(why) => {
            out.rejected += 1;
            out.problem(position, why);
            return;
        }
    };
    let priority = match e.priority.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(s) => match s.parse::<f64>() {
            Ok(p) if (0.0..=1.0).contains(&p) => Some(p),
            _ => {
                out.problem(
                    position.clone(),
                    format!("bad <priority> {s:?} (must be 0.0 to 1.0): kept {url} without it"),
                );
                None
            }
        },
    };
    let changefreq = match e.changefreq.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(s) => match ChangeFreq::parse(s) {
            Some(c) => Some(c),
            None => {
                out.problem(
                    position.clone(),
                    format!("bad <changefreq> {s:?}: kept {url} without it"),
                );
                None
            }
        },
    };
    out.urls.push(SitemapUrl {
        url: url.to_string(),
        lastmod,
        changefreq,
        priority,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::UrlConfig;
    use std::io::Write;

    const T: &str = "http://a.test/sitemap.xml";

    fn run_with(body: &[u8], sitemap: &str, scope: Option<Scope>, limits: Limits) -> Parsed {
        let url = Url::parse(sitemap).unwrap();
        let scope = scope.unwrap_or_else(|| Scope::of_location(&url));
        let policy = UrlPolicy::new(&UrlConfig::default(), &[]).unwrap();
        let ctx = Context {
            sitemap: &url,
            scope: &scope,
            policy: &policy,
            limits,
        };
        parse(body, &ctx)
    }

    fn run(body: &str) -> Parsed {
        run_with(body.as_bytes(), T, None, Limits::default())
    }

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn ms(s: &str) -> Millis {
        chrono::DateTime::parse_from_rfc3339(s)
            .unwrap()
            .timestamp_millis()
    }

    const URLSET: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
  <url>
    <loc>http://a.test/</loc>
    <lastmod>2025-03-04T05:06:07+01:00</lastmod>
    <changefreq>Daily</changefreq>
    <priority>0.8</priority>
  </url>
  <url><loc> http://a.test/q?x=1&amp;y=2 </loc><priority>1.0</priority></url>
  <url>
    <loc><![CDATA[http://a.test/cdata.html]]></loc>
    <image:image><image:loc>http://img.test/pic.jpg</image:loc></image:image>
  </url>
</urlset>
"#;

    #[test]
    fn urlset_with_all_fields_entities_cdata_and_extensions() {
        let p = run(URLSET);
        assert_eq!(p.format, Format::UrlSet);
        assert_eq!(p.problem_count, 0, "{:?}", p.problems);
        assert_eq!(p.urls.len(), 3);
        assert_eq!(
            p.urls[0],
            SitemapUrl {
                url: "http://a.test/".into(),
                lastmod: Some(ms("2025-03-04T04:06:07Z")),
                changefreq: Some(ChangeFreq::Daily),
                priority: Some(0.8),
            }
        );
        assert_eq!(p.urls[1].url, "http://a.test/q?x=1&y=2");
        assert_eq!(p.urls[1].priority, Some(1.0));
        // The image extension's <image:loc> is not a page URL.
        assert_eq!(p.urls[2].url, "http://a.test/cdata.html");
        assert!(!p.gzipped);
        assert_eq!(p.bytes, URLSET.len() as u64);
    }

    #[test]
    fn gzipped_sitemaps_are_recognized_by_their_magic_bytes() {
        let p = run_with(&gzip(URLSET.as_bytes()), T, None, Limits::default());
        assert!(p.gzipped);
        assert_eq!(p.urls.len(), 3);
        assert_eq!(p.bytes, URLSET.len() as u64);
        let text = gzip(b"http://a.test/1\nhttp://a.test/2\n");
        let p = run_with(&text, T, None, Limits::default());
        assert_eq!((p.format, p.urls.len()), (Format::Text, 2));
    }

    #[test]
    fn sitemap_index_children_must_be_on_the_same_site() {
        let body = r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <sitemap><loc>http://a.test/s1.xml.gz</loc><lastmod>2024-01-02</lastmod></sitemap>
  <sitemap><loc>http://b.test/s2.xml</loc></sitemap>
  <sitemap><loc>http://a.test/deep/s3.xml</loc></sitemap>
  <sitemap><lastmod>2024-01-02</lastmod></sitemap>
</sitemapindex>"#;
        let p = run(body);
        assert_eq!(p.format, Format::Index);
        let got: Vec<&str> = p.sitemaps.iter().map(|s| s.url.as_str()).collect();
        assert_eq!(
            got,
            ["http://a.test/s1.xml.gz", "http://a.test/deep/s3.xml"]
        );
        assert_eq!(p.sitemaps[0].lastmod, Some(ms("2024-01-02T00:00:00Z")));
        assert_eq!(p.rejected, 2);
        assert!(
            p.problems[0].reason.contains("its own site"),
            "{:?}",
            p.problems
        );
        assert!(
            p.problems[0].position.contains("<sitemap> #2"),
            "{:?}",
            p.problems
        );
        assert!(p.problems[1].reason.contains("without <loc>"));
        assert!(p.urls.is_empty());
    }

    #[test]
    fn plain_text_sitemaps_report_lines() {
        let body = "\u{feff}http://a.test/a.html\n\n  http://a.test/b.html  \r\nnot a url\nhttp://other.test/x\nftp://a.test/f\n";
        let p = run(body);
        assert_eq!(p.format, Format::Text);
        let got: Vec<&str> = p.urls.iter().map(|u| u.url.as_str()).collect();
        assert_eq!(got, ["http://a.test/a.html", "http://a.test/b.html"]);
        assert_eq!(p.rejected, 3);
        let pos: Vec<&str> = p.problems.iter().map(|p| p.position.as_str()).collect();
        assert_eq!(pos, ["line 4", "line 5", "line 6"]);
        assert!(p.problems[1].reason.contains("outside the sitemap's scope"));
        assert!(p.problems[2].reason.contains("scheme"));
    }

    #[test]
    fn scope_is_the_directory_unless_robots_named_the_sitemap() {
        let body = "<urlset><url><loc>http://a.test/blog/1.html</loc></url>\
            <url><loc>http://a.test/about.html</loc></url>\
            <url><loc>https://a.test/blog/2.html</loc></url>\
            <url><loc>http://a.test:8080/blog/3.html</loc></url>\
            <url><loc>http://www.a.test/blog/4.html</loc></url></urlset>";
        let p = run_with(
            body.as_bytes(),
            "http://a.test/blog/sitemap.xml",
            None,
            Limits::default(),
        );
        let got: Vec<&str> = p.urls.iter().map(|u| u.url.as_str()).collect();
        assert_eq!(got, ["http://a.test/blog/1.html"]);
        assert_eq!(p.rejected, 4);
        // Named in a.test's robots.txt: the whole host.
        let sm = Url::parse("http://a.test/blog/sitemap.xml").unwrap();
        let scope = Scope::from_robots(&sm, "http://a.test");
        let p = run_with(body.as_bytes(), sm.as_str(), Some(scope), Limits::default());
        let got: Vec<&str> = p.urls.iter().map(|u| u.url.as_str()).collect();
        assert_eq!(
            got,
            ["http://a.test/blog/1.html", "http://a.test/about.html"]
        );
        // Cross-submission: b.test's robots.txt names a sitemap hosted on a.test.
        let scope = Scope::from_robots(&sm, "http://b.test");
        assert!(scope.contains(&Url::parse("http://b.test/any/page").unwrap()));
        assert!(scope.contains(&Url::parse("http://a.test/blog/x").unwrap()));
        assert!(!scope.contains(&Url::parse("http://a.test/x").unwrap()));
    }

    #[test]
    fn bad_values_are_reported_and_the_url_kept_without_them() {
        let body = r#"<urlset>
<url><loc>http://a.test/1</loc><lastmod>yesterday</lastmod></url>
<url><loc>http://a.test/2</loc><priority>high</priority></url>
<url><loc>http://a.test/3</loc><priority>1.5</priority><changefreq>sometimes</changefreq></url>
<url><loc>http://a.test/4</loc><lastmod>2024-13-01</lastmod></url>
<url><loc>http:// bad url</loc></url>
<url><loc>http://a.test/5</loc><priority> 0.25 </priority></url>
</urlset>"#;
        let p = run(body);
        let got: Vec<&str> = p.urls.iter().map(|u| u.url.as_str()).collect();
        assert_eq!(
            got,
            [
                "http://a.test/1",
                "http://a.test/2",
                "http://a.test/3",
                "http://a.test/4",
                "http://a.test/5"
            ]
        );
        assert!(
            p.urls[..4]
                .iter()
                .all(|u| u.lastmod.is_none() && u.priority.is_none())
        );
        assert_eq!(p.urls[4].priority, Some(0.25));
        assert_eq!(p.rejected, 1);
        let reasons: Vec<&str> = p.problems.iter().map(|p| p.reason.as_str()).collect();
        assert_eq!(reasons.len(), 6, "{reasons:?}");
        assert!(reasons[0].contains("bad <lastmod> \"yesterday\""));
        assert!(reasons[1].contains("bad <priority> \"high\""));
        assert!(reasons[2].contains("bad <priority> \"1.5\""));
        assert!(reasons[3].contains("bad <changefreq> \"sometimes\""));
        assert!(reasons[4].contains("bad <lastmod> \"2024-13-01\""));
        assert!(reasons[5].contains("rejected URL"));
        assert!(
            p.problems[5].position.contains("<url> #5"),
            "{:?}",
            p.problems[5]
        );
        // Positions are byte offsets of the entry in the file.
        let off: u64 = body.find("<url><loc>http:// bad").unwrap() as u64;
        assert!(p.problems[5].position.starts_with(&format!("byte {off},")));
    }

    #[test]
    fn malformed_xml_keeps_the_entries_before_the_error() {
        let body = "<urlset><url><loc>http://a.test/1</loc></url>\
            <url><loc>http://a.test/2</loc></url>\
            <url><loc>http://a.test/3</loc></urlx>\
            <url><loc>http://a.test/4</loc></url></urlset>";
        let p = run(body);
        let got: Vec<&str> = p.urls.iter().map(|u| u.url.as_str()).collect();
        assert_eq!(got, ["http://a.test/1", "http://a.test/2"]);
        assert_eq!(p.problem_count, 1);
        assert!(
            p.problems[0].reason.contains("malformed XML"),
            "{:?}",
            p.problems
        );
        assert!(
            p.problems[0].position.contains("<url> #3"),
            "{:?}",
            p.problems
        );
        // Truncated in the middle of an entry.
        let p = run("<urlset><url><loc>http://a.test/1</loc></url><url><loc>http://a.te");
        assert_eq!(p.urls.len(), 1);
        assert!(
            p.problems[0].reason.contains("malformed XML"),
            "{:?}",
            p.problems
        );
        // Not a sitemap at all.
        let p = run("<html><body>hello</body></html>");
        assert_eq!(p.format, Format::Unknown);
        assert!(p.problems[0].reason.contains("root element is <html>"));
        let p = run("   ");
        assert!(p.problems[0].reason.contains("empty"));
        // Unknown entities are reported.
        let p = run("<urlset><url><loc>http://a.test/a&nbsp;b</loc></url></urlset>");
        assert!(
            p.problems
                .iter()
                .any(|p| p.reason.contains("unknown entity &nbsp;"))
        );
    }

    #[test]
    fn url_limit_cuts_and_reports() {
        let mut body = String::from("<urlset>");
        for i in 0..MAX_URLS + 7 {
            body.push_str(&format!("<url><loc>http://a.test/p{i}</loc></url>"));
        }
        body.push_str("</urlset>");
        let p = run(&body);
        assert_eq!(p.urls.len(), MAX_URLS);
        assert_eq!(p.cut, 7);
        assert_eq!(
            p.urls.last().unwrap().url,
            format!("http://a.test/p{}", MAX_URLS - 1)
        );
        assert_eq!(p.problem_count, 1);
        assert!(
            p.problems[0]
                .reason
                .contains("7 entries over the limit of 50000")
        );
        // Text sitemaps too, with a configured lower limit.
        let text: String = (0..10).map(|i| format!("http://a.test/t{i}\n")).collect();
        let p = run_with(
            text.as_bytes(),
            T,
            None,
            Limits {
                max_urls: 4,
                max_bytes: MAX_BYTES,
            },
        );
        assert_eq!((p.urls.len(), p.cut), (4, 6));
    }

    #[test]
    fn byte_limit_stops_decompression_bombs() {
        // 60 MiB of whitespace between two entries, compressed to a few dozen KB.
        let head = "<urlset><url><loc>http://a.test/first</loc></url>";
        let tail = "<url><loc>http://a.test/after</loc></url></urlset>";
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(head.as_bytes()).unwrap();
        let blank = vec![b' '; 1 << 20];
        for _ in 0..60 {
            e.write_all(&blank).unwrap();
        }
        e.write_all(tail.as_bytes()).unwrap();
        let gz = e.finish().unwrap();
        assert!(gz.len() < 400_000, "{}", gz.len());
        let p = run_with(&gz, T, None, Limits::default());
        assert!(p.too_large);
        assert_eq!(p.bytes, MAX_BYTES);
        let got: Vec<&str> = p.urls.iter().map(|u| u.url.as_str()).collect();
        assert_eq!(got, ["http://a.test/first"]);
        assert_eq!(p.problem_count, 1, "{:?}", p.problems);
        assert!(p.problems[0].reason.contains("larger than 52428800 bytes"));
        // Exactly at the limit is fine.
        let p = run_with(
            URLSET.as_bytes(),
            T,
            None,
            Limits {
                max_urls: 10,
                max_bytes: URLSET.len() as u64,
            },
        );
        assert!(!p.too_large);
        assert_eq!(p.problem_count, 0);
        // Corrupt gzip data is reported.
        let mut bad = gzip(URLSET.as_bytes());
        let n = bad.len();
        bad.truncate(n / 2);
        let p = run_with(&bad, T, None, Limits::default());
        assert!(p.problem_count >= 1);
    }

    #[test]
    fn w3c_datetimes() {
        let cases = [
            ("2005", Some("2005-01-01T00:00:00Z")),
            ("2005-07", Some("2005-07-01T00:00:00Z")),
            ("2005-07-16", Some("2005-07-16T00:00:00Z")),
            ("2005-07-16T19:20+01:00", Some("2005-07-16T18:20:00Z")),
            ("2005-07-16T19:20:30+01:00", Some("2005-07-16T18:20:30Z")),
            (
                "2005-07-16T19:20:30.45+01:00",
                Some("2005-07-16T18:20:30.450Z"),
            ),
            ("2005-07-16T19:20:30Z", Some("2005-07-16T19:20:30Z")),
            ("2005-07-16T19:20:30-05:30", Some("2005-07-17T00:50:30Z")),
            ("2005-07-16T19:20:30", Some("2005-07-16T19:20:30Z")),
            (" 2005-07-16 ", Some("2005-07-16T00:00:00Z")),
            ("2005-7-16", None),
            ("2005-07-32", None),
            ("2005-02-29", None),
            ("2005-07-16T25:00Z", None),
            ("2005-07-16T19:20:30+0100", None),
            ("2005-07-16T19Z", None),
            ("16/07/2005", None),
            ("yesterday", None),
            ("", None),
        ];
        for (s, want) in cases {
            assert_eq!(parse_w3c_datetime(s), want.map(ms), "{s:?}");
        }
    }

    #[test]
    fn changefreq_intervals() {
        assert_eq!(ChangeFreq::parse(" WEEKLY "), Some(ChangeFreq::Weekly));
        assert_eq!(ChangeFreq::parse("fortnightly"), None);
        assert_eq!(ChangeFreq::Always.interval_secs(99), 3600);
        assert_eq!(ChangeFreq::Daily.interval_secs(99), 86_400);
        assert_eq!(ChangeFreq::Monthly.interval_secs(99), 30 * 86_400);
        assert_eq!(ChangeFreq::Never.interval_secs(99), 99);
    }
}
