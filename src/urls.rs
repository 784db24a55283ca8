//! URL normalization and filtering, shared by inject, parse and updatedb so that a
//! URL has one spelling everywhere.
//!
//! Normalization (on top of WHATWG parsing by the `url` crate, which lowercases the
//! scheme and host, converts IDN hosts to punycode, drops default ports and resolves
//! dot segments): user name and password are dropped, the fragment is dropped, runs of
//! `/` in the path collapse, the path and query get one canonical percent-encoding
//! ([`canonical_escapes`]), session-id parameters are removed, an empty query is
//! dropped, and (optionally) query parameters are sorted.

use std::borrow::Cow;
use std::collections::HashSet;
use std::path::Path;

use regex::Regex;
use url::Url;

use crate::config::{UrlConfig, UrlScope};
use crate::error::{Error, Result};

/// Why a URL was rejected. `as_str` is the reason recorded in reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reject {
    /// Not a parseable absolute URL.
    Syntax(String),
    /// Scheme not in `urls.schemes`.
    Scheme(String),
    /// No host.
    NoHost,
    /// Longer than `urls.max_length`.
    TooLong(usize),
    /// Excluded by a rule of the regex filter file (line number).
    Filtered(usize),
    /// Outside the seeds' hosts or domains.
    OutOfScope,
    /// Looks like a crawler trap (repeating path segments).
    Trap,
}

impl Reject {
    /// A short machine-readable reason (`bad_syntax`, `scheme`, ...).
    pub fn code(&self) -> &'static str {
        match self {
            Reject::Syntax(_) => "bad_syntax",
            Reject::Scheme(_) => "scheme",
            Reject::NoHost => "no_host",
            Reject::TooLong(_) => "too_long",
            Reject::Filtered(_) => "filtered",
            Reject::OutOfScope => "out_of_scope",
            Reject::Trap => "trap",
        }
    }
}

impl std::fmt::Display for Reject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reject::Syntax(e) => write!(f, "not a valid absolute URL ({e})"),
            Reject::Scheme(s) => write!(f, "scheme {s:?} is not crawled (see urls.schemes)"),
            Reject::NoHost => write!(f, "URL has no host"),
            Reject::TooLong(n) => write!(f, "URL is {n} bytes, over urls.max_length"),
            Reject::Filtered(line) => {
                write!(f, "excluded by rule on line {line} of the URL filter file")
            }
            Reject::OutOfScope => write!(f, "outside the seeds' scope (urls.scope)"),
            Reject::Trap => write!(f, "path repeats segments like a crawler trap"),
        }
    }
}

/// One rule of a regex-urlfilter file.
#[derive(Debug, Clone)]
struct Rule {
    include: bool,
    regex: Regex,
    line: usize,
}

/// Normalizes and filters URLs according to `[urls]`.
#[derive(Debug, Clone)]
pub struct UrlPolicy {
    schemes: Vec<String>,
    max_length: usize,
    session_params: HashSet<String>,
    sort_query: bool,
    rules: Vec<Rule>,
    scope: Scope,
}

/// Which hosts are in scope.
#[derive(Debug, Clone)]
enum Scope {
    Any,
    Hosts(HashSet<String>),
    Domains(HashSet<String>),
}

impl UrlPolicy {
    /// Builds the policy; reads `filter_file` if configured. `seed_hosts` defines the
    /// scope when `urls.scope` is `host` or `domain`.
    pub fn new(cfg: &UrlConfig, seed_hosts: &[String]) -> Result<Self> {
        let rules = match &cfg.filter_file {
            Some(p) => parse_rules(p)?,
            None => Vec::new(),
        };
        let scope = match cfg.scope {
            UrlScope::Host => Scope::Hosts(seed_hosts.iter().cloned().collect()),
            UrlScope::Domain => {
                Scope::Domains(seed_hosts.iter().map(|h| registrable_domain(h)).collect())
            }
            UrlScope::Any => Scope::Any,
        };
        Ok(UrlPolicy {
            schemes: cfg.schemes.clone(),
            max_length: cfg.max_length,
            session_params: cfg
                .session_params
                .iter()
                .map(|s| s.to_ascii_lowercase())
                .collect(),
            sort_query: cfg.sort_query,
            rules,
            scope,
        })
    }

    /// Normalizes an absolute URL and applies every filter.
    pub fn check(&self, raw: &str) -> std::result::Result<Url, Reject> {
        let url = Url::parse(raw.trim()).map_err(|e| Reject::Syntax(e.to_string()))?;
        self.check_url(url)
    }

    /// [`UrlPolicy::check`] for a seed as a person writes it: an absolute URL, or a
    /// host name (with an optional port, path and query) without a scheme, such as
    /// `example.com/page.html`, which is taken as `http://example.com/page.html` with a
    /// note in the log. Anything else without `scheme://` (`mailto:a@b.c`, `a@b.c`) is
    /// checked as written.
    pub fn check_seed(&self, raw: &str) -> std::result::Result<Url, Reject> {
        let raw = raw.trim();
        if !is_scheme_less_host(raw) {
            return self.check(raw);
        }
        let url = self.check(&format!("http://{raw}"))?;
        // The note names the normalized URL only (never the raw text).
        tracing::warn!(
            "seed without a scheme taken as http: {url} (write the scheme to silence this)"
        );
        Ok(url)
    }

