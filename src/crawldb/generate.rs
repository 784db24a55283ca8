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

use crate::cli::{Exit, exit};
use crate::config::Config;
use crate::crawldb::select::{self, Rules};
use crate::crawldb::stream::read_partition;
use crate::crawldb::{current_part, lock};
use crate::datum::{CrawlDatum, DbStatus, Millis, now_millis};
use crate::error::{IoContext, Result};
use crate::stage::{Report, StageCtx};
use crate::store::disk;
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
}

impl GenerateOpts {
    /// Options from the config, for now.
    pub fn from_config(cfg: &Config) -> Self {
        GenerateOpts {
            top_n: cfg.generate.top_n,
            max_per_host: cfg.generate.max_per_host,
            segments: 1,
            now: now_millis(),
            lookahead: 0,
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
        )
    }
}

impl Report for GenerateReport {
    const STAGE: &'static str = "generate";

    /// [`exit::NOTHING_DUE`] when no segment was written.
    fn exit(&self) -> Option<Exit> {
        self.segments.is_empty().then(|| {
            Exit::new(
                exit::NOTHING_DUE,
                format!(
                    "generate: no URLs due: nothing to generate (exit code {})",
                    exit::NOTHING_DUE
                ),
            )
        })
    }
}

/// Whether a row's status may be generated (Nutch: everything but duplicates).
pub fn status_eligible(s: DbStatus) -> bool {
    !matches!(s, DbStatus::DbDuplicate)
}

/// URLs of pending fetch lists, per crawldb partition.
fn pending_urls(
    dir: &CrawlDir,
    applied: &[String],
    n: usize,
    now: Millis,
    gen_delay: i64,
) -> Result<Vec<HashSet<String>>> {
    let mut out: Vec<HashSet<String>> = (0..n).map(|_| HashSet::new()).collect();
    for s in dir.segments()? {
        if applied.iter().any(|a| a == s.name()) || !s.has(SegmentDataset::CrawlGenerate) {
            continue;
        }
        let meta = s.meta()?;
        if meta.generated_time + gen_delay * 1000 < now {
            continue;
        }
        for (i, set) in out.iter_mut().enumerate() {
            let rows: Vec<CrawlDatum> = read_partition(
                &s.dataset(SegmentDataset::CrawlGenerate),
                i,
                n,
                meta.partitions,
                |d: &CrawlDatum| &d.host,
            )?;
            set.extend(rows.into_iter().map(|d| d.url));
        }
    }
    Ok(out)
}

/// Runs generate on the crawl directory of `ctx` (which must hold a crawldb) with the
/// `[generate]` keys of its configuration. A report without segments means nothing was
/// due ([`Report::exit`] is then [`exit::NOTHING_DUE`]).
pub fn run(ctx: &StageCtx, opts: &GenerateOpts) -> Result<GenerateReport> {
    let cfg = ctx.config();
    let dir = ctx.open_existing()?;
    // Held so that two generates cannot hand out the same URLs and updatedb cannot
    // apply a segment while we read the pending lists.
    let _lock = lock(&dir, "generate")?;
    let meta = dir.crawldb_meta()?;
    let n = meta.partitions;
    let k = opts.segments.max(1);
    let rules = Rules {
        now: opts.now.saturating_add(opts.lookahead),
        min_score: cfg.generate.min_score,
        max_per_key: opts.max_per_host,
        by_domain: cfg.generate.count_mode == crate::config::CountMode::Domain,
        limit: opts.top_n.saturating_mul(k),
    };
    // A partially applied segment's fetches are merged: it holds no URLs any more.
    let fetch_applied: Vec<String> = meta
        .applied_segments
        .iter()
        .chain(&meta.partial_segments)
        .cloned()
        .collect();
    check_space(&dir, rules.limit)?;
    let pending = pending_urls(&dir, &fetch_applied, n, opts.now, cfg.generate.gen_delay)?;
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
    write_segments(&dir, opts, &paths, &lists, &mut report)?;
    tracing::debug!("generate: written {:.2}s", started.elapsed().as_secs_f64());
    Ok(report)
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
                urls,
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
