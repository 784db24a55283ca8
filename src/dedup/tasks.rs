//! dedup as partition tasks: a job's `--pass keys`, `groups`, `resolve` and `rewrite`,
//! so that no task holds the candidates of the whole crawl (docs/tasks-crawldb.md).
//!
//! - **keys**, per partition set: every candidate of the set's crawldb parts (with
//!   `--near`, its SimHash from the same partitions of the segments' `parse_data`,
//!   the newest segment winning) is routed to bucket `hash(signature) % n` and, with
//!   `--near`, to bucket `hash(j, block j of its SimHash) % n` for each of the `k + 1`
//!   blocks of the permuted-table method. A bucket receives a candidate once, with
//!   every route that brought it (`part-0000b.parquet` of the attempt's `keys/`).
//! - **groups**, per bucket set (buckets are numbered as partitions): each bucket's
//!   candidates grouped by signature and, with `--near`, paired when they share a
//!   block and their SimHashes differ in at most `k` bits. Without `--near` a group
//!   lies in one bucket (its signature's), so the bucket decides it: the verdicts of
//!   its members go back to their partitions (`verdicts/part-0000i.parquet`). With
//!   `--near` groups join across buckets: the bucket writes its edges (a signature
//!   group as a star, each near pair) for resolve.
//! - **resolve**, one task: with `--near`, the union of every bucket's edges into
//!   groups, each group's winner, the verdicts routed to partitions. It holds the
//!   candidates that are in some edge, not the crawl. Without `--near` it has nothing
//!   to do.
//! - **rewrite**, per partition set: as one-process dedup, with its partitions'
//!   verdicts; a candidate without a verdict is alone in its group (it wins: a former
//!   duplicate is restored).
//!
//! Winners are picked by the one-process rule ([`super::wins`]) and groups are the
//! same connected groups, so the verdicts equal one-process dedup's.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use serde::{Deserialize, Serialize};

use super::{DedupOpts, DedupReport, Groups, blocks, is_candidate, simhashes, wins};
use crate::datum::CrawlDatum;
use crate::error::{Error, Result};
use crate::store::integrity;
use crate::store::jobs::{FinishedAttempt, Job};
use crate::store::layout::CrawlDir;
use crate::store::parquet::{self, PartWriter, Record};
use crate::store::partition::bucket_of;

/// The shuffle passes and the resolve pass inside a dedup job.
pub(super) const KEYS: &str = "keys";
pub(super) const GROUPS: &str = "groups";
pub(super) const RESOLVE: &str = "resolve";
/// The datasets of their attempts.
const EDGES: &str = "edges";
const VERDICTS: &str = "verdicts";

/// A candidate as the keys pass routes it to a bucket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyRow {
    /// The page.
    pub url: String,
    /// Its crawldb partition.
    pub partition: u32,
    /// Its score.
    pub score: f64,
    /// Its content signature.
    pub signature: String,
    /// Its SimHash (with `--near`, when a segment parsed it).
    pub simhash: Option<u64>,
    /// It came to this bucket by its signature.
    pub by_signature: bool,
    /// Bit `j`: it came to this bucket by block `j` of its SimHash.
    pub by_blocks: u64,
}

impl Record for KeyRow {
    fn schema() -> SchemaRef {
        static S: OnceLock<SchemaRef> = OnceLock::new();
        S.get_or_init(|| {
            Arc::new(Schema::new(vec![
                Field::new("url", DataType::Utf8, false),
                Field::new("partition", DataType::UInt32, false),
                Field::new("score", DataType::Float64, false),
                Field::new("signature", DataType::Utf8, false),
                Field::new("simhash", DataType::UInt64, true),
                Field::new("by_signature", DataType::Boolean, false),
                Field::new("by_blocks", DataType::UInt64, false),
            ]))
        })
        .clone()
    }
}

/// Two candidates joined by a bucket (with `--near`): the same signature, or
/// SimHashes within the distance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EdgeRow {
    /// One page.
    pub a: String,
    /// Its crawldb partition.
    pub a_partition: u32,
    /// Its score.
    pub a_score: f64,
    /// The other page.
    pub b: String,
    /// Its crawldb partition.
    pub b_partition: u32,
    /// Its score.
    pub b_score: f64,
    /// Joined by SimHash (else by signature).
    pub near: bool,
}

