//! The `index` stage: builds and updates the crawl's search index (`index/`).
//!
//! The index is sharded like every dataset of the crawl: one tantivy index per
//! partition (`index/current/shard-NNNNN/`), so a page's document always lives in its
//! host's partition's shard, a task builds the shards of its partitions, and `search`
//! searches every shard with the statistics of all of them ([`super::search`]).
//! `index/` is a versioned dataset: `current/` (its shards and `_meta.json`), `old/`
//! (the previous version), installed by one rename.
//!
//! One document per page ([`super::schema`]). A run indexes the segments not indexed
//! yet (parsed, and merged into the crawldb by updatedb), oldest first, partition by
//! partition in parallel (rayon), and joins every page with what the crawl knows of it
//! now: its crawldb status and depth, its inlinks' anchor texts (linkdb), its PageRank
//! and in-degree (`pagerank/`), its host's HostRank (`pagerank/hosts/`). Then:
//!
//! - a page fetched again replaces its document (the newest segment wins);
//! - a page is not indexed (and its document deleted) when its crawldb status is not
//!   `db_fetched`/`db_notmodified`, its parse failed, it says `noindex` (meta robots or
//!   X-Robots-Tag), or its `rel=canonical` names another page of the same partition
//!   that is itself indexable;
//! - every URL whose crawldb status is `db_gone`, `db_duplicate`, `db_redir_temp` or
//!   `db_redir_perm` loses its document on every run (a redirect's target is indexed
//!   under its own URL, once, however many URLs redirect to it).
//!
//! A task (or the one-process run's one task) writes each of its shards' new version
//! in its attempt: the current shard's files hard-linked (tantivy never rewrites a
//! file: a commit writes new ones and replaces `meta.json` by a rename), then the
//! changes committed there. The commit links the attempts' shards into a staged
//! version with the list of indexed segments (`_meta.json`) and installs it: a run
//! killed at any point leaves the previous version searchable, and rerunning redoes
//! the work. `--full` indexes every segment again into empty shards (the way to
//! refresh every document's PageRank and anchors).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tantivy::directory::MmapDirectory;
use tantivy::{DateTime, Index, IndexWriter, TantivyDocument, Term};

use crate::datum::{DbStatus, FetchStatus, Millis};
use crate::error::{Error, Result};
use crate::graph::rows::PageRankMeta;
use crate::graph::template::{TemplateCounter, TemplateLinks, anchor_key};
use crate::records::ParseTextRecord;
use crate::stage::{Guard, Partitioned, Report, StageCtx};
use crate::store::jobs::{Job, PartitionSet};
use crate::store::layout::{CrawlDir, Segment};
use crate::store::names::SegmentDataset;
use crate::store::parquet;
use crate::store::versioned::VersionedDataset;

use super::analyzer::{TEXT_ANALYZER, text_analyzer};
use super::cut as cap;
use super::schema::{self, Fields};

/// Options of an index run.
#[derive(Debug, Clone, Default)]
pub struct IndexOpts {
    /// Index every segment again into empty shards.
    pub full: bool,
    /// Where the index is (default: the crawl's `index/`).
    pub index_dir: Option<PathBuf>,
}

/// Counts reported by the stage.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct IndexReport {
    /// Segments indexed by this run.
    pub segments: usize,
    /// Pages read from them.
    pub pages: u64,
    /// Documents added or replaced.
    pub indexed: u64,
    /// Pages not indexed: `noindex`.
    pub noindex: u64,
    /// Pages not indexed: their URL matches `index.exclude`.
    pub excluded: u64,
    /// Pages not indexed: status, failed parse or canonical elsewhere.
    pub skipped: u64,
    /// Delete requests for gone, duplicate and redirected URLs.
    pub deletes: u64,
    /// Bytes of main text indexed.
    pub main_text_bytes: u64,
    /// Documents in the index (or in the task's shards) after the run.
    pub docs: u64,
    /// Shards written (one per partition).
    #[serde(default)]
    pub shards: usize,
}

impl IndexReport {
    fn add(&mut self, r: &IndexReport) {
        self.pages += r.pages;
        self.indexed += r.indexed;
        self.noindex += r.noindex;
        self.excluded += r.excluded;
        self.skipped += r.skipped;
        self.deletes += r.deletes;
        self.main_text_bytes += r.main_text_bytes;
        self.docs += r.docs;
        self.shards += r.shards;
    }
}

impl fmt::Display for IndexReport {
    /// `S segments, P pages, I indexed, N noindex, [E excluded,] K skipped, D deletes,
    /// T docs in N shards` (the excluded count only when `index.exclude` left pages out).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let excluded = if self.excluded > 0 {
            format!(" {} excluded (index.exclude),", self.excluded)
        } else {
            String::new()
        };
        write!(
            f,
            "{} segments, {} pages, {} indexed, {} noindex,{excluded} {} skipped, {} gone/duplicate/redirect deletes, {} documents in the index ({} shards)",
            self.segments,
            self.pages,
            self.indexed,
            self.noindex,
            self.skipped,
            self.deletes,
            self.docs,
            self.shards
        )
    }
}

impl Report for IndexReport {
    const STAGE: &'static str = "index";
}

/// What the index stores beside its shards (`current/_meta.json`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct IndexState {
    /// The format of this record (2: sharded).
    pub version: u32,
    /// Segments whose pages are in the index, by name.
    pub segments: BTreeSet<String>,
    /// When the last commit was made (ms UTC).
    pub written_time: i64,
    /// The `index.exclude` patterns its documents were chosen with: a run with
    /// other patterns indexes every segment again (as `--full`).
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Its shards: one per partition of the crawl (`shard-NNNNN`); a crawl
    /// repartitioned since is indexed again whole.
    #[serde(default)]
    pub partitions: usize,
    /// The blake3 of the shards' tantivy schema ([`schema_id`]): an index of another
    /// schema (another trawl's) is indexed again whole.
    #[serde(default)]
    pub schema: String,
    /// What the crawl's partitions group URLs by when the shards were built: a crawl
    /// repartitioned by another key since is indexed again whole.
    #[serde(default)]
    pub partition_key: crate::store::partition::PartitionKey,
}

