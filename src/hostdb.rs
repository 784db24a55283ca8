//! The `hostdb` stage: one row per host (Nutch's HostDb), partitioned like the
//! crawldb. URL counts by status are recounted from the crawldb each run; fetch
//! counters (successes, failures, consecutive failures, connection and DNS errors,
//! response times, last fetch times) are folded in from the `crawl_fetch` of every
//! segment applied to the crawldb since the last run, in fetch-time order; the
//! robots.txt state is the newest the segments' `robots` datasets recorded; sitemaps
//! are counted from the sitemapdb. A versioned dataset (`hostdb/current`, `old`),
//! written through the crawl's one install path; docs/hostdb.md.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::path::Path;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::datum::{CrawlDatum, DbStatus, FetchStatus, Millis};
use crate::error::{Error, Result};
use crate::net::outcome::{connect_failure, network_reason};
use crate::net::robots::RobotsRecord;
use crate::records::{FetchRecord, HostRecord};
use crate::stage::{Guard, Partitioned, Report, StageCtx};
use crate::store::integrity::Check;
use crate::store::jobs::{Job, PartitionSet};
use crate::store::layout::{CrawlDir, Segment};
use crate::store::names::{SegmentDataset, VersionedDb};
use crate::store::parquet::{self, PartWriter};

/// `hostdb/current/_meta.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct HostDbMeta {
    /// Partitions (the crawldb's).
    pub partitions: usize,
    /// What the partitions group hosts by (the crawldb's key).
    #[serde(default)]
    pub partition_key: crate::config::PartitionKey,
    /// Segments whose `crawl_fetch` is folded into the counters.
    pub applied_segments: Vec<String>,
    /// When this version was written (ms UTC).
    pub written_time: Millis,
}

/// Options of a run.
#[derive(Debug, Clone, Default)]
pub struct HostDbOpts {
    /// Rebuild from the segments still in the crawl directory instead of folding new
    /// ones into the current version.
    pub full: bool,
}

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct HostDbReport {
    /// Segments folded in.
    pub segments: usize,
    /// Hosts in the new version.
    pub hosts: u64,
    /// Hosts with at least one consecutive failure.
    pub failing: u64,
    /// crawl_fetch rows folded in.
    pub fetches: u64,
}

impl fmt::Display for HostDbReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} segments folded in ({} fetches), {} hosts, {} failing",
            self.segments, self.fetches, self.hosts, self.failing
        )
    }
}

impl Report for HostDbReport {
    const STAGE: &'static str = "hostdb";
}

/// The current version's meta, if there is a hostdb.
pub fn read_meta(dir: &CrawlDir) -> Result<Option<HostDbMeta>> {
    let cur = dir.versioned(VersionedDb::HostDb).current();
    if !parquet::dataset_complete(&cur) {
        return Ok(None);
    }
    Ok(Some(parquet::read_json(
        &cur.join(crate::store::names::META),
    )?))
}

/// Runs the stage on the crawl directory of `ctx` (which must hold a crawldb), as
/// [`crate::stage::execute`] splits it: in this process (one task over every
/// partition, then the commit, under the hostdb lock held throughout), as one task
/// of a job (the rows of the hosts of some partitions into its attempt; hosts live in
/// one partition each, so a task needs nothing of the others) or as the job's commit
/// (the attempts installed as the new version). See docs/hostdb.md, "As partition
/// tasks".
pub fn run(ctx: &StageCtx, opts: &HostDbOpts) -> Result<HostDbReport> {
    let dir = ctx.open_existing()?;
    // Tasks only read the hostdb; the commit checks that the version they read is
    // still current.
    crate::stage::execute(ctx, Guard::Db(VersionedDb::HostDb), || {
        Ok(HostDb {
            dir: &dir,
            plan: Plan::read(&dir, opts)?,
        })
    })
}

