//! A generate job's candidates as its cut-off reads them: what it holds is bounded by
//! the partitions, what it reads by the partitions and what the cut takes, not by
//! the candidates (docs/tasks-crawldb.md, "The cut-off").
//!
//! A histogram task writes each partition's pass-1 candidates (sorted by
//! [`select::better`]: score descending, then row) as a file of fixed-width records,
//! `part-NNNNN.cands` (16 bytes each: score, row, key), and beside it a small
//! summary, `summary-NNNNN.bin`: the count and, for each block of `step` consecutive
//! candidates (at most [`BLOCKS`] blocks), its first and last score and its blake3.
//! The cut-off ([`Blocks`]) holds the summaries only: the `m`-th best score of all
//! partitions is found by a binary search over the blocks' boundary scores, where
//! counting the candidates at or above a score reads at most one block per partition
//! (the one the score falls inside); the candidates between two neighbouring
//! boundary scores lie inside at most one block per partition. So the cut-off reads
//! a few blocks per partition and cut, each checked against its blake3, and holds
//! them only while a cut is made; a select task reads its own range of a partition's
//! candidates the same way. On an object store the blocks are ranged GETs of the
//! tasks' objects ([`crate::store::integrity::read_ranges`]: the driver's mirror
//! holds placeholders of the candidates files): the driver downloads the summaries,
//! never the candidates.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::select::{self, Cand, Runs};
use crate::error::{Error, Result};
use crate::store::parquet;

/// The most blocks a partition's candidates are summarized in.
pub const BLOCKS: usize = 256;

/// Bytes of one candidate in a `.cands` file.
const CAND_BYTES: usize = 16;

/// The summary of a partition's candidates (see the module's documentation).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Candidates in the file.
    pub len: u64,
    /// Candidates per block (the last block may hold fewer).
    pub step: u64,
    /// Each block's first (best) score.
    pub firsts: Vec<f64>,
    /// Each block's last (worst) score.
    pub lasts: Vec<f64>,
    /// Each block's blake3 (its first 16 bytes).
    pub hashes: Vec<[u8; 16]>,
}

impl Summary {
    fn blocks(&self) -> usize {
        self.firsts.len()
    }

    /// The candidates `from..to` of block `j`.
    fn span(&self, j: usize) -> (usize, usize) {
        let step = self.step as usize;
        (j * step, ((j + 1) * step).min(self.len as usize))
    }

    /// The blocks all of whose candidates score above `v` (with `or_equal`: at or
    /// above it): a prefix of the blocks, their lasts being in descending order.
    fn blocks_above(&self, v: f64, or_equal: bool) -> usize {
        self.lasts
            .partition_point(|&l| select::outranks(l, v, or_equal))
    }
}

/// The candidates file of partition `i` in a histogram attempt's directory.
pub fn cands_file(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("part-{i:05}.cands"))
}

/// The summary of partition `i`'s candidates in a histogram attempt's directory.
pub fn summary_file(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("summary-{i:05}.bin"))
}

fn block_hash(bytes: &[u8]) -> [u8; 16] {
    let mut h = [0u8; 16];
    h.copy_from_slice(&blake3::hash(bytes).as_bytes()[..16]);
    h
}

/// Writes partition `i`'s candidates (sorted by [`select::better`]) and their
/// summary into the attempt directory `dir`.
pub fn write(dir: &Path, i: usize, cands: &[Cand]) -> Result<()> {
    let mut bytes = Vec::with_capacity(cands.len() * CAND_BYTES);
    for c in cands {
        bytes.extend_from_slice(&c.score.to_le_bytes());
        bytes.extend_from_slice(&c.row.to_le_bytes());
        bytes.extend_from_slice(&c.key.to_le_bytes());
    }
    let step = cands.len().div_ceil(BLOCKS).max(1);
    let mut s = Summary {
        len: cands.len() as u64,
        step: step as u64,
        ..Summary::default()
    };
    for block in cands.chunks(step) {
        s.firsts.push(block[0].score);
        s.lasts.push(block[block.len() - 1].score);
    }
    for block in bytes.chunks(step * CAND_BYTES) {
        s.hashes.push(block_hash(block));
    }
    parquet::write_atomic(&cands_file(dir, i), &bytes)?;
    let encoded = bincode::serde::encode_to_vec(&s, bincode::config::standard())
        .map_err(|e| Error::crawl_dir(dir, format!("cannot encode a summary: {e}")))?;
    parquet::write_atomic(&summary_file(dir, i), &encoded)
}

