//! `repartition`: changes the partition count and/or the partition key of an existing
//! crawl (`crawl.partitions` and `crawl.partition_key` are otherwise fixed when the
//! crawldb is created).
//!
//! **What is rewritten.** Every partitioned dataset, to `N` parts by key `K` (host or
//! registrable domain), each part `i` holding exactly the hosts with
//! [`Partitioner::of_host`]`(host) == i` (the function is unchanged, so every crawl
//! stays valid): the crawldb (a new version, `old/` keeps the previous one,
//! `_meta.json` says `N` and `K`), the linkdb (a new version), `pagerank/` with
//! `hits/` and `hosts/`, and every dataset of every segment (`crawl_generate`,
//! `crawl_fetch`, `content`, `robots`, `parse_text`, `parse_data`, `crawl_parse`,
//! `parse_inlinks`; the segment's `_meta.json` says `N` and `K`). The
//! `sitemapdb` is one part keyed by sitemap URL, not by host: it is left as it is.
//! Rows are moved as Arrow batches, never decoded: whatever a dataset's schema, its
//! rows come out unchanged. A row's host is its `host` column, or the host of its
//! `url` column when it has none (the linkdb, `parse_*`, `pagerank/`), as the
//! writers partition them.
//!
//! **Order within a part.** The crawldb (by URL), the linkdb (by URL, then source),
//! `pagerank/` (by URL, `hosts/` by host) and `robots` (by origin) stay sorted; the
//! other segment datasets keep the order of their rows within a host (a fetch list's
//! order, content and parse rows in fetch order).
//!
//! **Split or shuffle.** With `% n` partitioning, when the key stays and `N` is a
//! multiple of the old count `M`, a host in new part `j` was in old part `j % M`:
//! each new part is made
//! from exactly one old part, a local split without a shuffle. Growing 8 -> 64 ->
//! 512 is then one task per old part ([`DatasetRewrite::run_partition`]: old part
//! `i` streamed into new parts `i, i + M, i + 2M, ...`), which a cluster runs where
//! the old part lies. Any other count needs a full shuffle, still streaming: each
//! old part is streamed into one fragment per new part (`run_partition`), then
//! each new part merges its fragments ([`DatasetRewrite::merge_partition`]; a k-way
//! merge for the sorted datasets). Memory is bounded by a read batch and by the
//! row groups being encoded (a budget per task), never by a part's size.
//!
//! **Order of the installs and crash safety.** The crawldb, linkdb and segment locks
//! are held for the whole run, and every dataset to be read is checked against its
//! manifest's checksums before anything is written. Segments go first, one at a
//! time: a segment is written whole under `segments/<name>.repartition-new` (its
//! datasets already at `N`, and other files, hard-linked), then swapped in with two
//! renames, so a segment is always entirely old or entirely new, never a mix (readers
//! accept a segment whose partition count differs from the crawldb's: they filter
//! by host). Then `pagerank/`, the linkdb, and last the crawldb: its count is what
//! readers of segments compare with. A kill at any point leaves a usable crawl; a
//! rerun finishes the job, skipping what is already at `N` and finishing a segment
//! swap a kill interrupted (the only moment a segment is briefly absent).

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::fs::{self, File};
use std::path::{Path, PathBuf};

use ::parquet::arrow::ArrowWriter;
use ::parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use arrow::array::{Array, ArrayRef, AsArray, StringArray, UInt32Array};
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use rayon::prelude::*;
use serde::Serialize;

use super::segstate::Applied;
use crate::datum::now_millis;
use crate::error::{Error, IoContext, Result};
use crate::graph::ids::url_host;
use crate::graph::linkdb::{LINKDB_META, LinkDbMeta};
use crate::stage::{Report, StageCtx};
use crate::store::integrity::{self, Check};
use crate::store::jobs::{Markers, link_tree};
use crate::store::layout::{CRAWLDB_META, CrawlDbMeta, CrawlDir, SEGMENT_META, Segment};
use crate::store::lock::{Lock, segment_lock_path};
use crate::store::names::{self, SegmentDataset, VersionedDb};
use crate::store::parquet::{self, ROW_GROUP_ROWS, SUCCESS_MARKER, StagedDataset, part_name};
use crate::store::partition::{PartitionKey, Partitioner};
use crate::store::versioned::test_pause;

/// The stage name (locks, summary line).
const STAGE: &str = "repartition";

/// Decoded bytes a task reads at once (one batch; split among a merge's inputs).
const READ_BYTES: usize = 16 << 20;

/// Bytes of row groups being encoded across one task's writers: above it, the
/// largest row group is closed early (small row groups for large fan-outs).
const WRITE_BUDGET: usize = 64 << 20;

/// Rows a k-way merge gathers before it writes them out.
const MERGE_OUT_ROWS: usize = 8192;

/// What one repartition run does.
#[derive(Debug, Clone)]
pub struct RepartitionOpts {
    /// The new partition count (the range of `crawl.partitions`); `None` keeps the
    /// crawl's.
    pub partitions: Option<usize>,
    /// The new partition key; `None` keeps the crawl's.
    pub partition_key: Option<PartitionKey>,
}

/// What a repartition run did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RepartitionReport {
    /// The crawldb's partition count before the run.
    pub from: usize,
    /// The new partition count.
    pub to: usize,
    /// The crawldb's partition key before the run.
    pub from_key: PartitionKey,
    /// The new partition key.
    pub to_key: PartitionKey,
    /// Whether every dataset was split locally (`to` a multiple of `from`).
    pub split: bool,
    /// Crawldb rows rewritten (`None`: it already had `to` parts).
    pub crawldb_urls: Option<u64>,
    /// Linkdb rows rewritten (`None`: no linkdb, or already at `to` parts).
    pub linkdb_rows: Option<u64>,
    /// `pagerank/` rows rewritten, `hits/` and `hosts/` included (`None`: none, or
    /// already at `to` parts).
    pub pagerank_rows: Option<u64>,
    /// Segments rewritten.
    pub segments: Vec<String>,
    /// Segment datasets rewritten.
    pub segment_datasets: usize,
    /// Rows of the segment datasets rewritten.
    pub segment_rows: u64,
    /// Segments already at `to` parts (left as they are).
    pub segments_skipped: usize,
    /// Segments whose swap a killed run left half done, finished by this run.
    pub recovered: Vec<String>,
}

