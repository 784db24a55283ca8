//! generate's columnar kernels.
//!
//! * Pass 1 ([`rank_part`]) ranks a crawldb part from a projection of four columns
//!   (`host, status, fetch_time, score`; `url` only while a pending fetch list must
//!   be checked). A candidate is 16 bytes (score, row, key id): no URL is copied and
//!   nothing is allocated per row. Within a part, rows are sorted by URL, so a row's
//!   index orders it like its URL; the per-host cap therefore breaks score ties by
//!   row index and never looks at a string. The rows of a host come in runs (mostly
//!   one run), and each run is trimmed to `max_per_host` as it grows.
//!   The candidates kept are at most `limit` (= top_n x segments) per part at any
//!   time (completed runs are trimmed to the best `limit` as they pile up), so pass 1
//!   holds O(parts x limit x 16 bytes), never O(rows).
//! * [`choose`] makes the exact selection (score descending, then URL ascending, the
//!   per-domain cap across parts, the first `limit` cut into fetch lists). Without a
//!   per-domain cap, the global order restricted to one part is the part's own
//!   order, so each fetch list takes a prefix of every part's candidates:
//!   [`top_prefixes`] finds the prefixes from the scores, and where candidates of
//!   several parts tie at a cut it merges just their URLs, streamed from the part
//!   files a batch at a time. With a per-domain cap, [`plan`] finds from the scores
//!   the rows that can make the cut and their URLs (only) are read and merged.
//! * Pass 2 ([`read_rows`]) reads, per part, only the rows of its fetch lists (a
//!   Parquet row selection, all columns); [`interleave`] orders each list's rows of
//!   a part so hosts alternate, and the rows are written with one `take` per list.
//!   Parts are written a few at a time (rayon), so pass 2 holds the selected rows of
//!   about `threads` parts: O(top_n / partitions x row size) each.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ::parquet::arrow::ProjectionMask;
use ::parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder, RowSelection, RowSelectionPolicy, RowSelector,
};
use arrow::array::{Array, AsArray, RecordBatch, StringArray};
use arrow::datatypes::{
    DataType, FieldRef, Float64Type, Int32Type, Schema, TimestampMillisecondType,
};

use crate::datum::{CrawlDatum, DbStatus, Millis};
use crate::error::{Error, Result};
use crate::store::parquet;
use crate::urls::registrable_domain;

/// What makes a row eligible and how it is capped.
#[derive(Debug, Clone)]
pub struct Rules {
    /// Hosts left out (failing in a row: the hostdb's back-off).
    pub skip_hosts: HashSet<String>,
    /// Caps of single hosts, below `max_per_key` (the hostdb's time budget); only
    /// when keys are hosts (`!by_domain`).
    pub host_caps: HashMap<String, usize>,
    /// Due at or before this time (ms).
    pub now: Millis,
    /// Minimum score.
    pub min_score: f64,
    /// Cap per key (0 = none).
    pub max_per_key: usize,
    /// Cap by registrable domain instead of host.
    pub by_domain: bool,
    /// Rows kept in all (top_n x segments).
    pub limit: usize,
}

impl Rules {
    fn capped(&self) -> bool {
        self.max_per_key > 0
    }

    /// Whether pass 1 keeps candidates per key: a cap for every key, or for some hosts.
    fn per_key(&self) -> bool {
        self.capped() || (!self.by_domain && !self.host_caps.is_empty())
    }
}

/// A candidate row of one part (16 bytes).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Cand {
    /// Its score.
    pub score: f64,
    /// Its row index in the part.
    pub row: u32,
    /// What the cap counts (host or registrable domain), an index into
    /// [`Ranked::keys`].
    pub key: u32,
}

/// Part order: score descending, then row (= URL) ascending.
pub fn better(a: &Cand, b: &Cand) -> Ordering {
    b.score.total_cmp(&a.score).then(a.row.cmp(&b.row))
}

/// Keeps the best `k` of `v[from..]` (any order).
fn trim(v: &mut Vec<Cand>, from: usize, k: usize) {
    if v.len() - from > k {
        if k == 0 {
            v.truncate(from);
            return;
        }
        v[from..].select_nth_unstable_by(k - 1, better);
        v.truncate(from + k);
    }
}

/// Pass 1 result for one part.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Ranked {
    /// The part's best candidates (at most `limit`, at most `max_per_key` per key),
    /// sorted by [`better`].
    pub cands: Vec<Cand>,
    /// Key names (host, or registrable domain), indexed by [`Cand::key`].
    pub keys: Vec<Box<str>>,
    /// Rows read.
    pub scanned: u64,
    /// Rows due and eligible.
    pub due: u64,
    /// Due rows held by pending fetch lists.
    pub pending: u64,
    /// Due rows of hosts left out ([`Rules::skip_hosts`]).
    #[serde(default)]
    pub backed_off: u64,
}

/// Interns key names as dense ids, remembering the last host (a host's rows come
/// in runs, so almost every row is a hit).
#[derive(Default)]
struct Keys {
    ids: HashMap<Box<str>, u32>,
    names: Vec<Box<str>>,
    last_host: String,
    last_key: Option<u32>,
}

impl Keys {
    fn key_of(&mut self, host: &str, by_domain: bool) -> u32 {
        if let Some(k) = self.last_key.filter(|_| self.last_host == host) {
            return k;
        }
        let name = if by_domain {
            registrable_domain(host)
        } else {
            host.to_string()
        };
        let k = match self.ids.get(name.as_str()) {
            Some(k) => *k,
            None => {
                let k = self.names.len() as u32;
                let name: Box<str> = name.into();
                self.names.push(name.clone());
                self.ids.insert(name, k);
                k
            }
        };
        self.last_host.clear();
        self.last_host.push_str(host);
        self.last_key = Some(k);
        k
    }
}

/// The error for a crawldb part at `path` without the expected `what` column.
fn bad_column(path: &Path, what: &str) -> Error {
    Error::crawl_dir(
        path,
        format!("crawldb part has no or an unexpected {what} column; is it a trawl crawldb?"),
    )
}

/// A reader of pass 1's columns of the part at `path`: `host, status, fetch_time,
/// score`, and `url` when `with_url`. `host` and `status` are read as the dictionaries
/// they are stored as: a batch's rows are mapped through its dictionary, never
/// compared as strings.
fn rank_reader(path: &Path, with_url: bool) -> Result<ParquetRecordBatchReader> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| Error::parquet(path, e))?;
    let mut wanted = vec!["host", "status", "fetch_time", "score"];
    if with_url {
        wanted.push("url");
    }
    let hint: Vec<FieldRef> = builder
        .schema()
        .fields()
        .iter()
        .map(|f| match (f.name().as_str(), f.data_type()) {
            ("host" | "status", DataType::Utf8) => Arc::new(f.as_ref().clone().with_data_type(
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
            )),
            _ => f.clone(),
        })
        .collect();
    let hint = Arc::new(Schema::new_with_metadata(
        hint,
        builder.schema().metadata().clone(),
    ));
    let mut roots = Vec::new();
    for w in &wanted {
        roots.push(hint.index_of(w).map_err(|_| bad_column(path, w))?);
    }
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    let batch = parquet::batch_rows(builder.metadata());
    drop(builder);
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    ParquetRecordBatchReaderBuilder::try_new_with_options(
        file,
        ArrowReaderOptions::new().with_schema(hint),
    )
    .map_err(|e| Error::parquet(path, e))?
    .with_projection(mask)
    .with_batch_size(batch)
    .build()
    .map_err(|e| Error::parquet(path, e))
}