/// The candidates of a block's bytes.
fn decode(bytes: &[u8]) -> Vec<Cand> {
    bytes
        .chunks_exact(CAND_BYTES)
        .map(|r| {
            let mut score = [0u8; 8];
            let mut row = [0u8; 4];
            let mut key = [0u8; 4];
            score.copy_from_slice(&r[0..8]);
            row.copy_from_slice(&r[8..12]);
            key.copy_from_slice(&r[12..16]);
            Cand {
                score: f64::from_le_bytes(score),
                row: u32::from_le_bytes(row),
                key: u32::from_le_bytes(key),
            }
        })
        .collect()
}

/// Reads the summary of partition `i` in the attempt directory `dir`.
fn read_summary(dir: &Path, i: usize) -> Result<Summary> {
    let file = summary_file(dir, i);
    let bytes = crate::store::storage::LocalFs.read(&file)?;
    let (s, _): (Summary, usize) =
        bincode::serde::decode_from_slice(&bytes, bincode::config::standard()).map_err(|e| {
            Error::crawl_dir(
                &file,
                format!("cannot decode the summary of a histogram task ({e}); rerun the job"),
            )
        })?;
    let n = s.len.div_ceil(s.step.max(1)) as usize;
    if s.step == 0 || s.firsts.len() != n || s.lasts.len() != n || s.hashes.len() != n {
        return Err(Error::crawl_dir(
            &file,
            "the summary does not describe its candidates (block counts differ); rerun the job",
        ));
    }
    Ok(s)
}

/// Every partition's candidates, read a block at a time from the histogram
/// attempts that hold them (see the module's documentation).
pub struct Blocks {
    files: Vec<PathBuf>,
    sums: Vec<Summary>,
    /// The boundary scores of every block, distinct, best first.
    bounds: Vec<f64>,
    cache: HashMap<(usize, usize), Vec<Cand>>,
    /// Blocks read.
    pub reads: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Object-store requests made.
    pub requests: u64,
}

impl Blocks {
    /// The candidates of partition `i` in the attempt directory `dirs[i]`, for
    /// each partition: the summaries are read now.
    pub fn open(dirs: &[PathBuf]) -> Result<Blocks> {
        let sums = dirs
            .iter()
            .enumerate()
            .map(|(i, d)| read_summary(d, i))
            .collect::<Result<Vec<_>>>()?;
        let files = dirs
            .iter()
            .enumerate()
            .map(|(i, d)| cands_file(d, i))
            .collect();
        let mut bounds: Vec<f64> = sums
            .iter()
            .flat_map(|s| s.firsts.iter().chain(&s.lasts).copied())
            .collect();
        bounds.sort_unstable_by(|a, b| b.total_cmp(a));
        bounds.dedup_by(|a, b| a.total_cmp(b) == Ordering::Equal);
        Ok(Blocks {
            files,
            sums,
            bounds,
            cache: HashMap::new(),
            reads: 0,
            bytes: 0,
            requests: 0,
        })
    }

    /// Partition `i`'s candidates alone, in the attempt directory `dir` (a select
    /// task's): its partition `0` here.
    pub fn open_one(dir: &Path, i: usize) -> Result<Blocks> {
        let sum = read_summary(dir, i)?;
        Ok(Blocks {
            files: vec![cands_file(dir, i)],
            bounds: Vec::new(),
            sums: vec![sum],
            cache: HashMap::new(),
            reads: 0,
            bytes: 0,
            requests: 0,
        })
    }

    /// The blocks `(partition, block)` of `wanted` that are not cached, read at once
    /// (on an object store, concurrently) and checked against their blake3.
    fn fetch(&mut self, wanted: &[(usize, usize)]) -> Result<HashMap<(usize, usize), Vec<Cand>>> {
        let mut todo: Vec<(usize, usize)> = wanted
            .iter()
            .copied()
            .filter(|k| !self.cache.contains_key(k))
            .collect();
        todo.sort_unstable();
        todo.dedup();
        let mut out = HashMap::new();
        if todo.is_empty() {
            return Ok(out);
        }
        let ranges: Vec<(PathBuf, u64, usize)> = todo
            .iter()
            .map(|&(p, j)| {
                let (from, to) = self.sums[p].span(j);
                (
                    self.files[p].clone(),
                    (from * CAND_BYTES) as u64,
                    (to - from) * CAND_BYTES,
                )
            })
            .collect();
        let (got, requests) = crate::store::integrity::read_ranges(&ranges)?;
        self.requests += requests;
        for ((p, j), bytes) in todo.into_iter().zip(got) {
            if block_hash(&bytes) != self.sums[p].hashes[j] {
                return Err(Error::Integrity {
                    path: self.files[p].clone(),
                    message: format!(
                        "block {j} of the candidates does not match its summary's blake3: the file was altered; rerun the job from its first pass"
                    ),
                });
            }
            self.reads += 1;
            self.bytes += bytes.len() as u64;
            out.insert((p, j), decode(&bytes));
        }
        Ok(out)
    }

