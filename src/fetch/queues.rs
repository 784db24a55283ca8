//! Politeness queues: what a queue is (`fetch.queue_mode`), its URLs and redirect
//! targets waiting, and its timing (the next allowed start, the delay raised by
//! Crawl-delay, Retry-After or the adaptive delay, the failures that close it).
//!
//! A queue holds the URLs of one host (`fetch.queue_mode = "host"`, the default), one
//! registrable domain (`"domain"`) or one resolved IP address (`"ip"`). The workers
//! that drain queues are in [`super::worker`].

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::time::Instant;

use crate::config::FetchConfig;
use crate::fetch::page::FetchItem;
use crate::fetch::state::Progress;
use crate::net::resolve::Resolver;
use crate::net::robots::Robots;

/// What one politeness queue is (`fetch.queue_mode`).
pub use crate::config::QueueMode;

/// The queue key of `host`: the host, its registrable domain, or its first resolved
/// IP address (a host that does not resolve gets a queue of its own, named by the
/// host; its requests then fail fast with `dns_failure`).
pub async fn queue_key(mode: QueueMode, resolver: &Resolver, host: &str) -> String {
    match mode {
        QueueMode::Host => host.to_string(),
        QueueMode::Domain => crate::urls::registrable_domain(host),
        QueueMode::Ip => match resolver.addresses(host).await {
            Ok(addrs) => addrs
                .first()
                .map(|a| a.ip().to_string())
                .unwrap_or_else(|| host.to_string()),
            Err(_) => host.to_string(),
        },
    }
}

/// Locks `m` (poisoned or not: the state stays usable after a worker panicked).
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Mutable state of one queue.
pub(super) struct HostState {
    /// Earliest start of the next request.
    pub(super) next_start: Instant,
    /// Delay between requests (config delay, raised by Crawl-delay).
    pub(super) delay: Duration,
    /// The largest robots.txt Crawl-delay seen in this queue (floor of the adaptive delay).
    pub(super) crawl_delay: Duration,
    /// Consecutive failures.
    pub(super) failures: u32,
    /// Once set, every remaining URL is recorded fetch_retry with this reason.
    pub(super) closed: Option<&'static str>,
    /// Hosts of the queue closed on their own (Crawl-delay too long, DNS failure).
    pub(super) closed_hosts: HashMap<String, &'static str>,
}

/// A request waiting in a queue: a fetch-list URL, or a redirect target handed over
/// by another queue's worker.
#[derive(Debug, Clone)]
pub struct Job {
    /// The URL to fetch.
    pub item: FetchItem,
    /// The redirect chain that led here (the fetch-list URL first); empty for a
    /// fetch-list URL.
    pub via: Vec<String>,
}

impl From<FetchItem> for Job {
    fn from(item: FetchItem) -> Job {
        Job {
            item,
            via: Vec::new(),
        }
    }
}

/// The waiting requests of a queue and the number of its running workers, under
/// one lock: a worker retires only when it finds no job, so a job pushed later
/// always finds a worker or starts one.
pub(super) struct Jobs {
    /// Redirect targets handed over by other queues: first in line (their chain
    /// already waited its turn once).
    pub(super) redirected: VecDeque<Job>,
    /// The queue's fetch-list URLs, in fetch-list order.
    pub(super) listed: VecDeque<FetchItem>,
    /// Workers running on the queue.
    pub(super) workers: usize,
}