/// Pass 1's columns of one batch, typed.
struct RankCols<'a> {
    /// Host dictionary keys per row, and the dictionary's names.
    host_idx: &'a [i32],
    host_names: &'a StringArray,
    /// Status dictionary keys per row, and whether each dictionary entry is
    /// `db_duplicate`.
    status_idx: &'a [i32],
    dup: Vec<bool>,
    fetch_time: &'a [i64],
    score: &'a [f64],
    /// Only when pending fetch lists are checked.
    url: Option<&'a StringArray>,
}

impl<'a> RankCols<'a> {
    fn new(batch: &'a RecordBatch, with_url: bool, path: &Path) -> Result<Self> {
        let bad = |what: &str| bad_column(path, what);
        let col = |name: &str| batch.column_by_name(name).ok_or_else(|| bad(name));
        let host = col("host")?
            .as_dictionary_opt::<Int32Type>()
            .ok_or_else(|| bad("host"))?;
        let host_names = host
            .values()
            .as_string_opt::<i32>()
            .ok_or_else(|| bad("host"))?;
        let status = col("status")?
            .as_dictionary_opt::<Int32Type>()
            .ok_or_else(|| bad("status"))?;
        let duplicate = DbStatus::DbDuplicate.as_str();
        let dup: Vec<bool> = status
            .values()
            .as_string_opt::<i32>()
            .ok_or_else(|| bad("status"))?
            .iter()
            .map(|v| v == Some(duplicate))
            .collect();
        let ft = col("fetch_time")?
            .as_primitive_opt::<TimestampMillisecondType>()
            .ok_or_else(|| bad("fetch_time"))?;
        let score = col("score")?
            .as_primitive_opt::<Float64Type>()
            .ok_or_else(|| bad("score"))?;
        let url = if with_url {
            Some(
                col("url")?
                    .as_string_opt::<i32>()
                    .ok_or_else(|| bad("url"))?,
            )
        } else {
            None
        };
        Ok(RankCols {
            host_idx: host.keys().values(),
            host_names,
            status_idx: status.keys().values(),
            dup,
            fetch_time: ft.values(),
            score: score.values(),
            url,
        })
    }
}

/// Pass 1: ranks the part at `path` (missing = empty).
pub fn rank_part(path: &Path, rules: &Rules, pending: &HashSet<String>) -> Result<Ranked> {
    let mut out = Ranked::default();
    if !path.is_file() {
        return Ok(out);
    }
    let with_url = !pending.is_empty();
    let reader = rank_reader(path, with_url)?;
    let k = if rules.capped() {
        rules.max_per_key
    } else {
        rules.limit
    };
    // Each key's cap: `k`, or a host's own lower cap.
    let mut caps: Vec<usize> = Vec::new();
    let mut keys = Keys::default();
    let mut seen: Vec<bool> = Vec::new();
    let mut split_runs = false;
    let mut ents: Vec<Cand> = Vec::new();
    let mut run_start = 0usize;
    let mut run_key: Option<u32> = None;
    let mut row: u32 = 0;
    for batch in reader {
        let batch = batch.map_err(|e| Error::arrow(path.display().to_string(), e))?;
        let c = RankCols::new(&batch, with_url, path)?;
        // Key id of each host dictionary entry, filled as entries are met.
        let mut key_of = vec![u32::MAX; c.host_names.len()];
        // Whether each host dictionary entry is skipped: 0 not looked up, 1 no, 2 yes.
        let mut skip_of = vec![0u8; c.host_names.len()];
        for i in 0..batch.num_rows() {
            let r = row;
            row += 1;
            let s = c.score[i];
            if c.fetch_time[i] > rules.now
                || s < rules.min_score
                || c.dup
                    .get(c.status_idx[i] as usize)
                    .copied()
                    .unwrap_or(false)
            {
                continue;
            }
            if !rules.skip_hosts.is_empty() {
                let h = c.host_idx[i] as usize;
                let skip = match skip_of.get(h) {
                    Some(0) => {
                        let v = rules.skip_hosts.contains(c.host_names.value(h));
                        skip_of[h] = 1 + u8::from(v);
                        v
                    }
                    Some(v) => *v == 2,
                    None => return Err(bad_column(path, "host")),
                };
                if skip {
                    out.backed_off += 1;
                    continue;
                }
            }
            if let Some(url) = c.url
                && pending.contains(url.value(i))
            {
                out.pending += 1;
                continue;
            }
            out.due += 1;
            let key = if rules.per_key() {
                let h = c.host_idx[i] as usize;
                match key_of.get(h) {
                    Some(&k) if k != u32::MAX => k,
                    Some(_) => {
                        let key = keys.key_of(c.host_names.value(h), rules.by_domain);
                        key_of[h] = key;
                        if caps.len() <= key as usize {
                            caps.resize(key as usize + 1, k);
                            let name = &*keys.names[key as usize];
                            if let Some(&cap) = rules.host_caps.get(name) {
                                caps[key as usize] = cap.min(k);
                            }
                        }
                        key
                    }
                    None => return Err(bad_column(path, "host")),
                }
            } else {
                0
            };
            let cap_of = |key: u32| caps.get(key as usize).copied().unwrap_or(k);
            if run_key != Some(key) {
                // A run of one key ends: keep its best (its cap).
                if rules.per_key() {
                    trim(&mut ents, run_start, run_key.map_or(k, cap_of));
                    if let Some(prev) = run_key {
                        seen[prev as usize] = true;
                    }
                    if seen.len() <= key as usize {
                        seen.resize(key as usize + 1, false);
                    }
                    split_runs |= seen[key as usize];
                }
                // Keep the best `limit` of the completed runs, capping each key over
                // its runs first when keys came in several runs: a row this drops has
                // `limit` better rows, and a later run that evicts one of them (cap)
                // brings a better row still. Pass 1 thus holds O(limit) candidates,
                // whatever the part's size.
                if ents.len() >= 2 * rules.limit.max(1) {
                    if split_runs {
                        cap_per_key(&mut ents, cap_of);
                    }
                    trim(&mut ents, 0, rules.limit);
                }
                run_start = ents.len();
                run_key = Some(key);
            }
            ents.push(Cand {
                score: s,
                row: r,
                key,
            });
            let kk = cap_of(key);
            if ents.len() - run_start >= 2 * kk.max(1) {
                trim(&mut ents, run_start, kk);
            }
        }
        out.scanned += batch.num_rows() as u64;
    }
    let cap_of = |key: u32| caps.get(key as usize).copied().unwrap_or(k);
    trim(&mut ents, run_start, run_key.map_or(k, cap_of));
    if split_runs {
        // Some key came in several runs (hosts whose URLs do not sort together, e.g.
        // http and https): cap each key over all its runs.
        cap_per_key(&mut ents, cap_of);
    }
    // Sorting first, then cutting, keeps already ordered candidates (rows in URL
    // order, scores tied: a fresh crawldb) a linear pass.
    ents.sort_unstable_by(better);
    ents.truncate(rules.limit);
    ents.shrink_to_fit();
    out.cands = ents;
    out.keys = keys.names;
    Ok(out)
}