    /// Resolves `href` against `base`, then normalizes and filters it.
    pub fn check_relative(&self, base: &Url, href: &str) -> std::result::Result<Url, Reject> {
        let url = base
            .join(href.trim())
            .map_err(|e| Reject::Syntax(e.to_string()))?;
        self.check_url(url)
    }

    /// Normalizes a parsed URL and applies every filter.
    pub fn check_url(&self, url: Url) -> std::result::Result<Url, Reject> {
        if !self.schemes.iter().any(|s| s == url.scheme()) {
            return Err(Reject::Scheme(url.scheme().to_string()));
        }
        let url = self.normalize(url)?;
        self.check_normalized(&url)?;
        Ok(url)
    }

    /// The filters of [`UrlPolicy::check_url`] (scheme, length, trap, rules,
    /// scope) on a URL that [`UrlPolicy::normalize`] returned, without
    /// normalizing it again: `check_url(u)` is `normalize(u)` then this.
    pub fn check_normalized(&self, url: &Url) -> std::result::Result<(), Reject> {
        if !self.schemes.iter().any(|s| s == url.scheme()) {
            return Err(Reject::Scheme(url.scheme().to_string()));
        }
        let s = url.as_str();
        if s.len() > self.max_length {
            return Err(Reject::TooLong(s.len()));
        }
        if is_trap(url.path()) {
            return Err(Reject::Trap);
        }
        for rule in &self.rules {
            if rule.regex.is_match(s) {
                if rule.include {
                    break;
                }
                return Err(Reject::Filtered(rule.line));
            }
        }
        let host = url.host_str().unwrap_or_default();
        let in_scope = match &self.scope {
            Scope::Any => true,
            Scope::Hosts(h) => h.contains(host),
            Scope::Domains(d) => d.contains(&registrable_domain(host)),
        };
        if !in_scope {
            return Err(Reject::OutOfScope);
        }
        Ok(())
    }

    /// Normalization alone (no filters except syntax and host).
    pub fn normalize(&self, mut url: Url) -> std::result::Result<Url, Reject> {
        if url.host_str().is_none_or(|h| h.is_empty()) {
            return Err(Reject::NoHost);
        }
        url.set_fragment(None);
        // Credentials never reach the crawldb, a segment, a log or a WARC file.
        if !url.username().is_empty() || url.password().is_some() {
            url.set_username("")
                .and_then(|()| url.set_password(None))
                .map_err(|()| Reject::Syntax("cannot remove the user name".into()))?;
        }
        // Trailing dot in a host name ("example.com.") names the same host.
        if let Some(h) = url.host_str()
            && h.len() > 1
            && h.ends_with('.')
        {
            let trimmed = h.trim_end_matches('.').to_string();
            url.set_host(Some(&trimmed))
                .map_err(|e| Reject::Syntax(e.to_string()))?;
        }
        // A path without `//`, `%`, `;` or a character to encode is already
        // normalized (the common case: no rewriting, no re-parse).
        let p = url.path();
        if p.contains("//") || p.contains(';') || needs_escaping(p) {
            let path = canonical_escapes(&collapse_slashes(p)).into_owned();
            let path = strip_path_session(&path, &self.session_params);
            url.set_path(&path);
        }
        if let Some(q) = url.query() {
            let q = normalize_query(q, &self.session_params, self.sort_query);
            url.set_query(if q.is_empty() { None } else { Some(&q) });
        }
        Ok(url)
    }
}

/// The registrable domain of a host (public suffix + 1 label), or the host itself:
/// for an IP literal (`127.0.0.1`, `[::1]`, never a domain, though the public suffix
/// list's default rule would make `0.1` of the first) and for a host without a
/// registrable domain (a bare suffix, one label). Domain scope, generate's domain
/// counts, fetch's domain queues and domain partitioning all use this one function.
pub fn registrable_domain(host: &str) -> String {
    if host.starts_with('[') || host.parse::<std::net::IpAddr>().is_ok() {
        return host.to_string();
    }
    psl::domain_str(host)
        .map(|d| d.to_string())
        .unwrap_or_else(|| host.to_string())
}

/// The host of a URL string, lowercase, or `""` when it has none.
pub fn host_of(url: &str) -> String {
    Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(|h| h.to_ascii_lowercase()))
        .unwrap_or_default()
}

fn collapse_slashes(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut prev_slash = false;
    for c in path.chars() {
        if c == '/' {
            if prev_slash {
                continue;
            }
            prev_slash = true;
        } else {
            prev_slash = false;
        }
        out.push(c);
    }
    out
}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// A byte RFC 3986 allows unencoded in a path or query: unreserved characters,
/// sub-delims and `: @ / ?`. (`%` only as the start of an escape; `[ ]` only in an
/// IP-literal host; `#` only before the fragment.)
fn is_allowed_raw(b: u8) -> bool {
    is_unreserved(b)
        || matches!(
            b,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@'
                | b'/'
                | b'?'
        )
}

