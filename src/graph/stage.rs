//! The `pagerank` stage: builds the page graph, runs PageRank (and optionally HITS
//! and HostRank), writes `pagerank/` and copies the scores into the crawldb.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::csr::Csr;
use super::hits::hits;
use super::hostrank::hostrank;
use super::ids::{PageGraph, build_graph};
use super::pagerank::{PageRankParams, PageRankResult, out_degrees, pagerank};
use super::rows::{HitsRecord, HostRankRecord, PageRankMeta};
use super::source::{EdgeSource, scan_url_depth};
use super::tasks;
use crate::config::{GraphSource, PageRankConfig, Teleport};
use crate::datum::{CrawlDatum, now_millis};
use crate::error::{Error, Result};
use crate::records::PageRankRecord;
use crate::stage::{Guard, Partitioned, Report, StageCtx, Verify};
use crate::store::disk;
use crate::store::jobs::{Job, PartitionSet};
use crate::store::layout::CRAWLDB_META;
use crate::store::layout::CrawlDir;
use crate::store::names::VersionedDb;
use crate::store::parquet::{self, PartWriter, SUCCESS_MARKER, StagedDataset};
use crate::store::partition::Partitioner;

/// Name of `pagerank/`'s metadata file.
pub const PAGERANK_META: &str = crate::store::names::META;

/// What pagerank does: its settings are `[pagerank]` in the config (flags merged over
/// it); a task of a job also names its pass.
#[derive(Debug, Clone, Default)]
pub struct PageRankOpts {
    /// The pass a task of a job runs (`--pass`); `None` in a one-process run and a
    /// commit.
    pub pass: Option<PageRankPass>,
    /// The iteration of an `iterate` task, or the last one for a `rewrite` task after
    /// the iteration (`--iteration`).
    pub iteration: Option<usize>,
}

/// The passes of a pagerank job's tasks: `links`, `graph`, `iterate` (once per
/// iteration), `rewrite` ([`super::tasks`]); or `scores` (one task over the whole
/// graph, which also computes HITS and HostRank), then `rewrite`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageRankPass {
    /// Per partition set: its links routed to their sources' partitions.
    Links,
    /// Per partition set: its partitions' nodes and edges.
    Graph,
    /// Per partition set: one iteration (`--iteration K`).
    Iterate,
    /// One task over every partition: the graph and the iteration, `pagerank/`.
    Scores,
    /// Per partition set: crawldb parts rewritten with the scores (with
    /// `--iteration K`, the last iteration's, and `pagerank/`'s parts).
    Rewrite,
}

impl PageRankPass {
    /// The pass as `--pass` names it.
    pub fn name(self) -> &'static str {
        match self {
            PageRankPass::Links => "links",
            PageRankPass::Graph => "graph",
            PageRankPass::Iterate => "iterate",
            PageRankPass::Scores => "scores",
            PageRankPass::Rewrite => "rewrite",
        }
    }

    /// The name an object store's mirror is told (`iterate@3`: the iteration's
    /// shuffles, [`crate::store::object::MirrorNeeds::shuffles`]).
    pub fn scope_name(self, iteration: Option<usize>) -> String {
        match iteration {
            Some(k) => format!("{}@{k}", self.name()),
            None => self.name().to_string(),
        }
    }
}

/// The sub-job (directory) of each pass inside a pagerank job.
const SCORES: &str = "scores";
const REWRITE: &str = "rewrite";

