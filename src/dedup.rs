//! The `dedup` stage: marks duplicate pages in the crawldb (Nutch's
//! `DeduplicationJob`).
//!
//! Candidates are rows with status `db_fetched`, `db_notmodified` or
//! `db_duplicate` and a signature. Candidates with the same signature form a
//! group; with `near`, candidates whose SimHashes (read from the segments'
//! `parse_data`, newest segment wins) differ in at most `max_distance` bits join
//! the same group too. In every group the row with the highest score wins, then
//! the shortest URL, then the smallest URL; the others become `db_duplicate`.
//! A `db_duplicate` row that wins its group now (its original is gone) goes
//! back to `db_fetched`.
//!
//! Near duplicates are found with Manku, Jain and Das Sarma's permuted tables
//! (WWW 2007): the 64 bits are cut into `k + 1` blocks; two hashes within `k`
//! bits agree exactly on at least one block (pigeonhole), so for each block the
//! distinct hashes are sorted by it and only hashes sharing it are compared.
//!
//! The crawldb is rewritten under its lock through a staged version installed
//! with [`VersionedDataset::install`](crate::store::versioned::VersionedDataset::install), part by part, keeping partitioning and order.

pub mod tasks;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::datum::{CrawlDatum, DbStatus};
use crate::error::Result;
use crate::records::ParseDataRecord;
use crate::stage::{Guard, Partitioned, Report, StageCtx, Verify};
use crate::store::disk;
use crate::store::jobs::{Job, PartitionSet};
use crate::store::layout::CrawlDir;
use crate::store::names::SegmentDataset;
use crate::store::parquet::{self, PartWriter};

/// Options of a dedup run.
#[derive(Debug, Clone, Copy)]
pub struct DedupOpts {
    /// Also group near duplicates by SimHash.
    pub near: bool,
    /// Maximum differing bits for near duplicates.
    pub max_distance: u32,
    /// The pass a task of a job runs (`--pass`); `None` in a one-process run and a
    /// commit.
    pub pass: Option<DedupPass>,
}

/// The passes of a dedup job's tasks: the decision in one task (`Signatures`) or
/// as partition tasks (`Keys`, `Groups`, `Resolve`; [`tasks`]), then `Rewrite`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DedupPass {
    /// One task over every partition: the global duplicate decision in memory.
    Signatures,
    /// Per partition set: the candidates routed to buckets by signature and SimHash
    /// block (a shuffle).
    Keys,
    /// Per bucket set: each bucket's groups (verdicts), or with `--near` its edges.
    Groups,
    /// One task: with `--near`, the groups every bucket's edges make, and their
    /// verdicts; nothing without.
    Resolve,
    /// Per partition set: the crawldb parts rewritten with the decision.
    Rewrite,
}

impl Default for DedupOpts {
    fn default() -> Self {
        DedupOpts {
            near: false,
            max_distance: 3,
            pass: None,
        }
    }
}

/// The crawldb metadata key dedup sets (to the time, ms UTC) on a row it turns back
/// from `db_duplicate` to `db_fetched`: the `index` stage indexes such a page again
/// from the segment that parsed it.
pub const RESTORED_KEY: &str = "dedup_restored";

/// The sub-job (directory) of each pass inside a dedup job.
const SIGNATURES: &str = "signatures";
pub(crate) const REWRITE: &str = "rewrite";

/// Counts reported by the stage.
#[derive(Debug, Clone, Default)]
pub struct DedupReport {
    /// Rows read.
    pub rows: u64,
    /// Candidate rows (fetched with a signature).
    pub candidates: u64,
    /// Groups with more than one member.
    pub groups: u64,
    /// Rows marked `db_duplicate` (including ones already marked).
    pub duplicates: u64,
    /// Former duplicates that won their group and went back to `db_fetched`.
    pub restored: u64,
    /// Pairs joined by SimHash.
    pub near_pairs: u64,
}

impl fmt::Display for DedupReport {
    /// `R rows, C candidates, G duplicate groups, D duplicates, X restored, N near pairs`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} rows, {} candidates, {} duplicate groups, {} duplicates, {} restored, {} near pairs",
            self.rows,
            self.candidates,
            self.groups,
            self.duplicates,
            self.restored,
            self.near_pairs
        )
    }
}