/// Whether [`canonical_escapes`] would change `s` (any `%` or byte to encode).
fn needs_escaping(s: &str) -> bool {
    s.bytes().any(|b| b == b'%' || !is_allowed_raw(b))
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

fn push_escaped(out: &mut String, b: u8) {
    out.push('%');
    out.push(char::from(HEX[usize::from(b >> 4)]));
    out.push(char::from(HEX[usize::from(b & 15)]));
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// The one percent-encoding of a URL path or query (also applied to robots.txt
/// rule paths, RFC 9309 2.2.2, so that both compare octet by octet):
/// - an escape of an unreserved character (`A-Z a-z 0-9 - . _ ~`) is decoded
///   (`%7euser` -> `~user`);
/// - every other escape keeps its meaning with upper-case hex digits (`%2f` -> `%2F`);
/// - a `%` that starts no escape is itself escaped (`90%+of` -> `90%25+of`,
///   `%zz` -> `%25zz`);
/// - every byte RFC 3986 does not allow raw (controls, space, DEL, the UTF-8 bytes of
///   non-ASCII characters, and `"`, `#`, `<`, `>`, `[`, `\`, `]`, `^`, the backquote,
///   `{`, `|`, `}`) is percent-encoded.
///
/// Idempotent; returns `s` itself when nothing changes.
pub fn canonical_escapes(s: &str) -> Cow<'_, str> {
    if needs_escaping(s) {
        Cow::Owned(canonical_escapes_bytes(s.as_bytes()))
    } else {
        Cow::Borrowed(s)
    }
}

/// [`canonical_escapes`] of raw bytes, which need not be UTF-8 (a robots.txt in
/// Latin-1): every byte of 0x80 or more is percent-encoded as it is.
pub fn canonical_escapes_bytes(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len() + 8);
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'%' {
            let escape = match (b.get(i + 1), b.get(i + 2)) {
                (Some(&h), Some(&l)) => hex_value(h).zip(hex_value(l)),
                _ => None,
            };
            match escape {
                Some((h, l)) => {
                    let v = h * 16 + l;
                    if is_unreserved(v) {
                        out.push(char::from(v));
                    } else {
                        push_escaped(&mut out, v);
                    }
                    i += 3;
                }
                None => {
                    out.push_str("%25");
                    i += 1;
                }
            }
        } else {
            if is_allowed_raw(c) {
                out.push(char::from(c));
            } else {
                push_escaped(&mut out, c);
            }
            i += 1;
        }
    }
    out
}

/// Whether `raw` (no `scheme://`) is a host name or IP address with an optional
/// port, then optionally a path, query or fragment: `example.com/a.html`,
/// `localhost:8080`, `127.0.0.1/x`, `[::1]:80/`. Not `mailto:a@b.c`, `a@b.c`
/// (no user info), `javascript:x` (a port is digits) or `page` (one label).
fn is_scheme_less_host(raw: &str) -> bool {
    let end = raw.find(['/', '?', '#']).unwrap_or(raw.len());
    let authority = &raw[..end];
    if authority.is_empty() || authority.contains('@') {
        return false;
    }
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        match rest.split_once(']') {
            Some((ip, after)) => {
                if ip.is_empty()
                    || !ip
                        .bytes()
                        .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
                {
                    return false;
                }
                match after.strip_prefix(':') {
                    Some(p) => (None, Some(p)),
                    None if after.is_empty() => (None, None),
                    None => return false,
                }
            }
            None => return false,
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (Some(h), Some(p)),
            None => (Some(authority), None),
        }
    };
    if port.is_some_and(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit())) {
        return false;
    }
    let Some(host) = host else { return true };
    let host = host.strip_suffix('.').unwrap_or(host);
    let labels_ok = host.split('.').all(|l| {
        !l.is_empty()
            && l.chars()
                .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
    });
    labels_ok && (host.contains('.') || host.eq_ignore_ascii_case("localhost"))
}

/// Removes `;jsessionid=...`-style path parameters.
fn strip_path_session(path: &str, params: &HashSet<String>) -> String {
    if !path.contains(';') {
        return path.to_string();
    }
    let mut out = String::new();
    for (i, seg) in path.split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        let mut parts = seg.split(';');
        out.push_str(parts.next().unwrap_or(""));
        for p in parts {
            let name = p.split('=').next().unwrap_or("").to_ascii_lowercase();
            if !params.contains(&name) {
                out.push(';');
                out.push_str(p);
            }
        }
    }
    out
}

fn normalize_query(q: &str, params: &HashSet<String>, sort: bool) -> String {
    let mut pairs: Vec<String> = q
        .split('&')
        .filter(|p| !p.is_empty())
        .filter(|p| {
            let name = p.split('=').next().unwrap_or("").to_ascii_lowercase();
            !params.contains(&name)
        })
        .map(|p| canonical_escapes(p).into_owned())
        .collect();
    if sort {
        pairs.sort();
    }
    pairs.join("&")
}