impl Record for EdgeRow {
    fn schema() -> SchemaRef {
        static S: OnceLock<SchemaRef> = OnceLock::new();
        S.get_or_init(|| {
            Arc::new(Schema::new(vec![
                Field::new("a", DataType::Utf8, false),
                Field::new("a_partition", DataType::UInt32, false),
                Field::new("a_score", DataType::Float64, false),
                Field::new("b", DataType::Utf8, false),
                Field::new("b_partition", DataType::UInt32, false),
                Field::new("b_score", DataType::Float64, false),
                Field::new("near", DataType::Boolean, false),
            ]))
        })
        .clone()
    }
}

/// A member of a duplicate group and whether it is a duplicate (not the winner).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerdictRow {
    /// The page.
    pub url: String,
    /// Not its group's winner.
    pub duplicate: bool,
}

impl Record for VerdictRow {
    fn schema() -> SchemaRef {
        static S: OnceLock<SchemaRef> = OnceLock::new();
        S.get_or_init(|| {
            Arc::new(Schema::new(vec![
                Field::new("url", DataType::Utf8, false),
                Field::new("duplicate", DataType::Boolean, false),
            ]))
        })
        .clone()
    }
}

/// What a keys task did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KeysReport {
    /// The crawldb version it read.
    pub crawldb_version: String,
    /// Its partitions.
    pub partitions: Vec<usize>,
    /// `--near` it routed by.
    pub near: bool,
    /// `--distance` it routed by.
    pub max_distance: u32,
    /// Rows read.
    pub rows: u64,
    /// Candidates among them.
    pub candidates: u64,
    /// Rows routed (a candidate goes to up to `k + 2` buckets).
    pub routed: u64,
}

/// What a groups task did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroupsReport {
    /// The crawldb version its keys read.
    pub crawldb_version: String,
    /// Its buckets.
    pub buckets: Vec<usize>,
    /// Candidates received.
    pub received: u64,
    /// Without `--near`: its duplicate groups (more than one member).
    pub groups: u64,
    /// With `--near`: the edges it wrote.
    pub edges: u64,
}

/// What the resolve task did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResolveReport {
    /// The crawldb version its keys read.
    pub crawldb_version: String,
    /// Whether there was anything to resolve (`--near`).
    pub near: bool,
    /// Duplicate groups.
    pub groups: u64,
    /// Near pairs that joined two groups.
    pub near_pairs: u64,
    /// Candidates in some edge.
    pub nodes: u64,
}

fn signature_bucket(signature: &str, n: usize) -> usize {
    let mut key = Vec::with_capacity(signature.len() + 1);
    key.push(b's');
    key.extend_from_slice(signature.as_bytes());
    bucket_of(&key, n)
}

/// Block `j` (`(shift, width)`) of `hash`.
fn block_value(hash: u64, (shift, width): (u32, u32)) -> u64 {
    let mask = if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    (hash >> shift) & mask
}

fn block_bucket(j: usize, value: u64, n: usize) -> usize {
    let mut key = [0u8; 10];
    key[0] = b'b';
    key[1] = j as u8;
    key[2..].copy_from_slice(&value.to_le_bytes());
    bucket_of(&key, n)
}

