//! Sitemaps (sitemaps.org): discovery, polite fetching, parsing, and merging their
//! URLs into the crawldb. See `docs/sitemaps.md`.
//!
//! The `sitemap` stage (a step of every round) discovers sitemaps from the
//! `Sitemap:` lines of the robots.txt files the fetcher recorded (every segment's
//! `robots/` dataset), from `/sitemap.xml` of every known host when
//! `sitemaps.probe_sitemap_xml` is on, and from `inject --sitemaps FILE`. It fetches
//! those that are new or due ([`record::SitemapRecord`] in `sitemapdb/` remembers each
//! one), follows sitemap indexes down to `sitemaps.max_depth`, and merges the URLs into
//! the crawldb ([`merge`]).

mod fetch;
mod merge;
pub mod parse;
mod record;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use url::Url;

use crate::config::Config;
use crate::datum::{Millis, now_millis};
use crate::error::{Error, Result};
use crate::net::politeness::Politeness;
use crate::net::robots::origin_of;
use crate::stage::{Guard, Partitioned, Report, StageCtx, Verify};
use crate::store::jobs::{Job as TaskJob, PartitionSet};
use crate::store::layout::CrawlDir;
use crate::store::lease::Fence;
use crate::store::names;
use crate::store::parquet::{self, PartWriter, part_name};
use crate::store::partition::Partitioner;
use crate::urls::UrlPolicy;

pub use parse::{ChangeFreq, Parsed, Problem, Scope, SitemapUrl};
pub use record::{SitemapRecord, SitemapUrlRow};

/// How a sitemap became known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A `Sitemap:` line of a robots.txt.
    Robots,
    /// `/sitemap.xml` probed on a known host.
    Probe,
    /// `inject --sitemaps`.
    Inject,
    /// Named by a sitemap index.
    Index,
}

impl Source {
    /// `robots`, `probe`, `inject` or `index`.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Robots => "robots",
            Source::Probe => "probe",
            Source::Inject => "inject",
            Source::Index => "index",
        }
    }

    fn parse(s: &str) -> Source {
        match s {
            "robots" => Source::Robots,
            "probe" => Source::Probe,
            "index" => Source::Index,
            _ => Source::Inject,
        }
    }
}

/// One sitemap to fetch.
#[derive(Debug, Clone)]
pub struct Job {
    /// Its URL.
    pub url: Url,
    /// Where its URLs may be.
    pub scope: Scope,
    /// Index nesting depth (0 = named directly).
    pub depth: u32,
    /// How it became known.
    pub source: Source,
    /// The robots.txt origin or index URL that named it.
    pub referrer: Option<String>,
}

/// What one sitemap run does (the rest is `[sitemaps]` and `[fetch]` in the config).
#[derive(Debug, Clone, Default)]
pub struct SitemapOpts {
    /// The pass a task of a job runs: `Fetch` (also without `--pass`) or `Merge`.
    pub pass: Option<SitemapPass>,
    /// Sitemap URLs given directly (`inject --sitemaps`); fetched even when not due.
    pub extra: Vec<Url>,
    /// Fetch every known sitemap (and every child of the indexes fetched), due or not.
    pub force: bool,
    /// Skip discovery (robots.txt, probe, due records): only `extra` (inject).
    pub only_extra: bool,
}

/// The passes of a sitemap job's tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SitemapPass {
    /// The sitemaps on the hosts of a partition set, under their fetch leases; the
    /// URLs found written per target partition (a shuffle).
    Fetch,
    /// Per partition set: the URLs every fetch attempt found for it merged into its
    /// crawldb parts.
    Merge,
}

/// The sub-jobs of the passes inside a sitemap job.
const FETCH_PASS: &str = "fetch";
const MERGE_PASS: &str = "merge";

/// What a run did (the summary line's counts).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SitemapReport {
    /// Sitemaps fetched and parsed (index files included).
    pub fetched: u64,
    /// Sitemaps answered 304 Not Modified.
    pub not_modified: u64,
    /// Sitemaps that could not be fetched (HTTP errors, network, robots.txt).
    pub failed: u64,
    /// Known sitemaps skipped because they are not due.
    pub not_due: u64,
    /// Index children left for the next run (over `sitemaps.max_sitemaps`).
    pub deferred: u64,
    /// Sitemaps fetched that had problems (malformed, over a limit); their good part was kept.
    pub malformed: u64,
    /// URLs accepted from the sitemaps fetched (child sitemaps of indexes not counted).
    pub urls_found: u64,
    /// Entries rejected (bad URL, out of scope, filtered, no loc).
    pub urls_rejected: u64,
    /// Entries dropped over the per-file URL limit.
    pub urls_cut: u64,
    /// URLs new to the crawldb.
    pub urls_added: u64,
    /// URLs the crawldb already knew (kept as they were).
    pub urls_known: u64,
    /// Known URLs made due by a `<lastmod>` newer than their last fetch.
    pub urls_due_again: u64,
    /// Rows of the crawldb afterwards (0 when it was not rewritten).
    pub crawldb_rows: u64,
    /// Per-sitemap reports (URL, status, problems), in fetch order.
    pub reports: Vec<SitemapRecord>,
    /// Problems per sitemap URL (the first ones of each file).
    pub problems: Vec<(String, Problem)>,
}