/// A path whose segments repeat (`/a/b/a/b/a/b/`) or that nests absurdly deep.
fn is_trap(path: &str) -> bool {
    // Up to 31 segments in a stack array (no allocation per URL).
    let mut segs: [&str; 31] = [""; 31];
    let mut n = 0;
    for s in path.split('/').filter(|s| !s.is_empty()) {
        if n == segs.len() {
            return true;
        }
        segs[n] = s;
        n += 1;
    }
    if n > 30 {
        return true;
    }
    // The same segment three or more times.
    let segs = &segs[..n];
    segs.iter()
        .enumerate()
        .any(|(i, s)| segs[..i].iter().filter(|x| *x == s).count() >= 2)
}

fn parse_rules(path: &Path) -> Result<Vec<Rule>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::input(
            path.display().to_string(),
            format!("cannot read URL filter file: {e} (urls.filter_file)"),
        )
    })?;
    let mut rules = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let (include, pat) = match l.as_bytes()[0] {
            b'+' => (true, &l[1..]),
            b'-' => (false, &l[1..]),
            _ => {
                return Err(Error::input(
                    format!("{}:{line_no}", path.display()),
                    "a rule must start with + (include) or - (exclude) followed by a regex",
                ));
            }
        };
        let regex = Regex::new(pat).map_err(|e| {
            Error::input(
                format!("{}:{line_no}", path.display()),
                format!("bad regex: {e}"),
            )
        })?;
        rules.push(Rule {
            include,
            regex,
            line: line_no,
        });
    }
    Ok(rules)
}

