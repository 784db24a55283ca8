//! Checkpoints of a fetch in progress (`fetch.checkpoint_interval`): every interval
//! the writer publishes what the attempt wrote since its previous checkpoint, so that
//! a retry of a lost task, or a rerun of `fetch` after a kill, continues from there
//! and requests only what no checkpoint holds (docs/fetch.md, "Checkpoints").
//!
//! ```text
//! _jobs/fetch-checkpoints/<segment>/<n>/<pset>/<nonce>-<seq>/
//!     crawl_fetch.parquet   the crawl_fetch rows written since the previous checkpoint
//!     content.parquet       their content rows (2xx)
//!     robots.json           the robots.txt decisions made since then (with the body)
//! ```
//!
//! A checkpoint is written into a `.tmp-` directory and renamed into place, and only
//! while the attempt's leases hold (its fence): a frozen attempt that lost its leases
//! publishes nothing more. A later attempt on some of the same partitions (any job)
//! reads every checkpoint of the segment's partitions it fetches, takes each URL's
//! first row (rows of URLs not attempted, cut by a stop or the time limit, are not
//! taken: those URLs are fetched), copies the rows and pages into its own attempt
//! and fetches the rest. The fetch commit removes the segment's checkpoints.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::crawldb::state::not_attempted;
use crate::datum::FetchStatus;
use crate::error::{Error, IoContext, Result};
use crate::fetch::writer::Output;
use crate::net::robots::RobotsRecord;
use crate::net::robots_cache::CacheEntry;
use crate::records::{ContentRecord, FetchRecord};
use crate::store::jobs::{PartitionSet, nonce};
use crate::store::parquet::{self, PartWriter};
use crate::store::partition::Partitioner;

/// A checkpoint's crawl_fetch rows.
const FETCH_FILE: &str = "crawl_fetch.parquet";
/// A checkpoint's content rows.
const CONTENT_FILE: &str = "content.parquet";
/// A checkpoint's robots.txt decisions.
const ROBOTS_FILE: &str = "robots.json";
/// Buffered content bytes after which a checkpoint's content row group is written.
const CONTENT_FLUSH_BYTES: usize = 8 * 1024 * 1024;

/// One origin's robots.txt as a fetch decided it: its `robots/` row and, when it may
/// be reused (not unavailable), the rules, so a resumed run does not ask again.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RobotsEntry {
    /// The `robots/` row.
    pub record: RobotsRecord,
    /// The body or allow-all; `None`: unavailable (asked again by a resumed run).
    pub cache: Option<CacheEntry>,
}

/// The rows one checkpoint holds, being written.
struct Chunk {
    tmp: PathBuf,
    fetch: PartWriter<FetchRecord>,
    content: PartWriter<ContentRecord>,
    robots: Vec<RobotsEntry>,
    rows: u64,
    pending: usize,
}

/// On an object store, the empty file published last with a checkpoint's files: a
/// checkpoint on the store without it is not whole and is not read.
pub const PUBLISHED: &str = "_PUBLISHED";

/// The checkpoints of one attempt, written by its writer thread.
pub struct Sink {
    /// The object-store crawl directory's mirror, to which each checkpoint is
    /// published as it is made (`None` on a local directory).
    store: Option<std::sync::Arc<crate::store::object::Mirror>>,
    dir: PathBuf,
    prefix: String,
    seq: u32,
    interval: Duration,
    last: Instant,
    fence: Option<crate::store::lease::Fence>,
    chunk: Option<Chunk>,
    /// Set after a failure to write: the fetch goes on without checkpoints.
    off: bool,
    /// Checkpoints published.
    pub published: u64,
}

