//! Politeness timing shared by everything that sends requests: each host's delay
//! (`fetch.delay`, replaced per host by `fetch.delays`) and the distance kept to the
//! end of the last run across runs (the crawl directory's `fetch.last_end`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::FetchConfig;
use crate::error::Result;
use crate::net::hostpattern::HostPatterns;

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

/// A run's politeness timing: the per-host delays and when the last run ended.
#[derive(Debug, Clone)]
pub struct Politeness {
    /// `fetch.delay`: seconds between two requests to one host.
    delay: f64,
    /// `fetch.delays`: per-host (or per-queue) delays replacing `fetch.delay`.
    delays: HostPatterns<f64>,
    /// Where the end of this run is recorded: the crawl directory's `fetch.last_end`,
    /// or each fetched partition's (`fetch_state/<n>/p<i>/fetch.last_end`).
    last_end_files: Vec<PathBuf>,
    /// When the last run's last request ended (ms), read at the start of this run
    /// (the latest of the files read).
    last_end: Option<i64>,
}

impl Politeness {
    /// The timing of a run with settings `cfg`; `last_end_file` is where the end of
    /// the last request is kept between runs (the crawl directory's `fetch.last_end`).
    pub fn load(last_end_file: &Path, cfg: &FetchConfig) -> Self {
        Politeness::load_many(&[last_end_file.to_path_buf()], &[], cfg)
    }

    /// The timing of a run that records its end in each of `write` (a fetch task's
    /// partitions' `fetch.last_end`) and keeps its distance from the latest end
    /// recorded in `write` and `read_also` (the crawl directory's `fetch.last_end`,
    /// written by sitemap and by fetch runs before partitions had their own).
    pub fn load_many(write: &[PathBuf], read_also: &[PathBuf], cfg: &FetchConfig) -> Self {
        Politeness {
            delay: cfg.delay,
            delays: HostPatterns::new(cfg.delays.iter().map(|(p, d)| (p.clone(), *d))),
            last_end: write
                .iter()
                .chain(read_also)
                .filter_map(|f| read_last_end(f))
                .max(),
            last_end_files: write.to_vec(),
        }
    }

    /// The delay in seconds between two requests to `host` (a host, domain or IP
    /// address queue key): its `fetch.delays` entry, else `fetch.delay`.
    pub fn delay_secs(&self, host: &str) -> f64 {
        self.delays.get(host).copied().unwrap_or(self.delay)
    }

    /// How long the first request to a host whose delay is `delay_secs` waits now
    /// ([`wait_since`] the last run's end).
    pub fn first_wait(&self, delay_secs: f64) -> Duration {
        wait_since(self.last_end, delay_secs, crate::datum::now_millis())
    }

    /// Records that every request of this run has ended now: the next run keeps its
    /// distance from now.
    pub fn record_end(&self) -> Result<()> {
        let now = crate::datum::now_millis().to_string();
        for f in &self.last_end_files {
            if let Some(dir) = f.parent() {
                std::fs::create_dir_all(dir).map_err(|e| crate::error::Error::io(dir, e))?;
            }
            crate::store::parquet::write_atomic(f, now.as_bytes())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_only_for_what_is_left_of_the_delay() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("fetch.last_end");
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
