//! The hostdb's rows as the other stages read them: generate's back-off of failing
//! hosts and its per-host caps, the report's and readhostdb's rows. Below the stages,
//! so that generate reads the hostdb without importing the hostdb stage (which reads
//! segments, sitemaps and merged segments' provenance: above the crawldb).

use std::collections::HashMap;

use crate::datum::Millis;
use crate::error::Result;
use crate::records::HostRecord;
use crate::store::integrity::{self, Check};
use crate::store::layout::CrawlDir;
use crate::store::names::VersionedDb;
use crate::store::parquet;

/// Every row of the current hostdb (empty without one).
pub fn read_all(dir: &CrawlDir) -> Result<Vec<HostRecord>> {
    let cur = dir.versioned(VersionedDb::HostDb).current();
    if !parquet::dataset_complete(&cur) {
        return Ok(Vec::new());
    }
    integrity::verify(&cur, Check::Sizes)?;
    parquet::read_dataset(&cur)
}

/// Hosts to leave out of a fetch list: `max_failures` or more consecutive failures,
/// the last less than `backoff_ms` before `now` (none when `max_failures` is 0).
pub fn backed_off_hosts(
    dir: &CrawlDir,
    max_failures: usize,
    backoff_ms: i64,
    now: Millis,
) -> Result<std::collections::HashSet<String>> {
    if max_failures == 0 {
        return Ok(Default::default());
    }
    Ok(read_all(dir)?
        .into_iter()
        .filter(|h| {
            h.consecutive_failures >= max_failures as i64
                && h.last_failure_time
                    .is_some_and(|t| now.saturating_sub(t) < backoff_ms)
        })
        .map(|h| h.host)
        .collect())
}

/// Per-host caps for a fetch list: `budget_secs / (delay + mean response time)` URLs
/// (at least 1), the delay being `delay_secs` raised by the host's Crawl-delay; hosts
/// without a measured response time are not capped. Empty when `budget_secs` is 0.
pub fn host_caps(
    dir: &CrawlDir,
    budget_secs: f64,
    delay_secs: f64,
) -> Result<HashMap<String, usize>> {
    if budget_secs <= 0.0 {
        return Ok(HashMap::new());
    }
    Ok(read_all(dir)?
        .into_iter()
        .filter_map(|h| {
            let avg = h.avg_response_ms? / 1000.0;
            let per_url = delay_secs.max(h.robots_crawl_delay.unwrap_or(0.0)) + avg;
            (per_url > 0.0).then(|| (h.host, ((budget_secs / per_url).floor() as usize).max(1)))
        })
        .collect())
}
