//! pagerank as partition tasks: a job's `--pass links`, `graph`, `iterate` (once per
//! iteration) and `rewrite`, so that no task holds the graph of the whole crawl
//! (docs/graph.md, "As partition tasks"; docs/tasks-crawldb.md).
//!
//! A page is named across partitions by the 64-bit XxHash of its URL, its *key*
//! ([`url_key`]), and lives in the partition of its host (the crawldb's partitioner):
//!
//! - **links** (a shuffle), per partition set: the edge source's files of its
//!   partitions (`linkdb/current` or every segment's `parse_data`); each link
//!   `s -> t` goes to `s`'s partition as `(s, partition of t, key of t)`, and `t`
//!   itself to its partition, so that it is a node there.
//! - **graph** (a shuffle whose parts stay in their partition), per partition set:
//!   each partition's nodes (its crawldb URLs and the URLs the links brought, sorted:
//!   a node's local id is its row), their keys, distinct out-links and seed flags,
//!   and its edges sorted by (target partition, target key, source). Two URLs of a
//!   partition with the same key are refused (about 1 in 10^7 at a million nodes
//!   per partition): run pagerank in one process.
//! - **iterate** with `--iteration K` (a shuffle `rank.K`), per partition set: `K = 0`
//!   writes the teleport vector; `K >= 1` sums the contributions the other
//!   partitions sent (`rank.{K-1}`'s `msgs/`) into `rank_K = (1 - d) t + d (D / N +
//!   sum)`, as the one-process kernel ([`super::pagerank`]) does, with `D` the
//!   dangling rank and `N` the nodes of the whole graph, summed from the previous
//!   iteration's and the graph's reports. Each iteration writes its partitions'
//!   ranks (`ranks/`) and, per target partition, the contributions of its
//!   partitions' links summed per target key (`msgs/`). Iteration 1 also counts each
//!   node's distinct in-links from the link counts iteration 0 sent.
//! - **check** (in the driver, `--check --iteration K`): the L1 change summed over
//!   the iteration's reports; the iteration stops as the one-process kernel stops
//!   (below the tolerance, or after `max_iterations`).
//! - **rewrite** with the last `--iteration`, per partition set: its partitions'
//!   scores (ranks divided by their sum) into `pagerank/` parts and the crawldb parts
//!   with each page's score times the node count; the commit installs both.
//!
//! A task holds its partitions' nodes, edges and messages, not the crawl's. Within a
//! partition every sum runs in one fixed order, so a retried task writes exactly
//! what the lost attempt wrote.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use arrow::array::{Array, AsArray, Float64Array, RecordBatch, UInt32Array, UInt64Array};
use arrow::datatypes::{DataType, Field, Float64Type, Schema, SchemaRef, UInt32Type, UInt64Type};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::ids::url_host;
use super::source::{EdgeKind, EdgeSource, file_index, read_columns, scan_url_depth};
use crate::config::{GraphSource, PageRankConfig, Teleport};
use crate::datum::CrawlDatum;
use crate::error::{Error, Result};
use crate::records::PageRankRecord;
use crate::store::integrity;
use crate::store::jobs::{FinishedAttempt, Job};
use crate::store::layout::CrawlDir;
use crate::store::names::SegmentDataset;
use crate::store::parquet::{self, PartWriter, Record};
use crate::store::partition::Partitioner;

/// The shuffles of a pagerank job's tasks (`--pass links`, `--pass graph`).
pub const LINKS: &str = "links";
/// See [`LINKS`].
pub const GRAPH: &str = "graph";
/// The datasets of their attempts.
const NODES: &str = "nodes";
const EDGES: &str = "edges";
const MSGS: &str = "msgs";
const RANKS: &str = "ranks";
/// The job file the check writes when the iteration stops.
const ITERATIONS_FILE: &str = "iterations.json";

/// The shuffle of iteration `k` (`rank.K`).
pub fn rank_shuffle(k: usize) -> String {
    format!("rank.{k}")
}

/// The key that names a page across partitions: the XxHash64 (seed 0) of its URL.
pub fn url_key(url: &str) -> u64 {
    twox_hash::XxHash64::oneshot(0, url.as_bytes())
}

/// A URL that is a node of the partition it was routed to; with `to_partition` and
/// `to_key`, a link from it to the page of that key in that partition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkRow {
    /// The page.
    pub url: String,
    /// The link target's partition.
    pub to_partition: Option<u32>,
    /// The link target's key.
    pub to_key: Option<u64>,
}

impl Record for LinkRow {
    fn schema() -> SchemaRef {
        static S: OnceLock<SchemaRef> = OnceLock::new();
        S.get_or_init(|| {
            Arc::new(Schema::new(vec![
                Field::new("url", DataType::Utf8, false),
                Field::new("to_partition", DataType::UInt32, true),
                Field::new("to_key", DataType::UInt64, true),
            ]))
        })
        .clone()
    }
}

/// A node of a partition's graph (row `i` of `nodes/`: local id `i`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeRow {
    /// The page.
    pub url: String,
    /// Its key.
    pub key: u64,
    /// Its distinct out-links.
    pub out_degree: u32,
    /// A seed page (for `teleport = "seeds"`).
    pub seed: bool,
}

impl Record for NodeRow {
    fn schema() -> SchemaRef {
        static S: OnceLock<SchemaRef> = OnceLock::new();
        S.get_or_init(|| {
            Arc::new(Schema::new(vec![
                Field::new("url", DataType::Utf8, false),
                Field::new("key", DataType::UInt64, false),
                Field::new("out_degree", DataType::UInt32, false),
                Field::new("seed", DataType::Boolean, false),
            ]))
        })
        .clone()
    }
}

/// A distinct link of a partition's graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EdgeRow {
    /// The source's local id.
    pub source: u32,
    /// The target's partition.
    pub to_partition: u32,
    /// The target's key.
    pub to_key: u64,
}

impl Record for EdgeRow {
    fn schema() -> SchemaRef {
        static S: OnceLock<SchemaRef> = OnceLock::new();
        S.get_or_init(|| {
            Arc::new(Schema::new(vec![
                Field::new("source", DataType::UInt32, false),
                Field::new("to_partition", DataType::UInt32, false),
                Field::new("to_key", DataType::UInt64, false),
            ]))
        })
        .clone()
    }
}