impl Sink {
    /// The checkpoints of an attempt on `set` under `root` (the segment's
    /// checkpoint directory for its partition count), published every `interval`
    /// while `fence` holds.
    pub fn new(
        root: &Path,
        set: &PartitionSet,
        interval: Duration,
        fence: Option<crate::store::lease::Fence>,
        store: Option<std::sync::Arc<crate::store::object::Mirror>>,
    ) -> Self {
        Sink {
            store,
            dir: root.join(set.dir_name()),
            prefix: nonce(),
            seq: 0,
            interval,
            last: Instant::now(),
            fence,
            chunk: None,
            off: false,
            published: 0,
        }
    }

    fn chunk(&mut self) -> Result<&mut Chunk> {
        if self.chunk.is_none() {
            let tmp = self
                .dir
                .join(format!("{}-{:06}.tmp-{}", self.prefix, self.seq, nonce()));
            std::fs::create_dir_all(&tmp).at(&tmp)?;
            let props = parquet::scratch_properties;
            self.chunk = Some(Chunk {
                fetch: PartWriter::create_with(&tmp.join(FETCH_FILE), props())?,
                content: PartWriter::create_with(&tmp.join(CONTENT_FILE), props())?,
                tmp,
                robots: Vec::new(),
                rows: 0,
                pending: 0,
            });
        }
        self.chunk
            .as_mut()
            .ok_or_else(|| Error::Net("internal: no checkpoint".into()))
    }

    /// Whether nothing more is written: after a failure, or once the leases are lost
    /// (a zombie resumed after its retry took over creates nothing, not even a
    /// directory).
    fn stopped(&mut self) -> bool {
        if !self.off && self.fence.as_ref().is_some_and(|f| !f.holds()) {
            self.off = true;
            if let Some(c) = self.chunk.take() {
                let _ = std::fs::remove_dir_all(&c.tmp);
            }
        }
        self.off
    }

    /// Adds a row (and its page) to the next checkpoint.
    pub fn row(&mut self, out: &Output) {
        if self.stopped() {
            return;
        }
        let r = self.chunk().and_then(|c| {
            c.rows += 1;
            c.fetch.push(out.record.clone())?;
            if let Some(content) = &out.content {
                c.pending += content.content.len();
                c.content.push(content.clone())?;
                if c.pending >= CONTENT_FLUSH_BYTES {
                    c.content.end_row_group()?;
                    c.pending = 0;
                }
            }
            Ok(())
        });
        self.check(r);
    }

    /// Adds a robots.txt decision to the next checkpoint.
    pub fn robots(&mut self, e: RobotsEntry) {
        if self.stopped() {
            return;
        }
        let r = self.chunk().map(|c| c.robots.push(e));
        self.check(r);
    }

    /// Publishes the checkpoint when rows wait and the interval passed.
    pub fn tick(&mut self) {
        if self.chunk.is_some() && self.last.elapsed() >= self.interval {
            self.publish();
        }
    }

    /// Publishes what waits (a row or robots.txt since the last checkpoint) unless
    /// the leases are lost; a failure is a warning and ends the checkpoints.
    pub fn publish(&mut self) {
        let Some(chunk) = self.chunk.take() else {
            return;
        };
        self.last = Instant::now();
        if self.off || self.fence.as_ref().is_some_and(|f| !f.holds()) {
            // Another attempt may own the partitions now: nothing more of this one.
            self.off = true;
            let _ = std::fs::remove_dir_all(&chunk.tmp);
            if let Some(parent) = chunk.tmp.parent() {
                let _ = std::fs::remove_dir(parent);
            }
            return;
        }
        let dest = self.dir.join(format!("{}-{:06}", self.prefix, self.seq));
        let tmp = chunk.tmp.clone();
        let r = (|| -> Result<()> {
            chunk.fetch.finish()?;
            chunk.content.finish()?;
            parquet::write_json(&tmp.join(ROBOTS_FILE), &chunk.robots)?;
            Ok(())
        })();
        // Checked again at the last moment: writing took time.
        let lost = self.fence.as_ref().is_some_and(|f| !f.holds());
        let r = r.and_then(|()| {
            if lost {
                self.off = true;
                let _ = std::fs::remove_dir_all(&tmp);
                return Ok(false);
            }
            std::fs::rename(&tmp, &dest).at(&dest)?;
            // On an object store: published there while the leases hold (its marker
            // last; a zombie's half-published checkpoint has none and is not read).
            if let Some(store) = &self.store {
                if self.fence.as_ref().is_some_and(|f| !f.holds()) {
                    self.off = true;
                    return Ok(false);
                }
                store.put_scratch_dir(&dest, PUBLISHED)?;
            }
            Ok(true)
        });
        let r = match r {
            Ok(false) => return,
            other => other.map(|_| ()),
        };
        if r.is_ok() {
            self.seq += 1;
            self.published += 1;
            tracing::debug!("checkpoint {} ({} rows)", dest.display(), chunk.rows);
        } else {
            let _ = std::fs::remove_dir_all(&tmp);
        }
        self.check(r);
    }