impl fmt::Display for SitemapReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let crawldb = if self.crawldb_rows == 0 {
            "crawldb unchanged".to_string()
        } else {
            format!("crawldb {} urls", self.crawldb_rows)
        };
        write!(
            f,
            "sitemaps fetched {} (not modified {}), failed {}, malformed {}, not due {}, deferred {}; urls found {}, rejected {}, cut {}, added {}, known {}, due again {}; {crawldb}",
            self.fetched,
            self.not_modified,
            self.failed,
            self.malformed,
            self.not_due,
            self.deferred,
            self.urls_found,
            self.urls_rejected,
            self.urls_cut,
            self.urls_added,
            self.urls_known,
            self.urls_due_again,
        )
    }
}

impl Report for SitemapReport {
    const STAGE: &'static str = "sitemap";
}

impl SitemapReport {
    /// Adds what another task fetched (the crawldb counts are the commit's).
    fn add(&mut self, o: SitemapReport) {
        self.fetched += o.fetched;
        self.not_modified += o.not_modified;
        self.failed += o.failed;
        self.not_due += o.not_due;
        self.deferred += o.deferred;
        self.malformed += o.malformed;
        self.urls_found += o.urls_found;
        self.urls_rejected += o.urls_rejected;
        self.urls_cut += o.urls_cut;
        self.reports.extend(o.reports);
        self.problems.extend(o.problems);
    }
}

/// The partitions a task works on: a sitemap is fetched by the task owning its
/// host's partition (the partition whose fetch lease it holds).
struct Owner<'a> {
    set: &'a PartitionSet,
    pt: Partitioner,
}

impl Owner<'_> {
    fn owns_host(&self, host: &str) -> bool {
        self.set.contains(self.pt.of_host(host))
    }

    fn owns(&self, url: &Url) -> bool {
        self.owns_host(&url.host_str().unwrap_or_default().to_ascii_lowercase())
    }
}

/// Reads the sitemap database (empty when there is none), first finishing (or
/// undoing) an install a killed run left; the caller holds the crawldb lock.
pub fn read_sitemapdb(dir: &CrawlDir) -> Result<BTreeMap<String, SitemapRecord>> {
    dir.versioned(crate::store::names::VersionedDb::SitemapDb)
        .recover()?;
    read_current_sitemapdb(dir)
}

/// Reads the installed sitemap database as it is (a task, which holds no lock and
/// changes nothing).
fn read_current_sitemapdb(dir: &CrawlDir) -> Result<BTreeMap<String, SitemapRecord>> {
    let current = dir
        .versioned(crate::store::names::VersionedDb::SitemapDb)
        .current();
    crate::store::integrity::refuse_unmarked(&current)?;
    if !parquet::dataset_complete(&current) {
        return Ok(BTreeMap::new());
    }
    // Rewritten by every run: checked in full before it is read.
    crate::store::integrity::verify(&current, crate::store::integrity::Check::Checksums)?;
    Ok(parquet::read_dataset::<SitemapRecord>(&current)?
        .into_iter()
        .map(|r| (r.url.clone(), r))
        .collect())
}

/// The sitemaps robots.txt files named, from every segment's `robots/` dataset:
/// (sitemap URL as written, robots.txt origin), first mention first.
pub fn robots_sitemaps(dir: &CrawlDir) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for seg in dir.segments()? {
        let ds = seg.dataset(crate::store::names::SegmentDataset::Robots);
        if !parquet::dataset_complete(&ds) {
            continue;
        }
        crate::store::integrity::verify(&ds, crate::store::integrity::Check::Checksums)?;
        for r in parquet::read_dataset::<crate::net::robots::RobotsRecord>(&ds)? {
            for s in r.sitemaps {
                if seen.insert((s.clone(), r.origin.clone())) {
                    out.push((s, r.origin.clone()));
                }
            }
        }
    }
    Ok(out)
}

