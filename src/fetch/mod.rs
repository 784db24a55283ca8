//! The `fetch` stage: reads a segment's `crawl_generate`, fetches every URL
//! politely (robots.txt, per-host delay, Crawl-delay, Retry-After), and writes
//! `crawl_fetch` (exactly one row per fetch-list URL), `content` (2xx bodies) and
//! `robots` (what each origin's robots.txt said), all partitioned by host.
//!
//! Datasets are staged and committed in the order `robots`, `content`,
//! `crawl_fetch`: a segment with `crawl_fetch/` is completely fetched; leftovers of
//! a run killed earlier are removed by the next run, which holds the segment's lock
//! (`segments/<name>.lock`) for its whole run, so a second fetch of the same segment
//! is refused instead of deleting the first one's work in progress.

mod checkpoint;
mod origins;
mod page;
mod progress;
mod queues;
mod redirects;
mod render;
mod state;
mod throughput;
mod worker;
mod writer;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::cli::Exit;
use crate::config::{Config, QueueMode};
use crate::datum::CrawlDatum;
use crate::error::{Error, IoContext, Result};
use crate::net::politeness::Politeness;
use crate::net::robots::RobotsRecord;
use crate::net::robots_cache::{self, CacheEntry};
use crate::net::{client, runtime};
use crate::stage::{Guard, Partitioned, Report, StageCtx};
use crate::store::integrity;
use crate::store::jobs::{Job, PartitionSet};
use crate::store::layout::{CrawlDir, Segment};
use crate::store::lease::Fence;
use crate::store::names::SegmentDataset;
use crate::store::parquet::{self, PartWriter, StagedDataset};
use crate::store::partition::{PartitionKey, Partitioner};
use crate::urls::UrlPolicy;

use page::FetchItem;
use queues::HostQueue;
pub use render::RenderStats;
use state::{Progress, Shared};
pub use writer::WriteStats;

/// The fetch stage's options (flags over `[fetch]` go into the context's config).
#[derive(Debug, Clone, Default)]
pub struct FetchOpts {
    /// The segment (a path, or a name under `segments/`); `None`: the newest unfetched.
    pub segment: Option<PathBuf>,
}

/// What a fetch run did.
#[derive(Debug, Clone)]
pub struct FetchReport {
    /// The segment fetched.
    pub segment: PathBuf,
    /// URLs in the fetch list.
    pub urls: u64,
    /// Hosts in the fetch list.
    pub hosts: usize,
    /// Politeness queues (hosts, domains or IP addresses, see `fetch.queue_mode`),
    /// including those of redirect targets on new hosts.
    pub queues: usize,
    /// Name lookups made (one per host not mapped by `fetch.resolve`) and how many failed.
    pub dns_lookups: (u64, u64),
    /// Extra crawl_fetch rows of redirect targets followed inline.
    pub followed: u64,
    /// Origins whose robots.txt came from the robots cache.
    pub robots_cached: usize,
    /// Rows and counts written.
    pub stats: WriteStats,
    /// Origins whose robots.txt was consulted.
    pub robots: usize,
    /// The signal (`SIGINT`, `SIGTERM`) that stopped the run, if one did: the URLs
    /// not attempted are `fetch_retry`/`interrupted`.
    pub interrupted: Option<&'static str>,
    /// Whether some server was reached (any response; see [`FetchReport::unreachable`]).
    pub reached: bool,
    /// Hosts that failed to connect or resolve, by host: (reason, address tried).
    pub unreached: BTreeMap<String, (String, String)>,
    /// What JavaScript rendering did (`[fetch.render]`).
    pub render: RenderStats,
    /// crawl_fetch rows taken from the checkpoints of an earlier, lost attempt
    /// (`fetch.checkpoint_interval`): those URLs were not requested again.
    pub resumed: u64,
}

/// How many unreached hosts the unreachable warning names.
pub const UNREACHED_NAMED: usize = 5;

impl FetchReport {
    /// Whether the run reached no server at all: requests were made, and every one
    /// of them failed to connect or resolve (exit code 5 in the `fetch` binary).
    pub fn unreachable(&self) -> bool {
        !self.reached && !self.unreached.is_empty() && self.interrupted.is_none()
    }

    /// The warning of an unreachable run: the number of hosts and the first few
    /// with their address and reason.
    pub fn unreachable_warning(&self) -> String {
        let named: Vec<String> = self
            .unreached
            .iter()
            .take(UNREACHED_NAMED)
            .map(|(host, (reason, addr))| format!("{host} ({addr}): {reason}"))
            .collect();
        let more = self.unreached.len().saturating_sub(UNREACHED_NAMED);
        format!(
            "no server reached: all {} hosts tried failed to connect or resolve ({}{}); every URL is fetch_retry and stays due. Check the network, fetch.resolve, or whether the servers are up",
            self.unreached.len(),
            named.join("; "),
            if more > 0 {
                format!("; and {more} more")
            } else {
                String::new()
            }
        )
    }