impl Report for DedupReport {
    const STAGE: &'static str = "dedup";
}

/// Whether a candidate `(score, url)` wins its group over `b`: the higher score,
/// then the shorter URL, then the smaller URL (Nutch's rule).
fn wins(a: (f64, &str), b: (f64, &str)) -> bool {
    b.0.total_cmp(&a.0)
        .then(a.1.len().cmp(&b.1.len()))
        .then(a.1.cmp(b.1))
        .is_lt()
}

struct Cand {
    /// Its crawldb partition.
    part: usize,
    url: String,
    score: f64,
    signature: String,
    simhash: Option<u64>,
}

/// Union-find over candidate indices.
struct Groups {
    parent: Vec<usize>,
}

impl Groups {
    fn new(n: usize) -> Self {
        Groups {
            parent: (0..n).collect(),
        }
    }
    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }
    fn union(&mut self, a: usize, b: usize) -> bool {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return false;
        }
        self.parent[ra.max(rb)] = ra.min(rb);
        true
    }
}

/// The bit ranges (shift, width) of `k + 1` blocks covering 64 bits.
fn blocks(k: u32) -> Vec<(u32, u32)> {
    let n = (k + 1).min(64);
    let base = 64 / n;
    let extra = 64 % n;
    let mut out = Vec::new();
    let mut shift = 0;
    for i in 0..n {
        let w = base + u32::from(i < extra);
        out.push((shift, w));
        shift += w;
    }
    out
}

/// Pairs of indices of `hashes` whose Hamming distance is at most `k`
/// (permuted-table method; identical hashes pair up too).
pub fn near_pairs(hashes: &[u64], k: u32) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    // Identical hashes: chain them to the first occurrence.
    let mut first: HashMap<u64, usize> = HashMap::new();
    let mut distinct: Vec<usize> = Vec::new();
    for (i, &h) in hashes.iter().enumerate() {
        match first.get(&h) {
            Some(&f) => pairs.push((f, i)),
            None => {
                first.insert(h, i);
                distinct.push(i);
            }
        }
    }
    if k == 0 {
        return pairs;
    }
    let mut seen: HashSet<(usize, usize)> = HashSet::new();
    for (shift, width) in blocks(k) {
        let mask = if width >= 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        };
        let key = |i: usize| (hashes[i] >> shift) & mask;
        let mut table = distinct.clone();
        table.sort_unstable_by_key(|&i| key(i));
        let mut start = 0;
        while start < table.len() {
            let mut end = start + 1;
            while end < table.len() && key(table[end]) == key(table[start]) {
                end += 1;
            }
            for a in start..end {
                for b in a + 1..end {
                    let (x, y) = (table[a].min(table[b]), table[a].max(table[b]));
                    if (hashes[x] ^ hashes[y]).count_ones() <= k && seen.insert((x, y)) {
                        pairs.push((x, y));
                    }
                }
            }
            start = end;
        }
    }
    pairs
}

/// SimHashes of the pages of every parsed segment (newest segment wins): all of
/// them, or with `only = Some((n, parts))` those of partitions `parts` of `n` (a
/// partition task's: a partition's pages are in the same partition of every segment).
/// Near-duplicate verdicts are written into the crawldb: what is read is checked in
/// full against its manifest.
fn simhashes(dir: &CrawlDir, only: Option<(usize, &[usize])>) -> Result<HashMap<String, u64>> {
    let mut out = HashMap::new();
    for seg in dir.segments()? {
        if !seg.has(SegmentDataset::ParseData) {
            continue;
        }
        let data = seg.dataset(SegmentDataset::ParseData);
        let files = match only {
            None => {
                crate::store::integrity::verify(&data, crate::store::integrity::Check::Checksums)?
            }
            Some((n, parts)) => {
                seg.check_partitions(n)?;
                let (theirs, ours) = (seg.meta()?.partitioner(), dir.crawldb_meta()?.partitioner());
                if theirs != ours {
                    return Err(crate::error::Error::crawl_dir(
                        seg.path(),
                        format!(
                            "the segment is partitioned as {theirs} and the crawldb as {ours}: run `repartition` first"
                        ),
                    ));
                }
                let mut files = Vec::new();
                for &i in parts {
                    files.extend(parquet::partition_files(&data, i)?);
                }
                crate::store::integrity::verify_files(&data, &files)?;
                files
            }
        };
        for part in files {
            for rows in parquet::read_part::<ParseDataRecord>(&part)? {
                for r in rows? {
                    if let Some(h) = r.simhash {
                        out.insert(r.url, h);
                    }
                }
            }
        }
    }
    Ok(out)
}