/// What a run folds in, read off the crawl directory the same way by every task of
/// a job and by its commit (which refuses tasks that saw something else).
struct Plan {
    /// The crawldb's partitions and key.
    partitions: usize,
    partition_key: crate::config::PartitionKey,
    /// The current version read (`None`: rebuilt from the segments present).
    old: Option<HostDbMeta>,
    /// Segments to fold in, oldest first.
    segments: Vec<Segment>,
    /// Merged segments whose inputs were folded in already: recorded, not counted.
    merged_in: Vec<String>,
}

impl Plan {
    fn read(dir: &CrawlDir, opts: &HostDbOpts) -> Result<Plan> {
        let crawldb = dir.crawldb_meta()?;
        let partitions = crawldb.partitions;
        let old = if opts.full { None } else { read_meta(dir)? };
        let old = old.filter(|m| {
            let same = m.partitions == partitions && m.partition_key == crawldb.partition_key;
            if !same {
                tracing::warn!(
                    "the hostdb has {} partitions by {:?} and the crawldb {partitions} by {:?}: rebuilding it from the segments present",
                    m.partitions,
                    m.partition_key,
                    crawldb.partition_key
                );
            }
            same
        });
        let done: BTreeSet<String> = old
            .as_ref()
            .map(|m| m.applied_segments.iter().cloned().collect())
            .unwrap_or_default();
        let mut merged_in: Vec<String> = Vec::new();
        let mut segments: Vec<Segment> = Vec::new();
        for s in dir.segments()? {
            if !crawldb.is_applied(s.name())
                || done.contains(s.name())
                || !s.has(SegmentDataset::CrawlFetch)
            {
                continue;
            }
            // A merged segment (mergesegs) repeats fetches of its inputs: folded in
            // already when any of them was.
            if let Some(p) = crate::tools::mergesegs::provenance(&s)?
                && p.merged_from.iter().any(|m| done.contains(m))
            {
                if !p.merged_from.iter().all(|m| done.contains(m)) {
                    tracing::warn!(
                        "segment {} merges segments folded into the hostdb with others that were not: its fetches are not counted again",
                        s.name()
                    );
                }
                merged_in.push(s.name().to_string());
                continue;
            }
            segments.push(s);
        }
        for s in &segments {
            s.check_partitions(partitions)?;
            s.verify(SegmentDataset::CrawlFetch, Check::Sizes)?;
        }
        Ok(Plan {
            partitions,
            partition_key: crawldb.partition_key,
            old,
            segments,
            merged_in,
        })
    }

    fn segment_names(&self) -> Vec<String> {
        self.segments.iter().map(|s| s.name().to_string()).collect()
    }
}

/// What one hostdb task did (its attempt's report): its counts, and what the commit
/// checks (the hostdb version it read, the segments it folded in).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct HostDbTaskReport {
    hostdb_version: String,
    segments: Vec<String>,
    hosts: u64,
    failing: u64,
    fetches: u64,
}

/// The hostdb stage as the executor runs it ([`crate::stage::execute`]).
struct HostDb<'a> {
    dir: &'a CrawlDir,
    plan: Plan,
}