/// The identity of the schema this trawl writes: the blake3 of its JSON.
pub fn schema_id() -> String {
    let json = serde_json::to_vec(&schema::schema()).unwrap_or_default();
    blake3::hash(&json).to_hex().to_string()
}

const STATE_VERSION: u32 = 2;

/// The directory of partition `i`'s shard in a version of the index.
pub fn shard_name(i: usize) -> String {
    format!("shard-{i:05}")
}

/// The name of the attempt's dataset holding its shards.
const SHARDS: &str = "shards";

/// The `index.exclude` patterns as one set (checked when the configuration loads).
fn exclude_set(patterns: &[String]) -> Result<regex::RegexSet> {
    regex::RegexSet::new(patterns).map_err(|e| Error::Index {
        message: format!("index.exclude: {e}"),
    })
}

/// Statuses whose URL never has a document.
fn deleted_status(s: DbStatus) -> bool {
    matches!(
        s,
        DbStatus::DbGone | DbStatus::DbDuplicate | DbStatus::DbRedirTemp | DbStatus::DbRedirPerm
    )
}

fn indexable_status(s: DbStatus) -> bool {
    matches!(s, DbStatus::DbFetched | DbStatus::DbNotmodified)
}

/// Opens the tantivy index (one shard) at `dir` (creating it when `create`), with the
/// analyzer registered.
pub fn open_index(dir: &Path, create: bool) -> Result<Index> {
    let fail = |what: &str, e: &dyn fmt::Display| Error::Index {
        message: format!("{}: {what}: {e}", dir.display()),
    };
    if create {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    } else if !dir.join("meta.json").is_file() {
        return Err(Error::Index {
            message: format!(
                "{}: no index shard here; build the index with `index --crawl-dir CRAWL` \
                 (after parse, updatedb, linkdb and pagerank)",
                dir.display()
            ),
        });
    }
    let mmap = MmapDirectory::open(dir).map_err(|e| fail("cannot open", &e))?;
    let index = Index::open_or_create(mmap, schema::schema()).map_err(|e| {
        fail(
            "cannot open (built by another version of trawl? run `index`: it rebuilds an index of another schema whole)",
            &e,
        )
    })?;
    index.tokenizers().register(TEXT_ANALYZER, text_analyzer());
    Ok(index)
}

/// Whether `dir` holds an index of a trawl before shards (one tantivy index in the
/// directory itself): `index` rebuilds it, `search` asks for that.
pub fn is_unsharded(dir: &Path) -> bool {
    dir.join("meta.json").is_file()
}

/// The state of the index installed at `dir` (its base: `index/`); `None` when none is.
pub fn read_state(dir: &Path) -> Result<Option<IndexState>> {
    read_version_state(&VersionedDataset::new(dir).current())
}

/// The state of the version of the index at `version` (`index/current/` or
/// `index/old/`); `None` when it has none.
pub fn read_version_state(version: &Path) -> Result<Option<IndexState>> {
    let meta = version.join(crate::store::names::META);
    if !meta.is_file() {
        return Ok(None);
    }
    let state: IndexState = parquet::read_json(&meta)?;
    if state.version != STATE_VERSION {
        return Err(Error::Index {
            message: format!(
                "{}: an index state of format {} (this trawl writes {STATE_VERSION}); rebuild with `index --full`",
                meta.display(),
                state.version
            ),
        });
    }
    Ok(Some(state))
}

/// Links the shard at `from` into `to` for a new version: every file hard-linked
/// (tantivy never rewrites one), but tantivy's lock files, which another attempt
/// on the same shard may hold.
fn link_shard(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).map_err(|e| Error::io(to, e))?;
    for entry in std::fs::read_dir(from).map_err(|e| Error::io(from, e))? {
        let p = entry.map_err(|e| Error::io(from, e))?.path();
        let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let lock = p
            .extension()
            .is_some_and(|e| e == crate::store::names::LOCK_EXT);
        if p.is_dir() || (name.starts_with(".tantivy-") && lock) {
            continue;
        }
        crate::store::jobs::link_part(&p, &to.join(name))?;
    }
    Ok(())
}

/// Runs the stage: as one process, or as partition tasks and their commit
/// ([`crate::stage::execute`]).
pub fn run(ctx: &StageCtx, opts: &IndexOpts) -> Result<IndexReport> {
    // Taken before the crawldb is read: a dedup restore committed while this run reads
    // is newer than this time, so the next run sees it.
    let started_ms = crate::datum::now_millis();
    let crawl = ctx.open_existing()?;
    let dir = opts.index_dir.clone().unwrap_or_else(|| crawl.index());
    if !ctx.is_task() {
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    }
    crate::stage::execute(ctx, Guard::Index(&dir), || {
        IndexStage::open(ctx, &crawl, &dir, opts.full, started_ms)
    })
}

/// Creates an empty index of `partitions` shards at `dir` (tests, tools).
pub fn create_empty(dir: &Path, partitions: usize) -> Result<()> {
    let db = VersionedDataset::new(dir);
    let staged = db.stage()?;
    for i in 0..partitions {
        let index = open_index(&staged.path().join(shard_name(i)), true)?;
        let mut w: IndexWriter = index
            .writer_with_num_threads(1, 20_000_000)
            .map_err(|e| index_err(dir, e))?;
        w.commit().map_err(|e| index_err(dir, e))?;
        w.wait_merging_threads().map_err(|e| index_err(dir, e))?;
    }
    let state = IndexState {
        version: STATE_VERSION,
        partitions,
        schema: schema_id(),
        ..Default::default()
    };
    parquet::write_json(&staged.path().join(crate::store::names::META), &state)?;
    db.install(staged, "index")
}