/// The keys pass over crawldb partitions `parts` (of `n`): routes their candidates
/// into `out` (the attempt's `keys/`), one part per bucket that receives any.
pub fn keys(
    dir: &CrawlDir,
    opts: &DedupOpts,
    n: usize,
    parts: &[usize],
    out: &Path,
) -> Result<KeysReport> {
    let version = crate::crawldb::version_id(dir)?;
    let current = dir.crawldb_current();
    let files: Vec<PathBuf> = parts
        .iter()
        .map(|&i| crate::crawldb::current_part(dir, i))
        .collect();
    integrity::verify_files(&current, &files)?;
    let sims = if opts.near {
        simhashes(dir, Some((n, parts)))?
    } else {
        HashMap::new()
    };
    let blocks = blocks(opts.max_distance);
    let mut r = KeysReport {
        crawldb_version: version,
        partitions: parts.to_vec(),
        near: opts.near,
        max_distance: opts.max_distance,
        ..KeysReport::default()
    };
    let mut routed: BTreeMap<usize, Vec<KeyRow>> = BTreeMap::new();
    for (&i, file) in parts.iter().zip(&files) {
        for rows in parquet::read_part::<CrawlDatum>(file)? {
            for d in rows? {
                r.rows += 1;
                if !is_candidate(&d) {
                    continue;
                }
                r.candidates += 1;
                let signature = d.signature.clone().unwrap_or_default();
                let simhash = sims.get(&d.url).copied();
                // Each bucket once, with every route that brought it there.
                let mut to: Vec<(usize, bool, u64)> =
                    vec![(signature_bucket(&signature, n), true, 0)];
                if let Some(h) = simhash {
                    for (j, &b) in blocks.iter().enumerate() {
                        let k = block_bucket(j, block_value(h, b), n);
                        match to.iter_mut().find(|t| t.0 == k) {
                            Some(t) => t.2 |= 1 << j,
                            None => to.push((k, false, 1 << j)),
                        }
                    }
                }
                for (k, by_signature, by_blocks) in to {
                    r.routed += 1;
                    routed.entry(k).or_default().push(KeyRow {
                        url: d.url.clone(),
                        partition: i as u32,
                        score: d.score,
                        signature: signature.clone(),
                        simhash,
                        by_signature,
                        by_blocks,
                    });
                }
            }
        }
    }
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    for (k, rows) in routed {
        let mut w = PartWriter::<KeyRow>::create(&out.join(parquet::part_name(k)))?;
        for row in rows {
            w.push(row)?;
        }
        w.finish()?;
    }
    Ok(r)
}

/// The finished keys attempts of `job` (covering every partition of `n`) and what
/// they routed by, checked to agree with each other.
fn keys_of(job: &Job, n: usize) -> Result<(Vec<FinishedAttempt>, KeysReport)> {
    let keys = job.shuffle(KEYS);
    let none = || {
        Error::crawl_dir(
            job.dir(),
            "no finished keys attempt: run the keys tasks first (--pass keys)",
        )
    };
    if keys.finished()?.is_empty() {
        return Err(none());
    }
    let chosen = keys.choose(n)?;
    let mut sum: Option<KeysReport> = None;
    for a in &chosen {
        let r: KeysReport = a.report()?;
        match &mut sum {
            None => sum = Some(r),
            Some(s) => {
                if (s.near, s.max_distance, &s.crawldb_version)
                    != (r.near, r.max_distance, &r.crawldb_version)
                {
                    return Err(Error::crawl_dir(
                        a.path(),
                        "the keys tasks of this job read different crawldb versions or ran with different --near/--distance: run the job again under a new --job id",
                    ));
                }
                s.rows += r.rows;
                s.candidates += r.candidates;
                s.routed += r.routed;
                s.partitions.extend(r.partitions);
            }
        }
    }
    let sum = sum.ok_or_else(none)?;
    Ok((chosen, sum))
}

/// Refuses a later pass run with other `--near`/`--distance` than the keys pass.
fn same_opts(job: &Job, keys: &KeysReport, opts: &DedupOpts, pass: &str) -> Result<()> {
    if keys.near != opts.near || (opts.near && keys.max_distance != opts.max_distance) {
        return Err(Error::input(
            format!("--pass {pass}"),
            format!(
                "job {} routed its keys with --near {} --distance {}: run every pass of a job with the same --near and --distance",
                job.id(),
                keys.near,
                keys.max_distance
            ),
        ));
    }
    Ok(())
}

/// The parts of dataset `name` of `attempt` for the indices `wanted`, checked
/// against the attempt's manifest.
fn parts_for(attempt: &FinishedAttempt, name: &str, wanted: &[usize]) -> Result<Vec<PathBuf>> {
    let files: Vec<PathBuf> = attempt
        .parts(name)?
        .into_iter()
        .filter(|p| parquet::part_index(p).is_some_and(|i| wanted.contains(&i)))
        .collect();
    if !files.is_empty() {
        integrity::verify_files(&attempt.dataset(name), &files)?;
    }
    Ok(files)
}