impl Partitioned for HostDb<'_> {
    type Out = HostDbReport;
    const NAME: &'static str = "hostdb";

    fn partitions(&self) -> usize {
        self.plan.partitions
    }

    fn task(&mut self, job: &Job, set: &PartitionSet, attempt: &str) -> Result<HostDbReport> {
        let (dir, plan) = (self.dir, &self.plan);
        let version = dir.versioned(VersionedDb::HostDb).version_id()?;
        let current = plan
            .old
            .as_ref()
            .map(|_| dir.versioned(VersionedDb::HostDb).current());
        // Read by tasks only: a commit (on an object store, a mirror without part
        // data) needs none of it.
        let sitemaps = sitemaps_per_host(dir)?;
        let w = job.attempt_writer(set, attempt)?;
        let out = w.dataset(VersionedDb::HostDb.as_str())?;
        let parts: Vec<usize> = set.iter().collect();
        let reports: Vec<HostDbReport> = parts
            .par_iter()
            .map(|&i| {
                crate::signal::check("hostdb stopped before installing anything; rerun it")?;
                run_partition(
                    dir,
                    current.as_deref(),
                    &plan.segments,
                    &sitemaps,
                    i,
                    &out.join(parquet::part_name(i)),
                )
            })
            .collect::<Result<_>>()?;
        let mut t = HostDbTaskReport {
            hostdb_version: version,
            segments: plan.segment_names(),
            ..Default::default()
        };
        for r in &reports {
            t.hosts += r.hosts;
            t.failing += r.failing;
            t.fetches += r.fetches;
        }
        w.finish(&t)?;
        Ok(t.summary())
    }

    fn commit(&mut self, job: &Job) -> Result<HostDbReport> {
        let (dir, plan) = (self.dir, &self.plan);
        let db = dir.versioned(VersionedDb::HostDb);
        let version = dir.versioned(VersionedDb::HostDb).version_id()?;
        let segments = plan.segment_names();
        let staged = db.stage()?;
        let mut report = HostDbReport {
            segments: segments.len(),
            ..Default::default()
        };
        for a in job.choose(plan.partitions)? {
            let t: HostDbTaskReport = a.report()?;
            let refuse = |what: String| {
                Error::crawl_dir(
                    db.current(),
                    format!(
                        "{what} since the task in {} ran: nothing was installed; rerun the job (its tasks, then the commit)",
                        a.path().display()
                    ),
                )
            };
            if t.hostdb_version != version {
                return Err(refuse("the hostdb changed".into()));
            }
            if t.segments != segments {
                return Err(refuse(format!(
                    "the segments to fold in changed (the task folded in {:?}, now {:?})",
                    t.segments, segments
                )));
            }
            a.link_parts(VersionedDb::HostDb.as_str(), staged.path())?;
            report.hosts += t.hosts;
            report.failing += t.failing;
            report.fetches += t.fetches;
        }
        let done: BTreeSet<String> = plan
            .old
            .as_ref()
            .map(|m| m.applied_segments.iter().cloned().collect())
            .unwrap_or_default();
        let mut applied: Vec<String> = done.into_iter().collect();
        applied.extend(segments);
        applied.extend(plan.merged_in.iter().cloned());
        let meta = HostDbMeta {
            partitions: plan.partitions,
            partition_key: plan.partition_key,
            applied_segments: applied,
            written_time: crate::datum::now_millis(),
        };
        parquet::write_json(&staged.path().join(crate::store::names::META), &meta)?;
        db.install(staged, "hostdb")?;
        Ok(report)
    }
}

impl HostDbTaskReport {
    fn summary(&self) -> HostDbReport {
        HostDbReport {
            segments: self.segments.len(),
            hosts: self.hosts,
            failing: self.failing,
            fetches: self.fetches,
        }
    }
}

/// Sitemaps per host from the sitemapdb (none without one).
fn sitemaps_per_host(dir: &CrawlDir) -> Result<HashMap<String, i64>> {
    let mut out = HashMap::new();
    for host in crate::sitemaps::known_sitemap_hosts(dir)? {
        *out.entry(host).or_insert(0) += 1;
    }
    Ok(out)
}