/// `http(s)://host/` of every host of the crawldb partitions `owner` works on (the
/// scheme of its first URL).
fn crawldb_origins(dir: &CrawlDir, owner: &Owner<'_>) -> Result<Vec<String>> {
    let mut origins = BTreeMap::new();
    if !parquet::dataset_complete(&dir.crawldb_current()) {
        return Ok(Vec::new());
    }
    let mut parts = Vec::new();
    for i in owner.set.iter() {
        parts.extend(parquet::partition_files(&dir.crawldb_current(), i)?);
    }
    for part in parts {
        for rows in parquet::read_part::<crate::CrawlDatum>(&part)? {
            for d in rows? {
                if !origins.contains_key(&d.host)
                    && let Ok(u) = Url::parse(&d.url)
                {
                    origins.insert(d.host.clone(), u.origin().ascii_serialization());
                }
            }
        }
    }
    Ok(origins.into_values().collect())
}

/// Whether a known sitemap is due at `now`.
fn due(rec: Option<&SitemapRecord>, now: Millis) -> bool {
    rec.is_none_or(|r| r.next_fetch_time <= now)
}

/// Builds this task's jobs: discovered sitemaps that are new or due, then known ones
/// that are due, deduplicated by URL, at most `sitemaps.max_sitemaps`; only those
/// on the hosts of `owner`'s partitions.
fn plan(
    dir: &CrawlDir,
    cfg: &Config,
    opts: &SitemapOpts,
    known: &BTreeMap<String, SitemapRecord>,
    now: Millis,
    owner: &Owner<'_>,
    summary: &mut SitemapReport,
) -> Result<Vec<Job>> {
    let mut candidates: Vec<Job> = Vec::new();
    for u in &opts.extra {
        candidates.push(Job {
            scope: Scope::of_location(u),
            url: u.clone(),
            depth: 0,
            source: Source::Inject,
            referrer: None,
        });
    }
    if !opts.only_extra {
        for (raw, origin) in robots_sitemaps(dir)? {
            match Url::parse(raw.trim()) {
                Ok(u) if matches!(u.scheme(), "http" | "https") => candidates.push(Job {
                    scope: Scope::from_robots(&u, &origin),
                    url: u,
                    depth: 0,
                    source: Source::Robots,
                    referrer: Some(format!("{origin}/robots.txt")),
                }),
                // Counted by the task owning the robots.txt's host.
                _ if !Url::parse(&origin).is_ok_and(|o| owner.owns(&o)) => {}
                _ => {
                    summary.failed += 1;
                    summary.problems.push((
                        format!("{origin}/robots.txt"),
                        Problem {
                            position: "Sitemap: line".into(),
                            reason: format!("not an absolute http(s) URL: {raw:?}"),
                        },
                    ));
                }
            }
        }
        if cfg.sitemaps.probe_sitemap_xml {
            for origin in crawldb_origins(dir, owner)? {
                if let Ok(u) = Url::parse(&format!("{origin}/sitemap.xml")) {
                    candidates.push(Job {
                        scope: Scope::of_location(&u),
                        url: u,
                        depth: 0,
                        source: Source::Probe,
                        referrer: None,
                    });
                }
            }
        }
        // Known sitemaps that are due (children of indexes, injected ones).
        for r in known.values() {
            if let Ok(u) = Url::parse(&r.url) {
                candidates.push(Job {
                    scope: r.scope(),
                    url: u,
                    depth: r.depth.max(0) as u32,
                    source: Source::parse(&r.source),
                    referrer: r.referrer.clone(),
                });
            }
        }
    }
    let mut seen = HashSet::new();
    let mut jobs = Vec::new();
    for job in candidates {
        let key = job.url.to_string();
        if !owner.owns(&job.url) || !seen.insert(key.clone()) {
            continue;
        }
        let forced = opts.force || job.source == Source::Inject && opts.extra.contains(&job.url);
        if !forced && !due(known.get(&key), now) {
            summary.not_due += 1;
            continue;
        }
        jobs.push(job);
    }
    if jobs.len() > cfg.sitemaps.max_sitemaps {
        summary.deferred += (jobs.len() - cfg.sitemaps.max_sitemaps) as u64;
        tracing::warn!(
            "{} sitemaps are due; fetching the first {} (sitemaps.max_sitemaps), the rest next run",
            jobs.len(),
            cfg.sitemaps.max_sitemaps
        );
        jobs.truncate(cfg.sitemaps.max_sitemaps);
    }
    Ok(jobs)
}