/// The groups pass over buckets `buckets` (of `n`): reads their candidates from
/// every keys attempt of `job`; writes the verdicts of their groups into `out`'s
/// `verdicts/` (without `--near`) or their edges into `out`'s `edges/`.
pub fn groups(
    dir: &CrawlDir,
    job: &Job,
    opts: &DedupOpts,
    n: usize,
    buckets: &[usize],
    out: &Path,
) -> Result<GroupsReport> {
    let (keys, k) = keys_of(job, n)?;
    same_opts(job, &k, opts, GROUPS)?;
    let version = crate::crawldb::version_id(dir)?;
    crate::crawldb::check_version(dir, job.dir(), &k.crawldb_version, &version)?;
    let mut r = GroupsReport {
        crawldb_version: version,
        buckets: buckets.to_vec(),
        ..GroupsReport::default()
    };
    let mut verdicts: BTreeMap<u32, Vec<VerdictRow>> = BTreeMap::new();
    let mut edges: Vec<EdgeRow> = Vec::new();
    let blocks = blocks(k.max_distance);
    // Every keys attempt's parts of these buckets, listed and checked once.
    let mut files: Vec<PathBuf> = Vec::new();
    for a in &keys {
        files.extend(parts_for(a, KEYS, buckets)?);
    }
    for &b in buckets {
        let mut rows: Vec<KeyRow> = Vec::new();
        for f in files.iter().filter(|f| parquet::part_index(f) == Some(b)) {
            rows.extend(parquet::read_part_all::<KeyRow>(f)?);
        }
        r.received += rows.len() as u64;
        // Candidates with the same signature: a group of this bucket.
        let mut by_sig: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, row) in rows.iter().enumerate() {
            if row.by_signature {
                by_sig.entry(row.signature.as_str()).or_default().push(i);
            }
        }
        let edge = |x: &KeyRow, y: &KeyRow, near: bool| EdgeRow {
            a: x.url.clone(),
            a_partition: x.partition,
            a_score: x.score,
            b: y.url.clone(),
            b_partition: y.partition,
            b_score: y.score,
            near,
        };
        for members in by_sig.values().filter(|m| m.len() > 1) {
            if k.near {
                for &m in &members[1..] {
                    edges.push(edge(&rows[members[0]], &rows[m], false));
                }
                continue;
            }
            r.groups += 1;
            let mut w = members[0];
            for &m in &members[1..] {
                if wins((rows[m].score, &rows[m].url), (rows[w].score, &rows[w].url)) {
                    w = m;
                }
            }
            for &m in members {
                verdicts
                    .entry(rows[m].partition)
                    .or_default()
                    .push(VerdictRow {
                        url: rows[m].url.clone(),
                        duplicate: m != w,
                    });
            }
        }
        if k.near {
            // The permuted tables: pairs among candidates sharing block j.
            for (j, &blk) in blocks.iter().enumerate() {
                let mut table: Vec<(u64, usize)> = rows
                    .iter()
                    .enumerate()
                    .filter(|(_, row)| row.by_blocks & (1 << j) != 0)
                    .filter_map(|(i, row)| row.simhash.map(|h| (block_value(h, blk), i)))
                    .collect();
                table.sort_unstable();
                for run in table.chunk_by(|x, y| x.0 == y.0) {
                    // Identical SimHashes join their first (in block 0, which they
                    // always share); distinct ones are compared once, in the first
                    // block they share: every pair is written once in all buckets.
                    let mut distinct: Vec<(u64, usize)> = Vec::new();
                    let mut first: HashMap<u64, usize> = HashMap::new();
                    for &(_, i) in run {
                        let Some(h) = rows[i].simhash else { continue };
                        match first.get(&h) {
                            Some(&f) => {
                                if j == 0 {
                                    edges.push(edge(&rows[f], &rows[i], true));
                                }
                            }
                            None => {
                                first.insert(h, i);
                                distinct.push((h, i));
                            }
                        }
                    }
                    for (p, &(hx, x)) in distinct.iter().enumerate() {
                        for &(hy, y) in &distinct[p + 1..] {
                            let shared_before = blocks[..j]
                                .iter()
                                .any(|&b| block_value(hx, b) == block_value(hy, b));
                            if (hx ^ hy).count_ones() <= k.max_distance && !shared_before {
                                edges.push(edge(&rows[x], &rows[y], true));
                            }
                        }
                    }
                }
            }
        }
    }
    if k.near {
        r.edges = edges.len() as u64;
        let d = out.join(EDGES);
        std::fs::create_dir_all(&d).map_err(|e| Error::io(&d, e))?;
        let first = buckets.first().copied().unwrap_or(0);
        let mut w = PartWriter::<EdgeRow>::create(&d.join(parquet::part_name(first)))?;
        for e in edges {
            w.push(e)?;
        }
        w.finish()?;
    } else {
        write_verdicts(&out.join(VERDICTS), verdicts)?;
    }
    Ok(r)
}

