//! `updatedb`: merges the fetch and parse results of segments into the crawldb.
//!
//! Per crawldb partition, in parallel: the segment rows of that partition
//! (`crawl_fetch`, `crawl_parse`, plus redirect targets routed to their host's
//! partition) are read batch by batch and sorted by URL (an external sort bounded
//! by `updatedb.sort_buffer_rows`, see [`crate::crawldb::spill`]), then merged with the streamed crawldb
//! part; each URL goes through [`state::reduce`]. Segments already listed in
//! `applied_segments` are skipped, so applying a segment twice changes nothing.
//!
//! A fetched segment that is not parsed is refused (its outlinks would be lost for
//! good once the segment counts as applied) unless `--no-parse` is given: then only
//! its fetch outcomes are merged and it is recorded in `partial_segments`; rows whose
//! content is waiting for its parse signature carry [`state::PARSE_PENDING_KEY`]. A
//! later run on the parsed segment merges the rest (signatures, outlinks) and settles
//! those rows, without applying the fetches again, and moves the segment to
//! `applied_segments`.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::crawldb::merge::{self, Keyed, SegRow};
use crate::crawldb::spill::Sorter;
use crate::crawldb::state::{Ctx, Inlink};
use crate::crawldb::stream::{read_partition, scan_partition};
use crate::crawldb::{
    TASK_DATASET, check_version, chosen_parts, current_part, finish_attempt, install_parts,
    version_id,
};
use crate::datum::{CrawlDatum, FetchStatus, Millis, now_millis};
use crate::error::{Error, Result};
use crate::records::{CrawlParseRecord, FetchRecord};
use crate::stage::{Guard, Partitioned, Report, StageCtx, Verify};
use crate::store::disk;
use crate::store::integrity::{self, Check};
use crate::store::jobs::{Job, PartitionSet};
use crate::store::layout::{CrawlDbMeta, CrawlDir, Segment};
use crate::store::names::SegmentDataset;
use crate::store::parquet::{self, PartWriter};
use crate::store::partition::Partitioner;
use crate::urls::{UrlPolicy, host_of};

/// Options of one updatedb run (`updatedb.additions_allowed`, `--no-additions`, is a
/// config key).
#[derive(Debug, Clone, Default)]
pub struct UpdateOpts {
    /// Segments (names or paths); empty = the newest fetched segment not yet applied.
    pub segments: Vec<PathBuf>,
    /// Merge only the fetch outcomes (`--no-parse`): the segments are recorded as
    /// partially applied, and a later run after `parse` merges the rest.
    pub no_parse: bool,
}

/// What one run merges of a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Part {
    /// Fetch outcomes and parse results.
    Whole,
    /// Fetch outcomes only (`--no-parse`): the segment becomes partially applied.
    FetchOnly,
    /// The parse results of a partially applied segment (its fetches are merged).
    Rest,
}

/// What updatedb did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpdateReport {
    /// Segments merged (whole, or their parse results completing a partial application).
    pub applied: Vec<String>,
    /// Segments whose fetch outcomes only were merged (`--no-parse`): partially applied.
    pub partial: Vec<String>,
    /// Of `applied`, the partially applied segments whose parse results were merged now.
    pub completed: Vec<String>,
    /// Segments skipped because they were already merged.
    pub skipped: Vec<String>,
    /// Rows in the new crawldb.
    pub rows: u64,
    /// URLs added from links and redirects.
    pub added: u64,
    /// URLs whose row a fetch changed.
    pub fetched: u64,
    /// Rows dropped (`purge_gone`).
    pub purged: u64,
}

impl fmt::Display for UpdateReport {
    /// `applied [..] (completing [..]), partially applied [..], F fetched, A added,
    /// P purged, crawldb N urls` (the parenthesised parts only when not empty).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "applied [{}]", self.applied.join(", "))?;
        if !self.completed.is_empty() {
            write!(f, " (completing [{}])", self.completed.join(", "))?;
        }
        if !self.partial.is_empty() {
            write!(f, ", partially applied [{}]", self.partial.join(", "))?;
        }
        write!(
            f,
            ", {} fetched, {} added, {} purged, crawldb {} urls",
            self.fetched, self.added, self.purged, self.rows
        )
    }
}