impl fmt::Display for RepartitionReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rows = |r: Option<u64>, what: &str| match r {
            Some(n) => format!("{n} {what}"),
            None => format!("already at {} or absent", self.to),
        };
        write!(f, "{} -> {} partitions", self.from, self.to)?;
        if self.from_key != self.to_key {
            write!(f, ", key {} -> {}", self.from_key, self.to_key)?;
        }
        write!(
            f,
            " ({}), crawldb {}, linkdb {}, pagerank {}, {} segments ({} datasets, {} rows), {} segments already at {}",
            if self.split { "split" } else { "shuffle" },
            rows(self.crawldb_urls, "urls"),
            rows(self.linkdb_rows, "inlinks"),
            rows(self.pagerank_rows, "rows"),
            self.segments.len(),
            self.segment_datasets,
            self.segment_rows,
            self.segments_skipped,
            self.to
        )?;
        if !self.recovered.is_empty() {
            write!(
                f,
                ", finished the interrupted swap of {}",
                self.recovered.join(", ")
            )?;
        }
        Ok(())
    }
}

impl Report for RepartitionReport {
    const STAGE: &'static str = STAGE;
}

/// Repartitions the crawl directory of `ctx` (which must hold a crawldb) to
/// `opts.partitions` parts by `opts.partition_key` (each the crawl's when not
/// given); see the module doc for the order and crash safety. The configuration's
/// `crawl.partition_key` is not compared with the crawl's here: this is the tool
/// that changes it.
pub fn run(ctx: &StageCtx, opts: &RepartitionOpts) -> Result<RepartitionReport> {
    if opts.partitions.is_none() && opts.partition_key.is_none() {
        return Err(Error::input(
            "repartition",
            "give the new partition count (--partitions N), the new partition key (--partition-key host|domain), or both",
        ));
    }
    let dir = CrawlDir::open_existing(ctx.root())?;
    // The crawldb and linkdb locks, held to the end: no stage rewrites them (or
    // generates a segment) meanwhile.
    let (_held, _applied) = Applied::lock(ctx, &dir, STAGE)?;
    let before = dir.crawldb_meta()?;
    let n = opts.partitions.unwrap_or(before.partitions);
    let key = opts.partition_key.unwrap_or(before.partition_key);
    let mut cfg = ctx.config().clone();
    cfg.crawl.partitions = n;
    cfg.validate_flags()
        .map_err(|e| Error::input("--partitions", e.to_string()))?;
    let to = Partitioner::new(n, key);
    let from = before.partitions;
    let mut report = RepartitionReport {
        from,
        to: n,
        from_key: before.partition_key,
        to_key: key,
        split: from > 0 && n.is_multiple_of(from) && key == before.partition_key,
        ..RepartitionReport::default()
    };
    // Every segment's lock (those a killed run was swapping included), held to the
    // end: no fetch, parse or segment tool touches a segment meanwhile.
    let _segment_locks = segment_names(&dir)?
        .iter()
        .map(|s| Lock::acquire(&segment_lock_path(&dir.segments_dir().join(s)), STAGE))
        .collect::<Result<Vec<_>>>()?;
    report.recovered = recover_segments(&dir)?;

    let plan = Plan::make(&dir, to)?;
    report.segments_skipped = plan.segments_skipped;
    if plan.is_empty() {
        if report.recovered.is_empty() {
            return Err(Error::input(
                "--partitions",
                format!(
                    "{}: the crawl already has {n} partitions by {key} (crawldb, linkdb, pagerank and every segment): nothing to do",
                    dir.root().display()
                ),
            ));
        }
        return Ok(report);
    }
    plan.verify(&dir)?;

    for seg in &plan.segments {
        let (datasets, rows) = rewrite_segment(seg, to)?;
        report.segments.push(seg.name().to_string());
        report.segment_datasets += datasets;
        report.segment_rows += rows;
    }
    if plan.pagerank {
        report.pagerank_rows = Some(rewrite_pagerank(&dir, to)?);
    }
    if plan.linkdb {
        report.linkdb_rows = Some(rewrite_linkdb(&dir, to)?);
    }
    if plan.crawldb {
        report.crawldb_urls = Some(rewrite_crawldb(&dir, to)?);
    }
    Ok(report)
}

/// Stops the run at a SIGINT/SIGTERM between two units of work.
fn interrupted() -> Result<()> {
    crate::signal::check(
        "repartition stopped: what it installed is complete and readable (segments and datasets already at the new count, the rest as before); rerun repartition to finish",
    )
}

/// What a run has to rewrite.
struct Plan {
    crawldb: bool,
    linkdb: bool,
    pagerank: bool,
    segments: Vec<Segment>,
    segments_skipped: usize,
}

impl Plan {
    fn make(dir: &CrawlDir, to: Partitioner) -> Result<Plan> {
        let crawldb = dir.crawldb_meta()?.partitioner() != to;
        let linkdb_cur = dir.linkdb_current();
        let linkdb = parquet::dataset_complete(&linkdb_cur)
            && needs_rewrite(&linkdb_cur, meta_key(&linkdb_cur.join(LINKDB_META))?, to)?;
        let pagerank = pagerank_needs_rewrite(&dir.pagerank(), to)?;
        let mut segments = Vec::new();
        let mut segments_skipped = 0;
        for seg in dir.segments()? {
            if !seg.path().join(SEGMENT_META).is_file() {
                tracing::warn!(
                    "{}: not a segment (no _meta.json): left as it is",
                    seg.path().display()
                );
                continue;
            }
            if segment_needs_rewrite(&seg, to)? {
                segments.push(seg);
            } else {
                segments_skipped += 1;
            }
        }
        Ok(Plan {
            crawldb,
            linkdb,
            pagerank,
            segments,
            segments_skipped,
        })
    }