/// Runs the sitemap step on the crawl directory of `ctx` (which must have a crawldb,
/// except for `inject --sitemaps`, `only_extra`, which may create it): discover,
/// fetch what is new or due, merge the URLs into the crawldb, remember what was
/// processed. In this process, or as one task of a job (the sitemaps of the hosts of
/// some partitions, under their fetch leases) or the job's commit (see
/// [`crate::stage::execute`] and docs/sitemaps.md, "As partition tasks").
pub fn run(ctx: &StageCtx, opts: &SitemapOpts) -> Result<SitemapReport> {
    let cfg = ctx.config();
    let dir = if opts.only_extra {
        ctx.crawl_dir()
    } else {
        ctx.open_existing()?
    };
    std::fs::create_dir_all(dir.crawldb()).map_err(|e| Error::io(dir.crawldb(), e))?;
    // Held by a one-process run and by a commit: the crawldb and the sitemapdb
    // change together. Tasks (many at once) only read them; the commit checks that
    // they did not change since.
    crate::stage::execute(ctx, Guard::CrawlDb(Verify::WholeAndCommit), || {
        Ok(Sitemap {
            ctx,
            dir: &dir,
            opts,
            pt: crate::crawldb::meta_or_new(&dir, cfg)?.1.partitioner(),
        })
    })
}

/// The sitemap stage as the executor runs it ([`crate::stage::execute`]).
struct Sitemap<'a> {
    ctx: &'a StageCtx,
    dir: &'a CrawlDir,
    opts: &'a SitemapOpts,
    pt: Partitioner,
}

impl Partitioned for Sitemap<'_> {
    type Out = SitemapReport;
    const NAME: &'static str = "sitemap";

    fn partitions(&self) -> usize {
        self.pt.n().max(1)
    }

    fn task(&mut self, job: &TaskJob, set: &PartitionSet, attempt: &str) -> Result<SitemapReport> {
        match self.opts.pass {
            Some(SitemapPass::Merge) => merge_task(
                self.dir,
                self.ctx.config(),
                job,
                set,
                attempt,
                self.partitions(),
            ),
            _ => run_task(self.ctx, self.dir, self.opts, job, set, attempt, self.pt),
        }
    }

    fn commit(&mut self, job: &TaskJob) -> Result<SitemapReport> {
        let n = self.partitions();
        if job.pass(MERGE_PASS).finished()?.is_empty() {
            commit(self.dir, self.ctx.config(), self.opts, job, n)
        } else {
            commit_merged(self.dir, self.ctx.config(), self.opts, job, n)
        }
    }
}

/// A sitemap task's report (its attempt's `_report.json`): what it fetched, the
/// versions it read (the commit installs only over them) and its clock.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct SitemapTaskReport {
    crawldb_version: String,
    sitemapdb_version: String,
    now: Millis,
    summary: SitemapReport,
}

/// The host of every sitemap the sitemapdb knows (one entry per sitemap; empty
/// without a sitemapdb), for the hostdb's per-host count.
pub fn known_sitemap_hosts(dir: &CrawlDir) -> Result<Vec<String>> {
    let cur = dir.versioned(names::VersionedDb::SitemapDb).current();
    if !parquet::dataset_complete(&cur) {
        return Ok(Vec::new());
    }
    let rows: Vec<record::SitemapRecord> = parquet::read_dataset(&cur)?;
    Ok(rows.into_iter().map(|r| r.host).collect())
}

/// The identity of the sitemapdb version installed now (empty when there is none).
fn sitemapdb_version(dir: &CrawlDir) -> Result<String> {
    dir.versioned(names::VersionedDb::SitemapDb).version_id()
}

/// How long a task's leases last: its time limit (`fetch.time_limit`, which a task
/// must have, as a fetch task) plus `fetch.total_timeout` and a second; `None`
/// (until released) for a one-process run.
fn lease_length(cfg: &Config, is_task: bool) -> Result<Option<Duration>> {
    if !is_task {
        return Ok(None);
    }
    if cfg.fetch.time_limit <= 0.0 {
        return Err(Error::input(
            "sitemap --job",
            "a sitemap task needs a time limit (fetch.time_limit, in seconds): it holds its partitions' fetch leases, which expire that long (plus fetch.total_timeout) after it starts, so that a retry can take over from an attempt that was lost",
        ));
    }
    let secs = cfg.fetch.time_limit + cfg.fetch.total_timeout.max(0.0) + 1.0;
    Ok(Some(
        Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX),
    ))
}

