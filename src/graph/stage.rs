//! The `pagerank` stage: builds the page graph, runs PageRank (and optionally HITS
//! and HostRank), writes `pagerank/` and copies the scores into the crawldb.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use arrow::array::AsArray;
use rayon::prelude::*;

use super::csr::Csr;
use super::hits::hits;
use super::hostrank::hostrank;
use super::ids::{PageGraph, build_graph};
use super::pagerank::{PageRankParams, PageRankResult, out_degrees, pagerank};
use super::rows::{HitsRecord, HostRankRecord, PageRankMeta};
use super::source::{EdgeSource, read_columns};
use crate::config::{GraphSource, PageRankConfig, Teleport};
use crate::datum::{CrawlDatum, now_millis};
use crate::error::{Error, Result};
use crate::records::PageRankRecord;
use crate::stage::{Report, StageCtx};
use crate::store::disk;
use crate::store::layout::CRAWLDB_META;
use crate::store::layout::CrawlDir;
use crate::store::names::VersionedDb;
use crate::store::parquet::{self, PartWriter, SUCCESS_MARKER, StagedDataset};

/// Name of `pagerank/`'s metadata file.
pub const PAGERANK_META: &str = crate::store::names::META;

/// What pagerank does: its settings are `[pagerank]` in the config (flags merged over
/// it), so there is nothing more to give.
#[derive(Debug, Clone, Default)]
pub struct PageRankOpts {}

/// What a pagerank run did.
#[derive(Debug, Clone, Default)]
pub struct PageRankReport {
    /// Pages in the graph.
    pub nodes: u64,
    /// Distinct links.
    pub edges: u64,
    /// Iterations run.
    pub iterations: usize,
    /// L1 change of the last iteration.
    pub delta: f64,
    /// Crawldb rows whose score was replaced (0 when not updated).
    pub crawldb_updated: u64,
    /// Time spent building the graph.
    pub build_time: Duration,
    /// Time spent iterating.
    pub rank_time: Duration,
}

impl fmt::Display for PageRankReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} nodes, {} edges, {} iterations, final delta {:.3e}, {} crawldb scores updated (build {:.2}s, rank {:.2}s)",
            self.nodes,
            self.edges,
            self.iterations,
            self.delta,
            self.crawldb_updated,
            self.build_time.as_secs_f64(),
            self.rank_time.as_secs_f64()
        )
    }
}

impl Report for PageRankReport {
    const STAGE: &'static str = "pagerank";
}

/// The page graph with what PageRank needs besides it.
struct Built {
    graph: PageGraph,
    /// The in-link CSR (the out-link CSR transposed).
    inl: Csr,
    /// Out-degree per page.
    outdeg: Vec<u32>,
}

/// Runs the pagerank stage on the crawl directory of `ctx` (which must have a
/// crawldb) with the settings of `[pagerank]`.
pub fn run(ctx: &StageCtx, _opts: &PageRankOpts) -> Result<PageRankReport> {
    let dir = &ctx.open_existing()?;
    let cfg = ctx.config();
    let pc = &cfg.pagerank;
    let db_meta = dir.crawldb_meta()?;
    let partitions = if db_meta.partitions > 0 {
        db_meta.partitions
    } else {
        cfg.crawl.partitions
    };
    // The crawldb feeds the seed teleport and is rewritten with the ranks: refuse
    // a damaged one before the work starts (and again under the lock).
    if pc.update_crawldb || pc.teleport == Teleport::Seeds {
        crate::crawldb::verify_for_rewrite(dir)?;
    }
    check_space(dir, pc.update_crawldb)?;
    let started = Instant::now();
    let Built { graph, inl, outdeg } = build(dir, pc, partitions)?;
    let build_time = started.elapsed();

    let params = PageRankParams {
        damping: pc.damping,
        tolerance: pc.tolerance,
        max_iterations: pc.max_iterations,
    };
    let teleport = match pc.teleport {
        Teleport::Seeds => seed_teleport(dir, &graph, &db_meta.seed_hosts)?,
        Teleport::Uniform => None,
    };
    let t = Instant::now();
    let rank = pagerank(&inl, &outdeg, teleport.as_deref(), &params);
    let rank_time = t.elapsed();
    interrupted()?;
    if rank.delta >= pc.tolerance && graph.nodes() > 0 {
        warn_not_converged(pc, &rank);
    }

    let staged = StagedDataset::new(&dir.pagerank())?;
    write_pagerank(
        &staged,
        pc,
        &graph,
        &inl,
        &rank,
        &params,
        teleport.is_some(),
    )?;
    interrupted()?;
    staged.commit_replacing()?;

    let crawldb_updated = if pc.update_crawldb && graph.nodes() > 0 {
        update_crawldb(dir, &graph, &rank.scores, crawldb_scale(graph.nodes()))?
    } else {
        0
    };
    Ok(PageRankReport {
        nodes: graph.nodes() as u64,
        edges: graph.out.edges() as u64,
        iterations: rank.iterations,
        delta: rank.delta,
        crawldb_updated,
        build_time,
        rank_time,
    })
}

