//! The crawl directory (Nutch's layout, Parquet instead of SequenceFiles):
//!
//! ```text
//! <crawl-dir>/
//!   crawldb/current/part-NNNNN.parquet   one row per URL, partitioned by host, sorted by URL
//!   crawldb/current/_meta.json           partitions and segments already merged
//!   crawldb/current/_SUCCESS             the manifest: every part's name, rows, bytes, blake3
//!   crawldb/old/                          the previous version
//!   crawldb/.lock                         held while a stage rewrites the crawldb
//!   segments/<yyyyMMddHHmmss>/            one fetch list and what became of it
//!     _meta.json, crawl_generate/, crawl_fetch/, content/, robots/, parse_text/, parse_data/, crawl_parse/, parse_inlinks/
//!   segments/<yyyyMMddHHmmss>.lock        held while a stage writes the segment ([`lock`])
//!   segments/<name>/robots/               one row per robots.txt origin (fetch)
//!   linkdb/current/, linkdb/old/          inlinks per target URL
//!   linkdb/.lock                          held while linkdb (or a segment tool) rewrites it
//!   sitemapdb/current/, sitemapdb/old/    one row per known sitemap (under the crawldb lock)
//!   pagerank/                             url, score, in_degree, out_degree (+ hits/)
//!   warc/                                 the default output directory of `warc`
//!   robots_cache.json                     robots.txt rules kept between fetch runs
//!   fetch.last_end                        when the last fetch or sitemap run ended
//!   fetch_state/<n>/p<i>/                 per partition: fetch.last_end, robots_cache.json, fetch.lease
//! ```
//!
//! Every name above is spelled once, in [`super::names`]; the rest of the crate asks
//! [`CrawlDir`] and [`Segment`] for paths.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::integrity::{self, Check};
use super::names::{self, SegmentDataset, VersionedDb};
use super::parquet::{self, SUCCESS_MARKER};
use super::partition::{PartitionKey, Partitioner};
use super::versioned::VersionedDataset;
use crate::error::{Error, IoContext, Result};

/// A crawl directory.
#[derive(Debug, Clone)]
pub struct CrawlDir {
    root: PathBuf,
}

/// A segment's datasets, in the order the stages write them: every one of them, so
/// that every tool that lists, copies, merges or deletes segment data (readseg,
/// mergesegs, prunesegs) goes through this list (`robots` is written by fetch: one
/// row per robots.txt origin, read by the sitemap stage).
pub const SEGMENT_DATASETS: [SegmentDataset; 8] = SegmentDataset::ALL;

