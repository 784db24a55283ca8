//! Politeness queues and the scheduler.
//!
//! A queue holds the URLs of one host (`fetch.queue_mode = "host"`, the default), one
//! registrable domain (`"domain"`) or one resolved IP address (`"ip"`). Every queue
//! gets `fetch.per_host_connections` worker tasks and as many request slots. A
//! request takes a slot of its queue, waits until the queue's next allowed start (the
//! end of the previous request plus the delay, raised by Crawl-delay or Retry-After, or
//! the adaptive delay), then takes a permit of the global `fetch.max_connections`
//! semaphore (FIFO, so queues interleave and a big one never starves the others),
//! fetches, releases the permit. Only requests whose queue is ready wait for permits,
//! so capacity is never idle while a queue has work due.
//!
//! Redirects followed inline (`fetch.follow_redirects`) go through the target's queue
//! the same way: a target in the same queue is fetched by the worker at once (after
//! the queue's delay); a target in another queue is handed to that queue (at its
//! front, workers started if it has none) and the worker goes on with its own queue,
//! so no worker sits idle waiting for another host's delay.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{Semaphore, mpsc};
use tokio::time::Instant;

use crate::config::FetchConfig;
use crate::crawldb::state::{REASON_INTERRUPTED, REASON_THROUGHPUT_LIMIT, REASON_TIME_LIMIT};
use crate::datum::FetchStatus;
use crate::fetch::client::Http;
use crate::fetch::hostpattern::HostPatterns;
use crate::fetch::outcome::{HostSignal, connect_failure, network_reason};
use crate::fetch::page::{FetchItem, fetch_page};
use crate::fetch::resolve::Resolver;
use crate::fetch::robots::{Robots, RobotsRecord, fetch_robots, origin_of};
use crate::fetch::robots_cache::CacheEntry;
use crate::fetch::writer::Output;
use crate::urls::UrlPolicy;

/// Reason of a followed redirect whose target was already in its chain.
pub const REASON_REDIRECT_LOOP: &str = "redirect_loop";
/// Reason of a redirect not followed because `fetch.follow_redirects` hops were taken.
pub const REASON_TOO_MANY_REDIRECTS: &str = "too_many_redirects";

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

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

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
    /// Queues not finished yet.
    pub active_hosts: AtomicUsize,
    /// Requests waiting for their queue's next allowed start (politeness delay).
    pub waiting: AtomicUsize,
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
    /// How URLs are grouped into queues.
    pub mode: QueueMode,
    /// Every queue by key (queues of redirect targets on new hosts are added on the way).
    pub queues: Mutex<HashMap<String, Arc<HostQueue>>>,
    /// When the previous fetch run's last request ended (ms), for politeness across
    /// runs (see [`crate::fetch::wait_since`]).
    pub last_end: Option<i64>,
    /// `fetch.delays`: per-queue delays replacing `fetch.delay`.
    pub delays: HostPatterns<f64>,
    /// Still-fresh robots.txt of earlier runs, by origin (`fetch.robots_cache_ttl`).
    pub robots_cache: HashMap<String, CacheEntry>,
    /// robots.txt fetched in this run, by origin, for the robots cache.
    pub robots_fetched: Mutex<HashMap<String, CacheEntry>>,
    /// URLs that have or will get a crawl_fetch row (the fetch list and followed
    /// targets); filled only when redirects are followed.
    pub claimed: Mutex<HashSet<String>>,
    /// crawl_fetch rows of followed redirect targets.
    pub followed: AtomicU64,
    /// Set by [`Shared::stop_early`] (throughput below `fetch.min_throughput`).
    pub stopped: AtomicBool,
    /// Wakes the requests waiting for their queue when the run is stopped.
    pub stop: tokio::sync::Notify,
    /// Worker tasks started and not yet awaited (see [`spawn_workers`], [`join_workers`]).
    pub tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    /// Set by [`Shared::interrupt`] (SIGINT or SIGTERM): like `stopped`, with reason
    /// `interrupted`.
    pub interrupted: AtomicBool,
    /// Set by [`Shared::cut_in_flight`]: requests in flight are cut too.
    pub cut: AtomicBool,
    /// Wakes the requests in flight when they are cut.
    pub cut_notify: tokio::sync::Notify,
    /// Set when some server was reached (any response, robots.txt included, or a
    /// failure after connecting, like a TLS handshake error).
    pub reached: AtomicBool,
    /// Hosts a request to which failed to connect (or resolve): host -> (reason, the
    /// port of the URL), see [`connect_failure`].
    pub unreached: Mutex<BTreeMap<String, (&'static str, u16)>>,
}

