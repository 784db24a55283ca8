//! `generate`: selects the URLs due for fetching into new segments (fetch lists).
//!
//! Per crawldb partition, in parallel, pass 1 reads four columns and keeps the
//! partition's best `top_n x segments` candidates (16 bytes each: score, row, host
//! or domain id), at most `max_per_host` per host or domain. From their scores the
//! exact selection is made ([`select::choose`]): by (score desc, url asc), with the
//! per-domain cap across partitions (a domain may span partitions), the best
//! `top_n x segments` cut into `segments` fetch lists of at most `top_n`; URLs are
//! read only where candidates of several partitions tie at a cut (streamed), or,
//! with the per-domain cap, for the rows that can make it. Pass 2 then reads, part by
//! part (a few in parallel), just the selected rows (a Parquet row selection) and
//! writes them. Memory: O(partitions x top_n x 16 bytes) for the candidates plus
//! the selected rows of the parts being written (about top_n / partitions rows
//! each), never the whole crawldb. See [`select`] for the kernels.
//!
//! URLs held by a pending fetch list (a segment not yet applied by updatedb,
//! generated less than `generate.gen_delay` seconds ago) are not handed out again.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};

use arrow::array::UInt32Array;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::cli::{Exit, exit};
use crate::config::Config;
use crate::crawldb::current_part;
use crate::crawldb::select::{self, Rules};
use crate::crawldb::stream::read_partition;
use crate::datum::{CrawlDatum, DbStatus, Millis, now_millis};
use crate::error::{Error, IoContext, Result};
use crate::stage::{Guard, Partitioned, Report, StageCtx, Verify};
use crate::store::disk;
use crate::store::jobs::{Job, PartitionSet};
use crate::store::layout::{self, CrawlDir, SEGMENT_META, SegmentMeta};
use crate::store::names::SegmentDataset;
use crate::store::parquet::{self, PartWriter, StagedDataset};

/// Options of one generate run (flags over `[generate]`).
#[derive(Debug, Clone)]
pub struct GenerateOpts {
    /// URLs per fetch list.
    pub top_n: usize,
    /// Cap per host or domain (0 = none).
    pub max_per_host: usize,
    /// Fetch lists to cut.
    pub segments: usize,
    /// The time (ms); normally now. It names the segments, dates them and decides
    /// which pending fetch lists still hold their URLs.
    pub now: Millis,
    /// URLs due up to this long after `now` (ms) are selected (Nutch's -adddays).
    pub lookahead: Millis,
    /// The pass a task of a job runs (`--pass`); `None` in a one-process run, the
    /// cut-off and a commit.
    pub pass: Option<GeneratePass>,
}

/// The two passes of a generate job's tasks (between them, the cut-off).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeneratePass {
    /// Per partition set: the partitions' pass-1 candidates (the score histogram).
    Histogram,
    /// Per partition set: the partitions' rows of the fetch lists the cut-off chose.
    Select,
}

/// The sub-jobs of a generate job's passes, and its cut-off file.
const HISTOGRAM: &str = "histogram";
const SELECT: &str = "select";
const CUTOFF_FILE: &str = "cutoff.json";

impl GenerateOpts {
    /// Options from the config, for now.
    pub fn from_config(cfg: &Config) -> Self {
        GenerateOpts {
            top_n: cfg.generate.top_n,
            max_per_host: cfg.generate.max_per_host,
            segments: 1,
            now: now_millis(),
            lookahead: 0,
            pass: None,
        }
    }
}

/// What generate did.
#[derive(Debug, Clone, Default)]
pub struct GenerateReport {
    /// The segments written, in order.
    pub segments: Vec<PathBuf>,
    /// URLs per segment.
    pub urls: Vec<u64>,
    /// Rows of the crawldb read.
    pub scanned: u64,
    /// Rows due and eligible (before caps).
    pub due: u64,
    /// Due rows held by pending fetch lists.
    pub pending: u64,
    /// Due rows of hosts left out after failing in a row (`generate.host_max_failures`).
    pub backed_off: u64,
    /// The summary of a task of a job (which installs no segment, so never ends
    /// with "nothing due").
    pub task: bool,
}

impl fmt::Display for GenerateReport {
    /// `K segment(s) with A+B urls, D due, P held by pending fetch lists, S scanned`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} segment(s) with ", self.segments.len())?;
        if self.urls.is_empty() {
            f.write_str("0")?;
        }
        for (i, u) in self.urls.iter().enumerate() {
            if i > 0 {
                f.write_str("+")?;
            }
            write!(f, "{u}")?;
        }
        write!(
            f,
            " urls, {} due, {} held by pending fetch lists, {} scanned",
            self.due, self.pending, self.scanned
        )?;
        if self.backed_off > 0 {
            write!(f, ", {} of failing hosts held back", self.backed_off)?;
        }
        Ok(())
    }
}

impl Report for GenerateReport {
    const STAGE: &'static str = "generate";