    fn is_empty(&self) -> bool {
        !self.crawldb && !self.linkdb && !self.pagerank && self.segments.is_empty()
    }

    /// Checks the blake3 of everything the run will read (and the part list and
    /// sizes of what it only links), so that a damaged file is refused before
    /// anything is written.
    fn verify(&self, dir: &CrawlDir) -> Result<()> {
        if self.crawldb {
            dir.verify_crawldb(Check::Checksums)?;
        }
        if self.linkdb {
            integrity::verify(&dir.linkdb_current(), Check::Checksums)?;
        }
        if self.pagerank {
            for d in datasets_in_tree(&dir.pagerank())? {
                integrity::verify(&d, Check::Checksums)?;
            }
        }
        for seg in &self.segments {
            for ds in SegmentDataset::ALL {
                seg.verify(ds, Check::Checksums)?;
            }
            seg.verify_all(Check::Sizes)?;
        }
        Ok(())
    }
}

/// Whether the complete dataset `dir`, partitioned by `key`, is not partitioned as
/// `to`: another part count, or another key (a dataset without parts has nothing to
/// move).
fn needs_rewrite(dir: &Path, key: PartitionKey, to: Partitioner) -> Result<bool> {
    let parts = parquet::part_files(dir)?.len();
    Ok(parts != 0 && (parts != to.n() || key != to.key()))
}

/// The `partition_key` of the `_meta.json` at `path` (`host` when it has none, as
/// in crawls older than the key).
fn meta_key(path: &Path) -> Result<PartitionKey> {
    #[derive(serde::Deserialize)]
    struct Keyed {
        #[serde(default)]
        partition_key: PartitionKey,
    }
    if !path.is_file() {
        return Ok(PartitionKey::Host);
    }
    Ok(parquet::read_json::<Keyed>(path)?.partition_key)
}

