//! `check url URL`: one URL as a crawl would see it (Nutch's parsechecker): the
//! normalized URL and the filters' decision, its origin's robots.txt and the decision
//! for it, the HTTP exchange (after the politeness delay), and the page parsed as
//! `parse` parses it: charset, title, robots meta, canonical, signatures, the main
//! text's start and the outlinks with their anchors.

use std::io::Write;
use std::time::Duration;

use serde::Serialize;

use crate::config::Config;
use crate::error::Result;
use crate::net::client::Http;
use crate::net::robots::{Robots, fetch_robots, origin_of};
use crate::parse::page::{PageInput, PageOpts, parse_page};
use crate::records::Header;
use crate::urls::UrlPolicy;

use super::excerpt;

/// What to check and show.
#[derive(Debug, Clone)]
pub struct UrlCheckOpts {
    /// The URL as given.
    pub url: String,
    /// Fetch even when robots.txt disallows it (the decision is still shown).
    pub ignore_robots: bool,
    /// Outlinks listed (all are counted).
    pub outlinks: usize,
    /// Characters of the main text shown.
    pub text_chars: usize,
}

/// The origin's robots.txt and the decision for the URL.
#[derive(Debug, Clone, Serialize)]
pub struct RobotsSeen {
    /// `scheme://host[:port]`.
    pub origin: String,
    /// `parsed`, `allow_all` or `unavailable`.
    pub outcome: String,
    /// Why (`ok`, `http_404`, `timeout`, ...).
    pub reason: String,
    /// The HTTP status of robots.txt, when one arrived.
    pub http_status: Option<i32>,
    /// Crawl-delay for the robots agent (seconds).
    pub crawl_delay: Option<f64>,
    /// Sitemap: lines.
    pub sitemaps: Vec<String>,
    /// Whether the URL may be fetched.
    pub allowed: bool,
}

/// The response.
#[derive(Debug, Clone, Serialize)]
pub struct ResponseSeen {
    /// HTTP status.
    pub status: u16,
    /// From request to the end of the body (ms).
    pub elapsed_ms: u64,
    /// The server's address.
    pub remote_addr: Option<String>,
    /// Body bytes kept (decompressed, at most `fetch.max_content_bytes`).
    pub bytes: usize,
    /// Whether the body was cut at the cap.
    pub truncated: bool,
    /// Headers in the order received (names lowercase).
    pub headers: Vec<(String, String)>,
}

/// One outlink.
#[derive(Debug, Clone, Serialize)]
pub struct LinkSeen {
    /// The target, resolved and normalized.
    pub url: String,
    /// Its anchor text.
    pub anchor: String,
    /// `rel=nofollow`.
    pub nofollow: bool,
    /// Whether the `[urls]` filters admit it (with the checked URL's host as seed).
    pub allowed: bool,
}

/// The page as parse sees it.
#[derive(Debug, Clone, Serialize)]
pub struct ParseSeen {
    /// `parse_success` or `parse_failed`.
    pub status: String,
    /// Why (`ok`, `not_html`, `too_large`, ...).
    pub reason: String,
    /// The Content-Type.
    pub content_type: Option<String>,
    /// The charset the text was decoded with.
    pub charset: Option<String>,
    /// Where the charset came from (`header`, `meta`, `bom`, `detected`).
    pub charset_source: Option<String>,
    /// The title.
    pub title: Option<String>,
    /// The language.
    pub lang: Option<String>,
    /// `<link rel=canonical>` or the Link header's canonical.
    pub canonical: Option<String>,
    /// Robots meta / X-Robots-Tag noindex.
    pub noindex: bool,
    /// Robots meta / X-Robots-Tag nofollow.
    pub nofollow: bool,
    /// The content signature (MD5 hex of the text, as dedup uses it).
    pub signature: Option<String>,
    /// The SimHash (16 hex digits).
    pub simhash: Option<String>,
    /// Characters of the whole text.
    pub text_chars: usize,
    /// Characters of the main text.
    pub main_text_chars: usize,
    /// The main text's start.
    pub main_text: String,
    /// Outlinks found.
    pub outlinks_total: usize,
    /// The first outlinks.
    pub outlinks: Vec<LinkSeen>,
}

/// Everything `check url` found.
#[derive(Debug, Clone, Serialize)]
pub struct UrlCheck {
    /// The URL as given.
    pub input: String,
    /// After normalization.
    pub normalized: Option<String>,
    /// Why the filters reject it (none: admitted).
    pub rejected: Option<String>,
    /// The robots.txt seen.
    pub robots: Option<RobotsSeen>,
    /// The politeness wait before the request (ms).
    pub waited_ms: u64,
    /// The User-Agent sent.
    pub user_agent: String,
    /// The response, when one arrived.
    pub response: Option<ResponseSeen>,
    /// Why no response arrived (`connection_refused`, `timeout`, ...).
    pub error: Option<String>,
    /// The Location of a redirect, resolved.
    pub redirect: Option<String>,
    /// The parse of a 2xx body.
    pub parse: Option<ParseSeen>,
    /// Why it was not fetched (filters, robots), when it was not.
    pub not_fetched: Option<String>,
}