/// Keeps the best `cap(key)` candidates of each key (over all its runs); the
/// candidates end up sorted by key, then by [`better`].
fn cap_per_key(ents: &mut Vec<Cand>, cap: impl Fn(u32) -> usize) {
    ents.sort_unstable_by(|a, b| a.key.cmp(&b.key).then_with(|| better(a, b)));
    let mut kept = 0usize;
    let mut i = 0usize;
    while i < ents.len() {
        let key = ents[i].key;
        let k = cap(key);
        let mut j = i;
        while j < ents.len() && ents[j].key == key {
            if j - i < k {
                ents[kept] = ents[j];
                kept += 1;
            }
            j += 1;
        }
        i = j;
    }
    ents.truncate(kept);
}

/// Walks the candidates of all parts (each sorted by [`better`]) by score
/// descending (ties in any order), calling `f(part, index)` until it returns false.
fn walk_by_score(parts: &[Ranked], mut f: impl FnMut(usize, usize) -> bool) {
    #[derive(PartialEq)]
    struct Head(f64, usize, usize);
    impl Eq for Head {}
    impl PartialOrd for Head {
        fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
            Some(self.cmp(o))
        }
    }
    impl Ord for Head {
        fn cmp(&self, o: &Self) -> Ordering {
            self.0.total_cmp(&o.0).then(o.1.cmp(&self.1))
        }
    }
    let mut heap: BinaryHeap<Head> = parts
        .iter()
        .enumerate()
        .filter_map(|(p, r)| r.cands.first().map(|c| Head(c.score, p, 0)))
        .collect();
    while let Some(Head(_, p, i)) = heap.pop() {
        if !f(p, i) {
            return;
        }
        if let Some(c) = parts[p].cands.get(i + 1) {
            heap.push(Head(c.score, p, i + 1));
        }
    }
}

/// With a per-domain cap: per part, the candidates that may make the final
/// selection, sorted by row.
#[derive(Debug, Default)]
struct Plan {
    /// `rows[part]`: candidates whose URLs are read, by row ascending.
    rows: Vec<Vec<Cand>>,
    /// The global domain id of each part's key ids.
    domains: Vec<Vec<u32>>,
}

/// With a per-domain cap (`rules.by_domain`, `max_per_key > 0`): finds, from scores
/// alone, the candidates that surely contain the final selection: the best `limit`
/// (after the per-domain cap across parts) by score decide a threshold score;
/// everything better is kept, and at the threshold (and at a full domain's lowest
/// kept score) the ties, which only URLs can order.
fn plan(parts: &[Ranked], rules: &Rules) -> Plan {
    let n = parts.len();
    // Global domain ids.
    let mut domains: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut ndomains = 0usize;
    let mut ids: HashMap<&str, u32> = HashMap::new();
    for (p, r) in parts.iter().enumerate() {
        domains[p] = r
            .keys
            .iter()
            .map(|name| {
                *ids.entry(name).or_insert_with(|| {
                    ndomains += 1;
                    (ndomains - 1) as u32
                })
            })
            .collect();
    }
    // Walk by score: count what the domain caps let through up to `limit`.
    let mut counts = vec![0usize; ndomains];
    // Lowest score a full domain keeps.
    let mut floor: Vec<Option<f64>> = vec![None; ndomains];
    let mut taken = 0usize;
    let mut threshold: Option<f64> = None;
    walk_by_score(parts, |p, i| {
        let c = parts[p].cands[i];
        if threshold.is_some_and(|t| c.score.total_cmp(&t) == Ordering::Less) {
            return false;
        }
        let d = domains[p][c.key as usize] as usize;
        if counts[d] >= rules.max_per_key {
            return true;
        }
        counts[d] += 1;
        if counts[d] == rules.max_per_key {
            floor[d] = Some(c.score);
        }
        taken += 1;
        if taken == rules.limit {
            threshold = Some(c.score);
        }
        true
    });
    // At the threshold and at a full domain's floor, ties stay: only URLs order them.
    let rows = parts
        .iter()
        .enumerate()
        .map(|(p, r)| {
            let mut v: Vec<Cand> = r
                .cands
                .iter()
                .filter(|c| {
                    let d = domains[p][c.key as usize] as usize;
                    let below =
                        |t: Option<f64>| t.is_some_and(|t| c.score.total_cmp(&t) == Ordering::Less);
                    !below(threshold) && !below(floor[d])
                })
                .copied()
                .collect();
            v.sort_unstable_by_key(|c| c.row);
            v
        })
        .collect();
    Plan { rows, domains }
}

/// The fetch lists: `lists[segment][part]` = the rows (row numbers in the part)
/// of that part in that list, best first (score descending, then URL ascending).
pub type Lists = Vec<Vec<Vec<u32>>>;

/// The exact selection from the parts' candidates (`parts[p]` ranked by
/// [`rank_part`] from `paths[p]`): every part's candidates ordered by score
/// descending, then URL ascending, the per-domain cap applied across parts, the first
/// `rules.limit` cut into fetch lists of `per_list`.
///
/// Without a per-domain cap, the global order restricted to one part is the part's
/// own order ([`better`]: within a part, row order is URL order), so each list takes
/// a prefix of every part's candidates: [`top_prefixes`] finds them from scores and
/// reads only URLs tied at a cut, streaming. With a per-domain cap, the URLs of the
/// planned rows ([`plan`]) are read and merged.
pub fn choose(
    paths: &[PathBuf],
    parts: &[Ranked],
    rules: &Rules,
    per_list: usize,
) -> Result<Lists> {
    if needs_rows(rules) {
        return choose_by_domain(paths, parts, rules, per_list);
    }
    let ranges = choose_prefixes(paths, parts, rules, per_list)?;
    Ok(ranges
        .iter()
        .map(|list| {
            parts
                .iter()
                .zip(list)
                .map(|(r, &(from, to))| rows_of(r, from, to).unwrap_or_default())
                .collect()
        })
        .collect())
}

/// Whether [`choose`] needs the URLs of the candidates it may take (a per-domain cap:
/// a domain spans parts), so that its lists are not prefixes of the parts'
/// candidates ([`choose_prefixes`]).
pub fn needs_rows(rules: &Rules) -> bool {
    rules.by_domain && rules.capped()
}

/// The fetch lists as prefix ranges: `ranges[list][part] = (from, to)`, the part's
/// candidates `cands[from..to]` in that list. [`choose`] without a per-domain cap
/// ([`needs_rows`] false): the global order restricted to one part is the part's own
/// order ([`better`]), so each list takes the next run of every part's candidates.
pub fn choose_prefixes(
    paths: &[PathBuf],
    parts: &[Ranked],
    rules: &Rules,
    per_list: usize,
) -> Result<Vec<Vec<(usize, usize)>>> {
    let total: usize = parts.iter().map(|r| r.cands.len()).sum();
    let cuts = list_cuts(total, rules.limit, per_list);
    Ok(prefix_ranges(
        top_prefixes(paths, &mut InMemory(parts), &cuts)?,
        parts.len(),
    ))
}

/// Where the fetch lists end in the global order of `total` candidates: every
/// `per_list`, up to `limit`.
pub fn list_cuts(total: usize, limit: usize, per_list: usize) -> Vec<usize> {
    let end = total.min(limit);
    let per_list = per_list.max(1);
    (1..)
        .map(|j| (j * per_list).min(end))
        .take(end.div_ceil(per_list))
        .collect()
}