/// Runs a pagerank task of a job (`opts.pass`) or a job's commit, as
/// [`crate::stage::execute`] splits the run; a one-process run is [`run`].
pub fn run_job(ctx: &StageCtx, opts: &PageRankOpts) -> Result<PageRankReport> {
    let dir = ctx.open_existing()?;
    let n = dir.crawldb_meta()?.partitions;
    let pass = ctx.pass(
        "pagerank",
        opts.pass,
        "--pass links, graph, iterate --iteration K (K = 0, 1, ... until `--check` stops it), then rewrite --iteration K; or --pass scores (one task, --partitions all), then rewrite",
    )?;
    let needs = matches!(pass, Some(PageRankPass::Iterate));
    match (opts.iteration, pass) {
        (None, _) if needs => {
            return Err(Error::input(
                "--pass iterate",
                "needs --iteration K (0 for the first)",
            ));
        }
        (Some(_), Some(PageRankPass::Iterate | PageRankPass::Rewrite)) => {}
        (Some(_), _) => {
            return Err(Error::input(
                "--iteration",
                "is for the iterate and rewrite tasks of a job (and its --check)",
            ));
        }
        _ => {}
    }
    // A commit holds the crawldb lock (it rewrites the crawldb's scores, unless
    // pagerank.update_crawldb is off, and reads its version either way).
    crate::stage::execute(ctx, Guard::CrawlDb(Verify::Never), || {
        Ok(PageRankJob {
            ctx,
            n,
            pass,
            iteration: opts.iteration,
        })
    })
}

/// The check after iteration `k` of `job` (a driver-side step, `--check`): whether
/// to run another ([`tasks::check`]).
pub fn run_check(ctx: &StageCtx, job: &str, k: usize) -> Result<tasks::CheckOutcome> {
    let dir = ctx.open_existing()?;
    let n = dir.crawldb_meta()?.partitions;
    let job = Job::open(dir.root(), job)?;
    tasks::check(&job, &ctx.config().pagerank, n, k)
}

/// A pagerank job's tasks and commit as the executor runs them
/// ([`crate::stage::execute`]).
struct PageRankJob<'a> {
    ctx: &'a StageCtx,
    n: usize,
    pass: Option<PageRankPass>,
    iteration: Option<usize>,
}