/// Partition `i`: the current rows, the new segments' fetches and robots.txt, the
/// crawldb's counts; written to `out`.
fn run_partition(
    dir: &CrawlDir,
    current: Option<&Path>,
    segments: &[Segment],
    sitemaps: &HashMap<String, i64>,
    i: usize,
    out: &Path,
) -> Result<HostDbReport> {
    let mut hosts: HashMap<String, HostRecord> = HashMap::new();
    if let Some(cur) = current {
        for file in parquet::partition_files(cur, i)? {
            for batch in parquet::read_part::<HostRecord>(&file)? {
                for r in batch? {
                    hosts.insert(r.host.clone(), r);
                }
            }
        }
    }
    let mut report = HostDbReport::default();
    for seg in segments {
        let mut rows: Vec<FetchRecord> = Vec::new();
        for file in parquet::partition_files(&seg.dataset(SegmentDataset::CrawlFetch), i)? {
            for batch in parquet::read_part::<FetchRecord>(&file)? {
                rows.extend(batch?);
            }
        }
        rows.sort_by_key(|r| r.fetch_time);
        report.fetches += rows.len() as u64;
        for r in &rows {
            fold_fetch(entry(&mut hosts, &r.host), r);
        }
        let robots = seg.dataset(SegmentDataset::Robots);
        if parquet::dataset_complete(&robots) {
            for file in parquet::partition_files(&robots, i)? {
                for batch in parquet::read_part::<RobotsRecord>(&file)? {
                    for r in batch? {
                        let h = entry(&mut hosts, &r.host);
                        if h.robots_time.is_none_or(|t| t <= r.fetch_time) {
                            h.robots = Some(r.outcome);
                            h.robots_reason = Some(r.reason);
                            h.robots_crawl_delay = r.crawl_delay;
                            h.robots_time = Some(r.fetch_time);
                            if !sitemaps.contains_key(&r.host) {
                                h.sitemaps = r.sitemaps.len() as i64;
                            }
                        }
                    }
                }
            }
        }
    }
    // URL counts: recounted from the crawldb.
    for h in hosts.values_mut() {
        clear_counts(h);
    }
    for file in parquet::partition_files(&dir.crawldb_current(), i)? {
        for batch in parquet::read_part::<CrawlDatum>(&file)? {
            for d in batch? {
                count_status(entry(&mut hosts, &d.host), d.status);
            }
        }
    }
    for (host, n) in sitemaps {
        if let Some(h) = hosts.get_mut(host) {
            h.sitemaps = *n;
        }
    }
    let mut rows: Vec<HostRecord> = hosts.into_values().collect();
    rows.sort_by(|a, b| a.host.cmp(&b.host));
    report.hosts = rows.len() as u64;
    report.failing = rows.iter().filter(|r| r.consecutive_failures > 0).count() as u64;
    let mut w = PartWriter::<HostRecord>::create(out)?;
    for r in rows {
        w.push(r)?;
    }
    w.finish()?;
    Ok(report)
}

fn entry<'a>(hosts: &'a mut HashMap<String, HostRecord>, host: &str) -> &'a mut HostRecord {
    if !hosts.contains_key(host) {
        hosts.insert(
            host.to_string(),
            HostRecord {
                host: host.to_string(),
                ..Default::default()
            },
        );
    }
    hosts.get_mut(host).expect("inserted above")
}

fn clear_counts(h: &mut HostRecord) {
    h.urls = 0;
    h.db_unfetched = 0;
    h.db_fetched = 0;
    h.db_gone = 0;
    h.db_redir_temp = 0;
    h.db_redir_perm = 0;
    h.db_notmodified = 0;
    h.db_duplicate = 0;
}

fn count_status(h: &mut HostRecord, s: DbStatus) {
    h.urls += 1;
    let c = match s {
        DbStatus::DbUnfetched => &mut h.db_unfetched,
        DbStatus::DbFetched => &mut h.db_fetched,
        DbStatus::DbGone => &mut h.db_gone,
        DbStatus::DbRedirTemp => &mut h.db_redir_temp,
        DbStatus::DbRedirPerm => &mut h.db_redir_perm,
        DbStatus::DbNotmodified => &mut h.db_notmodified,
        DbStatus::DbDuplicate => &mut h.db_duplicate,
    };
    *c += 1;
}

/// Whether a `fetch_retry` row is the host failing (a network error, a 5xx, a 429),
/// rather than a URL not attempted (time limit, interrupted, host skipped).
fn is_failure(r: &FetchRecord) -> bool {
    network_reason(&r.reason).is_some() || r.http_status.is_some_and(|s| s == 429 || s >= 500)
}

