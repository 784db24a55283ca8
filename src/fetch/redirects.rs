//! Redirects followed inline (`fetch.follow_redirects`): a target in the same queue
//! is fetched by the worker at once (after the queue's delay); a target in another
//! queue is handed to that queue (at its front, workers started if it has none) and
//! the worker goes on with its own queue, so no worker sits idle waiting for another
//! host's delay.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::datum::FetchStatus;
use crate::fetch::page::FetchItem;
use crate::fetch::queues::{HostQueue, Job, lock};
use crate::fetch::state::Shared;
use crate::fetch::worker::{handle, spawn_workers};
use crate::fetch::writer::Output;

/// Reason of a followed redirect whose target was already in its chain.
pub const REASON_REDIRECT_LOOP: &str = "redirect_loop";
/// Reason of a redirect not followed because `fetch.follow_redirects` hops were taken.
pub const REASON_TOO_MANY_REDIRECTS: &str = "too_many_redirects";

/// Follows the redirect `out` records (if any) inline, up to `fetch.follow_redirects`
/// hops from the fetch-list URL: every intermediate row is emitted, the last one is
/// returned. A target in `queue` is fetched here; a target in another queue is handed
/// to it ([`push_redirect`]) and `None` is returned (that queue's worker emits the
/// chain's last row). A target already in the chain ends it with reason
/// `redirect_loop`, one more hop than allowed with `too_many_redirects` (both keep
/// their status and target, so updatedb adds the target); a target that has a row of
/// its own (fetch list, another chain) is not fetched again.
pub(super) async fn follow(
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

/// Hands a redirect target to its queue: first in line (it continues a chain that
/// already waited its turn), with workers started if the queue has none.
fn push_redirect(shared: &Arc<Shared>, queue: &Arc<HostQueue>, job: Job) {
    lock(&queue.jobs).redirected.push_back(job);
    spawn_workers(shared, queue);
}
