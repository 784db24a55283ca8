//! The run state the workers of one fetch run share: the client, the settings, the
//! writer's channel, the global connection permits, the queues, the robots.txt
//! seen, the stop flags (time limit, low throughput, signals) and the counters.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{Semaphore, mpsc};
use tokio::time::Instant;

use crate::config::FetchConfig;
use crate::crawldb::state::{REASON_INTERRUPTED, REASON_THROUGHPUT_LIMIT, REASON_TIME_LIMIT};
use crate::datum::FetchStatus;
use crate::fetch::page::FetchItem;
use crate::fetch::queues::{HostQueue, QueueMode, lock, queue_key};
use crate::fetch::writer::{Msg, Output};
use crate::net::client::Http;
use crate::net::outcome::{connect_failure, network_reason};
use crate::net::politeness::Politeness;
use crate::net::robots::RobotsRecord;
use crate::net::robots_cache::CacheEntry;
use crate::store::partition::Partitioner;
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
    /// Queues not finished yet.
    pub active_hosts: AtomicUsize,
    /// Requests waiting for their queue's next allowed start (politeness delay).
    pub waiting: AtomicUsize,
    /// Per host: URLs done, pages, summed response time and responses (status.json).
    pub hosts: Mutex<HashMap<String, HostProgress>>,
    /// `fetch_retry` rows by reason (status.json).
    pub reasons: Mutex<BTreeMap<String, u64>>,
}

/// One host's share of the progress.
#[derive(Debug, Default, Clone)]
pub struct HostProgress {
    /// Rows emitted (fetch-list URLs and followed redirects).
    pub done: u64,
    /// Pages fetched (2xx).
    pub pages: u64,
    /// Responses with a measured time.
    pub responses: u64,
    /// Their summed time (ms).
    pub response_ms: u64,
}

/// Everything the workers share.
pub struct Shared {
    /// The HTTP client.
    pub http: Http,
    /// URL policy for redirect targets.
    pub policy: UrlPolicy,
    /// `[fetch]`.
    pub cfg: FetchConfig,
    /// Results (and robots.txt decisions, for the checkpoints) go here.
    pub tx: mpsc::Sender<Msg>,
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
    /// Per-queue delays (`fetch.delays`) and the distance to the previous run's last
    /// request (`fetch.last_end`).
    pub politeness: Politeness,
    /// Still-fresh robots.txt of earlier runs, by origin (`fetch.robots_cache_ttl`).
    pub robots_cache: HashMap<String, CacheEntry>,
    /// robots.txt fetched in this run, by origin, for the robots cache.
    pub robots_fetched: Mutex<HashMap<String, CacheEntry>>,
    /// URLs that have or will get a crawl_fetch row (the fetch list and followed
    /// targets); filled only when redirects are followed.
    pub claimed: Mutex<HashSet<String>>,
    /// The partitions this task fetches, of how many (`None`: every partition): a
    /// redirect to a host of another partition is recorded, not followed, since
    /// another task may be fetching that host.
    pub own: Option<(HashSet<usize>, Partitioner)>,
    /// crawl_fetch rows of followed redirect targets.
    pub followed: AtomicU64,
    /// Set by [`Shared::stop_early`] (throughput below `fetch.min_throughput`).
    pub stopped: AtomicBool,
    /// Wakes the requests waiting for their queue when the run is stopped.
    pub stop: tokio::sync::Notify,
    /// Worker tasks started and not yet awaited (see [`super::worker::spawn_workers`], [`super::worker::join_workers`]).
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
    /// The browser of `[fetch.render]`, when some host is rendered.
    pub render: Option<super::render::Renderer>,
    /// The check of this task's leases before each request
    /// ([`crate::store::lease::Heartbeat::fence`]); `None`: no heartbeat. A clone
    /// stays with the task, which must not keep [`Shared`] itself (its result channel
    /// closes when the workers drop it).
    pub fence: Option<crate::store::lease::Fence>,
}

impl Shared {
    /// Why no more requests start, if they do not: a signal stopped the run
    /// (`interrupted`), it was stopped for low throughput (`throughput_limit`), or the
    /// time limit passed (`time_limit`).
    pub(super) fn stop_reason(&self) -> Option<&'static str> {
        if self.lease_lost() {
            return Some(REASON_INTERRUPTED);
        }
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

    /// Whether this task's leases ran out (fencing): past their safe point another
    /// attempt may take the hosts over, so no request may start (and the run fails).
    pub(super) fn lease_lost(&self) -> bool {
        self.fence.as_ref().is_some_and(|f| !f.holds())
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
    pub(super) fn record_contact(&self, url: &url::Url, host: &str, failure: Option<&str>) {
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
    pub(super) async fn before_deadline<F: std::future::Future>(
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
    pub(super) fn claim(&self, url: &str) -> bool {
        if let Some((own, pt)) = &self.own
            && !own.contains(&pt.of_url(url))
        {
            return false;
        }
        lock(&self.claimed).insert(url.to_string())
    }

    /// The queue of `host`, created (empty, without workers) when new.
    pub(super) async fn queue_for(&self, host: &str) -> Arc<HostQueue> {
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
        let delay = self.politeness.delay_secs(&key);
        let first_wait = self.politeness.first_wait(delay);
        HostQueue::new(key, items, &self.cfg, delay, first_wait)
    }

    /// Sends a row to the writer; `listed` rows (fetch-list URLs) advance the progress.
    pub(super) async fn emit(&self, out: Output, listed: bool) {
        let p = &self.progress;
        if listed {
            p.done.fetch_add(1, Ordering::Relaxed);
        }
        if out.record.status == FetchStatus::FetchRetry {
            p.errors.fetch_add(1, Ordering::Relaxed);
            if let Ok(mut r) = p.reasons.lock() {
                *r.entry(out.record.reason.clone()).or_default() += 1;
            }
        }
        if let Ok(mut hosts) = p.hosts.lock() {
            let h = hosts.entry(out.record.host.clone()).or_default();
            h.done += 1;
            h.pages += u64::from(out.content.is_some());
            if let (Some(ms), Some(_)) = (out.record.response_time_ms, out.record.http_status) {
                h.responses += 1;
                h.response_ms += ms.max(0) as u64;
            }
        }
        if let Some(c) = &out.content {
            p.pages.fetch_add(1, Ordering::Relaxed);
            p.bytes.fetch_add(c.content.len() as u64, Ordering::Relaxed);
        }
        self.send(Msg::Row(out)).await;
    }

    /// Sends `msg` to the writer; a writer gone (it failed) aborts the run.
    pub(super) async fn send(&self, msg: Msg) {
        if self.tx.send(msg).await.is_err() {
            self.aborted.store(true, Ordering::Relaxed);
        }
    }
}
