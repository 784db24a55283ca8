//! `check robots ROBOTS_FILE URL... [--agent A]`: a robots.txt file read as fetch reads
//! it (RFC 9309, the same parser and matching), and each URL's decision for the agent.

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::net::robots::Robots;

/// What the file says for the agent, and each URL's decision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RobotsCheck {
    /// The file.
    pub file: String,
    /// The agent the rules were chosen for.
    pub agent: String,
    /// `parsed` or `allow_all` (a file the parser rejects allows everything).
    pub outcome: String,
    /// The Crawl-delay for the agent (seconds).
    pub crawl_delay: Option<f64>,
    /// The Sitemap: lines.
    pub sitemaps: Vec<String>,
    /// `(url, allowed)` in the order given.
    pub urls: Vec<(String, bool)>,
}

/// Reads `file` and decides every URL for `agent`.
pub fn check(file: &Path, agent: &str, urls: &[String]) -> Result<RobotsCheck> {
    let body = std::fs::read(file).map_err(|e| {
        Error::input(
            file.display().to_string(),
            format!("cannot read the robots.txt file: {e}"),
        )
    })?;
    let robots = Robots::parse(agent, &body);
    Ok(RobotsCheck {
        file: file.display().to_string(),
        agent: agent.to_string(),
        outcome: robots.kind().to_string(),
        crawl_delay: robots.crawl_delay_secs(),
        sitemaps: robots.sitemaps(),
        urls: urls
            .iter()
            .map(|u| (u.clone(), robots.allowed(u)))
            .collect(),
    })
}

/// Prints the check: a header of what the file says, then
/// `allowed|disallowed<TAB>URL` per URL.
pub fn print(out: &mut dyn Write, c: &RobotsCheck) -> Result<()> {
    let mut text = format!(
        "# {}: {} for agent {:?}; crawl-delay {}; sitemaps {}\n",
        c.file,
        c.outcome,
        c.agent,
        c.crawl_delay
            .map_or("none".to_string(), |d| format!("{d}s")),
        if c.sitemaps.is_empty() {
            "none".to_string()
        } else {
            c.sitemaps.join(" ")
        }
    );
    for (u, ok) in &c.urls {
        text.push_str(&format!(
            "{}\t{u}\n",
            if *ok { "allowed" } else { "disallowed" }
        ));
    }
    out.write_all(text.as_bytes()).map_err(super::stdout_err)
}