impl Partitioned for PageRankJob<'_> {
    type Out = PageRankReport;
    const NAME: &'static str = "pagerank";

    fn partitions(&self) -> usize {
        self.n
    }

    fn task(
        &mut self,
        job: &Job,
        partitions: &PartitionSet,
        attempt: &str,
    ) -> Result<PageRankReport> {
        let (ctx, n) = (self.ctx, self.n);
        let pc = &ctx.config().pagerank;
        let parts: Vec<usize> = partitions.iter().collect();
        match (self.pass, self.iteration) {
            (Some(PageRankPass::Links), _) => {
                if pc.hits || pc.hostrank {
                    return Err(Error::input(
                        "--pass links",
                        "HITS and HostRank need the whole graph in one task: with pagerank.hits or pagerank.hostrank run --pass scores --partitions all, then --pass rewrite (trawl plan round does)",
                    ));
                }
                let dir = ctx.open_existing()?;
                let w = job
                    .shuffle(tasks::LINKS)
                    .attempt_writer(partitions, attempt)?;
                let out = w.dataset(tasks::LINKS)?;
                let r = tasks::links(&dir, pc, n, &parts, &out)?;
                crate::crawldb::finish_attempt(w, &r)?;
                Ok(PageRankReport::pass(format!(
                    "links: {} links of {} files routed to their pages' partitions",
                    r.links, r.files
                )))
            }
            (Some(PageRankPass::Graph), _) => {
                let dir = ctx.open_existing()?;
                let w = job
                    .shuffle(tasks::GRAPH)
                    .attempt_writer(partitions, attempt)?;
                let r = tasks::graph(&dir, job, pc, n, &parts, w.path())?;
                crate::crawldb::finish_attempt(w, &r)?;
                Ok(PageRankReport::pass(format!(
                    "graph: {} nodes, {} edges, {} seed pages in partitions {partitions}",
                    r.nodes, r.edges, r.seeds
                )))
            }
            (Some(PageRankPass::Iterate), Some(k)) => {
                let w = job
                    .shuffle(&tasks::rank_shuffle(k))
                    .attempt_writer(partitions, attempt)?;
                let r = tasks::iterate(job, pc, n, k, &parts, w.path())?;
                crate::crawldb::finish_attempt(w, &r)?;
                Ok(PageRankReport::pass(format!(
                    "iteration {k}: {} nodes, L1 change {:.3e} in partitions {partitions}, {} contributions sent",
                    r.nodes, r.delta, r.messages
                )))
            }
            (Some(PageRankPass::Rewrite), Some(k)) => {
                let dir = ctx.open_existing()?;
                let f = tasks::final_of(job, pc, n, Some(k))?;
                let w = job.pass(REWRITE).attempt_writer(partitions, attempt)?;
                let scores = w.dataset(crate::store::names::PAGERANK)?;
                let update = pc.update_crawldb && f.nodes > 0;
                let crawldb = w.path().join(crate::crawldb::TASK_DATASET);
                let updated = tasks::rewrite(&dir, &f, update, &parts, &scores, &crawldb)?;
                let r = ScoreRewriteReport {
                    crawldb_version: f.crawldb_version.clone(),
                    partitions: parts,
                    updated,
                    iteration: Some(k),
                    update_crawldb: Some(update),
                };
                crate::crawldb::finish_attempt(w, &r)?;
                Ok(f.summary(updated))
            }
            (Some(PageRankPass::Scores), _) => {
                if !partitions.is_all(n) {
                    return Err(Error::input(
                        format!("--partitions {partitions}"),
                        "the scores pass iterates over the whole graph: run it as one task with --partitions all",
                    ));
                }
                let w = job.pass(SCORES).attempt_writer(partitions, attempt)?;
                let sr = scores_task(ctx, w.path())?;
                crate::crawldb::finish_attempt(w, &sr)?;
                Ok(sr.summary(0))
            }
            (Some(PageRankPass::Iterate), None) => Err(Error::input(
                "--pass iterate",
                "needs --iteration K (0 for the first)",
            )),
            (Some(PageRankPass::Rewrite) | None, _) => {
                let (scores, sr) = scores_of(job, n)?;
                let w = job.pass(REWRITE).attempt_writer(partitions, attempt)?;
                let out = w.dataset(crate::crawldb::TASK_DATASET)?;
                let parts: Vec<usize> = partitions.iter().collect();
                let r = rewrite_task(ctx, &scores, &sr, &parts, &out)?;
                crate::crawldb::finish_attempt(w, &r)?;
                Ok(sr.summary(r.updated))
            }
        }
    }

    fn commit(&mut self, job: &Job) -> Result<PageRankReport> {
        if tasks::has_stopped(job) {
            return commit_iterated(self.ctx, job, self.n);
        }
        let (scores, sr) = scores_of(job, self.n)?;
        let rewrites = if sr.update_crawldb {
            crate::crawldb::chosen_parts(&job.pass(REWRITE), self.n)?
        } else {
            Vec::new()
        };
        commit(self.ctx, &scores, &sr, &rewrites)
    }
}

/// The finished scores attempt of `job` (covering every partition of `n`).
fn scores_of(job: &Job, n: usize) -> Result<(PathBuf, ScoresReport)> {
    let chosen = job.pass(SCORES).choose(n)?;
    let a = chosen.first().ok_or_else(|| {
        Error::crawl_dir(
            job.dir(),
            "no finished scores attempt and no stopped iteration: run --pass scores first, or the iteration's passes and its --check",
        )
    })?;
    Ok((a.path().to_path_buf(), a.report()?))
}

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
    /// A task of a pass that computes no scores says what it did instead.
    pub pass: Option<String>,
}

impl PageRankReport {
    /// The report of a task of a pass that computes no scores.
    fn pass(line: String) -> Self {
        PageRankReport {
            pass: Some(line),
            ..PageRankReport::default()
        }
    }
}