/// The fetch lists' ranges `ranges[list][part]` from each cut's prefixes
/// (`prefixes[cut][part]`: how many of the part's candidates the cut takes).
pub fn prefix_ranges(prefixes: Vec<Vec<usize>>, parts: usize) -> Vec<Vec<(usize, usize)>> {
    let mut lists = Vec::new();
    let mut from = vec![0usize; parts];
    for to in prefixes {
        lists.push(from.iter().copied().zip(to.iter().copied()).collect());
        from = to;
    }
    lists
}

/// The rows of `r`'s candidates `from..to` (a range [`choose_prefixes`] gave);
/// `None` when `r` does not have them (not the candidates the range was cut from).
pub fn rows_of(r: &Ranked, from: usize, to: usize) -> Option<Vec<u32>> {
    Some(r.cands.get(from..to)?.iter().map(|c| c.row).collect())
}

/// [`choose`] with a per-domain cap.
fn choose_by_domain(
    paths: &[PathBuf],
    parts: &[Ranked],
    rules: &Rules,
    per_list: usize,
) -> Result<Lists> {
    use rayon::prelude::*;
    let plan = plan(parts, rules);
    let urls = paths
        .par_iter()
        .zip(&plan.rows)
        .map(|(path, cands)| {
            let rows: Vec<u32> = cands.iter().map(|c| c.row).collect();
            read_urls(path, &rows)
        })
        .collect::<Result<Vec<_>>>()?;
    let cands: Vec<&[Cand]> = plan.rows.iter().map(Vec::as_slice).collect();
    let lists = select_by_domain(&cands, &urls, &plan, rules, per_list);
    Ok(lists
        .into_iter()
        .map(|list| {
            list.into_iter()
                .enumerate()
                .map(|(p, idx)| {
                    idx.into_iter()
                        .map(|i| plan.rows[p][i as usize].row)
                        .collect()
                })
                .collect()
        })
        .collect())
}

/// The score of the `m`-th best candidate of all parts (`1 <= m <=` their count;
/// each part sorted by [`better`]): a selection over sorted runs, halving the
/// widest part's window each step (O(parts x log² rows)), nothing copied.
fn kth_score(parts: &[Ranked], m: usize) -> f64 {
    let mut lo = vec![0usize; parts.len()];
    let mut hi: Vec<usize> = parts.iter().map(|r| r.cands.len()).collect();
    loop {
        let Some(p) = (0..parts.len())
            .filter(|&p| hi[p] > lo[p])
            .max_by_key(|&p| hi[p] - lo[p])
        else {
            // Unreachable for 1 <= m <= count; the lowest score is a safe answer.
            return parts
                .iter()
                .filter_map(|r| r.cands.last().map(|c| c.score))
                .min_by(f64::total_cmp)
                .unwrap_or(0.0);
        };
        let pivot = parts[p].cands[(lo[p] + hi[p]) / 2].score;
        let gt: Vec<usize> = parts
            .iter()
            .map(|r| {
                r.cands
                    .partition_point(|c| c.score.total_cmp(&pivot) == Ordering::Greater)
            })
            .collect();
        let ge: Vec<usize> = parts
            .iter()
            .map(|r| {
                r.cands
                    .partition_point(|c| c.score.total_cmp(&pivot) != Ordering::Less)
            })
            .collect();
        if gt.iter().sum::<usize>() >= m {
            // The answer is better than the pivot.
            for (h, g) in hi.iter_mut().zip(&gt) {
                *h = (*h).min(*g);
            }
        } else if ge.iter().sum::<usize>() < m {
            // The answer is worse than the pivot.
            for (l, g) in lo.iter_mut().zip(&ge) {
                *l = (*l).max(*g);
            }
        } else {
            return pivot;
        }
    }
}

/// The sorted candidates of every part (each sorted by [`better`]) as the cut of the
/// fetch lists reads them: in memory ([`InMemory`], one-process generate) or a block
/// at a time from the files of a generate job's histogram tasks
/// ([`super::cutoff::Blocks`], its cut-off). [`top_prefixes`] works on either, so
/// both cut the same lists.
pub(super) trait Runs {
    /// Each part's candidate count.
    fn lens(&self) -> Vec<usize>;
    /// The score of the `m`-th best candidate of all parts (`1 <= m <=` their count).
    fn kth(&mut self, m: usize) -> Result<f64>;
    /// Per part, how many of its candidates score above `t` (with `or_equal`: at or
    /// above it).
    fn above(&mut self, t: f64, or_equal: bool) -> Result<Vec<usize>>;
    /// The rows of part `p`'s candidates `from..to`.
    fn rows(&mut self, p: usize, from: usize, to: usize) -> Result<Vec<u32>>;

    /// A group of cuts tied at one score is made: what was read for it can go.
    fn end_group(&mut self) {}
}

/// The parts' candidates in memory.
pub(super) struct InMemory<'a>(pub &'a [Ranked]);

impl Runs for InMemory<'_> {
    fn lens(&self) -> Vec<usize> {
        self.0.iter().map(|r| r.cands.len()).collect()
    }

    fn kth(&mut self, m: usize) -> Result<f64> {
        Ok(kth_score(self.0, m))
    }

    fn above(&mut self, t: f64, or_equal: bool) -> Result<Vec<usize>> {
        Ok(self
            .0
            .iter()
            .map(|r| r.cands.partition_point(|c| outranks(c.score, t, or_equal)))
            .collect())
    }

    fn rows(&mut self, p: usize, from: usize, to: usize) -> Result<Vec<u32>> {
        Ok(rows_of(&self.0[p], from, to).unwrap_or_default())
    }
}

/// Whether `score` is above `t` (with `or_equal`: at or above), in the total order
/// of [`better`].
pub(super) fn outranks(score: f64, t: f64, or_equal: bool) -> bool {
    match score.total_cmp(&t) {
        Ordering::Greater => true,
        Ordering::Equal => or_equal,
        Ordering::Less => false,
    }
}

/// For each cut `m` of `cuts` (ascending): how many of each part's candidates
/// (sorted by [`better`]) the best `m` of all parts take (by score descending, then
/// URL ascending). Everything scored above the `m`-th best score is in; of the
/// candidates tied at it, the parts' tie runs (each in URL order) are merged by URL,
/// streaming only their URLs from the part files (`paths`), until `m` are taken.
/// Cuts that fall in the same tie share one merge.
pub(super) fn top_prefixes<R: Runs>(
    paths: &[PathBuf],
    runs: &mut R,
    cuts: &[usize],
) -> Result<Vec<Vec<usize>>> {
    let lens = runs.lens();
    let total: usize = lens.iter().sum();
    let mut out = Vec::with_capacity(cuts.len());
    let mut i = 0usize;
    while i < cuts.len() {
        let m = cuts[i];
        if m >= total || m == 0 {
            out.push(if m == 0 {
                vec![0; lens.len()]
            } else {
                lens.clone()
            });
            i += 1;
            continue;
        }
        let t = runs.kth(m)?;
        let mut stops = vec![m];
        i += 1;
        while i < cuts.len()
            && cuts[i] < total
            && runs.kth(cuts[i])?.total_cmp(&t) == Ordering::Equal
        {
            stops.push(cuts[i]);
            i += 1;
        }
        let above = runs.above(t, false)?;
        let through = runs.above(t, true)?;
        let base: usize = above.iter().sum();
        let needed: Vec<usize> = stops.iter().map(|m| m - base).collect();
        let most = needed.last().copied().unwrap_or(0);
        // Each part's tie run at `t` (its candidates `from..to`: rows ascending = URLs
        // ascending), at most `most`; the merge reads their rows as it goes.
        let ties: Vec<TieRun> = (0..lens.len())
            .filter_map(|p| {
                let run = (through[p] - above[p]).min(most);
                (run > 0).then_some(TieRun {
                    part: p,
                    from: above[p],
                    to: above[p] + run,
                })
            })
            .collect();
        for taken in merge_ties(paths, runs, &ties, &needed)? {
            let mut to = above.clone();
            for (j, run) in ties.iter().enumerate() {
                to[run.part] += taken[j];
            }
            out.push(to);
        }
        runs.end_group();
    }
    Ok(out)
}

