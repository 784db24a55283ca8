//! The segment writer: a dedicated thread that receives fetch results as they
//! arrive and streams them into `crawl_fetch/` and `content/` (one part per host
//! partition the task fetches, in its attempt's directory until the commit).

use std::collections::BTreeMap;
use std::path::Path;
use std::thread::JoinHandle;

use tokio::sync::mpsc;

use crate::error::{Error, Result};
use crate::records::{ContentRecord, FetchRecord};
use crate::store::parquet::{PartWriter, part_name};
use crate::store::partition::Partitioner;

/// Buffered content bytes per part after which a row group is written out, so
/// memory stays bounded by partitions x this (plus Parquet's page buffers).
const CONTENT_FLUSH_BYTES: usize = 8 * 1024 * 1024;
/// Most results the writer takes off the channel at once.
const RECV_BATCH: usize = 256;

/// Adds one to `key`'s count, allocating the key only the first time.
fn count(map: &mut std::collections::BTreeMap<String, u64>, key: &str) {
    match map.get_mut(key) {
        Some(n) => *n += 1,
        None => {
            map.insert(key.to_string(), 1);
        }
    }
}

/// One finished URL: its crawl_fetch row and, for 2xx, its content row.
#[derive(Debug)]
pub struct Output {
    /// The crawl_fetch row.
    pub record: FetchRecord,
    /// The content row (2xx responses only).
    pub content: Option<ContentRecord>,
}

/// Counts of what was written.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct WriteStats {
    /// crawl_fetch rows.
    pub rows: u64,
    /// content rows.
    pub pages: u64,
    /// content bytes.
    pub bytes: u64,
    /// Rows per fetch status.
    pub by_status: BTreeMap<String, u64>,
    /// Rows per reason.
    pub by_reason: BTreeMap<String, u64>,
}

/// What the writer wrote (the part files are complete).
pub struct Written {
    /// What was written.
    pub stats: WriteStats,
}

/// The sending side; dropping every sender ends the thread.
pub struct SegmentWriter {
    /// Send results here.
    pub tx: mpsc::Sender<Output>,
    join: JoinHandle<Result<Written>>,
}

impl SegmentWriter {
    /// Creates part `i` of `crawl_fetch` in `fetch_dir` and of `content` in
    /// `content_dir` for every partition `i` in `own` (of `partitions`) and starts
    /// the writing thread. A row of a host of another partition is an error.
    pub fn start(
        fetch_dir: &Path,
        content_dir: &Path,
        pt: Partitioner,
        own: &[usize],
    ) -> Result<Self> {
        let partitions = pt.n();
        let mut fetch_parts: Vec<Option<PartWriter<FetchRecord>>> =
            (0..partitions).map(|_| None).collect();
        let mut content_parts: Vec<Option<PartWriter<ContentRecord>>> =
            (0..partitions).map(|_| None).collect();
        for &i in own {
            fetch_parts[i] = Some(PartWriter::create(&fetch_dir.join(part_name(i)))?);
            content_parts[i] = Some(PartWriter::create(&content_dir.join(part_name(i)))?);
        }
        let (tx, mut rx) = mpsc::channel::<Output>(1024);
        let join = std::thread::Builder::new()
            .name("fetch-writer".into())
            .spawn(move || -> Result<Written> {
                let mut stats = WriteStats::default();
                let mut pending = vec![0usize; partitions];
                // Drain in batches: one wake-up of this thread per batch, not per URL.
                let mut batch = Vec::with_capacity(RECV_BATCH);
                while rx.blocking_recv_many(&mut batch, RECV_BATCH) > 0 {
                    for out in batch.drain(..) {
                        let p = pt.of_host(&out.record.host);
                        let (Some(fw), Some(cw)) = (&mut fetch_parts[p], &mut content_parts[p])
                        else {
                            return Err(Error::Net(format!(
                                "internal: a crawl_fetch row of {} (partition {p}), a partition this task does not fetch",
                                out.record.url
                            )));
                        };
                        count(&mut stats.by_status, out.record.status.as_str());
                        count(&mut stats.by_reason, &out.record.reason);
                        stats.rows += 1;
                        fw.push(out.record)?;
                        if let Some(c) = out.content {
                            stats.pages += 1;
                            stats.bytes += c.content.len() as u64;
                            pending[p] += c.content.len();
                            cw.push(c)?;
                            if pending[p] >= CONTENT_FLUSH_BYTES {
                                cw.end_row_group()?;
                                pending[p] = 0;
                            }
                        }
                    }
                }
                for w in fetch_parts.into_iter().flatten() {
                    w.finish()?;
                }
                for w in content_parts.into_iter().flatten() {
                    w.finish()?;
                }
                Ok(Written { stats })
            })
            .map_err(|e| Error::Net(format!("cannot start the writer thread: {e}")))?;
        Ok(SegmentWriter { tx, join })
    }

    /// Waits for the thread after every sender is dropped; returns the staged datasets.
    pub fn finish(self) -> Result<Written> {
        let SegmentWriter { tx, join } = self;
        drop(tx);
        join.join()
            .map_err(|_| Error::Net("the writer thread panicked".into()))?
    }
}
