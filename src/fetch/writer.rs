//! The segment writer: a dedicated thread that receives fetch results as they
//! arrive and streams them into `crawl_fetch/` and `content/` (one part per host
//! partition the task fetches, in its attempt's directory until the commit), and
//! publishes the fetch's checkpoints ([`super::checkpoint`]).

use std::collections::BTreeMap;
use std::path::Path;
use std::thread::JoinHandle;

use tokio::sync::mpsc;

use crate::error::{Error, Result};
use crate::fetch::checkpoint::{Resumed, RobotsEntry, Sink};
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
    /// What was written (rows copied from checkpoints included).
    pub stats: WriteStats,
    /// Checkpoints published.
    pub checkpoints: u64,
}

/// What the workers send the writer. Rows are nearly every message: kept unboxed
/// (a box would be an allocation per URL).
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Msg {
    /// A finished URL.
    Row(Output),
    /// A robots.txt decision (for the checkpoints).
    Robots(Box<RobotsEntry>),
    /// Time passed: publish a checkpoint if one is due.
    Tick,
}

/// The sending side; dropping every sender ends the thread.
pub struct SegmentWriter {
    /// Send results here.
    pub tx: mpsc::Sender<Msg>,
    join: JoinHandle<Result<Written>>,
}

/// Counts a row into `stats` and writes it into its partition's parts.
struct Parts {
    pt: Partitioner,
    fetch: Vec<Option<PartWriter<FetchRecord>>>,
    content: Vec<Option<PartWriter<ContentRecord>>>,
    pending: Vec<usize>,
    stats: WriteStats,
}

impl Parts {
    fn push(&mut self, out: Output) -> Result<()> {
        let p = self.pt.of_host(&out.record.host);
        let (Some(Some(fw)), Some(Some(cw))) = (self.fetch.get_mut(p), self.content.get_mut(p))
        else {
            return Err(Error::Net(format!(
                "internal: a crawl_fetch row of {} (partition {p}), a partition this task does not fetch",
                out.record.url
            )));
        };
        let stats = &mut self.stats;
        count(&mut stats.by_status, out.record.status.as_str());
        count(&mut stats.by_reason, &out.record.reason);
        stats.rows += 1;
        fw.push(out.record)?;
        if let Some(c) = out.content {
            stats.pages += 1;
            stats.bytes += c.content.len() as u64;
            self.pending[p] += c.content.len();
            cw.push(c)?;
            if self.pending[p] >= CONTENT_FLUSH_BYTES {
                cw.end_row_group()?;
                self.pending[p] = 0;
            }
        }
        Ok(())
    }

    fn finish(self) -> Result<WriteStats> {
        for w in self.fetch.into_iter().flatten() {
            w.finish()?;
        }
        for w in self.content.into_iter().flatten() {
            w.finish()?;
        }
        Ok(self.stats)
    }
}

impl SegmentWriter {
    /// Creates part `i` of `crawl_fetch` in `fetch_dir` and of `content` in
    /// `content_dir` for every partition `i` in `own` (of `partitions`) and starts
    /// the writing thread; first copies the rows `resumed` from earlier attempts'
    /// checkpoints. The thread writes what arrives, publishing checkpoints into
    /// `sink`. A row of a host of another partition is an error.
    pub fn start(
        fetch_dir: &Path,
        content_dir: &Path,
        pt: Partitioner,
        own: &[usize],
        resumed: Option<&Resumed>,
        mut sink: Option<Sink>,
    ) -> Result<Self> {
        let partitions = pt.n();
        let mut parts = Parts {
            pt,
            fetch: (0..partitions).map(|_| None).collect(),
            content: (0..partitions).map(|_| None).collect(),
            pending: vec![0usize; partitions],
            stats: WriteStats::default(),
        };
        for &i in own {
            parts.fetch[i] = Some(PartWriter::create(&fetch_dir.join(part_name(i)))?);
            parts.content[i] = Some(PartWriter::create(&content_dir.join(part_name(i)))?);
        }
        // Copied here, before the run's clocks (time limit, throughput floor) start.
        if let Some(r) = &resumed {
            r.copy(|out| parts.push(out))?;
        }
        let (tx, mut rx) = mpsc::channel::<Msg>(1024);
        let join = std::thread::Builder::new()
            .name("fetch-writer".into())
            .spawn(move || -> Result<Written> {
                // Drain in batches: one wake-up of this thread per batch, not per URL.
                let mut batch = Vec::with_capacity(RECV_BATCH);
                while rx.blocking_recv_many(&mut batch, RECV_BATCH) > 0 {
                    for msg in batch.drain(..) {
                        match msg {
                            Msg::Row(out) => {
                                if let Some(s) = &mut sink {
                                    s.row(&out);
                                }
                                parts.push(out)?;
                            }
                            Msg::Robots(e) => {
                                if let Some(s) = &mut sink {
                                    s.robots(*e);
                                }
                            }
                            Msg::Tick => {}
                        }
                    }
                    if let Some(s) = &mut sink {
                        s.tick();
                    }
                }
                // What arrived since the last checkpoint: a task that fails after
                // this (a signal) leaves it to its retry.
                let checkpoints = sink.map_or(0, |mut s| {
                    s.publish();
                    s.published
                });
                Ok(Written {
                    stats: parts.finish()?,
                    checkpoints,
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