impl fmt::Display for PageRankReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(line) = &self.pass {
            return f.write_str(line);
        }
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
/// crawldb) with the settings of `[pagerank]`: in one process (the graph, the
/// iteration and the crawldb update in memory), or as a task or commit of a job
/// ([`run_job`]).
pub fn run(ctx: &StageCtx, opts: &PageRankOpts) -> Result<PageRankReport> {
    if !ctx.is_whole() || opts.pass.is_some() {
        return run_job(ctx, opts);
    }
    let dir = &ctx.open_existing()?;
    let pc = &ctx.config().pagerank;
    // When the scores go into the crawldb (or the seeds of its meta steer the
    // teleport), its lock is held for the whole run, as a job's commit holds it: the
    // crawldb the graph is built from is the one rewritten (rank_graph verifies it
    // under the lock). Otherwise the crawldb is only read, and other stages may
    // change it meanwhile (a URL added since keeps its score).
    let _held = if pc.update_crawldb || pc.teleport == Teleport::Seeds {
        Some(ctx.hold("pagerank", &[Guard::CrawlDb(Verify::Never)])?)
    } else {
        None
    };
    let Ranked {
        built: Built { graph, inl, .. },
        rank,
        params,
        teleport,
        build_time,
        rank_time,
    } = rank_graph(ctx, dir)?;

    let staged = StagedDataset::new(&dir.pagerank())?;
    write_pagerank(staged.path(), pc, &graph, &inl, &rank, &params, teleport)?;
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
        pass: None,
    })
}

/// The graph ranked: what one-process pagerank and the scores pass of a job share.
struct Ranked {
    built: Built,
    rank: PageRankResult,
    params: PageRankParams,
    /// Whether the teleport was the seeds'.
    teleport: bool,
    build_time: Duration,
    rank_time: Duration,
}