/// Refuses to start when the disk cannot hold the new `pagerank/` (as large as the
/// current one, or at most the crawldb's size: a row per page) and, with
/// `update_crawldb`, the new crawldb version (docs/crawldb.md, Disk).
fn check_space(dir: &CrawlDir, update_crawldb: bool) -> Result<()> {
    let crawldb = disk::dataset_bytes(&dir.crawldb_current())?;
    let pagerank = match disk::tree_bytes(&dir.pagerank()) {
        0 => crawldb,
        b => b,
    };
    let need = pagerank + if update_crawldb { crawldb } else { 0 };
    disk::ensure_space(
        dir.root(),
        disk::with_headroom(need),
        "pagerank",
        &format!(
            "the new pagerank/ (about {}){}",
            disk::human(pagerank),
            if update_crawldb {
                format!(" and crawldb version (about {})", disk::human(crawldb))
            } else {
                String::new()
            }
        ),
    )
}

/// Builds the page graph from the configured edge source (with every crawldb URL as a
/// node), its in-link CSR and the out-degrees.
fn build(dir: &CrawlDir, pc: &PageRankConfig, partitions: usize) -> Result<Built> {
    let started = Instant::now();
    let source = match pc.source {
        GraphSource::Linkdb => EdgeSource::linkdb(dir)?,
        GraphSource::Crawl => EdgeSource::crawl(dir)?,
    }
    .ignore_internal(pc.ignore_internal)
    .with_crawldb_nodes(dir)?;
    let graph = build_graph(&source, partitions)?;
    interrupted()?;
    let inl = graph.out.transpose();
    let outdeg = out_degrees(&graph.out);
    tracing::info!(
        "graph: {} pages, {} links from {} files in {:.2}s",
        graph.nodes(),
        graph.out.edges(),
        source.files().len(),
        started.elapsed().as_secs_f64()
    );
    Ok(Built { graph, inl, outdeg })
}

/// Warns that PageRank stopped at `max_iterations` above the tolerance, with the
/// iteration count that would have been enough.
fn warn_not_converged(pc: &PageRankConfig, rank: &PageRankResult) {
    let hint = match iterations_bound(pc.damping, pc.tolerance) {
        Some(k) => format!(
            "raise --max-iterations to {k} (enough for tolerance {:e} at damping {} on any graph) or --tolerance",
            pc.tolerance, pc.damping
        ),
        None => "raise --tolerance above 0".to_string(),
    };
    tracing::warn!(
        "PageRank did not converge: L1 change {:.3e} after {} iterations (tolerance {:e}); {hint}",
        rank.delta,
        rank.iterations,
        pc.tolerance
    );
}