/// The settings every pass of a job must share.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// `pagerank.source`.
    pub source: String,
    /// `pagerank.ignore_internal`.
    pub ignore_internal: bool,
    /// `pagerank.ignore_template`.
    #[serde(default)]
    pub ignore_template: bool,
    /// `pagerank.damping`.
    pub damping: f64,
    /// `pagerank.teleport`.
    pub teleport: String,
}

impl Settings {
    fn of(pc: &PageRankConfig) -> Self {
        Settings {
            source: pc.source.to_string(),
            ignore_internal: pc.ignore_internal,
            ignore_template: pc.ignore_template,
            damping: pc.damping,
            teleport: pc.teleport.to_string(),
        }
    }
}

/// What a links task did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LinksReport {
    /// The crawldb version the job reads.
    pub crawldb_version: String,
    /// Its partitions.
    pub partitions: Vec<usize>,
    /// The settings it ran with.
    pub settings: Settings,
    /// Edge files read.
    pub files: u64,
    /// Links read (duplicates included).
    pub links: u64,
}

/// What a graph task built.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GraphReport {
    /// The crawldb version it read.
    pub crawldb_version: String,
    /// Its partitions.
    pub partitions: Vec<usize>,
    /// The settings the job runs with.
    pub settings: Settings,
    /// Nodes of its partitions.
    pub nodes: u64,
    /// Distinct links from them.
    pub edges: u64,
    /// Seed pages among them.
    pub seeds: u64,
    /// Time the task took (ms), links pass included.
    pub ms: u64,
}

/// What an iterate task did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IterateReport {
    /// The iteration (`--iteration`).
    pub iteration: usize,
    /// Its partitions.
    pub partitions: Vec<usize>,
    /// Their nodes.
    pub nodes: u64,
    /// The rank of their dangling nodes (no out-link).
    pub dangling: f64,
    /// The L1 change of their ranks (0 in iteration 0).
    pub delta: f64,
    /// The sum of their ranks.
    pub rank_sum: f64,
    /// Contributions sent (one per target key and target partition).
    pub messages: u64,
    /// Time the task took (ms).
    pub ms: u64,
    /// The longest task's time of each iteration so far, summed (ms).
    pub total_ms: u64,
}

/// The iteration the check stopped at (the job file `iterations.json`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Stopped {
    /// Iterations run.
    pub iteration: usize,
    /// The L1 change of the last.
    pub delta: f64,
}

/// What the check after an iteration decided, as it prints it for the driver (one
/// JSON line on stdout; docs/cluster.md, "The plan").
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CheckOutcome {
    /// The iteration checked.
    pub iteration: usize,
    /// Its L1 change.
    pub delta: f64,
    /// Run iteration `iteration + 1`; else run the rewrite tasks with
    /// `--iteration iteration`.
    pub again: bool,
}

// ---------------------------------------------------------------------------------
// links

/// The files holding the links a task on partitions `parts` (of `n`) reads, and
/// their kind: of a dataset's parts, those of index `j` with `j % n` in `parts`,
/// so that every file is read by exactly one task whatever its partitioning (links
/// are routed by their URLs, not by the file they come from).
fn edge_files(
    dir: &CrawlDir,
    pc: &PageRankConfig,
    n: usize,
    parts: &[usize],
) -> Result<(EdgeKind, Vec<PathBuf>)> {
    let owned = |data: &Path| -> Result<Vec<PathBuf>> {
        let files: Vec<PathBuf> = parquet::part_files(data)?
            .into_iter()
            .filter(|f| parts.contains(&(file_index(f) % n.max(1))))
            .collect();
        integrity::verify_files(data, &files)?;
        Ok(files)
    };
    match pc.source {
        GraphSource::Linkdb => {
            let cur = dir.linkdb_current();
            if super::linkdb::read_meta(dir)?.is_none() {
                return Err(Error::crawl_dir(
                    &cur,
                    "no linkdb: run `linkdb` first, or use --source crawl",
                ));
            }
            Ok((EdgeKind::LinkDb, owned(&cur)?))
        }
        GraphSource::Crawl => {
            let mut files = Vec::new();
            for seg in dir.segments()? {
                if !seg.has(SegmentDataset::ParseData) {
                    tracing::info!(
                        "segment {} has no complete parse_data; its links are not in the graph",
                        seg.name()
                    );
                    continue;
                }
                files.extend(owned(&seg.dataset(SegmentDataset::ParseData))?);
            }
            Ok((EdgeKind::ParseData, files))
        }
    }
}

/// Links a links task holds before it writes them out as a chunk: a few hundred
/// bytes each (the routed rows of the link and of its target), so its memory stays
/// within a few hundred MB whatever its partitions hold.
const LINKS_CHUNK: usize = 1 << 20;

/// The links a links task routed and not yet written.
struct Routed<'a> {
    out: &'a Path,
    rows: BTreeMap<u32, Vec<LinkRow>>,
    held: usize,
    /// The targets routed in this chunk (each once a chunk), by partition and key:
    /// their row in `rows`, whose URL a target of the same key is compared with (two
    /// URLs of one key both go, and the graph task refuses them).
    targets: HashMap<(u32, u64), usize>,
    chunks: usize,
}

impl Routed<'_> {
    fn push(&mut self, partition: u32, row: LinkRow) -> usize {
        let rows = self.rows.entry(partition).or_default();
        rows.push(row);
        self.held += 1;
        rows.len() - 1
    }

    /// Routes target `t` (key `tk`) to its partition `tp`, unless this chunk has.
    fn target(&mut self, tp: u32, tk: u64, t: &str) {
        if let Some(&i) = self.targets.get(&(tp, tk))
            && self
                .rows
                .get(&tp)
                .and_then(|r| r.get(i))
                .is_some_and(|r| r.url == t)
        {
            return;
        }
        let row = LinkRow {
            url: t.to_string(),
            to_partition: None,
            to_key: None,
        };
        let i = self.push(tp, row);
        self.targets.insert((tp, tk), i);
    }

    /// Writes the held rows as chunk `part-0000j-NNNNN.parquet` of each partition `j`.
    fn flush(&mut self) -> Result<()> {
        for (q, rows) in std::mem::take(&mut self.rows) {
            let file = self
                .out
                .join(format!("part-{q:05}-{:05}.parquet", self.chunks));
            let mut w = PartWriter::<LinkRow>::create_with(&file, parquet::scratch_properties())?;
            for row in rows {
                w.push(row)?;
            }
            w.finish()?;
        }
        self.chunks += 1;
        self.held = 0;
        self.targets.clear();
        Ok(())
    }
}