/// Checks the crawldb and the disk, builds the graph (every crawldb URL a node) and
/// runs PageRank with the settings of `[pagerank]`.
fn rank_graph(ctx: &StageCtx, dir: &CrawlDir) -> Result<Ranked> {
    let cfg = ctx.config();
    let pc = &cfg.pagerank;
    let db_meta = dir.crawldb_meta()?;
    let partitions = if db_meta.partitions > 0 {
        db_meta.partitioner()
    } else {
        Partitioner::new(cfg.crawl.partitions, cfg.crawl.partition_key)
    };
    // The crawldb feeds the seed teleport and is rewritten with the ranks: refuse
    // a damaged one before the work starts.
    if pc.update_crawldb || pc.teleport == Teleport::Seeds {
        crate::crawldb::verify_for_rewrite(dir)?;
    }
    check_space(dir, pc.update_crawldb)?;
    let started = Instant::now();
    let built = build(dir, pc, partitions)?;
    let build_time = started.elapsed();
    let params = PageRankParams {
        damping: pc.damping,
        tolerance: pc.tolerance,
        max_iterations: pc.max_iterations,
    };
    let teleport = match pc.teleport {
        Teleport::Seeds => seed_teleport(dir, &built.graph, &db_meta.seed_hosts)?,
        Teleport::Uniform => None,
    };
    let t = Instant::now();
    let rank = pagerank(&built.inl, &built.outdeg, teleport.as_deref(), &params);
    let rank_time = t.elapsed();
    interrupted()?;
    if rank.delta >= pc.tolerance && built.graph.nodes() > 0 {
        warn_not_converged(pc, &rank);
    }
    Ok(Ranked {
        built,
        rank,
        params,
        teleport: teleport.is_some(),
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
fn build(dir: &CrawlDir, pc: &PageRankConfig, partitions: Partitioner) -> Result<Built> {
    let started = Instant::now();
    let source = match pc.source {
        GraphSource::Linkdb => EdgeSource::linkdb(dir)?,
        GraphSource::Crawl => EdgeSource::crawl(dir)?,
    }
    .ignore_internal(pc.ignore_internal)
    .ignore_template(pc.ignore_template)
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
    out: &Path,
    pc: &PageRankConfig,
    graph: &PageGraph,
    inl: &Csr,
    rank: &PageRankResult,
    params: &PageRankParams,
    seed_teleport: bool,
) -> Result<()> {
    write_scores(out, graph, inl, rank)?;
    if pc.hits {
        let h = hits(&graph.out, inl, pc.tolerance, pc.max_iterations);
        tracing::info!("HITS: {} iterations, delta {:.3e}", h.iterations, h.delta);
        let sub = out.join(crate::store::names::PAGERANK_HITS);
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
        let sub = out.join(crate::store::names::PAGERANK_HOSTS);
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
        partition_key: graph.partitioner().key(),
        hits: pc.hits,
        hostrank: pc.hostrank,
        ignore_internal: pc.ignore_internal,
        ignore_template: pc.ignore_template,
        crawldb_scale: crawldb_scale(graph.nodes()),
        written_time: now_millis(),
    };
    parquet::write_json(&out.join(PAGERANK_META), &meta)
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
        scan_url_depth(&part, &mut |url, depth| {
            if depth == 0
                && let Some(id) = graph.id_of(url)
            {
                seeds.insert(id);
            }
        })?;
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
/// [`crawldb_scale`]; a URL missing from the graph keeps its score), installed as a
/// new version, under the crawldb lock the caller holds for its whole run (it
/// verified the crawldb under it). Returns the number of rows whose score was
/// replaced.
pub fn update_crawldb(
    dir: &CrawlDir,
    graph: &PageGraph,
    scores: &[f64],
    scale: f64,
) -> Result<u64> {
    let db = dir.versioned(VersionedDb::CrawlDb);
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

/// What the `--pass scores` task of a pagerank job computed (the iteration over
/// the whole graph). Its attempt holds the new `pagerank/` (written as one-process
/// pagerank writes it), whose part `i` gives the rewrite tasks partition `i`'s
/// scores.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScoresReport {
    /// Pages in the graph.
    pub nodes: u64,
    /// Distinct links.
    pub edges: u64,
    /// Iterations run.
    pub iterations: usize,
    /// L1 change of the last iteration.
    pub delta: f64,
    /// Graph build time (ms).
    pub build_ms: u64,
    /// Iteration time (ms).
    pub rank_ms: u64,
    /// Whether the crawldb's scores are to be replaced (`pagerank.update_crawldb`
    /// and a graph that is not empty).
    pub update_crawldb: bool,
    /// The factor from PageRank to crawldb scores ([`crawldb_scale`]).
    pub scale: f64,
    /// The crawldb's partition count.
    pub partitions: usize,
}

impl ScoresReport {
    /// The stage's report of a pass, `updated` crawldb rows rewritten.
    pub fn summary(&self, updated: u64) -> PageRankReport {
        PageRankReport {
            nodes: self.nodes,
            edges: self.edges,
            iterations: self.iterations,
            delta: self.delta,
            crawldb_updated: updated,
            build_time: Duration::from_millis(self.build_ms),
            rank_time: Duration::from_millis(self.rank_ms),
            pass: None,
        }
    }
}

/// What a `--pass rewrite` task of a pagerank job did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScoreRewriteReport {
    /// The crawldb version it rewrote ([`crate::crawldb::version_id`]).
    pub crawldb_version: String,
    /// Its partitions.
    pub partitions: Vec<usize>,
    /// Rows whose score was replaced.
    pub updated: u64,
    /// After the iteration as tasks: the last iteration it read the ranks of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration: Option<usize>,
    /// After the iteration as tasks: whether it wrote crawldb parts
    /// (`pagerank.update_crawldb` and a graph that is not empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_crawldb: Option<bool>,
}

/// The `pagerank/` directory inside a scores attempt.
pub fn scores_dataset(attempt: &Path) -> PathBuf {
    attempt.join(crate::store::names::PAGERANK)
}

/// The scores pass of a pagerank job (one task over every partition): builds the
/// graph, iterates, and writes the new `pagerank/` into `out` ([`scores_dataset`]).
/// Installs nothing.
pub fn scores_task(ctx: &StageCtx, out: &Path) -> Result<ScoresReport> {
    let dir = &ctx.open_existing()?;
    let pc = &ctx.config().pagerank;
    let Ranked {
        built: Built { graph, inl, .. },
        rank,
        params,
        teleport,
        build_time,
        rank_time,
    } = rank_graph(ctx, dir)?;
    let ds = scores_dataset(out);
    std::fs::create_dir_all(&ds).map_err(|e| Error::io(&ds, e))?;
    write_pagerank(&ds, pc, &graph, &inl, &rank, &params, teleport)?;
    Ok(ScoresReport {
        nodes: graph.nodes() as u64,
        edges: graph.out.edges() as u64,
        iterations: rank.iterations,
        delta: rank.delta,
        build_ms: build_time.as_millis() as u64,
        rank_ms: rank_time.as_millis() as u64,
        update_crawldb: pc.update_crawldb && graph.nodes() > 0,
        scale: crawldb_scale(graph.nodes()),
        partitions: graph.partitions(),
    })
}

/// A rewrite task of a pagerank job: crawldb parts `parts` rewritten into `out` with
/// the scores of the scores attempt `scores` (report `sr`): each page's PageRank
/// times the scale, as one-process pagerank does (a URL not in the graph keeps its
/// score). Memory: one partition's scores at a time.
pub fn rewrite_task(
    ctx: &StageCtx,
    scores: &Path,
    sr: &ScoresReport,
    parts: &[usize],
    out: &Path,
) -> Result<ScoreRewriteReport> {
    let dir = ctx.open_existing()?;
    let mut r = ScoreRewriteReport {
        crawldb_version: crate::crawldb::version_id(&dir)?,
        partitions: parts.to_vec(),
        updated: 0,
        iteration: None,
        update_crawldb: None,
    };
    if !sr.update_crawldb {
        return Ok(r);
    }
    let n = dir.crawldb_meta()?.partitions;
    if n != sr.partitions {
        return Err(Error::crawl_dir(
            dir.crawldb_current(),
            format!(
                "the crawldb has {n} partitions, the scores of this job {}: the crawl was repartitioned since; rerun the job",
                sr.partitions
            ),
        ));
    }
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let ds = scores_dataset(scores);
    let counts = parts
        .par_iter()
        .map(|&i| {
            if i >= n {
                return Err(Error::crawl_dir(
                    dir.crawldb_current(),
                    format!("partition {i} does not exist: the crawldb has {n} partitions"),
                ));
            }
            crate::signal::check(
                "pagerank stopped while rewriting crawldb parts: nothing installed; rerun the task",
            )?;
            let mut by_url: std::collections::HashMap<String, f64> = Default::default();
            let file = ds.join(parquet::part_name(i));
            if file.is_file() {
                for rows in parquet::read_part::<PageRankRecord>(&file)? {
                    for row in rows? {
                        by_url.insert(row.url, row.score);
                    }
                }
            }
            let src = crate::crawldb::current_part(&dir, i);
            let mut w = PartWriter::<CrawlDatum>::create(&out.join(parquet::part_name(i)))?;
            let mut k = 0;
            for rows in parquet::read_part::<CrawlDatum>(&src)? {
                for mut row in rows? {
                    if let Some(s) = by_url.get(&row.url) {
                        row.score = s * sr.scale;
                        k += 1;
                    }
                    w.push(row)?;
                }
            }
            w.finish()?;
            Ok(k)
        })
        .collect::<Result<Vec<u64>>>()?;
    r.updated = counts.iter().sum();
    Ok(r)
}

/// The commit of a pagerank job: installs the scores attempt's `pagerank/`
/// (`scores`, report `sr`), then, under the crawldb lock, the rewritten crawldb
/// parts (`rewrites`, every partition once, all read from the version current now)
/// as a new version. Files are linked, never rewritten.
fn commit(
    ctx: &StageCtx,
    scores: &Path,
    sr: &ScoresReport,
    rewrites: &[(PathBuf, ScoreRewriteReport)],
) -> Result<PageRankReport> {
    let dir = ctx.open_existing()?;
    let report = sr.summary(rewrites.iter().map(|(_, r)| r.updated).sum());
    // Check the crawldb first (under the crawldb lock the executor holds for a
    // commit), so a refused commit changes nothing.
    if sr.update_crawldb {
        let version = crate::crawldb::version_id(&dir)?;
        for (path, r) in rewrites {
            crate::crawldb::check_version(&dir, path, &r.crawldb_version, &version)?;
        }
    }
    let staged = StagedDataset::new(&dir.pagerank())?;
    crate::store::jobs::link_tree(
        &scores_dataset(scores),
        staged.path(),
        crate::store::jobs::Markers::Skip,
    )?;
    interrupted()?;
    staged.commit_replacing()?;
    if sr.update_crawldb {
        let mut meta = dir.crawldb_meta()?;
        let parts: Vec<(&Path, &[usize])> = rewrites
            .iter()
            .map(|(p, r)| (p.as_path(), r.partitions.as_slice()))
            .collect();
        crate::crawldb::install_parts(&dir, &parts, &mut meta, "pagerank")?;
    }
    Ok(report)
}

/// The commit of a pagerank job whose iteration ran as tasks: installs the rewrite
/// attempts' `pagerank/` parts (with the job's metadata) and, under the crawldb lock,
/// their crawldb parts as a new version. Files are linked, never rewritten.
fn commit_iterated(ctx: &StageCtx, job: &Job, n: usize) -> Result<PageRankReport> {
    let dir = ctx.open_existing()?;
    let pc = &ctx.config().pagerank;
    let f = tasks::final_of(job, pc, n, None)?;
    let k = f.stopped.iteration;
    let chosen = job.pass(REWRITE).choose(n)?;
    let mut rewrites = Vec::with_capacity(chosen.len());
    for a in chosen {
        let r: ScoreRewriteReport = a.report()?;
        if r.iteration != Some(k) {
            return Err(Error::crawl_dir(
                a.path(),
                format!(
                    "cannot commit job {}: this rewrite attempt read {}, the iteration stopped at {k}: run the rewrite tasks with --iteration {k} under new attempt ids",
                    job.id(),
                    r.iteration
                        .map_or("the scores pass".to_string(), |i| format!("iteration {i}"))
                ),
            ));
        }
        rewrites.push((a, r));
    }
    // Whether the rewrite tasks wrote crawldb parts: all of them, or none.
    let update = rewrites.iter().any(|(_, r)| r.update_crawldb == Some(true));
    if let Some((a, _)) = rewrites
        .iter()
        .find(|(_, r)| r.update_crawldb != Some(update))
    {
        return Err(Error::crawl_dir(
            a.path(),
            format!(
                "cannot commit job {}: its rewrite tasks ran with and without --no-update-crawldb: run them again with the same settings under new attempt ids",
                job.id()
            ),
        ));
    }
    // Under the crawldb lock the executor holds for a commit.
    if update {
        let version = crate::crawldb::version_id(&dir)?;
        for (a, r) in &rewrites {
            crate::crawldb::check_version(&dir, a.path(), &r.crawldb_version, &version)?;
        }
    }
    let meta = dir.crawldb_meta()?;
    let staged = StagedDataset::new(&dir.pagerank())?;
    for (a, _) in &rewrites {
        a.link_parts(crate::store::names::PAGERANK, staged.path())?;
    }
    let pm = PageRankMeta {
        source: pc.source.to_string(),
        damping: pc.damping,
        teleport: if f.seeds_used {
            Teleport::Seeds.to_string()
        } else {
            Teleport::Uniform.to_string()
        },
        nodes: f.nodes,
        edges: f.edges,
        iterations: k,
        delta: f.stopped.delta,
        partitions: n,
        partition_key: meta.partition_key,
        hits: false,
        hostrank: false,
        ignore_internal: pc.ignore_internal,
        ignore_template: pc.ignore_template,
        crawldb_scale: crawldb_scale(f.nodes as usize),
        written_time: now_millis(),
    };
    parquet::write_json(&staged.path().join(PAGERANK_META), &pm)?;
    interrupted()?;
    staged.commit_replacing()?;
    let updated = rewrites.iter().map(|(_, r)| r.updated).sum();
    if update {
        let mut meta = meta;
        let parts: Vec<(PathBuf, &[usize])> = rewrites
            .iter()
            .map(|(a, r)| {
                (
                    a.dataset(crate::crawldb::TASK_DATASET),
                    r.partitions.as_slice(),
                )
            })
            .collect();
        let parts: Vec<(&Path, &[usize])> = parts.iter().map(|(p, r)| (p.as_path(), *r)).collect();
        crate::crawldb::install_parts(&dir, &parts, &mut meta, "pagerank")?;
    }
    Ok(f.summary(updated))
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
