//! The workers that drain the politeness queues. Every queue gets
//! `fetch.per_host_connections` worker tasks and as many request slots. A request
//! takes a slot of its queue, waits until the queue's next allowed start (the end of
//! the previous request plus the delay, raised by Crawl-delay or Retry-After, or the
//! adaptive delay), then takes a permit of the global `fetch.max_connections`
//! semaphore (FIFO, so queues interleave and a big one never starves the others),
//! fetches, releases the permit. Only requests whose queue is ready wait for permits,
//! so capacity is never idle while a queue has work due.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;

use crate::crawldb::state::REASON_TIME_LIMIT;
use crate::datum::FetchStatus;
use crate::fetch::origins::robots_for;
use crate::fetch::page::{FetchItem, fetch_page};
use crate::fetch::queues::{HostQueue, lock};
use crate::fetch::redirects::follow;
use crate::fetch::state::{Progress, Shared};
use crate::fetch::writer::Output;
use crate::net::outcome::HostSignal;
use crate::net::robots::Robots;

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

/// One worker: takes the queue's jobs until none is left (or the run is aborted).
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

/// Runs one request through `queue`'s politeness gate: a slot of the queue, its next
/// allowed start, a global permit; then records the request's end (and the wait a
/// Retry-After asks for). `None` when the request was cut: by the time limit at any
/// point, by a stop ([`Shared::stop_early`], [`Shared::interrupt`]) before it was
/// sent (a request in flight is finished and keeps its real outcome), or in flight
/// when a signal's grace period is over ([`Shared::cut_in_flight`]).
pub(super) async fn gated<T, F, Fut>(shared: &Shared, queue: &HostQueue, request: F) -> Option<T>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = (T, Option<Duration>)>,
{
    // Whatever happens from here (cut, stopped, or this future dropped mid-request by
    // a render that ended), the queue keeps its distance from now.
    let mut finish = Finish {
        queue,
        cfg: &shared.cfg,
        armed: true,
    };
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
        // The last check before a request is sent: a task whose leases ran out
        // (its process was held up) sends nothing more.
        Some(_) if shared.lease_lost() => None,
        Some(_held) => {
            let started = Instant::now();
            let r = shared.before_deadline(request(), false).await;
            if let Some((_, extra_wait)) = &r {
                finish.armed = false;
                queue.finished_request(*extra_wait, Some(started.elapsed()), &shared.cfg);
            }
            r.map(|(t, _)| t)
        }
        None => None,
    };
    // Cut: nothing more is sent, but the distance is kept anyway (`finish` drops).
    r
}

/// Records the end of a gated request that did not end normally (cut, or its future
/// dropped): the queue's next start is then a delay from now.
struct Finish<'a> {
    queue: &'a HostQueue,
    cfg: &'a crate::config::FetchConfig,
    armed: bool,
}

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.queue.finished_request(None, None, self.cfg);
        }
    }
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
pub(super) async fn handle(shared: &Shared, queue: &HostQueue, item: &FetchItem) -> Output {
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
    let Some((mut out, signal)) = fetched else {
        // Cut by the time limit or a stop: the request counts as not attempted.
        return not_attempted(shared, item);
    };
    if let (Some(renderer), Some(content)) = (&shared.render, out.content.as_mut())
        && renderer.wants(content)
    {
        // Its subresources go through the queues' gates: the page's slot is free. Cut
        // like a request in flight: at the time limit, or a signal's grace period.
        let done = shared
            .before_deadline(renderer.render(shared, content), false)
            .await;
        if done.is_none() {
            renderer.cut(content);
        }
    }
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

/// Applies what a response says about its host to its queue (failures counted,
/// a host that does not resolve or asks to wait too long closed).
pub(super) fn apply_signal(shared: &Shared, queue: &HostQueue, host: &str, signal: HostSignal) {
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

/// Counts a failure of the queue; `fetch.max_host_exceptions` in a row close it.
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