/// Writes the new `pagerank/` into `staged`: the scores, with `hits/` and `hosts/`
/// inside when configured (computed here), and the metadata. It is then replaced as
/// one.
fn write_pagerank(
    staged: &StagedDataset,
    pc: &PageRankConfig,
    graph: &PageGraph,
    inl: &Csr,
    rank: &PageRankResult,
    params: &PageRankParams,
    seed_teleport: bool,
) -> Result<()> {
    write_scores(staged.path(), graph, inl, rank)?;
    if pc.hits {
        let h = hits(&graph.out, inl, pc.tolerance, pc.max_iterations);
        tracing::info!("HITS: {} iterations, delta {:.3e}", h.iterations, h.delta);
        let sub = staged.path().join(crate::store::names::PAGERANK_HITS);
        std::fs::create_dir_all(&sub).map_err(|e| Error::io(&sub, e))?;
        write_parts(&sub, graph.partitions(), |p| {
            graph
                .partition(p)
                .map(|v| HitsRecord {
                    url: graph.url(v).to_string(),
                    hub: h.hub[v],
                    authority: h.authority[v],
                })
                .collect()
        })?;
    }
    if pc.hostrank {
        let hr = hostrank(graph, params);
        tracing::info!(
            "HostRank: {} hosts, {} host links, {} iterations",
            hr.hosts.len(),
            hr.out.edges(),
            hr.rank.iterations
        );
        let sub = staged.path().join("hosts");
        std::fs::create_dir_all(&sub).map_err(|e| Error::io(&sub, e))?;
        write_parts(&sub, graph.partitions(), |p| {
            hr.partition(p)
                .map(|h| HostRankRecord {
                    host: hr.hosts[h].clone(),
                    score: hr.rank.scores[h],
                    in_degree: hr.in_degree[h] as i64,
                    out_degree: hr.out.degree(h) as i64,
                })
                .collect()
        })?;
    }
    let meta = PageRankMeta {
        source: pc.source.to_string(),
        damping: pc.damping,
        teleport: if seed_teleport {
            Teleport::Seeds.to_string()
        } else {
            Teleport::Uniform.to_string()
        },
        nodes: graph.nodes() as u64,
        edges: graph.out.edges() as u64,
        iterations: rank.iterations,
        delta: rank.delta,
        partitions: graph.partitions(),
        hits: pc.hits,
        hostrank: pc.hostrank,
        ignore_internal: pc.ignore_internal,
        crawldb_scale: crawldb_scale(graph.nodes()),
        written_time: now_millis(),
    };
    parquet::write_json(&staged.path().join(PAGERANK_META), &meta)
}

/// Stops pagerank at a SIGINT/SIGTERM ([`crate::signal`]) between its phases:
/// nothing installed. (A signal during the crawldb update, after `pagerank/` was
/// replaced, leaves the crawldb's scores as they were: rerun pagerank.)
fn interrupted() -> Result<()> {
    crate::signal::check(
        "pagerank stopped before installing anything: pagerank/ and the crawldb are unchanged; rerun pagerank",
    )
}

/// Writes `pagerank/` part files (one per host partition, sorted by URL).
fn write_scores(dir: &Path, graph: &PageGraph, inl: &Csr, rank: &PageRankResult) -> Result<()> {
    write_parts(dir, graph.partitions(), |p| {
        graph
            .partition(p)
            .map(|v| PageRankRecord {
                url: graph.url(v).to_string(),
                score: rank.scores[v],
                in_degree: inl.degree(v) as i64,
                out_degree: graph.out.degree(v) as i64,
            })
            .collect()
    })
}

/// Writes `parts` part files into `dir` in parallel, rows from `rows(p)`, and the
/// `_SUCCESS` marker.
fn write_parts<R: parquet::Record>(
    dir: &Path,
    parts: usize,
    rows: impl Fn(usize) -> Vec<R> + Sync,
) -> Result<()> {
    (0..parts).into_par_iter().try_for_each(|p| {
        let mut w = PartWriter::<R>::create(&dir.join(parquet::part_name(p)))?;
        for r in rows(p) {
            w.push(r)?;
        }
        w.finish().map(|_| ())
    })?;
    parquet::write_atomic(&dir.join(SUCCESS_MARKER), b"")
}

/// The teleport vector over seeds: the crawldb's depth-0 URLs and the seed hosts'
/// home pages (`http(s)://host/`) that are nodes of the graph, uniformly. `None`
/// (uniform teleport, with a warning) when none of them is in the graph.
fn seed_teleport(
    dir: &CrawlDir,
    graph: &PageGraph,
    seed_hosts: &[String],
) -> Result<Option<Vec<f64>>> {
    let mut seeds: BTreeSet<usize> = BTreeSet::new();
    for h in seed_hosts {
        for scheme in ["http", "https"] {
            if let Some(id) = graph.id_of(&format!("{scheme}://{h}/")) {
                seeds.insert(id);
            }
        }
    }
    for part in parquet::part_files(&dir.crawldb_current())? {
        for batch in read_columns(&part, &["url", "depth"])? {
            let batch = batch?;
            let bad = || Error::crawl_dir(&part, "not a crawldb part (unexpected column types)");
            let url = batch.column(0).as_string_opt::<i32>().ok_or_else(bad)?;
            let depth = batch
                .column(1)
                .as_primitive_opt::<arrow::datatypes::Int32Type>()
                .ok_or_else(bad)?;
            for i in 0..batch.num_rows() {
                if depth.value(i) == 0
                    && let Some(id) = graph.id_of(url.value(i))
                {
                    seeds.insert(id);
                }
            }
        }
    }
    if seeds.is_empty() {
        tracing::warn!("teleport=seeds: no seed page is in the link graph; using uniform teleport");
        return Ok(None);
    }
    let mut t = vec![0.0; graph.nodes()];
    let w = 1.0 / seeds.len() as f64;
    for s in seeds {
        t[s] = w;
    }
    Ok(Some(t))
}