/// The task on partitions `set` (attempt `attempt` of `job`): takes the fetch
/// lease of every partition, fetches the sitemaps on their hosts politely (their
/// `fetch.last_end`), and writes into its attempt the URLs found, one
/// `sitemap_urls` file per target partition (a sitemap may list URLs of other
/// hosts), with the sitemaps' records in its report. Installs nothing.
fn run_task(
    ctx: &StageCtx,
    dir: &CrawlDir,
    opts: &SitemapOpts,
    job: &TaskJob,
    set: &PartitionSet,
    attempt: &str,
    pt: Partitioner,
) -> Result<SitemapReport> {
    let n = pt.n().max(1);
    let cfg = ctx.config();
    let is_task = ctx.is_task();
    // A task's leases are renewed by a heartbeat (`fetch.lease_ttl`); without one
    // they last the time limit, which the task then stops at.
    let heartbeat = ctx.lease_heartbeat();
    let length = match heartbeat {
        Some(_) => None,
        None => lease_length(cfg, is_task)?,
    };
    // A partition's hosts are fetched by one task at a time, sitemap or fetch.
    let wanted: Vec<(PathBuf, String)> = set
        .iter()
        .map(|i| (dir.fetch_lease(n, i), format!("partition {i} (sitemap)")))
        .collect();
    let leases = ctx.take_leases(&wanted, job.id(), attempt, length)?;
    let now = now_millis();
    let crawldb_version = crate::crawldb::version_id(dir)?;
    let sitemapdb_version = sitemapdb_version(dir)?;
    let known = if is_task {
        read_current_sitemapdb(dir)?
    } else {
        read_sitemapdb(dir)?
    };
    let owner = Owner { set, pt };
    let mut summary = SitemapReport::default();
    let jobs = plan(dir, cfg, opts, &known, now, &owner, &mut summary)?;
    let mut seed_hosts = if parquet::dataset_complete(&dir.crawldb_current()) {
        dir.crawldb_meta()?.seed_hosts
    } else {
        Vec::new()
    };
    seed_hosts.extend(extra_hosts(opts));
    let policy = UrlPolicy::new(&cfg.urls, &seed_hosts)?;
    tracing::info!(
        "sitemap: {} sitemaps to fetch (partitions {set})",
        jobs.len()
    );
    let last_ends: Vec<PathBuf> = set.iter().map(|i| dir.fetch_last_end_of(n, i)).collect();
    if leases.taken_over {
        // A lost attempt may have sent requests to these hosts until a moment ago.
        Politeness::load_many(&last_ends, &[], &cfg.fetch).record_end()?;
    }
    let politeness = Politeness::load_many(&last_ends, &[dir.fetch_last_end()], &cfg.fetch);
    let time_limit = (is_task && heartbeat.is_none())
        .then(|| Duration::try_from_secs_f64(cfg.fetch.time_limit).unwrap_or_default());
    let fence = leases.fence();
    let fetched = fetch::fetch_all(
        cfg,
        politeness,
        jobs,
        &known,
        &policy,
        now,
        opts.force,
        fetch::Bounds {
            time_limit,
            fence: fence.clone(),
        },
    );
    if fence.as_ref().is_some_and(Fence::tripped) {
        // Another attempt may own these partitions now: nothing of this run is
        // recorded, and the task fails.
        return Err(Error::Locked {
            path: dir.fetch_lease(n, set.iter().next().unwrap_or(0)),
            message: format!(
                "sitemap task on partitions {set} (attempt {attempt}): its leases were not renewed within fetch.lease_ttl ({} s): the process was held up or cut off, and another attempt may have taken the partitions over; it stopped sending requests and its attempt is not finished",
                cfg.fetch.lease_ttl
            ),
        });
    }
    let (results, children_not_due) = fetched?;
    summary.not_due += children_not_due;
    let (entries, records) = tally(results, &mut summary);
    summary.reports = records;

    let w = job.shuffle(FETCH_PASS).attempt_writer(set, attempt)?;
    let out = w.dataset(names::SITEMAP_URLS)?;
    let mut writers: Vec<Option<PartWriter<SitemapUrlRow>>> = (0..n).map(|_| None).collect();
    for (seq, (e, sitemap)) in entries.iter().enumerate() {
        let origin = Url::parse(sitemap)
            .map(|u| origin_of(&u))
            .unwrap_or_default();
        let row = SitemapUrlRow::new(e, sitemap, &origin, seq as i64);
        let j = pt.of_host(&row.host);
        let slot = &mut writers[j];
        if slot.is_none() {
            *slot = Some(PartWriter::create(&out.join(part_name(j)))?);
        }
        if let Some(wr) = slot.as_mut() {
            wr.push(row)?;
        }
    }
    for wr in writers.into_iter().flatten() {
        wr.finish()?;
    }
    let report = SitemapTaskReport {
        crawldb_version,
        sitemapdb_version,
        now,
        summary,
    };
    w.finish(&report)?;
    drop(leases);
    Ok(report.summary)
}