impl CrawlDir {
    /// A crawl directory at `root` (not checked; see [`CrawlDir::open_existing`]).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        CrawlDir { root: root.into() }
    }

    /// Opens a crawl directory that must already hold a crawldb: every stage but
    /// `inject` (which creates it) opens its crawl directory with this or with
    /// [`CrawlDir::open_for_segments`], so a missing or empty directory is refused the
    /// same way everywhere ([`NO_CRAWL_DIR`], [`NO_CRAWLDB`]), before anything is
    /// created in it.
    pub fn open_existing(root: impl Into<PathBuf>) -> Result<Self> {
        let dir = CrawlDir::open_root(root)?;
        if !parquet::dataset_complete(&dir.crawldb_current()) {
            return Err(Error::crawl_dir(&dir.root, NO_CRAWLDB));
        }
        dir.verify_crawldb(Check::Sizes)?;
        Ok(dir)
    }

    /// Opens a crawl directory for a stage that works on segments (`fetch`, `parse`,
    /// `linkdb`, `warc`, `readseg`, `readlinkdb`): it must exist and hold a crawldb or
    /// at least one segment; refused like [`CrawlDir::open_existing`] otherwise.
    pub fn open_for_segments(root: impl Into<PathBuf>) -> Result<Self> {
        let dir = CrawlDir::open_root(root)?;
        if parquet::dataset_complete(&dir.crawldb_current()) {
            dir.verify_crawldb(Check::Sizes)?;
        } else if dir.segments()?.is_empty() {
            return Err(Error::crawl_dir(&dir.root, NO_CRAWLDB));
        }
        Ok(dir)
    }

    /// The root must be a directory; finishes an interrupted crawldb install.
    fn open_root(root: impl Into<PathBuf>) -> Result<Self> {
        let dir = CrawlDir::new(root);
        if !dir.root.is_dir() {
            return Err(Error::crawl_dir(&dir.root, NO_CRAWL_DIR));
        }
        dir.recover_crawldb()?;
        dir.refuse_unmarked_crawldb()?;
        Ok(dir)
    }

    /// Checks the current crawldb against its manifest ([`integrity::verify`]):
    /// [`Check::Sizes`] before reading it, [`Check::Checksums`] before rewriting it.
    /// Also refuses a version whose part count differs from its `_meta.json`'s
    /// `partitions` (which catches a missing part of a crawldb written before
    /// manifests too).
    pub fn verify_crawldb(&self, check: Check) -> Result<()> {
        let current = self.crawldb_current();
        let parts = integrity::verify(&current, check)?;
        let meta = self.crawldb_meta()?;
        if parts.len() != meta.partitions {
            let have: Vec<String> = parts
                .iter()
                .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .collect();
            let missing: Vec<String> = (0..meta.partitions)
                .map(parquet::part_name)
                .filter(|n| !have.contains(n))
                .collect();
            return Err(Error::Integrity {
                path: current.clone(),
                message: format!(
                    "{} part files, but its _meta.json says {} partitions (missing: {}), so it is not read and nothing was written. {}",
                    parts.len(),
                    meta.partitions,
                    if missing.is_empty() {
                        "none; extra parts".to_string()
                    } else {
                        missing.join(", ")
                    },
                    integrity::recovery_hint(&current)
                ),
            });
        }
        Ok(())
    }

    /// Before a stage rewrites the crawldb (under its lock): refuses a damaged
    /// `crawldb/current/` (no manifest, a part missing, added, resized, or with a
    /// blake3 that differs from its manifest), so that nothing read from it is written
    /// into a new version. No crawldb yet is fine. The executor runs it for the stages
    /// that declare it ([`crate::stage::Guard::CrawlDb`]).
    pub fn verify_crawldb_for_rewrite(&self) -> Result<()> {
        self.refuse_unmarked_crawldb()?;
        if parquet::dataset_complete(&self.crawldb_current()) {
            self.verify_crawldb(Check::Checksums)?;
        }
        Ok(())
    }

    /// Refuses a `crawldb/current/` that holds part files but no `_SUCCESS`
    /// manifest: trawl never installs one, so it was damaged, and treating it as "no
    /// crawldb" would let `inject` replace `old/` with it.
    pub fn refuse_unmarked_crawldb(&self) -> Result<()> {
        integrity::refuse_unmarked(&self.crawldb_current())
    }

    /// The root path.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// One of the versioned datasets (`crawldb/`, `linkdb/`, `sitemapdb/`).
    pub fn versioned(&self, db: VersionedDb) -> VersionedDataset {
        VersionedDataset::new(self.root.join(db.as_str()))
    }

    /// `crawldb/`.
    pub fn crawldb(&self) -> PathBuf {
        self.root.join(names::CRAWLDB)
    }

    /// `crawldb/current/`.
    pub fn crawldb_current(&self) -> PathBuf {
        self.crawldb().join(names::CURRENT)
    }

    /// `crawldb/old/`.
    pub fn crawldb_old(&self) -> PathBuf {
        self.crawldb().join(names::OLD)
    }

    /// `segments/`.
    pub fn segments_dir(&self) -> PathBuf {
        self.root.join(names::SEGMENTS)
    }

    /// `linkdb/`.
    pub fn linkdb(&self) -> PathBuf {
        self.root.join(names::LINKDB)
    }

    /// `linkdb/current/`.
    pub fn linkdb_current(&self) -> PathBuf {
        self.linkdb().join(names::CURRENT)
    }

    /// `sitemapdb/`.
    pub fn sitemapdb(&self) -> PathBuf {
        self.root.join(names::SITEMAPDB)
    }

    /// `pagerank/`.
    pub fn pagerank(&self) -> PathBuf {
        self.root.join(names::PAGERANK)
    }

    /// `index/`: the search index (a tantivy directory).
    pub fn index(&self) -> PathBuf {
        self.root.join(names::INDEX)
    }

    /// `warc/`: the default output directory of `warc`.
    pub fn warc_dir(&self) -> PathBuf {
        self.root.join(names::WARC)
    }

    /// `crawl_journal.json`: the crawl driver's journal.
    pub fn crawl_journal(&self) -> PathBuf {
        self.root.join(names::CRAWL_JOURNAL)
    }

    /// `crawl.lock`: held by a running crawl driver.
    pub fn crawl_lock(&self) -> PathBuf {
        self.root.join(names::CRAWL_LOCK)
    }

    /// `report.html`: the crawl report.
    pub fn report_file(&self) -> PathBuf {
        self.root.join(names::REPORT)
    }

    /// `status.json`: what the crawl is doing now.
    pub fn status_file(&self) -> PathBuf {
        self.root.join(names::STATUS)
    }

    /// `STOP`: the file that stops a running crawl driver after its current stage.
    pub fn stop_file(&self) -> PathBuf {
        self.root.join(names::STOP)
    }

    /// `robots_cache.json`: robots.txt rules kept between fetch runs.
    pub fn robots_cache(&self) -> PathBuf {
        self.root.join(names::ROBOTS_CACHE)
    }

    /// `fetch.last_end`: when the last fetch (or sitemap) run ended.
    pub fn fetch_last_end(&self) -> PathBuf {
        self.root.join(names::FETCH_LAST_END)
    }

    /// `fetch_state/<n>/p<i>/`: the state of partition `i` of `n` kept between fetch
    /// runs (its hosts' `fetch.last_end` and robots cache, and its lease), read and
    /// written by the fetch tasks of that partition.
    pub fn fetch_state(&self, partitions: usize, i: usize) -> PathBuf {
        self.fetch_state_root()
            .join(format!("{partitions:05}"))
            .join(format!("p{i:05}"))
    }

    /// `fetch_state/`: every partition's fetch state.
    pub fn fetch_state_root(&self) -> PathBuf {
        self.root.join(names::FETCH_STATE)
    }

    /// `fetch_state/<n>/p<i>/fetch.last_end`: when the last fetch of partition `i`
    /// ended (the crawl's `fetch.last_end`, written by sitemap and fetch before
    /// partitions had their own, is read too).
    pub fn fetch_last_end_of(&self, partitions: usize, i: usize) -> PathBuf {
        self.fetch_state(partitions, i).join(names::FETCH_LAST_END)
    }

    /// `fetch_state/<n>/p<i>/robots_cache.json`: partition `i`'s robots cache.
    pub fn robots_cache_of(&self, partitions: usize, i: usize) -> PathBuf {
        self.fetch_state(partitions, i).join(names::ROBOTS_CACHE)
    }

    /// `fetch_state/<n>/p<i>/fetch.lease`: the lease of partition `i` while a task
    /// fetches it ([`super::lease`]).
    pub fn fetch_lease(&self, partitions: usize, i: usize) -> PathBuf {
        self.fetch_state(partitions, i).join(names::FETCH_LEASE)
    }

    /// `_jobs/fetch-checkpoints/<segment>/`: the checkpoints fetch attempts of
    /// `segment` published (`fetch.checkpoint_interval`), removed by its fetch commit.
    pub fn fetch_checkpoints_of(&self, segment: &str) -> PathBuf {
        self.root
            .join(names::JOBS)
            .join(names::FETCH_CHECKPOINTS)
            .join(segment)
    }

    /// `_jobs/fetch-checkpoints/<segment>/<n>/`: those of its fetch list's `n`
    /// partitions (`<pset>/<checkpoint>/` below).
    pub fn fetch_checkpoints(&self, segment: &str, partitions: usize) -> PathBuf {
        self.fetch_checkpoints_of(segment)
            .join(format!("{partitions:05}"))
    }

    /// Reads the crawldb's `_meta.json`.
    pub fn crawldb_meta(&self) -> Result<CrawlDbMeta> {
        parquet::read_json(&self.crawldb_current().join(CRAWLDB_META))
    }

    /// Finishes an install of the crawldb that a killed stage left half done.
    pub fn recover_crawldb(&self) -> Result<()> {
        self.versioned(VersionedDb::CrawlDb).recover()
    }

    /// All complete segments, oldest first.
    pub fn segments(&self) -> Result<Vec<Segment>> {
        let dir = self.segments_dir();
        if !dir.is_dir() {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for entry in fs::read_dir(&dir).at(&dir)? {
            let entry = entry.at(&dir)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.len() == 14 && name.bytes().all(|b| b.is_ascii_digit()) {
                out.push(Segment::new(entry.path()));
            }
        }
        out.sort_by(|a, b| a.name().cmp(b.name()));
        Ok(out)
    }

    /// Opens a segment given as a path or as a name under `segments/`.
    pub fn segment(&self, arg: &Path) -> Result<Segment> {
        let path = if arg.is_dir() {
            arg.to_path_buf()
        } else {
            self.segments_dir().join(arg)
        };
        if !path.join(SEGMENT_META).is_file() {
            return Err(Error::crawl_dir(
                &path,
                "not a segment (no _meta.json); list segments with `ls <crawl-dir>/segments` or pass the path `generate` printed",
            ));
        }
        Ok(Segment::new(path))
    }

    /// The newest segment, if any.
    pub fn latest_segment(&self) -> Result<Option<Segment>> {
        Ok(self.segments()?.pop())
    }
}