/// Whether a segment's `_meta.json` or one of its complete datasets is not
/// partitioned as `to`.
fn segment_needs_rewrite(seg: &Segment, to: Partitioner) -> Result<bool> {
    let meta = seg.meta()?;
    if meta.partitioner() != to {
        return Ok(true);
    }
    for ds in SegmentDataset::ALL {
        if seg.has(ds) && needs_rewrite(&seg.dataset(ds), meta.partition_key, to)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Whether `pagerank/` (or one of its `hits/`, `hosts/`) is complete and not
/// partitioned as `to`.
fn pagerank_needs_rewrite(dir: &Path, to: Partitioner) -> Result<bool> {
    if !parquet::dataset_complete(dir) {
        return Ok(false);
    }
    let key = meta_key(&dir.join(crate::graph::stage::PAGERANK_META))?;
    for d in datasets_in_tree(dir)? {
        if needs_rewrite(&d, key, to)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `dir` and its direct subdirectories that are complete datasets.
fn datasets_in_tree(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = vec![dir.to_path_buf()];
    for p in sorted_entries(dir)? {
        if p.is_dir() && parquet::dataset_complete(&p) {
            out.push(p);
        }
    }
    Ok(out)
}

/// The entries of `dir`, sorted by name.
fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).at(dir)? {
        out.push(e.at(dir)?.path());
    }
    out.sort();
    Ok(out)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------
// Segments: written whole beside the segment, then swapped in.

/// `segments/<name>.<suffix>`.
fn sibling(seg_dir: &Path, suffix: &str) -> PathBuf {
    seg_dir.with_file_name(format!("{}.{suffix}", file_name(seg_dir)))
}

/// A segment's name (`yyyyMMddHHmmss`).
fn is_segment_name(name: &str) -> bool {
    name.len() == 14 && name.bytes().all(|b| b.is_ascii_digit())
}

/// The segment a `<name>.repartition-new` / `<name>.repartition-old` entry belongs to.
fn swap_base(entry: &str) -> Option<&str> {
    [names::REPARTITION_NEW, names::REPARTITION_OLD]
        .iter()
        .find_map(|suffix| entry.strip_suffix(suffix)?.strip_suffix('.'))
        .filter(|b| is_segment_name(b))
}

/// The names of every segment, and of segments a killed run was swapping.
fn segment_names(dir: &CrawlDir) -> Result<Vec<String>> {
    let mut out: Vec<String> = dir
        .segments()?
        .iter()
        .map(|s| s.name().to_string())
        .collect();
    let segs = dir.segments_dir();
    if segs.is_dir() {
        for p in sorted_entries(&segs)? {
            if let Some(base) = swap_base(&file_name(&p)) {
                out.push(base.to_string());
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Finishes the segment swaps a killed run left half done (under the segments'
/// locks): a complete `<name>.repartition-new` replaces `<name>` (or takes its
/// place when it is gone), a `<name>.repartition-old` is deleted once `<name>` is
/// there (or renamed back when it is not). Returns the segments concerned.
fn recover_segments(dir: &CrawlDir) -> Result<Vec<String>> {
    let segs = dir.segments_dir();
    let mut recovered = Vec::new();
    if !segs.is_dir() {
        return Ok(recovered);
    }
    let suffix_new = format!(".{}", names::REPARTITION_NEW);
    for p in sorted_entries(&segs)? {
        let name = file_name(&p);
        let Some(base) = swap_base(&name) else {
            continue;
        };
        let seg = segs.join(base);
        if name.ends_with(&suffix_new) {
            if !parquet::dataset_complete(&p) {
                fs::remove_dir_all(&p).at(&p)?;
                continue;
            }
            tracing::warn!("finishing an interrupted repartition of segment {base}");
            if seg.exists() {
                swap_in(&seg, &p)?;
            } else {
                fs::rename(&p, &seg).at(&p)?;
            }
        } else if seg.exists() {
            fs::remove_dir_all(&p).at(&p)?;
        } else {
            tracing::warn!("restoring segment {base} after an interrupted repartition");
            fs::rename(&p, &seg).at(&p)?;
        }
        recovered.push(base.to_string());
    }
    recovered.dedup();
    Ok(recovered)
}

/// Replaces the segment at `seg` by the complete segment at `new`: `seg` becomes
/// `<name>.repartition-old`, `new` becomes `seg`, the old one is deleted.
fn swap_in(seg: &Path, new: &Path) -> Result<()> {
    let old = sibling(seg, names::REPARTITION_OLD);
    if old.exists() {
        fs::remove_dir_all(&old).at(&old)?;
    }
    fs::rename(seg, &old).at(seg)?;
    test_pause("repartition:swapping");
    fs::rename(new, seg).at(new)?;
    fs::remove_dir_all(&old).at(&old)?;
    Ok(())
}

/// How the rows of a segment dataset are ordered in a part.
fn segment_order(ds: SegmentDataset) -> Order {
    match ds {
        SegmentDataset::Robots => Order::Columns(&["origin"]),
        _ => Order::Stream,
    }
}

/// Rewrites one segment to the partitioning `to` (see the module doc). Returns the
/// datasets rewritten and their rows.
fn rewrite_segment(seg: &Segment, to: Partitioner) -> Result<(usize, u64)> {
    interrupted()?;
    let key = seg.meta()?.partition_key;
    let new = sibling(seg.path(), names::REPARTITION_NEW);
    let staged = StagedDataset::new(&new)?;
    let (mut datasets, mut rows) = (0, 0);
    for src in sorted_entries(seg.path())? {
        let name = file_name(&src);
        let dst = staged.path().join(&name);
        if name.contains(".tmp-") || name == SUCCESS_MARKER {
            // Leftovers of killed runs; the marker is written again when sealed.
            continue;
        }
        if name == SEGMENT_META {
            write_meta_partitions(&src, &dst, to)?;
            continue;
        }
        match SegmentDataset::parse(&name) {
            Some(ds) if parquet::dataset_complete(&src) && needs_rewrite(&src, key, to)? => {
                interrupted()?;
                fs::create_dir_all(&dst).at(&dst)?;
                rows += DatasetRewrite::plan(&src, &dst, key, to, segment_order(ds))?.run()?;
                integrity::seal(&dst)?;
                datasets += 1;
            }
            _ => link_tree(&src, &dst, Markers::Keep)?,
        }
    }
    staged.commit()?;
    test_pause("repartition:segment-staged");
    interrupted()?;
    swap_in(seg.path(), &new)?;
    test_pause("repartition:segment-installed");
    Ok((datasets, rows))
}

/// Writes the JSON object of `src` to `dst` with its `partitions` and
/// `partition_key` set to `to`'s (every other field kept as it is).
fn write_meta_partitions(src: &Path, dst: &Path, to: Partitioner) -> Result<()> {
    let mut v: serde_json::Value = parquet::read_json(src)?;
    let Some(obj) = v.as_object_mut() else {
        return Err(Error::crawl_dir(
            src,
            "not a JSON object: the file is damaged; restore it",
        ));
    };
    obj.insert("partitions".into(), serde_json::Value::from(to.n()));
    obj.insert(
        "partition_key".into(),
        serde_json::Value::from(to.key().as_str()),
    );
    parquet::write_json(dst, &v)
}

// ---------------------------------------------------------------------------
// pagerank/, the linkdb and the crawldb.

/// Rewrites `pagerank/` (its parts, `hits/`, `hosts/`, `_meta.json`) to the
/// partitioning `to` and replaces it as one. Returns the rows rewritten.
fn rewrite_pagerank(dir: &CrawlDir, to: Partitioner) -> Result<u64> {
    interrupted()?;
    let src = dir.pagerank();
    let key = meta_key(&src.join(crate::graph::stage::PAGERANK_META))?;
    let staged = StagedDataset::new(&src)?;
    let mut rows = DatasetRewrite::plan(&src, staged.path(), key, to, Order::Key)?.run()?;
    for p in sorted_entries(&src)? {
        let name = file_name(&p);
        let dst = staged.path().join(&name);
        if integrity::is_part_name(&name) || name == SUCCESS_MARKER || name.contains(".tmp-") {
            continue;
        }
        if name == crate::graph::stage::PAGERANK_META {
            write_meta_partitions(&p, &dst, to)?;
        } else if p.is_dir() && parquet::dataset_complete(&p) {
            fs::create_dir_all(&dst).at(&dst)?;
            rows += DatasetRewrite::plan(&p, &dst, key, to, Order::Key)?.run()?;
            integrity::seal(&dst)?;
        } else {
            link_tree(&p, &dst, Markers::Keep)?;
        }
    }
    interrupted()?;
    staged.commit_replacing()?;
    Ok(rows)
}

/// Hard-links the files of `src` other than its parts, its marker and its
/// `_meta.json` (rewritten by the caller) into `dst`.
fn link_extras(src: &Path, dst: &Path, meta: &str) -> Result<()> {
    for p in sorted_entries(src)? {
        let name = file_name(&p);
        if integrity::is_part_name(&name) || name == SUCCESS_MARKER || name == meta {
            continue;
        }
        link_tree(&p, &dst.join(&name), Markers::Keep)?;
    }
    Ok(())
}

/// Writes a new linkdb version partitioned as `to` (sorted by URL, then source) and
/// installs it. Returns its rows.
fn rewrite_linkdb(dir: &CrawlDir, to: Partitioner) -> Result<u64> {
    interrupted()?;
    let db = dir.versioned(VersionedDb::LinkDb);
    let current = db.current();
    let mut meta: LinkDbMeta = parquet::read_json(&current.join(LINKDB_META))?;
    let staged = db.stage()?;
    let rows = DatasetRewrite::plan(
        &current,
        staged.path(),
        meta.partition_key,
        to,
        Order::Columns(&["url", "from_url"]),
    )?
    .run()?;
    link_extras(&current, staged.path(), LINKDB_META)?;
    meta.partitions = to.n();
    meta.partition_key = to.key();
    meta.written_time = now_millis();
    parquet::write_json(&staged.path().join(LINKDB_META), &meta)?;
    db.install(staged, STAGE)?;
    Ok(rows)
}

/// Writes a new crawldb version partitioned as `to` (sorted by URL) with its count
/// and key in its `_meta.json`, and installs it (the previous version becomes
/// `old/`). Returns its rows.
fn rewrite_crawldb(dir: &CrawlDir, to: Partitioner) -> Result<u64> {
    interrupted()?;
    let db = dir.versioned(VersionedDb::CrawlDb);
    let current = db.current();
    let mut meta: CrawlDbMeta = dir.crawldb_meta()?;
    let staged = db.stage()?;
    let rows = DatasetRewrite::plan(
        &current,
        staged.path(),
        meta.partition_key,
        to,
        Order::Columns(&["url"]),
    )?
    .run()?;
    link_extras(&current, staged.path(), CRAWLDB_META)?;
    meta.partitions = to.n();
    meta.partition_key = to.key();
    meta.written_time = now_millis();
    meta.written_by = STAGE.to_string();
    parquet::write_json(&staged.path().join(CRAWLDB_META), &meta)?;
    db.install(staged, STAGE)?;
    Ok(rows)
}

// ---------------------------------------------------------------------------
// One dataset: split or shuffle, streaming.

/// How the rows of a rewritten part are ordered.
#[derive(Debug, Clone, Copy)]
pub enum Order {
    /// As they come: the old parts' order within each host, old parts in order.
    Stream,
    /// Sorted by these string columns (each old part is sorted by them): a split
    /// keeps the order, a shuffle merges.
    Columns(&'static [&'static str]),
    /// Sorted by the partition key column (`host`, else `url`).
    Key,
}

/// The column a dataset is partitioned by: `host`, or the host of `url`.
#[derive(Debug, Clone, Copy)]
enum KeyCol {
    Host(usize),
    Url(usize),
}

/// The rewrite of one dataset to `n` parts by a key (see the module doc): its old parts,
/// the directory the new parts go to, and how. Run it whole with
/// [`DatasetRewrite::run`], or unit by unit: [`DatasetRewrite::run_partition`] for
/// every old part, then (for a shuffle) [`DatasetRewrite::merge_partition`] for
/// every new part.
pub struct DatasetRewrite {
    parts: Vec<PathBuf>,
    dest: PathBuf,
    n: usize,
    /// The new partitioning (`n` parts).
    to: Partitioner,
    schema: SchemaRef,
    key: KeyCol,
    sort: Vec<usize>,
    split: bool,
}

impl DatasetRewrite {
    /// Plans the rewrite of the dataset `src` (checked against its manifest's part
    /// list and sizes), partitioned by `from` now, into the partitioning `to` in
    /// `dest` (an existing, empty directory).
    pub fn plan(
        src: &Path,
        dest: &Path,
        from: PartitionKey,
        to: Partitioner,
        order: Order,
    ) -> Result<DatasetRewrite> {
        let n = to.n();
        let parts = parquet::part_files(src)?;
        let Some(first) = parts.first() else {
            return Err(Error::crawl_dir(
                src,
                "has no part files: nothing to repartition",
            ));
        };
        let schema = file_schema(first)?;
        for p in &parts[1..] {
            if file_schema(p)?.fields() != schema.fields() {
                return Err(Error::crawl_dir(
                    p,
                    format!(
                        "has another schema than {}: the parts of one dataset must agree; restore the dataset",
                        first.display()
                    ),
                ));
            }
        }
        let column = |name: &str| -> Result<usize> {
            let i = schema.index_of(name).map_err(|_| {
                Error::crawl_dir(
                    src,
                    format!("has no column {name:?}: cannot repartition it"),
                )
            })?;
            if !matches!(
                schema.field(i).data_type(),
                arrow::datatypes::DataType::Utf8
            ) {
                return Err(Error::crawl_dir(
                    src,
                    format!("column {name:?} is not a string column: cannot repartition it"),
                ));
            }
            Ok(i)
        };
        let key = match column("host") {
            Ok(i) => KeyCol::Host(i),
            Err(_) => KeyCol::Url(column("url")?),
        };
        let sort = match order {
            Order::Stream => Vec::new(),
            Order::Columns(cols) => cols.iter().map(|c| column(c)).collect::<Result<_>>()?,
            Order::Key => vec![match key {
                KeyCol::Host(i) | KeyCol::Url(i) => i,
            }],
        };
        let indexed = parts
            .iter()
            .enumerate()
            .all(|(i, p)| file_name(p) == part_name(i));
        Ok(DatasetRewrite {
            split: indexed && from == to.key() && n.is_multiple_of(parts.len()),
            parts,
            dest: dest.to_path_buf(),
            n,
            to,
            schema,
            key,
            sort,
        })
    }

    /// Whether each new part is made from one old part (the same key, `n` a multiple
    /// of the old count): no shuffle, no [`DatasetRewrite::merge_partition`].
    pub fn is_split(&self) -> bool {
        self.split
    }

    /// The old part count (the units of [`DatasetRewrite::run_partition`]).
    pub fn old_parts(&self) -> usize {
        self.parts.len()
    }

    /// Runs every unit (rayon) and removes the fragments; returns the rows written.
    pub fn run(&self) -> Result<u64> {
        let m = self.parts.len();
        let rows = (0..m)
            .into_par_iter()
            .map(|i| self.run_partition(i))
            .collect::<Result<Vec<u64>>>()?
            .into_iter()
            .sum();
        if self.split {
            return Ok(rows);
        }
        let merged: u64 = (0..self.n)
            .into_par_iter()
            .map(|j| self.merge_partition(j))
            .collect::<Result<Vec<u64>>>()?
            .into_iter()
            .sum();
        let frag = self.dest.join(names::FRAGMENTS);
        if frag.exists() {
            fs::remove_dir_all(&frag).at(&frag)?;
        }
        Ok(merged)
    }

    /// Old part `i`, streamed: for a split, into new parts `i, i + m, i + 2m, ...`
    /// (all written, empty ones too); for a shuffle, into one fragment per new part
    /// that receives rows. Returns the rows written.
    pub fn run_partition(&self, i: usize) -> Result<u64> {
        interrupted()?;
        let m = self.parts.len();
        let src = &self.parts[i];
        let frag_dir = self.dest.join(names::FRAGMENTS).join(i.to_string());
        if !self.split {
            fs::create_dir_all(&frag_dir).at(&frag_dir)?;
        }
        let path_of = |t: usize| {
            if self.split {
                self.dest.join(part_name(t))
            } else {
                frag_dir.join(part_name(t))
            }
        };
        let mut router = Router::new(self.n);
        if self.split {
            for t in (i..self.n).step_by(m) {
                router.open(t, &path_of(t), &self.schema)?;
            }
        }
        for batch in open_reader(src, READ_BYTES)? {
            let batch = batch.map_err(|e| Error::arrow(src.display().to_string(), e))?;
            let targets = self.targets(&batch, src)?;
            for (t, rows) in group(&targets) {
                if self.split && t % m != i {
                    return Err(Error::Integrity {
                        path: src.clone(),
                        message: format!(
                            "holds a row of partition {t} of {}, which is not in part {i} of {m} (a row is in part Partitioner::of_host(host) of {m} by {}): the dataset is not partitioned as trawl writes it, so it is not repartitioned",
                            self.n,
                            self.to.key()
                        ),
                    });
                }
                let part = if rows.len() == batch.num_rows() {
                    batch.clone()
                } else {
                    arrow::compute::take_record_batch(&batch, &UInt32Array::from(rows))
                        .map_err(|e| Error::arrow(src.display().to_string(), e))?
                };
                router.write(t, &part, &path_of(t), &self.schema)?;
            }
        }
        router.finish(self.split)
    }

    /// New part `j` of a shuffle from its fragments (old part order; merged by the
    /// sort columns when there are). Removes the fragments; returns its rows.
    pub fn merge_partition(&self, j: usize) -> Result<u64> {
        interrupted()?;
        let frag = self.dest.join(names::FRAGMENTS);
        let inputs: Vec<PathBuf> = (0..self.parts.len())
            .map(|i| frag.join(i.to_string()).join(part_name(j)))
            .filter(|p| p.is_file())
            .collect();
        let mut sink = Sink::create(&self.dest.join(part_name(j)), &self.schema)?;
        if self.sort.is_empty() {
            for p in &inputs {
                for b in open_reader(p, READ_BYTES)? {
                    sink.write(&b.map_err(|e| Error::arrow(p.display().to_string(), e))?)?;
                }
            }
        } else {
            merge_sorted(&inputs, &self.sort, &mut sink)?;
        }
        let rows = sink.finish(true)?;
        for p in &inputs {
            fs::remove_file(p).at(p)?;
        }
        Ok(rows)
    }

    /// The new part of every row of `batch`.
    fn targets(&self, batch: &RecordBatch, src: &Path) -> Result<Vec<u32>> {
        let (col, url) = match self.key {
            KeyCol::Host(i) => (i, false),
            KeyCol::Url(i) => (i, true),
        };
        let values = strings(batch.column(col), src)?;
        let mut out = Vec::with_capacity(batch.num_rows());
        let mut last: Option<(String, u32)> = None;
        for r in 0..batch.num_rows() {
            let v = if values.is_null(r) {
                ""
            } else {
                values.value(r)
            };
            let host: Cow<'_, str> = if url { url_host(v) } else { Cow::Borrowed(v) };
            let t = match &last {
                Some((h, t)) if h.as_str() == host.as_ref() => *t,
                _ => {
                    let t = self.to.of_host(&host) as u32;
                    last = Some((host.into_owned(), t));
                    t
                }
            };
            out.push(t);
        }
        Ok(out)
    }
}

/// The rows of each target, in row order, targets ascending.
fn group(targets: &[u32]) -> Vec<(usize, Vec<u32>)> {
    let mut order: Vec<u32> = (0..targets.len() as u32).collect();
    order.sort_by_key(|&r| targets[r as usize]);
    let mut out: Vec<(usize, Vec<u32>)> = Vec::new();
    for r in order {
        let t = targets[r as usize] as usize;
        match out.last_mut() {
            Some((lt, rows)) if *lt == t => rows.push(r),
            _ => out.push((t, vec![r])),
        }
    }
    out
}

fn strings<'a>(col: &'a ArrayRef, src: &Path) -> Result<&'a StringArray> {
    col.as_string_opt::<i32>()
        .ok_or_else(|| Error::crawl_dir(src, "a key column is not a string column"))
}

/// The Arrow schema of a Parquet file.
fn file_schema(path: &Path) -> Result<SchemaRef> {
    let file = File::open(path).at(path)?;
    let b = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| Error::parquet(path, e))?;
    Ok(b.schema().clone())
}

/// Reads `path` in batches of about `budget` decoded bytes (from its footer's row
/// group sizes; at least 64 rows, at most [`ROW_GROUP_ROWS`]).
fn open_reader(path: &Path, budget: usize) -> Result<ParquetRecordBatchReader> {
    let file = File::open(path).at(path)?;
    let b = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| Error::parquet(path, e))?;
    let md = b.metadata();
    let rows = usize::try_from(md.file_metadata().num_rows())
        .unwrap_or(0)
        .max(1);
    let bytes: i64 = md.row_groups().iter().map(|g| g.total_byte_size()).sum();
    let per_row = (usize::try_from(bytes).unwrap_or(0) / rows).max(1);
    b.with_batch_size((budget / per_row).clamp(64, ROW_GROUP_ROWS))
        .build()
        .map_err(|e| Error::parquet(path, e))
}

/// One Parquet file being written with a dataset's own schema.
struct Sink {
    path: PathBuf,
    schema: SchemaRef,
    writer: ArrowWriter<File>,
    rows: u64,
}

impl Sink {
    fn create(path: &Path, schema: &SchemaRef) -> Result<Sink> {
        let file = File::create(path).at(path)?;
        let writer = ArrowWriter::try_new(file, schema.clone(), Some(parquet::writer_properties()))
            .map_err(|e| Error::parquet(path, e))?;
        Ok(Sink {
            path: path.to_path_buf(),
            schema: schema.clone(),
            writer,
            rows: 0,
        })
    }

    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.rows += batch.num_rows() as u64;
        self.writer
            .write(batch)
            .map_err(|e| Error::parquet(&self.path, e))
    }

    /// Closes the row group being encoded.
    fn end_row_group(&mut self) -> Result<()> {
        self.writer
            .flush()
            .map_err(|e| Error::parquet(&self.path, e))
    }

    /// Closes the file, fsyncing it when `sync` (a fragment, read back and deleted
    /// by the same run, is not); returns its rows.
    fn finish(self, sync: bool) -> Result<u64> {
        let file = self
            .writer
            .into_inner()
            .map_err(|e| Error::parquet(&self.path, e))?;
        if sync {
            file.sync_all().at(&self.path)?;
        }
        Ok(self.rows)
    }
}

/// The writers of one task's targets, with the bytes of their row groups being
/// encoded kept under [`WRITE_BUDGET`] (the largest is closed first).
struct Router {
    sinks: Vec<Option<Sink>>,
    sizes: Vec<usize>,
    total: usize,
}

impl Router {
    fn new(n: usize) -> Router {
        Router {
            sinks: (0..n).map(|_| None).collect(),
            sizes: vec![0; n],
            total: 0,
        }
    }

    fn open(&mut self, t: usize, path: &Path, schema: &SchemaRef) -> Result<&mut Sink> {
        let slot = &mut self.sinks[t];
        if slot.is_none() {
            *slot = Some(Sink::create(path, schema)?);
        }
        slot.as_mut()
            .ok_or_else(|| Error::crawl_dir(path, "internal: writer not open"))
    }

    fn write(
        &mut self,
        t: usize,
        batch: &RecordBatch,
        path: &Path,
        schema: &SchemaRef,
    ) -> Result<()> {
        let sink = self.open(t, path, schema)?;
        sink.write(batch)?;
        let now = sink.writer.in_progress_size();
        self.total = self.total - self.sizes[t] + now;
        self.sizes[t] = now;
        while self.total > WRITE_BUDGET {
            let Some((k, _)) = self.sizes.iter().enumerate().max_by_key(|(_, s)| **s) else {
                break;
            };
            if let Some(s) = self.sinks[k].as_mut() {
                s.end_row_group()?;
            }
            self.total -= self.sizes[k];
            self.sizes[k] = 0;
        }
        Ok(())
    }

    fn finish(self, sync: bool) -> Result<u64> {
        let mut rows = 0;
        for s in self.sinks.into_iter().flatten() {
            rows += s.finish(sync)?;
        }
        Ok(rows)
    }
}

/// One input of a k-way merge: its reader and current batch.
struct Cursor {
    path: PathBuf,
    reader: ParquetRecordBatchReader,
    batch: RecordBatch,
    row: usize,
    /// Index of `batch` among the batches the pending output rows point into.
    slot: usize,
    done: bool,
}

impl Cursor {
    /// The next non-empty batch, if any.
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        for b in self.reader.by_ref() {
            let b = b.map_err(|e| Error::arrow(self.path.display().to_string(), e))?;
            if b.num_rows() > 0 {
                return Ok(Some(b));
            }
        }
        Ok(None)
    }

    fn key(&self, cols: &[usize]) -> Result<Vec<String>> {
        cols.iter()
            .map(|&c| {
                let a = strings(self.batch.column(c), &self.path)?;
                Ok(if a.is_null(self.row) {
                    String::new()
                } else {
                    a.value(self.row).to_string()
                })
            })
            .collect()
    }
}

/// Merges the sorted files `inputs` by the string columns `cols` into `sink`
/// (ties: the earlier input first), one read batch per input in memory.
fn merge_sorted(inputs: &[PathBuf], cols: &[usize], sink: &mut Sink) -> Result<()> {
    let budget = READ_BYTES / inputs.len().max(1);
    let mut held: Vec<RecordBatch> = Vec::new();
    let mut cursors: Vec<Cursor> = Vec::new();
    let mut heap = BinaryHeap::new();
    for p in inputs {
        let mut c = Cursor {
            path: p.clone(),
            reader: open_reader(p, budget)?,
            batch: RecordBatch::new_empty(sink.schema.clone()),
            row: 0,
            slot: 0,
            done: false,
        };
        match c.next_batch()? {
            Some(b) => {
                c.slot = held.len();
                held.push(b.clone());
                c.batch = b;
                heap.push(Reverse((c.key(cols)?, cursors.len())));
            }
            None => c.done = true,
        }
        cursors.push(c);
    }
    let mut pending: Vec<(usize, usize)> = Vec::with_capacity(MERGE_OUT_ROWS);
    while let Some(Reverse((_, k))) = heap.pop() {
        let c = &mut cursors[k];
        pending.push((c.slot, c.row));
        c.row += 1;
        if c.row == c.batch.num_rows() {
            match c.next_batch()? {
                Some(b) => {
                    c.slot = held.len();
                    held.push(b.clone());
                    c.batch = b;
                    c.row = 0;
                }
                None => c.done = true,
            }
        }
        if !c.done {
            heap.push(Reverse((c.key(cols)?, k)));
        }
        if pending.len() >= MERGE_OUT_ROWS {
            emit(&mut held, &mut pending, &mut cursors, sink)?;
        }
    }
    emit(&mut held, &mut pending, &mut cursors, sink)
}

/// Writes the pending merged rows, then keeps only the batches the cursors still read.
fn emit(
    held: &mut Vec<RecordBatch>,
    pending: &mut Vec<(usize, usize)>,
    cursors: &mut [Cursor],
    sink: &mut Sink,
) -> Result<()> {
    if !pending.is_empty() {
        let refs: Vec<&RecordBatch> = held.iter().collect();
        let out = arrow::compute::interleave_record_batch(&refs, pending)
            .map_err(|e| Error::arrow(sink.path.display().to_string(), e))?;
        sink.write(&out)?;
        pending.clear();
    }
    held.clear();
    for c in cursors.iter_mut().filter(|c| !c.done) {
        c.slot = held.len();
        held.push(c.batch.clone());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datum::CrawlDatum;
    use crate::store::parquet::{PartWriter, read_part_all};

    /// Writes a crawldb-like dataset of `m` parts (hosts h0..h29, 7 URLs each,
    /// sorted by URL within each part) into `dir`.
    fn write_dataset(dir: &Path, m: usize) -> Vec<String> {
        fs::create_dir_all(dir).unwrap();
        let mut parts: Vec<Vec<CrawlDatum>> = vec![Vec::new(); m];
        let mut urls = Vec::new();
        for h in 0..30 {
            let host = format!("h{h}.example.com");
            for k in 0..7 {
                let url = format!("http://{host}/p{k}");
                urls.push(url.clone());
                parts[Partitioner::by_host(m).of_host(&host)].push(CrawlDatum::unfetched(
                    url,
                    host.clone(),
                    0,
                    1,
                ));
            }
        }
        for (i, mut rows) in parts.into_iter().enumerate() {
            rows.sort_by(|a, b| a.url.cmp(&b.url));
            let mut w = PartWriter::<CrawlDatum>::create(&dir.join(part_name(i))).unwrap();
            for r in rows {
                w.push(r).unwrap();
            }
            w.finish().unwrap();
        }
        integrity::seal(dir).unwrap();
        urls.sort();
        urls
    }

    fn check(dest: &Path, n: usize, want: &[String]) {
        let mut all = Vec::new();
        for j in 0..n {
            let rows: Vec<CrawlDatum> = read_part_all(&dest.join(part_name(j))).unwrap();
            assert!(
                rows.windows(2).all(|w| w[0].url < w[1].url),
                "part {j} sorted"
            );
            for r in &rows {
                assert_eq!(Partitioner::by_host(n).of_host(&r.host), j);
            }
            all.extend(rows.into_iter().map(|r| r.url));
        }
        assert!(!dest.join(names::FRAGMENTS).exists());
        all.sort();
        assert_eq!(all, want);
    }

    #[test]
    fn splits_and_shuffles_keep_every_row_sorted_in_its_host_partition() {
        let t = tempfile::tempdir().unwrap();
        let src = t.path().join("src");
        let want = write_dataset(&src, 3);
        for (n, split) in [(6, true), (40, false), (2, false), (1, false)] {
            let dest = t.path().join(format!("to{n}"));
            fs::create_dir_all(&dest).unwrap();
            let r = DatasetRewrite::plan(
                &src,
                &dest,
                PartitionKey::Host,
                Partitioner::by_host(n),
                Order::Columns(&["url"]),
            )
            .unwrap();
            assert_eq!(r.is_split(), split);
            assert_eq!(r.run().unwrap(), want.len() as u64);
            check(&dest, n, &want);
        }
    }

    #[test]
    fn a_row_in_the_wrong_part_is_refused_by_a_split() {
        let t = tempfile::tempdir().unwrap();
        let src = t.path().join("src");
        write_dataset(&src, 2);
        // Part 1 of a 2-part dataset renamed as a 1-part dataset of 2 files: hosts
        // are where a 2-way split does not expect them.
        let swapped = t.path().join("swapped");
        fs::create_dir_all(&swapped).unwrap();
        fs::copy(src.join(part_name(0)), swapped.join(part_name(1))).unwrap();
        fs::copy(src.join(part_name(1)), swapped.join(part_name(0))).unwrap();
        integrity::seal(&swapped).unwrap();
        let dest = t.path().join("dest");
        fs::create_dir_all(&dest).unwrap();
        let r = DatasetRewrite::plan(
            &swapped,
            &dest,
            PartitionKey::Host,
            Partitioner::by_host(4),
            Order::Stream,
        )
        .unwrap();
        assert!(r.is_split());
        assert!(matches!(r.run(), Err(Error::Integrity { .. })));
    }

    #[test]
    fn swap_names_belong_to_their_segment() {
        assert_eq!(
            swap_base("20260101000000.repartition-new"),
            Some("20260101000000")
        );
        assert_eq!(
            swap_base("20260101000000.repartition-old"),
            Some("20260101000000")
        );
        assert_eq!(swap_base("20260101000000"), None);
        assert_eq!(swap_base("x.repartition-new"), None);
    }
}