/// The index stage as the executor runs it.
struct IndexStage<'a> {
    crawl: &'a CrawlDir,
    db: VersionedDataset,
    partitions: usize,
    partition_key: crate::store::partition::PartitionKey,
    /// Index every segment again into empty shards (`--full`, changed exclude
    /// patterns, another schema or partition count, an index of a trawl before shards).
    full: bool,
    /// The installed version's identity and state (default when none).
    version: String,
    state: IndexState,
    todo: Vec<Segment>,
    older: Vec<Segment>,
    priors: Priors,
    exclude: regex::RegexSet,
    patterns: Vec<String>,
    started_ms: i64,
    max_anchors: usize,
    max_text_bytes: usize,
    writer_memory: usize,
}

/// What a task reports to the commit: its counts, and what the commit checks (the
/// index version it read, the segments it indexed, whether it rebuilt).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct IndexTaskReport {
    index_version: String,
    segments: Vec<String>,
    full: bool,
    /// The `index.exclude` patterns and the schema its documents were built with.
    exclude: Vec<String>,
    schema: String,
    /// When the task started, before it read the crawldb (ms UTC): the commit records
    /// the earliest, so the next run sees what `dedup` restored after it.
    started_ms: i64,
    report: IndexReport,
}

impl<'a> IndexStage<'a> {
    fn open(
        ctx: &StageCtx,
        crawl: &'a CrawlDir,
        dir: &Path,
        full: bool,
        started_ms: i64,
    ) -> Result<IndexStage<'a>> {
        let cfg = &ctx.config().index;
        let db = VersionedDataset::new(dir);
        let meta = crawl.crawldb_meta()?;
        let partitions = meta.partitions;
        let exclude = exclude_set(&cfg.exclude)?;
        let version = db.version_id()?;
        let installed = match read_state(dir) {
            Ok(s) => s,
            // `--full` rebuilds whatever is installed, even a state it cannot read.
            Err(e) if full => {
                tracing::warn!("{e}: indexing every segment again (--full)");
                None
            }
            Err(e) => return Err(e),
        };
        let mut rebuild = full;
        if is_unsharded(dir) && installed.is_none() {
            tracing::warn!(
                "{}: the index was built by a trawl before shards (one tantivy index): every segment is indexed again into one shard per partition",
                dir.display()
            );
            rebuild = true;
        }
        let state = installed.clone().unwrap_or_default();
        if let Some(s) = &installed {
            if s.partitions != partitions || s.partition_key != meta.partition_key {
                tracing::warn!(
                    "{}: the index has {} shards by {}, the crawl {partitions} partitions by {} (repartitioned since): every segment is indexed again",
                    dir.display(),
                    s.partitions,
                    s.partition_key,
                    meta.partition_key
                );
                rebuild = true;
            } else if !full && s.exclude != cfg.exclude {
                tracing::info!(
                    "index.exclude changed since the last commit ({:?}, now {:?}): indexing every segment again",
                    s.exclude,
                    cfg.exclude
                );
                rebuild = true;
            } else if s.schema != schema_id() {
                tracing::warn!(
                    "{}: the index was built with another schema (by another version of trawl): every segment is indexed again",
                    dir.display()
                );
                rebuild = true;
            }
        }
        let done: BTreeSet<String> = if rebuild {
            BTreeSet::new()
        } else {
            state.segments.clone()
        };
        let todo: Vec<Segment> = crawl
            .segments()?
            .into_iter()
            .filter(|s| !done.contains(s.name()))
            .filter(|s| {
                meta.is_applied(s.name())
                    && s.has(SegmentDataset::ParseData)
                    && s.has(SegmentDataset::ParseText)
            })
            .collect();
        for s in &todo {
            s.check_unlocked("index")?;
            s.check_partitions(partitions)?;
            s.verify(
                SegmentDataset::ParseData,
                crate::store::integrity::Check::Sizes,
            )?;
            s.verify(
                SegmentDataset::ParseText,
                crate::store::integrity::Check::Sizes,
            )?;
        }
        let mut older: Vec<Segment> = crawl
            .segments()?
            .into_iter()
            .filter(|s| done.contains(s.name()) && s.has(SegmentDataset::ParseData))
            .collect();
        older.reverse();
        Ok(IndexStage {
            crawl,
            db,
            partitions,
            partition_key: meta.partition_key,
            full: rebuild,
            version,
            state,
            todo,
            older,
            priors: Priors::load(crawl)?,
            exclude,
            patterns: cfg.exclude.clone(),
            started_ms,
            max_anchors: cfg.max_anchors,
            max_text_bytes: cfg.max_text_bytes,
            writer_memory: cfg.writer_memory_mb as usize * 1024 * 1024,
        })
    }

    fn segment_names(&self) -> Vec<String> {
        self.todo.iter().map(|s| s.name().to_string()).collect()
    }

    /// Partition `i`'s shard, written at `out`: the installed shard's files linked
    /// (unless rebuilding), then this run's changes committed.
    fn shard(&self, i: usize, out: &Path, memory: usize) -> Result<IndexReport> {
        let current = self.db.current().join(shard_name(i));
        let fresh = self.full || self.version.is_empty();
        if !fresh {
            if !current.join("meta.json").is_file() {
                return Err(Error::Index {
                    message: format!(
                        "{}: the installed index has no shard {i} (removed by hand?): its documents are lost; run `index --full` to index every segment again",
                        current.display()
                    ),
                });
            }
            link_shard(&current, out)?;
        }
        let index = open_index(out, true)?;
        let committed = index.reader().map_err(|e| index_err(out, e))?.searcher();
        let writer: IndexWriter =
            index
                .writer_with_num_threads(1, memory)
                .map_err(|e| Error::Index {
                    message: format!("{}: cannot open a writer: {e}", out.display()),
                })?;
        let build = Build {
            crawl: self.crawl,
            segments: &self.todo,
            older: &self.older,
            committed,
            since: if self.full {
                0
            } else {
                self.state.written_time
            },
            emptied: fresh,
            writer: &writer,
            fields: Fields::of(&index.schema())?,
            priors: &self.priors,
            max_anchors: self.max_anchors,
            max_text_bytes: self.max_text_bytes,
            exclude: &self.exclude,
        };
        let mut report = build.partition(i)?;
        drop(build);
        let mut writer = writer;
        writer.commit().map_err(|e| index_err(out, e))?;
        writer
            .wait_merging_threads()
            .map_err(|e| index_err(out, e))?;
        report.docs = index
            .reader()
            .map_err(|e| index_err(out, e))?
            .searcher()
            .num_docs();
        report.shards = 1;
        Ok(report)
    }
}

