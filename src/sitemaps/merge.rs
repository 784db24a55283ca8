//! Merging sitemap URLs into the crawldb (a new crawldb version, like inject).
//!
//! - A new URL enters as `db_unfetched`, due now, depth 0, with
//!   `score` = its `<priority>` (else `sitemaps.default_priority`),
//!   `fetch_interval` = its `<changefreq>` interval ([`interval_secs`](super::parse::ChangeFreq::interval_secs),
//!   at most `updatedb.max_interval`; else `updatedb.default_interval`),
//!   `modified_time` = its `<lastmod>`, and metadata `sitemap` (the sitemap that
//!   listed it) and `sitemap_lastmod`, `sitemap_changefreq`, `sitemap_priority` when given.
//! - A known URL keeps its record, with one exception (`sitemaps.lastmod_refetch`): a
//!   fetched URL (`db_fetched`, `db_notmodified`) whose `<lastmod>` is later than its
//!   last fetch and not in the future is made due now (`fetch_time` = now) and gets
//!   `sitemap_lastmod` in its metadata.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::parse::SitemapUrl;
use crate::config::Config;
use crate::crawldb::stream::DatumStream;
use crate::crawldb::{current_part, write_version};
use crate::datum::{CrawlDatum, DbStatus, Millis, format_millis};
use crate::error::Result;
use crate::layout::{CrawlDbMeta, CrawlDir};
use crate::storage::{dataset_complete, partition_for_host};

/// What the merge did.
#[derive(Debug, Clone, Default)]
pub struct MergeReport {
    /// URLs added.
    pub added: u64,
    /// URLs already known.
    pub known: u64,
    /// Known URLs made due by a newer `<lastmod>`.
    pub due_again: u64,
    /// Rows of the crawldb afterwards (0 when it was left as it was).
    pub rows: u64,
    /// URLs added, per sitemap URL.
    pub added_per_sitemap: HashMap<String, u64>,
}

/// The crawldb row of a URL first seen in sitemap `sitemap`.
pub fn new_datum(e: &SitemapUrl, sitemap: &str, cfg: &Config, now: Millis) -> CrawlDatum {
    let host = crate::urls::host_of(&e.url);
    let max = cfg.updatedb.max_interval;
    let interval = e
        .changefreq
        .map_or(cfg.updatedb.default_interval, |c| c.interval_secs(max))
        .min(max.max(1));
    let mut d = CrawlDatum::unfetched(e.url.clone(), host, now, interval);
    d.score = e.priority.unwrap_or(cfg.sitemaps.default_priority);
    d.modified_time = e.lastmod;
    d.metadata.insert("sitemap".into(), sitemap.to_string());
    if let Some(l) = e.lastmod {
        d.metadata
            .insert("sitemap_lastmod".into(), format_millis(l));
    }
    if let Some(c) = e.changefreq {
        d.metadata
            .insert("sitemap_changefreq".into(), c.as_str().to_string());
    }
    if let Some(p) = e.priority {
        d.metadata.insert("sitemap_priority".into(), p.to_string());
    }
    d
}

/// Applies a sitemap entry to a known URL; returns whether it became due.
pub fn touch_known(d: &mut CrawlDatum, e: &SitemapUrl, cfg: &Config, now: Millis) -> bool {
    if !cfg.sitemaps.lastmod_refetch {
        return false;
    }
    let fetched = matches!(d.status, DbStatus::DbFetched | DbStatus::DbNotmodified);
    match (e.lastmod, d.fetched_time) {
        (Some(l), Some(f)) if fetched && l > f && l <= now && d.fetch_time > now => {
            d.fetch_time = now;
            d.metadata
                .insert("sitemap_lastmod".into(), format_millis(l));
            true
        }
        _ => false,
    }
}

/// Merges `entries` ((entry, sitemap URL), one per URL) into the crawldb; adds
/// `seed_hosts` to the crawldb's seed hosts (inject). Creates the crawldb if needed.
/// The caller holds the crawldb lock.
pub fn merge_into_crawldb(
    dir: &CrawlDir,
    cfg: &Config,
    entries: &[(SitemapUrl, String)],
    seed_hosts: &[String],
    now: Millis,
) -> Result<MergeReport> {
    let mut report = MergeReport::default();
    if entries.is_empty() && seed_hosts.is_empty() {
        return Ok(report);
    }
    let exists = dataset_complete(&dir.crawldb_current());
    let mut meta = if exists {
        dir.crawldb_meta()?
    } else {
        CrawlDbMeta {
            partitions: cfg.crawl.partitions,
            ..CrawlDbMeta::default()
        }
    };
    let n = meta.partitions;
    let mut hosts: BTreeSet<String> = meta.seed_hosts.iter().cloned().collect();
    hosts.extend(seed_hosts.iter().cloned());
    meta.seed_hosts = hosts.into_iter().collect();
    let mut parts: Vec<BTreeMap<String, (&SitemapUrl, &str)>> =
        (0..n).map(|_| BTreeMap::new()).collect();
    for (e, sitemap) in entries {
        let host = crate::urls::host_of(&e.url);
        parts[partition_for_host(&host, n)].insert(e.url.clone(), (e, sitemap.as_str()));
    }
    let counts = write_version(dir, &mut meta, "sitemap", |i, w| {
        let mut db = if exists {
            DatumStream::open(&current_part(dir, i))?
        } else {
            DatumStream::empty()
        };
        let mut new = parts[i].iter().peekable();
        let mut c = PartCounts::default();
        loop {
            let (take_db, same) = match (db.peek_url(), new.peek()) {
                (None, None) => break,
                (Some(_), None) => (true, false),
                (None, Some(_)) => (false, false),
                (Some(a), Some((b, _))) => (a <= b.as_str(), a == b.as_str()),
            };
            if take_db {
                let Some(mut row) = db.next_row()? else { break };
                if same && let Some((_, (e, _))) = new.next() {
                    c.known += 1;
                    if touch_known(&mut row, e, cfg, now) {
                        c.due_again += 1;
                    }
                }
                c.rows += 1;
                w.push(row)?;
            } else if let Some((_, (e, sitemap))) = new.next() {
                c.rows += 1;
                c.added.push(sitemap.to_string());
                w.push(new_datum(e, sitemap, cfg, now))?;
            }
        }
        Ok(c)
    })?;
    for c in counts {
        report.added += c.added.len() as u64;
        report.known += c.known;
        report.due_again += c.due_again;
        report.rows += c.rows;
        for s in c.added {
            *report.added_per_sitemap.entry(s).or_default() += 1;
        }
    }
    Ok(report)
}

#[derive(Default)]
struct PartCounts {
    added: Vec<String>,
    known: u64,
    due_again: u64,
    rows: u64,
}
