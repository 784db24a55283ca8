//! robots.txt kept between fetch runs (`fetch.robots_cache_ttl`, at most 24 h as
//! RFC 9309 allows): `<crawl-dir>/robots_cache.json` holds, per origin, the body of
//! its robots.txt (or that it allows everything) and when it was fetched. A later
//! run reuses a still-fresh entry instead of requesting robots.txt again. Unavailable
//! robots.txt (5xx, 429, network failure) is never cached: it is asked again.
//!
//! The file is written atomically (temporary file + rename) at the end of a run. An
//! unreadable or corrupt file is reported and ignored (robots.txt is fetched again).

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::datum::Millis;
use crate::error::Result;
use crate::net::robots::{Robots, RobotsRecord};
use crate::store::parquet;

/// The longest time-to-live RFC 9309 allows (24 h).
pub const MAX_TTL_SECS: f64 = 86400.0;

const VERSION: u32 = 1;

/// One origin's cached robots.txt.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CacheEntry {
    /// The body (first 500 KiB) of a 2xx robots.txt; `None` = allow all (4xx, too
    /// many redirects).
    pub body: Option<String>,
    /// What the fetch that produced it recorded (its `fetch_time` dates the entry).
    pub record: RobotsRecord,
}

impl CacheEntry {
    /// The entry for a robots.txt just fetched; `None` for one that must not be
    /// cached (unavailable).
    pub fn new(robots: &Robots, record: &RobotsRecord, body: Option<&[u8]>) -> Option<Self> {
        match robots {
            Robots::Unavailable => None,
            Robots::AllowAll => Some(CacheEntry {
                body: None,
                record: record.clone(),
            }),
            Robots::Rules(_) => Some(CacheEntry {
                body: Some(String::from_utf8_lossy(body.unwrap_or_default()).into_owned()),
                record: record.clone(),
            }),
        }
    }

    /// The rules for `agent` (re-parsed, so a changed `fetch.robots_agent` applies),
    /// and the record for this run's `robots/` dataset.
    pub fn robots(&self, agent: &str) -> (Robots, RobotsRecord) {
        let robots = match &self.body {
            Some(b) => Robots::parse(agent, b.as_bytes()),
            None => Robots::AllowAll,
        };
        let mut rec = self.record.clone();
        rec.outcome = robots.kind().to_string();
        rec.crawl_delay = robots.crawl_delay_secs();
        rec.sitemaps = robots.sitemaps();
        (robots, rec)
    }
}

#[derive(Serialize, Deserialize)]
struct CacheFile {
    version: u32,
    entries: HashMap<String, CacheEntry>,
}

/// Reads the entries of `path` fetched less than `ttl_secs` before `now`. A missing
/// file is an empty cache; an unreadable or corrupt one is reported and ignored.
pub fn load(path: &Path, ttl_secs: f64, now: Millis) -> HashMap<String, CacheEntry> {
    let text = match std::fs::read(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return HashMap::new(),
        Err(e) => {
            tracing::warn!(
                "cannot read the robots cache {}: {e}; ignoring it (robots.txt is fetched again)",
                path.display()
            );
            return HashMap::new();
        }
    };
    let file: CacheFile = match serde_json::from_slice(&text) {
        Ok(f) => f,
        Err(e) => {
            tracing::warn!(
                "the robots cache {} is corrupt ({e}); ignoring it (robots.txt is fetched again, the file is rewritten)",
                path.display()
            );
            return HashMap::new();
        }
    };
    if file.version != VERSION {
        tracing::warn!(
            "the robots cache {} has version {} (expected {VERSION}); ignoring it",
            path.display(),
            file.version
        );
        return HashMap::new();
    }
    let ttl_ms = (ttl_secs.clamp(0.0, MAX_TTL_SECS) * 1000.0) as i64;
    file.entries
        .into_iter()
        .filter(|(_, e)| fresh(e, ttl_ms, now))
        .collect()
}

fn fresh(e: &CacheEntry, ttl_ms: i64, now: Millis) -> bool {
    let age = now.saturating_sub(e.record.fetch_time);
    (0..ttl_ms).contains(&age)
}

/// Writes `entries` still fresh at `now` to `path` atomically.
pub fn save(
    path: &Path,
    entries: HashMap<String, CacheEntry>,
    ttl_secs: f64,
    now: Millis,
) -> Result<()> {
    let ttl_ms = (ttl_secs.clamp(0.0, MAX_TTL_SECS) * 1000.0) as i64;
    let file = CacheFile {
        version: VERSION,
        entries: entries
            .into_iter()
            .filter(|(_, e)| fresh(e, ttl_ms, now))
            .collect(),
    };
    let bytes = serde_json::to_vec(&file).map_err(|e| {
        crate::error::Error::input(path.display().to_string(), format!("cannot encode: {e}"))
    })?;
    parquet::write_atomic(path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(origin: &str, body: Option<&str>, fetch_time: Millis) -> CacheEntry {
        CacheEntry {
            body: body.map(str::to_string),
            record: RobotsRecord {
                origin: origin.into(),
                host: "a.test".into(),
                outcome: "parsed".into(),
                reason: "ok".into(),
                http_status: Some(200),
                crawl_delay: None,
                sitemaps: vec![],
                bytes: 0,
                fetch_time,
            },
        }
    }

    #[test]
    fn round_trip_expiry_and_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let path = crate::store::layout::CrawlDir::new(dir.path()).robots_cache();
        assert!(load(&path, 100.0, 0).is_empty(), "no file: empty");
        let mut m = HashMap::new();
        m.insert(
            "http://a.test".into(),
            entry(
                "http://a.test",
                Some("User-agent: *\nDisallow: /x\nCrawl-delay: 3\n"),
                1_000,
            ),
        );
        m.insert("http://b.test".into(), entry("http://b.test", None, 50_000));
        save(&path, m, 100.0, 60_000).unwrap();
        let back = load(&path, 100.0, 60_000);
        assert_eq!(back.len(), 2);
        let (r, rec) = back["http://a.test"].robots("trawl");
        assert!(!r.allowed("http://a.test/x"));
        assert_eq!(rec.crawl_delay, Some(3.0));
        let (r, _) = back["http://b.test"].robots("trawl");
        assert!(matches!(r, Robots::AllowAll));
        // 101 s after a.test was fetched, only b.test is fresh.
        let later = load(&path, 100.0, 101_000);
        assert_eq!(later.keys().collect::<Vec<_>>(), vec!["http://b.test"]);
        // The TTL is capped at 24 h.
        assert!(load(&path, 1e9, 1_000 + 86_400_000).len() == 1);
        std::fs::write(&path, "{\"version\":1,\"entr").unwrap();
        assert!(load(&path, 100.0, 60_000).is_empty(), "corrupt: ignored");
        assert!(CacheEntry::new(&Robots::Unavailable, &entry("x", None, 0).record, None).is_none());
    }
}