    fn check(&mut self, r: Result<()>) {
        if let Err(e) = r {
            tracing::warn!(
                "cannot write a fetch checkpoint under {}: {e}; the fetch goes on without checkpoints (a retry fetches its URLs again)",
                self.dir.display()
            );
            self.off = true;
            if let Some(c) = self.chunk.take() {
                let _ = std::fs::remove_dir_all(&c.tmp);
            }
        }
    }
}

/// What the checkpoints of earlier attempts hold for a task's partitions.
#[derive(Default)]
pub struct Resumed {
    /// Each checkpoint read, with the URLs taken from it.
    chunks: Vec<(PathBuf, HashSet<String>)>,
    /// Every URL that has a row (fetch-list URLs and followed redirect targets).
    pub done: HashSet<String>,
    /// Rows of fetch-list URLs taken.
    pub listed: u64,
    /// Rows of followed redirect targets taken.
    pub followed: u64,
    /// robots.txt decided, by origin (the newest).
    pub robots: BTreeMap<String, RobotsEntry>,
    /// Checkpoints read.
    pub checkpoints: usize,
    /// Whether a row taken got a response (a server was reached before the loss).
    pub reached: bool,
}

impl Resumed {
    /// Rows taken.
    pub fn rows(&self) -> u64 {
        self.listed + self.followed
    }

    /// The reusable robots.txt of the checkpoints, by origin.
    pub fn robots_cache(&self) -> HashMap<String, CacheEntry> {
        self.robots
            .iter()
            .filter_map(|(o, e)| e.cache.clone().map(|c| (o.clone(), c)))
            .collect()
    }

    /// Streams the rows and pages taken into `push` (checkpoint by checkpoint). A
    /// checkpoint's pages are in the order of its rows (the writer adds both at
    /// once), so both files are read side by side, a batch at a time.
    pub fn copy(&self, mut push: impl FnMut(Output) -> Result<()>) -> Result<()> {
        for (chunk, taken) in &self.chunks {
            if taken.is_empty() {
                continue;
            }
            let content_file = chunk.join(CONTENT_FILE);
            let mut pages = parquet::read_part::<ContentRecord>(&content_file)
                .map_err(|e| damaged(chunk, e))?;
            let mut batch: VecDeque<ContentRecord> = VecDeque::new();
            let mut page_of = |url: &str| -> Result<Option<ContentRecord>> {
                loop {
                    if let Some(c) = batch.front() {
                        return Ok(if c.url == url {
                            batch.pop_front()
                        } else {
                            None
                        });
                    }
                    match pages.next() {
                        Some(b) => batch.extend(b.map_err(|e| damaged(chunk, e))?),
                        None => return Ok(None),
                    }
                }
            };
            for rows in parquet::read_part::<FetchRecord>(&chunk.join(FETCH_FILE))
                .map_err(|e| damaged(chunk, e))?
            {
                for r in rows.map_err(|e| damaged(chunk, e))? {
                    let content = page_of(&r.url)?;
                    if taken.contains(&r.url) {
                        push(Output { record: r, content })?;
                    }
                }
            }
        }
        Ok(())
    }
}