    /// [`exit::NOTHING_DUE`] when no segment was written.
    fn exit(&self) -> Option<Exit> {
        (self.segments.is_empty() && !self.task).then(|| {
            Exit::new(
                exit::NOTHING_DUE,
                if self.backed_off > 0 {
                    format!(
                        "generate: nothing to generate: the {} due URLs are all on hosts held back after failing in a row (generate.host_max_failures, generate.host_backoff; readhostdb --failing lists them); exit code {}",
                        self.backed_off,
                        exit::NOTHING_DUE
                    )
                } else {
                    format!(
                        "generate: no URLs due: nothing to generate (exit code {})",
                        exit::NOTHING_DUE
                    )
                },
            )
        })
    }
}

/// Whether a row's status may be generated (Nutch: everything but duplicates).
pub fn status_eligible(s: DbStatus) -> bool {
    !matches!(s, DbStatus::DbDuplicate)
}

/// URLs of pending fetch lists in the crawldb partitions `parts` (indexed by
/// partition; the others left empty), and the names of those pending lists.
fn pending_urls(
    dir: &CrawlDir,
    meta: &crate::store::layout::CrawlDbMeta,
    parts: &[usize],
    now: Millis,
    gen_delay: i64,
) -> Result<(Vec<HashSet<String>>, Vec<String>)> {
    let n = meta.partitions;
    let mut out: Vec<HashSet<String>> = (0..n).map(|_| HashSet::new()).collect();
    let mut names = Vec::new();
    for (s, smeta) in pending_segments(dir, meta, now, gen_delay)? {
        for &i in parts {
            let rows: Vec<CrawlDatum> = read_partition(
                &s.dataset(SegmentDataset::CrawlGenerate),
                i,
                meta.partitioner(),
                smeta.partitioner(),
                |d: &CrawlDatum| &d.host,
            )?;
            out[i].extend(rows.into_iter().map(|d| d.url));
        }
        names.push(s.name().to_string());
    }
    Ok((out, names))
}

/// The pending fetch lists: segments whose fetches are not applied (nor partially:
/// a partially applied segment's fetches are merged, it holds no URLs any more),
/// generated less than `gen_delay` seconds before `now`.
fn pending_segments(
    dir: &CrawlDir,
    meta: &crate::store::layout::CrawlDbMeta,
    now: Millis,
    gen_delay: i64,
) -> Result<Vec<(crate::store::layout::Segment, SegmentMeta)>> {
    let mut out = Vec::new();
    for s in dir.segments()? {
        if meta.is_applied(s.name())
            || meta.is_partial(s.name())
            || !s.has(SegmentDataset::CrawlGenerate)
        {
            continue;
        }
        let smeta = s.meta()?;
        if smeta.generated_time + gen_delay * 1000 < now {
            continue;
        }
        out.push((s, smeta));
    }
    Ok(out)
}

/// Runs generate on the crawl directory of `ctx` (which must hold a crawldb) with the
/// `[generate]` keys of its configuration. A report without segments means nothing was
/// due ([`Report::exit`] is then [`exit::NOTHING_DUE`]).
pub fn run(ctx: &StageCtx, opts: &GenerateOpts) -> Result<GenerateReport> {
    if !ctx.is_whole() || opts.pass.is_some() {
        return run_job(ctx, opts);
    }
    let cfg = ctx.config();
    let dir = ctx.open_existing()?;
    // Held so that two generates cannot hand out the same URLs and updatedb cannot
    // apply a segment while we read the pending lists.
    let _held = ctx.hold("generate", &[Guard::CrawlDb(Verify::Never)])?;
    let meta = dir.crawldb_meta()?;
    let n = meta.partitions;
    let rules = rules(&dir, cfg, opts)?;
    check_space(&dir, rules.limit)?;
    let all: Vec<usize> = (0..n).collect();
    let (pending, _) = pending_urls(&dir, &meta, &all, opts.now, cfg.generate.gen_delay)?;
    let started = std::time::Instant::now();
    let pb = crate::cli::progress_bar(n as u64, "generate");
    let parts = (0..n)
        .into_par_iter()
        .map(|i| {
            let r = run_partition(&dir, i, &rules, &pending[i]);
            pb.inc(1);
            r
        })
        .collect::<Result<Vec<_>>>()?;
    pb.finish_and_clear();
    drop(pending);

    let mut report = GenerateReport::default();
    for p in &parts {
        report.scanned += p.scanned;
        report.due += p.due;
        report.pending += p.pending;
        report.backed_off += p.backed_off;
    }
    tracing::debug!(
        "generate: pass 1 (rank) {:.2}s, {} candidates",
        started.elapsed().as_secs_f64(),
        parts.iter().map(|p| p.cands.len()).sum::<usize>()
    );
    // The exact selection, as row numbers per list and part.
    let paths: Vec<PathBuf> = (0..n).map(|i| current_part(&dir, i)).collect();
    let lists = select::choose(&paths, &parts, &rules, opts.top_n)?;
    drop(parts);
    tracing::debug!("generate: select {:.2}s", started.elapsed().as_secs_f64());
    if lists.is_empty() {
        return Ok(report);
    }
    // Pass 2: per part, read the rows of its lists and write them.
    write_segments(&dir, opts, meta.partition_key, &paths, &lists, &mut report)?;
    tracing::debug!("generate: written {:.2}s", started.elapsed().as_secs_f64());
    Ok(report)
}