impl Shared {
    /// Why no more requests start, if they do not: a signal stopped the run
    /// (`interrupted`), it was stopped for low throughput (`throughput_limit`), or the
    /// time limit passed (`time_limit`).
    fn stop_reason(&self) -> Option<&'static str> {
        if self.interrupted.load(Ordering::Relaxed) {
            Some(REASON_INTERRUPTED)
        } else if self.stopped.load(Ordering::Relaxed) {
            Some(REASON_THROUGHPUT_LIMIT)
        } else if self.deadline.is_some_and(|d| Instant::now() >= d) {
            Some(REASON_TIME_LIMIT)
        } else {
            None
        }
    }

    /// Stops the run early: no request starts from now on, and requests waiting for
    /// their queue are woken and recorded as not attempted.
    pub fn stop_early(&self) {
        self.stopped.store(true, Ordering::Relaxed);
        self.stop.notify_waiters();
    }

    /// Stops the run for a signal: like [`Shared::stop_early`], the URLs not yet
    /// attempted recorded with reason `interrupted`.
    pub fn interrupt(&self) {
        self.interrupted.store(true, Ordering::Relaxed);
        self.stop_early();
    }

    /// Cuts the requests still in flight (the grace period after a signal is over):
    /// they end at once and are recorded as not attempted.
    pub fn cut_in_flight(&self) {
        self.cut.store(true, Ordering::Relaxed);
        self.cut_notify.notify_waiters();
    }

    /// Records what one request (a page or a robots.txt) says about its server:
    /// `reason` of a request that got no response (`None` when one arrived).
    fn record_contact(&self, url: &url::Url, host: &str, failure: Option<&str>) {
        let Some(failure) = failure else {
            self.reached.store(true, Ordering::Relaxed);
            return;
        };
        match network_reason(failure) {
            Some(reason) if connect_failure(reason) => {
                let port = url.port_or_known_default().unwrap_or(0);
                lock(&self.unreached)
                    .entry(host.to_string())
                    .or_insert((reason, port));
            }
            // Connected, then failed (TLS handshake, body): a server is there.
            Some(_) => self.reached.store(true, Ordering::Relaxed),
            // No request was made (an origin that does not parse).
            None => {}
        }
    }

    /// Runs `fut` unless the deadline passes first, or the run is stopped first
    /// (`stoppable`: a wait before a request) or its requests in flight are cut
    /// (not `stoppable`: a request, cut only after a signal's grace period).
    async fn before_deadline<F: std::future::Future>(
        &self,
        fut: F,
        stoppable: bool,
    ) -> Option<F::Output> {
        if stoppable && self.stopped.load(Ordering::Relaxed) {
            return None;
        }
        let stopped = async {
            let (notify, flag) = if stoppable {
                (&self.stop, &self.stopped)
            } else {
                (&self.cut_notify, &self.cut)
            };
            let notified = notify.notified();
            tokio::pin!(notified);
            // Registered before the flag is read again, so a stop in between still
            // wakes us.
            notified.as_mut().enable();
            if !flag.load(Ordering::Relaxed) {
                notified.await;
            }
        };
        let deadline = async {
            match self.deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            r = fut => Some(r),
            _ = stopped => None,
            _ = deadline => None,
        }
    }

    /// Claims `url` for a row of its own; false when it already has one (it is in the
    /// fetch list or was reached by another redirect).
    fn claim(&self, url: &str) -> bool {
        lock(&self.claimed).insert(url.to_string())
    }

    /// The queue of `host`, created (empty, without workers) when new.
    async fn queue_for(&self, host: &str) -> Arc<HostQueue> {
        let key = queue_key(self.mode, self.http.resolver(), host).await;
        let mut qs = lock(&self.queues);
        qs.entry(key.clone())
            .or_insert_with(|| Arc::new(self.new_queue(key, VecDeque::new())))
            .clone()
    }

    /// A queue named `key` with its URLs: its delay is its `fetch.delays` entry or
    /// `fetch.delay`, and its first request keeps that distance from the previous
    /// run's last one.
    pub fn new_queue(&self, key: String, items: VecDeque<FetchItem>) -> HostQueue {
        let delay = self.delays.get(&key).copied().unwrap_or(self.cfg.delay);
        let first_wait = crate::fetch::wait_since(self.last_end, delay, crate::datum::now_millis());
        HostQueue::new(key, items, &self.cfg, delay, first_wait)
    }

    /// Sends a row to the writer; `listed` rows (fetch-list URLs) advance the progress.
    async fn emit(&self, out: Output, listed: bool) {
        let p = &self.progress;
        if listed {
            p.done.fetch_add(1, Ordering::Relaxed);
        }
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

/// Mutable state of one queue.
struct HostState {
    /// Earliest start of the next request.
    next_start: Instant,
    /// Delay between requests (config delay, raised by Crawl-delay).
    delay: Duration,
    /// The largest robots.txt Crawl-delay seen in this queue (floor of the adaptive delay).
    crawl_delay: Duration,
    /// Consecutive failures.
    failures: u32,
    /// Once set, every remaining URL is recorded fetch_retry with this reason.
    closed: Option<&'static str>,
    /// Hosts of the queue closed on their own (Crawl-delay too long, DNS failure).
    closed_hosts: HashMap<String, &'static str>,
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
struct Jobs {
    /// Redirect targets handed over by other queues: first in line (their chain
    /// already waited its turn once).
    redirected: VecDeque<Job>,
    /// The queue's fetch-list URLs, in fetch-list order.
    listed: VecDeque<FetchItem>,
    workers: usize,
}

/// One politeness queue.
pub struct HostQueue {
    key: String,
    jobs: Mutex<Jobs>,
    state: Mutex<HostState>,
    /// Per origin: its robots.txt and, when unavailable, the reason its URLs get.
    robots: tokio::sync::Mutex<HashMap<String, (Arc<Robots>, &'static str)>>,
    slots: Semaphore,
    connections: usize,
}

impl HostQueue {
    /// A queue named `key` with its URLs, `delay_secs` apart; its first request may
    /// start after `first_wait` (see [`crate::fetch::wait_since`]).
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
    fn next_job(&self, stop: bool, progress: &Progress) -> Option<Job> {
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
    fn closed_for(&self, host: &str) -> Option<&'static str> {
        let s = lock(&self.state);
        s.closed.or_else(|| s.closed_hosts.get(host).copied())
    }

    /// Closes the whole queue.
    fn close(&self, reason: &'static str) {
        let mut s = lock(&self.state);
        if s.closed.is_none() {
            tracing::info!("queue {}: remaining URLs skipped ({reason})", self.key);
            s.closed = Some(reason);
        }
    }

    /// Closes one host of the queue (the whole queue in host mode).
    fn close_host(&self, host: &str, reason: &'static str) {
        let mut s = lock(&self.state);
        if !s.closed_hosts.contains_key(host) {
            tracing::info!("host {host}: remaining URLs skipped ({reason})");
            s.closed_hosts.insert(host.to_string(), reason);
        }
    }

    fn next_start(&self) -> Instant {
        lock(&self.state).next_start
    }

    /// Records the end of a request that took `response_time` (`None`: cut short):
    /// the next may start after the delay (the adaptive one when enabled), or after
    /// `extra_wait` if longer.
    fn finished_request(
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

/// Starts `fetch.per_host_connections` workers on `queue` if it has none running
/// (their handles go to [`Shared::tasks`]).
pub fn spawn_workers(shared: &Arc<Shared>, queue: &Arc<HostQueue>) {
    let n = {
        let mut jobs = lock(&queue.jobs);
        if jobs.workers > 0 {
            return;
        }
        jobs.workers = queue.connections;
        shared.progress.active_hosts.fetch_add(1, Ordering::Relaxed);
        queue.connections
    };
    let mut tasks = lock(&shared.tasks);
    for _ in 0..n {
        let shared = shared.clone();
        let queue = queue.clone();
        tasks.push(tokio::spawn(async move { worker(&shared, &queue).await }));
    }
}

/// Hands a redirect target to its queue: first in line (it continues a chain that
/// already waited its turn), with workers started if the queue has none.
fn push_redirect(shared: &Arc<Shared>, queue: &Arc<HostQueue>, job: Job) {
    lock(&queue.jobs).redirected.push_back(job);
    spawn_workers(shared, queue);
}

/// Awaits every worker, including those started while waiting (queues of redirect
/// targets). Returns false if a worker panicked.
pub async fn join_workers(shared: &Shared) -> bool {
    let mut ok = true;
    loop {
        // A worker is started only by a running worker (or before this call), so
        // once every known handle has ended and no new one appeared, all are done.
        let tasks = std::mem::take(&mut *lock(&shared.tasks));
        if tasks.is_empty() {
            return ok;
        }
        for t in tasks {
            if let Err(e) = t.await {
                tracing::error!("a host worker failed: {e}");
                ok = false;
            }
        }
    }
}

async fn worker(shared: &Arc<Shared>, queue: &Arc<HostQueue>) {
    while let Some(job) = queue.next_job(shared.aborted.load(Ordering::Relaxed), &shared.progress) {
        let out = Box::pin(handle(shared, queue, &job.item)).await;
        let last = if shared.cfg.follow_redirects > 0 {
            Box::pin(follow(shared, queue, job, out)).await
        } else {
            Some(out)
        };
        if let Some(out) = last {
            shared.emit(out, true).await;
        }
    }
}

/// Follows the redirect `out` records (if any) inline, up to `fetch.follow_redirects`
/// hops from the fetch-list URL: every intermediate row is emitted, the last one is
/// returned. A target in `queue` is fetched here; a target in another queue is handed
/// to it ([`push_redirect`]) and `None` is returned (that queue's worker emits the
/// chain's last row). A target already in the chain ends it with reason
/// `redirect_loop`, one more hop than allowed with `too_many_redirects` (both keep
/// their status and target, so updatedb adds the target); a target that has a row of
/// its own (fetch list, another chain) is not fetched again.
async fn follow(
    shared: &Arc<Shared>,
    queue: &Arc<HostQueue>,
    job: Job,
    mut out: Output,
) -> Option<Output> {
    let Job {
        item: first,
        mut via,
    } = job;
    via.push(first.url.to_string());
    let chain = &mut via;
    loop {
        if !matches!(
            out.record.status,
            FetchStatus::FetchRedirTemp | FetchStatus::FetchRedirPerm
        ) {
            return Some(out);
        }
        let Some(target) = out.record.redirect_target.clone() else {
            return Some(out);
        };
        if chain.contains(&target) {
            out.record.reason = REASON_REDIRECT_LOOP.to_string();
            return Some(out);
        }
        if chain.len() > shared.cfg.follow_redirects {
            out.record.reason = REASON_TOO_MANY_REDIRECTS.to_string();
            return Some(out);
        }
        if shared.aborted.load(Ordering::Relaxed) || !shared.claim(&target) {
            return Some(out);
        }
        let item = FetchItem::redirect_target(&target, &first);
        let target_queue = shared.queue_for(&item.host).await;
        shared.followed.fetch_add(1, Ordering::Relaxed);
        shared.emit(out, false).await;
        if !Arc::ptr_eq(&target_queue, queue) {
            let via = std::mem::take(chain);
            push_redirect(shared, &target_queue, Job { item, via });
            return None;
        }
        chain.push(target);
        out = Box::pin(handle(shared, queue, &item)).await;
    }
}

/// Runs one request through `queue`'s politeness gate: a slot of the queue, its next
/// allowed start, a global permit; then records the request's end (and the wait a
/// Retry-After asks for). `None` when the request was cut: by the time limit at any
/// point, by a stop ([`Shared::stop_early`], [`Shared::interrupt`]) before it was
/// sent (a request in flight is finished and keeps its real outcome), or in flight
/// when a signal's grace period is over ([`Shared::cut_in_flight`]).
async fn gated<T, F, Fut>(shared: &Shared, queue: &HostQueue, request: F) -> Option<T>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = (T, Option<Duration>)>,
{
    let ready = shared
        .before_deadline(
            Box::pin(async {
                let slot = queue.slots.acquire().await.ok();
                let at = queue.next_start();
                if at > Instant::now() {
                    let _waiting = Waiting::new(&shared.progress);
                    tokio::time::sleep_until(at).await;
                }
                let permit = shared.permits.acquire().await.ok();
                (slot, permit)
            }),
            true,
        )
        .await;
    let r = match ready {
        Some(_held) => {
            let started = Instant::now();
            let r = shared.before_deadline(request(), false).await;
            if let Some((_, extra_wait)) = &r {
                queue.finished_request(*extra_wait, Some(started.elapsed()), &shared.cfg);
            }
            r.map(|(t, _)| t)
        }
        None => None,
    };
    if r.is_none() {
        // Cut: nothing more is sent, but keep the distance anyway.
        queue.finished_request(None, None, &shared.cfg);
    }
    r
}

/// Counts a request waiting for its queue's next allowed start while it lives (also
/// when the wait is cut).
struct Waiting<'a>(&'a Progress);

impl<'a> Waiting<'a> {
    fn new(p: &'a Progress) -> Self {
        p.waiting.fetch_add(1, Ordering::Relaxed);
        Waiting(p)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Decides the fate of one URL and fetches it if it may be fetched.
async fn handle(shared: &Shared, queue: &HostQueue, item: &FetchItem) -> Output {
    if let Some(reason) = queue.closed_for(&item.host) {
        return item.without_response(FetchStatus::FetchRetry, reason);
    }
    if let Some(reason) = shared.stop_reason() {
        return item.without_response(FetchStatus::FetchRetry, reason);
    }
    let url = match url::Url::parse(&item.url) {
        Ok(u) if u.host_str().is_some() => u,
        _ => return item.without_response(FetchStatus::FetchGone, "invalid_url"),
    };
    if shared.cfg.respect_robots {
        let Some((robots, unavailable)) = robots_for(shared, queue, &url, &item.host).await else {
            return not_attempted(shared, item);
        };
        if let Some(reason) = queue.closed_for(&item.host) {
            return item.without_response(FetchStatus::FetchRetry, reason);
        }
        if matches!(*robots, Robots::Unavailable) {
            return item.without_response(FetchStatus::FetchRetry, unavailable);
        }
        if !robots.allowed(url.as_str()) {
            return item.without_response(FetchStatus::FetchGone, "robots_denied");
        }
    }
    let fetched = gated(shared, queue, || async {
        let cap = shared.cfg.max_content_bytes;
        let r = fetch_page(&shared.http, &shared.policy, item, &url, cap).await;
        let extra = match r.1 {
            HostSignal::RetryAfter(d) => Some(d),
            _ => None,
        };
        (r, extra)
    })
    .await;
    let Some((out, signal)) = fetched else {
        // Cut by the time limit or a stop: the request counts as not attempted.
        return not_attempted(shared, item);
    };
    let failure = out
        .record
        .http_status
        .is_none()
        .then_some(out.record.reason.as_str());
    shared.record_contact(&url, &item.host, failure);
    apply_signal(shared, queue, &item.host, signal);
    out
}

/// The row of a URL cut off by the time limit or a stop before its request started.
fn not_attempted(shared: &Shared, item: &FetchItem) -> Output {
    let reason = shared.stop_reason().unwrap_or(REASON_TIME_LIMIT);
    item.without_response(FetchStatus::FetchRetry, reason)
}

fn apply_signal(shared: &Shared, queue: &HostQueue, host: &str, signal: HostSignal) {
    match signal {
        HostSignal::Continue => lock(&queue.state).failures = 0,
        HostSignal::Failure => count_failure(shared, queue),
        HostSignal::DnsFailure => queue.close_host(host, "dns_failure"),
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
    let failures = {
        let mut s = lock(&queue.state);
        s.failures += 1;
        s.failures
    };
    let max = shared.cfg.max_host_exceptions;
    if max > 0 && failures as usize >= max {
        queue.close("host_failing");
    }
}

/// The robots.txt rules of `url`'s origin: from this run's queue, else from the
/// robots cache of earlier runs, else fetched (politely, through the queue's gate);
/// with the reason the origin's URLs get when it is unavailable: the network cause
/// when no response arrived (`connection_refused`, `timeout`, `tls_error`, ...),
/// else `robots_unavailable` (5xx, 429). `None` when the time limit passed (or the
/// run was stopped) while waiting.
async fn robots_for(
    shared: &Shared,
    queue: &HostQueue,
    url: &url::Url,
    host: &str,
) -> Option<(Arc<Robots>, &'static str)> {
    let origin = origin_of(url);
    let mut cache = queue.robots.lock().await;
    if let Some((r, reason)) = cache.get(&origin) {
        return Some((r.clone(), reason));
    }
    let agent = &shared.cfg.robots_agent;
    let (robots, rec, requested) = match shared.robots_cache.get(&origin) {
        Some(entry) => {
            tracing::debug!("robots.txt of {origin} from the robots cache");
            let (robots, rec) = entry.robots(agent);
            (robots, rec, false)
        }
        None => {
            let (robots, rec, body) = gated(shared, queue, || async {
                (fetch_robots(&shared.http, &origin, host, agent).await, None)
            })
            .await?;
            if shared.cfg.robots_cache_ttl > 0.0
                && let Some(e) = CacheEntry::new(&robots, &rec, body.as_deref())
            {
                lock(&shared.robots_fetched).insert(origin.clone(), e);
            }
            let failure = rec.http_status.is_none().then_some(rec.reason.as_str());
            shared.record_contact(url, host, failure);
            (robots, rec, true)
        }
    };
    let unavailable = match (&robots, rec.http_status) {
        (Robots::Unavailable, None) => network_reason(&rec.reason).unwrap_or("robots_unavailable"),
        _ => "robots_unavailable",
    };
    if rec.reason == "dns_failure" {
        // The host does not resolve: say so rather than "robots unavailable".
        queue.close_host(host, "dns_failure");
    }
    if let Some(cd) = robots.crawl_delay() {
        if cd.as_secs_f64() > shared.cfg.max_crawl_delay {
            queue.close_host(host, "crawl_delay_too_long");
        } else {
            let mut s = lock(&queue.state);
            s.crawl_delay = s.crawl_delay.max(cd);
            s.delay = s.delay.max(cd);
            if requested {
                // The robots request itself was followed by the old delay; extend.
                let at = Instant::now() + cd;
                s.next_start = s.next_start.max(at);
            }
        }
    }
    lock(&shared.robots_log).push(rec);
    let robots = Arc::new(robots);
    cache.insert(origin, (robots.clone(), unavailable));
    Some((robots, unavailable))
}
