//! The throughput floor (`fetch.min_throughput`, Nutch's
//! `fetcher.throughput.threshold.pages`): a fetch run whose last fetch-list URLs
//! crawl along behind a few slow hosts (long Crawl-delays, trickling servers) is
//! stopped, and the URLs left stay due for the next round.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::fetch::state::Shared;

/// Watches the URLs finished per window and stops the run ([`Shared::stop_early`])
/// at the end of the first whole `fetch.min_throughput_window` (after
/// `fetch.min_throughput_after`) whose rate is below `fetch.min_throughput`. Returns
/// when it stopped the run or every one of the `total` fetch-list URLs is done.
pub async fn watch(shared: Arc<Shared>, total: u64) {
    let cfg = &shared.cfg;
    let floor = cfg.min_throughput;
    let window = Duration::from_secs_f64(cfg.min_throughput_window);
    tokio::time::sleep(Duration::from_secs_f64(cfg.min_throughput_after)).await;
    let done = || shared.progress.done.load(Ordering::Relaxed);
    loop {
        let before = done();
        if before >= total {
            return;
        }
        tokio::time::sleep(window).await;
        let after = done();
        if after >= total {
            return;
        }
        let rate = (after - before) as f64 / window.as_secs_f64();
        if rate < floor {
            tracing::warn!(
                "throughput {rate:.2} URLs/s over the last {:.0} s is below fetch.min_throughput = {floor}: stopping; the {} URLs left stay due (reason throughput_limit)",
                window.as_secs_f64(),
                total - after
            );
            shared.stop_early();
            return;
        }
    }
}