/// The selection rules of a run with `opts`.
fn rules(dir: &CrawlDir, cfg: &Config, opts: &GenerateOpts) -> Result<Rules> {
    // Hosts failing in a row are left out for a while (the hostdb's counters).
    let skip_hosts = crate::hosts::backed_off_hosts(
        dir,
        cfg.generate.host_max_failures,
        cfg.generate.host_backoff.saturating_mul(1000),
        opts.now,
    )?;
    if !skip_hosts.is_empty() {
        let mut names: Vec<&String> = skip_hosts.iter().collect();
        names.sort();
        names.truncate(10);
        tracing::info!(
            "generate: {} hosts left out after {}+ failures in a row (generate.host_max_failures; back in {} s after their last failure): {}",
            skip_hosts.len(),
            cfg.generate.host_max_failures,
            cfg.generate.host_backoff,
            names
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    // Hosts capped by what they can deliver within the time budget (hostdb figures).
    let host_caps = if cfg.generate.count_mode == crate::config::CountMode::Domain {
        if cfg.generate.host_time_budget > 0.0 {
            tracing::warn!(
                "generate.host_time_budget caps hosts, not domains: ignored with count_mode = \"domain\""
            );
        }
        Default::default()
    } else {
        crate::hosts::host_caps(dir, cfg.generate.host_time_budget, cfg.fetch.delay)?
    };
    Ok(Rules {
        skip_hosts,
        host_caps,
        now: opts.now.saturating_add(opts.lookahead),
        min_score: cfg.generate.min_score,
        max_per_key: opts.max_per_host,
        by_domain: cfg.generate.count_mode == crate::config::CountMode::Domain,
        limit: opts.top_n.saturating_mul(opts.segments.max(1)),
    })
}

/// Refuses to start when the disk cannot hold fetch lists of `limit` rows (at the
/// crawldb's bytes per row; docs/crawldb.md, Disk).
fn check_space(dir: &CrawlDir, limit: usize) -> Result<()> {
    let current = dir.crawldb_current();
    let rows = disk::dataset_rows(&current)?.min(limit as u64);
    let need = rows * disk::bytes_per_row(&current)?;
    disk::ensure_space(
        &dir.segments_dir(),
        disk::with_headroom(need),
        "generate",
        &format!("the fetch lists ({rows} rows, about {})", disk::human(need)),
    )
}

/// Pass 1 over crawldb partition `i`: its best candidates under `rules`, leaving out
/// the URLs of pending fetch lists (`pending`, this partition's share).
pub fn run_partition(
    dir: &CrawlDir,
    i: usize,
    rules: &Rules,
    pending: &HashSet<String>,
) -> Result<select::Ranked> {
    select::rank_part(&current_part(dir, i), rules, pending)
}

/// Stages one segment per fetch list of `lists`, writes part `i` of each from
/// crawldb part `paths[i]` ([`write_partition`], partitions in parallel) and commits
/// them; the segments and their URL counts go into `report`.
fn write_segments(
    dir: &CrawlDir,
    opts: &GenerateOpts,
    key: crate::store::partition::PartitionKey,
    paths: &[PathBuf],
    lists: &select::Lists,
    report: &mut GenerateReport,
) -> Result<()> {
    let n = paths.len();
    let mut staged = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for list in lists {
        let mut t = opts.now;
        let name = loop {
            let name = layout::new_segment_name(dir, t);
            if !names.contains(&name) {
                break name;
            }
            t += 1000;
        };
        let urls: u64 = list.iter().map(|p| p.len() as u64).sum();
        let seg = StagedDataset::new(&dir.segments_dir().join(&name))?;
        let gen_dir = seg.path().join(SegmentDataset::CrawlGenerate.as_str());
        std::fs::create_dir_all(&gen_dir).at(&gen_dir)?;
        parquet::write_json(
            &seg.path().join(SEGMENT_META),
            &SegmentMeta {
                name: name.clone(),
                generated_time: opts.now,
                partitions: n,
                partition_key: key,
                urls,
                redirects_in_crawl_parse: false,
            },
        )?;
        report.urls.push(urls);
        names.push(name);
        staged.push(seg);
    }
    let gen_dirs: Vec<PathBuf> = staged
        .iter()
        .map(|s| s.path().join(SegmentDataset::CrawlGenerate.as_str()))
        .collect();
    (0..n)
        .into_par_iter()
        .map(|i| write_partition(i, &paths[i], lists, &gen_dirs))
        .collect::<Result<Vec<()>>>()?;
    for (seg, d) in staged.into_iter().zip(&gen_dirs) {
        parquet::write_atomic(
            &d.join(parquet::SUCCESS_MARKER),
            chrono::Utc::now().to_rfc3339().as_bytes(),
        )?;
        report.segments.push(seg.commit()?);
    }
    Ok(())
}

/// Writes part `i` of every fetch list (`lists[segment][i]`, row numbers of the
/// crawldb part `path`, best first) into its segment's `crawl_generate` directory
/// (`gen_dirs[segment]`), hosts interleaved. Reads only those rows: memory is the
/// part's share of the fetch lists, never the part.
fn write_partition(
    i: usize,
    path: &Path,
    lists: &select::Lists,
    gen_dirs: &[PathBuf],
) -> Result<()> {
    let mut rows: Vec<u32> = lists.iter().flat_map(|l| l[i].iter().copied()).collect();
    rows.sort_unstable();
    let batch = select::read_rows(path, &rows)?;
    let hosts = select::HostIds::new(&batch)?;
    for (list, d) in lists.iter().zip(gen_dirs) {
        let mut w = PartWriter::<CrawlDatum>::create(&d.join(parquet::part_name(i)))?;
        if !list[i].is_empty() {
            // Row numbers to indices into `batch` (which holds `rows`, ascending).
            let idx: Vec<u32> = list[i]
                .iter()
                .map(|r| rows.partition_point(|x| x < r) as u32)
                .collect();
            let idx = UInt32Array::from(select::interleave(&hosts, &idx));
            let b = arrow::compute::take_record_batch(&batch, &idx)
                .map_err(|e| crate::error::Error::arrow("generate", e))?;
            w.write_batch(&b)?;
        }
        w.finish()?;
    }
    Ok(())
}

/// Runs a generate task of a job (`opts.pass`) or a job's commit, as
/// [`crate::stage::execute`] splits the run (a one-process run is [`run`]; the cut-off
/// between the passes is [`run_cutoff`]).
pub fn run_job(ctx: &StageCtx, opts: &GenerateOpts) -> Result<GenerateReport> {
    let dir = ctx.open_existing()?;
    let n = dir.crawldb_meta()?.partitions;
    let pass = ctx.pass(
        "generate",
        opts.pass,
        "--pass histogram, then (after --cutoff) --pass select",
    )?;
    crate::stage::execute(ctx, Guard::CrawlDb(Verify::Never), || {
        Ok(Generate { ctx, opts, n, pass })
    })
}

/// A generate job's tasks and commit as the executor runs them
/// ([`crate::stage::execute`]).
struct Generate<'a> {
    ctx: &'a StageCtx,
    opts: &'a GenerateOpts,
    n: usize,
    pass: Option<GeneratePass>,
}

impl Partitioned for Generate<'_> {
    type Out = GenerateReport;
    const NAME: &'static str = "generate";

    fn partitions(&self) -> usize {
        self.n
    }

    fn task(
        &mut self,
        job: &Job,
        partitions: &PartitionSet,
        attempt: &str,
    ) -> Result<GenerateReport> {
        let parts: Vec<usize> = partitions.iter().collect();
        match self.pass {
            Some(GeneratePass::Histogram) => {
                let w = job.pass(HISTOGRAM).attempt_writer(partitions, attempt)?;
                let h = histogram_task(self.ctx, self.opts, &parts, w.path())?;
                super::finish_attempt(w, &h)?;
                Ok(GenerateReport {
                    scanned: h.scanned,
                    due: h.due,
                    pending: h.pending,
                    task: true,
                    ..GenerateReport::default()
                })
            }
            _ => {
                let cut = read_cutoff(job)?;
                let w = job.pass(SELECT).attempt_writer(partitions, attempt)?;
                let histogram = job.pass(HISTOGRAM);
                let r = select_task(self.ctx, &cut, histogram.dir(), &parts, w.path())?;
                super::finish_attempt(w, &r)?;
                Ok(GenerateReport {
                    scanned: cut.scanned,
                    due: cut.due,
                    pending: cut.pending,
                    urls: r.urls,
                    task: true,
                    ..GenerateReport::default()
                })
            }
        }
    }

    fn commit(&mut self, job: &Job) -> Result<GenerateReport> {
        let cut = read_cutoff(job)?;
        let selected = job
            .pass(SELECT)
            .choose(self.n)?
            .iter()
            .map(|a| Ok((a.path().to_path_buf(), a.report()?)))
            .collect::<Result<Vec<_>>>()?;
        commit(self.ctx, now_millis(), &cut, &selected)
    }
}