/// Checks one URL (network access: robots.txt and the page, politely).
pub fn check(cfg: &Config, opts: &UrlCheckOpts) -> Result<UrlCheck> {
    let mut report = UrlCheck {
        input: opts.url.clone(),
        normalized: None,
        rejected: None,
        robots: None,
        waited_ms: 0,
        user_agent: cfg.fetch.user_agent.clone(),
        response: None,
        error: None,
        redirect: None,
        parse: None,
        not_fetched: None,
    };
    // The filters, with the URL's own host as the seed (as if a crawl were seeded with it).
    let host = url::Url::parse(opts.url.trim())
        .ok()
        .and_then(|u| u.host_str().map(str::to_string));
    let policy = UrlPolicy::new(&cfg.urls, &host.into_iter().collect::<Vec<_>>())?;
    let url = match policy.check_seed(&opts.url) {
        Ok(u) => u,
        Err(r) => {
            report.rejected = Some(format!("{}: {r}", r.code()));
            report.not_fetched = Some(format!("the [urls] filters reject it ({})", r.code()));
            return Ok(report);
        }
    };
    report.normalized = Some(url.to_string());
    let http = Http::new(&cfg.fetch)?;
    let rt = crate::net::runtime::build(1)?;
    let origin = origin_of(&url);
    let host = url.host_str().unwrap_or_default().to_string();
    let (robots, rec, _) =
        rt.block_on(fetch_robots(&http, &origin, &host, &cfg.fetch.robots_agent));
    let allowed = robots.allowed(url.as_str());
    let crawl_delay = robots.crawl_delay_secs();
    report.robots = Some(RobotsSeen {
        origin: rec.origin,
        outcome: rec.outcome,
        reason: rec.reason,
        http_status: rec.http_status,
        crawl_delay,
        sitemaps: rec.sitemaps,
        allowed,
    });
    if !opts.ignore_robots {
        if !allowed {
            report.not_fetched = Some(match robots {
                Robots::Unavailable => {
                    "robots.txt is unavailable: a crawl fetches nothing from the host this round (--ignore-robots to fetch anyway)".to_string()
                }
                _ => "robots.txt disallows it (--ignore-robots to fetch anyway)".to_string(),
            });
            return Ok(report);
        }
        if let Some(d) = crawl_delay.filter(|d| *d > cfg.fetch.max_crawl_delay) {
            report.not_fetched = Some(format!(
                "Crawl-delay {d}s is above fetch.max_crawl_delay ({}s): a crawl skips the host (--ignore-robots to fetch anyway)",
                cfg.fetch.max_crawl_delay
            ));
            return Ok(report);
        }
    }
    // Politeness: the host's delay (raised by Crawl-delay) between robots.txt and the page.
    let wait = cfg.fetch.delay.max(crawl_delay.unwrap_or(0.0));
    let wait = Duration::try_from_secs_f64(wait).unwrap_or(Duration::ZERO);
    report.waited_ms = wait.as_millis() as u64;
    crate::signal::sleep(wait);
    match rt.block_on(http.get(&url, &[], cfg.fetch.max_content_bytes)) {
        Err(e) => {
            report.error = Some(format!(
                "{}: {e}",
                crate::net::outcome::classify_error(e.as_ref())
            ));
        }
        Ok(resp) => {
            let headers: Vec<(String, String)> = resp
                .headers
                .iter()
                .map(|(k, v)| {
                    (
                        k.as_str().to_ascii_lowercase(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect();
            if (300..400).contains(&resp.status) {
                report.redirect = resp
                    .header("location")
                    .and_then(|l| url.join(l).ok())
                    .map(|u| u.to_string());
            }
            if (200..300).contains(&resp.status) {
                let hdrs: Vec<Header> = headers
                    .iter()
                    .map(|(name, value)| Header {
                        name: name.clone(),
                        value: value.clone(),
                    })
                    .collect();
                let input = PageInput {
                    url: url.as_str(),
                    content_type: resp.header("content-type"),
                    headers: &hdrs,
                    content: &resp.body,
                    truncated: resp.truncated,
                };
                let page = parse_page(&input, &PageOpts::from_config(cfg), &policy);
                let main = page.text.main_text.clone().unwrap_or_default();
                report.parse = Some(ParseSeen {
                    status: page.data.status.clone(),
                    reason: page.data.reason.clone(),
                    content_type: page.data.content_type.clone(),
                    charset: page.data.charset.clone(),
                    charset_source: page.data.charset_source.clone(),
                    title: page.data.title.clone(),
                    lang: page.data.lang.clone(),
                    canonical: page.data.canonical.clone(),
                    noindex: page.data.noindex,
                    nofollow: page.data.nofollow,
                    signature: page.data.signature.clone(),
                    simhash: page.data.simhash.map(|h| format!("{h:016x}")),
                    text_chars: page.text.text.chars().count(),
                    main_text_chars: main.chars().count(),
                    main_text: excerpt(&main, opts.text_chars),
                    outlinks_total: page.links.len(),
                    outlinks: page
                        .links
                        .iter()
                        .take(opts.outlinks)
                        .map(|l| LinkSeen {
                            url: l.link.url.clone(),
                            anchor: l.link.anchor.clone(),
                            nofollow: l.link.nofollow,
                            allowed: l.allowed,
                        })
                        .collect(),
                });
            }
            report.response = Some(ResponseSeen {
                status: resp.status,
                elapsed_ms: resp.elapsed.as_millis() as u64,
                remote_addr: resp.remote_addr.map(|a| a.to_string()),
                bytes: resp.body.len(),
                truncated: resp.truncated,
                headers,
            });
        }
    }
    Ok(report)
}

/// Prints the report as labelled lines.
pub fn print(out: &mut dyn Write, r: &UrlCheck) -> Result<()> {
    let mut t = String::new();
    let mut line = |k: &str, v: String| t.push_str(&format!("{k:<13}{v}\n"));
    line("url", r.input.clone());
    line(
        "normalized",
        r.normalized.clone().unwrap_or_else(|| "-".into()),
    );
    line(
        "filters",
        r.rejected
            .as_ref()
            .map_or("accepted".to_string(), |m| format!("rejected: {m}")),
    );
    if let Some(rb) = &r.robots {
        line(
            "robots.txt",
            format!(
                "{}/robots.txt: {} ({}{}); crawl-delay {}; sitemaps {}",
                rb.origin,
                rb.outcome,
                rb.reason,
                rb.http_status
                    .map_or(String::new(), |s| format!(", http {s}")),
                rb.crawl_delay
                    .map_or("none".to_string(), |d| format!("{d}s")),
                if rb.sitemaps.is_empty() {
                    "none".to_string()
                } else {
                    rb.sitemaps.join(" ")
                }
            ),
        );
        line(
            "robots",
            if rb.allowed { "allowed" } else { "disallowed" }.to_string(),
        );
    }
    if let Some(why) = &r.not_fetched {
        line("not fetched", why.clone());
    }
    if r.response.is_some() || r.error.is_some() {
        line(
            "request",
            format!(
                "GET {} (User-Agent: {}) after a politeness wait of {} ms",
                r.normalized.as_deref().unwrap_or("-"),
                r.user_agent,
                r.waited_ms
            ),
        );
    }
    if let Some(e) = &r.error {
        line("error", e.clone());
    }
    if let Some(resp) = &r.response {
        line(
            "response",
            format!(
                "{} in {} ms from {}, {} bytes{}",
                resp.status,
                resp.elapsed_ms,
                resp.remote_addr.as_deref().unwrap_or("?"),
                resp.bytes,
                if resp.truncated {
                    " (cut at fetch.max_content_bytes)"
                } else {
                    ""
                }
            ),
        );
        for (k, v) in &resp.headers {
            line("", format!("{k}: {v}"));
        }
    }
    if let Some(to) = &r.redirect {
        line("redirect", format!("to {to} (check that URL next)"));
    }
    if let Some(p) = &r.parse {
        let or_dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
        line("parse", format!("{} ({})", p.status, p.reason));
        line("content-type", or_dash(&p.content_type));
        line(
            "charset",
            format!(
                "{} (from {})",
                or_dash(&p.charset),
                or_dash(&p.charset_source)
            ),
        );
        line("title", or_dash(&p.title));
        line("lang", or_dash(&p.lang));
        line("canonical", or_dash(&p.canonical));
        line(
            "robots meta",
            format!(
                "{}, {}",
                if p.noindex { "noindex" } else { "index" },
                if p.nofollow { "nofollow" } else { "follow" }
            ),
        );
        line(
            "signature",
            format!(
                "{} (simhash {})",
                or_dash(&p.signature),
                or_dash(&p.simhash)
            ),
        );
        line(
            "text",
            format!(
                "{} characters, main text {}",
                p.text_chars, p.main_text_chars
            ),
        );
        line("main text", p.main_text.replace('\n', " / "));
        line(
            "outlinks",
            format!(
                "{} (first {} listed; [filtered]: the [urls] filters reject it)",
                p.outlinks_total,
                p.outlinks.len()
            ),
        );
        for l in &p.outlinks {
            line(
                "",
                format!(
                    "{}  {:?}{}{}",
                    l.url,
                    l.anchor,
                    if l.nofollow { " [nofollow]" } else { "" },
                    if l.allowed { "" } else { " [filtered]" }
                ),
            );
        }
    }
    out.write_all(t.as_bytes()).map_err(super::stdout_err)
}