    /// The fields of the one-line summary: counts per status and per reason.
    pub fn line(&self) -> String {
        let join = |m: &BTreeMap<String, u64>| {
            m.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        format!(
            "segment {}: {} urls, {} hosts, {} queues, {} pages, {:.1} MB, {} redirects followed, {} dns lookups ({} failed), {} robots.txt ({} cached); status: {}; reasons: {}",
            self.segment.display(),
            self.urls,
            self.hosts,
            self.queues,
            self.stats.pages,
            self.stats.bytes as f64 / 1e6,
            self.followed,
            self.dns_lookups.0,
            self.dns_lookups.1,
            self.robots,
            self.robots_cached,
            join(&self.stats.by_status),
            join(&self.stats.by_reason)
        ) + &if self.render.any() {
            format!("; {}", self.render.line())
        } else {
            String::new()
        } + &if self.resumed > 0 {
            format!(
                "; {} rows resumed from the checkpoints of a lost attempt",
                self.resumed
            )
        } else {
            String::new()
        }
    }
}

impl fmt::Display for FetchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.line())
    }
}

impl Report for FetchReport {
    const STAGE: &'static str = "fetch";

    /// Interrupted by a signal: [`crate::cli::exit::INTERRUPTED`] (the segment is
    /// written with what was fetched); no server reached:
    /// [`crate::cli::exit::UNREACHABLE`] with the warning.
    fn exit(&self) -> Option<Exit> {
        if let Some(signal) = self.interrupted {
            let cut = self
                .stats
                .by_reason
                .get(crate::crawldb::state::REASON_INTERRUPTED)
                .copied()
                .unwrap_or(0);
            return Some(Exit::new(
                crate::cli::exit::INTERRUPTED,
                format!(
                    "fetch: interrupted by {signal}: segment {} written with what was fetched; {cut} URLs not attempted are fetch_retry/interrupted and stay due. Apply it as usual (parse, updatedb)",
                    self.segment.display()
                ),
            ));
        }
        if self.unreachable() {
            return Some(Exit::new(
                crate::cli::exit::UNREACHABLE,
                format!("fetch: WARNING: {}", self.unreachable_warning()),
            ));
        }
        None
    }
}

/// Picks the segment: the one given, else the newest with `crawl_generate` and no `crawl_fetch`.
pub fn select_segment(dir: &CrawlDir, arg: Option<&Path>) -> Result<Segment> {
    let seg = match arg {
        Some(a) => dir.segment(a)?,
        None => dir
            .segments()?
            .into_iter()
            .rev()
            .find(|s| s.has(SegmentDataset::CrawlGenerate) && !s.dataset(SegmentDataset::CrawlFetch).exists())
            .ok_or_else(|| {
                Error::crawl_dir(
                    dir.segments_dir(),
                    "no segment waiting to be fetched (all have crawl_fetch/ or none has crawl_generate/); run `generate` first",
                )
            })?,
    };
    if seg.dataset(SegmentDataset::CrawlFetch).exists() {
        return Err(Error::crawl_dir(
            seg.path(),
            format!(
                "segment {} is already fetched (crawl_fetch/ exists); to fetch it again delete {}, {} and {} first",
                seg.name(),
                seg.dataset(SegmentDataset::CrawlFetch).display(),
                seg.dataset(SegmentDataset::Content).display(),
                seg.dataset(SegmentDataset::Robots).display()
            ),
        ));
    }
    seg.require(SegmentDataset::CrawlGenerate, "generate")?;
    Ok(seg)
}

/// One host and its URLs, in fetch-list order.
type HostList = (String, Vec<FetchItem>);

/// Reads the fetch-list parts of `set` into per-host queues (hosts in first-seen
/// order). The sizes of every part and the checksums of the task's own are checked.
fn read_fetch_list(seg: &Segment, set: &PartitionSet) -> Result<(Vec<HostList>, u64)> {
    let mut hosts: Vec<HostList> = Vec::new();
    // Each host's index in `hosts` and its name, shared by the host's items.
    let mut index: HashMap<String, (usize, Arc<str>)> = HashMap::new();
    let mut n = 0u64;
    let list = seg.dataset(SegmentDataset::CrawlGenerate);
    integrity::verify(&list, integrity::Check::Sizes)?;
    let mut parts = Vec::new();
    for i in set.iter() {
        parts.extend(parquet::partition_files(&list, i)?);
    }
    integrity::verify_files(&list, &parts)?;
    for part in parts {
        for rows in parquet::read_part::<CrawlDatum>(&part)? {
            for d in rows? {
                n += 1;
                let host = FetchItem::host_of(&d);
                let (i, name) = match index.get(&host) {
                    Some((i, name)) => (*i, name.clone()),
                    None => {
                        let name: Arc<str> = Arc::from(host.as_str());
                        hosts.push((host.clone(), Vec::new()));
                        index.insert(host, (hosts.len() - 1, name.clone()));
                        (hosts.len() - 1, name)
                    }
                };
                hosts[i].1.push(FetchItem::from_datum(d, name));
            }
        }
    }
    for (_, items) in &mut hosts {
        items.shrink_to_fit();
    }
    Ok((hosts, n))
}

/// Removes datasets a run killed between commits left behind (crawl_fetch absent).
fn remove_partial_outputs(seg: &Segment) -> Result<()> {
    for name in [SegmentDataset::Content, SegmentDataset::Robots] {
        let p = seg.dataset(name);
        if p.exists() {
            tracing::warn!(
                "removing {} left by an interrupted fetch (no crawl_fetch/)",
                p.display()
            );
            std::fs::remove_dir_all(&p).at(&p)?;
        }
    }
    Ok(())
}