impl Report for UpdateReport {
    const STAGE: &'static str = "updatedb";
}

/// What one partition's merge counted.
#[derive(Debug, Default)]
struct PartStats {
    rows: u64,
    added: u64,
    fetched: u64,
    purged: u64,
}

/// Runs updatedb on the crawl directory of `ctx` (which must hold a crawldb), as
/// [`crate::stage::execute`] splits it: one process (one task over every partition, then
/// its commit, under the crawldb lock held throughout), a task of a job (no lock,
/// output in its attempt), or a job's commit. Returns the summary of what ran: the
/// task's partitions, or the installed version.
pub fn run(ctx: &StageCtx, opts: &UpdateOpts) -> Result<UpdateReport> {
    run_at(ctx, opts, now_millis())
}

/// [`run`] as of the time `now` (ms UTC).
fn run_at(ctx: &StageCtx, opts: &UpdateOpts, now: Millis) -> Result<UpdateReport> {
    let dir = ctx.open_existing()?;
    // Tasks run at once on many machines: only the commit takes the lock.
    crate::stage::execute(ctx, Guard::CrawlDb(Verify::Never), || {
        Ok(UpdateDb {
            ctx,
            opts,
            dir: &dir,
            n: dir.crawldb_meta()?.partitions,
            now,
        })
    })
}

/// The updatedb stage as the executor runs it ([`crate::stage::execute`]).
struct UpdateDb<'a> {
    ctx: &'a StageCtx,
    opts: &'a UpdateOpts,
    dir: &'a CrawlDir,
    n: usize,
    now: Millis,
}

impl Partitioned for UpdateDb<'_> {
    type Out = UpdateReport;
    const NAME: &'static str = "updatedb";

    fn partitions(&self) -> usize {
        self.n
    }

    fn task(
        &mut self,
        job: &Job,
        partitions: &PartitionSet,
        attempt: &str,
    ) -> Result<UpdateReport> {
        let w = job.attempt_writer(partitions, attempt)?;
        let out = w.dataset(TASK_DATASET)?;
        let parts: Vec<usize> = partitions.iter().collect();
        let task = run_task_at(self.ctx, self.opts, &parts, &out, self.now)?;
        finish_attempt(w, &task)?;
        Ok(task.summary())
    }

    fn commit(&mut self, job: &Job) -> Result<UpdateReport> {
        commit(self.dir, &chosen_parts(job, self.n)?)
    }
}

/// What one updatedb task did, stored as its attempt's report: the counts of its
/// partitions and what the commit checks (the crawldb version it read, the segments
/// it merged and how).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UpdateTaskReport {
    /// The crawldb version the task read ([`crate::crawldb::version_id`]).
    pub crawldb_version: String,
    /// The partitions it wrote.
    pub partitions: Vec<usize>,
    /// The segments merged, in order, with what was merged of each.
    pub segments: Vec<(String, Part)>,
    /// Segments skipped (already applied).
    pub skipped: Vec<String>,
    /// Rows of its new parts.
    pub rows: u64,
    /// URLs added.
    pub added: u64,
    /// URLs whose row a fetch changed.
    pub fetched: u64,
    /// Rows dropped (`purge_gone`).
    pub purged: u64,
    /// crawl_fetch parts read to route redirect targets: 0 when every segment's
    /// crawl_parse carries its redirects (the redirect shuffle), every part of the
    /// older segments otherwise.
    #[serde(default)]
    pub redirect_fetch_parts_read: u64,
}

