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

use crate::config::Config;
use crate::crawldb::merge::{self, Keyed, SegRow};
use crate::crawldb::spill::Sorter;
use crate::crawldb::state::{Ctx, Inlink};
use crate::crawldb::stream::{read_partition, scan_partition};
use crate::crawldb::{current_part, lock, write_version};
use crate::datum::{CrawlDatum, FetchStatus, now_millis};
use crate::error::{Error, Result};
use crate::records::{CrawlParseRecord, FetchRecord};
use crate::store::integrity::Check;
use crate::store::layout::{CrawlDir, Segment};
use crate::store::names::SegmentDataset;
use crate::store::parquet::{PartWriter, partition_for_host};
use crate::urls::{UrlPolicy, host_of};

/// Options of one updatedb run.
#[derive(Debug, Clone, Default)]
pub struct UpdateOptions {
    /// Segments (names or paths); empty = the newest fetched segment not yet applied.
    pub segments: Vec<std::path::PathBuf>,
    /// Merge only the fetch outcomes (`--no-parse`): the segments are recorded as
    /// partially applied, and a later run after `parse` merges the rest.
    pub no_parse: bool,
}

/// What one run merges of a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
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

#[derive(Debug, Default)]
struct PartStats {
    rows: u64,
    added: u64,
    fetched: u64,
    purged: u64,
}

/// Runs updatedb on `root`.
pub fn run(root: &std::path::Path, cfg: &Config, opts: &UpdateOptions) -> Result<UpdateReport> {
    run_at(root, cfg, opts, now_millis())
}

/// [`run`] as of the time `now` (ms UTC).
fn run_at(
    root: &std::path::Path,
    cfg: &Config,
    opts: &UpdateOptions,
    now: crate::datum::Millis,
) -> Result<UpdateReport> {
    let dir = CrawlDir::open_existing(root)?;
    let _lock = lock(&dir, "updatedb")?;
    let mut meta = dir.crawldb_meta()?;
    let mut report = UpdateReport::default();

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
                return Ok(report);
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
        let part = match (meta.is_partial(&name), opts.no_parse, parsed) {
            (true, true, _) => {
                tracing::warn!(
                    "segment {name}: its fetch outcomes are already applied (partially applied); run `parse {name}` if needed, then `updatedb {name}` to merge the rest: skipping it"
                );
                report.skipped.push(name);
                continue;
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
        };
        let seg_parts = s.meta()?.partitions;
        segments.push(Seg {
            seg: s,
            parts: seg_parts,
            part,
        });
    }
    if segments.is_empty() {
        return Ok(report);
    }
    // Refuse a damaged crawldb or segment before anything is written: a flipped
    // byte read here would otherwise be written into current and, next time, old.
    dir.verify_crawldb(Check::Checksums)?;
    for sg in &segments {
        sg.seg
            .verify(SegmentDataset::CrawlFetch, Check::Checksums)?;
        if sg.part != Part::FetchOnly {
            sg.seg
                .verify(SegmentDataset::CrawlParse, Check::Checksums)?;
        }
    }

    let n = meta.partitions;
    let mut ctx = Ctx::new(&cfg.updatedb, cfg.urls.max_depth, now);
    ctx.additions = cfg.updatedb.additions_allowed;
    let policy = UrlPolicy::new(&cfg.urls, &meta.seed_hosts)?;

    // Redirect targets may live in any partition: route them first (small: one per redirect).
    let mut redirects: Vec<Vec<(String, String, Inlink)>> = (0..n).map(|_| Vec::new()).collect();
    // (Their fetches are merged by then for a segment being completed.)
    for sg in segments.iter().filter(|sg| sg.part != Part::Rest) {
        for p in 0..sg.parts {
            let rows: Vec<FetchRecord> = read_partition(
                &sg.seg.dataset(SegmentDataset::CrawlFetch),
                p,
                sg.parts,
                sg.parts,
                |r: &FetchRecord| &r.host,
            )?;
            for f in rows {
                if !matches!(
                    f.status,
                    FetchStatus::FetchRedirTemp | FetchStatus::FetchRedirPerm
                ) {
                    continue;
                }
                let Some(target) = &f.redirect_target else {
                    continue;
                };
                let Ok(url) = policy.check(target) else {
                    continue;
                };
                let url = url.to_string();
                let host = host_of(&url);
                let inl = Inlink {
                    score: f.score,
                    depth: f.depth,
                    redirect: true,
                };
                redirects[partition_for_host(&host, n)].push((url, host, inl));
            }
        }
    }

    for sg in &segments {
        let name = sg.seg.name().to_string();
        match sg.part {
            Part::Whole => meta.applied_segments.push(name),
            Part::FetchOnly => meta.partial_segments.push(name),
            Part::Rest => {
                meta.partial_segments.retain(|p| *p != name);
                meta.applied_segments.push(name);
            }
        }
    }
    let stats = write_version(&dir, &mut meta, "updatedb", |i, w| {
        merge_partition(
            &dir,
            i,
            n,
            &segments,
            redirects[i].clone(),
            &ctx,
            &policy,
            w,
        )
    })?;
    for st in stats {
        report.rows += st.rows;
        report.added += st.added;
        report.fetched += st.fetched;
        report.purged += st.purged;
    }
    for sg in &segments {
        let name = sg.seg.name().to_string();
        match sg.part {
            Part::Whole => report.applied.push(name),
            Part::FetchOnly => report.partial.push(name),
            Part::Rest => {
                report.completed.push(name.clone());
                report.applied.push(name);
            }
        }
    }
    Ok(report)
}