/// Why a stage refuses a crawl directory that does not exist (after its path).
pub const NO_CRAWL_DIR: &str =
    "no such crawl directory: run `inject SEEDS` first to create it, or pass the right --crawl-dir";
/// Why a stage refuses a crawl directory without a crawldb (an empty one, say).
pub const NO_CRAWLDB: &str = "no crawldb (no complete crawldb/current/): run `inject SEEDS` first, or pass the right --crawl-dir";

/// The crawldb's `_meta.json`, stored inside each version so it changes atomically with it.
pub const CRAWLDB_META: &str = names::META;
/// A segment's `_meta.json`.
pub const SEGMENT_META: &str = names::META;

/// Facts stored with each crawldb version.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CrawlDbMeta {
    /// Number of partitions (part files).
    pub partitions: usize,
    /// What the partitions group URLs by (`crawl.partition_key` when inject created
    /// the crawldb, or `repartition --partition-key`); `host` in crawls older than it.
    #[serde(default)]
    pub partition_key: PartitionKey,
    /// Segments whose fetch and parse results are merged into this version.
    #[serde(default)]
    pub applied_segments: Vec<String>,
    /// Segments *partially* applied: only their fetch statuses are merged
    /// (`updatedb --no-parse`); a later `updatedb` after `parse` merges the rest
    /// (signatures, outlinks) and moves them to `applied_segments`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partial_segments: Vec<String>,
    /// Seed hosts (for scope filters); filled by inject.
    #[serde(default)]
    pub seed_hosts: Vec<String>,
    /// The time the version was written (ms UTC).
    #[serde(default)]
    pub written_time: i64,
    /// The stage that wrote it.
    #[serde(default)]
    pub written_by: String,
}