/// The links pass over partitions `parts` (of `n`): routes each link of their edge
/// files to its source's partition and each target to its own, into `out` (the
/// attempt's `links/`: `part-0000j-NNNNN.parquet` per partition `j` that receives
/// any, a chunk of at most [`LINKS_CHUNK`] links at a time).
pub fn links(
    dir: &CrawlDir,
    pc: &PageRankConfig,
    n: usize,
    parts: &[usize],
    out: &Path,
) -> Result<LinksReport> {
    let version = crate::crawldb::version_id(dir)?;
    let pt = dir.crawldb_meta()?.partitioner();
    let (kind, files) = edge_files(dir, pc, n, parts)?;
    let source = EdgeSource::new(kind, files.clone())
        .ignore_internal(pc.ignore_internal)
        .ignore_template(pc.ignore_template);
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let mut routed = Routed {
        out,
        rows: BTreeMap::new(),
        held: 0,
        targets: HashMap::new(),
        chunks: 0,
    };
    let mut count = 0u64;
    let mut failed: Option<Error> = None;
    let of = |url: &str| pt.of_host(&url_host(url)) as u32;
    for f in &files {
        crate::signal::check("pagerank links task stopped: nothing recorded; rerun the task")?;
        source.scan_file(f, &mut |s, t| {
            if failed.is_some() {
                return;
            }
            count += 1;
            let (tp, tk) = (of(t), url_key(t));
            routed.push(
                of(s),
                LinkRow {
                    url: s.to_string(),
                    to_partition: Some(tp),
                    to_key: Some(tk),
                },
            );
            routed.target(tp, tk, t);
            if routed.held >= LINKS_CHUNK
                && let Err(e) = routed.flush()
            {
                failed = Some(e);
            }
        })?;
        if let Some(e) = failed.take() {
            return Err(e);
        }
    }
    routed.flush()?;
    Ok(LinksReport {
        crawldb_version: version,
        partitions: parts.to_vec(),
        settings: Settings::of(pc),
        files: files.len() as u64,
        links: count,
    })
}

// ---------------------------------------------------------------------------------
// Reading a job's attempts

/// The chosen attempts of shuffle `name` of `job` (covering every partition of `n`)
/// with their reports; `missing` says what to run when there is none.
fn chosen<R: serde::de::DeserializeOwned>(
    job: &Job,
    name: &str,
    n: usize,
    missing: &str,
) -> Result<Vec<(FinishedAttempt, R)>> {
    let shuffle = job.shuffle(name);
    if shuffle.finished()?.is_empty() {
        return Err(Error::crawl_dir(
            job.dir(),
            format!("no finished {name} attempt: {missing}"),
        ));
    }
    shuffle
        .choose(n)?
        .into_iter()
        .map(|a| {
            let r = a.report()?;
            Ok((a, r))
        })
        .collect()
}

/// The parts of dataset `name` for index `i` in every one of `attempts`, checked
/// against each attempt's manifest: every part it lists must be there (an attempt
/// whose dataset is gone or half gone, e.g. removed while a late task read it, is
/// refused, never read as "nothing sent").
fn parts_of(attempts: &[&FinishedAttempt], name: &str, i: usize) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for a in attempts {
        let d = a.dataset(name);
        if integrity::read(&d)?.is_none() {
            return Err(Error::crawl_dir(
                &d,
                format!(
                    "attempt {} of partitions {} has no sealed {name}/ (removed since, or never written): rerun this task",
                    a.attempt(),
                    a.partitions()
                ),
            ));
        }
        let files: Vec<PathBuf> = a
            .parts(name)?
            .into_iter()
            .filter(|p| {
                p.file_name()
                    .is_some_and(|f| parquet::is_partition_file(&f.to_string_lossy(), i))
            })
            .collect();
        integrity::verify_files(&d, &files)?;
        out.extend(files);
    }
    Ok(out)
}

/// The attempt of `attempts` that covers partition `i`, and its part `i` of `name`.
fn own_part(attempts: &[&FinishedAttempt], name: &str, i: usize) -> Result<PathBuf> {
    let a = attempts
        .iter()
        .find(|a| a.partitions().contains(i))
        .ok_or_else(|| {
            Error::crawl_dir(
                attempts.first().map_or(Path::new("."), |a| a.path()),
                format!("no chosen attempt covers partition {i}"),
            )
        })?;
    let file = a.dataset(name).join(parquet::part_name(i));
    integrity::verify_files(&a.dataset(name), std::slice::from_ref(&file))?;
    Ok(file)
}

/// The graph a job built: its chosen attempts and the totals of their reports.
struct Graph {
    attempts: Vec<FinishedAttempt>,
    crawldb_version: String,
    settings: Settings,
    nodes: u64,
    edges: u64,
    seeds: u64,
    ms: u64,
}

fn graph_of(job: &Job, n: usize, pc: &PageRankConfig, pass: &str) -> Result<Graph> {
    let chosen: Vec<(FinishedAttempt, GraphReport)> = chosen(
        job,
        GRAPH,
        n,
        "run the links tasks, then the graph tasks first (--pass links, --pass graph)",
    )?;
    let mut g = Graph {
        attempts: Vec::new(),
        crawldb_version: String::new(),
        settings: Settings::default(),
        nodes: 0,
        edges: 0,
        seeds: 0,
        ms: 0,
    };
    for (i, (a, r)) in chosen.into_iter().enumerate() {
        if i == 0 {
            g.crawldb_version = r.crawldb_version.clone();
            g.settings = r.settings.clone();
        } else if (&r.crawldb_version, &r.settings) != (&g.crawldb_version, &g.settings) {
            return Err(Error::crawl_dir(
                a.path(),
                "the graph tasks of this job read different crawldb versions or ran with different settings: run the job again under a new --job id",
            ));
        }
        g.nodes += r.nodes;
        g.edges += r.edges;
        g.seeds += r.seeds;
        g.ms = g.ms.max(r.ms);
        g.attempts.push(a);
    }
    same_settings(job, &g.settings, pc, pass)?;
    Ok(g)
}