/// Iterations after which the L1 change is below `tolerance` on any graph: the
/// change of iteration `k` is at most `2 d^k` (the iteration contracts zero-sum
/// vectors by the damping factor `d` in L1). `None` when no count suffices
/// (tolerance 0).
pub fn iterations_bound(damping: f64, tolerance: f64) -> Option<usize> {
    if tolerance <= 0.0 {
        return None;
    }
    if damping <= 0.0 || tolerance >= 2.0 {
        return Some(1);
    }
    // The first k with 2 d^k < tolerance.
    let k = ((tolerance / 2.0).ln() / damping.ln()).floor() + 1.0;
    Some(if k.is_finite() && k > 1.0 {
        k as usize
    } else {
        1
    })
}

/// The factor from PageRank (scores summing to 1 over the `nodes` pages of the
/// graph) to the crawldb's score scale: `N`, so that crawldb scores average 1.0 over
/// the graph, the scale of injected scores (`inject.score` = 1.0, an average page)
/// and of OPIC's shares. The order by score stays the order by PageRank.
pub fn crawldb_scale(nodes: usize) -> f64 {
    nodes as f64
}

/// Rewrites the crawldb with each page's PageRank times `scale` in `score` (see
/// [`crawldb_scale`]; a URL missing from the graph, e.g. added by another stage
/// while the graph was built, keeps its score), under the crawldb lock, installed
/// as a new version. Returns the number of rows whose score was replaced.
pub fn update_crawldb(
    dir: &CrawlDir,
    graph: &PageGraph,
    scores: &[f64],
    scale: f64,
) -> Result<u64> {
    let db = dir.versioned(VersionedDb::CrawlDb);
    let _lock = db.lock("pagerank")?;
    crate::crawldb::verify_for_rewrite(dir)?;
    let current = dir.crawldb_current();
    let mut meta = dir.crawldb_meta()?;
    let staged = db.stage()?;
    let parts = parquet::part_files(&current)?;
    let pb = crate::cli::progress_bar(parts.len() as u64, "pagerank: crawldb");
    let updated: Vec<Result<u64>> = (0..parts.len())
        .into_par_iter()
        .map(|i| {
            let n = run_partition(&staged, &parts, i, graph, scores, scale)?;
            pb.inc(1);
            Ok(n)
        })
        .collect();
    pb.finish_and_clear();
    let mut total = 0;
    for u in updated {
        total += u?;
    }
    meta.written_by = "pagerank".into();
    meta.written_time = now_millis();
    parquet::write_json(&staged.path().join(CRAWLDB_META), &meta)?;
    db.install(staged, "pagerank")?;
    Ok(total)
}

/// Crawldb part `i` of `parts` rewritten into `staged` with each page's score from
/// `scores` times `scale`. Returns the number of rows whose score was replaced.
fn run_partition(
    staged: &StagedDataset,
    parts: &[PathBuf],
    i: usize,
    graph: &PageGraph,
    scores: &[f64],
    scale: f64,
) -> Result<u64> {
    crate::signal::check(
        "pagerank stopped while updating the crawldb: pagerank/ is new, the crawldb keeps its old scores; rerun pagerank",
    )?;
    let src = &parts[i];
    let name = src.file_name().map(|n| n.to_owned()).unwrap_or_default();
    let mut w = PartWriter::<CrawlDatum>::create(&staged.path().join(name))?;
    let mut n = 0;
    for rows in parquet::read_part::<CrawlDatum>(src)? {
        for mut row in rows? {
            if let Some(id) = graph.id_of(&row.url) {
                row.score = scores[id] * scale;
                n += 1;
            }
            w.push(row)?;
        }
    }
    w.finish()?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_tolerance_is_reached_within_the_default_iterations() {
        let pc = crate::Config::default().pagerank;
        let k = iterations_bound(pc.damping, pc.tolerance).unwrap();
        assert_eq!(k, 90);
        assert!(k <= pc.max_iterations);
        assert_eq!(iterations_bound(0.85, 0.0), None);
        assert_eq!(iterations_bound(0.0, 1e-6), Some(1));
    }
}