/// A fetch task's report (`_report.json` of its attempt); a job's commit sums them.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct TaskReport {
    urls: u64,
    hosts: usize,
    queues: usize,
    dns_lookups: (u64, u64),
    followed: u64,
    robots_cached: usize,
    stats: WriteStats,
    robots: usize,
    interrupted: Option<String>,
    reached: bool,
    unreached: BTreeMap<String, (String, String)>,
    #[serde(default)]
    render: RenderStats,
    #[serde(default)]
    resumed: u64,
}

impl TaskReport {
    fn add(&mut self, o: TaskReport) {
        self.urls += o.urls;
        self.hosts += o.hosts;
        self.queues += o.queues;
        self.dns_lookups.0 += o.dns_lookups.0;
        self.dns_lookups.1 += o.dns_lookups.1;
        self.followed += o.followed;
        self.robots_cached += o.robots_cached;
        self.stats.rows += o.stats.rows;
        self.stats.pages += o.stats.pages;
        self.stats.bytes += o.stats.bytes;
        for (k, v) in o.stats.by_status {
            *self.stats.by_status.entry(k).or_default() += v;
        }
        for (k, v) in o.stats.by_reason {
            *self.stats.by_reason.entry(k).or_default() += v;
        }
        self.robots += o.robots;
        self.interrupted = self.interrupted.take().or(o.interrupted);
        self.reached |= o.reached;
        self.unreached.extend(o.unreached);
        self.render.add(&o.render);
        self.resumed += o.resumed;
    }

    fn into_report(self, seg: &Segment) -> FetchReport {
        FetchReport {
            segment: seg.path().to_path_buf(),
            urls: self.urls,
            hosts: self.hosts,
            queues: self.queues,
            dns_lookups: self.dns_lookups,
            followed: self.followed,
            robots_cached: self.robots_cached,
            stats: self.stats,
            robots: self.robots,
            interrupted: self
                .interrupted
                .map(|_| crate::signal::received().unwrap_or("a signal")),
            reached: self.reached,
            unreached: self.unreached,
            render: self.render,
            resumed: self.resumed,
        }
    }
}

/// Refuses a fetch task on some of the partitions when politeness queues could
/// span partitions: `fetch.queue_mode = "domain"` over a crawl partitioned by host
/// (two tasks may fetch hosts of one domain at once; partitioned by domain, a
/// domain's hosts are all in one partition, so its queue is in one task), or
/// `"ip"` (addresses are known only once resolved, during fetch, so no
/// partitioning can follow them).
fn check_queue_mode(cfg: &Config, set: &PartitionSet, pt: Partitioner) -> Result<()> {
    if set.is_all(pt.n()) {
        return Ok(());
    }
    let why = match (cfg.fetch.queue_mode, pt.key()) {
        (QueueMode::Host, _) | (QueueMode::Domain, PartitionKey::Domain) => return Ok(()),
        (QueueMode::Domain, PartitionKey::Host) => {
            "fetch.queue_mode = \"domain\" keeps one politeness queue per registrable domain, but the crawl's partitions group URLs by host (its crawldb's partition_key = \"host\"), so two tasks could fetch hosts of one domain at the same time; partition the crawl by domain (`repartition --partition-key domain`, then crawl.partition_key = \"domain\"), fetch with queue_mode = \"host\" in tasks, or run fetch as one task (--partitions 0-N or without --job)"
        }
        (QueueMode::Ip, _) => {
            "fetch.queue_mode = \"ip\" keeps one politeness queue per IP address, which is known only once a host is resolved (during fetch), and hosts of one address can sit in different partitions whatever the partition key, so two tasks could fetch one address at the same time (Nutch's byIP partitioning resolves every host in generate; trawl does not, see docs/cluster.md); fetch with queue_mode = \"domain\" (crawl partitioned by domain) or \"host\" in tasks, or run fetch as one task (--partitions 0-N or without --job)"
        }
    };
    Err(Error::input(
        format!("fetch --partitions {set}"),
        why.to_string(),
    ))
}

/// Fetches a segment of the crawl directory (the newest unfetched one when
/// `opts.segment` is `None`): in this process, or as one task of a job on some of
/// its fetch-list partitions (each taken under a lease), or as the job's commit
/// (see docs/tasks-segments.md).
pub fn run(ctx: &StageCtx, opts: &FetchOpts) -> Result<FetchReport> {
    let dir = ctx.open_for_segments()?;
    if opts.segment.is_none() && !ctx.is_whole() {
        return Err(Error::input(
            "fetch --job",
            "name the segment: every task of a job and its commit work on the same SEGMENT",
        ));
    }
    let seg = select_segment(&dir, opts.segment.as_deref())?;
    // The segment's lock, before anything in it is touched (a one-process run, a
    // commit): what a killed run left is removed only once no other fetch can be
    // writing it. Checked again under the lock: another fetch may have finished the
    // segment meanwhile. Tasks write only their attempts, under partition leases.
    let report = crate::stage::execute(ctx, Guard::Segment(&seg), || {
        let seg = select_segment(&dir, Some(seg.path()))?;
        if !ctx.is_task() {
            remove_partial_outputs(&seg)?;
        }
        Ok(Fetch {
            ctx,
            dir: &dir,
            pt: seg.meta()?.partitioner(),
            seg,
        })
    })?;
    Ok(report.into_report(&seg))
}