/// What the cut-off of a generate job did (its summary line).
#[derive(Debug, Clone, Default)]
pub struct CutoffReport {
    /// Fetch lists chosen.
    pub lists: usize,
    /// URLs in them.
    pub urls: u64,
    /// Blocks of candidates read (none with a per-domain cap: every candidate is).
    pub blocks: u64,
    /// Their bytes.
    pub bytes: u64,
    /// The object-store requests they took (ranged GETs).
    pub requests: u64,
}

impl fmt::Display for CutoffReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} fetch list(s) with {} urls chosen; {} blocks of candidates read ({} bytes, {} ranged GETs)",
            self.lists, self.urls, self.blocks, self.bytes, self.requests
        )
    }
}

/// The cut-off of a generate job (`generate --job J --cutoff`): reads the chosen
/// histogram attempts, makes the selection and writes it as the job's cut-off file.
pub fn run_cutoff(ctx: &StageCtx, opts: &GenerateOpts, job: &str) -> Result<CutoffReport> {
    let dir = ctx.open_existing()?;
    let n = dir.crawldb_meta()?.partitions;
    let job = crate::store::jobs::Job::open(dir.root(), job)?;
    let attempts = job
        .pass(HISTOGRAM)
        .choose(n)?
        .iter()
        .map(|a| Ok((a.path().to_path_buf(), a.report()?)))
        .collect::<Result<Vec<_>>>()?;
    let (cut, mut report) = cutoff(ctx, opts, &attempts)?;
    let per_list = cut.selection.urls();
    report.lists = per_list.len();
    report.urls = per_list.iter().sum();
    let bytes = serde_json::to_vec(&cut)
        .map_err(|e| Error::crawl_dir(job.dir(), format!("cannot encode the cut-off: {e}")))?;
    parquet::write_atomic(&job.file(CUTOFF_FILE), &bytes)?;
    Ok(report)
}