impl Partitioned for IndexStage<'_> {
    type Out = IndexReport;
    const NAME: &'static str = "index";

    fn partitions(&self) -> usize {
        self.partitions
    }

    fn task(&mut self, job: &Job, set: &PartitionSet, attempt: &str) -> Result<IndexReport> {
        let w = job.attempt_writer(set, attempt)?;
        let out = w.dataset(SHARDS)?;
        let parts: Vec<usize> = set.iter().collect();
        let threads = rayon::current_num_threads().clamp(1, parts.len().max(1));
        // tantivy wants 15 MB to just under 4 GB a writer; one writer a thread.
        let memory = (self.writer_memory / threads).clamp(20_000_000, 4_000_000_000);
        let bar = crate::cli::progress_bar(parts.len() as u64, "index shards");
        let reports: Vec<IndexReport> = parts
            .par_iter()
            .map(|&i| {
                crate::signal::check("index stopped before installing anything; rerun it")?;
                let r = self.shard(i, &out.join(shard_name(i)), memory);
                bar.inc(1);
                r
            })
            .collect::<Result<_>>()?;
        bar.finish_and_clear();
        crate::signal::check("index stopped before installing anything; rerun it")?;
        let mut report = IndexReport {
            segments: self.todo.len(),
            ..Default::default()
        };
        for r in &reports {
            report.add(r);
        }
        let t = IndexTaskReport {
            index_version: self.version.clone(),
            segments: self.segment_names(),
            full: self.full,
            exclude: self.patterns.clone(),
            schema: schema_id(),
            started_ms: self.started_ms,
            report: report.clone(),
        };
        w.finish(&t)?;
        Ok(report)
    }

    fn commit(&mut self, job: &Job) -> Result<IndexReport> {
        let base = self.db.base().to_path_buf();
        let segments = self.segment_names();
        let staged = self.db.stage()?;
        let mut report = IndexReport {
            segments: segments.len(),
            ..Default::default()
        };
        let mut started_ms = self.started_ms;
        for a in job.choose(self.partitions)? {
            let t: IndexTaskReport = a.report()?;
            let refuse = |what: String| {
                Error::crawl_dir(
                    &base,
                    format!(
                        "{what} since the task in {} ran: nothing was installed; rerun the job (its tasks, then the commit)",
                        a.path().display()
                    ),
                )
            };
            if t.index_version != self.version {
                return Err(refuse("the index changed".into()));
            }
            if t.segments != segments || t.full != self.full {
                return Err(refuse(format!(
                    "the segments to index changed (the task indexed {:?}, now {:?})",
                    t.segments, segments
                )));
            }
            if t.exclude != self.patterns || t.schema != schema_id() {
                return Err(refuse(format!(
                    "the task ran with other index.exclude patterns or another trawl's schema ({:?}, now {:?})",
                    t.exclude, self.patterns
                )));
            }
            started_ms = started_ms.min(t.started_ms);
            for i in a.partitions().iter() {
                let from = a.dataset(SHARDS).join(shard_name(i));
                if !from.join("meta.json").is_file() {
                    return Err(refuse(format!("shard {i} is missing from the attempt")));
                }
                link_shard(&from, &staged.path().join(shard_name(i)))?;
            }
            report.add(&t.report);
        }
        let mut state = if self.full {
            IndexState::default()
        } else {
            self.state.clone()
        };
        state.version = STATE_VERSION;
        state.segments.extend(segments);
        state.written_time = started_ms;
        state.exclude = self.patterns.clone();
        state.partitions = self.partitions;
        state.schema = schema_id();
        state.partition_key = self.partition_key;
        parquet::write_json(&staged.path().join(crate::store::names::META), &state)?;
        self.db.install(staged, "index")?;
        remove_unsharded(&base)?;
        Ok(report)
    }
}

/// Removes the files of an index of a trawl before shards (one tantivy index in the
/// directory itself), which the installed shards replace.
fn remove_unsharded(dir: &Path) -> Result<()> {
    if !is_unsharded(dir) {
        return Ok(());
    }
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let path = entry.map_err(|e| Error::io(dir, e))?.path();
        if path.is_dir()
            || path
                .file_name()
                .is_some_and(|n| n == crate::store::names::LOCK)
        {
            continue;
        }
        // meta.json last: until it goes, the directory is still seen as unsharded.
        if path.file_name().is_some_and(|n| n == "meta.json") {
            continue;
        }
        crate::store::storage::LocalFs.delete(&path)?;
    }
    crate::store::storage::LocalFs.delete(&dir.join("meta.json"))
}

fn index_err(dir: &Path, e: tantivy::TantivyError) -> Error {
    Error::Index {
        message: format!("{}: {e}", dir.display()),
    }
}

/// The query-independent signals that are not per partition: the PageRank scale and
/// the HostRank of every host.
struct Priors {
    /// PageRank → "x an average page" (`crawldb_scale`), when `pagerank/` exists.
    scale: Option<f64>,
    /// `pagerank/hosts/` (partitioned like the crawl: a host's row is in its
    /// partition) and its number of hosts, when HostRank was computed.
    hosts: Option<(PathBuf, f64)>,
}