/// Writes each partition's verdicts as `part-0000i.parquet` of `dir`.
fn write_verdicts(dir: &Path, verdicts: BTreeMap<u32, Vec<VerdictRow>>) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    for (i, rows) in verdicts {
        let mut w = PartWriter::<VerdictRow>::create(&dir.join(parquet::part_name(i as usize)))?;
        for v in rows {
            w.push(v)?;
        }
        w.finish()?;
    }
    Ok(())
}

/// The finished groups attempts of `job` (covering every bucket of `n`) and their
/// reports.
fn groups_of(job: &Job, n: usize) -> Result<Vec<(FinishedAttempt, GroupsReport)>> {
    let groups = job.shuffle(GROUPS);
    if groups.finished()?.is_empty() {
        return Err(Error::crawl_dir(
            job.dir(),
            "no finished groups attempt: run the groups tasks first (--pass groups)",
        ));
    }
    let chosen = groups.choose(n)?;
    chosen
        .into_iter()
        .map(|a| {
            let r = a.report()?;
            Ok((a, r))
        })
        .collect()
}

/// The resolve pass (one task): with `--near`, the groups the edges of every groups
/// attempt make, and their verdicts per partition in `out`'s `verdicts/`.
pub fn resolve(
    dir: &CrawlDir,
    job: &Job,
    opts: &DedupOpts,
    n: usize,
    out: &Path,
) -> Result<ResolveReport> {
    let (_, k) = keys_of(job, n)?;
    same_opts(job, &k, opts, RESOLVE)?;
    let version = crate::crawldb::version_id(dir)?;
    crate::crawldb::check_version(dir, job.dir(), &k.crawldb_version, &version)?;
    let groups = groups_of(job, n)?;
    let mut r = ResolveReport {
        crawldb_version: version,
        near: k.near,
        ..ResolveReport::default()
    };
    if !k.near {
        return Ok(r);
    }
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut nodes: Vec<(String, u32, f64)> = Vec::new();
    let mut sig_edges: Vec<(usize, usize)> = Vec::new();
    let mut near_edges: Vec<(usize, usize)> = Vec::new();
    let mut id = |url: String, partition: u32, score: f64| -> usize {
        if let Some(&i) = index.get(&url) {
            return i;
        }
        nodes.push((url.clone(), partition, score));
        index.insert(url, nodes.len() - 1);
        nodes.len() - 1
    };
    for (a, _) in &groups {
        let all: Vec<usize> = (0..n).collect();
        for f in parts_for(a, EDGES, &all)? {
            for rows in parquet::read_part::<EdgeRow>(&f)? {
                for e in rows? {
                    let x = id(e.a, e.a_partition, e.a_score);
                    let y = id(e.b, e.b_partition, e.b_score);
                    if e.near {
                        near_edges.push((x, y));
                    } else {
                        sig_edges.push((x, y));
                    }
                }
            }
        }
    }
    drop(index);
    // Signature groups first, then near pairs: the pairs that join two groups are
    // counted as one-process dedup counts them.
    let mut g = Groups::new(nodes.len());
    for (x, y) in sig_edges {
        g.union(x, y);
    }
    for (x, y) in near_edges {
        if g.union(x, y) {
            r.near_pairs += 1;
        }
    }
    let mut winner: HashMap<usize, usize> = HashMap::new();
    for i in 0..nodes.len() {
        let root = g.find(i);
        let w = winner.entry(root).or_insert(i);
        if wins((nodes[i].2, &nodes[i].0), (nodes[*w].2, &nodes[*w].0)) {
            *w = i;
        }
    }
    r.groups = winner.len() as u64;
    r.nodes = nodes.len() as u64;
    let mut verdicts: BTreeMap<u32, Vec<VerdictRow>> = BTreeMap::new();
    for (i, (url, partition, _)) in nodes.into_iter().enumerate() {
        let root = g.find(i);
        let duplicate = winner.get(&root).is_some_and(|&w| w != i);
        verdicts
            .entry(partition)
            .or_default()
            .push(VerdictRow { url, duplicate });
    }
    write_verdicts(&out.join(VERDICTS), verdicts)?;
    Ok(r)
}