/// The fetch stage as the executor runs it ([`crate::stage::execute`]).
struct Fetch<'a> {
    ctx: &'a StageCtx,
    dir: &'a CrawlDir,
    seg: Segment,
    pt: Partitioner,
}

impl Partitioned for Fetch<'_> {
    type Out = TaskReport;
    const NAME: &'static str = "fetch";

    fn partitions(&self) -> usize {
        self.pt.n()
    }

    fn task(&mut self, job: &Job, set: &PartitionSet, attempt: &str) -> Result<TaskReport> {
        let mut report = run_task(self.ctx, self.dir, &self.seg, job, set, attempt, self.pt)?;
        if !report.reached && self.ctx.is_task() {
            // Not a task failure (a retry would fail alike): the commit's summary
            // judges the whole job.
            tracing::warn!(
                "fetch task on partitions {set}: no server reached ({} hosts failed to connect or resolve); the attempt is recorded",
                report.unreached.len()
            );
            report.unreached.clear();
        }
        Ok(report)
    }

    fn commit(&mut self, job: &Job) -> Result<TaskReport> {
        let report = commit(self.dir, &self.seg, job, self.pt.n())?;
        if let Some(store) = self.ctx.scratch_store() {
            let published = self.dir.fetch_checkpoints_of(self.seg.name());
            if let Err(e) = store.delete_scratch(&published) {
                tracing::warn!(
                    "cannot remove the segment's fetch checkpoints from the store: {e}; `gc` does not either: delete the keys under {}",
                    published.display()
                );
            }
        }
        Ok(report)
    }

    /// A one-process run reports what its task did (with the hosts it did not
    /// reach), not the sum of the attempts the commit installed.
    fn whole(&mut self, task: TaskReport, _commit: TaskReport) -> TaskReport {
        task
    }
}

/// How long a partition's lease lasts without a heartbeat: the time limit plus the
/// longest a request in flight may take after it (the fetch stops starting requests
/// at its time limit, and cuts those in flight `fetch.total_timeout` later at most).
/// `None` (until released) without a time limit, which only a one-process run may
/// have.
fn lease_length(cfg: &Config, task: bool) -> Result<Option<Duration>> {
    let limit = cfg.fetch.time_limit;
    if limit <= 0.0 {
        if task {
            return Err(Error::input(
                "fetch --job",
                "a fetch task whose leases are not renewed (fetch.lease_ttl = 0) needs a time limit (fetch.time_limit or --time-limit, in seconds): its partitions' leases expire that long (plus fetch.total_timeout) after it starts, so that a retry can take over from an attempt that was lost",
            ));
        }
        return Ok(None);
    }
    let secs = limit + cfg.fetch.total_timeout.max(0.0) + 1.0;
    Ok(Some(
        Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX),
    ))
}