/// A part's candidates tied at a cut's score, `from..to` of its sorted candidates.
#[derive(Debug, Clone, Copy)]
struct TieRun {
    part: usize,
    from: usize,
    to: usize,
}

/// URLs read at a time per part when merging tie runs: at most this many.
const MERGE_BATCH: usize = 8 * 1024;

/// URLs the merge of tie runs holds in all, at most (about 16 MB), whatever the number
/// of runs: a run's batch is `MERGE_HELD / runs` URLs, at least [`MERGE_MIN`].
const MERGE_HELD: usize = 256 * 1024;

/// URLs read at a time per part when merging tie runs: at least this many.
const MERGE_MIN: usize = 256;

/// Merges the tie runs `ties` by URL; for each stop of `stops` (ascending), how many
/// of the first `stop` URLs each run gives. Reads each run's rows (from `runs`) and
/// their URLs (from the part files `paths`) a batch at a time, as the merge takes
/// them: it reads about what it takes plus a batch per run, and holds one batch of
/// URLs per run (smaller the more runs there are, at least [`MERGE_MIN`]) and each
/// part's Parquet footer, no reader between batches.
fn merge_ties<R: Runs>(
    paths: &[PathBuf],
    runs: &mut R,
    ties: &[TieRun],
    stops: &[usize],
) -> Result<Vec<Vec<usize>>> {
    use std::cmp::Reverse;
    if let [_] = ties {
        return Ok(stops.iter().map(|&s| vec![s]).collect());
    }
    let batch = (MERGE_HELD / ties.len().max(1)).clamp(MERGE_MIN, MERGE_BATCH);
    let mut cursors: Vec<UrlCursor<'_>> = ties
        .iter()
        .map(|&run| UrlCursor::new(&paths[run.part], run, batch))
        .collect();
    let mut heap: BinaryHeap<Reverse<(String, usize)>> = BinaryHeap::new();
    for (j, c) in cursors.iter_mut().enumerate() {
        if let Some(u) = c.next_url(runs)? {
            heap.push(Reverse((u, j)));
        }
    }
    let mut taken = vec![0usize; ties.len()];
    let mut out = Vec::with_capacity(stops.len());
    let mut popped = 0usize;
    for &stop in stops {
        while popped < stop {
            let Some(Reverse((_, j))) = heap.pop() else {
                return Err(Error::crawl_dir(
                    &paths[ties[0].part],
                    "crawldb part changed while generate was reading it",
                ));
            };
            popped += 1;
            taken[j] += 1;
            if let Some(u) = cursors[j].next_url(runs)? {
                heap.push(Reverse((u, j)));
            }
        }
        out.push(taken.clone());
    }
    Ok(out)
}

/// Streams the URLs of a tie run, `batch` at a time: its rows read from the
/// candidates ([`Runs::rows`]), their URLs by a reader of their row groups alone,
/// made from the part's footer read once; no reader, and none of its page buffers,
/// is held between batches.
struct UrlCursor<'a> {
    path: &'a Path,
    run: TieRun,
    /// The first candidate of the run not read yet.
    next: usize,
    batch: usize,
    meta: Option<ArrowReaderMetadata>,
    urls: StringArray,
    at: usize,
}

impl<'a> UrlCursor<'a> {
    fn new(path: &'a Path, run: TieRun, batch: usize) -> Self {
        UrlCursor {
            path,
            run,
            next: run.from,
            batch,
            meta: None,
            urls: StringArray::from(Vec::<&str>::new()),
            at: 0,
        }
    }

    /// The next URL, `None` at the end.
    fn next_url<R: Runs>(&mut self, runs: &mut R) -> Result<Option<String>> {
        if self.at == self.urls.len() {
            if self.next == self.run.to {
                return Ok(None);
            }
            let end = (self.next + self.batch).min(self.run.to);
            let rows = runs.rows(self.run.part, self.next, end)?;
            let meta = match &self.meta {
                Some(m) => m.clone(),
                None => {
                    let m = footer(self.path)?;
                    self.meta = Some(m.clone());
                    m
                }
            };
            self.urls = read_urls_with(self.path, &meta, &rows)?;
            self.next = end;
            self.at = 0;
        }
        self.at += 1;
        Ok(Some(self.urls.value(self.at - 1).to_string()))
    }
}

/// The footer of the part at `path`, read once for several readers.
fn footer(path: &Path) -> Result<ArrowReaderMetadata> {
    let file = parquet::open_part(path)?;
    ArrowReaderMetadata::load(&file, ArrowReaderOptions::new()).map_err(|e| Error::parquet(path, e))
}

/// A reader of the rows `rows` (ascending, distinct) of the part at `path`, all
/// columns or only `column`, `batch_size` rows at a time. Only those rows are
/// decoded (a Parquet row selection; the others are skipped).
fn selected_reader(
    path: &Path,
    rows: &[u32],
    column: Option<&str>,
    batch_size: usize,
) -> Result<ParquetRecordBatchReader> {
    selected_reader_with(path, &footer(path)?, rows, column, batch_size)
}