/// Folds one fetch attempt into the host's counters (rows in fetch-time order).
pub fn fold_fetch(h: &mut HostRecord, r: &FetchRecord) {
    h.fetches += 1;
    h.last_fetch_time = Some(
        h.last_fetch_time
            .map_or(r.fetch_time, |t| t.max(r.fetch_time)),
    );
    if let Some(ms) = r.response_time_ms.filter(|_| r.http_status.is_some()) {
        let n = h.responses as f64;
        let avg = h.avg_response_ms.unwrap_or(0.0);
        h.avg_response_ms = Some((avg * n + ms as f64) / (n + 1.0));
        h.responses += 1;
    }
    let answered = r.http_status.is_some();
    match r.status {
        FetchStatus::FetchSuccess | FetchStatus::FetchNotmodified => {
            h.fetch_successes += 1;
            h.consecutive_failures = 0;
            h.last_success_time = Some(
                h.last_success_time
                    .map_or(r.fetch_time, |t| t.max(r.fetch_time)),
            );
        }
        FetchStatus::FetchRetry if is_failure(r) => {
            h.fetch_failures += 1;
            h.consecutive_failures += 1;
            h.last_failure_time = Some(
                h.last_failure_time
                    .map_or(r.fetch_time, |t| t.max(r.fetch_time)),
            );
            if r.reason == "dns_failure" {
                h.dns_errors += 1;
            } else if connect_failure(&r.reason) {
                h.connection_errors += 1;
            }
        }
        FetchStatus::FetchRetry => {}
        FetchStatus::FetchGone => {
            h.fetch_gone += 1;
            if answered {
                h.consecutive_failures = 0;
            }
        }
        FetchStatus::FetchRedirTemp | FetchStatus::FetchRedirPerm => {
            h.fetch_redirects += 1;
            h.consecutive_failures = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(status: FetchStatus, reason: &str, http: Option<i32>, t: Millis) -> FetchRecord {
        FetchRecord {
            url: "http://a.test/".into(),
            host: "a.test".into(),
            status,
            reason: reason.into(),
            fetch_time: t,
            http_status: http,
            content_type: None,
            content_length: None,
            redirect_target: None,
            etag: None,
            last_modified: None,
            response_time_ms: http.map(|_| 10 * t),
            score: 1.0,
            depth: 0,
        }
    }

    #[test]
    fn failures_count_in_a_row_until_the_host_answers() {
        let mut h = HostRecord::default();
        for r in [
            row(FetchStatus::FetchSuccess, "ok", Some(200), 1),
            row(FetchStatus::FetchRetry, "connection_refused", None, 2),
            row(FetchStatus::FetchRetry, "dns_failure", None, 3),
            row(FetchStatus::FetchRetry, "time_limit", None, 4),
            row(FetchStatus::FetchRetry, "http_503", Some(503), 5),
        ] {
            fold_fetch(&mut h, &r);
        }
        assert_eq!(h.fetches, 5);
        assert_eq!(h.fetch_successes, 1);
        assert_eq!(h.fetch_failures, 3, "time_limit is not a failure");
        assert_eq!(h.consecutive_failures, 3);
        assert_eq!((h.connection_errors, h.dns_errors), (1, 1));
        assert_eq!(h.responses, 2);
        assert_eq!(h.avg_response_ms, Some(30.0));
        assert_eq!(h.last_failure_time, Some(5));
        fold_fetch(
            &mut h,
            &row(FetchStatus::FetchGone, "http_404", Some(404), 6),
        );
        assert_eq!(h.consecutive_failures, 0, "a 404 is an answer");
        fold_fetch(&mut h, &row(FetchStatus::FetchRetry, "timeout", None, 7));
        fold_fetch(
            &mut h,
            &row(FetchStatus::FetchGone, "robots_denied", None, 8),
        );
        assert_eq!(h.consecutive_failures, 1, "robots_denied asked nothing");
        assert_eq!(h.last_fetch_time, Some(8));
    }
}