/// `raw` (a URL as written, perhaps invalid) with any `user:password@` of its authority
/// replaced by `***@`, for echoing rejected input: credentials never reach a message.
pub fn redact_userinfo(raw: &str) -> std::borrow::Cow<'_, str> {
    let start = raw.find("://").map_or(0, |i| i + 3);
    let rest = &raw[start..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{}***{}", &raw[..start], &rest[at..]).into(),
        None => raw.into(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn redact_userinfo_hides_credentials_only() {
        use super::redact_userinfo;
        assert_eq!(
            redact_userinfo("http://u:p@h.test/a@b"),
            "http://***@h.test/a@b"
        );
        assert_eq!(redact_userinfo("u:p@h.test/x"), "***@h.test/x");
        assert_eq!(
            redact_userinfo("http://h.test/?q=a@b"),
            "http://h.test/?q=a@b"
        );
    }

    use super::*;

    fn policy() -> UrlPolicy {
        UrlPolicy::new(&UrlConfig::default(), &[]).unwrap()
    }

    fn n(s: &str) -> String {
        policy()
            .check(s)
            .map(|u| u.to_string())
            .unwrap_or_else(|r| format!("REJECT {}", r.code()))
    }

    #[test]
    fn normalizes_the_basics() {
        assert_eq!(
            n("HTTP://Example.COM:80/a/./b/../c#frag"),
            "http://example.com/a/c"
        );
        assert_eq!(n("https://example.com:443"), "https://example.com/");
        assert_eq!(n("http://example.com//a///b"), "http://example.com/a/b");
        assert_eq!(
            n("http://example.com/%7euser/%2f"),
            "http://example.com/~user/%2F"
        );
        assert_eq!(n("http://example.com/?"), "http://example.com/");
        assert_eq!(
            n("http://example.com/a;jsessionid=ABC?x=1&PHPSESSID=9&y=2"),
            "http://example.com/a?x=1&y=2"
        );
        assert_eq!(n("http://bücher.example/"), "http://xn--bcher-kva.example/");
        assert_eq!(n("http://example.com./x"), "http://example.com/x");
    }

    /// One case of crawler-commons' BasicURLNormalizer tests
    /// (src/test/resources/normalizer/weirdToNormalizedUrls.csv, invalidUrls.csv and
    /// BasicURLNormalizerTest.java, crawler-commons 8e14e27): the input, trawl's
    /// output, and where it differs, crawler-commons' output and the policy (each
    /// difference is documented in docs/config.md, "URL normalization").
    struct Peer {
        input: &'static str,
        trawl: &'static str,
        differs: Option<(&'static str, &'static str)>,
    }

    const fn same(input: &'static str, trawl: &'static str) -> Peer {
        Peer {
            input,
            trawl,
            differs: None,
        }
    }

    const fn differs(
        input: &'static str,
        trawl: &'static str,
        theirs: &'static str,
        why: &'static str,
    ) -> Peer {
        Peer {
            input,
            trawl,
            differs: Some((theirs, why)),
        }
    }

    const NO_HOST: &str = "only http(s) URLs with a host are crawled";
    const SCHEME: &str = "only urls.schemes (http, https) are crawled";

    /// With the default `[urls]` (no query sorting).
    const PEER_CASES: &[Peer] = &[
        // percent-encoding normalized (NUTCH-1098)
        same("http://foo.com/%66oo.html", "http://foo.com/foo.html"),
        same("http://foo.com/%66oo.htm%6c", "http://foo.com/foo.html"),
        same("http://foo.com/%66oo.ht%6dl", "http://foo.com/foo.html"),
        same("http://foo.com/%66oo.ht%6d%6c", "http://foo.com/foo.html"),
        same("http://foo.com/%66oo.htm%C0", "http://foo.com/foo.htm%C0"),
        same("http://foo.com/%66oo.htm%1A", "http://foo.com/foo.htm%1A"),
        same("http://foo.com/%66oo.htm%c0", "http://foo.com/foo.htm%C0"),
        same(
            "https://www.example.com/search/%2a/",
            "https://www.example.com/search/%2A/",
        ),
        same(
            "https://www.example.com/topic/9%2f11/",
            "https://www.example.com/topic/9%2F11/",
        ),
        same(
            "http://foo.com/you%20too.html",
            "http://foo.com/you%20too.html",
        ),
        same(
            "http://foo.com/you too.html",
            "http://foo.com/you%20too.html",
        ),
        same(
            "http://foo.com/file.html%23cz",
            "http://foo.com/file.html%23cz",
        ),
        same(
            "http://foo.com/fast/dir%2fcz",
            "http://foo.com/fast/dir%2Fcz",
        ),
        same("http://foo.com/\u{1a}!", "http://foo.com/%1A!"),
        same("http://foo.com/\u{1}!", "http://foo.com/%01!"),
        same(
            "http://mydomain.com/en Espa\u{f1}ol.aspx",
            "http://mydomain.com/en%20Espa%C3%B1ol.aspx",
        ),
        // reserved characters stay escaped (NUTCH-2064)
        same("http://x.com/s?m=10&q=a%26b", "http://x.com/s?m=10&q=a%26b"),
        same(
            "http://x.com/show?http%3A%2F%2Fx.com%2Fb",
            "http://x.com/show?http%3A%2F%2Fx.com%2Fb",
        ),
        same(
            "http://google.com/search?q=c%2B%2B",
            "http://google.com/search?q=c%2B%2B",
        ),
        same("http://x.com/s?q=a+b", "http://x.com/s?q=a+b"),
        // IDN to punycode
        same("http://b\u{fc}cher.de/", "http://xn--bcher-kva.de/"),
        same("http://\u{ea}xample.com", "http://xn--xample-hva.com/"),
        same(
            "https://\u{43d}\u{44d}\u{431}.\u{440}\u{444}/",
            "https://xn--90ax2c.xn--p1ai/",
        ),
        same(
            "https://www.0251-sachverst%c3%a4ndiger.de/",
            "https://www.xn--0251-sachverstndiger-ozb.de/",
        ),
        same("http://x.com/./a/../%66.html", "http://x.com/f.html"),
        same("http://x.com/?x[y]=1", "http://x.com/?x%5By%5D=1"),
        same("http://x.com/foo\u{80}", "http://x.com/foo%C2%80"),
        same("http://x.com/foo%c2%80", "http://x.com/foo%C2%80"),
        // scheme, host, port
        same(" http://foo.com/ ", "http://foo.com/"),
        same("HTTP://foo.com/", "http://foo.com/"),
        same("http://Foo.Com/index.html", "http://foo.com/index.html"),
        same("https://example%2Ecom/", "https://example.com/"),
        same("http://foo.com:80/index.html", "http://foo.com/index.html"),
        same("http://foo.com:81/", "http://foo.com:81/"),
        same("http://example.com:/", "http://example.com/"),
        same(
            "https://example.com:/foobar.html",
            "https://example.com/foobar.html",
        ),
        same("http://foo.com", "http://foo.com/"),
        same("http://foo.com/foo.html#ref", "http://foo.com/foo.html"),
        // dot segments and runs of `/`
        same("http://foo.com/aa/./foo.html", "http://foo.com/aa/foo.html"),
        same("http://foo.com/aa/../", "http://foo.com/"),
        same("http://foo.com/aa/bb/../", "http://foo.com/aa/"),
        same("http://foo.com/aa/..", "http://foo.com/"),
        same(
            "http://foo.com/aa/bb/cc/../../foo.html",
            "http://foo.com/aa/foo.html",
        ),
        same(
            "http://foo.com/aa/bb/../cc/dd/../ee/foo.html",
            "http://foo.com/aa/cc/ee/foo.html",
        ),
        same("http://foo.com/../foo.html", "http://foo.com/foo.html"),
        same("http://foo.com/../../foo.html", "http://foo.com/foo.html"),
        same(
            "http://foo.com/../aa/../foo.html",
            "http://foo.com/foo.html",
        ),
        same(
            "http://foo.com/aa/../../foo.html",
            "http://foo.com/foo.html",
        ),
        same(
            "http://foo.com/aa/../bb/../foo.html/../../",
            "http://foo.com/",
        ),
        same(
            "http://foo.com/../aa/foo.html",
            "http://foo.com/aa/foo.html",
        ),
        same(
            "http://foo.com/a..a/foo.html",
            "http://foo.com/a..a/foo.html",
        ),
        same("http://foo.com/a..a/../foo.html", "http://foo.com/foo.html"),
        same(
            "http://foo.com/foo.foo/../foo.html",
            "http://foo.com/foo.html",
        ),
        same(
            "http://foo.com//aa/bb/foo.html",
            "http://foo.com/aa/bb/foo.html",
        ),
        same(
            "http://foo.com/aa//bb/foo.html",
            "http://foo.com/aa/bb/foo.html",
        ),
        same(
            "http://foo.com/aa/bb//foo.html",
            "http://foo.com/aa/bb/foo.html",
        ),
        same(
            "http://foo.com//aa//bb//foo.html",
            "http://foo.com/aa/bb/foo.html",
        ),
        same(
            "http://foo.com////aa////bb//foo.html",
            "http://foo.com/aa/bb/foo.html",
        ),
        same(
            "http://foo.com/aa?referer=http://bar.com",
            "http://foo.com/aa?referer=http://bar.com",
        ),
        same("http://foo.com/..", "http://foo.com/"),
        // URLs without a host, other schemes
        differs(
            "file:///foo/bar.txt",
            "REJECT scheme",
            "file:///foo/bar.txt",
            SCHEME,
        ),
        differs("ftp:/", "REJECT bad_syntax", "ftp:/", NO_HOST),
        differs("http:////", "REJECT bad_syntax", "http:/", NO_HOST),
        differs("http:///////", "REJECT bad_syntax", "http:/", NO_HOST),
        differs(
            "ftp://foo.com/index.html",
            "REJECT scheme",
            "ftp://foo.com/index.html",
            SCHEME,
        ),
        differs(
            "file:/path/index.html",
            "REJECT scheme",
            "file:/path/index.html",
            SCHEME,
        ),
        differs(
            "file:/var/www/html/foo/../bar/index.html",
            "REJECT scheme",
            "file:/var/www/html/bar/index.html",
            SCHEME,
        ),
        // empty queries
        same("http://example.com?", "http://example.com/"),
        same("http://example.com?a=1", "http://example.com/?a=1"),
        same("http://example.com/?", "http://example.com/"),
        // stray `%`, characters RFC 3986 does not allow
        same(
            "https://www.last.fm/music/Prefuse+73/_/90%+of+My+Mind+Is+With+You",
            "https://www.last.fm/music/Prefuse+73/_/90%25+of+My+Mind+Is+With+You",
        ),
        same(
            "http://foo.com/{{stuff}} ",
            "http://foo.com/%7B%7Bstuff%7D%7D",
        ),
        same(
            "http://www.example.com/a/c/../b/search?q=foobar\"",
            "http://www.example.com/a/b/search?q=foobar%22",
        ),
        same(
            "http://www.example.com/a/c/../b/search?q=foobar%",
            "http://www.example.com/a/b/search?q=foobar%25",
        ),
        same(
            "http://www.example.com/a/c/../b/search?q=foobar<",
            "http://www.example.com/a/b/search?q=foobar%3C",
        ),
        same(
            "http://www.example.com/a/c/../b/search?q=foobar>",
            "http://www.example.com/a/b/search?q=foobar%3E",
        ),
        same(
            "http://www.example.com/a/c/../b/search?q=foobar^",
            "http://www.example.com/a/b/search?q=foobar%5E",
        ),
        same(
            "http://www.example.com/a/c/../b/search?q=foobar`",
            "http://www.example.com/a/b/search?q=foobar%60",
        ),
        same(
            "http://www.example.com/a/c/../b/search?q=foobar|",
            "http://www.example.com/a/b/search?q=foobar%7C",
        ),
        same(
            "http://www.example.com/p%zz%77%v",
            "http://www.example.com/p%25zzw%25v",
        ),
        same(
            "http://www.example.com/search?q=foobar%",
            "http://www.example.com/search?q=foobar%25",
        ),
        same(
            "http://www.example.com/search?q=foobar%2",
            "http://www.example.com/search?q=foobar%252",
        ),
        same(
            "http://www.example.com/search?q=foobar%25",
            "http://www.example.com/search?q=foobar%25",
        ),
        same(
            "http://www.example.com/search?q=foobar%252",
            "http://www.example.com/search?q=foobar%252",
        ),
        // no scheme: a seed only (see `seeds_without_a_scheme_are_http`)
        differs(
            "foo.com/index.html",
            "REJECT bad_syntax",
            "http://foo.com/index.html",
            "only a seed may omit the scheme (in a page it is a relative link)",
        ),
        same("https://www.example.org./", "https://www.example.org/"),
        same(
            "https://foo.com/search?q=tl;dr",
            "https://foo.com/search?q=tl;dr",
        ),
        // empty parameter values and names
        same("http://foo.com/index?a=1&b", "http://foo.com/index?a=1&b"),
        differs(
            "http://foo.com/index?a=1&b=",
            "http://foo.com/index?a=1&b=",
            "http://foo.com/index?a=1&b",
            "`b=` and `b` are kept apart (a server may tell them apart)",
        ),
        same("http://foo.com/index?a=1&b#c", "http://foo.com/index?a=1&b"),
        same(
            "http://foo.com/index?a=1&b=1&",
            "http://foo.com/index?a=1&b=1",
        ),
        same(
            "http://foo.com/index?&a=1&b=1",
            "http://foo.com/index?a=1&b=1",
        ),
        differs(
            "http://foo.com/index?&=1&a=1",
            "http://foo.com/index?=1&a=1",
            "http://foo.com/index?a=1",
            "a parameter with an empty name is kept (only empty `&&` pairs are dropped)",
        ),
        same(
            "https://foo.com/?one/valid_query/without_%2F_params",
            "https://foo.com/?one/valid_query/without_%2F_params",
        ),
        same(
            "http://foo.com/asdf/page.php?article%2F1234",
            "http://foo.com/asdf/page.php?article%2F1234",
        ),
        same(
            "https://www.example.com/path/file-with-a-*.html",
            "https://www.example.com/path/file-with-a-*.html",
        ),
        same(
            "https://www.example.com/path/foo-$",
            "https://www.example.com/path/foo-$",
        ),
        // query parameters (testQueryParameters), unsorted here
        same(
            "https://example.com/path/show.php?article300",
            "https://example.com/path/show.php?article300",
        ),
        same(
            "https://example.com/path/show.php?/category/3",
            "https://example.com/path/show.php?/category/3",
        ),
        same(
            "https://example.com/?categoryA/categoryB/this_%2F_that",
            "https://example.com/?categoryA/categoryB/this_%2F_that",
        ),
        same(
            "https://example.org/p%2d1/p%2d2/?q=f",
            "https://example.org/p-1/p-2/?q=f",
        ),
        differs(
            "http://foo.com/index?b=2&a=1",
            "http://foo.com/index?b=2&a=1",
            "http://foo.com/index?a=1&b=2",
            "parameters are sorted only with urls.sort_query = true (default false)",
        ),
        // session ids (testRemoveSessionQueryParameters; trawl's default list)
        same(
            "http://foo.com/foo.php?phpsessid=2Aa3ASdfasfdadf&a=1",
            "http://foo.com/foo.php?a=1",
        ),
        same(
            "http://foo.com/foo.php?phpsessid=2Aa3ASdfasfdadf&a=1&b",
            "http://foo.com/foo.php?a=1&b",
        ),
        same(
            "http://foo.com/foo.php?phpsessid=2Aa3ASdfasfdadf",
            "http://foo.com/foo.php",
        ),
        // IPv6 hosts (testIPv6Host)
        same("http://[::1]/", "http://[::1]/"),
        same("http://[::1]", "http://[::1]/"),
        same(
            "http://[2001:db8::1]/path?q=1",
            "http://[2001:db8::1]/path?q=1",
        ),
        same("http://[2001:DB8::1]/", "http://[2001:db8::1]/"),
        same("http://[::1]:80/", "http://[::1]/"),
        same("https://[::1]:443/", "https://[::1]/"),
        same("http://[::1]:8080/x", "http://[::1]:8080/x"),
        differs(
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]/",
            "http://[::ffff:127.0.0.1]/",
            "IPv6 addresses in WHATWG's serialization (hex pieces)",
        ),
        same("http://[::1]/a/../b", "http://[::1]/b"),
        same("http://user:pass@[::1]/x", "http://[::1]/x"),
        same("http://example.com/[x]", "http://example.com/%5Bx%5D"),
        // invalid (invalidUrls.csv, testInvalidIPv6Host): rejected, never a panic
        same("http://[::1", "REJECT bad_syntax"),
        same("http://[]/", "REJECT bad_syntax"),
        same("http://[::1]./", "REJECT bad_syntax"),
        same("http://[::%31]/", "REJECT bad_syntax"),
        same("https://example%2Xcom/", "REJECT bad_syntax"),
        same("https://abc%FEdef.org/", "REJECT bad_syntax"),
        // IDN form (testHostToUnicode, testNoIdnNormalization: options there)
        differs(
            "http://xn--schne-lua.xn--bcher-kva.de/",
            "http://xn--schne-lua.xn--bcher-kva.de/",
            "http://sch\u{f6}ne.b\u{fc}cher.de/",
            "hosts are always punycode (crawler-commons' IdnNormalization.UNICODE option)",
        ),
        differs(
            "http://sch\u{f6}ne.xn--bcher-kva.de/",
            "http://xn--schne-lua.xn--bcher-kva.de/",
            "http://sch\u{f6}ne.xn--bcher-kva.de/",
            "hosts are always punycode (crawler-commons' IdnNormalization.NONE option)",
        ),
    ];

    /// With `urls.sort_query = true`: crawler-commons' sorting cases.
    const PEER_SORTED: &[(&str, &str)] = &[
        ("http://example.com/?b=1&a=1", "http://example.com/?a=1&b=1"),
        (
            "http://foo.com/foo.html?b=1&a=1",
            "http://foo.com/foo.html?a=1&b=1",
        ),
        (
            "http://foo.com/index?a=1&b=2",
            "http://foo.com/index?a=1&b=2",
        ),
        (
            "http://foo.com/index?b=2&a=1",
            "http://foo.com/index?a=1&b=2",
        ),
        (
            "http://foo.com/index?b=2&a=1#c",
            "http://foo.com/index?a=1&b=2",
        ),
        ("http://foo.com/index?b&a=1", "http://foo.com/index?a=1&b"),
        (
            "http://foo.com/index?b=1&a=1&",
            "http://foo.com/index?a=1&b=1",
        ),
        (
            "http://foo.com/index?&b=1&a=1",
            "http://foo.com/index?a=1&b=1",
        ),
        (
            "https://example.com/path/query.php?hello=world&foo=bar",
            "https://example.com/path/query.php?foo=bar&hello=world",
        ),
        (
            "https://example.org/p%2d1/p%2d2/?b=2&a=1",
            "https://example.org/p-1/p-2/?a=1&b=2",
        ),
    ];

    #[test]
    fn crawler_commons_basic_url_normalizer_cases() {
        let mut wrong = Vec::new();
        for c in PEER_CASES {
            let got = n(c.input);
            if got != c.trawl {
                wrong.push(format!("{:?}: got {got:?}, want {:?}", c.input, c.trawl));
            }
            if let Some((theirs, why)) = c.differs {
                assert_ne!(
                    theirs, c.trawl,
                    "{:?} is listed as a difference ({why})",
                    c.input
                );
            }
            // Normalizing a normalized URL changes nothing.
            if !got.starts_with("REJECT") {
                assert_eq!(n(&got), got, "not idempotent");
            }
        }
        let sorted = UrlPolicy::new(
            &UrlConfig {
                sort_query: true,
                ..UrlConfig::default()
            },
            &[],
        )
        .unwrap();
        for (input, want) in PEER_SORTED {
            let got = sorted.check(input).map(|u| u.to_string());
            if got.as_deref() != Ok(*want) {
                wrong.push(format!("sorted {input:?}: got {got:?}, want {want:?}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn canonical_escapes_table() {
        for (input, want) in [
            ("/a/b", "/a/b"),
            ("/%7euser/%2f", "/~user/%2F"),
            ("/q=foobar%", "/q=foobar%25"),
            ("/%zz", "/%25zz"),
            ("/90%+of", "/90%25+of"),
            ("/%", "/%25"),
            ("/%4", "/%254"),
            (
                "/a^b`c|d[e]f{g}h\\i\"j<k>l#m n",
                "/a%5Eb%60c%7Cd%5Be%5Df%7Bg%7Dh%5Ci%22j%3Ck%3El%23m%20n",
            ),
            ("/caf\u{e9}", "/caf%C3%A9"),
            ("/!$&'()*+,;=:@/?", "/!$&'()*+,;=:@/?"),
            ("/%E3%83%84", "/%E3%83%84"),
            ("/%e3%83%84", "/%E3%83%84"),
        ] {
            assert_eq!(canonical_escapes(input), want, "{input:?}");
            assert_eq!(canonical_escapes(want), want, "idempotent: {want:?}");
        }
        assert!(matches!(canonical_escapes("/a/b?c=d"), Cow::Borrowed(_)));
        assert_eq!(canonical_escapes_bytes(b"/caf\xe9"), "/caf%E9");
    }

    #[test]
    fn credentials_are_dropped() {
        assert_eq!(
            n("http://alice:s3cret@example.com/x"),
            "http://example.com/x"
        );
        assert_eq!(n("http://alice@example.com/x"), "http://example.com/x");
        assert_eq!(n("http://:pw@example.com/"), "http://example.com/");
        let base = Url::parse("http://example.com/a/").unwrap();
        let u = policy()
            .check_relative(&base, "//bob:pw@other.test/p")
            .unwrap();
        assert_eq!(u.as_str(), "http://other.test/p");
    }

    #[test]
    fn seeds_without_a_scheme_are_http() {
        let p = policy();
        let seed = |s: &str| {
            p.check_seed(s)
                .map(|u| u.to_string())
                .unwrap_or_else(|r| format!("REJECT {}", r.code()))
        };
        assert_eq!(
            seed("example.com/page.html"),
            "http://example.com/page.html"
        );
        assert_eq!(seed("example.com"), "http://example.com/");
        assert_eq!(
            seed("Example.COM.:8080/a?b=1"),
            "http://example.com:8080/a?b=1"
        );
        assert_eq!(seed("localhost:8080"), "http://localhost:8080/");
        assert_eq!(seed("127.0.0.1/x"), "http://127.0.0.1/x");
        assert_eq!(seed("[::1]:81/"), "http://[::1]:81/");
        assert_eq!(seed("b\u{fc}cher.de/"), "http://xn--bcher-kva.de/");
        assert_eq!(seed("https://example.com/"), "https://example.com/");
        // Not a host: checked as written.
        assert_eq!(seed("mailto:a@b.c"), "REJECT scheme");
        assert_eq!(seed("javascript:void(0)"), "REJECT scheme");
        assert_eq!(seed("a@b.c"), "REJECT bad_syntax");
        assert_eq!(seed("page"), "REJECT bad_syntax");
        // A dotted name is a host name, as crawler-commons takes it.
        assert_eq!(seed("page.html"), "http://page.html/");
        assert_eq!(seed("/a/b"), "REJECT bad_syntax");
        assert_eq!(seed("ftp://example.com/"), "REJECT scheme");
        // Outlinks keep needing a scheme (a relative link is resolved instead).
        assert_eq!(n("example.com/page.html"), "REJECT bad_syntax");
    }

    #[test]
    fn rejects_with_reasons() {
        assert_eq!(n("mailto:a@b.c"), "REJECT scheme");
        assert_eq!(n("not a url"), "REJECT bad_syntax");
        assert_eq!(n("http://e.com/a/b/a/b/a/b/a"), "REJECT trap");
        let long = format!("http://e.com/{}", "x".repeat(3000));
        assert_eq!(n(&long), "REJECT too_long");
    }
}