fn is_candidate(d: &CrawlDatum) -> bool {
    matches!(
        d.status,
        DbStatus::DbFetched | DbStatus::DbNotmodified | DbStatus::DbDuplicate
    ) && d.signature.as_deref().is_some_and(|s| !s.is_empty())
}

/// Runs dedup on the crawl directory of `ctx` (which must hold a crawldb), as
/// [`crate::stage::execute`] splits it: one process (the signatures pass, one rewrite task
/// over every partition and the commit, under the crawldb lock held throughout), a
/// task of a job (`opts.pass`; no lock) or a job's commit.
pub fn run(ctx: &StageCtx, opts: &DedupOpts) -> Result<DedupReport> {
    let dir = ctx.open_existing()?;
    let pass = ctx.pass(
        "dedup",
        opts.pass,
        "--pass keys, groups, resolve (one task, --partitions all) and rewrite, or --pass signatures (one task, --partitions all) and rewrite",
    )?;
    crate::stage::execute(ctx, Guard::CrawlDb(Verify::Whole), || {
        Ok(Dedup {
            ctx,
            opts,
            dir: &dir,
            n: dir.crawldb_meta()?.partitions,
            pass,
        })
    })
}

/// The dedup stage as the executor runs it ([`crate::stage::execute`]): a
/// one-process run's task does both passes.
struct Dedup<'a> {
    ctx: &'a StageCtx,
    opts: &'a DedupOpts,
    dir: &'a CrawlDir,
    n: usize,
    pass: Option<DedupPass>,
}

impl Partitioned for Dedup<'_> {
    type Out = DedupReport;
    const NAME: &'static str = "dedup";

    fn partitions(&self) -> usize {
        self.n
    }

    fn task(&mut self, job: &Job, partitions: &PartitionSet, attempt: &str) -> Result<DedupReport> {
        let (ctx, n) = (self.ctx, self.n);
        let whole = ctx.is_whole();
        let mut sum = DedupReport::default();
        let parts: Vec<usize> = partitions.iter().collect();
        let one_task = |what: &str| -> Result<()> {
            if partitions.is_all(n) {
                return Ok(());
            }
            Err(crate::error::Error::input(
                format!("--partitions {partitions}"),
                format!(
                    "the {what} pass decides over the whole crawldb: run it as one task with --partitions all"
                ),
            ))
        };
        match self.pass {
            Some(DedupPass::Keys) => {
                let w = job
                    .shuffle(tasks::KEYS)
                    .attempt_writer(partitions, attempt)?;
                let out = w.dataset(tasks::KEYS)?;
                let r = tasks::keys(self.dir, self.opts, n, &parts, &out)?;
                crate::crawldb::finish_attempt(w, &r)?;
                return Ok(DedupReport {
                    rows: r.rows,
                    candidates: r.candidates,
                    ..DedupReport::default()
                });
            }
            Some(DedupPass::Groups) => {
                let w = job
                    .shuffle(tasks::GROUPS)
                    .attempt_writer(partitions, attempt)?;
                let r = tasks::groups(self.dir, job, self.opts, n, &parts, w.path())?;
                crate::crawldb::finish_attempt(w, &r)?;
                return Ok(DedupReport {
                    groups: r.groups,
                    ..DedupReport::default()
                });
            }
            Some(DedupPass::Resolve) => {
                one_task("resolve")?;
                let w = job
                    .pass(tasks::RESOLVE)
                    .attempt_writer(partitions, attempt)?;
                let r = tasks::resolve(self.dir, job, self.opts, n, w.path())?;
                crate::crawldb::finish_attempt(w, &r)?;
                return Ok(DedupReport {
                    groups: r.groups,
                    near_pairs: r.near_pairs,
                    ..DedupReport::default()
                });
            }
            _ => {}
        }
        if whole || self.pass == Some(DedupPass::Signatures) {
            one_task("signatures")?;
            let w = job.pass(SIGNATURES).attempt_writer(partitions, attempt)?;
            let sig = signatures_task(ctx, self.opts, w.path())?;
            crate::crawldb::finish_attempt(w, &sig)?;
            sum = sig.summary();
        }
        if whole || self.pass == Some(DedupPass::Rewrite) {
            let decided = Decided::of(job, self.opts, n, &parts)?;
            let w = job.pass(REWRITE).attempt_writer(partitions, attempt)?;
            let out = w.dataset(crate::crawldb::TASK_DATASET)?;
            let r = rewrite_task(ctx, &decided, &parts, &out)?;
            crate::crawldb::finish_attempt(w, &r)?;
            sum.duplicates = r.duplicates;
            sum.restored = r.restored;
        }
        Ok(sum)
    }

    fn commit(&mut self, job: &Job) -> Result<DedupReport> {
        let decided = Decided::of(job, self.opts, self.n, &[])?;
        commit(
            self.dir,
            &decided,
            &crate::crawldb::chosen_parts(&job.pass(REWRITE), self.n)?,
        )
    }
}

