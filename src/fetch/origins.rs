//! robots.txt per origin during a fetch run: from the queue, the robots cache of
//! earlier runs, or fetched through the queue's politeness gate ([`crate::net::robots`]
//! parses and fetches it).

use std::sync::Arc;

use tokio::time::Instant;

use crate::fetch::checkpoint::RobotsEntry;
use crate::fetch::queues::{HostQueue, lock};
use crate::fetch::state::Shared;
use crate::fetch::worker::gated;
use crate::fetch::writer::Msg;
use crate::net::outcome::network_reason;
use crate::net::robots::{Robots, fetch_robots, origin_of};
use crate::net::robots_cache::CacheEntry;

/// The robots.txt rules of `url`'s origin: from this run's queue, else from the
/// robots cache of earlier runs, else fetched (politely, through the queue's gate);
/// with the reason the origin's URLs get when it is unavailable: the network cause
/// when no response arrived (`connection_refused`, `timeout`, `tls_error`, ...),
/// else `robots_unavailable` (5xx, 429). `None` when the time limit passed (or the
/// run was stopped) while waiting.
pub(super) async fn robots_for(
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
    let (robots, rec, entry, requested) = match shared.robots_cache.get(&origin) {
        Some(entry) => {
            tracing::debug!("robots.txt of {origin} from the robots cache");
            let (robots, rec) = entry.robots(agent);
            (robots, rec, Some(entry.clone()), false)
        }
        None => {
            let (robots, rec, body) = gated(shared, queue, || async {
                (fetch_robots(&shared.http, &origin, host, agent).await, None)
            })
            .await?;
            let entry = CacheEntry::new(&robots, &rec, body.as_deref());
            if shared.cfg.robots_cache_ttl > 0.0
                && let Some(e) = &entry
            {
                lock(&shared.robots_fetched).insert(origin.clone(), e.clone());
            }
            let failure = rec.http_status.is_none().then_some(rec.reason.as_str());
            shared.record_contact(url, host, failure);
            (robots, rec, entry, true)
        }
    };
    // For the checkpoints: a resumed run reuses it instead of asking again.
    shared
        .send(Msg::Robots(Box::new(RobotsEntry {
            record: rec.clone(),
            cache: entry,
        })))
        .await;
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