/// [`selected_reader`] with the part's footer read already: only the row groups that
/// hold some of `rows` are read.
fn selected_reader_with(
    path: &Path,
    meta: &ArrowReaderMetadata,
    rows: &[u32],
    column: Option<&str>,
    batch_size: usize,
) -> Result<ParquetRecordBatchReader> {
    let changed = || Error::crawl_dir(path, "crawldb part changed while generate was reading it");
    let total = meta.metadata().file_metadata().num_rows().max(0) as u64;
    let rows_per_batch = parquet::batch_rows(meta.metadata());
    // The row groups holding the rows, and where the first of them starts.
    let (first, last) = match (rows.first(), rows.last()) {
        (Some(&a), Some(&b)) => (u64::from(a), u64::from(b)),
        _ => (0, 0),
    };
    let mut groups = Vec::new();
    let (mut start, mut base, mut end) = (0u64, None, 0u64);
    for (g, rg) in meta.metadata().row_groups().iter().enumerate() {
        let n = rg.num_rows().max(0) as u64;
        if start + n > first && start <= last {
            groups.push(g);
            base.get_or_insert(start);
            end = start + n;
        }
        start += n;
    }
    if start != total || (!rows.is_empty() && last >= total) {
        return Err(changed());
    }
    let base = base.unwrap_or(0);
    let mut selectors = Vec::new();
    let mut at = base;
    let mut i = 0usize;
    while i < rows.len() {
        let s = rows[i] as u64;
        let mut e = s + 1;
        i += 1;
        while i < rows.len() && rows[i] as u64 == e {
            e += 1;
            i += 1;
        }
        if s < at || e > end {
            return Err(changed());
        }
        if s > at {
            selectors.push(RowSelector::skip((s - at) as usize));
        }
        selectors.push(RowSelector::select((e - s) as usize));
        at = e;
    }
    if end > at {
        selectors.push(RowSelector::skip((end - at) as usize));
    }
    let mut builder =
        ParquetRecordBatchReaderBuilder::new_with_metadata(parquet::open_part(path)?, meta.clone())
            .with_row_groups(groups);
    if let Some(name) = column {
        let idx = builder
            .schema()
            .index_of(name)
            .map_err(|_| bad_column(path, name))?;
        let mask = ProjectionMask::roots(builder.parquet_schema(), [idx]);
        builder = builder.with_projection(mask);
    }
    builder
        .with_row_selection(RowSelection::from(selectors))
        .with_row_selection_policy(RowSelectionPolicy::Selectors)
        .with_batch_size(batch_size.min(rows_per_batch))
        .build()
        .map_err(|e| Error::parquet(path, e))
}

/// Pass 2: the rows `rows` (ascending, distinct) of the part at `path` as one record
/// batch with the crawldb schema, in row order.
pub fn read_rows(path: &Path, rows: &[u32]) -> Result<RecordBatch> {
    let schema = CrawlDatum::schema();
    if rows.is_empty() {
        return Ok(RecordBatch::new_empty(schema));
    }
    let arrow_err = |e: arrow::error::ArrowError| Error::arrow(path.display().to_string(), e);
    let mut picked = Vec::new();
    for batch in selected_reader(path, rows, None, parquet::READ_BATCH_ROWS)? {
        let b = batch.map_err(arrow_err)?;
        picked.push(RecordBatch::try_new(schema.clone(), b.columns().to_vec()).map_err(arrow_err)?);
    }
    let all = arrow::compute::concat_batches(&schema, &picked).map_err(arrow_err)?;
    if all.num_rows() != rows.len() {
        return Err(Error::crawl_dir(
            path,
            "crawldb part changed while generate was reading it",
        ));
    }
    Ok(all)
}

/// The URLs of the rows `rows` (ascending, distinct) of the part at `path`.
fn read_urls(path: &Path, rows: &[u32]) -> Result<StringArray> {
    if rows.is_empty() {
        return Ok(StringArray::from(Vec::<&str>::new()));
    }
    read_urls_with(path, &footer(path)?, rows)
}

/// [`read_urls`] with the part's footer read already.
fn read_urls_with(path: &Path, meta: &ArrowReaderMetadata, rows: &[u32]) -> Result<StringArray> {
    let arrow_err = |e: arrow::error::ArrowError| Error::arrow(path.display().to_string(), e);
    let mut arrays = Vec::new();
    if !rows.is_empty() {
        for batch in selected_reader_with(path, meta, rows, Some("url"), parquet::READ_BATCH_ROWS)?
        {
            arrays.push(batch.map_err(arrow_err)?.column(0).clone());
        }
    }
    let refs: Vec<&dyn Array> = arrays.iter().map(|a| a.as_ref()).collect();
    let all = if refs.is_empty() {
        StringArray::from(Vec::<&str>::new())
    } else {
        arrow::compute::concat(&refs)
            .map_err(arrow_err)?
            .as_string_opt::<i32>()
            .ok_or_else(|| bad_column(path, "url"))?
            .clone()
    };
    if all.len() != rows.len() {
        return Err(Error::crawl_dir(
            path,
            "crawldb part changed while generate was reading it",
        ));
    }
    Ok(all)
}

fn strings<'a>(b: &'a RecordBatch, name: &str) -> Result<&'a StringArray> {
    b.column_by_name(name)
        .and_then(|c| c.as_string_opt::<i32>())
        .ok_or_else(|| Error::arrow("generate", format!("crawldb rows without a {name} column")))
}

/// With a per-domain cap: merges the planned rows of all parts (`parts[p]` the
/// candidates of `plan.rows[p]`, `urls[p]` their URLs) by score descending, then URL
/// ascending (within a part, row order is URL order, so URLs are compared only
/// between parts), applies the per-domain cap across parts, keeps the first `limit`
/// and cuts them into fetch lists of `per_list`. Returns, per list, per part, the
/// indices into that part's planned rows, best first.
fn select_by_domain(
    parts: &[&[Cand]],
    urls: &[StringArray],
    plan: &Plan,
    rules: &Rules,
    per_list: usize,
) -> Lists {
    use rayon::prelude::*;
    // Each part's indices, best first.
    let orders: Vec<Vec<u32>> = parts
        .par_iter()
        .map(|p| {
            let mut o: Vec<u32> = (0..p.len() as u32).collect();
            o.sort_unstable_by(|&a, &b| better(&p[a as usize], &p[b as usize]));
            o
        })
        .collect();
    struct Head<'a> {
        score: f64,
        url: &'a str,
        part: usize,
        at: usize,
    }
    impl PartialEq for Head<'_> {
        fn eq(&self, o: &Self) -> bool {
            self.cmp(o) == Ordering::Equal
        }
    }
    impl Eq for Head<'_> {}
    impl PartialOrd for Head<'_> {
        fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
            Some(self.cmp(o))
        }
    }
    impl Ord for Head<'_> {
        // The best (highest score, then lowest URL) is the greatest.
        fn cmp(&self, o: &Self) -> Ordering {
            self.score
                .total_cmp(&o.score)
                .then_with(|| o.url.cmp(self.url))
        }
    }
    let head = |part: usize, at: usize| {
        orders[part].get(at).map(|&i| Head {
            score: parts[part][i as usize].score,
            url: urls[part].value(i as usize),
            part,
            at,
        })
    };
    let mut heap: BinaryHeap<Head<'_>> = (0..parts.len()).filter_map(|p| head(p, 0)).collect();
    let mut counts: HashMap<u32, usize> = HashMap::new();
    let mut lists: Vec<Vec<Vec<u32>>> = Vec::new();
    let mut taken = 0usize;
    while let Some(h) = heap.pop() {
        if taken >= rules.limit {
            break;
        }
        let (p, i) = (h.part, orders[h.part][h.at]);
        if let Some(next) = head(p, h.at + 1) {
            heap.push(next);
        }
        let key = parts[p][i as usize].key;
        let cnt = counts.entry(plan.domains[p][key as usize]).or_default();
        if *cnt >= rules.max_per_key {
            continue;
        }
        *cnt += 1;
        let j = taken / per_list.max(1);
        if lists.len() <= j {
            lists.push(vec![Vec::new(); parts.len()]);
        }
        lists[j][p].push(i);
        taken += 1;
    }
    lists
}

/// The hosts of a part's pass-2 rows as dense ids numbered in host-name order
/// (rows are in URL order, so a host's rows mostly come in one run).
#[derive(Debug, Clone)]
pub struct HostIds {
    /// Host id of each row.
    pub of_row: Vec<u32>,
    /// Number of hosts.
    pub hosts: usize,
}