impl UpdateTaskReport {
    /// The stage's report of this task alone (its summary line).
    pub fn summary(&self) -> UpdateReport {
        let mut r = UpdateReport {
            skipped: self.skipped.clone(),
            rows: self.rows,
            added: self.added,
            fetched: self.fetched,
            purged: self.purged,
            ..UpdateReport::default()
        };
        for (name, part) in &self.segments {
            r.record(name, *part);
        }
        r
    }
}

impl UpdateReport {
    fn record(&mut self, name: &str, part: Part) {
        let name = name.to_string();
        match part {
            Part::Whole => self.applied.push(name),
            Part::FetchOnly => self.partial.push(name),
            Part::Rest => {
                self.completed.push(name.clone());
                self.applied.push(name);
            }
        }
    }
}

/// An updatedb task: merges the crawldb partitions `parts` with the segments' rows
/// of those partitions, writing the new parts into `out` (`part-NNNNN.parquet`).
/// Reads the crawldb version current now without taking its lock (tasks of one job
/// run at once, on several machines); the commit checks that the version is still
/// current. Installs nothing.
fn run_task_at(
    ctx: &StageCtx,
    opts: &UpdateOpts,
    parts: &[usize],
    out: &Path,
    now: Millis,
) -> Result<UpdateTaskReport> {
    let cfg = ctx.config();
    let dir = ctx.open_existing()?;
    let meta = dir.crawldb_meta()?;
    let mut task = UpdateTaskReport {
        crawldb_version: version_id(&dir)?,
        partitions: parts.to_vec(),
        ..UpdateTaskReport::default()
    };
    let mut chosen = UpdateReport::default();
    let segments = choose_segments(&dir, &meta, opts, &mut chosen)?;
    task.skipped = chosen.skipped;
    task.segments = segments
        .iter()
        .map(|sg| (sg.seg.name().to_string(), sg.part))
        .collect();
    if segments.is_empty() {
        return Ok(task);
    }
    let n = meta.partitions;
    if let Some(&bad) = parts.iter().find(|&&i| i >= n) {
        return Err(Error::crawl_dir(
            dir.crawldb_current(),
            format!(
                "partition {bad} does not exist: the crawldb has {n} partitions (0-{})",
                n.saturating_sub(1)
            ),
        ));
    }
    // Refuse a damaged crawldb or segment before anything is written: a flipped
    // byte read here would otherwise be written into current and, next time, old.
    // Every part's size is checked, and the checksums of what this task reads.
    let mine = |name: &str| parts.iter().any(|&i| parquet::is_partition_file(name, i));
    let whole = parts.len() == n;
    let verify = |d: &Path| {
        if whole {
            integrity::verify(d, Check::Checksums).map(|_| ())
        } else {
            integrity::verify_parts(d, Check::Checksums, &mine)
        }
    };
    dir.refuse_unmarked_crawldb()?;
    verify(&dir.crawldb_current())?;
    for sg in &segments {
        verify(&sg.seg.dataset(SegmentDataset::CrawlFetch))?;
        if sg.part != Part::FetchOnly {
            verify(&sg.seg.dataset(SegmentDataset::CrawlParse))?;
        }
    }

    check_space(
        &dir,
        n,
        parts.len(),
        &segments,
        cfg.updatedb.sort_buffer_rows,
    )?;
    let mut state = Ctx::new(&cfg.updatedb, cfg.urls.max_depth, now);
    state.additions = cfg.updatedb.additions_allowed;
    let policy = UrlPolicy::new(&cfg.urls, &meta.seed_hosts)?;
    let (redirects, parts_read) = route_redirects(&segments, &policy, meta.partitioner())?;
    task.redirect_fetch_parts_read = parts_read;
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let pb = crate::cli::progress_bar(parts.len() as u64, "updatedb");
    let stats = parts
        .par_iter()
        .map(|&i| {
            super::interrupted("updatedb")?;
            let mut w = PartWriter::<CrawlDatum>::create(&out.join(parquet::part_name(i)))?;
            let st = run_partition(
                &dir,
                i,
                meta.partitioner(),
                &segments,
                &redirects[i],
                &state,
                &policy,
                &mut w,
            )?;
            w.finish()?;
            pb.inc(1);
            Ok(st)
        })
        .collect::<Result<Vec<PartStats>>>()?;
    pb.finish_and_clear();
    for st in stats {
        task.rows += st.rows;
        task.added += st.added;
        task.fetched += st.fetched;
        task.purged += st.purged;
    }
    Ok(task)
}