/// The duplicate decision of a job, as a rewrite task and the commit read it: from
/// its signatures attempt (one task), or from its keys, groups and resolve passes
/// ([`tasks`]).
enum Decided {
    /// The signatures pass: its attempt and report.
    Signatures(PathBuf, SignaturesReport),
    /// The partitioned passes.
    Tasks(tasks::Decision),
}

impl Decided {
    /// The decision of `job` (of `n` partitions), with the verdicts of partitions
    /// `want` at hand.
    fn of(job: &Job, opts: &DedupOpts, n: usize, want: &[usize]) -> Result<Decided> {
        if job.pass(SIGNATURES).finished()?.is_empty()
            && !job.shuffle(tasks::KEYS).finished()?.is_empty()
        {
            return Ok(Decided::Tasks(tasks::decision(job, opts, n, want)?));
        }
        let (dir, sig) = signatures_of(job, n)?;
        Ok(Decided::Signatures(dir, sig))
    }

    /// The crawldb version the decision read.
    fn crawldb_version(&self) -> &str {
        match self {
            Decided::Signatures(_, s) => &s.crawldb_version,
            Decided::Tasks(d) => &d.crawldb_version,
        }
    }

    /// The counts of the decision (rows, candidates, groups, near pairs).
    fn summary(&self) -> DedupReport {
        match self {
            Decided::Signatures(_, s) => s.summary(),
            Decided::Tasks(d) => d.summary.clone(),
        }
    }

    /// Every attempt the decision came from, with the crawldb version it read.
    fn attempts(&self) -> Vec<(PathBuf, String)> {
        match self {
            Decided::Signatures(p, s) => vec![(p.clone(), s.crawldb_version.clone())],
            Decided::Tasks(d) => d.attempts.clone(),
        }
    }

    /// Partition `i`'s verdicts: each candidate URL in a duplicate group and whether
    /// it is a duplicate (a candidate missing is alone in its group).
    fn verdicts(&self, i: usize) -> Result<HashMap<String, bool>> {
        match self {
            Decided::Signatures(dir, _) => {
                let file = verdict_file(dir, i);
                let bytes = std::fs::read(&file).map_err(|e| crate::error::Error::io(&file, e))?;
                let (v, _): (Vec<(String, bool)>, usize) =
                    bincode::serde::decode_from_slice(&bytes, bincode::config::standard())
                        .map_err(|e| {
                            crate::error::Error::crawl_dir(
                                &file,
                                format!("cannot decode verdicts: {e}"),
                            )
                        })?;
                Ok(v.into_iter().collect())
            }
            Decided::Tasks(d) => d.verdicts(i),
        }
    }
}