/// The cut-off of `job`.
fn read_cutoff(job: &crate::store::jobs::Job) -> Result<Cutoff> {
    let file = job.file(CUTOFF_FILE);
    if !file.is_file() {
        return Err(Error::crawl_dir(
            &file,
            format!(
                "job {} has no cut-off: run `generate --job {} --cutoff` after the histogram pass",
                job.id(),
                job.id()
            ),
        ));
    }
    parquet::read_json(&file).map_err(|e| {
        Error::crawl_dir(
            &file,
            format!(
                "the cut-off of job {} cannot be read ({e}); run `generate --job {} --cutoff` again",
                job.id(),
                job.id()
            ),
        )
    })
}

/// What a `--pass histogram` task of a generate job did: its partitions' counts and
/// what the cut-off checks (the crawldb version read, the pending fetch lists seen).
/// Its attempt holds, per partition `i`, `ranked-NNNNN.bin`: the partition's pass-1
/// candidates (score, row, host or domain id, at most `top_n x segments`, at most
/// `max_per_host` per key, best first) and key names: the exact score histogram
/// the cut-off needs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HistogramReport {
    /// The crawldb version read ([`crate::crawldb::version_id`]).
    pub crawldb_version: String,
    /// Its partitions.
    pub partitions: Vec<usize>,
    /// The pending fetch lists that held URLs back.
    pub pending_segments: Vec<String>,
    /// Rows read.
    pub scanned: u64,
    /// Rows due and eligible.
    pub due: u64,
    /// Due rows held by pending fetch lists.
    pub pending: u64,
    /// How the candidates are stored: `blocks` (`part-NNNNN.cands` and its summary:
    /// without a per-domain cap) or `ranked` (`ranked-NNNNN.bin`: with one; also what
    /// an attempt without this field wrote).
    #[serde(default)]
    pub candidates: Option<CandidateFiles>,
}

/// How a histogram attempt stores its partitions' candidates ([`HistogramReport`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CandidateFiles {
    /// Fixed-width records with block summaries, read by blocks ([`super::cutoff`]).
    Blocks,
    /// Every candidate with its key names, read whole (a per-domain cap needs them).
    Ranked,
}

/// The cut-off of a generate job (`generate --cutoff`, stored as a job file): the
/// exact selection made from every partition's pass-1 candidates ([`Selection`]:
/// ranges of each partition's candidates, or with a per-domain cap the row numbers),
/// and the names the segments get.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Cutoff {
    /// The crawldb version the histograms were made from.
    pub crawldb_version: String,
    /// The crawldb's partition count.
    pub partitions: usize,
    /// The pending fetch lists the histograms left out.
    pub pending_segments: Vec<String>,
    /// When the segments are dated (ms): the cut-off's time.
    pub generated_time: Millis,
    /// One segment name per fetch list.
    pub names: Vec<String>,
    /// The fetch lists.
    pub selection: Selection,
    /// Summed counts of the histogram tasks.
    pub scanned: u64,
    /// Rows due and eligible.
    pub due: u64,
    /// Due rows held by pending fetch lists.
    pub pending: u64,
}

/// The fetch lists a cut-off chose.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Selection {
    /// Without a per-domain cap ([`select::needs_rows`] false): per fetch list and
    /// partition, the range `(from, to)` of the partition's pass-1 candidates it takes
    /// (`ranges[list][partition]`), from the histogram attempt `sources[partition]`
    /// (`<partition set>/<attempt>` under the job's histogram pass). A select task
    /// reads its own partitions' candidates there, so the cut-off file is a few numbers
    /// per partition whatever the lists hold.
    Prefixes {
        /// `ranges[list][partition]`.
        ranges: Vec<Vec<(usize, usize)>>,
        /// The histogram attempt of each partition.
        sources: Vec<String>,
    },
    /// With a per-domain cap: `lists[list][partition]`, crawldb row numbers, best
    /// first.
    Rows(select::Lists),
}

impl Default for Selection {
    fn default() -> Self {
        Selection::Rows(Vec::new())
    }
}