    /// [`Blocks::fetch`], keeping what it read until [`Blocks::forget`].
    fn load(&mut self, wanted: &[(usize, usize)]) -> Result<()> {
        let got = self.fetch(wanted)?;
        self.cache.extend(got);
        Ok(())
    }

    /// Partition `p`'s candidates `from..to`, read by blocks (those not cached are
    /// not kept: a long run of ties is read once, into the list asked for).
    pub fn cands(&mut self, p: usize, from: usize, to: usize) -> Result<Vec<Cand>> {
        let s = &self.sums[p];
        if from > to || to as u64 > s.len {
            return Err(Error::crawl_dir(
                &self.files[p],
                format!(
                    "the partition has {} candidates, {from}..{to} were asked: the cut-off does not match the job's histogram attempts; rerun the job's cut-off (`generate --job ID --cutoff`), then its select tasks",
                    s.len
                ),
            ));
        }
        if from == to {
            return Ok(Vec::new());
        }
        let step = s.step as usize;
        let blocks: Vec<(usize, usize)> = (from / step..=(to - 1) / step).map(|j| (p, j)).collect();
        let read = self.fetch(&blocks)?;
        let mut out = Vec::with_capacity(to - from);
        for key in blocks {
            let (b0, b1) = self.sums[p].span(key.1);
            let block = match read.get(&key).or_else(|| self.cache.get(&key)) {
                Some(b) => b,
                None => {
                    return Err(Error::Internal {
                        message: format!("generate's cut-off: block {key:?} was not read"),
                    });
                }
            };
            out.extend_from_slice(&block[from.max(b0) - b0..to.min(b1) - b0]);
        }
        Ok(out)
    }

    /// Forgets the blocks read (after each group of cuts: what is held stays bounded).
    pub fn forget(&mut self) {
        self.cache.clear();
    }
}

impl Runs for Blocks {
    fn lens(&self) -> Vec<usize> {
        self.sums.iter().map(|s| s.len as usize).collect()
    }