impl HostIds {
    /// Numbers the hosts of `batch` (crawldb schema).
    pub fn new(batch: &RecordBatch) -> Result<Self> {
        let hosts = strings(batch, "host")?;
        let mut ids: HashMap<&str, u32> = HashMap::new();
        let mut of_row = Vec::with_capacity(hosts.len());
        let mut last: Option<(&str, u32)> = None;
        for r in 0..hosts.len() {
            let h = hosts.value(r);
            let id = match last {
                Some((lh, id)) if lh == h => id,
                _ => {
                    let n = ids.len() as u32;
                    *ids.entry(h).or_insert(n)
                }
            };
            last = Some((h, id));
            of_row.push(id);
        }
        // Renumber in name order.
        let mut names: Vec<(&str, u32)> = ids.into_iter().collect();
        names.sort_unstable();
        let mut rank = vec![0u32; names.len()];
        for (i, (_, id)) in names.iter().enumerate() {
            rank[*id as usize] = i as u32;
        }
        for id in &mut of_row {
            *id = rank[*id as usize];
        }
        Ok(HostIds {
            of_row,
            hosts: names.len(),
        })
    }
}

/// Orders one fetch list's rows of a part so hosts alternate: round robin over the
/// hosts in name order, each host's rows in the order given (best first). `rows`
/// index the rows `hosts` numbers; returns them reordered.
pub fn interleave(hosts: &HostIds, rows: &[u32]) -> Vec<u32> {
    // Rows grouped by host (counting sort), keeping the given order within a host.
    let mut start = vec![0u32; hosts.hosts + 1];
    for &r in rows {
        start[hosts.of_row[r as usize] as usize + 1] += 1;
    }
    for i in 0..hosts.hosts {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut grouped = vec![0u32; rows.len()];
    for &r in rows {
        let h = hosts.of_row[r as usize] as usize;
        grouped[fill[h] as usize] = r;
        fill[h] += 1;
    }
    // Round robin over the non-empty hosts.
    let mut queues: Vec<(u32, u32)> = (0..hosts.hosts)
        .filter(|&h| start[h] < start[h + 1])
        .map(|h| (start[h], start[h + 1]))
        .collect();
    let mut out = Vec::with_capacity(rows.len());
    while !queues.is_empty() {
        for q in queues.iter_mut() {
            out.push(grouped[q.0 as usize]);
            q.0 += 1;
        }
        queues.retain(|q| q.0 < q.1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::parquet::PartWriter;
    use std::collections::BTreeMap;

    fn datum(url: &str, host: &str, score: f64) -> CrawlDatum {
        let mut d = CrawlDatum::unfetched(url.into(), host.into(), 100, 1);
        d.score = score;
        d
    }

    fn write_part(path: &Path, mut rows: Vec<CrawlDatum>) {
        rows.sort_by(|a, b| a.url.cmp(&b.url));
        let mut w = PartWriter::<CrawlDatum>::create(path).unwrap();
        for r in rows {
            w.push(r).unwrap();
        }
        w.finish().unwrap();
    }

    /// The whole selection on parts: lists[segment][part] = URLs in written order.
    fn run(paths: &[std::path::PathBuf], rules: &Rules, per_list: usize) -> Vec<Vec<Vec<String>>> {
        let ranked: Vec<Ranked> = paths
            .iter()
            .map(|p| rank_part(p, rules, &HashSet::new()).unwrap())
            .collect();
        let lists = choose(paths, &ranked, rules, per_list).unwrap();
        // As generate writes them: per part, the rows of all lists read at once.
        lists
            .iter()
            .map(|list| {
                list.iter()
                    .enumerate()
                    .map(|(p, rows)| {
                        let mut all: Vec<u32> =
                            lists.iter().flat_map(|l| l[p].iter().copied()).collect();
                        all.sort_unstable();
                        let batch = read_rows(&paths[p], &all).unwrap();
                        let idx: Vec<u32> = rows
                            .iter()
                            .map(|r| all.partition_point(|x| x < r) as u32)
                            .collect();
                        let urls = strings(&batch, "url").unwrap();
                        interleave(&HostIds::new(&batch).unwrap(), &idx)
                            .into_iter()
                            .map(|r| urls.value(r as usize).to_string())
                            .collect()
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn interleaves_hosts_best_first() {
        // Rows 0..5: a1 (a, 3.0), a2 (a, 2.0), a3 (a, 1.0), b1 (b, 1.0), c1 (c, 5.0),
        // given best first (score desc, then URL).
        let hosts = StringArray::from(vec!["a", "a", "a", "b", "c"]);
        let b = RecordBatch::try_from_iter([("host", Arc::new(hosts) as _)]).unwrap();
        let ids = HostIds::new(&b).unwrap();
        assert_eq!(interleave(&ids, &[4, 0, 1, 2, 3]), [0, 3, 4, 1, 2]);
    }

    /// Hosts left out (back-off) and hosts with their own lower cap (time budget),
    /// with and without a cap for every host.
    #[test]
    fn skips_hosts_and_caps_single_hosts() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("part-00000.parquet");
        let mut rows = Vec::new();
        for h in ["a.test", "b.test", "c.test"] {
            for i in 0..5 {
                rows.push(datum(&format!("http://{h}/{i}"), h, 5.0 - i as f64));
            }
        }
        write_part(&path, rows);
        for max_per_key in [0, 4] {
            let rules = Rules {
                skip_hosts: ["c.test".to_string()].into(),
                host_caps: [("a.test".to_string(), 2)].into(),
                now: 500,
                min_score: 0.0,
                max_per_key,
                by_domain: false,
                limit: 100,
            };
            let r = rank_part(&path, &rules, &HashSet::new()).unwrap();
            assert_eq!((r.due, r.backed_off), (10, 5));
            let mut per_host: HashMap<&str, usize> = HashMap::new();
            for c in &r.cands {
                *per_host.entry(&*r.keys[c.key as usize]).or_default() += 1;
            }
            let b = if max_per_key == 0 { 5 } else { 4 };
            assert_eq!(
                per_host,
                [("a.test", 2), ("b.test", b)].into(),
                "{max_per_key}"
            );
            // a.test keeps its two best.
            let a_rows: Vec<u32> = r
                .cands
                .iter()
                .filter(|c| &*r.keys[c.key as usize] == "a.test")
                .map(|c| c.row)
                .collect();
            assert_eq!(a_rows, [0, 1]);
        }
    }

    #[test]
    fn ranks_a_part_with_caps_ties_and_filters() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("part-00000.parquet");
        let mut rows = vec![
            datum("http://a.test/1", "a.test", 1.0),
            datum("http://a.test/2", "a.test", 5.0),
            datum("http://a.test/3", "a.test", 1.0),
            datum("http://a.test/4", "a.test", 0.5),
            datum("http://b.test/1", "b.test", 9.0),
            datum("http://b.test/2", "b.test", 8.0),
            datum("http://c.test/1", "c.test", 7.0),
            datum("http://c.test/2", "c.test", -1.0),
        ];
        rows[4].fetch_time = 1000; // not due
        rows[5].status = DbStatus::DbDuplicate;
        write_part(&path, rows);
        let rules = Rules {
            skip_hosts: HashSet::new(),
            host_caps: HashMap::new(),
            now: 500,
            min_score: 0.0,
            max_per_key: 2,
            by_domain: false,
            limit: 10,
        };
        let pending: HashSet<String> = ["http://c.test/1".to_string()].into();
        let r = rank_part(&path, &rules, &pending).unwrap();
        assert_eq!((r.scanned, r.due, r.pending), (8, 4, 1));
        // a.test capped at 2: score 5 and the first of the two tied at 1.0 (by url).
        let rows: Vec<u32> = r.cands.iter().map(|c| c.row).collect();
        assert_eq!(rows, [1, 0]);
        assert_eq!(&*r.keys[r.cands[0].key as usize], "a.test");

        // The chosen rows are read, in row order, with all columns.
        let lists = choose(
            std::slice::from_ref(&path),
            std::slice::from_ref(&r),
            &rules,
            10,
        )
        .unwrap();
        assert_eq!(lists, [[[1, 0]]]);
        let b = read_rows(&path, &[0, 1]).unwrap();
        let urls: Vec<&str> = strings(&b, "url").unwrap().iter().flatten().collect();
        assert_eq!(urls, ["http://a.test/1", "http://a.test/2"]);
        assert_eq!(b.schema(), CrawlDatum::schema());
    }

    /// A tiny deterministic generator (no rand dependency).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, n: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) % n
        }
    }

    /// The rules stated plainly: every eligible row of every part sorted by score
    /// descending then URL, at most `max_per_key` per host or domain, the first
    /// `limit`, cut into lists of `per_list`; within a list's part, hosts round
    /// robin in name order, each host's rows best first.
    fn reference(
        parts: &[Vec<CrawlDatum>],
        rules: &Rules,
        per_list: usize,
    ) -> Vec<Vec<Vec<String>>> {
        let mut all: Vec<(usize, &CrawlDatum)> = parts
            .iter()
            .enumerate()
            .flat_map(|(p, rows)| rows.iter().map(move |d| (p, d)))
            .filter(|(_, d)| {
                d.fetch_time <= rules.now
                    && d.score >= rules.min_score
                    && d.status != DbStatus::DbDuplicate
            })
            .collect();
        all.sort_by(|a, b| {
            b.1.score
                .total_cmp(&a.1.score)
                .then_with(|| a.1.url.cmp(&b.1.url))
        });
        let mut counts: HashMap<String, usize> = HashMap::new();
        let mut lists: Vec<Vec<Vec<&CrawlDatum>>> = Vec::new();
        let mut taken = 0;
        for (p, d) in all {
            if taken >= rules.limit {
                break;
            }
            if rules.max_per_key > 0 {
                let key = if rules.by_domain {
                    registrable_domain(&d.host)
                } else {
                    d.host.clone()
                };
                let c = counts.entry(key).or_default();
                if *c >= rules.max_per_key {
                    continue;
                }
                *c += 1;
            }
            let j = taken / per_list;
            if lists.len() <= j {
                lists.push(vec![Vec::new(); parts.len()]);
            }
            lists[j][p].push(d);
            taken += 1;
        }
        lists
            .into_iter()
            .map(|list| {
                list.into_iter()
                    .map(|rows| {
                        let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
                        for d in &rows {
                            groups
                                .entry(d.host.as_str())
                                .or_default()
                                .push(d.url.as_str());
                        }
                        let mut qs: Vec<_> = groups.into_values().map(|v| v.into_iter()).collect();
                        let mut out = Vec::new();
                        while out.len() < rows.len() {
                            for q in qs.iter_mut() {
                                if let Some(u) = q.next() {
                                    out.push(u.to_string());
                                }
                            }
                        }
                        out
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn selection_equals_the_plain_rules_on_random_parts() {
        let t = tempfile::tempdir().unwrap();
        let mut g = Lcg(7);
        for case in 0..40 {
            let nparts = 1 + g.next(4) as usize;
            let mut parts: Vec<Vec<CrawlDatum>> = vec![Vec::new(); nparts];
            // Hosts share registrable domains across parts; http and https URLs
            // of one host do not sort together; scores tie often.
            let nhosts = 1 + g.next(12);
            for h in 0..nhosts {
                let host = format!("h{}.d{}.test", h, h % 3);
                let p = partition_for(&host, nparts);
                for k in 0..g.next(30) {
                    let scheme = if g.next(4) == 0 { "https" } else { "http" };
                    let url = format!("{scheme}://{host}/p{k}");
                    let mut d = datum(&url, &host, g.next(5) as f64 / 4.0);
                    if g.next(10) == 0 {
                        d.fetch_time = 1000;
                    }
                    if g.next(15) == 0 {
                        d.status = DbStatus::DbDuplicate;
                    }
                    parts[p].push(d);
                }
            }
            for rows in &mut parts {
                rows.sort_by(|a, b| a.url.cmp(&b.url));
            }
            let paths: Vec<_> = (0..nparts)
                .map(|p| {
                    let path = t.path().join(format!("c{case}-{p}.parquet"));
                    write_part(&path, parts[p].clone());
                    path
                })
                .collect();
            for by_domain in [false, true] {
                for max_per_key in [0, 1, 3, 7] {
                    for (limit, per_list) in [(5, 5), (12, 4), (40, 15), (1000, 1000)] {
                        let rules = Rules {
                            skip_hosts: HashSet::new(),
                            host_caps: HashMap::new(),
                            now: 500,
                            min_score: 0.25,
                            max_per_key,
                            by_domain,
                            limit,
                        };
                        assert_eq!(
                            run(&paths, &rules, per_list),
                            reference(&parts, &rules, per_list),
                            "case {case}, {rules:?}, per list {per_list}"
                        );
                    }
                }
            }
        }
    }

    /// Ties spanning parts longer than one merge batch, cut into several lists
    /// inside the tie: the streamed URL merge gives the plain rules' answer.
    #[test]
    fn long_ties_across_parts_are_merged_by_url() {
        let t = tempfile::tempdir().unwrap();
        let nparts = 3;
        let mut parts: Vec<Vec<CrawlDatum>> = vec![Vec::new(); nparts];
        let mut g = Lcg(11);
        for h in 0..1000 {
            let host = format!("h{h}.test");
            let p = partition_for(&host, nparts);
            for k in 0..40 {
                // Mostly tied at 1.0; a few better rows above the tie.
                let score = if g.next(50) == 0 { 2.0 } else { 1.0 };
                parts[p].push(datum(&format!("http://{host}/{k}"), &host, score));
            }
        }
        for rows in &mut parts {
            rows.sort_by(|a, b| a.url.cmp(&b.url));
        }
        let paths: Vec<_> = (0..nparts)
            .map(|p| {
                let path = t.path().join(format!("p{p}.parquet"));
                write_part(&path, parts[p].clone());
                path
            })
            .collect();
        for max_per_key in [0, 30] {
            let rules = Rules {
                skip_hosts: HashSet::new(),
                host_caps: HashMap::new(),
                now: 500,
                min_score: 0.0,
                max_per_key,
                by_domain: false,
                limit: 25_000,
            };
            let got = run(&paths, &rules, 9_000);
            assert_eq!(got.len(), 3);
            assert_eq!(got, reference(&parts, &rules, 9_000), "{rules:?}");
        }
    }

    fn partition_for(host: &str, n: usize) -> usize {
        crate::store::partition::Partitioner::by_host(n).of_host(host)
    }
}