/// The hosts of the sitemaps given directly (`inject --sitemaps`): seed hosts.
fn extra_hosts(opts: &SitemapOpts) -> Vec<String> {
    opts.extra
        .iter()
        .filter_map(|u| u.host_str().map(str::to_ascii_lowercase))
        .collect()
}

/// The finished fetch attempts of a sitemap job, each checked to have read the
/// crawldb and sitemapdb versions current now; their summed summary (without the
/// crawldb counts) and their earliest clock.
fn fetch_attempts(
    dir: &CrawlDir,
    job: &TaskJob,
    n: usize,
) -> Result<(
    Vec<crate::store::jobs::FinishedAttempt>,
    SitemapReport,
    Millis,
)> {
    let chosen = job.shuffle(FETCH_PASS).choose(n)?;
    let crawldb_version = crate::crawldb::version_id(dir)?;
    let sm_version = sitemapdb_version(dir)?;
    let mut summary = SitemapReport::default();
    let mut now: Option<Millis> = None;
    for a in &chosen {
        let t: SitemapTaskReport = a.report()?;
        crate::crawldb::check_version(dir, a.path(), &t.crawldb_version, &crawldb_version)?;
        if t.sitemapdb_version != sm_version {
            return Err(Error::crawl_dir(
                dir.versioned(names::VersionedDb::SitemapDb).current(),
                format!(
                    "the sitemapdb changed since the tasks of this job ran (the task in {} read another version): nothing was installed; rerun the job (its tasks, then the commit)",
                    a.path().display()
                ),
            ));
        }
        now = Some(now.map_or(t.now, |m| m.min(t.now)));
        summary.add(t.summary);
    }
    Ok((chosen, summary, now.unwrap_or_else(now_millis)))
}

/// The URLs the fetch attempts `chosen` found for target partitions `want` (of `n`),
/// per partition: a URL listed by several sitemaps keeps the first in the
/// one-process order (by the sitemap's origin, then its rank).
fn urls_for(
    chosen: &[crate::store::jobs::FinishedAttempt],
    want: &[usize],
    n: usize,
) -> Result<BTreeMap<usize, Vec<(SitemapUrl, String)>>> {
    let mut rows: BTreeMap<usize, Vec<SitemapUrlRow>> = BTreeMap::new();
    for a in chosen {
        for p in a.parts(names::SITEMAP_URLS)? {
            let j = parquet::part_index(&p).filter(|&j| j < n).ok_or_else(|| {
                Error::crawl_dir(
                    &p,
                    "not a sitemap_urls output of a sitemap task of this crawl",
                )
            })?;
            if want.contains(&j) {
                crate::store::integrity::verify_files(
                    &a.dataset(names::SITEMAP_URLS),
                    std::slice::from_ref(&p),
                )?;
                rows.entry(j)
                    .or_default()
                    .extend(parquet::read_part_all::<SitemapUrlRow>(&p)?);
            }
        }
    }
    Ok(rows
        .into_iter()
        .map(|(j, mut part)| {
            part.sort_by(|a, b| (&a.url, &a.origin, a.seq).cmp(&(&b.url, &b.origin, b.seq)));
            part.dedup_by(|later, first| later.url == first.url);
            (j, part.into_iter().map(SitemapUrlRow::into_entry).collect())
        })
        .collect())
}

/// The commit of a sitemap job whose URLs were not merged by merge tasks (under the
/// crawldb lock): checks that every chosen fetch attempt read the crawldb and
/// sitemapdb versions current now, reads their URLs (every target partition's
/// files), merges them into a new crawldb version, then installs the sitemapdb with
/// the attempts' records.
fn commit(
    dir: &CrawlDir,
    cfg: &Config,
    opts: &SitemapOpts,
    job: &TaskJob,
    n: usize,
) -> Result<SitemapReport> {
    let (chosen, mut summary, now) = fetch_attempts(dir, job, n)?;
    let all: Vec<usize> = (0..n).collect();
    let entries: Vec<(SitemapUrl, String)> = urls_for(&chosen, &all, n)?
        .into_values()
        .flatten()
        .collect();
    let merged = merge::merge_into_crawldb(dir, cfg, &entries, &extra_hosts(opts), now)?;
    install_sitemapdb(dir, &mut summary, merged)?;
    Ok(summary)
}