/// The fetch task on fetch-list partitions `set` (attempt `attempt` of `job`): takes
/// each partition's lease, fetches their URLs politely (each partition's
/// `fetch.last_end` and robots cache), writes crawl_fetch, content and robots parts
/// into the attempt, records the partitions' state and releases the leases.
fn run_task(
    ctx: &StageCtx,
    dir: &CrawlDir,
    seg: &Segment,
    job: &Job,
    set: &PartitionSet,
    attempt: &str,
    pt: Partitioner,
) -> Result<TaskReport> {
    let cfg = ctx.config();
    let partitions = pt.n();
    let is_task = ctx.is_task();
    check_queue_mode(cfg, set, pt)?;
    // A task's leases are renewed by a heartbeat (`fetch.lease_ttl`); without one
    // they last the time limit.
    let length = match ctx.lease_heartbeat() {
        Some(_) => None,
        None => lease_length(cfg, is_task)?,
    };
    let own: Vec<usize> = set.iter().collect();
    // Every partition's lease first: a live one held by another attempt is waited
    // for (`fetch.lease_wait`), or fails the task (those taken are released on the
    // way out). Held until the end of the task.
    let wanted: Vec<(PathBuf, String)> = own
        .iter()
        .map(|&i| {
            (
                dir.fetch_lease(partitions, i),
                format!("partition {i} of segment {}", seg.name()),
            )
        })
        .collect();
    let held = ctx.take_leases(&wanted, job.id(), attempt, length)?;
    let taken_over = held.taken_over;
    let lease_path = dir.fetch_lease(partitions, own.first().copied().unwrap_or(0));
    let seed_hosts = dir.crawldb_meta().map(|m| m.seed_hosts).unwrap_or_default();
    let policy = UrlPolicy::new(&cfg.urls, &seed_hosts)?;
    let (mut hosts, urls) = read_fetch_list(seg, set)?;
    let n_hosts = hosts.len();
    // What the checkpoints of earlier attempts hold is not requested again.
    let checkpoints = checkpoint_root(ctx, dir, seg, partitions);
    // On an object store, the checkpoints published there by earlier attempts
    // (another machine's) join this mirror first.
    if let (Some((root, _)), Some(store)) = (&checkpoints, ctx.scratch_store()) {
        // Only the checkpoints of partition sets that share a partition with this
        // task's (`<pset>/<chunk>`): the others' are never read.
        let ours = |d: &str| {
            d.split('/')
                .next()
                .and_then(PartitionSet::from_dir_name)
                .is_some_and(|p| p.iter().any(|i| set.contains(i)))
        };
        match store.get_scratch_dirs(root, checkpoint::PUBLISHED, &ours) {
            Ok(n) if n > 0 => {
                tracing::info!("{n} fetch checkpoints of earlier attempts pulled from the store")
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(
                "cannot read the fetch checkpoints on the store: {e}; their URLs are fetched again"
            ),
        }
    }
    let resumed = match &checkpoints {
        Some((root, _)) if root.is_dir() => {
            let listed: HashSet<&str> = hosts
                .iter()
                .flat_map(|(_, items)| items.iter().map(|i| &*i.url))
                .collect();
            checkpoint::load(root, set, pt, &listed)
        }
        _ => checkpoint::Resumed::default(),
    };
    if resumed.rows() > 0 {
        for (_, items) in &mut hosts {
            items.retain(|i| !resumed.done.contains(&*i.url));
        }
        hosts.retain(|(_, items)| !items.is_empty());
        tracing::info!(
            "resuming from {} checkpoints of earlier attempts: {} fetch-list URLs and {} redirect targets are done",
            resumed.checkpoints,
            resumed.listed,
            resumed.followed
        );
    }
    let remaining = urls.saturating_sub(resumed.listed);
    tracing::info!(
        "fetching segment {} (partitions {set}): {remaining} urls on {} hosts",
        seg.name(),
        hosts.len()
    );
    let w = job.attempt_writer(set, attempt)?;
    let sink = checkpoints.as_ref().map(|(root, every)| {
        checkpoint::Sink::new(root, set, *every, held.fence(), ctx.scratch_store())
    });
    let writer = writer::SegmentWriter::start(
        &w.dataset(SegmentDataset::CrawlFetch.as_str())?,
        &w.dataset(SegmentDataset::Content.as_str())?,
        pt,
        &own,
        (resumed.rows() > 0).then_some(&resumed),
        sink,
    )?;
    let last_ends: Vec<PathBuf> = own
        .iter()
        .map(|&i| dir.fetch_last_end_of(partitions, i))
        .collect();
    if taken_over {
        // A lost attempt (killed, or a zombie past its lease) may have sent requests
        // to these hosts until a moment ago without recording its end: keep the
        // hosts' delay from now, as if it had just ended.
        Politeness::load_many(&last_ends, &[], &cfg.fetch).record_end()?;
    }
    let politeness = Politeness::load_many(&last_ends, &[dir.fetch_last_end()], &cfg.fetch);
    let robots_cache = RobotsCache::new(dir, cfg, pt, &own);
    let mut shared = new_shared(cfg, policy, &writer, &hosts, &politeness, &robots_cache)?;
    if cfg.fetch.follow_redirects > 0 {
        let claimed = shared.claimed.get_mut().unwrap_or_else(|e| e.into_inner());
        claimed.extend(resumed.done.iter().cloned());
    }
    // The robots.txt the lost attempt decided: reused, and in this attempt's robots/.
    shared.robots_cache.extend(resumed.robots_cache());
    shared
        .robots_log
        .get_mut()
        .unwrap_or_else(|e| e.into_inner())
        .extend(resumed.robots.values().map(|e| e.record.clone()));
    if !set.is_all(partitions) {
        shared.own = Some((own.iter().copied().collect(), pt));
    }
    shared.fence = held.fence();
    let fence = shared.fence.clone();
    let shared = Arc::new(shared);
    let rt = runtime::build(cfg.crawl.threads)?;
    // The status.json this process keeps current gets fetch's live figures: a
    // one-process fetch's, or the crawl driver's (beside the mirror on an object
    // store); tasks of a job keep none (many run at once).
    let sink = crate::status::live().map(|path| progress::StatusSink {
        path: path.to_path_buf(),
        segment: seg.name().to_string(),
    });
    let tick = checkpoints.as_ref().map(|(_, every)| *every / 2);
    let run = rt.block_on(fetch_queues(shared, hosts, remaining, sink, tick));
    drop(rt);
    if fence.as_ref().is_some_and(Fence::tripped) {
        // Another attempt may own these partitions now: nothing of this run is
        // recorded (no fetch state, no attempt), and the task fails.
        return Err(Error::Locked {
            path: lease_path,
            message: format!(
                "fetch task on partitions {set} (attempt {attempt}): its leases were not renewed within fetch.lease_ttl ({} s): the process was held up or cut off, and another attempt may have taken the partitions over; it stopped sending requests and its attempt is not finished",
                cfg.fetch.lease_ttl
            ),
        });
    }
    // Every request of this run has ended: the next run keeps its distance from now.
    politeness.record_end()?;
    let written = writer.finish()?;
    let mut robots_fetched = run.robots_fetched;
    for (origin, e) in resumed.robots_cache() {
        robots_fetched.entry(origin).or_insert(e);
    }
    robots_cache.save(robots_fetched);
    let followed = run.followed + resumed.followed;
    let expected = urls + followed;
    if run.aborted || written.stats.rows != expected {
        return Err(Error::crawl_dir(
            seg.path(),
            format!(
                "fetch produced {} crawl_fetch rows for {urls} fetch-list URLs and {followed} followed redirects ({} rows from checkpoints); nothing was committed, rerun fetch",
                written.stats.rows,
                resumed.rows()
            ),
        ));
    }
    if written.checkpoints > 0 {
        tracing::debug!("{} checkpoints published", written.checkpoints);
    }
    if run.interrupted && is_task {
        // A task's output is whole or nothing: the retry fetches the partitions again.
        return Err(Error::Interrupted {
            signal: crate::signal::received().unwrap_or("a signal").to_string(),
            message: format!(
                "fetch task on partitions {set} of segment {} stopped: its attempt {attempt} is not recorded; the task can be run again",
                seg.name()
            ),
        });
    }
    // One row per origin: the last decided (a resumed run's own over its checkpoints').
    let robots_log: BTreeMap<String, RobotsRecord> = run
        .robots_log
        .into_iter()
        .map(|r| (r.origin.clone(), r))
        .collect();
    let robots = robots_log.len();
    let robots_cached = robots_log
        .keys()
        .filter(|o| run.robots_cached_origins.contains(*o) && !resumed.robots.contains_key(*o))
        .count();
    write_robots(
        &w.dataset(SegmentDataset::Robots.as_str())?,
        robots_log.into_values(),
        pt,
        &own,
    )?;
    let report = TaskReport {
        urls,
        hosts: n_hosts,
        queues: run.queues,
        dns_lookups: run.dns_lookups,
        followed,
        robots_cached,
        stats: written.stats,
        robots,
        interrupted: run
            .interrupted
            .then(|| crate::signal::received().unwrap_or("a signal").to_string()),
        // A server the lost attempt reached counts: its rows are this attempt's.
        reached: run.reached || resumed.reached,
        unreached: run.unreached,
        render: run.render,
        resumed: resumed.rows(),
    };
    // A one-process run stopped by a signal still writes what it fetched.
    w.finish_anyway(&report)?;
    Ok(report)
}

/// The commit: links the chosen attempts' robots, content and crawl_fetch parts
/// into the segment's datasets and installs them in that order (`crawl_fetch/` last:
/// its presence means the segment is fetched); removes the job; returns the
/// attempts' reports summed.
fn commit(dir: &CrawlDir, seg: &Segment, job: &Job, partitions: usize) -> Result<TaskReport> {
    let chosen = job.choose(partitions)?;
    let staged = |ds: SegmentDataset| StagedDataset::new(&seg.dataset(ds));
    let robots = staged(SegmentDataset::Robots)?;
    let content = staged(SegmentDataset::Content)?;
    let fetch = staged(SegmentDataset::CrawlFetch)?;
    let mut report = TaskReport::default();
    for a in &chosen {
        for (ds, to) in [
            (SegmentDataset::Robots, &robots),
            (SegmentDataset::Content, &content),
            (SegmentDataset::CrawlFetch, &fetch),
        ] {
            a.link_parts(ds.as_str(), to.path())?;
        }
        report.add(a.report()?);
    }
    robots.commit()?;
    content.commit()?;
    fetch.commit()?;
    remove_checkpoints(dir, seg);
    Ok(report)
}

/// Removes the checkpoints of `seg` (now fetched), and those of segments fetched or
/// deleted since (a late attempt may have published after their commit). A failure
/// is a warning: the segment is installed.
fn remove_checkpoints(dir: &CrawlDir, seg: &Segment) {
    let ours = dir.fetch_checkpoints_of(seg.name());
    let Some(root) = ours.parent() else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = dir.segments_dir().join(&name);
        let done = name == seg.name()
            || !path.is_dir()
            || path.join(SegmentDataset::CrawlFetch.as_str()).exists();
        if done && let Err(err) = std::fs::remove_dir_all(e.path()) {
            tracing::warn!(
                "cannot remove the fetch checkpoints {}: {err}; delete the directory",
                e.path().display()
            );
        }
    }
    // Gone when empty: an unfetched segment's may still be there.
    let _ = std::fs::remove_dir(root);
}