/// Refuses a pass run with other settings than the job's first pass.
fn same_settings(job: &Job, theirs: &Settings, pc: &PageRankConfig, pass: &str) -> Result<()> {
    let ours = Settings::of(pc);
    if &ours != theirs {
        return Err(Error::input(
            format!("--pass {pass}"),
            format!(
                "job {} ran with source {}, ignore_internal {}, ignore_template {}, damping {}, teleport {}; this task with source {}, ignore_internal {}, ignore_template {}, damping {}, teleport {}: run every pass of a job with the same settings, or start a new --job (a job begun before pagerank.ignore_template existed ran with it false)",
                job.id(),
                theirs.source,
                theirs.ignore_internal,
                theirs.ignore_template,
                theirs.damping,
                theirs.teleport,
                ours.source,
                ours.ignore_internal,
                ours.ignore_template,
                ours.damping,
                ours.teleport
            ),
        ));
    }
    Ok(())
}

/// An iteration's chosen attempts and the totals of their reports.
struct Iteration {
    attempts: Vec<FinishedAttempt>,
    dangling: f64,
    delta: f64,
    rank_sum: f64,
    ms: u64,
}

fn iteration_of(job: &Job, n: usize, k: usize, nodes: u64) -> Result<Iteration> {
    let chosen: Vec<(FinishedAttempt, IterateReport)> = chosen(
        job,
        &rank_shuffle(k),
        n,
        &format!("run its tasks first (--pass iterate --iteration {k})"),
    )?;
    let mut it = Iteration {
        attempts: Vec::new(),
        dangling: 0.0,
        delta: 0.0,
        rank_sum: 0.0,
        ms: 0,
    };
    let mut counted = 0;
    // In partition order: every reader sums the same way.
    for (a, r) in chosen {
        it.dangling += r.dangling;
        it.delta += r.delta;
        it.rank_sum += r.rank_sum;
        it.ms = it.ms.max(r.total_ms);
        counted += r.nodes;
        it.attempts.push(a);
    }
    if counted != nodes {
        return Err(Error::crawl_dir(
            job.dir(),
            format!(
                "iteration {k} ranked {counted} nodes, the graph has {nodes}: run the job again under a new --job id"
            ),
        ));
    }
    Ok(it)
}

// ---------------------------------------------------------------------------------
// graph

/// The graph pass over partitions `parts` (of `n`): each partition's nodes and
/// edges from its crawldb part and the links every links attempt routed to it, into
/// `out` (`nodes/` and `edges/`, one part per partition).
pub fn graph(
    dir: &CrawlDir,
    job: &Job,
    pc: &PageRankConfig,
    n: usize,
    parts: &[usize],
    out: &Path,
) -> Result<GraphReport> {
    let started = Instant::now();
    let links: Vec<(FinishedAttempt, LinksReport)> =
        chosen(job, LINKS, n, "run the links tasks first (--pass links)")?;
    let version = crate::crawldb::version_id(dir)?;
    let mut links_settings: Option<&Settings> = None;
    for (a, r) in &links {
        crate::crawldb::check_version(dir, a.path(), &r.crawldb_version, &version)?;
        match links_settings {
            None => links_settings = Some(&r.settings),
            Some(s) if s != &r.settings => {
                return Err(Error::crawl_dir(
                    a.path(),
                    "the links tasks of this job ran with different settings: run the job again under a new --job id",
                ));
            }
            Some(_) => {}
        }
    }
    if let Some(s) = links_settings {
        same_settings(job, s, pc, "graph")?;
    }
    let meta = dir.crawldb_meta()?;
    let current = dir.crawldb_current();
    let files: Vec<PathBuf> = parts
        .iter()
        .map(|&i| crate::crawldb::current_part(dir, i))
        .collect();
    integrity::verify_files(&current, &files)?;
    let attempts: Vec<&FinishedAttempt> = links.iter().map(|(a, _)| a).collect();
    let (nodes_dir, edges_dir) = (out.join(NODES), out.join(EDGES));
    for d in [&nodes_dir, &edges_dir] {
        std::fs::create_dir_all(d).map_err(|e| Error::io(d, e))?;
    }
    let seed_hosts = &meta.seed_hosts;
    let pt = meta.partitioner();
    let counts = parts
        .par_iter()
        .zip(&files)
        .map(|(&p, crawldb)| {
            crate::signal::check("pagerank graph task stopped: nothing recorded; rerun the task")?;
            let linked = parts_of(&attempts, LINKS, p)?;
            graph_part(p, crawldb, &linked, seed_hosts, pt, &nodes_dir, &edges_dir)
        })
        .collect::<Result<Vec<(u64, u64, u64)>>>()?;
    let mut r = GraphReport {
        crawldb_version: version,
        partitions: parts.to_vec(),
        settings: Settings::of(pc),
        ..GraphReport::default()
    };
    for (nodes, edges, seeds) in counts {
        r.nodes += nodes;
        r.edges += edges;
        r.seeds += seeds;
    }
    r.ms = started.elapsed().as_millis() as u64;
    Ok(r)
}