/// Puts the crawldb counts of `merged` into `summary`, then installs the sitemapdb
/// with the records of the sitemaps fetched. The crawldb is installed before: a
/// commit killed in between leaves a sitemapdb its rerun refuses (the crawldb
/// changed): the job is run again, fetches the sitemaps again and adds nothing twice.
fn install_sitemapdb(
    dir: &CrawlDir,
    summary: &mut SitemapReport,
    merged: merge::MergeReport,
) -> Result<()> {
    summary.urls_added = merged.added;
    summary.urls_known = merged.known;
    summary.urls_due_again = merged.due_again;
    summary.crawldb_rows = merged.rows;
    for r in summary.reports.iter_mut() {
        r.urls_added = merged.added_per_sitemap.get(&r.url).copied().unwrap_or(0) as i64;
    }
    let mut db = read_sitemapdb(dir)?;
    for r in &summary.reports {
        db.insert(r.url.clone(), r.clone());
    }
    record::write_sitemapdb(dir, db.into_values().collect())
}

/// What a merge task did (its attempt's report).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct MergeTaskReport {
    /// The crawldb version it merged into.
    crawldb_version: String,
    /// Its partitions.
    partitions: Vec<usize>,
    /// The fetch attempts whose URLs it merged (`<partition set>/<attempt>`).
    fetched_by: Vec<String>,
    /// Its merge counts.
    counts: merge::PartCounts,
}

/// The names of fetch attempts, `<partition set>/<attempt>` (what a merge task
/// records and the commit checks: the same on every machine).
fn attempt_dirs(chosen: &[crate::store::jobs::FinishedAttempt]) -> Vec<String> {
    chosen
        .iter()
        .map(|a| format!("{}/{}", a.partitions().dir_name(), a.attempt()))
        .collect()
}

/// A merge task on partitions `set` (of `n`): the URLs every fetch attempt of `job`
/// found for them, merged into their crawldb parts (written into its attempt, as
/// the one-process merge writes them). Installs nothing.
fn merge_task(
    dir: &CrawlDir,
    cfg: &Config,
    job: &TaskJob,
    set: &PartitionSet,
    attempt: &str,
    n: usize,
) -> Result<SitemapReport> {
    let (chosen, _, now) = fetch_attempts(dir, job, n)?;
    let parts: Vec<usize> = set.iter().collect();
    let urls = urls_for(&chosen, &parts, n)?;
    let exists = parquet::dataset_complete(&dir.crawldb_current());
    if exists {
        let files: Vec<PathBuf> = parts
            .iter()
            .map(|&i| crate::crawldb::current_part(dir, i))
            .collect();
        crate::store::integrity::verify_files(&dir.crawldb_current(), &files)?;
    }
    let w = job.pass(MERGE_PASS).attempt_writer(set, attempt)?;
    let out = w.dataset(crate::crawldb::TASK_DATASET)?;
    let mut r = MergeTaskReport {
        crawldb_version: crate::crawldb::version_id(dir)?,
        partitions: parts.clone(),
        fetched_by: attempt_dirs(&chosen),
        ..MergeTaskReport::default()
    };
    let none = Vec::new();
    for &i in &parts {
        let mut new: BTreeMap<String, (&SitemapUrl, &str)> = BTreeMap::new();
        for (e, sitemap) in urls.get(&i).unwrap_or(&none) {
            new.insert(e.url.clone(), (e, sitemap.as_str()));
        }
        let db = if exists {
            crate::crawldb::stream::DatumStream::open(&crate::crawldb::current_part(dir, i))?
        } else {
            crate::crawldb::stream::DatumStream::empty()
        };
        let mut wr = PartWriter::create(&out.join(part_name(i)))?;
        let c = merge::merge_part(db, &new, &mut wr, cfg, now)?;
        wr.finish()?;
        r.counts.add(c);
    }
    crate::crawldb::finish_attempt(w, &r)?;
    Ok(SitemapReport {
        urls_added: r.counts.added,
        urls_known: r.counts.known,
        urls_due_again: r.counts.due_again,
        crawldb_rows: r.counts.rows,
        ..SitemapReport::default()
    })
}

