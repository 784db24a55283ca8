//! The async runtime requests run on, and a bound on how many run at once.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::Semaphore;

use crate::error::{Error, Result};

/// A multi-threaded tokio runtime with `threads` workers (0: one per core).
pub fn build(threads: usize) -> Result<tokio::runtime::Runtime> {
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    if threads > 0 {
        rt.worker_threads(threads);
    }
    rt.enable_all()
        .build()
        .map_err(|e| Error::Net(format!("cannot start the async runtime: {e}")))
}

/// At most `limit` of the futures in `tasks` running at once (each spawned on the
/// current runtime); their outputs in order. A task that panicked is logged as
/// `what failed` and left out.
pub async fn run_bounded<T, F>(
    limit: usize,
    tasks: impl IntoIterator<Item = F>,
    what: &str,
) -> Vec<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let permits = Arc::new(Semaphore::new(limit.max(1)));
    let handles: Vec<_> = tasks
        .into_iter()
        .map(|task| {
            let permits = permits.clone();
            tokio::spawn(async move {
                let _permit = permits.acquire_owned().await.ok();
                task.await
            })
        })
        .collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        match h.await {
            Ok(r) => out.push(r),
            Err(e) => tracing::error!("{what} failed: {e}"),
        }
    }
    out
}