/// Partition `p`'s graph: nodes from its crawldb part `crawldb` and the link files
/// `linked`; writes `nodes/` and `edges/` part `p`. Returns (nodes, edges, seeds).
fn graph_part(
    p: usize,
    crawldb: &Path,
    linked: &[PathBuf],
    seed_hosts: &[String],
    pt: Partitioner,
    nodes_dir: &Path,
    edges_dir: &Path,
) -> Result<(u64, u64, u64)> {
    let mut urls: Vec<String> = Vec::new();
    let mut depth0: Vec<String> = Vec::new();
    scan_url_depth(crawldb, &mut |url, depth| {
        urls.push(url.to_string());
        if depth == 0 {
            depth0.push(url.to_string());
        }
    })?;
    let mut out_links: Vec<(String, u32, u64)> = Vec::new();
    for f in linked {
        for rows in parquet::read_part::<LinkRow>(f)? {
            for r in rows? {
                match (r.to_partition, r.to_key) {
                    (Some(q), Some(k)) => out_links.push((r.url, q, k)),
                    _ => urls.push(r.url),
                }
            }
        }
    }
    urls.extend(out_links.iter().map(|(u, _, _)| u.clone()));
    urls.sort_unstable();
    urls.dedup();
    // Keys: distinct within the partition, or the partition cannot be ranked here.
    let keys: Vec<u64> = urls.iter().map(|u| url_key(u)).collect();
    let mut by_key: Vec<(u64, u32)> = keys
        .iter()
        .enumerate()
        .map(|(i, &k)| (k, i as u32))
        .collect();
    by_key.sort_unstable();
    if let Some(w) = by_key.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(Error::crawl_dir(
            crawldb,
            format!(
                "two pages of partition {p} have the same 64-bit key ({} and {}): run pagerank in one process (without --job), which does not key pages by hash",
                urls[w[0].1 as usize], urls[w[1].1 as usize]
            ),
        ));
    }
    let id = |u: &str| urls.binary_search_by(|x| x.as_str().cmp(u)).ok();
    let mut edges: Vec<(u32, u64, u32)> = Vec::with_capacity(out_links.len());
    for (u, q, k) in &out_links {
        let Some(s) = id(u) else { continue };
        edges.push((*q, *k, s as u32));
    }
    drop(out_links);
    edges.sort_unstable();
    edges.dedup();
    let mut out_degree = vec![0u32; urls.len()];
    for &(_, _, s) in &edges {
        out_degree[s as usize] += 1;
    }
    let mut seed = vec![false; urls.len()];
    for u in &depth0 {
        if let Some(i) = id(u) {
            seed[i] = true;
        }
    }
    for h in seed_hosts {
        if pt.of_host(h) != p {
            continue;
        }
        for scheme in ["http", "https"] {
            if let Some(i) = id(&format!("{scheme}://{h}/")) {
                seed[i] = true;
            }
        }
    }
    let seeds = seed.iter().filter(|s| **s).count() as u64;
    let props = parquet::scratch_properties;
    let mut w =
        PartWriter::<NodeRow>::create_with(&nodes_dir.join(parquet::part_name(p)), props())?;
    let nodes = urls.len() as u64;
    for (i, url) in urls.into_iter().enumerate() {
        w.push(NodeRow {
            url,
            key: keys[i],
            out_degree: out_degree[i],
            seed: seed[i],
        })?;
    }
    w.finish()?;
    let mut w =
        PartWriter::<EdgeRow>::create_with(&edges_dir.join(parquet::part_name(p)), props())?;
    let count = edges.len() as u64;
    for (to_partition, to_key, source) in edges {
        w.push(EdgeRow {
            source,
            to_partition,
            to_key,
        })?;
    }
    w.finish()?;
    Ok((nodes, count, seeds))
}

// ---------------------------------------------------------------------------------
// iterate

/// The teleport weight of a node: uniform over the graph, or over its seeds.
#[derive(Debug, Clone, Copy)]
enum Tele {
    Uniform(f64),
    Seeds(f64),
}

impl Tele {
    fn of(g: &Graph) -> Tele {
        if g.settings.teleport == Teleport::Seeds.to_string() && g.seeds > 0 {
            Tele::Seeds(1.0 / g.seeds as f64)
        } else {
            Tele::Uniform(1.0 / g.nodes.max(1) as f64)
        }
    }

    fn at(self, seed: bool) -> f64 {
        match self {
            Tele::Uniform(w) => w,
            Tele::Seeds(w) if seed => w,
            Tele::Seeds(_) => 0.0,
        }
    }
}

/// A column of a batch as the type it must have.
fn column<'a, T: arrow::datatypes::ArrowPrimitiveType>(
    batch: &'a RecordBatch,
    name: &str,
    file: &Path,
) -> Result<&'a arrow::array::PrimitiveArray<T>> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_primitive_opt::<T>())
        .ok_or_else(|| {
            Error::crawl_dir(
                file,
                format!("has no column {name} of the expected type: not a pagerank task's file"),
            )
        })
}

/// One partition's nodes as an iteration needs them.
struct Nodes {
    keys: Vec<u64>,
    out_degree: Vec<u32>,
    seed: Vec<bool>,
}

fn read_nodes(file: &Path) -> Result<Nodes> {
    let mut n = Nodes {
        keys: Vec::new(),
        out_degree: Vec::new(),
        seed: Vec::new(),
    };
    for batch in read_columns(file, &["key", "out_degree", "seed"])? {
        let batch = batch?;
        n.keys
            .extend(column::<UInt64Type>(&batch, "key", file)?.values());
        n.out_degree
            .extend(column::<UInt32Type>(&batch, "out_degree", file)?.values());
        let seed = batch
            .column_by_name("seed")
            .and_then(|c| c.as_boolean_opt())
            .ok_or_else(|| Error::crawl_dir(file, "has no boolean column seed"))?;
        n.seed.extend(seed.iter().map(|s| s.unwrap_or(false)));
    }
    Ok(n)
}

/// Reads a file of this module's numeric columns: `f(batch)` per batch.
fn each_batch(file: &Path, mut f: impl FnMut(&RecordBatch) -> Result<()>) -> Result<()> {
    for batch in parquet::read_batches(file)? {
        f(&batch?)?;
    }
    Ok(())
}

/// A rank row (row `i` of `ranks/`: node `i`).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct RankRow {
    rank: f64,
    in_degree: u32,
}

impl Record for RankRow {
    fn schema() -> SchemaRef {
        static S: OnceLock<SchemaRef> = OnceLock::new();
        S.get_or_init(|| {
            Arc::new(Schema::new(vec![
                Field::new("rank", DataType::Float64, false),
                Field::new("in_degree", DataType::UInt32, false),
            ]))
        })
        .clone()
    }
}

/// The contributions to one target partition's nodes, by key.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct MsgRow {
    key: u64,
    mass: f64,
    links: u32,
}

impl Record for MsgRow {
    fn schema() -> SchemaRef {
        static S: OnceLock<SchemaRef> = OnceLock::new();
        S.get_or_init(|| {
            Arc::new(Schema::new(vec![
                Field::new("key", DataType::UInt64, false),
                Field::new("mass", DataType::Float64, false),
                Field::new("links", DataType::UInt32, false),
            ]))
        })
        .clone()
    }
}

/// Writes `cols` (a batch of `R`'s schema) as part `i` of `dir`.
fn write_columns<R: Record>(dir: &Path, i: usize, cols: Vec<Arc<dyn Array>>) -> Result<()> {
    let file = dir.join(parquet::part_name(i));
    let batch = RecordBatch::try_new(R::schema(), cols)
        .map_err(|e| Error::arrow(file.display().to_string(), e))?;
    let mut w = PartWriter::<R>::create_with(&file, parquet::scratch_properties())?;
    w.write_batch(&batch)?;
    w.finish()?;
    Ok(())
}