/// Where this run's checkpoints go and how often (`fetch.checkpoint_interval`):
/// `None` when they are off. On an object store they are written in the working
/// mirror and each is published to the store as it is made
/// ([`StageCtx::scratch_store`]).
fn checkpoint_root(
    ctx: &StageCtx,
    dir: &CrawlDir,
    seg: &Segment,
    partitions: usize,
) -> Option<(PathBuf, Duration)> {
    let every = ctx.config().fetch.checkpoint_interval;
    if every <= 0.0 {
        return None;
    }
    Some((
        dir.fetch_checkpoints(seg.name(), partitions),
        Duration::try_from_secs_f64(every).unwrap_or(Duration::MAX),
    ))
}

/// The robots cache as this run uses it: kept only when `fetch.robots_cache_ttl` > 0
/// and robots.txt is respected; one file per partition fetched
/// (`fetch_state/<n>/p<i>/robots_cache.json`, read and written by that partition's
/// tasks), plus the crawl directory's `robots_cache.json` of runs before partitions
/// had their own, read for this run's partitions until its entries expire.
struct RobotsCache {
    /// Each partition's file, by partition.
    files: BTreeMap<usize, PathBuf>,
    /// The crawl directory's single file (read only).
    legacy: PathBuf,
    partitions: Partitioner,
    ttl: f64,
    enabled: bool,
}

