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

use std::collections::{BTreeMap, BTreeSet};

use super::parse::SitemapUrl;
use crate::config::Config;
use crate::crawldb::stream::DatumStream;
use crate::crawldb::{current_part, write_version};
use crate::datum::{CrawlDatum, DbStatus, Millis, format_millis};
use crate::error::Result;
use crate::store::layout::CrawlDir;

/// What the merge did (of the whole crawldb, or of one partition: [`merge_part`]).
pub type MergeReport = PartCounts;

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
    if entries.is_empty() && seed_hosts.is_empty() {
        return Ok(MergeReport::default());
    }
    let (exists, mut meta) = crate::crawldb::meta_or_new(dir, cfg)?;
    let pt = meta.partitioner();
    let n = pt.n();
    let mut hosts: BTreeSet<String> = meta.seed_hosts.iter().cloned().collect();
    hosts.extend(seed_hosts.iter().cloned());
    meta.seed_hosts = hosts.into_iter().collect();
    let mut parts: Vec<BTreeMap<String, (&SitemapUrl, &str)>> =
        (0..n).map(|_| BTreeMap::new()).collect();
    for (e, sitemap) in entries {
        parts[pt.of_url(&e.url)].insert(e.url.clone(), (e, sitemap.as_str()));
    }
    let counts = write_version(dir, &mut meta, "sitemap", |i, w| {
        let db = if exists {
            DatumStream::open(&current_part(dir, i))?
        } else {
            DatumStream::empty()
        };
        merge_part(db, &parts[i], w, cfg, now)
    })?;
    let mut report = MergeReport::default();
    for c in counts {
        report.add(c);
    }
    Ok(report)
}

/// Merges the sitemap URLs of one partition (`new`: URL -> (entry, sitemap URL),
/// in URL order) into its crawldb rows `db`, written to `w`.
pub fn merge_part(
    mut db: DatumStream,
    new: &BTreeMap<String, (&SitemapUrl, &str)>,
    w: &mut crate::store::parquet::PartWriter<CrawlDatum>,
    cfg: &Config,
    now: Millis,
) -> Result<PartCounts> {
    let mut new = new.iter().peekable();
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
            c.added += 1;
            *c.added_per_sitemap.entry(sitemap.to_string()).or_default() += 1;
            w.push(new_datum(e, sitemap, cfg, now))?;
        }
    }
    Ok(c)
}

impl PartCounts {
    /// Adds what another partition's merge did.
    pub fn add(&mut self, c: PartCounts) {
        self.added += c.added;
        self.known += c.known;
        self.due_again += c.due_again;
        self.rows += c.rows;
        for (s, k) in c.added_per_sitemap {
            *self.added_per_sitemap.entry(s).or_default() += k;
        }
    }
}