impl Priors {
    fn load(crawl: &CrawlDir) -> Result<Priors> {
        let dir = crawl.pagerank();
        if !parquet::dataset_complete(&dir) {
            return Ok(Priors {
                scale: None,
                hosts: None,
            });
        }
        let meta: PageRankMeta = parquet::read_json(&dir.join(crate::store::names::META))?;
        if !meta.ignore_template && !meta.ignore_internal {
            tracing::warn!(
                "{}: PageRank was computed with the sites' template links in its graph \
                 (pagerank.ignore_template = false, or a pagerank run before 2026-12-07): a \
                 site's navigation pages get the most PageRank, which the search ranking \
                 weighs; rerun pagerank with pagerank.ignore_template = true, then index",
                dir.display()
            );
        }
        let scale = if meta.crawldb_scale > 0.0 {
            meta.crawldb_scale
        } else {
            meta.nodes.max(1) as f64
        };
        let hosts_dir = dir.join(crate::store::names::PAGERANK_HOSTS);
        let mut hosts = None;
        if meta.hostrank && parquet::dataset_complete(&hosts_dir) {
            // The count from the dataset's manifest: a task reads its partitions'
            // rows alone (on an object store the others are not even pulled).
            let n = crate::store::integrity::read(&hosts_dir)?
                .map(|m| m.rows())
                .unwrap_or(0);
            hosts = Some((hosts_dir, n.max(1) as f64));
        }
        Ok(Priors {
            scale: Some(scale),
            hosts,
        })
    }

    /// HostRank x hosts of partition `i`'s hosts (empty without HostRank).
    fn hostrank(&self, i: usize) -> Result<HashMap<String, f64>> {
        let mut out = HashMap::new();
        if let Some((dir, n)) = &self.hosts {
            read_rows::<HostRow>(dir, i, |r| {
                out.insert(r.host, r.score * n);
            })?;
        }
        Ok(out)
    }
}

/// What the index reads of a `pagerank/hosts` row.
#[derive(Deserialize)]
struct HostRow {
    host: String,
    score: f64,
}

impl Columns for HostRow {
    const COLUMNS: &'static [&'static str] = &["host", "score"];
}

/// A page of the segments being indexed (the newest segment's rows).
struct Page {
    segment: String,
    data: PageData,
    text: Option<ParseTextRecord>,
    fetch_time: Option<i64>,
}

/// What the crawl knows of a page now.
#[derive(Default)]
struct Known {
    status: Option<DbStatus>,
    depth: i32,
    anchors: Vec<String>,
    anchor_keys: HashSet<String>,
    inlinks: u64,
    pagerank: Option<(f64, i64)>,
}

struct Build<'a> {
    crawl: &'a CrawlDir,
    segments: &'a [Segment],
    /// Segments indexed before this run, newest first (where a page refetched as
    /// `304 Not Modified` whose document is missing is found again).
    older: &'a [Segment],
    /// The index as of its last commit.
    committed: tantivy::Searcher,
    /// When the last commit was made (ms UTC; 0 for a new index or `--full`).
    since: i64,
    /// `--full`: the last commit's documents are all deleted by this run.
    emptied: bool,
    writer: &'a IndexWriter,
    fields: Fields,
    priors: &'a Priors,
    max_anchors: usize,
    max_text_bytes: usize,
    /// `index.exclude`: URLs left out of the index.
    exclude: &'a regex::RegexSet,
}

/// The columns of a dataset the index reads, as a row type: the other columns (a
/// parse's outlinks, a crawldb row's schedule) are never decoded.
trait Columns: DeserializeOwned {
    /// The columns, by name (the fields of the type).
    const COLUMNS: &'static [&'static str];
}

impl Columns for ParseTextRecord {
    const COLUMNS: &'static [&'static str] = &["url", "text", "main_text"];
}

/// What the index reads of a `parse_data` row.
#[derive(Deserialize)]
struct PageData {
    url: String,
    status: String,
    title: Option<String>,
    content_type: Option<String>,
    lang: Option<String>,
    canonical: Option<String>,
    noindex: bool,
    /// Of the `metadata` map, its `sections` alone (the other keys are skipped,
    /// never copied: [`SectionsOnly`]).
    #[serde(rename = "metadata")]
    sections: SectionsOnly,
}

/// The `sections` value of a `parse_data.metadata` map, the other entries skipped as
/// they are read (a page's metadata holds its description, keywords and headings:
/// copying them all for one key cost a third of the index's speed on real pages).
#[derive(Default)]
struct SectionsOnly(Option<String>);

impl<'de> Deserialize<'de> for SectionsOnly {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        /// Whether a map key is `sections`, compared where it is read.
        struct IsSections(bool);
        impl<'de> Deserialize<'de> for IsSections {
            fn deserialize<D: serde::Deserializer<'de>>(
                d: D,
            ) -> std::result::Result<Self, D::Error> {
                struct KeyVisitor;
                impl serde::de::Visitor<'_> for KeyVisitor {
                    type Value = IsSections;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str("a metadata key")
                    }
                    fn visit_str<E: serde::de::Error>(
                        self,
                        v: &str,
                    ) -> std::result::Result<IsSections, E> {
                        Ok(IsSections(v == "sections"))
                    }
                }
                d.deserialize_str(KeyVisitor)
            }
        }
        struct MapVisitor;
        impl<'de> serde::de::Visitor<'de> for MapVisitor {
            type Value = SectionsOnly;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a metadata map")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> std::result::Result<SectionsOnly, A::Error> {
                let mut out = None;
                while let Some(IsSections(hit)) = m.next_key()? {
                    if hit {
                        out = Some(m.next_value::<String>()?);
                    } else {
                        m.next_value::<serde::de::IgnoredAny>()?;
                    }
                }
                Ok(SectionsOnly(out))
            }
        }
        d.deserialize_map(MapVisitor)
    }
}

impl Columns for PageData {
    const COLUMNS: &'static [&'static str] = &[
        "url",
        "status",
        "title",
        "content_type",
        "lang",
        "canonical",
        "noindex",
        "metadata",
    ];
}

/// What the index reads of a `crawl_fetch` row.
#[derive(Deserialize)]
struct FetchRow {
    url: String,
    status: FetchStatus,
    fetch_time: Millis,
}

impl Columns for FetchRow {
    const COLUMNS: &'static [&'static str] = &["url", "status", "fetch_time"];
}

/// What the index reads of a crawldb row.
#[derive(Deserialize)]
struct DbRow {
    url: String,
    status: DbStatus,
    depth: i32,
    metadata: BTreeMap<String, String>,
}