/// A segment of this run and what is merged of it.
#[derive(Debug)]
struct Seg {
    seg: Segment,
    /// Its partition count.
    parts: usize,
    part: Part,
}

/// Merges one partition.
#[allow(clippy::too_many_arguments)]
fn merge_partition(
    dir: &CrawlDir,
    i: usize,
    n: usize,
    segments: &[Seg],
    redirects: Vec<(String, String, Inlink)>,
    ctx: &Ctx,
    policy: &UrlPolicy,
    w: &mut PartWriter<CrawlDatum>,
) -> Result<PartStats> {
    // Segment rows are sorted by an external sort bounded by `sort_buffer_rows`;
    // spilled runs live in the staged crawldb version (removed with it on a crash).
    let spill_dir = w
        .path()
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_else(|| dir.crawldb());
    let budget = ctx.cfg.sort_buffer_rows.max(1);
    let mut fetches: Sorter<FetchRecord> =
        Sorter::new(&spill_dir, &format!("updatedb-{i:05}-fetch"));
    let mut parse: Sorter<Keyed> = Sorter::new(&spill_dir, &format!("updatedb-{i:05}-parse"));
    let full = |f: &Sorter<FetchRecord>, p: &Sorter<Keyed>| f.buffered() + p.buffered() >= budget;
    for sg in segments {
        let (s, seg_parts, part) = (&sg.seg, sg.parts, sg.part);
        let name = s.name();
        scan_partition(
            &s.dataset(SegmentDataset::CrawlFetch),
            i,
            n,
            seg_parts,
            |r: &FetchRecord| &r.host,
            |rows| {
                for r in rows {
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
                        parse.push(Keyed {
                            url: r.url.clone(),
                            host: r.host.clone(),
                            row,
                        });
                    }
                    // A segment being completed had its fetches merged already.
                    if part != Part::Rest {
                        fetches.push(r);
                    }
                    if full(&fetches, &parse) {
                        fetches.spill()?;
                        parse.spill()?;
                    }
                }
                Ok(())
            },
        )?;
        if part != Part::FetchOnly && s.has(SegmentDataset::CrawlParse) {
            scan_partition(
                &s.dataset(SegmentDataset::CrawlParse),
                i,
                n,
                seg_parts,
                |r: &CrawlParseRecord| &r.host,
                |rows| {
                    for r in rows {
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
                            other => {
                                return Err(Error::crawl_dir(
                                    s.dataset(SegmentDataset::CrawlParse),
                                    format!(
                                        "unknown row kind {other:?} for {}; re-run parse on segment {}",
                                        r.url,
                                        s.name()
                                    ),
                                ));
                            }
                        };
                        parse.push(Keyed {
                            url: r.url,
                            host: r.host,
                            row,
                        });
                        if full(&fetches, &parse) {
                            fetches.spill()?;
                            parse.spill()?;
                        }
                    }
                    Ok(())
                },
            )?;
        }
    }
    for (url, host, inl) in redirects {
        parse.push(Keyed {
            url,
            host,
            row: SegRow::Link(inl),
        });
        if full(&fetches, &parse) {
            fetches.spill()?;
            parse.spill()?;
        }
    }
    let runs = fetches.runs() + parse.runs();
    if runs > 0 {
        tracing::debug!(
            "partition {i}: segment rows beyond updatedb.sort_buffer_rows = {budget}: merging {runs} sorted runs spilled to {}",
            spill_dir.display()
        );
    }

    let admit = |url: &str| policy.check(url).is_ok();
    let t = merge::merge_sorted(
        &current_part(dir, i),
        fetches.finish()?,
        parse.finish()?,
        ctx,
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::crawldb::benchgen::{self, BenchSpec};
    use crate::store::parquet;

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
        let opts = UpdateOptions::default();
        let cfg = Config::default();
        let in_memory = run_at(&a, &cfg, &opts, now).unwrap();
        let mut small = Config::default();
        // Segment rows per partition: ~1k fetches + ~5k links + signatures, so about 100
        // runs: more than spill::MAX_FAN_IN, merged in two passes.
        small.updatedb.sort_buffer_rows = 61;
        let spilled = run_at(&b, &small, &opts, now).unwrap();
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
        let two = run_at(&c, &small, &opts, now).unwrap();
        assert_eq!(in_memory, two);
        assert!(rows_a == crawldb_rows(&c), "updatedb with two runs differs");

        for root in [&a, &b, &c] {
            let mut left = Vec::new();
            files_named(root, ".spill", &mut left);
            assert!(left.is_empty(), "spill files left behind: {left:?}");
        }
    }
}