impl Selection {
    /// URLs per fetch list.
    pub fn urls(&self) -> Vec<u64> {
        match self {
            Selection::Prefixes { ranges, .. } => ranges
                .iter()
                .map(|l| l.iter().map(|(a, b)| b.saturating_sub(*a) as u64).sum())
                .collect(),
            Selection::Rows(lists) => lists
                .iter()
                .map(|l| l.iter().map(|p| p.len() as u64).sum())
                .collect(),
        }
    }
}

/// What a `--pass select` task wrote: URLs per fetch list of its partitions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SelectReport {
    /// The crawldb version it read the rows from.
    pub crawldb_version: String,
    /// Its partitions.
    pub partitions: Vec<usize>,
    /// URLs written per fetch list.
    pub urls: Vec<u64>,
}

/// The file of partition `i`'s pass-1 candidates in a histogram attempt.
fn ranked_file(out: &Path, i: usize) -> PathBuf {
    out.join(format!("ranked-{i:05}.bin"))
}

/// The `crawl_generate` directory of fetch list `k` in a select attempt (a dataset
/// directory of the attempt, sealed with it).
pub fn list_dir(out: &Path, k: usize) -> PathBuf {
    out.join(format!("{}.{k}", SegmentDataset::CrawlGenerate.as_str()))
}