impl CrawlDbMeta {
    /// The crawl's partitioning (count and key).
    pub fn partitioner(&self) -> Partitioner {
        Partitioner::new(self.partitions, self.partition_key)
    }

    /// Whether every result of segment `name` is merged into this version.
    pub fn is_applied(&self, name: &str) -> bool {
        self.applied_segments.iter().any(|a| a == name)
    }

    /// Whether only the fetch statuses of segment `name` are merged (`updatedb --no-parse`).
    pub fn is_partial(&self, name: &str) -> bool {
        self.partial_segments.iter().any(|a| a == name)
    }

    /// Whether the fetch statuses of segment `name` are merged (fully or partially applied).
    pub fn fetch_applied(&self, name: &str) -> bool {
        self.is_applied(name) || self.is_partial(name)
    }
}

/// Facts about a segment, written by generate.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SegmentMeta {
    /// The segment's name (UTC yyyyMMddHHmmss).
    pub name: String,
    /// When generate created it (ms UTC).
    pub generated_time: i64,
    /// Number of partitions of its datasets.
    pub partitions: usize,
    /// What its partitions group URLs by (the crawldb's key when it was generated);
    /// `host` in segments older than it.
    #[serde(default)]
    pub partition_key: PartitionKey,
    /// URLs in the fetch list.
    pub urls: u64,
    /// Whether its `crawl_parse/` carries the redirect targets of its `crawl_fetch/`
    /// (rows of kind `redirect`, routed to the target's partition by parse: the
    /// redirect shuffle). Set by parse's commit; `false` for segments parsed before,
    /// whose redirects updatedb reads from `crawl_fetch/` as it always did.
    #[serde(default)]
    pub redirects_in_crawl_parse: bool,
}

impl SegmentMeta {
    /// The segment's partitioning (count and key).
    pub fn partitioner(&self) -> Partitioner {
        Partitioner::new(self.partitions, self.partition_key)
    }
}

/// One segment directory.
#[derive(Debug, Clone)]
pub struct Segment {
    path: PathBuf,
    name: String,
}

impl Segment {
    /// A segment at `path`.
    pub fn new(path: PathBuf) -> Self {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Segment { path, name }
    }