/// What the keys, groups and resolve passes of a job decided: the summary counts,
/// the crawldb version they read, and where each partition's verdicts are.
pub struct Decision {
    /// The crawldb version the keys read.
    pub crawldb_version: String,
    /// Rows, candidates, groups, near pairs.
    pub summary: DedupReport,
    /// The verdict parts (`part-0000i.parquet`) of the partitions asked for.
    verdict_files: Vec<PathBuf>,
    /// Every attempt the decision came from, with the version it read.
    pub attempts: Vec<(PathBuf, String)>,
}

/// The decision of `job`'s keys, groups and resolve passes (for partitions `want`
/// of `n`: the verdict parts a rewrite task reads; the commit wants none).
pub fn decision(job: &Job, opts: &DedupOpts, n: usize, want: &[usize]) -> Result<Decision> {
    let (keys, k) = keys_of(job, n)?;
    same_opts(job, &k, opts, super::REWRITE)?;
    let groups = groups_of(job, n)?;
    let mut d = Decision {
        crawldb_version: k.crawldb_version.clone(),
        summary: DedupReport {
            rows: k.rows,
            candidates: k.candidates,
            ..DedupReport::default()
        },
        verdict_files: Vec::new(),
        attempts: keys
            .iter()
            .map(|a| (a.path().to_path_buf(), k.crawldb_version.clone()))
            .collect(),
    };
    for (a, g) in &groups {
        d.attempts
            .push((a.path().to_path_buf(), g.crawldb_version.clone()));
    }
    if k.near {
        let resolve = job.pass(RESOLVE);
        let none = || {
            Error::crawl_dir(
                job.dir(),
                "no finished resolve attempt: run the resolve task first (--pass resolve --partitions all)",
            )
        };
        if resolve.finished()?.is_empty() {
            return Err(none());
        }
        let chosen = resolve.choose(n)?;
        let a = chosen.first().ok_or_else(none)?;
        let rr: ResolveReport = a.report()?;
        d.summary.groups = rr.groups;
        d.summary.near_pairs = rr.near_pairs;
        d.attempts
            .push((a.path().to_path_buf(), rr.crawldb_version.clone()));
        d.verdict_files.extend(parts_for(a, VERDICTS, want)?);
    } else {
        for (a, g) in &groups {
            d.summary.groups += g.groups;
            d.verdict_files.extend(parts_for(a, VERDICTS, want)?);
        }
    }
    Ok(d)
}

impl Decision {
    /// The verdicts of partition `i` (a rewrite task's).
    pub fn verdicts(&self, i: usize) -> Result<HashMap<String, bool>> {
        let mut out = HashMap::new();
        for f in &self.verdict_files {
            if parquet::part_index(f) == Some(i) {
                for rows in parquet::read_part::<VerdictRow>(f)? {
                    for v in rows? {
                        out.insert(v.url, v.duplicate);
                    }
                }
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_are_stable_and_spread() {
        assert_eq!(signature_bucket("abc", 8), signature_bucket("abc", 8));
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..200 {
            seen.insert(signature_bucket(&format!("sig{i}"), 8));
            seen.insert(block_bucket(i % 4, i as u64, 8));
        }
        assert_eq!(seen.len(), 8, "every bucket gets keys: {seen:?}");
    }

    #[test]
    fn close_hashes_share_a_block_and_so_a_bucket() {
        let k = 3;
        let b = blocks(k);
        let h = 0x0123_4567_89AB_CDEFu64;
        let near = h ^ 0b101 ^ (1 << 40);
        let shared: Vec<(usize, u64)> = b
            .iter()
            .enumerate()
            .filter(|(_, blk)| block_value(h, **blk) == block_value(near, **blk))
            .map(|(j, blk)| (j, block_value(near, *blk)))
            .collect();
        assert!(
            !shared.is_empty(),
            "3 bits apart: one of 4 blocks is shared"
        );
        for (j, v) in shared {
            assert_eq!(
                block_bucket(j, block_value(h, b[j]), 8),
                block_bucket(j, v, 8)
            );
        }
    }
}