/// The commit of a sitemap job whose URLs the merge tasks merged (under the crawldb
/// lock): checks the versions every fetch and merge attempt read, installs the
/// merge tasks' crawldb parts as the new version (with the extra sitemaps' hosts as
/// seed hosts), then the sitemapdb. Without a URL to merge and without extra hosts
/// the crawldb stays as it is, as in one process.
fn commit_merged(
    dir: &CrawlDir,
    cfg: &Config,
    opts: &SitemapOpts,
    job: &TaskJob,
    n: usize,
) -> Result<SitemapReport> {
    let (chosen, mut summary, _) = fetch_attempts(dir, job, n)?;
    let version = crate::crawldb::version_id(dir)?;
    // A merge task that read other fetch attempts (one finished after it ran) is
    // passed over: its partitions need a merge task run since.
    let fetched_by = attempt_dirs(&chosen);
    let tasks: Vec<(PathBuf, MergeTaskReport)> = job
        .pass(MERGE_PASS)
        .choose_where(n, |a| {
            Ok(a.report::<MergeTaskReport>()?.fetched_by == fetched_by)
        })
        .map_err(|e| {
            Error::crawl_dir(
                job.dir(),
                format!(
                    "{e} (merge tasks that read other fetch attempts than the commit chooses are passed over: a fetch attempt finished after them; run the merge tasks of those partitions again under a new attempt id)"
                ),
            )
        })?
        .iter()
        .map(|a| Ok((a.dataset(crate::crawldb::TASK_DATASET), a.report()?)))
        .collect::<Result<_>>()?;
    let mut merged = merge::MergeReport::default();
    for (path, t) in &tasks {
        crate::crawldb::check_version(dir, path, &t.crawldb_version, &version)?;
        merged.add(t.counts.clone());
    }
    let extra = extra_hosts(opts);
    if merged.added + merged.known == 0 && extra.is_empty() {
        merged.rows = 0;
    } else {
        let (_, mut meta) = crate::crawldb::meta_or_new(dir, cfg)?;
        let mut hosts: std::collections::BTreeSet<String> =
            meta.seed_hosts.iter().cloned().collect();
        hosts.extend(extra);
        meta.seed_hosts = hosts.into_iter().collect();
        let parts: Vec<(&Path, &[usize])> = tasks
            .iter()
            .map(|(p, t)| (p.as_path(), t.partitions.as_slice()))
            .collect();
        crate::crawldb::install_parts(dir, &parts, &mut meta, "sitemap")?;
    }
    install_sitemapdb(dir, &mut summary, merged)?;
    Ok(summary)
}

/// Counts the fetch results into `summary` and collects their URLs (first mention of
/// a URL wins, with the sitemap that named it) and their sitemap records.
fn tally(
    results: Vec<fetch::FetchResult>,
    summary: &mut SitemapReport,
) -> (Vec<(SitemapUrl, String)>, Vec<SitemapRecord>) {
    let mut urls: HashMap<String, (SitemapUrl, String)> = HashMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut records: Vec<SitemapRecord> = Vec::new();
    for res in results {
        let rec = res.record;
        match rec.status.as_str() {
            "ok" => summary.fetched += 1,
            "not_modified" => summary.not_modified += 1,
            "deferred" => summary.deferred += 1,
            _ => summary.failed += 1,
        }
        if rec.problems > 0 {
            summary.malformed += 1;
        }
        summary.urls_found += res.urls.len() as u64;
        summary.urls_rejected += rec.urls_rejected as u64;
        summary.urls_cut += rec.urls_cut as u64;
        for p in res.problems {
            summary.problems.push((rec.url.clone(), p));
        }
        for u in res.urls {
            if !urls.contains_key(&u.url) {
                order.push(u.url.clone());
                urls.insert(u.url.clone(), (u, rec.url.clone()));
            }
        }
        records.push(rec);
    }
    let entries = order.into_iter().filter_map(|u| urls.remove(&u)).collect();
    (entries, records)
}

/// Reads a file of sitemap URLs (one per line, `#` comments): `inject --sitemaps`.
pub fn read_sitemap_list(path: &Path) -> Result<Vec<Url>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::input(
            path.display().to_string(),
            format!("cannot read the sitemap list ({e}); nothing was injected"),
        )
    })?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match Url::parse(line) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => {
                out.push(u)
            }
            _ => {
                return Err(Error::input(
                    format!("{}:{}", path.display(), i + 1),
                    format!(
                        "{line:?} is not an absolute http(s) sitemap URL; the file lists sitemap URLs, one per line (fix the line; nothing was injected)"
                    ),
                ));
            }
        }
    }
    Ok(out)
}

/// Prints every sitemap's status and problems on stderr (one line each):
/// `sitemap URL: position: reason`.
pub fn print_problems(summary: &SitemapReport) {
    for r in &summary.reports {
        if !matches!(r.status.as_str(), "ok" | "not_modified" | "deferred") {
            eprintln!("{}: {} ({})", r.url, r.status, r.reason);
        }
    }
    for (url, p) in &summary.problems {
        eprintln!("{url}: {p}");
    }
    for r in &summary.reports {
        let shown = summary.problems.iter().filter(|(u, _)| *u == r.url).count() as i64;
        if r.problems > shown {
            eprintln!("{}: {} more problems not shown", r.url, r.problems - shown);
        }
    }
}