/// What one partition's iteration produced: its report's figures and its
/// contributions `(target partition, key, mass, links)`, sorted.
struct PartIteration {
    nodes: u64,
    dangling: f64,
    delta: f64,
    rank_sum: f64,
    msgs: Vec<(u32, u64, f64, u32)>,
}

/// What the partitions of an iterate task share.
struct Step<'a> {
    k: usize,
    damping: f64,
    /// `d D / N`: the dangling rank of the previous iteration spread over the graph.
    spread: f64,
    tele: Tele,
    graphs: Vec<&'a FinishedAttempt>,
    prevs: Vec<&'a FinishedAttempt>,
    ranks_dir: PathBuf,
}

/// The iterate pass `k` over partitions `parts` (of `n`): their ranks of iteration
/// `k` into `out`'s `ranks/`, and their contributions to every partition into its
/// `msgs/` (module doc).
pub fn iterate(
    job: &Job,
    pc: &PageRankConfig,
    n: usize,
    k: usize,
    parts: &[usize],
    out: &Path,
) -> Result<IterateReport> {
    let started = Instant::now();
    let g = graph_of(job, n, pc, "iterate")?;
    let prev = if k > 0 {
        Some(iteration_of(job, n, k - 1, g.nodes)?)
    } else {
        None
    };
    let step = Step {
        k,
        damping: pc.damping,
        spread: prev
            .as_ref()
            .map_or(0.0, |p| pc.damping * p.dangling / g.nodes.max(1) as f64),
        tele: Tele::of(&g),
        graphs: g.attempts.iter().collect(),
        prevs: prev.iter().flat_map(|p| p.attempts.iter()).collect(),
        ranks_dir: out.join(RANKS),
    };
    let msgs_dir = out.join(MSGS);
    for dir in [&step.ranks_dir, &msgs_dir] {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    let each = parts
        .par_iter()
        .map(|&p| iterate_part(&step, p))
        .collect::<Result<Vec<PartIteration>>>()?;
    let mut r = IterateReport {
        iteration: k,
        partitions: parts.to_vec(),
        ..IterateReport::default()
    };
    // The partitions' contributions merged per target: equal keys from several
    // partitions summed in partition order (a stable sort keeps it).
    let mut all: Vec<(u32, u64, f64, u32)> = Vec::new();
    for part in each {
        r.nodes += part.nodes;
        r.dangling += part.dangling;
        r.delta += part.delta;
        r.rank_sum += part.rank_sum;
        all.extend(part.msgs);
    }
    all.par_sort_by_key(|m| (m.0, m.1));
    let mut merged: Vec<(u32, u64, f64, u32)> = Vec::with_capacity(all.len());
    for m in all {
        match merged.last_mut() {
            Some(x) if (x.0, x.1) == (m.0, m.1) => {
                x.2 += m.2;
                x.3 += m.3;
            }
            _ => merged.push(m),
        }
    }
    r.messages = merged.len() as u64;
    for run in merged.chunk_by(|a, b| a.0 == b.0) {
        write_columns::<MsgRow>(
            &msgs_dir,
            run[0].0 as usize,
            vec![
                Arc::new(UInt64Array::from_iter_values(run.iter().map(|m| m.1))),
                Arc::new(Float64Array::from_iter_values(run.iter().map(|m| m.2))),
                Arc::new(UInt32Array::from_iter_values(run.iter().map(|m| m.3))),
            ],
        )?;
    }
    r.ms = started.elapsed().as_millis() as u64;
    r.total_ms = prev.as_ref().map_or(0, |p| p.ms) + r.ms;
    Ok(r)
}

/// Iteration `step.k` of partition `p`: its ranks written to `ranks/`, its
/// contributions returned.
fn iterate_part(step: &Step, p: usize) -> Result<PartIteration> {
    crate::signal::check("pagerank iterate task stopped: nothing recorded; rerun the task")?;
    let nodes = read_nodes(&own_part(&step.graphs, NODES, p)?)?;
    let nv = nodes.keys.len();
    let t = |v: usize| step.tele.at(nodes.seed[v]);
    let (rank, in_degree, delta) = if step.k == 0 {
        ((0..nv).map(t).collect::<Vec<f64>>(), vec![0u32; nv], 0.0)
    } else {
        let (old, mut in_degree) = read_ranks(&step.prevs, p, nv)?;
        if step.k == 1 {
            // Iteration 0 sent each node's distinct in-links beside its rank.
            in_degree.iter_mut().for_each(|x| *x = 0);
        }
        let acc = receive(step, p, &nodes.keys, &mut in_degree)?;
        let d = step.damping;
        let mut delta = 0.0;
        let rank: Vec<f64> = (0..nv)
            .map(|v| {
                let x = (1.0 - d) * t(v) + step.spread + d * acc[v];
                delta += (x - old[v]).abs();
                x
            })
            .collect();
        (rank, in_degree, delta)
    };
    let mut dangling = 0.0;
    let mut rank_sum = 0.0;
    for (r, &o) in rank.iter().zip(&nodes.out_degree) {
        rank_sum += r;
        if o == 0 {
            dangling += r;
        }
    }
    let msgs = contributions(
        &own_part(&step.graphs, EDGES, p)?,
        p,
        &rank,
        &nodes.out_degree,
    )?;
    write_columns::<RankRow>(
        &step.ranks_dir,
        p,
        vec![
            Arc::new(Float64Array::from(rank)),
            Arc::new(UInt32Array::from(in_degree)),
        ],
    )?;
    Ok(PartIteration {
        nodes: nv as u64,
        dangling,
        delta,
        rank_sum,
        msgs,
    })
}

/// Partition `p`'s ranks and in-degrees (of `nv` nodes) from the chosen attempts
/// `attempts` of an iteration.
fn read_ranks(attempts: &[&FinishedAttempt], p: usize, nv: usize) -> Result<(Vec<f64>, Vec<u32>)> {
    let file = own_part(attempts, RANKS, p)?;
    let mut rank: Vec<f64> = Vec::with_capacity(nv);
    let mut in_degree: Vec<u32> = Vec::with_capacity(nv);
    each_batch(&file, |b| {
        rank.extend(column::<Float64Type>(b, "rank", &file)?.values());
        in_degree.extend(column::<UInt32Type>(b, "in_degree", &file)?.values());
        Ok(())
    })?;
    if rank.len() != nv {
        return Err(Error::crawl_dir(
            &file,
            format!(
                "holds {} ranks, partition {p} has {nv} nodes: run the job again under a new --job id",
                rank.len()
            ),
        ));
    }
    Ok((rank, in_degree))
}

/// The contributions every chosen attempt of the previous iteration sent partition
/// `p` (whose nodes have `keys`), summed per node in attempt and file order; in
/// iteration 1 their link counts are added to `in_degree`.
fn receive(step: &Step, p: usize, keys: &[u64], in_degree: &mut [u32]) -> Result<Vec<f64>> {
    let mut lookup: Vec<(u64, u32)> = keys
        .iter()
        .enumerate()
        .map(|(i, &k)| (k, i as u32))
        .collect();
    lookup.sort_unstable();
    let mut acc = vec![0.0f64; keys.len()];
    for file in parts_of(&step.prevs, MSGS, p)? {
        each_batch(&file, |b| {
            let keys = column::<UInt64Type>(b, "key", &file)?;
            let mass = column::<Float64Type>(b, "mass", &file)?;
            let links = column::<UInt32Type>(b, "links", &file)?;
            for i in 0..b.num_rows() {
                let key = keys.value(i);
                let Ok(j) = lookup.binary_search_by_key(&key, |x| x.0) else {
                    return Err(Error::crawl_dir(
                        &file,
                        format!(
                            "sends rank to key {key:016x}, which no node of partition {p} has: run the job again under a new --job id"
                        ),
                    ));
                };
                let v = lookup[j].1 as usize;
                acc[v] += mass.value(i);
                if step.k == 1 {
                    in_degree[v] += links.value(i);
                }
            }
            Ok(())
        })?;
    }
    Ok(acc)
}

/// The contributions of partition `p`'s links (`edges`, sorted by target partition,
/// key and source): `rank / out-degree` of each source, summed per (target
/// partition, key) in edge order, with the number of links summed.
fn contributions(
    edges: &Path,
    p: usize,
    rank: &[f64],
    out_degree: &[u32],
) -> Result<Vec<(u32, u64, f64, u32)>> {
    let mut msgs: Vec<(u32, u64, f64, u32)> = Vec::new();
    each_batch(edges, |b| {
        let src = column::<UInt32Type>(b, "source", edges)?;
        let tp = column::<UInt32Type>(b, "to_partition", edges)?;
        let tk = column::<UInt64Type>(b, "to_key", edges)?;
        for i in 0..b.num_rows() {
            let s = src.value(i) as usize;
            let (Some(r), Some(&o)) = (rank.get(s), out_degree.get(s)) else {
                return Err(Error::crawl_dir(
                    edges,
                    format!("names node {s}, beyond partition {p}'s {}", rank.len()),
                ));
            };
            let c = r / o.max(1) as f64;
            let key = (tp.value(i), tk.value(i));
            match msgs.last_mut() {
                Some(m) if (m.0, m.1) == key => {
                    m.2 += c;
                    m.3 += 1;
                }
                _ => msgs.push((key.0, key.1, c, 1)),
            }
        }
        Ok(())
    })?;
    Ok(msgs)
}

// ---------------------------------------------------------------------------------
// check

/// The check after iteration `k` (in the driver): whether to run another, as the
/// one-process kernel decides (iteration 0 only starts, unless the graph is empty;
/// then stop below the tolerance or at `max_iterations`). When the iteration stops it
/// writes the job's `iterations.json` for the rewrite tasks and the commit. It
/// removes the shuffles of the iterations before `k - 1`: the tasks of `k + 1` read
/// `k`, and a late attempt of `k` may still read `k - 1` (on an object store the
/// driver step's push removes their manifests too).
pub fn check(job: &Job, pc: &PageRankConfig, n: usize, k: usize) -> Result<CheckOutcome> {
    let g = graph_of(job, n, pc, "check")?;
    let it = iteration_of(job, n, k, g.nodes)?;
    let again = if k == 0 {
        g.nodes > 0
    } else {
        it.delta >= pc.tolerance && k < pc.max_iterations
    };
    let file = job.file(ITERATIONS_FILE);
    if again {
        if file.is_file() {
            std::fs::remove_file(&file).map_err(|e| Error::io(&file, e))?;
        }
    } else {
        let bytes = serde_json::to_vec(&Stopped {
            iteration: k,
            delta: it.delta,
        })
        .map_err(|e| Error::crawl_dir(&file, format!("cannot encode: {e}")))?;
        parquet::write_atomic(&file, &bytes)?;
    }
    // Iterations no task reads again.
    for old in 0..k.saturating_sub(1) {
        let dir = job.shuffle(&rank_shuffle(old));
        if dir.dir().is_dir() {
            crate::store::storage::LocalFs.delete(dir.dir())?;
        }
    }
    Ok(CheckOutcome {
        iteration: k,
        delta: it.delta,
        again,
    })
}

/// Whether the check of `job` stopped its iteration (its commit installs the
/// rewrite tasks' scores).
pub fn has_stopped(job: &Job) -> bool {
    job.file(ITERATIONS_FILE).is_file()
}

/// The iteration the check of `job` stopped at.
pub fn stopped(job: &Job) -> Result<Stopped> {
    let file = job.file(ITERATIONS_FILE);
    if !file.is_file() {
        return Err(Error::crawl_dir(
            job.dir(),
            format!(
                "the iteration of job {} has not stopped: run `pagerank --job {} --check --iteration K` after each iteration until it prints \"again\": false",
                job.id(),
                job.id()
            ),
        ));
    }
    parquet::read_json(&file)
}

// ---------------------------------------------------------------------------------
// rewrite and commit

/// The final scores of a job: ranks of the last iteration over their sum.
pub struct Final {
    /// The graph's totals.
    pub nodes: u64,
    /// Distinct links.
    pub edges: u64,
    /// Seed pages (used when `teleport = "seeds"` and there are any).
    pub seeds_used: bool,
    /// Where the iteration stopped.
    pub stopped: Stopped,
    /// The crawldb version the graph read.
    pub crawldb_version: String,
    /// Longest graph task and summed longest iterate task per iteration (ms).
    pub build_ms: u64,
    /// See `build_ms`.
    pub rank_ms: u64,
    graph: Vec<FinishedAttempt>,
    last: Vec<FinishedAttempt>,
    rank_sum: f64,
}

impl Final {
    /// The stage's report, `updated` crawldb rows rewritten.
    pub fn summary(&self, updated: u64) -> super::stage::PageRankReport {
        super::stage::PageRankReport {
            nodes: self.nodes,
            edges: self.edges,
            iterations: self.stopped.iteration,
            delta: self.stopped.delta,
            crawldb_updated: updated,
            build_time: std::time::Duration::from_millis(self.build_ms),
            rank_time: std::time::Duration::from_millis(self.rank_ms),
            pass: None,
        }
    }
}

/// The final scores of `job` after its check stopped at iteration `k` (the
/// rewrite tasks' `--iteration`; `None` in the commit).
pub fn final_of(job: &Job, pc: &PageRankConfig, n: usize, k: Option<usize>) -> Result<Final> {
    let stopped = stopped(job)?;
    if let Some(k) = k
        && k != stopped.iteration
    {
        return Err(Error::input(
            "--iteration",
            format!(
                "the iteration of job {} stopped at {}: run the rewrite tasks with --iteration {}",
                job.id(),
                stopped.iteration,
                stopped.iteration
            ),
        ));
    }
    let g = graph_of(job, n, pc, "rewrite")?;
    let it = iteration_of(job, n, stopped.iteration, g.nodes)?;
    Ok(Final {
        nodes: g.nodes,
        edges: g.edges,
        seeds_used: matches!(Tele::of(&g), Tele::Seeds(_)),
        stopped,
        crawldb_version: g.crawldb_version,
        build_ms: g.ms,
        rank_ms: it.ms,
        graph: g.attempts,
        last: it.attempts,
        rank_sum: it.rank_sum,
    })
}

/// A rewrite task after the iteration: for each partition of `parts`, its
/// `pagerank/` part (scores summing to 1 over the graph) into `scores_out` and, with
/// `update_crawldb`, its crawldb part with each page's score times the node count
/// into `crawldb_out` (a URL not in the graph keeps its score). Returns the crawldb
/// rows whose score was replaced.
pub fn rewrite(
    dir: &CrawlDir,
    f: &Final,
    update_crawldb: bool,
    parts: &[usize],
    scores_out: &Path,
    crawldb_out: &Path,
) -> Result<u64> {
    let version = crate::crawldb::version_id(dir)?;
    crate::crawldb::check_version(dir, scores_out, &f.crawldb_version, &version)?;
    let graphs: Vec<&FinishedAttempt> = f.graph.iter().collect();
    let last: Vec<&FinishedAttempt> = f.last.iter().collect();
    let total = if f.rank_sum > 0.0 { f.rank_sum } else { 1.0 };
    let scale = super::stage::crawldb_scale(f.nodes as usize);
    for d in [scores_out, crawldb_out] {
        std::fs::create_dir_all(d).map_err(|e| Error::io(d, e))?;
    }
    let counts = parts
        .par_iter()
        .map(|&p| {
            crate::signal::check(
                "pagerank rewrite task stopped: nothing recorded; rerun the task",
            )?;
            let nodes = parquet::read_part_all::<NodeRow>(&own_part(&graphs, NODES, p)?)?;
            let (rank, in_degree) = read_ranks(&last, p, nodes.len())?;
            let score: Vec<f64> = rank.iter().map(|r| r / total).collect();
            let mut w =
                PartWriter::<PageRankRecord>::create(&scores_out.join(parquet::part_name(p)))?;
            for (i, node) in nodes.iter().enumerate() {
                w.push(PageRankRecord {
                    url: node.url.clone(),
                    score: score[i],
                    in_degree: i64::from(in_degree[i]),
                    out_degree: i64::from(node.out_degree),
                })?;
            }
            w.finish()?;
            if !update_crawldb {
                return Ok(0);
            }
            let src = crate::crawldb::current_part(dir, p);
            let mut w = PartWriter::<CrawlDatum>::create(&crawldb_out.join(parquet::part_name(p)))?;
            let mut updated = 0;
            for rows in parquet::read_part::<CrawlDatum>(&src)? {
                for mut row in rows? {
                    if let Ok(i) = nodes.binary_search_by(|n| n.url.as_str().cmp(&row.url)) {
                        row.score = score[i] * scale;
                        updated += 1;
                    }
                    w.push(row)?;
                }
            }
            w.finish()?;
            Ok(updated)
        })
        .collect::<Result<Vec<u64>>>()?;
    Ok(counts.iter().sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_stable_and_tell_urls_apart() {
        // The key is part of a job's files: it must not change between builds.
        assert_eq!(url_key(""), 0xef46_db37_51d8_e999);
        assert_ne!(url_key("http://a/"), url_key("http://a/x"));
    }

    #[test]
    fn edge_files_are_owned_by_their_index_modulo_the_partitions() {
        let idx = |n: &str| file_index(Path::new(n));
        assert_eq!(idx("part-00003.parquet"), 3);
        assert_eq!(idx("part-00012-p00000-00003.parquet"), 12);
        assert_eq!(idx("odd.parquet"), 0);
        // A dataset of 6 parts read by tasks of a 4-partition crawl: each part once.
        let owners: Vec<usize> = (0..6)
            .map(|j| idx(&format!("part-{j:05}.parquet")) % 4)
            .collect();
        assert_eq!(owners, [0, 1, 2, 3, 0, 1]);
    }

    #[test]
    fn the_teleport_falls_back_to_uniform_without_seeds() {
        let g = |teleport: &str, seeds| Graph {
            attempts: Vec::new(),
            crawldb_version: String::new(),
            settings: Settings {
                teleport: teleport.to_string(),
                ..Settings::default()
            },
            nodes: 4,
            edges: 0,
            seeds,
            ms: 0,
        };
        assert_eq!(Tele::of(&g("seeds", 0)).at(false), 0.25);
        assert_eq!(Tele::of(&g("seeds", 2)).at(false), 0.0);
        assert_eq!(Tele::of(&g("seeds", 2)).at(true), 0.5);
        assert_eq!(Tele::of(&g("uniform", 2)).at(false), 0.25);
    }
}
