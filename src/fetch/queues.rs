//! Host queues and the politeness scheduler.
//!
//! Every host gets `fetch.per_host_connections` worker tasks sharing its queue.
//! A worker waits until the host's next allowed start (the end of the previous
//! request plus the delay, raised by Crawl-delay or Retry-After), then takes a permit of the global
//! `fetch.max_connections` semaphore (FIFO, so hosts interleave and a big host never
//! starves the others), fetches, releases the permit. Only workers whose host is
//! ready wait for permits, so capacity is never idle while a host has work due.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Semaphore, mpsc};
use tokio::time::Instant;

use crate::config::FetchConfig;
use crate::datum::FetchStatus;
use crate::fetch::client::Http;
use crate::fetch::outcome::HostSignal;
use crate::fetch::page::{FetchItem, fetch_page};
use crate::fetch::robots::{Robots, RobotsRecord, fetch_robots, origin_of};
use crate::fetch::writer::Output;
use crate::urls::UrlPolicy;

/// Live counters for the progress display.
#[derive(Debug, Default)]
pub struct Progress {
    /// URLs finished (rows emitted).
    pub done: AtomicU64,
    /// Content bytes fetched.
    pub bytes: AtomicU64,
    /// Pages fetched (2xx).
    pub pages: AtomicU64,
    /// Failed URLs (fetch_retry).
    pub errors: AtomicU64,
    /// Host queues not finished yet.
    pub active_hosts: AtomicUsize,
}

/// Everything the workers share.
pub struct Shared {
    /// The HTTP client.
    pub http: Http,
    /// URL policy for redirect targets.
    pub policy: UrlPolicy,
    /// `[fetch]`.
    pub cfg: FetchConfig,
    /// Results go here.
    pub tx: mpsc::Sender<Output>,
    /// Global connection permits.
    pub permits: Arc<Semaphore>,
    /// The time limit, if any.
    pub deadline: Option<Instant>,
    /// Live counters.
    pub progress: Arc<Progress>,
    /// What robots.txt said, per origin.
    pub robots_log: Mutex<Vec<RobotsRecord>>,
    /// Set when the writer is gone (an error that ends the run).
    pub aborted: AtomicBool,
}

impl Shared {
    fn past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Runs `fut` unless the deadline passes first.
    async fn before_deadline<F: std::future::Future>(&self, fut: F) -> Option<F::Output> {
        match self.deadline {
            Some(d) => tokio::time::timeout_at(d, fut).await.ok(),
            None => Some(fut.await),
        }
    }

    async fn emit(&self, out: Output) {
        let p = &self.progress;
        p.done.fetch_add(1, Ordering::Relaxed);
        if out.record.status == FetchStatus::FetchRetry {
            p.errors.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(c) = &out.content {
            p.pages.fetch_add(1, Ordering::Relaxed);
            p.bytes.fetch_add(c.content.len() as u64, Ordering::Relaxed);
        }
        if self.tx.send(out).await.is_err() {
            self.aborted.store(true, Ordering::Relaxed);
        }
    }
}

/// Mutable state of one host.
struct HostState {
    /// Earliest start of the next request.
    next_start: Instant,
    /// Delay between requests (config delay, raised by Crawl-delay).
    delay: Duration,
    /// Consecutive failures.
    failures: u32,
    /// Once set, every remaining URL is recorded fetch_retry with this reason.
    closed: Option<&'static str>,
}

/// One host's queue.
pub struct HostQueue {
    host: String,
    items: Mutex<VecDeque<FetchItem>>,
    state: Mutex<HostState>,
    robots: tokio::sync::Mutex<HashMap<String, Arc<Robots>>>,
    workers_left: AtomicUsize,
}

impl HostQueue {
    /// A queue for `host` with its URLs; its first request may start after `first_wait`
    /// (see [`crate::fetch::initial_wait`]).
    pub fn new(
        host: String,
        items: VecDeque<FetchItem>,
        cfg: &FetchConfig,
        first_wait: Duration,
    ) -> Self {
        let delay = Duration::from_secs_f64(cfg.delay.max(0.0));
        HostQueue {
            host,
            items: Mutex::new(items),
            state: Mutex::new(HostState {
                // Politeness across runs: the previous fetch run may have requested
                // this host a moment ago.
                next_start: Instant::now() + first_wait,
                delay,
                failures: 0,
                closed: None,
            }),
            robots: tokio::sync::Mutex::new(HashMap::new()),
            workers_left: AtomicUsize::new(cfg.per_host_connections.max(1)),
        }
    }

    fn pop(&self) -> Option<FetchItem> {
        self.items.lock().ok()?.pop_front()
    }

    fn closed(&self) -> Option<&'static str> {
        self.state.lock().ok().and_then(|s| s.closed)
    }

    fn close(&self, reason: &'static str) {
        if let Ok(mut s) = self.state.lock()
            && s.closed.is_none()
        {
            tracing::info!("host {}: remaining URLs skipped ({reason})", self.host);
            s.closed = Some(reason);
        }
    }

    fn next_start(&self) -> Instant {
        self.state
            .lock()
            .map(|s| s.next_start)
            .unwrap_or_else(|_| Instant::now())
    }

    /// Records the end of a request: the next may start after the delay (or later).
    fn finished_request(&self, extra_wait: Option<Duration>) {
        if let Ok(mut s) = self.state.lock() {
            let now = Instant::now();
            let wait = extra_wait.map_or(s.delay, |w| w.max(s.delay));
            s.next_start = s.next_start.max(now + wait);
        }
    }
}