impl Columns for DbRow {
    const COLUMNS: &'static [&'static str] = &["url", "status", "depth", "metadata"];
}

/// What the index reads of a linkdb row.
#[derive(Deserialize)]
struct InlinkRow {
    url: String,
    from_url: String,
    anchor: String,
}

impl Columns for InlinkRow {
    const COLUMNS: &'static [&'static str] = &["url", "from_url", "anchor"];
}

/// What the index reads of a `pagerank` row.
#[derive(Deserialize)]
struct RankRow {
    url: String,
    score: f64,
    in_degree: i64,
}

impl Columns for RankRow {
    const COLUMNS: &'static [&'static str] = &["url", "score", "in_degree"];
}

/// The template links of partition `i` of the linkdb at `linkdb` (one read of it; a
/// host's links within it are all in its partition): [`crate::graph::template`].
fn template_links(linkdb: &Path, i: usize) -> Result<TemplateLinks> {
    let mut counter = TemplateCounter::default();
    read_rows::<InlinkRow>(linkdb, i, |l| counter.add(&l.from_url, &l.url, &l.anchor))?;
    Ok(counter.finish())
}

fn read_rows<R: Columns>(dir: &Path, i: usize, mut each: impl FnMut(R)) -> Result<()> {
    if !dir.is_dir() {
        return Ok(());
    }
    for file in parquet::partition_files(dir, i)? {
        for batch in parquet::read_part_columns::<R>(&file, R::COLUMNS)? {
            for row in batch? {
                each(row);
            }
        }
    }
    Ok(())
}