/// The commit of an updatedb job, under the crawldb lock: checks that every task
/// read the version current now and merged the same segments, links their parts
/// (`(dir holding part-NNNNN.parquet, report)`, covering every partition once) into
/// a new version recording the segments, installs it and returns the summed report.
fn commit(dir: &CrawlDir, tasks: &[(PathBuf, UpdateTaskReport)]) -> Result<UpdateReport> {
    let mut meta = dir.crawldb_meta()?;
    let version = version_id(dir)?;
    let Some((_, first)) = tasks.first() else {
        return Err(Error::crawl_dir(
            dir.crawldb(),
            "internal: an updatedb commit without tasks",
        ));
    };
    for (path, t) in tasks {
        check_version(dir, path, &t.crawldb_version, &version)?;
        if t.segments != first.segments {
            return Err(Error::crawl_dir(
                path,
                format!(
                    "the tasks of this job merged different segments ({:?} here, {:?} in another): give every task the same SEGMENT arguments; nothing was installed",
                    t.segments, first.segments
                ),
            ));
        }
    }
    let mut report = UpdateReport {
        skipped: first.skipped.clone(),
        ..UpdateReport::default()
    };
    if first.segments.is_empty() {
        return Ok(report);
    }
    for (_, t) in tasks {
        report.rows += t.rows;
        report.added += t.added;
        report.fetched += t.fetched;
        report.purged += t.purged;
    }
    for (name, part) in &first.segments {
        record_segment(&mut meta, name, *part);
        report.record(name, *part);
    }
    let parts: Vec<(&Path, &[usize])> = tasks
        .iter()
        .map(|(p, t)| (p.as_path(), t.partitions.as_slice()))
        .collect();
    install_parts(dir, &parts, &mut meta, "updatedb")?;
    Ok(report)
}

/// The segments this run merges, each with what is merged of it: `opts.segments`, or
/// the newest fetched segment not yet (fully) applied. Segments already applied go
/// into `report.skipped`; a segment that cannot be applied is an error.
fn choose_segments(
    dir: &CrawlDir,
    meta: &CrawlDbMeta,
    opts: &UpdateOpts,
    report: &mut UpdateReport,
) -> Result<Vec<Seg>> {
    let chosen_newest = opts.segments.is_empty();
    let candidates: Vec<Segment> = if chosen_newest {
        // The newest fetched segment whose fetch outcomes (with --no-parse) or whose
        // results (without) are not all merged yet.
        let newest = dir.segments()?.into_iter().rev().find(|s| {
            s.has(SegmentDataset::CrawlFetch)
                && !meta.is_applied(s.name())
                && !(opts.no_parse && meta.is_partial(s.name()))
        });
        match newest {
            Some(s) => vec![s],
            None => {
                tracing::info!("no fetched segment left to apply");
                return Ok(Vec::new());
            }
        }
    } else {
        opts.segments
            .iter()
            .map(|p| dir.segment(p))
            .collect::<Result<_>>()?
    };
    let mut segments = Vec::new();
    let mut seen = HashSet::new();
    for s in candidates {
        let name = s.name().to_string();
        if meta.is_applied(&name) || !seen.insert(name.clone()) {
            tracing::warn!("segment {name} is already applied to the crawldb: skipping it");
            report.skipped.push(name);
            continue;
        }
        match what_to_merge(&s, meta, opts.no_parse, chosen_newest)? {
            Some(part) => {
                let m = s.meta()?;
                segments.push(Seg {
                    seg: s,
                    parts: m.partitioner(),
                    part,
                    routed: m.redirects_in_crawl_parse,
                });
            }
            None => report.skipped.push(name),
        }
    }
    Ok(segments)
}