/// One politeness queue.
pub struct HostQueue {
    key: String,
    /// Its waiting requests and running workers.
    pub(super) jobs: Mutex<Jobs>,
    /// Its timing and closing state.
    pub(super) state: Mutex<HostState>,
    /// Per origin: its robots.txt and, when unavailable, the reason its URLs get.
    pub(super) robots: tokio::sync::Mutex<HashMap<String, (Arc<Robots>, &'static str)>>,
    /// Request slots (`fetch.per_host_connections`).
    pub(super) slots: Semaphore,
    /// Workers started on the queue (`fetch.per_host_connections`).
    pub(super) connections: usize,
}

impl HostQueue {
    /// A queue named `key` with its URLs, `delay_secs` apart; its first request may
    /// start after `first_wait` (see [`crate::net::politeness::wait_since`]).
    pub fn new(
        key: String,
        items: VecDeque<FetchItem>,
        cfg: &FetchConfig,
        delay_secs: f64,
        first_wait: Duration,
    ) -> Self {
        let delay = Duration::try_from_secs_f64(delay_secs.max(0.0)).unwrap_or_default();
        HostQueue {
            key,
            jobs: Mutex::new(Jobs {
                redirected: VecDeque::new(),
                listed: items,
                workers: 0,
            }),
            state: Mutex::new(HostState {
                // Politeness across runs: the previous fetch run may have requested
                // this host a moment ago.
                next_start: Instant::now() + first_wait,
                delay,
                crawl_delay: Duration::ZERO,
                failures: 0,
                closed: None,
                closed_hosts: HashMap::new(),
            }),
            robots: tokio::sync::Mutex::new(HashMap::new()),
            slots: Semaphore::new(cfg.per_host_connections.max(1)),
            connections: cfg.per_host_connections.max(1),
        }
    }

    /// The queue's key (host, domain or IP address).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The next job for a worker; `None` retires the worker (no job left, or `stop`).
    pub(super) fn next_job(&self, stop: bool, progress: &Progress) -> Option<Job> {
        let mut jobs = lock(&self.jobs);
        let job = if stop {
            None
        } else {
            jobs.redirected
                .pop_front()
                .or_else(|| jobs.listed.pop_front().map(Job::from))
        };
        if job.is_none() {
            jobs.workers = jobs.workers.saturating_sub(1);
            if jobs.workers == 0 {
                progress.active_hosts.fetch_sub(1, Ordering::Relaxed);
            }
        }
        job
    }

    /// Why URLs of `host` are no longer fetched, if they are not.
    pub(super) fn closed_for(&self, host: &str) -> Option<&'static str> {
        let s = lock(&self.state);
        s.closed.or_else(|| s.closed_hosts.get(host).copied())
    }

    /// Closes the whole queue.
    pub(super) fn close(&self, reason: &'static str) {
        let mut s = lock(&self.state);
        if s.closed.is_none() {
            tracing::info!("queue {}: remaining URLs skipped ({reason})", self.key);
            s.closed = Some(reason);
        }
    }

    /// Closes one host of the queue (the whole queue in host mode).
    pub(super) fn close_host(&self, host: &str, reason: &'static str) {
        let mut s = lock(&self.state);
        if !s.closed_hosts.contains_key(host) {
            tracing::info!("host {host}: remaining URLs skipped ({reason})");
            s.closed_hosts.insert(host.to_string(), reason);
        }
    }

    /// The earliest start of the queue's next request.
    pub(super) fn next_start(&self) -> Instant {
        lock(&self.state).next_start
    }

    /// Records the end of a request that took `response_time` (`None`: cut short):
    /// the next may start after the delay (the adaptive one when enabled), or after
    /// `extra_wait` if longer.
    pub(super) fn finished_request(
        &self,
        extra_wait: Option<Duration>,
        response_time: Option<Duration>,
        cfg: &FetchConfig,
    ) {
        let mut s = lock(&self.state);
        let now = Instant::now();
        let base = match response_time {
            Some(rt) if cfg.adaptive_delay_factor > 0.0 => {
                let secs = (rt.as_secs_f64() * cfg.adaptive_delay_factor)
                    .clamp(cfg.min_delay, cfg.max_delay.max(cfg.min_delay));
                Duration::try_from_secs_f64(secs)
                    .unwrap_or(s.delay)
                    .max(s.crawl_delay)
            }
            _ => s.delay,
        };
        let wait = extra_wait.map_or(base, |w| w.max(base));
        s.next_start = s.next_start.max(now + wait);
    }
}

/// Groups the per-host lists into politeness queues (`fetch.queue_mode`), in
/// first-seen order; in ip mode hosts are resolved (cached, 64 at a time).
pub(super) async fn group_into_queues(
    mode: QueueMode,
    resolver: &Resolver,
    hosts: Vec<super::HostList>,
) -> Vec<(String, Vec<FetchItem>)> {
    use futures::StreamExt;
    let keys: Vec<String> = futures::stream::iter(hosts.iter().map(|(h, _)| h.clone()))
        .map(|h| async move { queue_key(mode, resolver, &h).await })
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