/// A generate job's pass 1 for the partitions `parts`: ranks each (as one-process
/// generate does) and stores its candidates in `out`. Reads the crawldb without its
/// lock; the cut-off and the commit check the version.
fn histogram_task(
    ctx: &StageCtx,
    opts: &GenerateOpts,
    parts: &[usize],
    out: &Path,
) -> Result<HistogramReport> {
    let cfg = ctx.config();
    let dir = ctx.open_existing()?;
    let meta = dir.crawldb_meta()?;
    let n = meta.partitions;
    check_partitions(&dir, parts, n)?;
    let rules = rules(&dir, cfg, opts)?;
    let (pending, names) = pending_urls(&dir, &meta, parts, opts.now, cfg.generate.gen_delay)?;
    std::fs::create_dir_all(out).at(out)?;
    let by_rows = select::needs_rows(&rules);
    let ranked = parts
        .par_iter()
        .map(|&i| {
            super::interrupted("generate")?;
            let r = run_partition(&dir, i, &rules, &pending[i])?;
            if by_rows {
                let bytes = bincode::serde::encode_to_vec(&r, bincode::config::standard())
                    .map_err(|e| Error::crawl_dir(out, format!("cannot encode candidates: {e}")))?;
                parquet::write_atomic(&ranked_file(out, i), &bytes)?;
            } else {
                super::cutoff::write(out, i, &r.cands)?;
            }
            Ok((r.scanned, r.due, r.pending))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut report = HistogramReport {
        crawldb_version: super::version_id(&dir)?,
        partitions: parts.to_vec(),
        pending_segments: names,
        candidates: Some(if by_rows {
            CandidateFiles::Ranked
        } else {
            CandidateFiles::Blocks
        }),
        ..HistogramReport::default()
    };
    for (scanned, due, pending) in ranked {
        report.scanned += scanned;
        report.due += due;
        report.pending += pending;
    }
    Ok(report)
}

/// Refuses partitions the crawldb does not have.
fn check_partitions(dir: &CrawlDir, parts: &[usize], n: usize) -> Result<()> {
    match parts.iter().find(|&&i| i >= n) {
        Some(bad) => Err(Error::crawl_dir(
            dir.crawldb_current(),
            format!(
                "partition {bad} does not exist: the crawldb has {n} partitions (0-{})",
                n.saturating_sub(1)
            ),
        )),
        None => Ok(()),
    }
}

/// The cut-off of a generate job from its histogram attempts (`(attempt dir,
/// report)`, covering every partition once): the exact selection of one-process
/// generate ([`select::choose`] over the same candidates), with the segment names
/// fixed now. Refuses when the crawldb changed since the histograms were made.
fn cutoff(
    ctx: &StageCtx,
    opts: &GenerateOpts,
    attempts: &[(PathBuf, HistogramReport)],
) -> Result<(Cutoff, CutoffReport)> {
    let cfg = ctx.config();
    let dir = ctx.open_existing()?;
    let meta = dir.crawldb_meta()?;
    let n = meta.partitions;
    let version = super::version_id(&dir)?;
    let mut c = Cutoff {
        crawldb_version: version.clone(),
        partitions: n,
        generated_time: opts.now,
        ..Cutoff::default()
    };
    let rules = rules(&dir, cfg, opts)?;
    let by_rows = select::needs_rows(&rules);
    // With a per-domain cap every partition's candidates are read; without, their
    // summaries only (the candidates' blocks as the cut needs them: `cutoff`).
    let mut parts: Vec<Option<select::Ranked>> = (0..n).map(|_| None).collect();
    let mut dirs: Vec<Option<PathBuf>> = vec![None; n];
    let mut sources: Vec<String> = vec![String::new(); n];
    let mut pending: std::collections::BTreeSet<String> = Default::default();
    let wanted = if by_rows {
        CandidateFiles::Ranked
    } else {
        CandidateFiles::Blocks
    };
    for (path, r) in attempts {
        if r.crawldb_version != version {
            return Err(changed(&dir, path, &r.crawldb_version, &version));
        }
        let stored = r.candidates.unwrap_or(CandidateFiles::Ranked);
        if stored != wanted {
            return Err(Error::crawl_dir(
                path,
                format!(
                    "the histogram task stored its candidates as {stored:?}, the cut-off with these settings reads them as {wanted:?}: the job's passes ran with another generate.count_mode or max_per_host, or by another version of trawl; rerun the job from its first pass with the same settings"
                ),
            ));
        }
        pending.extend(r.pending_segments.iter().cloned());
        c.scanned += r.scanned;
        c.due += r.due;
        c.pending += r.pending;
        // `<partition set>/<attempt>`: where a select task finds the candidates.
        let name = |p: Option<&Path>| {
            p.and_then(Path::file_name)
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let source = format!("{}/{}", name(path.parent()), name(Some(path)));
        for &i in &r.partitions {
            match dirs.get_mut(i) {
                Some(slot @ None) => {
                    *slot = Some(path.clone());
                    sources[i] = source.clone();
                }
                _ => {
                    return Err(Error::Internal {
                        message: format!(
                            "generate's cut-off: partition {i} given twice or out of range by {}",
                            path.display()
                        ),
                    });
                }
            }
            if by_rows {
                parts[i] = Some(read_ranked(&ranked_file(path, i))?);
            }
        }
    }
    c.pending_segments = pending.into_iter().collect();
    let dirs = dirs
        .into_iter()
        .enumerate()
        .map(|(i, d)| {
            d.ok_or_else(|| {
                Error::crawl_dir(
                    dir.crawldb(),
                    format!("no histogram task covered partition {i}"),
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let paths: Vec<PathBuf> = (0..n).map(|i| current_part(&dir, i)).collect();
    let mut report = CutoffReport::default();
    c.selection = if by_rows {
        let ranked: Vec<select::Ranked> =
            parts.into_iter().map(Option::unwrap_or_default).collect();
        Selection::Rows(select::choose(&paths, &ranked, &rules, opts.top_n)?)
    } else {
        let mut blocks = super::cutoff::Blocks::open(&dirs)?;
        let ranges = super::cutoff::choose_prefixes(&paths, &mut blocks, rules.limit, opts.top_n)?;
        report = CutoffReport {
            blocks: blocks.reads,
            bytes: blocks.bytes,
            requests: blocks.requests,
            ..CutoffReport::default()
        };
        Selection::Prefixes { ranges, sources }
    };
    let lists = c.selection.urls().len();
    let mut t = opts.now;
    while c.names.len() < lists {
        let name = layout::new_segment_name(&dir, t);
        if !c.names.contains(&name) {
            c.names.push(name);
        }
        t += 1000;
    }
    Ok((c, report))
}

/// Reads a partition's pass-1 candidates (`ranked-NNNNN.bin` of a histogram attempt).
fn read_ranked(file: &Path) -> Result<select::Ranked> {
    let bytes = std::fs::read(file).at(file)?;
    let (ranked, _): (select::Ranked, usize) =
        bincode::serde::decode_from_slice(&bytes, bincode::config::standard())
            .map_err(|e| Error::crawl_dir(file, format!("cannot decode candidates: {e}")))?;
    Ok(ranked)
}

/// The error for a job whose tasks read crawldb version `read` when `now` is current.
fn changed(dir: &CrawlDir, attempt: &Path, read: &str, now: &str) -> Error {
    Error::crawl_dir(
        dir.crawldb_current(),
        format!(
            "the crawldb changed since the tasks of this job ran (the task in {} read version {read}, the current one is {now}): nothing was written; rerun the job from its first pass",
            attempt.display()
        ),
    )
}

/// A generate job's pass 2 for the partitions `parts`: writes their rows of every
/// fetch list of the cut-off into `out` ([`list_dir`]), as one-process generate does.
/// Lists given as ranges are read from the partitions' candidates in the job's
/// histogram attempts (`histogram`, the pass's directory).
fn select_task(
    ctx: &StageCtx,
    cut: &Cutoff,
    histogram: &Path,
    parts: &[usize],
    out: &Path,
) -> Result<SelectReport> {
    let dir = ctx.open_existing()?;
    check_partitions(&dir, parts, cut.partitions)?;
    let version = super::version_id(&dir)?;
    if version != cut.crawldb_version {
        return Err(changed(&dir, out, &cut.crawldb_version, &version));
    }
    let lists: std::borrow::Cow<'_, select::Lists> = match &cut.selection {
        Selection::Rows(lists) => std::borrow::Cow::Borrowed(lists),
        Selection::Prefixes { ranges, sources } => {
            let mut lists: select::Lists = ranges
                .iter()
                .map(|_| vec![Vec::new(); cut.partitions])
                .collect();
            for &i in parts {
                let source = sources.get(i).ok_or_else(|| {
                    Error::crawl_dir(
                        histogram,
                        format!("the cut-off names no histogram attempt of partition {i}"),
                    )
                })?;
                let attempt = histogram.join(source);
                let mut blocks =
                    super::cutoff::Blocks::open_one(&attempt, i).map_err(|e| {
                        Error::crawl_dir(
                            &attempt,
                            format!(
                                "the candidates of partition {i} cannot be read ({e}): the cut-off does not match the job's histogram attempts; rerun the job's cut-off (`generate --job ID --cutoff`), then its select tasks"
                            ),
                        )
                    })?;
                for (list, range) in lists.iter_mut().zip(ranges) {
                    let (from, to) = range.get(i).copied().unwrap_or_default();
                    list[i] = blocks.cands(0, from, to)?.iter().map(|c| c.row).collect();
                }
            }
            std::borrow::Cow::Owned(lists)
        }
    };
    let gen_dirs: Vec<PathBuf> = (0..lists.len()).map(|k| list_dir(out, k)).collect();
    for d in &gen_dirs {
        std::fs::create_dir_all(d).at(d)?;
    }
    parts
        .par_iter()
        .map(|&i| {
            super::interrupted("generate")?;
            write_partition(i, &current_part(&dir, i), &lists, &gen_dirs)
        })
        .collect::<Result<Vec<()>>>()?;
    Ok(SelectReport {
        crawldb_version: version,
        partitions: parts.to_vec(),
        urls: lists
            .iter()
            .map(|l| parts.iter().map(|&i| l[i].len() as u64).sum())
            .collect(),
    })
}

/// The commit of a generate job: under the crawldb lock, checks that the crawldb is
/// the version the job read and that no other fetch list became pending since, then
/// installs one segment per fetch list from the select attempts (`(attempt dir,
/// report)`, covering every partition once), parts linked, never rewritten.
fn commit(
    ctx: &StageCtx,
    cfg_now: Millis,
    cut: &Cutoff,
    attempts: &[(PathBuf, SelectReport)],
) -> Result<GenerateReport> {
    let cfg = ctx.config();
    // Under the crawldb lock the executor holds for a commit.
    let dir = ctx.open_existing()?;
    let version = super::version_id(&dir)?;
    for (path, r) in attempts {
        if r.crawldb_version != version {
            return Err(changed(&dir, path, &r.crawldb_version, &version));
        }
    }
    if cut.crawldb_version != version {
        return Err(changed(&dir, dir.root(), &cut.crawldb_version, &version));
    }
    let meta = dir.crawldb_meta()?;
    for (s, _) in pending_segments(&dir, &meta, cfg_now, cfg.generate.gen_delay)? {
        if !cut.pending_segments.iter().any(|p| p == s.name()) {
            return Err(Error::crawl_dir(
                s.path(),
                format!(
                    "another generate wrote the fetch list {} since this job's histogram pass, and its URLs may be in this job's lists: nothing was written; rerun the job from its first pass",
                    s.name()
                ),
            ));
        }
    }
    let mut report = GenerateReport {
        scanned: cut.scanned,
        due: cut.due,
        pending: cut.pending,
        ..GenerateReport::default()
    };
    let n = cut.partitions;
    let per_list = cut.selection.urls();
    for (k, &want) in per_list.iter().enumerate() {
        let got: u64 = attempts
            .iter()
            .map(|(_, r)| r.urls.get(k).copied().unwrap_or(0))
            .sum();
        if got != want {
            return Err(Error::crawl_dir(
                dir.root(),
                format!(
                    "the select tasks wrote {got} URLs for fetch list {k}, the cut-off chose {want}: nothing was written; rerun the job's select tasks"
                ),
            ));
        }
    }
    for (k, (&urls, name)) in per_list.iter().zip(&cut.names).enumerate() {
        let seg = StagedDataset::new(&dir.segments_dir().join(name))?;
        let gen_dir = seg.path().join(SegmentDataset::CrawlGenerate.as_str());
        std::fs::create_dir_all(&gen_dir).at(&gen_dir)?;
        for (path, r) in attempts {
            for &i in &r.partitions {
                let part = parquet::part_name(i);
                crate::store::jobs::link_part(
                    &list_dir(path, k).join(&part),
                    &gen_dir.join(&part),
                )?;
            }
        }
        parquet::write_json(
            &seg.path().join(SEGMENT_META),
            &SegmentMeta {
                name: name.clone(),
                generated_time: cut.generated_time,
                partitions: n,
                partition_key: meta.partition_key,
                urls,
                redirects_in_crawl_parse: false,
            },
        )?;
        parquet::write_atomic(
            &gen_dir.join(parquet::SUCCESS_MARKER),
            chrono::Utc::now().to_rfc3339().as_bytes(),
        )?;
        report.urls.push(urls);
        report.segments.push(seg.commit()?);
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_never_generated() {
        assert!(!status_eligible(DbStatus::DbDuplicate));
        for s in DbStatus::ALL
            .into_iter()
            .filter(|s| *s != DbStatus::DbDuplicate)
        {
            assert!(status_eligible(s), "{s}");
        }
    }
}