/// What is merged of segment `s` (not applied yet); `None` when there is nothing left
/// to merge with `--no-parse` (its fetch outcomes are applied). An error when it is not
/// fetched, or not parsed without `--no-parse`.
fn what_to_merge(
    s: &Segment,
    meta: &CrawlDbMeta,
    no_parse: bool,
    chosen_newest: bool,
) -> Result<Option<Part>> {
    let name = s.name();
    // A segment a stage is writing (fetch, parse) must not be applied half done.
    s.check_unlocked("updatedb")?;
    if !s.has(SegmentDataset::CrawlFetch) {
        return Err(Error::crawl_dir(
            s.path(),
            format!(
                "segment {name} was never fetched (no complete crawl_fetch/): run `fetch {name}` first"
            ),
        ));
    }
    let which = if chosen_newest {
        " (the newest fetched segment not yet applied)"
    } else {
        ""
    };
    let parsed = s.has(SegmentDataset::CrawlParse);
    Ok(Some(match (meta.is_partial(name), no_parse, parsed) {
        (true, true, _) => {
            tracing::warn!(
                "segment {name}: its fetch outcomes are already applied (partially applied); run `parse {name}` if needed, then `updatedb {name}` to merge the rest: skipping it"
            );
            return Ok(None);
        }
        (true, false, true) => Part::Rest,
        (true, false, false) => {
            return Err(Error::crawl_dir(
                s.path(),
                format!(
                    "segment {name}{which} is partially applied (fetch statuses only, by `updatedb --no-parse`) and still not parsed (no complete crawl_parse/): run `parse {name}` first, then `updatedb {name}` to merge its signatures and outlinks. Nothing was changed"
                ),
            ));
        }
        (false, true, parsed) => {
            if parsed {
                tracing::warn!(
                    "segment {name} is parsed, but --no-parse merges its fetch statuses only; run `updatedb {name}` again to merge its signatures and outlinks"
                );
            }
            Part::FetchOnly
        }
        (false, false, true) => Part::Whole,
        (false, false, false) => {
            return Err(Error::crawl_dir(
                s.path(),
                format!(
                    "segment {name}{which} is fetched but not parsed (no complete crawl_parse/): run `parse {name}` first, or pass --no-parse to apply fetch statuses only (a later `updatedb {name}` after parse merges the rest). Nothing was changed"
                ),
            ));
        }
    }))
}

/// A redirect target routed to its crawldb partition: (url, host, inlink).
type Redirect = (String, String, Inlink);

/// The redirect targets of the segments' fetches that are not in their crawl_parse,
/// per crawldb partition (they may live in any partition: small, one per redirect),
/// and how many crawl_fetch parts were read for them. Segments parsed with the
/// redirect shuffle bring theirs in crawl_parse (`redirect` rows, read by each
/// partition's merge): nothing is read here. Older segments, and those applied
/// `--no-parse`, are read whole. A segment being completed had its fetches (and
/// redirects) merged already.
fn route_redirects(
    segments: &[Seg],
    policy: &UrlPolicy,
    pt: Partitioner,
) -> Result<(Vec<Vec<Redirect>>, u64)> {
    let mut redirects: Vec<Vec<Redirect>> = (0..pt.n()).map(|_| Vec::new()).collect();
    let mut parts_read = 0;
    for sg in segments
        .iter()
        .filter(|sg| sg.part != Part::Rest && !sg.redirects_from_parse())
    {
        for p in 0..sg.parts.n() {
            let rows: Vec<FetchRecord> = read_partition(
                &sg.seg.dataset(SegmentDataset::CrawlFetch),
                p,
                sg.parts,
                sg.parts,
                |r: &FetchRecord| &r.host,
            )?;
            parts_read += 1;
            for f in rows {
                let Some(Ok(url)) = f.redirect().map(|t| policy.check(t)) else {
                    continue;
                };
                let url = url.to_string();
                let host = host_of(&url);
                let inl = Inlink {
                    score: f.score,
                    depth: f.depth,
                    redirect: true,
                };
                redirects[pt.of_host(&host)].push((url, host, inl));
            }
        }
    }
    Ok((redirects, parts_read))
}