impl Build<'_> {
    /// Partition `i`: reads the new segments' pages, joins them with the crawldb, the
    /// linkdb and the PageRank, and sends the documents and deletes to the writer.
    fn partition(&self, i: usize) -> Result<IndexReport> {
        let mut report = IndexReport::default();
        let mut pages: HashMap<String, Page> = HashMap::new();
        // Refetched as 304: no new parse; their document should exist already.
        let mut unchanged: HashSet<String> = HashSet::new();
        for seg in self.segments {
            let mut texts: HashMap<String, ParseTextRecord> = HashMap::new();
            read_rows::<ParseTextRecord>(&seg.dataset(SegmentDataset::ParseText), i, |r| {
                super::analyzer::prepare_for(&r.text);
                texts.insert(r.url.clone(), r);
            })?;
            let mut times: HashMap<String, i64> = HashMap::new();
            read_rows::<FetchRow>(&seg.dataset(SegmentDataset::CrawlFetch), i, |r| {
                if r.status == FetchStatus::FetchNotmodified {
                    unchanged.insert(r.url.clone());
                }
                times.insert(r.url, r.fetch_time);
            })?;
            read_rows::<PageData>(&seg.dataset(SegmentDataset::ParseData), i, |r| {
                report.pages += 1;
                let page = Page {
                    segment: seg.name().to_string(),
                    text: texts.remove(&r.url),
                    fetch_time: times.get(&r.url).copied(),
                    data: r,
                };
                pages.insert(page.data.url.clone(), page);
            })?;
        }
        unchanged.retain(|u| !pages.contains_key(u) && !self.has_document(u));
        // What the crawl knows now, for the pages, their canonical URLs and the pages
        // whose document may have to come back.
        let mut known: HashMap<String, Known> = HashMap::new();
        for p in pages.values() {
            known.entry(p.data.url.clone()).or_default();
            if let Some(c) = canonical_elsewhere(&p.data) {
                known.entry(c.to_string()).or_default();
            }
        }
        for u in &unchanged {
            known.entry(u.clone()).or_default();
        }
        let mut missing = unchanged;
        read_rows::<DbRow>(&self.crawl.crawldb_current(), i, |d| {
            if deleted_status(d.status) && self.has_document(&d.url) {
                report.deletes += 1;
                self.writer
                    .delete_term(Term::from_field_text(self.fields.url, &d.url));
            }
            if let Some(k) = known.get_mut(&d.url) {
                k.status = Some(d.status);
                k.depth = d.depth;
            } else if self.restored_since_last_run(&d) && !self.has_document(&d.url) {
                known.insert(
                    d.url.clone(),
                    Known {
                        status: Some(d.status),
                        depth: d.depth,
                        ..Known::default()
                    },
                );
                missing.insert(d.url);
            }
        })?;
        missing.retain(|u| {
            known
                .get(u)
                .and_then(|k| k.status)
                .is_some_and(indexable_status)
        });
        if !missing.is_empty() {
            self.recover(i, &mut missing, &mut pages)?;
        }
        let linkdb = self.crawl.linkdb_current();
        if parquet::dataset_complete(&linkdb) {
            let template = template_links(&linkdb, i)?;
            read_rows::<InlinkRow>(&linkdb, i, |l| {
                // A page's links to itself (a heading's permalink, "top") say
                // nothing about it from elsewhere: not anchors, not inlinks.
                if l.url == l.from_url {
                    return;
                }
                let anchor = l.anchor.trim();
                let key = anchor_key(anchor);
                // Nor do the links of its site's template (header, footer,
                // sidebar): every page says "Index" of the index page.
                if template.is_template(&l.from_url, &l.url, anchor) {
                    return;
                }
                if let Some(k) = known.get_mut(&l.url) {
                    k.inlinks += 1;
                    if !anchor.is_empty()
                        && k.anchors.len() < self.max_anchors
                        && k.anchor_keys.insert(key)
                    {
                        k.anchors.push(anchor.to_string());
                    }
                }
            })?;
        }
        let hostrank = self.priors.hostrank(i)?;
        if self.priors.scale.is_some() {
            read_rows::<RankRow>(&self.crawl.pagerank(), i, |r| {
                if let Some(k) = known.get_mut(&r.url) {
                    k.pagerank = Some((r.score, r.in_degree));
                }
            })?;
        }
        for page in pages.values() {
            let url = &page.data.url;
            if self.has_document(url) {
                self.writer
                    .delete_term(Term::from_field_text(self.fields.url, url));
            }
            let Some(k) = known.get(url) else { continue };
            if page.data.noindex {
                report.noindex += 1;
                continue;
            }
            if self.exclude.is_match(url) {
                report.excluded += 1;
                continue;
            }
            let canonical_taken = canonical_elsewhere(&page.data)
                .and_then(|c| known.get(c))
                .and_then(|c| c.status)
                .is_some_and(indexable_status);
            let ok = k.status.is_some_and(indexable_status)
                && page.data.status == "parse_success"
                && !canonical_taken;
            if !ok {
                report.skipped += 1;
                continue;
            }
            let doc = self.document(page, k, &hostrank);
            report.main_text_bytes +=
                page.text
                    .as_ref()
                    .and_then(|t| t.main_text.as_ref())
                    .map_or(0, |m| m.len().min(self.max_text_bytes)) as u64;
            self.writer.add_document(doc).map_err(|e| Error::Index {
                message: format!("cannot add {url} to the index: {e}"),
            })?;
            report.indexed += 1;
        }
        Ok(report)
    }

    /// Whether `dedup` turned the row back from `db_duplicate` since the last run (or
    /// ever, in a `--full` run): its page must be indexed again.
    fn restored_since_last_run(&self, d: &DbRow) -> bool {
        indexable_status(d.status)
            && d.metadata
                .get(crate::dedup::RESTORED_KEY)
                .and_then(|t| t.parse::<i64>().ok())
                .is_some_and(|t| t >= self.since)
    }

    /// Whether the index has a document for `url` before this run's changes: one of
    /// the last commit's, unless `--full` emptied it. A URL without one needs no
    /// delete (a delete is replayed against every segment the run writes).
    fn has_document(&self, url: &str) -> bool {
        if self.emptied {
            return false;
        }
        let term = Term::from_field_text(self.fields.url, url);
        self.committed.doc_freq(&term).is_ok_and(|n| n > 0)
    }

    /// Pages refetched as `304 Not Modified` whose document is missing (deleted while
    /// they were `db_duplicate` or gone, say): their newest parse in the segments
    /// indexed before, newest segment first, joins `pages`.
    fn recover(
        &self,
        i: usize,
        missing: &mut HashSet<String>,
        pages: &mut HashMap<String, Page>,
    ) -> Result<()> {
        for seg in self.older {
            if missing.is_empty() {
                break;
            }
            let mut found: HashMap<String, PageData> = HashMap::new();
            read_rows::<PageData>(&seg.dataset(SegmentDataset::ParseData), i, |r| {
                if missing.contains(&r.url) {
                    found.insert(r.url.clone(), r);
                }
            })?;
            if found.is_empty() {
                continue;
            }
            let mut texts: HashMap<String, ParseTextRecord> = HashMap::new();
            read_rows::<ParseTextRecord>(&seg.dataset(SegmentDataset::ParseText), i, |r| {
                if found.contains_key(&r.url) {
                    texts.insert(r.url.clone(), r);
                }
            })?;
            let mut times: HashMap<String, i64> = HashMap::new();
            read_rows::<FetchRow>(&seg.dataset(SegmentDataset::CrawlFetch), i, |r| {
                if found.contains_key(&r.url) {
                    times.insert(r.url, r.fetch_time);
                }
            })?;
            for (url, data) in found {
                missing.remove(&url);
                pages.insert(
                    url.clone(),
                    Page {
                        segment: seg.name().to_string(),
                        text: texts.remove(&url),
                        fetch_time: times.get(&url).copied(),
                        data,
                    },
                );
            }
        }
        Ok(())
    }

    fn document(&self, page: &Page, k: &Known, hostrank: &HashMap<String, f64>) -> TantivyDocument {
        let f = &self.fields;
        let d = &page.data;
        let host = crate::urls::host_of(&d.url);
        let mut doc = TantivyDocument::default();
        doc.add_text(f.url, &d.url);
        doc.add_text(f.site, &host);
        if let Some(t) = d.title.as_deref().filter(|t| !t.trim().is_empty()) {
            doc.add_text(f.title, cap(t.trim(), self.max_text_bytes));
        }
        for a in &k.anchors {
            doc.add_text(f.anchors, a);
        }
        if let Some(t) = &page.text {
            let text = cap(&t.text, self.max_text_bytes);
            match t.main_text.as_deref().filter(|m| !m.is_empty()) {
                Some(m) => {
                    let m = cap(m, self.max_text_bytes);
                    doc.add_text(f.main_text, m);
                    let other = other_text(text, m);
                    if !other.trim().is_empty() {
                        doc.add_text(f.other_text, other);
                    }
                }
                None if !text.is_empty() => doc.add_text(f.other_text, text),
                None => {}
            }
        }
        doc.add_text(f.url_words, url_words(&d.url));
        if let Some(l) = d.lang.as_deref().filter(|l| !l.is_empty()) {
            doc.add_text(f.lang, l.to_ascii_lowercase());
        }
        if let Some(c) = d.content_type.as_deref() {
            doc.add_text(f.content_type, c);
            // Also its media type alone, which `type:html` (`text/html`) matches; the
            // stored value read back is the first, as served.
            let mime = c
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            if !mime.is_empty() && mime != c {
                doc.add_text(f.content_type, &mime);
            }
        }
        if let Some(s) = &d.sections.0 {
            doc.add_text(f.sections, s);
        }
        doc.add_text(f.segment, &page.segment);
        if let Some(t) = page.fetch_time {
            doc.add_date(f.fetch_time, DateTime::from_timestamp_millis(t));
        }
        let (pr, in_degree) = match (k.pagerank, self.priors.scale) {
            (Some((score, deg)), Some(scale)) => (score * scale, deg.max(0) as u64),
            _ => (1.0, k.inlinks),
        };
        doc.add_f64(f.pagerank, pr);
        doc.add_f64(f.hostrank, hostrank.get(&host).copied().unwrap_or(0.0));
        doc.add_u64(f.inlinks, in_degree.max(k.inlinks));
        doc.add_u64(f.url_depth, url_depth(&d.url));
        doc.add_u64(f.crawl_depth, k.depth.max(0) as u64);
        doc
    }
}