/// Runs `fetch.per_host_connections` workers on `queue`.
pub fn spawn_host(shared: Arc<Shared>, queue: Arc<HostQueue>) -> Vec<tokio::task::JoinHandle<()>> {
    let n = queue.workers_left.load(Ordering::Relaxed);
    (0..n)
        .map(|_| {
            let shared = shared.clone();
            let queue = queue.clone();
            tokio::spawn(async move {
                worker(&shared, &queue).await;
                if queue.workers_left.fetch_sub(1, Ordering::AcqRel) == 1 {
                    shared.progress.active_hosts.fetch_sub(1, Ordering::Relaxed);
                }
            })
        })
        .collect()
}

async fn worker(shared: &Shared, queue: &HostQueue) {
    while let Some(item) = queue.pop() {
        if shared.aborted.load(Ordering::Relaxed) {
            return;
        }
        let out = Box::pin(handle(shared, queue, &item)).await;
        shared.emit(out).await;
    }
}

/// Decides the fate of one URL and fetches it if it may be fetched.
async fn handle(shared: &Shared, queue: &HostQueue, item: &FetchItem) -> Output {
    if let Some(reason) = queue.closed() {
        return item.without_response(FetchStatus::FetchRetry, reason);
    }
    if shared.past_deadline() {
        return item.without_response(FetchStatus::FetchRetry, "time_limit");
    }
    let url = match url::Url::parse(&item.url) {
        Ok(u) if u.host_str().is_some() => u,
        _ => return item.without_response(FetchStatus::FetchGone, "invalid_url"),
    };
    if shared.cfg.respect_robots {
        let Some(robots) = robots_for(shared, queue, &url).await else {
            return item.without_response(FetchStatus::FetchRetry, "time_limit");
        };
        if let Some(reason) = queue.closed() {
            return item.without_response(FetchStatus::FetchRetry, reason);
        }
        if matches!(*robots, Robots::Unavailable) {
            return item.without_response(FetchStatus::FetchRetry, "robots_unavailable");
        }
        if !robots.allowed(url.as_str()) {
            return item.without_response(FetchStatus::FetchGone, "robots_denied");
        }
    }
    // Boxed so a waiting worker task stays small (one task per host and slot).
    let fetched = shared
        .before_deadline(Box::pin(async {
            wait_until(queue.next_start()).await;
            let _permit = shared.permits.acquire().await.ok();
            let cap = shared.cfg.max_content_bytes;
            let r = fetch_page(&shared.http, &shared.policy, item, &url, cap).await;
            queue.finished_request(match r.1 {
                HostSignal::RetryAfter(d) => Some(d),
                _ => None,
            });
            r
        }))
        .await;
    let Some((out, signal)) = fetched else {
        // Cut by the time limit: the request counts as not attempted.
        queue.finished_request(None);
        return item.without_response(FetchStatus::FetchRetry, "time_limit");
    };
    apply_signal(shared, queue, signal);
    out
}

/// Sleeps until `at`; returns at once, without registering a timer, when `at` has
/// passed (the common case with delay 0 or a host whose turn is long due).
async fn wait_until(at: Instant) {
    if at > Instant::now() {
        tokio::time::sleep_until(at).await;
    }
}

fn apply_signal(shared: &Shared, queue: &HostQueue, signal: HostSignal) {
    match signal {
        HostSignal::Continue => {
            if let Ok(mut s) = queue.state.lock() {
                s.failures = 0;
            }
        }
        HostSignal::Failure => count_failure(shared, queue),
        HostSignal::DnsFailure => queue.close("dns_failure"),
        HostSignal::RetryAfter(d) => {
            if d.as_secs_f64() > shared.cfg.max_retry_after {
                queue.close("retry_after");
            } else {
                // Waiting is polite, but a host that keeps refusing is failing.
                count_failure(shared, queue);
            }
        }
    }
}

fn count_failure(shared: &Shared, queue: &HostQueue) {
    let failures = queue
        .state
        .lock()
        .map(|mut s| {
            s.failures += 1;
            s.failures
        })
        .unwrap_or(0);
    let max = shared.cfg.max_host_exceptions;
    if max > 0 && failures as usize >= max {
        queue.close("host_failing");
    }
}

/// The robots.txt rules of `url`'s origin, fetched on first use (politely, with a
/// connection permit). `None` when the time limit passed while waiting.
async fn robots_for(shared: &Shared, queue: &HostQueue, url: &url::Url) -> Option<Arc<Robots>> {
    let origin = origin_of(url);
    let mut cache = queue.robots.lock().await;
    if let Some(r) = cache.get(&origin) {
        return Some(r.clone());
    }
    let (robots, rec) = shared
        .before_deadline(Box::pin(async {
            wait_until(queue.next_start()).await;
            let _permit = shared.permits.acquire().await.ok();
            let r =
                fetch_robots(&shared.http, &origin, &queue.host, &shared.cfg.robots_agent).await;
            queue.finished_request(None);
            r
        }))
        .await?;
    if rec.reason == "dns_failure" {
        // The host does not resolve: say so rather than "robots unavailable".
        queue.close("dns_failure");
    }
    if let Some(cd) = robots.crawl_delay() {
        if cd.as_secs_f64() > shared.cfg.max_crawl_delay {
            queue.close("crawl_delay_too_long");
        } else if let Ok(mut s) = queue.state.lock()
            && cd > s.delay
        {
            // The robots request itself was followed by the old delay; extend.
            let extra = cd - s.delay;
            s.next_start += extra;
            s.delay = cd;
        }
    }
    if let Ok(mut log) = shared.robots_log.lock() {
        log.push(rec);
    }
    let robots = Arc::new(robots);
    cache.insert(origin, robots.clone());
    Some(robots)
}