/// Refuses to start when the disk cannot hold the new crawldb version (the current
/// one plus, at most, one row per segment link row) and the spill of the external
/// sort of the segment rows (docs/crawldb.md, Disk).
fn check_space(
    dir: &CrawlDir,
    n: usize,
    mine: usize,
    segments: &[Seg],
    buffer_rows: usize,
) -> Result<()> {
    let current = dir.crawldb_current();
    let per_row = disk::bytes_per_row(&current)?;
    let mut sorted = Vec::new();
    let mut links = 0;
    for sg in segments {
        sorted.push(sg.seg.dataset(SegmentDataset::CrawlFetch));
        if sg.part != Part::FetchOnly {
            let parse = sg.seg.dataset(SegmentDataset::CrawlParse);
            links += disk::dataset_rows(&parse)?;
            sorted.push(parse);
        }
    }
    // A task writes its share of the partitions.
    let share = |b: u64| b * mine as u64 / n.max(1) as u64;
    let version = share(disk::dataset_bytes(&current)? + links * per_row);
    let threads = rayon::current_num_threads().min(mine.max(1));
    let spill = disk::spill_estimate(&sorted, n, buffer_rows, threads)?;
    disk::ensure_crawldb_space(dir, "updatedb", version, spill, "the segment rows")
}

/// Records segment `name` in the crawldb's metadata: applied, or partially applied.
fn record_segment(meta: &mut CrawlDbMeta, name: &str, part: Part) {
    let name = name.to_string();
    match part {
        Part::Whole => meta.applied_segments.push(name),
        Part::FetchOnly => meta.partial_segments.push(name),
        Part::Rest => {
            meta.partial_segments.retain(|p| *p != name);
            meta.applied_segments.push(name);
        }
    }
}

/// A segment of this run and what is merged of it.
#[derive(Debug)]
struct Seg {
    seg: Segment,
    /// Its partitioning.
    parts: Partitioner,
    part: Part,
    /// Its crawl_parse carries its redirects (the redirect shuffle,
    /// [`crate::store::layout::SegmentMeta::redirects_in_crawl_parse`]).
    routed: bool,
}

impl Seg {
    /// Whether this run takes the segment's redirects from its crawl_parse (each
    /// partition's own files) rather than from the whole of its crawl_fetch.
    fn redirects_from_parse(&self) -> bool {
        self.part == Part::Whole && self.routed
    }
}

/// The segment rows of one partition being sorted by URL: fetch outcomes and the rest
/// (parse results, markers, redirects), spilled together when their buffers hold
/// `budget` rows.
struct SegRows {
    fetches: Sorter<FetchRecord>,
    parse: Sorter<Keyed>,
    budget: usize,
}

impl SegRows {
    fn fetch(&mut self, r: FetchRecord) -> Result<()> {
        self.fetches.push(r);
        self.spill_if_full()
    }

    fn keyed(&mut self, url: String, host: String, row: SegRow) -> Result<()> {
        self.parse.push(Keyed { url, host, row });
        self.spill_if_full()
    }

    fn spill_if_full(&mut self) -> Result<()> {
        if self.fetches.buffered() + self.parse.buffered() >= self.budget {
            self.fetches.spill()?;
            self.parse.spill()?;
        }
        Ok(())
    }
}

