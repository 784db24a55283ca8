//! URL normalization and filtering, shared by inject, parse and updatedb so that a
//! URL has one spelling everywhere.
//!
//! Normalization (on top of WHATWG parsing by the `url` crate, which lowercases the
//! scheme and host, converts IDN hosts to punycode, drops default ports and resolves
//! dot segments): the fragment is dropped, runs of `/` in the path collapse, percent
//! escapes are upper-cased and escapes of unreserved characters decoded, session-id
//! parameters are removed, an empty query is dropped, and (optionally) query
//! parameters are sorted.

use std::collections::HashSet;
use std::path::Path;

use regex::Regex;
use url::Url;

use crate::config::UrlConfig;
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
        let scope = match cfg.scope.as_str() {
            "host" => Scope::Hosts(seed_hosts.iter().cloned().collect()),
            "domain" => Scope::Domains(seed_hosts.iter().map(|h| registrable_domain(h)).collect()),
            _ => Scope::Any,
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
        // Trailing dot in a host name ("example.com.") names the same host.
        if let Some(h) = url.host_str()
            && h.len() > 1
            && h.ends_with('.')
        {
            let trimmed = h.trim_end_matches('.').to_string();
            url.set_host(Some(&trimmed))
                .map_err(|e| Reject::Syntax(e.to_string()))?;
        }
        // A path without `//`, `%` or `;` is already normalized (the common case:
        // no rewriting, no re-parse).
        let p = url.path();
        if p.contains("//") || p.contains('%') || p.contains(';') {
            let path = normalize_escapes(&collapse_slashes(p));
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

/// The registrable domain of a host (public suffix + 1 label), or the host itself.
pub fn registrable_domain(host: &str) -> String {
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

/// Upper-cases percent escapes and decodes escapes of unreserved characters.
fn normalize_escapes(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && b[i + 1].is_ascii_hexdigit()
            && b[i + 2].is_ascii_hexdigit()
        {
            let hex = &s[i + 1..i + 3];
            if let Ok(v) = u8::from_str_radix(hex, 16) {
                if is_unreserved(v) {
                    out.push(v as char);
                } else {
                    out.push('%');
                    out.push_str(&hex.to_ascii_uppercase());
                }
                i += 3;
                continue;
            }
        }
        // Copy one whole UTF-8 character.
        let ch_len = utf8_len(b[i]);
        out.push_str(&s[i..(i + ch_len).min(s.len())]);
        i += ch_len;
    }
    out
}

fn utf8_len(first: u8) -> usize {
    match first {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
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
        .map(normalize_escapes)
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

#[cfg(test)]
mod tests {
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

    #[test]
    fn rejects_with_reasons() {
        assert_eq!(n("mailto:a@b.c"), "REJECT scheme");
        assert_eq!(n("not a url"), "REJECT bad_syntax");
        assert_eq!(n("http://e.com/a/b/a/b/a/b/a"), "REJECT trap");
        let long = format!("http://e.com/{}", "x".repeat(3000));
        assert_eq!(n(&long), "REJECT too_long");
    }
}
