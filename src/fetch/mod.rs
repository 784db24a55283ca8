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

mod origins;
mod page;
mod progress;
mod queues;
mod redirects;
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
use crate::config::Config;
use crate::datum::CrawlDatum;
use crate::error::{Error, IoContext, Result};
use crate::net::politeness::Politeness;
use crate::net::robots::RobotsRecord;
use crate::net::robots_cache::{self, CacheEntry};
use crate::net::{client, runtime};
use crate::stage::{Report, StageCtx};
use crate::store::layout::{CrawlDir, Segment};
use crate::store::names::SegmentDataset;
use crate::store::parquet::{self, PartWriter, StagedDataset};
use crate::urls::UrlPolicy;

use page::FetchItem;
use queues::HostQueue;
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
        )
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

/// Reads the fetch list into per-host queues (hosts in first-seen order).
fn read_fetch_list(seg: &Segment) -> Result<(Vec<HostList>, u64)> {
    let mut hosts: Vec<HostList> = Vec::new();
    // Each host's index in `hosts` and its name, shared by the host's items.
    let mut index: HashMap<String, (usize, Arc<str>)> = HashMap::new();
    let mut n = 0u64;
    let list = seg.dataset(SegmentDataset::CrawlGenerate);
    for part in crate::store::integrity::verify(&list, crate::store::integrity::Check::Checksums)? {
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

/// Fetches a segment of the crawl directory (the newest unfetched one when
/// `opts.segment` is `None`).
pub fn run(ctx: &StageCtx, opts: &FetchOpts) -> Result<FetchReport> {
    let cfg = ctx.config();
    let dir = ctx.open_for_segments()?;
    let seg = select_segment(&dir, opts.segment.as_deref())?;
    // The segment's lock, before anything in it is touched: what a killed run left
    // is removed only once no other fetch can be writing it. Checked again under the
    // lock: another fetch may have finished the segment meanwhile.
    let _lock = seg.lock("fetch")?;
    let seg = select_segment(&dir, Some(seg.path()))?;
    let meta = seg.meta()?;
    remove_partial_outputs(&seg)?;
    let seed_hosts = dir.crawldb_meta().map(|m| m.seed_hosts).unwrap_or_default();
    let policy = UrlPolicy::new(&cfg.urls, &seed_hosts)?;
    let (hosts, urls) = read_fetch_list(&seg)?;
    tracing::info!(
        "fetching segment {}: {urls} urls on {} hosts",
        seg.name(),
        hosts.len()
    );
    let n_hosts = hosts.len();
    let partitions = meta.partitions.max(1);
    let writer = writer::SegmentWriter::start(seg.path(), partitions)?;
    let politeness = Politeness::load(&ctx.crawl_dir().fetch_last_end(), &cfg.fetch);
    let robots_cache = RobotsCache::new(ctx.root(), cfg);
    let shared = Arc::new(new_shared(
        cfg,
        policy,
        &writer,
        &hosts,
        &politeness,
        &robots_cache,
    )?);
    let rt = runtime::build(cfg.crawl.threads)?;
    let run = rt.block_on(fetch_queues(shared, hosts, urls));
    drop(rt);
    // Every request of this run has ended: the next run keeps its distance from now.
    politeness.record_end()?;
    let written = writer.finish()?;
    let expected = urls + run.followed;
    if run.aborted || written.stats.rows != expected {
        return Err(Error::crawl_dir(
            seg.path(),
            format!(
                "fetch produced {} crawl_fetch rows for {urls} fetch-list URLs and {} followed redirects; nothing was committed, rerun fetch",
                written.stats.rows, run.followed
            ),
        ));
    }
    let robots = run.robots_log.len();
    let robots_cached = run
        .robots_log
        .iter()
        .filter(|r| run.robots_cached_origins.contains(&r.origin))
        .count();
    write_robots(&seg, run.robots_log, partitions)?;
    written.content.commit()?;
    written.crawl_fetch.commit()?;
    robots_cache.save(run.robots_fetched);
    Ok(FetchReport {
        segment: seg.path().to_path_buf(),
        urls,
        hosts: n_hosts,
        queues: run.queues,
        dns_lookups: run.dns_lookups,
        followed: run.followed,
        robots_cached,
        stats: written.stats,
        robots,
        interrupted: run
            .interrupted
            .then(|| crate::signal::received().unwrap_or("a signal")),
        reached: run.reached,
        unreached: run.unreached,
    })
}

/// The crawl directory's robots cache (`robots_cache.json`) as this run uses it:
/// kept only when `fetch.robots_cache_ttl` > 0 and robots.txt is respected.
struct RobotsCache {
    file: PathBuf,
    ttl: f64,
    enabled: bool,
}

impl RobotsCache {
    fn new(crawl_dir: &Path, cfg: &Config) -> Self {
        let ttl = cfg.fetch.robots_cache_ttl;
        RobotsCache {
            file: CrawlDir::new(crawl_dir).robots_cache(),
            ttl,
            enabled: ttl > 0.0 && cfg.fetch.respect_robots,
        }
    }

    /// The entries of earlier runs still fresh, by origin.
    fn load(&self) -> HashMap<String, CacheEntry> {
        if self.enabled {
            robots_cache::load(&self.file, self.ttl, crate::datum::now_millis())
        } else {
            HashMap::new()
        }
    }

    /// Adds this run's robots.txt (`fetched`) to the cache; entries of earlier runs
    /// stay until they expire. A failure to write is only a warning.
    fn save(&self, fetched: HashMap<String, CacheEntry>) {
        if !self.enabled {
            return;
        }
        let now = crate::datum::now_millis();
        let mut all = robots_cache::load(&self.file, self.ttl, now);
        all.extend(fetched);
        if let Err(e) = robots_cache::save(&self.file, all, self.ttl, now) {
            tracing::warn!("cannot write the robots cache: {e}");
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
        followed: AtomicU64::new(0),
        tasks: Mutex::new(Vec::new()),
        stopped: AtomicBool::new(false),
        stop: tokio::sync::Notify::new(),
        interrupted: AtomicBool::new(false),
        cut: AtomicBool::new(false),
        cut_notify: tokio::sync::Notify::new(),
        reached: AtomicBool::new(false),
        unreached: Mutex::new(BTreeMap::new()),
    })
}

/// The async part of a run: groups the hosts into queues, starts their workers,
/// watches signals, the progress and the throughput floor, and waits until every
/// worker is done.
async fn fetch_queues(shared: Arc<Shared>, hosts: Vec<HostList>, urls: u64) -> RunResult {
    let watch = tokio::spawn(watch_signals(shared.clone()));
    let reporter = progress::spawn_reporter(shared.progress.clone(), urls);
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
    reporter.finish().await;
    RunResult {
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
}

/// Writes and commits the segment's `robots/` dataset (partitioned by host).
fn write_robots(seg: &Segment, mut rows: Vec<RobotsRecord>, partitions: usize) -> Result<()> {
    rows.sort_by(|a, b| a.origin.cmp(&b.origin));
    let staged = StagedDataset::new(&seg.dataset(SegmentDataset::Robots))?;
    let mut parts: Vec<PartWriter<RobotsRecord>> = (0..partitions)
        .map(|i| PartWriter::create(&staged.part_path(i)))
        .collect::<Result<_>>()?;
    for r in rows {
        let p = parquet::partition_for_host(&r.host, partitions);
        parts[p].push(r)?;
    }
    for p in parts {
        p.finish()?;
    }
    staged.commit()?;
    Ok(())
}