/// Merges crawldb partition `i` (of `pt`) with the segments' rows of that partition and
/// the redirect targets routed to it, writing the new part to `w`.
#[allow(clippy::too_many_arguments)]
fn run_partition(
    dir: &CrawlDir,
    i: usize,
    pt: Partitioner,
    segments: &[Seg],
    redirects: &[Redirect],
    state: &Ctx,
    policy: &UrlPolicy,
    w: &mut PartWriter<CrawlDatum>,
) -> Result<PartStats> {
    // Segment rows are sorted by an external sort bounded by `sort_buffer_rows`;
    // spilled runs live in the staged crawldb version (removed with it on a crash).
    let spill_dir = w
        .path()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| dir.crawldb());
    let budget = state.cfg.sort_buffer_rows.max(1);
    let mut rows = SegRows {
        fetches: Sorter::new(&spill_dir, &format!("updatedb-{i:05}-fetch")),
        parse: Sorter::new(&spill_dir, &format!("updatedb-{i:05}-parse")),
        budget,
    };
    for sg in segments {
        scan_fetches(sg, i, pt, &mut rows)?;
        if sg.part != Part::FetchOnly && sg.seg.has(SegmentDataset::CrawlParse) {
            scan_parse(sg, i, pt, &mut rows)?;
        }
    }
    for (url, host, inl) in redirects {
        rows.keyed(url.clone(), host.clone(), SegRow::Link(inl.clone()))?;
    }
    let runs = rows.fetches.runs() + rows.parse.runs();
    if runs > 0 {
        tracing::debug!(
            "partition {i}: segment rows beyond updatedb.sort_buffer_rows = {budget}: merging {runs} sorted runs spilled to {}",
            spill_dir.display()
        );
    }

    let admit = |url: &str| policy.check(url).is_ok();
    let t = merge::merge_sorted(
        &current_part(dir, i),
        rows.fetches.finish()?,
        rows.parse.finish()?,
        state,
        &admit,
        w,
    )?;
    Ok(PartStats {
        rows: t.rows,
        added: t.added,
        fetched: t.fetched,
        purged: t.purged,
    })
}

/// Adds partition `i` of a segment's `crawl_fetch` to `rows`: the fetch outcomes (unless
/// the segment is being completed) and the markers of what its parse will bring.
fn scan_fetches(sg: &Seg, i: usize, n: Partitioner, rows: &mut SegRows) -> Result<()> {
    let (s, part) = (&sg.seg, sg.part);
    let name = s.name();
    scan_partition(
        &s.dataset(SegmentDataset::CrawlFetch),
        i,
        n,
        sg.parts,
        |r: &FetchRecord| &r.host,
        |batch| {
            for r in batch {
                let success = r.status == FetchStatus::FetchSuccess;
                let marker = match part {
                    Part::Whole => None,
                    Part::FetchOnly => success.then(|| SegRow::Unparsed {
                        segment: name.to_string(),
                        fetch_time: r.fetch_time,
                    }),
                    Part::Rest => success.then(|| SegRow::Settle {
                        segment: name.to_string(),
                        signature: None,
                    }),
                };
                if let Some(row) = marker {
                    rows.keyed(r.url.clone(), r.host.clone(), row)?;
                }
                // A segment being completed had its fetches merged already.
                if part != Part::Rest {
                    rows.fetch(r)?;
                }
            }
            Ok(())
        },
    )
}