/// The finished signatures attempt of `job` (covering every partition of `n`).
fn signatures_of(job: &Job, n: usize) -> Result<(PathBuf, SignaturesReport)> {
    if job.pass(SIGNATURES).finished()?.is_empty() {
        return Err(crate::error::Error::crawl_dir(
            job.dir(),
            "no finished decision: run --pass keys, groups and resolve (or --pass signatures) first",
        ));
    }
    let chosen = job.pass(SIGNATURES).choose(n)?;
    let a = chosen.first().ok_or_else(|| {
        crate::error::Error::crawl_dir(
            job.dir(),
            "no finished decision: run --pass keys, groups and resolve (or --pass signatures) first",
        )
    })?;
    Ok((a.path().to_path_buf(), a.report()?))
}

/// What the signatures pass of a dedup job decided: its counts and the crawldb
/// version it read. Its attempt holds `verdicts-NNNNN.bin` per partition: every
/// candidate URL of that partition with whether it is a duplicate.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SignaturesReport {
    /// The crawldb version read ([`crate::crawldb::version_id`]).
    pub crawldb_version: String,
    /// Its partition count.
    pub partitions: usize,
    /// Rows read.
    pub rows: u64,
    /// Candidate rows.
    pub candidates: u64,
    /// Groups with more than one member.
    pub groups: u64,
    /// Pairs joined by SimHash.
    pub near_pairs: u64,
}

impl SignaturesReport {
    /// The stage's report of this pass alone.
    pub fn summary(&self) -> DedupReport {
        DedupReport {
            rows: self.rows,
            candidates: self.candidates,
            groups: self.groups,
            near_pairs: self.near_pairs,
            ..DedupReport::default()
        }
    }
}

/// What a dedup rewrite task did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RewriteReport {
    /// The crawldb version it rewrote.
    pub crawldb_version: String,
    /// Its partitions.
    pub partitions: Vec<usize>,
    /// Rows marked `db_duplicate`.
    pub duplicates: u64,
    /// Former duplicates restored.
    pub restored: u64,
}

fn verdict_file(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("verdicts-{i:05}.bin"))
}

/// The signatures pass of a dedup job (one task, every partition: duplicates are
/// global): groups the candidates and writes each partition's verdicts into `out`.
pub fn signatures_task(ctx: &StageCtx, opts: &DedupOpts, out: &Path) -> Result<SignaturesReport> {
    let dir = ctx.open_existing()?;
    crate::crawldb::verify_for_rewrite(&dir)?;
    let current = dir.crawldb_current();
    let need = disk::dataset_bytes(&current)?;
    disk::ensure_space(
        &dir.crawldb(),
        disk::with_headroom(need),
        "dedup",
        &format!("the new crawldb version (about {})", disk::human(need)),
    )?;
    let meta = dir.crawldb_meta()?;
    let version = crate::crawldb::version_id(&dir)?;
    let parts = parquet::part_files(&current)?;
    let sims = if opts.near {
        simhashes(&dir, None)?
    } else {
        HashMap::new()
    };
    let mut sum = DedupReport::default();
    let cands = candidates(&parts, &sims, &mut sum)?;
    let n = meta.partitions;
    let per = verdicts(cands, n, opts, &mut sum);
    std::fs::create_dir_all(out).map_err(|e| crate::error::Error::io(out, e))?;
    for (i, mut v) in per.into_iter().enumerate() {
        v.sort_unstable();
        let bytes =
            bincode::serde::encode_to_vec(&v, bincode::config::standard()).map_err(|e| {
                crate::error::Error::crawl_dir(out, format!("cannot encode verdicts: {e}"))
            })?;
        parquet::write_atomic(&verdict_file(out, i), &bytes)?;
    }
    Ok(SignaturesReport {
        crawldb_version: version,
        partitions: n,
        rows: sum.rows,
        candidates: sum.candidates,
        groups: sum.groups,
        near_pairs: sum.near_pairs,
    })
}