impl RobotsCache {
    fn new(dir: &CrawlDir, cfg: &Config, partitions: Partitioner, own: &[usize]) -> Self {
        let ttl = cfg.fetch.robots_cache_ttl;
        RobotsCache {
            files: own
                .iter()
                .map(|&i| (i, dir.robots_cache_of(partitions.n(), i)))
                .collect(),
            legacy: dir.robots_cache(),
            partitions,
            ttl,
            enabled: ttl > 0.0 && cfg.fetch.respect_robots,
        }
    }

    fn partition_of(&self, e: &CacheEntry) -> usize {
        self.partitions.of_host(&e.record.host)
    }

    /// The entries of earlier runs still fresh, by origin (of this run's partitions).
    fn load(&self) -> HashMap<String, CacheEntry> {
        if !self.enabled {
            return HashMap::new();
        }
        let now = crate::datum::now_millis();
        let mut all: HashMap<String, CacheEntry> = HashMap::new();
        let legacy = robots_cache::load(&self.legacy, self.ttl, now)
            .into_iter()
            .filter(|(_, e)| self.files.contains_key(&self.partition_of(e)));
        let own = self
            .files
            .values()
            .flat_map(|f| robots_cache::load(f, self.ttl, now));
        for (origin, e) in legacy.chain(own) {
            match all.get(&origin) {
                Some(have) if have.record.fetch_time >= e.record.fetch_time => {}
                _ => {
                    all.insert(origin, e);
                }
            }
        }
        all
    }

    /// Adds this run's robots.txt (`fetched`) to its partition's cache; entries of
    /// earlier runs stay until they expire. A failure to write is only a warning.
    fn save(&self, fetched: HashMap<String, CacheEntry>) {
        if !self.enabled {
            return;
        }
        let now = crate::datum::now_millis();
        let mut by_part: BTreeMap<usize, HashMap<String, CacheEntry>> = BTreeMap::new();
        for (origin, e) in fetched {
            by_part
                .entry(self.partition_of(&e))
                .or_default()
                .insert(origin, e);
        }
        for (i, fetched) in by_part {
            let Some(file) = self.files.get(&i) else {
                continue; // a host of another partition (never fetched by a task)
            };
            let mut all = robots_cache::load(file, self.ttl, now);
            all.extend(fetched);
            let saved = file
                .parent()
                .map_or(Ok(()), |d| std::fs::create_dir_all(d).at(d))
                .and_then(|()| robots_cache::save(file, all, self.ttl, now));
            if let Err(e) = saved {
                tracing::warn!("cannot write the robots cache: {e}");
            }
        }
    }
}

/// The state a run's workers share, before any request.
fn new_shared(
    cfg: &Config,
    policy: UrlPolicy,
    writer: &writer::SegmentWriter,
    hosts: &[HostList],
    politeness: &Politeness,
    robots_cache: &RobotsCache,
) -> Result<Shared> {
    let claimed: HashSet<String> = if cfg.fetch.follow_redirects > 0 {
        hosts
            .iter()
            .flat_map(|(_, items)| items.iter().map(|i| i.url.to_string()))
            .collect()
    } else {
        HashSet::new()
    };
    let time_limit = cfg.fetch.time_limit;
    Ok(Shared {
        http: client::Http::new(&cfg.fetch)?,
        policy,
        cfg: cfg.fetch.clone(),
        tx: writer.tx.clone(),
        permits: Arc::new(tokio::sync::Semaphore::new(cfg.fetch.max_connections)),
        deadline: (time_limit > 0.0)
            .then(|| tokio::time::Instant::now() + Duration::from_secs_f64(time_limit)),
        progress: Arc::new(Progress::default()),
        robots_log: Mutex::new(Vec::new()),
        aborted: AtomicBool::new(false),
        mode: cfg.fetch.queue_mode,
        queues: Mutex::new(HashMap::new()),
        politeness: politeness.clone(),
        robots_cache: robots_cache.load(),
        robots_fetched: Mutex::new(HashMap::new()),
        claimed: Mutex::new(claimed),
        own: None,
        followed: AtomicU64::new(0),
        tasks: Mutex::new(Vec::new()),
        stopped: AtomicBool::new(false),
        stop: tokio::sync::Notify::new(),
        interrupted: AtomicBool::new(false),
        cut: AtomicBool::new(false),
        cut_notify: tokio::sync::Notify::new(),
        reached: AtomicBool::new(false),
        unreached: Mutex::new(BTreeMap::new()),
        render: render::Renderer::new(&cfg.fetch.render)?,
        fence: None,
    })
}

