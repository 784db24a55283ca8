//! `inject`: adds seed URLs to the crawldb (creating the crawl directory on first
//! run) without touching URLs it already knows.
//!
//! Seed file format: one URL per line, optionally followed by whitespace-separated
//! `key=value` pairs (`score`, `fetch_interval`; other keys become metadata); `#`
//! comments and blank lines are skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::config::Config;
use crate::crawldb::schedule::FIXED_INTERVAL_KEY;
use crate::crawldb::stream::DatumStream;
use crate::crawldb::{current_part, lock, write_version};
use crate::datum::{CrawlDatum, Millis, now_millis};
use crate::error::{Error, Result};
use crate::layout::CrawlDir;
use crate::storage::partition_for_host;
use crate::urls::UrlPolicy;

/// A seed line that was not injected.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    /// `file:line`.
    pub place: String,
    /// The URL (or line) as written.
    pub url: String,
    /// Why.
    pub reason: String,
}

impl std::fmt::Display for Rejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: rejected {}: {}", self.place, self.url, self.reason)
    }
}

/// What inject did.
#[derive(Debug, Clone, Default)]
pub struct InjectReport {
    /// New URLs added.
    pub injected: u64,
    /// Seeds already in the crawldb (kept as they were), or repeated in the file.
    pub known: u64,
    /// Lines rejected, with place and reason.
    pub rejected: Vec<Rejected>,
    /// Rows in the crawldb afterwards.
    pub rows: u64,
}

/// Parses a seed file into datums (normalized, filtered); rejects are returned apart.
pub fn parse_seeds(
    path: &Path,
    text: &str,
    cfg: &Config,
    now: Millis,
) -> Result<(Vec<CrawlDatum>, Vec<Rejected>)> {
    // Seeds define the scope, so they are not themselves subject to it.
    let mut ucfg = cfg.urls.clone();
    ucfg.scope = "any".into();
    let policy = UrlPolicy::new(&ucfg, &[])?;
    let mut out = Vec::new();
    let mut rejected = Vec::new();
    for (idx, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let place = format!("{}:{}", path.display(), idx + 1);
        let mut tokens = line.split_whitespace();
        let Some(raw) = tokens.next() else { continue };
        let reject = |reason: String| Rejected {
            place: place.clone(),
            url: raw.to_string(),
            reason,
        };
        let url = match policy.check(raw) {
            Ok(u) => u,
            Err(e) => {
                rejected.push(reject(format!("{} ({})", e, e.code())));
                continue;
            }
        };
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        let mut d = CrawlDatum::unfetched(url.to_string(), host, now, cfg.inject.fetch_interval);
        d.score = cfg.inject.score;
        match apply_keys(&mut d, tokens) {
            Ok(()) => out.push(d),
            Err(why) => rejected.push(reject(why)),
        }
    }
    Ok((out, rejected))
}

fn apply_keys<'a>(
    d: &mut CrawlDatum,
    tokens: impl Iterator<Item = &'a str>,
) -> std::result::Result<(), String> {
    for kv in tokens {
        let Some((k, v)) = kv.split_once('=') else {
            return Err(format!("malformed metadata {kv:?}: expected key=value"));
        };
        match k {
            "score" => match v.parse::<f64>() {
                Ok(s) if s.is_finite() => d.score = s,
                _ => return Err(format!("score={v:?} is not a number")),
            },
            "fetch_interval" => match v.parse::<i64>() {
                Ok(i) if i > 0 => {
                    d.fetch_interval = i;
                    d.metadata.insert(FIXED_INTERVAL_KEY.into(), "true".into());
                }
                _ => {
                    return Err(format!(
                        "fetch_interval={v:?} is not a positive number of seconds"
                    ));
                }
            },
            "" => return Err(format!("malformed metadata {kv:?}: empty key")),
            _ => {
                d.metadata.insert(k.to_string(), v.to_string());
            }
        }
    }
    Ok(())
}

