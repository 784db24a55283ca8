//! The segment writer: a dedicated thread that receives fetch results as they
//! arrive and streams them into `crawl_fetch/` and `content/` (one part per host
//! partition, staged in temporary directories until the run completes).

use std::collections::BTreeMap;
use std::path::Path;
use std::thread::JoinHandle;

use tokio::sync::mpsc;

use crate::error::{Error, Result};
use crate::records::{ContentRecord, FetchRecord};
use crate::store::parquet::{PartWriter, StagedDataset, partition_for_host};

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
#[derive(Debug, Clone, Default)]
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

/// The two staged datasets, fully written, waiting to be committed.
pub struct Written {
    /// `crawl_fetch/`, staged.
    pub crawl_fetch: StagedDataset,
    /// `content/`, staged.
    pub content: StagedDataset,
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
    /// Stages `crawl_fetch/` and `content/` of `segment` with `partitions` parts and
    /// starts the writing thread.
    pub fn start(segment: &Path, partitions: usize) -> Result<Self> {
        let fetch_ds = StagedDataset::new(
            &segment.join(crate::store::names::SegmentDataset::CrawlFetch.as_str()),
        )?;
        let content_ds = StagedDataset::new(
            &segment.join(crate::store::names::SegmentDataset::Content.as_str()),
        )?;
        let mut fetch_parts = Vec::with_capacity(partitions);
        let mut content_parts = Vec::with_capacity(partitions);
        for i in 0..partitions {
            fetch_parts.push(PartWriter::<FetchRecord>::create(&fetch_ds.part_path(i))?);
            content_parts.push(PartWriter::<ContentRecord>::create(
                &content_ds.part_path(i),
            )?);
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
                        let p = partition_for_host(&out.record.host, partitions);
                        count(&mut stats.by_status, out.record.status.as_str());
                        count(&mut stats.by_reason, &out.record.reason);
                        stats.rows += 1;
                        fetch_parts[p].push(out.record)?;
                        if let Some(c) = out.content {
                            stats.pages += 1;
                            stats.bytes += c.content.len() as u64;
                            pending[p] += c.content.len();
                            content_parts[p].push(c)?;
                            if pending[p] >= CONTENT_FLUSH_BYTES {
                                content_parts[p].end_row_group()?;
                                pending[p] = 0;
                            }
                        }
                    }
                }
                for w in fetch_parts {
                    w.finish()?;
                }
                for w in content_parts {
                    w.finish()?;
                }
                Ok(Written {
                    crawl_fetch: fetch_ds,
                    content: content_ds,
                    stats,
                })
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