    /// The segment's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The segment's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Path of one of its datasets (`crawl_fetch/`, ...).
    pub fn dataset(&self, dataset: SegmentDataset) -> PathBuf {
        self.path.join(dataset.as_str())
    }

    /// Whether one of its datasets is complete.
    pub fn has(&self, dataset: SegmentDataset) -> bool {
        parquet::dataset_complete(&self.dataset(dataset))
    }

    /// Checks one of its datasets against its manifest ([`integrity::verify`]) when
    /// the dataset is complete; an absent or unfinished dataset is left to
    /// [`Segment::require`] and [`Segment::has`].
    pub fn verify(&self, dataset: SegmentDataset, check: Check) -> Result<()> {
        if self.has(dataset) {
            integrity::verify(&self.dataset(dataset), check)?;
        }
        Ok(())
    }

    /// Checks every complete dataset of the segment (each subdirectory with a
    /// `_SUCCESS` marker) against its manifest.
    pub fn verify_all(&self, check: Check) -> Result<()> {
        let mut complete = Vec::new();
        for entry in fs::read_dir(&self.path).at(&self.path)? {
            let entry = entry.at(&self.path)?;
            if entry.path().join(SUCCESS_MARKER).is_file() {
                complete.push(entry.path());
            }
        }
        complete.sort();
        for dataset in complete {
            integrity::verify(&dataset, check)?;
        }
        Ok(())
    }

    /// Reads `_meta.json`.
    pub fn meta(&self) -> Result<SegmentMeta> {
        parquet::read_json(&self.path.join(SEGMENT_META))
    }

    /// Refuses a segment whose partition count is not the crawldb's `partitions`
    /// (a stage that reads it partition by partition beside the crawldb).
    pub fn check_partitions(&self, partitions: usize) -> Result<()> {
        let n = self.meta()?.partitions;
        if n != partitions {
            return Err(Error::crawl_dir(
                &self.path,
                format!(
                    "the segment has {n} partitions and the crawldb {partitions}: run `repartition` first"
                ),
            ));
        }
        Ok(())
    }

    /// Rewrites `_meta.json` (atomically; the caller holds the segment's lock).
    pub fn write_meta(&self, meta: &SegmentMeta) -> Result<()> {
        parquet::write_json(&self.path.join(SEGMENT_META), meta)
    }

    /// Whether `dataset` (`content` or `parse_text`) was deleted by `prunesegs`: it is
    /// gone while the dataset its stage commits after it is there (fetch commits
    /// `content/` before `crawl_fetch/`, parse `parse_text/` before `parse_data/`).
    pub fn pruned(&self, dataset: SegmentDataset) -> bool {
        let after = match dataset {
            SegmentDataset::Content => SegmentDataset::CrawlFetch,
            SegmentDataset::ParseText => SegmentDataset::ParseData,
            _ => return false,
        };
        !self.dataset(dataset).exists() && self.has(after)
    }

    /// Fails with a helpful message unless `dataset` is complete; `stage` is the
    /// stage that writes it. A complete dataset is checked against its manifest
    /// ([`Check::Sizes`]).
    pub fn require(&self, dataset: SegmentDataset, stage: &str) -> Result<PathBuf> {
        if self.has(dataset) {
            integrity::verify(&self.dataset(dataset), Check::Sizes)?;
            Ok(self.dataset(dataset))
        } else if self.pruned(dataset) {
            Err(Error::crawl_dir(
                &self.path,
                format!(
                    "segment {}: its {dataset}/ was pruned by prunesegs (deleted once the segment was applied); it cannot be read any more: crawl the URLs again in a new round if you need it",
                    self.name
                ),
            ))
        } else {
            Err(Error::crawl_dir(
                &self.path,
                format!(
                    "segment has no complete {dataset}/: run `{stage}` on it first (segment {})",
                    self.name
                ),
            ))
        }
    }
}

/// A new segment name for `now_ms` that does not collide with existing ones.
pub fn new_segment_name(dir: &CrawlDir, now_ms: i64) -> String {
    let mut t = now_ms / 1000;
    loop {
        let name = chrono::DateTime::from_timestamp(t, 0)
            .map(|d| d.format("%Y%m%d%H%M%S").to_string())
            .unwrap_or_else(|| format!("{t:014}"));
        if !dir.segments_dir().join(&name).exists() {
            return name;
        }
        t += 1;
    }
}
