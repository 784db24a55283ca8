//! `updatedb`: merges the fetch and parse results of segments into the crawldb.
//!
//! Per crawldb partition, in parallel: the segment rows of that partition
//! (`crawl_fetch`, `crawl_parse`, plus redirect targets routed to their host's
//! partition) are read batch by batch and sorted by URL (an external sort bounded
//! by `updatedb.sort_buffer_rows`, see [`crate::crawldb::spill`]), then merged with the streamed crawldb
//! part; each URL goes through [`state::reduce`]. Segments already listed in
//! `applied_segments` are skipped, so applying a segment twice changes nothing.

use std::collections::HashSet;

use crate::config::Config;
use crate::crawldb::merge::{self, Keyed, SegRow};
use crate::crawldb::spill::Sorter;
use crate::crawldb::state::{Ctx, Inlink};
use crate::crawldb::stream::{read_partition, scan_partition};
use crate::crawldb::{current_part, lock, write_version};
use crate::datum::{CrawlDatum, FetchStatus, now_millis};
use crate::error::{Error, Result};
use crate::integrity::Check;
use crate::layout::{CrawlDir, Segment};
use crate::records::{CrawlParseRecord, FetchRecord};
use crate::storage::{PartWriter, partition_for_host};
use crate::urls::{UrlPolicy, host_of};

/// Options of one updatedb run.
#[derive(Debug, Clone, Default)]
pub struct UpdateOptions {
    /// Segments (names or paths); empty = the newest fetched segment not yet applied.
    pub segments: Vec<std::path::PathBuf>,
}

/// What updatedb did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpdateReport {
    /// Segments merged.
    pub applied: Vec<String>,
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

    let candidates: Vec<Segment> = if opts.segments.is_empty() {
        let newest =
            dir.segments()?.into_iter().rev().find(|s| {
                s.has("crawl_fetch") && !meta.applied_segments.iter().any(|a| a == s.name())
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
        if meta.applied_segments.iter().any(|a| a == s.name()) || !seen.insert(s.name().to_string())
        {
            tracing::warn!(
                "segment {} is already applied to the crawldb: skipping it",
                s.name()
            );
            report.skipped.push(s.name().to_string());
            continue;
        }
        // A segment a stage is writing (fetch, parse) must not be applied half done.
        s.check_unlocked("updatedb")?;
        if !s.has("crawl_fetch") {
            return Err(Error::crawl_dir(
                s.path(),
                format!(
                    "segment {} was never fetched (no complete crawl_fetch/): run fetch on it first",
                    s.name()
                ),
            ));
        }
        if !s.has("crawl_parse") {
            tracing::warn!(
                "segment {} has no crawl_parse/: updating statuses only (no signatures, no new links); run parse first to get them",
                s.name()
            );
        }
        let seg_parts = s.meta()?.partitions;
        segments.push((s, seg_parts));
    }
    if segments.is_empty() {
        return Ok(report);
    }
    // Refuse a damaged crawldb or segment before anything is written: a flipped
    // byte read here would otherwise be written into current and, next time, old.
    dir.verify_crawldb(Check::Checksums)?;
    for (s, _) in &segments {
        for ds in ["crawl_fetch", "crawl_parse"] {
            s.verify(ds, Check::Checksums)?;
        }
    }

    let n = meta.partitions;
    let mut ctx = Ctx::new(&cfg.updatedb, cfg.urls.max_depth, now);
    ctx.additions = cfg.updatedb.additions_allowed;
    let policy = UrlPolicy::new(&cfg.urls, &meta.seed_hosts)?;

    // Redirect targets may live in any partition: route them first (small: one per redirect).
    let mut redirects: Vec<Vec<(String, String, Inlink)>> = (0..n).map(|_| Vec::new()).collect();
    for (s, seg_parts) in &segments {
        for p in 0..*seg_parts {
            let rows: Vec<FetchRecord> = read_partition(
                &s.dataset("crawl_fetch"),
                p,
                *seg_parts,
                *seg_parts,
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

    for (s, _) in &segments {
        meta.applied_segments.push(s.name().to_string());
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
    report.applied = segments.iter().map(|(s, _)| s.name().to_string()).collect();
    Ok(report)
}

/// Merges one partition.
#[allow(clippy::too_many_arguments)]
fn merge_partition(
    dir: &CrawlDir,
    i: usize,
    n: usize,
    segments: &[(Segment, usize)],
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
    for (s, seg_parts) in segments {
        scan_partition(
            &s.dataset("crawl_fetch"),
            i,
            n,
            *seg_parts,
            |r: &FetchRecord| &r.host,
            |rows| {
                for r in rows {
                    fetches.push(r);
                    if full(&fetches, &parse) {
                        fetches.spill()?;
                        parse.spill()?;
                    }
                }
                Ok(())
            },
        )?;
        if s.has("crawl_parse") {
            scan_partition(
                &s.dataset("crawl_parse"),
                i,
                n,
                *seg_parts,
                |r: &CrawlParseRecord| &r.host,
                |rows| {
                    for r in rows {
                        let row = match r.kind.as_str() {
                            "signature" => match r.signature {
                                Some(sig) => SegRow::Sig(sig),
                                None => continue,
                            },
                            "link" => SegRow::Link(Inlink {
                                score: r.score,
                                depth: r.depth,
                                redirect: false,
                            }),
                            other => {
                                return Err(Error::crawl_dir(
                                    s.dataset("crawl_parse"),
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
    use crate::storage;

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
        storage::part_files(&dir.crawldb_current())
            .unwrap()
            .iter()
            .map(|p| storage::read_part_all::<CrawlDatum>(p).unwrap())
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