/// The async part of a run: groups the hosts into queues, starts their workers,
/// watches signals, the progress and the throughput floor, and waits until every
/// worker is done.
async fn fetch_queues(
    shared: Arc<Shared>,
    hosts: Vec<HostList>,
    urls: u64,
    sink: Option<progress::StatusSink>,
    tick: Option<Duration>,
) -> RunResult {
    let watch = tokio::spawn(watch_signals(shared.clone()));
    // Wakes the writer to publish a checkpoint when rows wait and none arrives.
    let ticker = tick.map(|every| {
        let tx = shared.tx.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                if tx.send(writer::Msg::Tick).await.is_err() {
                    return;
                }
            }
        })
    });
    let reporter = progress::spawn_reporter(shared.progress.clone(), urls, sink);
    let grouped = queues::group_into_queues(shared.mode, shared.http.resolver(), hosts).await;
    // Every queue is registered before any worker starts, so a redirect target
    // on a listed host joins that host's queue instead of creating a second one.
    let listed: Vec<Arc<HostQueue>> = grouped
        .into_iter()
        .map(|(key, items)| Arc::new(shared.new_queue(key, items.into())))
        .collect();
    if let Ok(mut qs) = shared.queues.lock() {
        for q in &listed {
            qs.insert(q.key().to_string(), q.clone());
        }
    }
    for q in &listed {
        worker::spawn_workers(&shared, q);
    }
    let floor = (shared.cfg.min_throughput > 0.0)
        .then(|| tokio::spawn(throughput::watch(shared.clone(), urls)));
    if !worker::join_workers(&shared).await {
        shared.aborted.store(true, Ordering::Relaxed);
    }
    if let Some(f) = floor {
        f.abort();
    }
    watch.abort();
    if let Some(t) = ticker {
        t.abort();
    }
    reporter.finish().await;
    let render = match &shared.render {
        Some(r) => {
            r.shutdown().await;
            r.stats()
        }
        None => RenderStats::default(),
    };
    RunResult {
        render,
        robots_log: take(&shared.robots_log),
        robots_fetched: take(&shared.robots_fetched),
        robots_cached_origins: shared.robots_cache.keys().cloned().collect(),
        aborted: shared.aborted.load(Ordering::Relaxed),
        followed: shared.followed.load(Ordering::Relaxed),
        queues: shared.queues.lock().map(|q| q.len()).unwrap_or(0),
        dns_lookups: shared.http.resolver().lookups(),
        interrupted: shared.interrupted.load(Ordering::Relaxed),
        reached: shared.reached.load(Ordering::Relaxed),
        unreached: unreached_addresses(&shared).await,
    }
}

/// The hosts that failed to connect or resolve, by host: (reason, the address tried).
async fn unreached_addresses(shared: &Shared) -> BTreeMap<String, (String, String)> {
    let unreached = take(&shared.unreached);
    let mut addressed = BTreeMap::new();
    for (host, (reason, port)) in unreached {
        let addr = match shared.http.resolver().addresses(&host).await {
            Ok(addrs) => match addrs.first() {
                Some(a) if a.port() == 0 => std::net::SocketAddr::new(a.ip(), port).to_string(),
                Some(a) => a.to_string(),
                None => format!("{host}:{port}"),
            },
            Err(_) => "does not resolve".to_string(),
        };
        addressed.insert(host, (reason.to_string(), addr));
    }
    addressed
}

/// Stops the run when SIGINT or SIGTERM arrives ([`crate::signal`]): no request
/// starts any more, the requests in flight get [`crate::signal::grace`] to finish,
/// then are cut. The flag is polled every 50 ms.
async fn watch_signals(shared: Arc<Shared>) {
    let signal = crate::signal::wait().await;
    let grace = crate::signal::grace(shared.cfg.total_timeout);
    tracing::warn!(
        "{signal} received: no new request is sent; requests in flight get {:.1} s to finish; what was fetched is written, the rest stays due (reason interrupted). Send the signal again to exit at once (nothing written)",
        grace.as_secs_f64()
    );
    shared.interrupt();
    tokio::time::sleep(grace).await;
    shared.cut_in_flight();
}

/// Takes the contents out of a mutex (poisoned or not).
fn take<T: Default>(m: &Mutex<T>) -> T {
    std::mem::take(&mut *m.lock().unwrap_or_else(|e| e.into_inner()))
}

/// What the async part of a run hands back.
struct RunResult {
    robots_log: Vec<RobotsRecord>,
    robots_fetched: HashMap<String, CacheEntry>,
    robots_cached_origins: HashSet<String>,
    aborted: bool,
    followed: u64,
    queues: usize,
    dns_lookups: (u64, u64),
    interrupted: bool,
    reached: bool,
    unreached: BTreeMap<String, (String, String)>,
    render: RenderStats,
}

/// Writes the `robots/` rows of partitions `own` (of `partitions`, by host) into
/// `out`, a part per partition, in the order given.
fn write_robots(
    out: &Path,
    rows: impl Iterator<Item = RobotsRecord>,
    partitions: Partitioner,
    own: &[usize],
) -> Result<()> {
    let mut parts: Vec<Option<PartWriter<RobotsRecord>>> =
        (0..partitions.n()).map(|_| None).collect();
    for &i in own {
        parts[i] = Some(PartWriter::create(&out.join(parquet::part_name(i)))?);
    }
    for r in rows {
        let p = partitions.of_host(&r.host);
        let Some(w) = &mut parts[p] else {
            return Err(Error::crawl_dir(
                out,
                format!(
                    "internal: a robots.txt row of {} (partition {p}), a partition this task does not fetch",
                    r.origin
                ),
            ));
        };
        w.push(r)?;
    }
    for p in parts.into_iter().flatten() {
        p.finish()?;
    }
    Ok(())
}