/// A dedup rewrite task: rewrites crawldb parts `parts` into `out` with the verdicts
/// of the job's decision.
fn rewrite_task(
    ctx: &StageCtx,
    decided: &Decided,
    parts: &[usize],
    out: &Path,
) -> Result<RewriteReport> {
    let dir = ctx.open_existing()?;
    let version = crate::crawldb::version_id(&dir)?;
    for (attempt, read) in decided.attempts() {
        crate::crawldb::check_version(&dir, &attempt, &read, &version)?;
    }
    let partitions = dir.crawldb_meta()?.partitions;
    std::fs::create_dir_all(out).map_err(|e| crate::error::Error::io(out, e))?;
    let mut r = RewriteReport {
        crawldb_version: version,
        partitions: parts.to_vec(),
        ..RewriteReport::default()
    };
    for &i in parts {
        if i >= partitions {
            return Err(crate::error::Error::crawl_dir(
                dir.crawldb(),
                format!("partition {i} does not exist: the crawldb has {partitions} partitions"),
            ));
        }
        let verdict = decided.verdicts(i)?;
        let part = crate::crawldb::current_part(&dir, i);
        let (d, rs) = run_partition(&part, &out.join(parquet::part_name(i)), &verdict)?;
        r.duplicates += d;
        r.restored += rs;
    }
    Ok(r)
}

/// The commit of a dedup job, under the crawldb lock: checks the version the tasks
/// read is current, links the rewritten parts (`(dir, report)`, every partition
/// once) into a new version and installs it.
fn commit(
    dir: &CrawlDir,
    decided: &Decided,
    tasks: &[(PathBuf, RewriteReport)],
) -> Result<DedupReport> {
    let version = crate::crawldb::version_id(dir)?;
    let mut meta = dir.crawldb_meta()?;
    crate::crawldb::check_version(
        dir,
        dir.crawldb().as_path(),
        decided.crawldb_version(),
        &version,
    )?;
    let mut sum = decided.summary();
    for (path, t) in tasks {
        crate::crawldb::check_version(dir, path, &t.crawldb_version, &version)?;
        sum.duplicates += t.duplicates;
        sum.restored += t.restored;
    }
    let parts: Vec<(&Path, &[usize])> = tasks
        .iter()
        .map(|(p, t)| (p.as_path(), t.partitions.as_slice()))
        .collect();
    crate::crawldb::install_parts(dir, &parts, &mut meta, "dedup")?;
    Ok(sum)
}

/// Pass 1: the candidate rows of every crawldb part (with their SimHash from `sims`);
/// counts rows and candidates into `sum`.
fn candidates(
    parts: &[PathBuf],
    sims: &HashMap<String, u64>,
    sum: &mut DedupReport,
) -> Result<Vec<Cand>> {
    let mut cands: Vec<Cand> = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        for rows in parquet::read_part::<CrawlDatum>(part)? {
            for d in rows? {
                sum.rows += 1;
                if is_candidate(&d) {
                    let simhash = sims.get(&d.url).copied();
                    cands.push(Cand {
                        part: i,
                        signature: d.signature.clone().unwrap_or_default(),
                        url: d.url,
                        score: d.score,
                        simhash,
                    });
                }
            }
        }
    }
    sum.candidates = cands.len() as u64;
    Ok(cands)
}

