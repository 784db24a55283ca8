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

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

use crate::datum::{CrawlDatum, DbStatus, now_millis};
use crate::error::Result;
use crate::records::ParseDataRecord;
use crate::stage::{Report, StageCtx};
use crate::store::disk;
use crate::store::layout::CRAWLDB_META;
use crate::store::layout::CrawlDir;
use crate::store::names::{SegmentDataset, VersionedDb};
use crate::store::parquet::{self, PartWriter, StagedDataset};

/// Options of a dedup run.
#[derive(Debug, Clone, Copy)]
pub struct DedupOpts {
    /// Also group near duplicates by SimHash.
    pub near: bool,
    /// Maximum differing bits for near duplicates.
    pub max_distance: u32,
}

impl Default for DedupOpts {
    fn default() -> Self {
        DedupOpts {
            near: false,
            max_distance: 3,
        }
    }
}

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

struct Cand {
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

/// SimHashes of the pages of every parsed segment (newest segment wins).
fn simhashes(dir: &CrawlDir) -> Result<HashMap<String, u64>> {
    let mut out = HashMap::new();
    for seg in dir.segments()? {
        if !seg.has(SegmentDataset::ParseData) {
            continue;
        }
        // Near-duplicate verdicts are written into the crawldb: checked in full.
        let files = crate::store::integrity::verify(
            &seg.dataset(SegmentDataset::ParseData),
            crate::store::integrity::Check::Checksums,
        )?;
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

/// Runs dedup on the crawl directory of `ctx` (which must hold a crawldb).
pub fn run(ctx: &StageCtx, opts: &DedupOpts) -> Result<DedupReport> {
    let dir = ctx.open_existing()?;
    let db = dir.versioned(VersionedDb::CrawlDb);
    let _lock = db.lock("dedup")?;
    crate::crawldb::verify_for_rewrite(&dir)?;
    let current = dir.crawldb_current();
    let need = disk::dataset_bytes(&current)?;
    disk::ensure_space(
        &dir.crawldb(),
        disk::with_headroom(need),
        "dedup",
        &format!("the new crawldb version (about {})", disk::human(need)),
    )?;
    let mut meta = dir.crawldb_meta()?;
    let parts = parquet::part_files(&current)?;
    let sims = if opts.near {
        simhashes(&dir)?
    } else {
        HashMap::new()
    };
    let mut sum = DedupReport::default();
    let cands = candidates(&parts, &sims, &mut sum)?;
    let verdict = verdicts(cands, opts, &mut sum);

    // Pass 2: rewrite part by part, same names and order.
    let staged = db.stage()?;
    for (i, part) in parts.iter().enumerate() {
        let (duplicates, restored) = run_partition(i, part, &staged, &verdict)?;
        sum.duplicates += duplicates;
        sum.restored += restored;
    }
    meta.written_time = now_millis();
    meta.written_by = "dedup".into();
    parquet::write_json(&staged.path().join(CRAWLDB_META), &meta)?;
    db.install(staged, "dedup")?;
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
    for part in parts {
        for rows in parquet::read_part::<CrawlDatum>(part)? {
            for d in rows? {
                sum.rows += 1;
                if is_candidate(&d) {
                    let simhash = sims.get(&d.url).copied();
                    cands.push(Cand {
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
/// group's winner). Counts groups and near pairs into `sum`.
fn verdicts(cands: Vec<Cand>, opts: &DedupOpts, sum: &mut DedupReport) -> HashMap<String, bool> {
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
    let better = |a: &Cand, b: &Cand| {
        b.score
            .total_cmp(&a.score)
            .then(a.url.len().cmp(&b.url.len()))
            .then(a.url.cmp(&b.url))
            .is_lt()
    };
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
    let mut verdict: HashMap<String, bool> = HashMap::with_capacity(cands.len());
    for (i, c) in cands.into_iter().enumerate() {
        let r = groups.find(i);
        let dup = winner.get(&r).is_some_and(|&w| w != i);
        verdict.insert(c.url, dup);
    }
    verdict
}

/// Pass 2 for crawldb part `i` (`part`): copies it into the staged version under the
/// same name and order, marking the rows `verdict` calls duplicates `db_duplicate` and
/// restoring former duplicates that won their group. Returns (duplicates, restored).
fn run_partition(
    i: usize,
    part: &Path,
    staged: &StagedDataset,
    verdict: &HashMap<String, bool>,
) -> Result<(u64, u64)> {
    let (mut duplicates, mut restored) = (0u64, 0u64);
    let name = part
        .file_name()
        .map_or_else(|| parquet::part_name(i).into(), |n| n.to_owned());
    let mut w = PartWriter::<CrawlDatum>::create(&staged.path().join(name))?;
    for rows in parquet::read_part::<CrawlDatum>(part)? {
        for mut d in rows? {
            if is_candidate(&d) {
                match verdict.get(&d.url) {
                    Some(true) => {
                        d.status = DbStatus::DbDuplicate;
                        duplicates += 1;
                    }
                    Some(false) if d.status == DbStatus::DbDuplicate => {
                        d.status = DbStatus::DbFetched;
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