/// Injects the seeds of `seed_file` into the crawl directory `root`.
pub fn run(root: &Path, cfg: &Config, seed_file: &Path) -> Result<InjectReport> {
    let text = std::fs::read_to_string(seed_file).map_err(|e| {
        Error::input(
            seed_file.display().to_string(),
            format!("cannot read the seed file ({e}); nothing was injected"),
        )
    })?;
    let now = now_millis();
    let (seeds, rejected) = parse_seeds(seed_file, &text, cfg, now)?;
    for r in &rejected {
        tracing::warn!("{r}");
    }
    let dir = CrawlDir::new(root);
    std::fs::create_dir_all(dir.crawldb()).map_err(|e| Error::io(dir.crawldb(), e))?;
    let _lock = lock(&dir, "inject")?;
    super::verify_for_rewrite(&dir)?;
    let (exists, mut meta) = super::meta_or_new(&dir, cfg)?;
    let n = meta.partitions;
    let mut hosts: BTreeSet<String> = meta.seed_hosts.iter().cloned().collect();
    let mut parts: Vec<BTreeMap<String, CrawlDatum>> = (0..n).map(|_| BTreeMap::new()).collect();
    let mut dup = 0u64;
    for d in seeds {
        hosts.insert(d.host.clone());
        let p = partition_for_host(&d.host, n);
        if parts[p].contains_key(&d.url) {
            dup += 1;
        } else {
            parts[p].insert(d.url.clone(), d);
        }
    }
    meta.seed_hosts = hosts.into_iter().collect();
    let counts = write_version(&dir, &mut meta, "inject", |i, w| {
        let mut db = if exists {
            DatumStream::open(&current_part(&dir, i))?
        } else {
            DatumStream::empty()
        };
        let mut new = parts[i].values().cloned().peekable();
        let (mut injected, mut known, mut rows) = (0u64, 0u64, 0u64);
        loop {
            let take_db = match (db.peek_url(), new.peek()) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some(a), Some(b)) => {
                    if a == b.url {
                        known += 1;
                        new.next();
                        true
                    } else {
                        a < b.url.as_str()
                    }
                }
            };
            let row = if take_db {
                db.next_row()?
            } else {
                injected += 1;
                new.next()
            };
            if let Some(r) = row {
                rows += 1;
                w.push(r)?;
            }
        }
        Ok((injected, known, rows))
    })?;
    let mut report = InjectReport {
        known: dup,
        rejected,
        ..InjectReport::default()
    };
    for (i, k, r) in counts {
        report.injected += i;
        report.known += k;
        report.rows += r;
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_seed_lines() {
        let text = "# comment\n\nhttp://A.test/x#frag\tscore=2.5\tfetch_interval=3600\tlang=en\nftp://b.test/\nhttp://c.test/ score=abc\nhttp://d.test/ novalue\n";
        let (ok, rej) = parse_seeds(Path::new("seeds.txt"), text, &Config::default(), 5).unwrap();
        assert_eq!(ok.len(), 1);
        let d = &ok[0];
        assert_eq!(d.url, "http://a.test/x");
        assert_eq!(d.host, "a.test");
        assert_eq!(d.score, 2.5);
        assert_eq!(d.fetch_interval, 3600);
        assert_eq!(d.fetch_time, 5);
        assert_eq!(d.metadata.get("lang").map(String::as_str), Some("en"));
        assert_eq!(
            d.metadata.get(FIXED_INTERVAL_KEY).map(String::as_str),
            Some("true")
        );
        let places: Vec<&str> = rej.iter().map(|r| r.place.as_str()).collect();
        assert_eq!(places, ["seeds.txt:4", "seeds.txt:5", "seeds.txt:6"]);
        assert!(rej[0].reason.contains("scheme"), "{}", rej[0].reason);
        assert!(rej[1].reason.contains("score"), "{}", rej[1].reason);
    }

    #[test]
    fn defaults_from_config() {
        let mut cfg = Config::default();
        cfg.inject.score = 0.5;
        cfg.inject.fetch_interval = 77;
        let (ok, _) = parse_seeds(Path::new("s"), "http://a.test/", &cfg, 0).unwrap();
        assert_eq!(ok[0].score, 0.5);
        assert_eq!(ok[0].fetch_interval, 77);
        assert!(ok[0].metadata.is_empty());
        assert_eq!(ok[0].depth, 0);
    }
}