fn damaged(chunk: &Path, e: Error) -> Error {
    Error::crawl_dir(
        chunk,
        format!(
            "a fetch checkpoint cannot be read ({e}); delete {} and rerun: its URLs are fetched again",
            chunk.display()
        ),
    )
}

/// Reads the checkpoints under `root` (a segment's, for its partition count) for the
/// partitions `own` of `pt`: each URL's first row that was attempted; `listed` are
/// the fetch list's URLs (the other rows are followed redirect targets). A
/// checkpoint that cannot be read is skipped with a warning (its URLs are fetched).
pub fn load(root: &Path, own: &PartitionSet, pt: Partitioner, listed: &HashSet<&str>) -> Resumed {
    let mut resumed = Resumed::default();
    let mut dirs: Vec<PathBuf> = Vec::new();
    let Ok(sets) = std::fs::read_dir(root) else {
        return resumed;
    };
    for set in sets.flatten() {
        let name = set.file_name().to_string_lossy().into_owned();
        let Some(pset) = PartitionSet::from_dir_name(&name) else {
            continue;
        };
        if !pset.iter().any(|i| own.contains(i)) {
            continue;
        }
        let Ok(chunks) = std::fs::read_dir(set.path()) else {
            continue;
        };
        for c in chunks.flatten() {
            if !c.file_name().to_string_lossy().contains(".tmp-") {
                dirs.push(c.path());
            }
        }
    }
    dirs.sort();
    for dir in dirs {
        let rows = match parquet::read_part_all::<FetchRecord>(&dir.join(FETCH_FILE)) {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!(
                    "skipping the fetch checkpoint {}: {e}; its URLs are fetched again",
                    dir.display()
                );
                continue;
            }
        };
        if let Err(e) = parquet::read_batches(&dir.join(CONTENT_FILE)) {
            tracing::warn!(
                "skipping the fetch checkpoint {}: its pages cannot be read ({e}); its URLs are fetched again",
                dir.display()
            );
            continue;
        }
        let robots: Vec<RobotsEntry> = match parquet::read_json(&dir.join(ROBOTS_FILE)) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(
                    "the robots.txt of the fetch checkpoint {} cannot be read: {e}; asked again",
                    dir.display()
                );
                Vec::new()
            }
        };
        resumed.checkpoints += 1;
        for e in robots {
            if !own.contains(pt.of_host(&e.record.host)) {
                continue;
            }
            match resumed.robots.get(&e.record.origin) {
                Some(have) if have.record.fetch_time >= e.record.fetch_time => {}
                _ => {
                    resumed.robots.insert(e.record.origin.clone(), e);
                }
            }
        }
        let mut taken = HashSet::new();
        for r in rows {
            let skipped = (r.status == FetchStatus::FetchRetry && not_attempted(&r.reason))
                || !own.contains(pt.of_host(&r.host))
                || resumed.done.contains(&r.url);
            if skipped {
                continue;
            }
            resumed.reached |= r.http_status.is_some();
            if listed.contains(r.url.as_str()) {
                resumed.listed += 1;
            } else {
                resumed.followed += 1;
            }
            resumed.done.insert(r.url.clone());
            taken.insert(r.url);
        }
        resumed.chunks.push((dir, taken));
    }
    resumed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(url: &str, status: FetchStatus, reason: &str, page: Option<&str>) -> Output {
        let host = crate::urls::host_of(url).to_string();
        let datum = crate::datum::CrawlDatum::unfetched(url.into(), host.clone(), 1, 86400);
        let item = crate::fetch::page::FetchItem::from_datum(datum, host.as_str().into());
        let mut record = item.record(status, reason);
        record.http_status = page.map(|_| 200);
        Output {
            record,
            content: page.map(|p| ContentRecord {
                url: url.into(),
                host,
                fetch_time: 1,
                http_status: 200,
                content_type: None,
                headers: Vec::new(),
                content: p.as_bytes().to_vec(),
                truncated: false,
                ip_address: None,
                score: 1.0,
                depth: 0,
                rendered: None,
                render_status: None,
            }),
        }
    }

    /// Two attempts' checkpoints (a zombie's late one overlapping its retry's): each
    /// URL is taken once, with the page of the row taken; rows not attempted and rows
    /// of partitions not asked for are left; a half-written checkpoint is not read.
    #[test]
    fn load_takes_each_url_once_and_skips_what_was_not_attempted() {
        let t = tempfile::tempdir().unwrap();
        let pt = Partitioner::by_host(4);
        let all = PartitionSet::all(4);
        let ok = FetchStatus::FetchSuccess;
        let mut a = Sink::new(t.path(), &all, Duration::ZERO, None, None);
        a.row(&out("http://a.test/1", ok, "ok", Some("a1")));
        a.row(&out(
            "http://a.test/2",
            FetchStatus::FetchRetry,
            crate::crawldb::state::REASON_INTERRUPTED,
            None,
        ));
        a.robots(RobotsEntry {
            record: RobotsRecord {
                origin: "http://a.test".into(),
                host: "a.test".into(),
                outcome: "allow_all".into(),
                reason: "http_404".into(),
                http_status: Some(404),
                crawl_delay: None,
                sitemaps: Vec::new(),
                bytes: 0,
                fetch_time: 1,
            },
            cache: None,
        });
        a.publish();
        a.row(&out("http://a.test/3", ok, "ok", Some("a3")));
        a.publish();
        let mut b = Sink::new(t.path(), &all, Duration::ZERO, None, None);
        b.row(&out("http://a.test/1", ok, "ok", Some("b1")));
        b.row(&out("http://b.test/x", ok, "ok", Some("bx")));
        b.publish();
        assert_eq!((a.published, b.published), (2, 1));
        // Left half-written by a kill.
        b.row(&out("http://a.test/4", ok, "ok", Some("b4")));
        drop(b);

        let listed: HashSet<&str> = ["http://a.test/1", "http://a.test/2", "http://a.test/3"]
            .into_iter()
            .collect();
        let r = load(t.path(), &all, pt, &listed);
        assert_eq!(r.checkpoints, 3);
        assert_eq!(
            (r.listed, r.followed),
            (2, 1),
            "a/1 and a/3; b.test/x followed"
        );
        assert!(
            !r.done.contains("http://a.test/2"),
            "not attempted: fetched"
        );
        assert!(!r.done.contains("http://a.test/4"), "never published");
        assert!(r.reached, "a row taken had a response");
        assert_eq!(r.robots.len(), 1);
        let mut copied = Vec::new();
        r.copy(|o| {
            copied.push((o.record.url, o.content.map(|c| c.content)));
            Ok(())
        })
        .unwrap();
        copied.sort();
        let urls: Vec<&str> = copied.iter().map(|(u, _)| u.as_str()).collect();
        assert_eq!(
            urls,
            ["http://a.test/1", "http://a.test/3", "http://b.test/x"]
        );
        // Each row with its own page (a/1's from whichever checkpoint gave the row).
        for (u, page) in &copied {
            let page = String::from_utf8(page.clone().unwrap()).unwrap();
            assert!(page.ends_with(&u[u.len() - 1..]), "{u}: {page}");
        }

        // A task on one partition takes only that partition's rows.
        let p = pt.of_host("b.test");
        let one = PartitionSet::parse(&p.to_string()).unwrap();
        let r = load(t.path(), &one, pt, &HashSet::new());
        let want = if pt.of_host("a.test") == p { 3 } else { 1 };
        assert_eq!(r.rows(), want);
    }
}