/// What the merge of one partition did ([`merge_part`]).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct PartCounts {
    /// URLs added.
    pub added: u64,
    /// URLs added, per sitemap URL.
    pub added_per_sitemap: BTreeMap<String, u64>,
    /// URLs already known.
    pub known: u64,
    /// Known URLs made due by a newer `<lastmod>`.
    pub due_again: u64,
    /// Rows written.
    pub rows: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sitemaps::parse::ChangeFreq;

    const NOW: Millis = 1_800_000_000_000;
    const DAY: i64 = 86_400;

    fn entry(lastmod: Option<Millis>) -> SitemapUrl {
        SitemapUrl {
            url: "http://a.test/x".into(),
            lastmod,
            changefreq: None,
            priority: None,
        }
    }

    #[test]
    fn new_urls_take_priority_changefreq_and_lastmod() {
        let cfg = Config::default();
        let e = SitemapUrl {
            url: "http://a.test/x".into(),
            lastmod: Some(NOW - DAY * 1000),
            changefreq: Some(ChangeFreq::Weekly),
            priority: Some(0.7),
        };
        let d = new_datum(&e, "http://a.test/sitemap.xml", &cfg, NOW);
        assert_eq!(d.status, DbStatus::DbUnfetched);
        assert_eq!(
            (d.score, d.fetch_interval, d.fetch_time),
            (0.7, 7 * DAY, NOW)
        );
        assert_eq!(d.modified_time, Some(NOW - DAY * 1000));
        assert_eq!(d.host, "a.test");
        assert_eq!(d.metadata["sitemap"], "http://a.test/sitemap.xml");
        assert_eq!(d.metadata["sitemap_changefreq"], "weekly");
        assert_eq!(d.metadata["sitemap_priority"], "0.7");
        assert!(d.metadata.contains_key("sitemap_lastmod"));
        // Without fields: default priority and interval; `never` is capped.
        let d = new_datum(&entry(None), "s", &cfg, NOW);
        assert_eq!((d.score, d.fetch_interval), (0.5, 30 * DAY));
        assert_eq!(d.modified_time, None);
        let mut e = entry(None);
        e.changefreq = Some(ChangeFreq::Never);
        assert_eq!(new_datum(&e, "s", &cfg, NOW).fetch_interval, 90 * DAY);
    }

    #[test]
    fn newer_lastmod_makes_a_fetched_url_due() {
        let cfg = Config::default();
        let fetched = |status: DbStatus| {
            let mut d = CrawlDatum::unfetched("http://a.test/x".into(), "a.test".into(), 0, DAY);
            d.status = status;
            d.fetched_time = Some(NOW - 10 * DAY * 1000);
            d.fetch_time = NOW + 20 * DAY * 1000;
            d
        };
        // Changed after the last fetch: due now.
        let mut d = fetched(DbStatus::DbFetched);
        assert!(touch_known(
            &mut d,
            &entry(Some(NOW - DAY * 1000)),
            &cfg,
            NOW
        ));
        assert_eq!(d.fetch_time, NOW);
        assert!(d.metadata.contains_key("sitemap_lastmod"));
        // Older than the last fetch, absent, in the future: unchanged.
        for lastmod in [Some(NOW - 11 * DAY * 1000), None, Some(NOW + DAY * 1000)] {
            let mut d = fetched(DbStatus::DbNotmodified);
            assert!(!touch_known(&mut d, &entry(lastmod), &cfg, NOW));
            assert_eq!(d.fetch_time, NOW + 20 * DAY * 1000);
        }
        // Gone, redirected or never fetched URLs keep their record.
        let mut d = fetched(DbStatus::DbGone);
        assert!(!touch_known(
            &mut d,
            &entry(Some(NOW - DAY * 1000)),
            &cfg,
            NOW
        ));
        // Switched off.
        let mut off = cfg.clone();
        off.sitemaps.lastmod_refetch = false;
        let mut d = fetched(DbStatus::DbFetched);
        assert!(!touch_known(
            &mut d,
            &entry(Some(NOW - DAY * 1000)),
            &off,
            NOW
        ));
    }

    #[test]
    fn merge_adds_new_urls_once_and_keeps_known_ones() {
        let dir = tempfile::tempdir().unwrap();
        let crawl = CrawlDir::new(dir.path());
        std::fs::create_dir_all(crawl.crawldb()).unwrap();
        let cfg = Config::default();
        let e = |u: &str| SitemapUrl {
            priority: Some(0.9),
            ..SitemapUrl {
                url: u.into(),
                lastmod: None,
                changefreq: None,
                priority: None,
            }
        };
        let entries = vec![
            (e("http://a.test/1"), "s1".to_string()),
            (e("http://b.test/2"), "s2".to_string()),
        ];
        let r = merge_into_crawldb(&crawl, &cfg, &entries, &[], NOW).unwrap();
        assert_eq!((r.added, r.known, r.rows), (2, 0, 2));
        assert_eq!(r.added_per_sitemap["s1"], 1);
        let more = vec![
            (e("http://a.test/1"), "s3".to_string()),
            (e("http://a.test/3"), "s3".to_string()),
        ];
        let r = merge_into_crawldb(&crawl, &cfg, &more, &["c.test".into()], NOW).unwrap();
        assert_eq!((r.added, r.known, r.rows), (1, 1, 3));
        let rows: Vec<CrawlDatum> =
            crate::store::parquet::read_dataset(&crawl.crawldb_current()).unwrap();
        let one = rows.iter().find(|d| d.url == "http://a.test/1").unwrap();
        assert_eq!(
            one.metadata["sitemap"], "s1",
            "a known URL keeps its record"
        );
        assert_eq!(crawl.crawldb_meta().unwrap().seed_hosts, ["c.test"]);
    }
}