/// Lines of main text not found in order within this many bytes of the text
/// before giving up on that line.
const OTHER_TEXT_WINDOW: usize = 64 * 1024;
/// Lines of main text not found before the rest is all taken as other text.
const OTHER_TEXT_MISSES: usize = 32;
/// Places where a line's first 64 bytes match but the line does not, before the
/// line counts as not found (a page of one repeated character stays linear).
const OTHER_TEXT_FALSE_STARTS: usize = 64;

/// The visible text outside the main text: `text` (every block, joined by spaces)
/// with the main text's lines (its blocks, joined by newlines) cut out where they
/// are found in order. Lines not found stay in; the cost is bounded by a window and
/// a number of misses, after which the rest of `text` is kept whole.
pub fn other_text(text: &str, main: &str) -> String {
    let mut out = String::with_capacity(text.len().saturating_sub(main.len()) + 16);
    let mut at = 0;
    let mut misses = 0;
    for line in main.split('\n').map(str::trim).filter(|l| !l.is_empty()) {
        if misses >= OTHER_TEXT_MISSES {
            break;
        }
        let window = super::cut(&text[at..], line.len() + OTHER_TEXT_WINDOW);
        match find_line(window, line) {
            Some(pos) => {
                let before = text[at..at + pos].trim();
                if !before.is_empty() {
                    if !out.is_empty() {
                        out.push(' ');
                    }
                    out.push_str(before);
                }
                at += pos + line.len();
            }
            None => misses += 1,
        }
    }
    let tail = text[at..].trim();
    if !tail.is_empty() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(tail);
    }
    out
}

/// Where `line` starts in `hay`: searched by its first 64 bytes (a string searcher
/// costs the length of what it searches for, and a line can be a long paragraph),
/// checked whole; the next line usually starts right where the last one ended.
fn find_line(hay: &str, line: &str) -> Option<usize> {
    let lead = hay.len() - hay.trim_start().len();
    if hay[lead..].starts_with(line) {
        return Some(lead);
    }
    let head = super::cut(line, 64);
    let mut from = 0;
    for _ in 0..OTHER_TEXT_FALSE_STARTS {
        let at = from + hay.get(from..)?.find(head)?;
        if hay[at..].starts_with(line) {
            return Some(at);
        }
        from = at + hay[at..].chars().next().map_or(1, char::len_utf8);
    }
    None
}

/// The page's `rel=canonical` when it names another URL.
fn canonical_elsewhere(d: &PageData) -> Option<&str> {
    d.canonical
        .as_deref()
        .filter(|c| !c.is_empty() && *c != d.url)
}

/// The words of a URL's host and path, for matching (`docs.rs/serde` → `docs rs serde`).
pub fn url_words(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.chars()
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect()
}

/// Path segments of a URL (`https://h/` is 0, `https://h/a/b.html` is 2).
pub fn url_depth(url: &str) -> u64 {
    match url::Url::parse(url) {
        Ok(u) => u
            .path_segments()
            .map_or(0, |s| s.filter(|p| !p.is_empty()).count() as u64),
        Err(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::{cap, url_depth, url_words};

    /// An index of a trawl before shards is seen as unsharded; an empty sharded index
    /// records its shard count and this trawl's schema.
    #[test]
    fn an_unsharded_index_is_found_and_a_sharded_one_records_its_schema() {
        use tantivy::schema::{STORED, STRING, SchemaBuilder};
        let dir = tempfile::tempdir().unwrap();
        let mut b = SchemaBuilder::new();
        b.add_text_field("url", STRING | STORED);
        let old = tantivy::Index::create_in_dir(dir.path(), b.build()).unwrap();
        let mut w: tantivy::IndexWriter = old.writer(15_000_000).unwrap();
        w.commit().unwrap();
        drop(w);
        drop(old);
        assert!(super::is_unsharded(dir.path()));
        assert!(super::read_state(dir.path()).unwrap().is_none());
        let new = tempfile::tempdir().unwrap();
        super::create_empty(new.path(), 2).unwrap();
        assert!(!super::is_unsharded(new.path()));
        let state = super::read_state(new.path()).unwrap().unwrap();
        assert_eq!(state.partitions, 2);
        assert_eq!(state.schema, super::schema_id());
        let shard = new.path().join("current").join(super::shard_name(1));
        assert!(shard.join("meta.json").is_file());
    }

    #[test]
    fn other_text_is_what_lies_outside_the_main_text() {
        let text = "Home About Title of it First para. Second para. Related: x y Footer";
        let main = "Title of it\nFirst para.\nSecond para.";
        assert_eq!(
            super::other_text(text, main),
            "Home About Related: x y Footer"
        );
        // A line not found stays in the other text, the others are still cut.
        let main = "Title of it\nnot on the page\nSecond para.";
        assert_eq!(
            super::other_text(text, main),
            "Home About First para. Related: x y Footer"
        );
        assert_eq!(super::other_text("only main", "only main"), "");
        // A line found after a false start of its first 64 bytes.
        let para = format!("{} end", "x".repeat(70));
        let text = format!("nav {} nope {para} foot", "x".repeat(70));
        assert_eq!(
            super::other_text(&text, &para),
            format!("nav {} nope foot", "x".repeat(70))
        );
        assert_eq!(super::other_text("a é b", ""), "a é b");
        // A line of one repeated character in a text of it: a bounded search, the
        // line not found, the text kept.
        let text = "y".repeat(200_000);
        let line = format!("{}z", "y".repeat(10_000));
        assert_eq!(super::other_text(&text, &line), text);
    }

    #[test]
    fn url_features() {
        assert_eq!(url_depth("http://a.test/"), 0);
        assert_eq!(url_depth("http://a.test/x/y.html"), 2);
        assert_eq!(url_depth("http://a.test/x/"), 1);
        assert_eq!(
            url_words("http://docs.web.test/ch01-02.html").trim(),
            "docs web test ch01 02 html"
        );
        assert_eq!(cap("añb", 2), "a");
    }
}