/// Groups the candidates (same signature; with `opts.near`, SimHashes within
/// `opts.max_distance` bits) and returns, per URL, whether it is a duplicate (not its
/// group's winner), per crawldb partition (of `n`). Counts groups and near pairs
/// into `sum`.
fn verdicts(
    cands: Vec<Cand>,
    n: usize,
    opts: &DedupOpts,
    sum: &mut DedupReport,
) -> Vec<Vec<(String, bool)>> {
    let mut groups = Groups::new(cands.len());
    let mut by_sig: HashMap<&str, usize> = HashMap::new();
    for (i, c) in cands.iter().enumerate() {
        match by_sig.get(c.signature.as_str()) {
            Some(&f) => {
                groups.union(f, i);
            }
            None => {
                by_sig.insert(&c.signature, i);
            }
        }
    }
    if opts.near {
        let with: Vec<usize> = (0..cands.len())
            .filter(|&i| cands[i].simhash.is_some())
            .collect();
        let hashes: Vec<u64> = with
            .iter()
            .map(|&i| cands[i].simhash.unwrap_or(0))
            .collect();
        for (a, b) in near_pairs(&hashes, opts.max_distance) {
            if groups.union(with[a], with[b]) {
                sum.near_pairs += 1;
            }
        }
    }
    // Winner per group: highest score, then shortest URL, then smallest URL.
    let better = |a: &Cand, b: &Cand| wins((a.score, &a.url), (b.score, &b.url));
    let mut winner: HashMap<usize, usize> = HashMap::new();
    let mut size: HashMap<usize, usize> = HashMap::new();
    for i in 0..cands.len() {
        let r = groups.find(i);
        *size.entry(r).or_default() += 1;
        let w = winner.entry(r).or_insert(i);
        if better(&cands[i], &cands[*w]) {
            *w = i;
        }
    }
    sum.groups = size.values().filter(|&&s| s > 1).count() as u64;
    let mut verdict: Vec<Vec<(String, bool)>> = (0..n).map(|_| Vec::new()).collect();
    for (i, c) in cands.into_iter().enumerate() {
        let r = groups.find(i);
        let dup = winner.get(&r).is_some_and(|&w| w != i);
        if let Some(v) = verdict.get_mut(c.part) {
            v.push((c.url, dup));
        }
    }
    verdict
}

/// Pass 2 for one crawldb part (`part`): copies it to `dest` in the same order,
/// marking the rows `verdict` calls duplicates `db_duplicate` and restoring former
/// duplicates that won their group. Returns (duplicates, restored).
fn run_partition(part: &Path, dest: &Path, verdict: &HashMap<String, bool>) -> Result<(u64, u64)> {
    let (mut duplicates, mut restored) = (0u64, 0u64);
    let mut w = PartWriter::<CrawlDatum>::create(dest)?;
    for rows in parquet::read_part::<CrawlDatum>(part)? {
        for mut d in rows? {
            if is_candidate(&d) {
                match verdict.get(&d.url) {
                    Some(true) => {
                        d.status = DbStatus::DbDuplicate;
                        duplicates += 1;
                    }
                    // Not a duplicate: its group's winner, or alone (no verdict).
                    Some(false) | None if d.status == DbStatus::DbDuplicate => {
                        d.status = DbStatus::DbFetched;
                        d.metadata
                            .insert(RESTORED_KEY.into(), crate::datum::now_millis().to_string());
                        restored += 1;
                    }
                    _ => {}
                }
            }
            w.push(d)?;
        }
    }
    w.finish()?;
    Ok((duplicates, restored))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_64_bits() {
        for k in [0, 1, 3, 5, 7] {
            let b = blocks(k);
            assert_eq!(b.len() as u32, k + 1);
            assert_eq!(b.iter().map(|x| x.1).sum::<u32>(), 64);
        }
    }

    #[test]
    fn permuted_tables_find_exactly_the_close_pairs() {
        // Pseudo-random hashes plus planted near neighbours.
        let mut hashes: Vec<u64> = (0..2000u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17) ^ 0xDEAD_BEEF)
            .collect();
        hashes.push(hashes[5] ^ 0b1011); // 3 bits from #5
        hashes.push(hashes[7] ^ (1 << 63) ^ (1 << 40)); // 2 bits from #7
        hashes.push(hashes[9] ^ 0b1111); // 4 bits from #9: not a pair at k=3
        hashes.push(hashes[11]); // identical to #11
        let got: HashSet<(usize, usize)> = near_pairs(&hashes, 3).into_iter().collect();
        let mut want = HashSet::new();
        for i in 0..hashes.len() {
            for j in i + 1..hashes.len() {
                if (hashes[i] ^ hashes[j]).count_ones() <= 3 {
                    want.insert((i, j));
                }
            }
        }
        assert!(
            want.contains(&(5, 2000)) && want.contains(&(7, 2001)) && want.contains(&(11, 2003))
        );
        assert!(!want.contains(&(9, 2002)));
        assert_eq!(got, want, "same pairs as all-pairs comparison");
    }
}
