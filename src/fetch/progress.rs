//! Progress display: an indicatif bar (pages/s, MB/s, active queues and how many of
//! them wait for their politeness delay, errors) when
//! stderr is a terminal, else a one-line `tracing` log every ~10 seconds.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::fetch::state::Progress;

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

/// Starts reporting on `total` URLs.
pub fn spawn_reporter(p: Arc<Progress>, total: u64) -> Reporter {
    let (stop, mut stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let started = Instant::now();
        let terminal = std::io::stderr().is_terminal();
        let pb = crate::cli::progress_bar(total, "fetch");
        let mut last_log = Instant::now();
        loop {
            tokio::select! {
                _ = &mut stopped => break,
                _ = tokio::time::sleep(Duration::from_millis(250)) => {}
            }
            pb.set_position(p.done.load(Ordering::Relaxed));
            pb.set_message(line(&p, started));
            if !terminal && last_log.elapsed() >= Duration::from_secs(10) {
                last_log = Instant::now();
                tracing::info!(
                    "fetch: {}/{} urls, {}",
                    p.done.load(Ordering::Relaxed),
                    total,
                    line(&p, started)
                );
            }
        }
        pb.finish_and_clear();
    });
    Reporter { stop, task }
}
