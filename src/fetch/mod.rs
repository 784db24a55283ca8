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

pub mod bench;
pub mod client;
pub mod hostpattern;
pub mod outcome;
pub mod page;
pub mod progress;
pub mod queues;
pub mod resolve;
pub mod robots;
pub mod robots_cache;
pub mod throughput;
pub mod writer;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::config::Config;
use crate::datum::CrawlDatum;
use crate::error::{Error, IoContext, Result};
use crate::store::layout::{CrawlDir, Segment};
use crate::store::names::SegmentDataset;
use crate::store::parquet::{self, PartWriter, StagedDataset};
use crate::urls::UrlPolicy;

use page::FetchItem;
use queues::{HostQueue, Progress, QueueMode, Shared};
use robots::RobotsRecord;
pub use writer::WriteStats;

/// What a fetch run did.
#[derive(Debug, Clone)]
pub struct FetchSummary {
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
    /// Whether some server was reached (any response; see [`FetchSummary::unreachable`]).
    pub reached: bool,
    /// Hosts that failed to connect or resolve, by host: (reason, address tried).
    pub unreached: BTreeMap<String, (String, String)>,
}

/// How many unreached hosts the unreachable warning names.
pub const UNREACHED_NAMED: usize = 5;

impl FetchSummary {
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

/// The end of the last fetch run as recorded in `last_end_file` (ms), if readable.
pub fn read_last_end(last_end_file: &Path) -> Option<i64> {
    std::fs::read_to_string(last_end_file)
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
}

/// How long the first request to a host must wait so that its delay also holds
/// across fetch runs: `last run's end + delay - now`, or nothing when the last run
/// ended longer ago than the delay (or never ran: `last_end` is `None`, see
/// [`read_last_end`]).
pub fn wait_since(last_end: Option<i64>, delay_secs: f64, now_ms: i64) -> Duration {
    let Some(last_end) = last_end else {
        return Duration::ZERO;
    };
    let delay_ms = (delay_secs.max(0.0) * 1000.0).ceil() as i64;
    let wait = last_end.saturating_add(delay_ms).saturating_sub(now_ms);
    Duration::from_millis(wait.clamp(0, delay_ms) as u64)
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

/// Fetches a segment of the crawl directory `crawl_dir` (the newest unfetched one
/// when `segment` is `None`).
pub fn run(cfg: &Config, crawl_dir: &Path, segment: Option<&Path>) -> Result<FetchSummary> {
    let dir = CrawlDir::open_for_segments(crawl_dir)?;
    let seg = select_segment(&dir, segment)?;
    // The segment's lock, before anything in it is touched: what a killed run left
    // is removed only once no other fetch can be writing it. Checked again under the
    // lock: another fetch may have finished the segment meanwhile.
    let _lock = seg.lock("fetch")?;
    let seg = select_segment(&dir, Some(seg.path()))?;
    let meta = seg.meta()?;
    remove_partial_outputs(&seg)?;
    let seed_hosts = dir.crawldb_meta().map(|m| m.seed_hosts).unwrap_or_default();
    let policy = UrlPolicy::new(&cfg.urls, &seed_hosts)?;
    let http = client::Http::new(&cfg.fetch)?;
    let (hosts, urls) = read_fetch_list(&seg)?;
    tracing::info!(
        "fetching segment {}: {urls} urls on {} hosts",
        seg.name(),
        hosts.len()
    );
    let partitions = meta.partitions.max(1);
    let writer = writer::SegmentWriter::start(seg.path(), partitions)?;
    let progress = Arc::new(Progress::default());
    let n_hosts = hosts.len();

    let mut rt = tokio::runtime::Builder::new_multi_thread();
    if cfg.crawl.threads > 0 {
        rt.worker_threads(cfg.crawl.threads);
    }
    let rt = rt
        .enable_all()
        .build()
        .map_err(|e| Error::Net(format!("cannot start the async runtime: {e}")))?;
    let time_limit = cfg.fetch.time_limit;
    let last_end_file = dir.fetch_last_end();
    let last_end = read_last_end(&last_end_file);
    let delays =
        hostpattern::HostPatterns::new(cfg.fetch.delays.iter().map(|(p, d)| (p.clone(), *d)));
    let mode = QueueMode::parse(&cfg.fetch.queue_mode)?;
    let ttl = cfg.fetch.robots_cache_ttl;
    let cache_file = dir.robots_cache();
    let robots_cache = if ttl > 0.0 && cfg.fetch.respect_robots {
        robots_cache::load(&cache_file, ttl, crate::datum::now_millis())
    } else {
        HashMap::new()
    };
    let claimed: HashSet<String> = if cfg.fetch.follow_redirects > 0 {
        hosts
            .iter()
            .flat_map(|(_, items)| items.iter().map(|i| i.url.to_string()))
            .collect()
    } else {
        HashSet::new()
    };
    let run = rt.block_on(async {
        let deadline = (time_limit > 0.0)
            .then(|| tokio::time::Instant::now() + Duration::from_secs_f64(time_limit));
        let shared = Arc::new(Shared {
            http,
            policy,
            cfg: cfg.fetch.clone(),
            tx: writer.tx.clone(),
            permits: Arc::new(tokio::sync::Semaphore::new(cfg.fetch.max_connections)),
            deadline,
            progress: progress.clone(),
            robots_log: Mutex::new(Vec::new()),
            aborted: AtomicBool::new(false),
            mode,
            queues: Mutex::new(HashMap::new()),
            last_end,
            delays,
            robots_cache,
            robots_fetched: Mutex::new(HashMap::new()),
            claimed: Mutex::new(claimed),
            followed: std::sync::atomic::AtomicU64::new(0),
            tasks: Mutex::new(Vec::new()),
            stopped: AtomicBool::new(false),
            stop: tokio::sync::Notify::new(),
            interrupted: AtomicBool::new(false),
            cut: AtomicBool::new(false),
            cut_notify: tokio::sync::Notify::new(),
            reached: AtomicBool::new(false),
            unreached: Mutex::new(BTreeMap::new()),
        });
        let watch = tokio::spawn(watch_signals(shared.clone()));
        let reporter = progress::spawn_reporter(progress.clone(), urls);
        let grouped = group_into_queues(mode, shared.http.resolver(), hosts).await;
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
            queues::spawn_workers(&shared, q);
        }
        let floor = (cfg.fetch.min_throughput > 0.0)
            .then(|| tokio::spawn(throughput::watch(shared.clone(), urls)));
        if !queues::join_workers(&shared).await {
            shared.aborted.store(true, Ordering::Relaxed);
        }
        if let Some(f) = floor {
            f.abort();
        }
        watch.abort();
        reporter.finish().await;
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
            unreached: addressed,
        }
    });
    drop(rt);
    // Every request of this run has ended: the next run keeps its distance from now.
    parquet::write_atomic(
        &last_end_file,
        crate::datum::now_millis().to_string().as_bytes(),
    )?;
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
    let robots_log = run.robots_log;
    let robots = robots_log.len();
    let robots_cached = robots_log
        .iter()
        .filter(|r| run.robots_cached_origins.contains(&r.origin))
        .count();
    write_robots(&seg, robots_log, partitions)?;
    written.content.commit()?;
    written.crawl_fetch.commit()?;
    if ttl > 0.0 && cfg.fetch.respect_robots {
        // Entries of earlier runs stay until they expire; this run's replace them.
        let now = crate::datum::now_millis();
        let mut all = robots_cache::load(&cache_file, ttl, now);
        all.extend(run.robots_fetched);
        if let Err(e) = robots_cache::save(&cache_file, all, ttl, now) {
            tracing::warn!("cannot write the robots cache: {e}");
        }
    }
    Ok(FetchSummary {
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

/// Stops the run when SIGINT or SIGTERM arrives ([`crate::signal`]): no request
/// starts any more, the requests in flight get [`crate::signal::grace`] to finish,
/// then are cut. The flag is polled every 50 ms.
async fn watch_signals(shared: Arc<queues::Shared>) {
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
    robots_fetched: HashMap<String, robots_cache::CacheEntry>,
    robots_cached_origins: HashSet<String>,
    aborted: bool,
    followed: u64,
    queues: usize,
    dns_lookups: (u64, u64),
    interrupted: bool,
    reached: bool,
    unreached: BTreeMap<String, (String, String)>,
}

/// Groups the per-host lists into politeness queues (`fetch.queue_mode`), in
/// first-seen order; in ip mode hosts are resolved (cached, 64 at a time).
async fn group_into_queues(
    mode: QueueMode,
    resolver: &resolve::Resolver,
    hosts: Vec<HostList>,
) -> Vec<(String, Vec<FetchItem>)> {
    use futures::StreamExt;
    let keys: Vec<String> = futures::stream::iter(hosts.iter().map(|(h, _)| h.clone()))
        .map(|h| async move { queues::queue_key(mode, resolver, &h).await })
        .buffered(64)
        .collect()
        .await;
    let mut out: Vec<(String, Vec<FetchItem>)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for (key, (_, items)) in keys.into_iter().zip(hosts) {
        match index.get(&key) {
            Some(&i) => out[i].1.extend(items),
            None => {
                index.insert(key.clone(), out.len());
                out.push((key, items));
            }
        }
    }
    out
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

#[cfg(test)]
mod initial_wait_tests {
    use super::*;

    #[test]
    fn waits_only_for_what_is_left_of_the_delay() {
        let dir = tempfile::tempdir().unwrap();
        let f = CrawlDir::new(dir.path()).fetch_last_end();
        assert_eq!(
            wait_since(read_last_end(&f), 1.0, 10_000),
            Duration::ZERO,
            "no previous run"
        );
        std::fs::write(&f, "10000").unwrap();
        assert_eq!(
            wait_since(read_last_end(&f), 1.0, 10_000),
            Duration::from_millis(1000)
        );
        assert_eq!(
            wait_since(read_last_end(&f), 1.0, 10_400),
            Duration::from_millis(600)
        );
        assert_eq!(
            wait_since(read_last_end(&f), 1.0, 12_000),
            Duration::ZERO,
            "ended long ago"
        );
        assert_eq!(
            wait_since(read_last_end(&f), 1.0, 9_000),
            Duration::from_millis(1000),
            "clock went back"
        );
        std::fs::write(&f, "garbage").unwrap();
        assert_eq!(wait_since(read_last_end(&f), 1.0, 10_000), Duration::ZERO);
    }
}