    /// The blocks' boundary scores, best first, bracket the answer: the binary search
    /// finds the best boundary `b` with at least `m` candidates at or above it; the
    /// answer is `b`, or one of the candidates between `b` and the boundary before it,
    /// which lie inside at most one block per partition.
    fn kth(&mut self, m: usize) -> Result<f64> {
        let bounds = std::mem::take(&mut self.bounds);
        let found = (|| {
            // The summaries alone bracket the boundary wanted (the first with at least
            // `m` candidates at or above it): at least the blocks wholly at or above a
            // score are, at most those whose first is; only boundaries in the bracket
            // are counted exactly, reading the few blocks near the answer.
            let first_with =
                |at_least: &dyn Fn(f64) -> usize| bounds.partition_point(|&v| at_least(v) < m);
            let (mut lo, mut hi) = (
                first_with(&|v| self.at_or_above_at_most(v)),
                first_with(&|v| self.at_or_above_at_least(v)).min(bounds.len()),
            );
            while lo < hi {
                let mid = (lo + hi) / 2;
                let at_or_above: usize = self.above(bounds[mid], true)?.iter().sum();
                if at_or_above >= m {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            let Some(&b) = bounds.get(lo) else {
                return Err(Error::Internal {
                    message: format!(
                        "generate's cut-off: no score has {m} candidates at or above it"
                    ),
                });
            };
            if lo == 0 || self.above(b, false)?.iter().sum::<usize>() < m {
                return Ok(b);
            }
            // Between `b` and the boundary before it: the rank wanted among them.
            let before = bounds[lo - 1];
            let upper = self.above(before, true)?;
            let lower = self.above(b, false)?;
            let mut between = Vec::new();
            for (p, (&u, &l)) in upper.iter().zip(&lower).enumerate() {
                between.extend(self.cands(p, u, l)?.into_iter().map(|c| c.score));
            }
            between.sort_unstable_by(|a, b| b.total_cmp(a));
            let rank = m - upper.iter().sum::<usize>();
            between
                .get(rank.saturating_sub(1))
                .copied()
                .ok_or_else(|| Error::Internal {
                    message: format!(
                        "generate's cut-off: candidate {rank} of {} between two boundary scores",
                        between.len()
                    ),
                })
        })();
        self.bounds = bounds;
        found
    }

    fn above(&mut self, t: f64, or_equal: bool) -> Result<Vec<usize>> {
        self.count_above(t, or_equal)
    }

    fn rows(&mut self, p: usize, from: usize, to: usize) -> Result<Vec<u32>> {
        Ok(self.cands(p, from, to)?.iter().map(|c| c.row).collect())
    }

    /// The blocks of a group of cuts go: what is held stays bounded.
    fn end_group(&mut self) {
        self.forget();
    }
}

impl Blocks {
    /// At least how many candidates score at or above `v`, from the summaries: those
    /// of the blocks wholly at or above it.
    fn at_or_above_at_least(&self, v: f64) -> usize {
        self.sums
            .iter()
            .map(|s| s.span(s.blocks_above(v, true)).0.min(s.len as usize))
            .sum()
    }

    /// At most how many candidates score at or above `v`, from the summaries: also
    /// the whole of the next block when its first does.
    fn at_or_above_at_most(&self, v: f64) -> usize {
        self.sums
            .iter()
            .map(|s| {
                let k = s.blocks_above(v, true);
                if k < s.blocks() && select::outranks(s.firsts[k], v, true) {
                    s.span(k).1
                } else {
                    s.span(k).0.min(s.len as usize)
                }
            })
            .sum()
    }

    /// Per partition, how many candidates score above `t` (with `or_equal`: at or
    /// above), exactly: at most one block read per partition.
    fn count_above(&mut self, t: f64, or_equal: bool) -> Result<Vec<usize>> {
        // A partition's blocks wholly above `t` need no read; of the next block (if
        // its first is above `t`), the candidates above are a prefix: one read.
        let full: Vec<usize> = self
            .sums
            .iter()
            .map(|s| s.blocks_above(t, or_equal))
            .collect();
        let partial: Vec<(usize, usize)> = full
            .iter()
            .enumerate()
            .filter(|&(p, &k)| {
                let s = &self.sums[p];
                k < s.blocks() && select::outranks(s.firsts[k], t, or_equal)
            })
            .map(|(p, &k)| (p, k))
            .collect();
        self.load(&partial)?;
        Ok(full
            .iter()
            .enumerate()
            .map(|(p, &k)| {
                let s = &self.sums[p];
                if k >= s.blocks() {
                    return s.len as usize;
                }
                let into = self.cache.get(&(p, k)).map_or(0, |block| {
                    block.partition_point(|c| select::outranks(c.score, t, or_equal))
                });
                s.span(k).0 + into
            })
            .collect())
    }
}

/// The fetch lists as prefix ranges (as [`select::choose_prefixes`] cuts them from
/// candidates in memory) from the candidates in `blocks`, `paths` being the crawldb
/// parts (the URLs of candidates tied at a cut are read from them).
pub fn choose_prefixes(
    paths: &[PathBuf],
    blocks: &mut Blocks,
    limit: usize,
    per_list: usize,
) -> Result<Vec<Vec<(usize, usize)>>> {
    let total: usize = blocks.lens().iter().sum();
    let cuts = select::list_cuts(total, limit, per_list);
    let prefixes = select::top_prefixes(paths, blocks, &cuts)?;
    Ok(select::prefix_ranges(prefixes, blocks.sums.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datum::CrawlDatum;
    use crate::store::parquet::PartWriter;
    use std::collections::HashSet;

    /// A small deterministic generator (no dependency for tests).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }
    }

    /// Parts of random URLs whose scores come from a few values (ties at every cut)
    /// or are spread; the bounded cut-off gives the in-memory cut-off's lists.
    #[test]
    fn the_blocks_cut_the_lists_the_candidates_in_memory_cut() {
        let root = std::env::temp_dir().join(format!("trawl-cutoff-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let mut rng = Lcg(7);
        let mut cases = 0;
        for case in 0..40 {
            let parts = 1 + (rng.next() % 6) as usize;
            let distinct = [1, 2, 3, 50, 100_000][case % 5];
            let case_dir = root.join(format!("case{case}"));
            let mut paths = Vec::new();
            let mut dirs = Vec::new();
            let mut ranked = Vec::new();
            let rules = select::Rules {
                skip_hosts: HashSet::new(),
                host_caps: Default::default(),
                now: 1_000,
                min_score: 0.0,
                max_per_key: 0,
                by_domain: false,
                limit: (rng.next() % 3000) as usize + 1,
            };
            for p in 0..parts {
                let rows = (rng.next() % 1200) as usize;
                let mut datums: Vec<CrawlDatum> = (0..rows)
                    .map(|_| {
                        let url = format!("http://h{}.test/{:08}", rng.next() % 9, rng.next());
                        let mut d = CrawlDatum::unfetched(url, "h.test".into(), 100, 1);
                        d.score = (rng.next() % distinct) as f64 / 4.0;
                        d
                    })
                    .collect();
                datums.sort_by(|a, b| a.url.cmp(&b.url));
                datums.dedup_by(|a, b| a.url == b.url);
                let path = case_dir.join(format!("part-{p:05}.parquet"));
                std::fs::create_dir_all(&case_dir).unwrap();
                let mut w = PartWriter::<CrawlDatum>::create(&path).unwrap();
                for d in datums {
                    w.push(d).unwrap();
                }
                w.finish().unwrap();
                let r = select::rank_part(&path, &rules, &HashSet::new()).unwrap();
                let dir = case_dir.join(format!("attempt{}", p % 2));
                std::fs::create_dir_all(&dir).unwrap();
                write(&dir, p, &r.cands).unwrap();
                paths.push(path);
                dirs.push(dir);
                ranked.push(r);
            }
            let per_list = (rng.next() % 700) as usize + 1;
            let want = select::choose_prefixes(&paths, &ranked, &rules, per_list).unwrap();
            let mut blocks = Blocks::open(&dirs).unwrap();
            let got = choose_prefixes(&paths, &mut blocks, rules.limit, per_list).unwrap();
            assert_eq!(got, want, "case {case}: {parts} parts, {distinct} scores");
            let total: usize = ranked.iter().map(|r| r.cands.len()).sum();
            if total > 0 {
                cases += 1;
                // Each list's range of a partition, read back as a select task does.
                for (list, ranges) in want.iter().enumerate() {
                    for (p, &(from, to)) in ranges.iter().enumerate() {
                        let mut one = Blocks::open_one(&dirs[p], p).unwrap();
                        let rows: Vec<u32> = one
                            .cands(0, from, to)
                            .unwrap()
                            .iter()
                            .map(|c| c.row)
                            .collect();
                        assert_eq!(
                            Some(rows),
                            select::rows_of(&ranked[p], from, to),
                            "case {case}, list {list}, part {p}"
                        );
                    }
                }
            }
        }
        assert!(cases > 30, "{cases} cases had candidates");
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// Spread scores: the cut reads a few blocks per partition and cut, not the
    /// candidates.
    #[test]
    fn a_cut_reads_a_few_blocks_of_each_partition() {
        let root = std::env::temp_dir().join(format!("trawl-cutoff-big-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let parts = 8u64;
        let per = 50_000u32;
        let mut dirs = Vec::new();
        for p in 0..parts as usize {
            // Distinct scores spread over the partitions (7919 is prime to 400,000).
            let mut cands: Vec<Cand> = (0..per)
                .map(|row| Cand {
                    score: ((p as u64 * u64::from(per) + u64::from(row)) * 7919 % 400_000) as f64,
                    row,
                    key: 0,
                })
                .collect();
            cands.sort_by(select::better);
            write(&root, p, &cands).unwrap();
            dirs.push(root.clone());
        }
        let mut blocks = Blocks::open(&dirs).unwrap();
        // Three lists of 20,000 (no ties at the cuts to merge: no part files read).
        let ranges = choose_prefixes(&[], &mut blocks, 60_000, 20_000).unwrap();
        assert_eq!(ranges.len(), 3);
        let taken: usize = ranges
            .iter()
            .flat_map(|l| l.iter().map(|(a, b)| b - a))
            .sum();
        assert_eq!(taken, 60_000);
        let all = u64::from(per) * parts * CAND_BYTES as u64;
        // Measured: 46 blocks, 2.3 % of the bytes.
        assert!(
            blocks.bytes * 20 < all && blocks.reads <= 3 * parts * 3,
            "read {} of {all} bytes in {} blocks",
            blocks.bytes,
            blocks.reads
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn an_altered_block_is_refused() {
        let root = std::env::temp_dir().join(format!("trawl-cutoff-alt-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        let cands: Vec<Cand> = (0..1000u32)
            .map(|i| Cand {
                score: f64::from(1000 - i),
                row: i,
                key: 0,
            })
            .collect();
        write(&root, 3, &cands).unwrap();
        let mut b = Blocks::open_one(&root, 3).unwrap();
        assert_eq!(b.cands(0, 10, 20).unwrap(), cands[10..20].to_vec());
        let file = cands_file(&root, 3);
        let mut bytes = std::fs::read(&file).unwrap();
        bytes[16 * 500] ^= 1;
        std::fs::write(&file, bytes).unwrap();
        let mut b = Blocks::open_one(&root, 3).unwrap();
        let e = b.cands(0, 499, 501).unwrap_err().to_string();
        assert!(e.contains("does not match its summary's blake3"), "{e}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
