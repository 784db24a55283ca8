//! Progress display: an indicatif bar (pages/s, MB/s, active queues and how many of
//! them wait for their politeness delay, errors) when
//! stderr is a terminal, else a one-line `tracing` log every ~10 seconds.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::fetch::state::{HostProgress, Progress};

/// The running reporter task.
pub struct Reporter {
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl Reporter {
    /// Stops the reporter and clears the bar.
    pub async fn finish(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

fn line(p: &Progress, started: Instant) -> String {
    let secs = started.elapsed().as_secs_f64().max(1e-3);
    let pages = p.pages.load(Ordering::Relaxed);
    let bytes = p.bytes.load(Ordering::Relaxed);
    format!(
        "{:.0} pages/s, {:.2} MB/s, {} active queues ({} waiting for their delay), {} errors",
        pages as f64 / secs,
        bytes as f64 / 1e6 / secs,
        p.active_hosts.load(Ordering::Relaxed),
        p.waiting.load(Ordering::Relaxed),
        p.errors.load(Ordering::Relaxed)
    )
}

/// Hosts by a key, best first, at most `n`: `(host, progress)`.
fn top_hosts(
    p: &Progress,
    n: usize,
    key: impl Fn(&HostProgress) -> Option<f64>,
) -> Vec<(String, HostProgress, f64)> {
    let Ok(hosts) = p.hosts.lock() else {
        return Vec::new();
    };
    let mut v: Vec<(String, HostProgress, f64)> = hosts
        .iter()
        .filter_map(|(h, s)| key(s).map(|k| (h.clone(), s.clone(), k)))
        .collect();
    v.sort_by(|a, b| b.2.total_cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
    v.truncate(n);
    v
}

fn avg_ms(s: &HostProgress) -> Option<f64> {
    (s.responses > 0).then(|| s.response_ms as f64 / s.responses as f64)
}

/// The slowest hosts by mean response time, for a stalled progress line.
fn slowest_line(p: &Progress) -> String {
    top_hosts(p, 3, avg_ms)
        .iter()
        .map(|(h, _, ms)| format!("{h} ({ms:.0} ms/page)"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The live `status.json` of a fetch.
fn status_value(p: &Progress, total: u64, segment: &str, started: Instant) -> serde_json::Value {
    let secs = started.elapsed().as_secs_f64().max(1e-3);
    let pages = p.pages.load(Ordering::Relaxed);
    let bytes = p.bytes.load(Ordering::Relaxed);
    let host_row = |(h, s, _): &(String, HostProgress, f64)| {
        serde_json::json!({
            "host": h, "done": s.done, "pages": s.pages,
            "avg_response_ms": avg_ms(s),
        })
    };
    let mut f = serde_json::Map::new();
    f.insert("segment".into(), serde_json::json!(segment));
    f.insert("urls".into(), serde_json::json!(total));
    f.insert(
        "done".into(),
        serde_json::json!(p.done.load(Ordering::Relaxed)),
    );
    f.insert("pages".into(), serde_json::json!(pages));
    f.insert("bytes".into(), serde_json::json!(bytes));
    f.insert(
        "errors".into(),
        serde_json::json!(p.errors.load(Ordering::Relaxed)),
    );
    f.insert("elapsed_secs".into(), serde_json::json!(secs));
    f.insert(
        "pages_per_sec".into(),
        serde_json::json!(pages as f64 / secs),
    );
    f.insert(
        "mb_per_sec".into(),
        serde_json::json!(bytes as f64 / 1e6 / secs),
    );
    f.insert(
        "active_queues".into(),
        serde_json::json!(p.active_hosts.load(Ordering::Relaxed)),
    );
    f.insert(
        "waiting_for_delay".into(),
        serde_json::json!(p.waiting.load(Ordering::Relaxed)),
    );
    let reasons = p.reasons.lock().map(|r| r.clone()).unwrap_or_default();
    f.insert("errors_by_reason".into(), serde_json::json!(reasons));
    let busiest: Vec<_> = top_hosts(p, 10, |s| Some(s.done as f64))
        .iter()
        .map(host_row)
        .collect();
    let slowest: Vec<_> = top_hosts(p, 10, avg_ms).iter().map(host_row).collect();
    f.insert("busiest_hosts".into(), serde_json::json!(busiest));
    f.insert("slowest_hosts".into(), serde_json::json!(slowest));
    crate::status::status("fetch", "running", f)
}

/// Where a fetch's live status goes: `status.json` and the segment's name.
pub struct StatusSink {
    /// The crawl directory's `status.json`.
    pub path: std::path::PathBuf,
    /// The segment being fetched.
    pub segment: String,
}

/// Starts reporting on `total` URLs (and, with `sink`, keeping `status.json` current
/// every second).
pub fn spawn_reporter(p: Arc<Progress>, total: u64, sink: Option<StatusSink>) -> Reporter {
    let (stop, mut stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let started = Instant::now();
        let terminal = std::io::stderr().is_terminal();
        let pb = crate::cli::progress_bar(total, "fetch");
        let mut last_log = Instant::now();
        let mut last_status = Instant::now();
        // Pages done 10 s ago (a ring of 40 samples, one per tick), for the stall test.
        let mut history: std::collections::VecDeque<u64> = std::collections::VecDeque::new();
        loop {
            tokio::select! {
                _ = &mut stopped => break,
                _ = tokio::time::sleep(Duration::from_millis(250)) => {}
            }
            let done = p.done.load(Ordering::Relaxed);
            history.push_back(done);
            if history.len() > 40 {
                history.pop_front();
            }
            pb.set_position(done);
            let mut msg = line(&p, started);
            // Stalled: the last 10 s went at under a quarter of the run's mean rate.
            let secs = started.elapsed().as_secs_f64();
            if history.len() == 40 && secs > 10.0 && done < total {
                let recent = (done - history[0]) as f64 / 10.0;
                if recent < 0.25 * (done as f64 / secs) {
                    let slow = slowest_line(&p);
                    if !slow.is_empty() {
                        msg.push_str(&format!("; stalled, slowest hosts: {slow}"));
                    }
                }
            }
            pb.set_message(msg.clone());
            if let Some(s) = &sink
                && last_status.elapsed() >= Duration::from_secs(1)
            {
                last_status = Instant::now();
                crate::status::write(&s.path, &status_value(&p, total, &s.segment, started));
            }
            if !terminal && last_log.elapsed() >= Duration::from_secs(10) {
                last_log = Instant::now();
                tracing::info!("fetch: {}/{} urls, {}", done, total, msg);
            }
        }
        if let Some(s) = &sink {
            crate::status::write(&s.path, &status_value(&p, total, &s.segment, started));
        }
        pb.finish_and_clear();
    });
    Reporter { stop, task }
}