/// Adds partition `i` of a segment's `crawl_parse` (signatures, links) to `rows`.
fn scan_parse(sg: &Seg, i: usize, n: Partitioner, rows: &mut SegRows) -> Result<()> {
    let (s, part) = (&sg.seg, sg.part);
    let name = s.name();
    scan_partition(
        &s.dataset(SegmentDataset::CrawlParse),
        i,
        n,
        sg.parts,
        |r: &CrawlParseRecord| &r.host,
        |batch| {
            for r in batch {
                let row = match r.kind.as_str() {
                    "signature" => match (r.signature, part) {
                        (Some(sig), Part::Rest) => SegRow::Settle {
                            segment: name.to_string(),
                            signature: Some(sig),
                        },
                        (Some(sig), _) => SegRow::Sig(sig),
                        (None, _) => continue,
                    },
                    "link" => SegRow::Link(Inlink {
                        score: r.score,
                        depth: r.depth,
                        redirect: false,
                    }),
                    // Taken from here only when the run reads no crawl_fetch for
                    // them (see `route_redirects`).
                    "redirect" if sg.redirects_from_parse() => SegRow::Link(Inlink {
                        score: r.score,
                        depth: r.depth,
                        redirect: true,
                    }),
                    "redirect" => continue,
                    other => {
                        return Err(Error::crawl_dir(
                            s.dataset(SegmentDataset::CrawlParse),
                            format!(
                                "unknown row kind {other:?} for {}; re-run parse on segment {name}",
                                r.url
                            ),
                        ));
                    }
                };
                rows.keyed(r.url, r.host, row)?;
            }
            Ok(())
        },
    )
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::Config;
    use crate::store::parquet;
    use trawl_bench::benchgen::{self, BenchSpec};

    fn copy_tree(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let dest = to.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                copy_tree(&e.path(), &dest);
            } else {
                std::fs::copy(e.path(), &dest).unwrap();
            }
        }
    }

    fn files_named(dir: &Path, suffix: &str, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                files_named(&p, suffix, out);
            } else if p.to_string_lossy().ends_with(suffix) {
                out.push(p);
            }
        }
    }

    fn crawldb_rows(root: &Path) -> Vec<Vec<CrawlDatum>> {
        let dir = CrawlDir::open_existing(root).unwrap();
        parquet::part_files(&dir.crawldb_current())
            .unwrap()
            .iter()
            .map(|p| parquet::read_part_all::<CrawlDatum>(p).unwrap())
            .collect()
    }

    #[test]
    fn spilled_sort_writes_the_same_crawldb_and_no_spill_file_is_left() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("a");
        let spec = BenchSpec {
            urls: 30_000,
            hosts: 300,
            partitions: 3,
        };
        let seg = benchgen::generate(&a, &spec).unwrap();
        let seg_name = seg.file_name().unwrap().to_string_lossy().into_owned();
        let b = tmp.path().join("b");
        copy_tree(&a, &b);
        let c = tmp.path().join("c");
        copy_tree(&a, &c);

        let now = now_millis();
        let opts = UpdateOpts::default();
        let cfg = Config::default();
        let in_memory = run_at(&StageCtx::new(&a, cfg), &opts, now).unwrap();
        let mut small = Config::default();
        // Segment rows per partition: ~1k fetches + ~5k links + signatures, so about 100
        // runs: more than spill::MAX_FAN_IN, merged in two passes.
        small.updatedb.sort_buffer_rows = 61;
        let spilled = run_at(&StageCtx::new(&b, small.clone()), &opts, now).unwrap();
        assert_eq!(in_memory, spilled);
        assert_eq!(in_memory.applied, vec![seg_name]);
        assert!(
            in_memory.fetched > 1000 && in_memory.added > 1000,
            "{in_memory:?}"
        );
        let rows_a = crawldb_rows(&a);
        assert_eq!(rows_a.len(), 3);
        assert_eq!(
            rows_a.iter().map(Vec::len).sum::<usize>() as u64,
            in_memory.rows
        );
        assert!(
            rows_a == crawldb_rows(&b),
            "spilled updatedb wrote a different crawldb"
        );

        // A budget just under a partition's rows: one full run plus the rest.
        small.updatedb.sort_buffer_rows = 5_000;
        let two = run_at(&StageCtx::new(&c, small), &opts, now).unwrap();
        assert_eq!(in_memory, two);
        assert!(rows_a == crawldb_rows(&c), "updatedb with two runs differs");

        for root in [&a, &b, &c] {
            let mut left = Vec::new();
            files_named(root, ".spill", &mut left);
            assert!(left.is_empty(), "spill files left behind: {left:?}");
        }
    }
}
