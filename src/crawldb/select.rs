//! generate's columnar kernels: pass 1 ranks a crawldb part from a projection of
//! five columns (no row decoding); pass 2 copies the chosen rows, as Arrow arrays,
//! into the fetch lists' parts.
//!
//! Within a part, rows are sorted by URL, so a row's index orders it like its URL:
//! the per-host heaps break score ties by index and never look at the URL string.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{Array, AsArray, BooleanArray, RecordBatch, UInt32Array};
use arrow::datatypes::{Float64Type, TimestampMillisecondType};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::datum::{CrawlDatum, DbStatus, Millis};
use crate::error::{Error, Result};
use crate::storage::{self, PartWriter};
use crate::urls::registrable_domain;

/// Columns of the crawldb schema pass 1 reads.
const COL_URL: usize = 0;
const COL_HOST: usize = 1;
const COL_STATUS: usize = 2;
const COL_FETCH_TIME: usize = 3;
const COL_SCORE: usize = 8;

/// What makes a row eligible and how it is capped.
#[derive(Debug, Clone)]
pub struct Rules {
    /// Due at or before this time (ms).
    pub now: Millis,
    /// Minimum score.
    pub min_score: f64,
    /// Cap per key (0 = none).
    pub max_per_key: usize,
    /// Cap by registrable domain instead of host.
    pub by_domain: bool,
    /// Rows kept per part (top_n x segments).
    pub limit: usize,
}

/// A candidate row of one part.
#[derive(Debug, Clone)]
pub struct Cand {
    /// Its score.
    pub score: f64,
    /// Its row index in the part.
    pub row: u32,
    /// Its URL.
    pub url: Box<str>,
    /// Its host.
    pub host: Arc<str>,
    /// What the cap counts (host or registrable domain).
    pub key: Arc<str>,
}

/// Heap order within one part: the worst (lowest score, then highest row) is greatest.
struct Worst(Cand);

impl PartialEq for Worst {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Worst {}
impl PartialOrd for Worst {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Worst {
    fn cmp(&self, o: &Self) -> Ordering {
        o.0.score
            .total_cmp(&self.0.score)
            .then(self.0.row.cmp(&o.0.row))
    }
}

fn beats(score: f64, row: u32, worst: &Cand) -> bool {
    score > worst.score || (score == worst.score && row < worst.row)
}

/// Whether a bounded heap of size `k` would admit (score, row).
fn admits(heap: &BinaryHeap<Worst>, k: usize, score: f64, row: u32) -> bool {
    k > 0 && (heap.len() < k || heap.peek().is_some_and(|w| beats(score, row, &w.0)))
}

fn push(heap: &mut BinaryHeap<Worst>, k: usize, c: Cand) {
    if heap.len() >= k {
        heap.pop();
    }
    heap.push(Worst(c));
}

/// Pass 1 result for one part.
#[derive(Debug, Default)]
pub struct Ranked {
    /// The part's best candidates (at most `limit`), any order.
    pub cands: Vec<Cand>,
    /// Rows read.
    pub scanned: u64,
    /// Rows due and eligible.
    pub due: u64,
    /// Due rows held by pending fetch lists.
    pub pending: u64,
}

/// Pass 1: ranks the part at `path` (missing = empty).
pub fn rank_part(path: &Path, rules: &Rules, pending: &HashSet<String>) -> Result<Ranked> {
    let mut out = Ranked::default();
    if !path.is_file() {
        return Ok(out);
    }
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| Error::parquet(path, e))?;
    let mask = ProjectionMask::roots(
        builder.parquet_schema(),
        [COL_URL, COL_HOST, COL_STATUS, COL_FETCH_TIME, COL_SCORE],
    );
    let reader = builder
        .with_projection(mask)
        .with_batch_size(storage::ROW_GROUP_ROWS)
        .build()
        .map_err(|e| Error::parquet(path, e))?;
    let bad = |what: &str| {
        Error::crawl_dir(
            path,
            format!("crawldb part has an unexpected {what} column; is it a trawl crawldb?"),
        )
    };
    let mut per_key: HashMap<Arc<str>, BinaryHeap<Worst>> = HashMap::new();
    let mut all: BinaryHeap<Worst> = BinaryHeap::new();
    let mut last: Option<(Arc<str>, Arc<str>)> = None;
    let duplicate = DbStatus::DbDuplicate.as_str();
    let mut row: u32 = 0;
    for batch in reader {
        let batch = batch.map_err(|e| Error::arrow(path.display().to_string(), e))?;
        // Projected columns keep schema order: url, host, status, fetch_time, score.
        let url = batch
            .column(0)
            .as_string_opt::<i32>()
            .ok_or_else(|| bad("url"))?;
        let host = batch
            .column(1)
            .as_string_opt::<i32>()
            .ok_or_else(|| bad("host"))?;
        let status = batch
            .column(2)
            .as_string_opt::<i32>()
            .ok_or_else(|| bad("status"))?;
        let ft = batch
            .column(3)
            .as_primitive_opt::<TimestampMillisecondType>()
            .ok_or_else(|| bad("fetch_time"))?;
        let score = batch
            .column(4)
            .as_primitive_opt::<Float64Type>()
            .ok_or_else(|| bad("score"))?;
        for i in 0..batch.num_rows() {
            let r = row;
            row += 1;
            out.scanned += 1;
            let s = score.value(i);
            if ft.value(i) > rules.now || s < rules.min_score || status.value(i) == duplicate {
                continue;
            }
            if !pending.is_empty() && pending.contains(url.value(i)) {
                out.pending += 1;
                continue;
            }
            out.due += 1;
            let h = host.value(i);
            if last.as_ref().is_none_or(|(lh, _)| &**lh != h) {
                let ha: Arc<str> = Arc::from(h);
                let key = if rules.by_domain {
                    Arc::from(registrable_domain(h).as_str())
                } else {
                    ha.clone()
                };
                last = Some((ha, key));
            }
            let Some((ha, key)) = &last else { continue };
            let heap = if rules.max_per_key == 0 {
                &mut all
            } else {
                match per_key.get_mut(&**key) {
                    Some(h) => h,
                    None => per_key.entry(key.clone()).or_default(),
                }
            };
            let k = if rules.max_per_key == 0 {
                rules.limit
            } else {
                rules.max_per_key
            };
            if admits(heap, k, s, r) {
                let c = Cand {
                    score: s,
                    row: r,
                    url: url.value(i).into(),
                    host: ha.clone(),
                    key: key.clone(),
                };
                push(heap, k, c);
            }
        }
    }
    for (_, heap) in per_key {
        for Worst(c) in heap {
            if admits(&all, rules.limit, c.score, c.row) {
                push(&mut all, rules.limit, c);
            }
        }
    }
    out.cands = all.into_iter().map(|w| w.0).collect();
    Ok(out)
}

/// Global order: score descending, then URL ascending.
pub fn better_first(a: &Cand, b: &Cand) -> Ordering {
    b.score.total_cmp(&a.score).then_with(|| a.url.cmp(&b.url))
}

/// Orders one fetch list's rows of a part so hosts alternate (round robin over
/// hosts, each host's rows best first); returns row indices.
pub fn interleave(mut rows: Vec<Cand>) -> Vec<u32> {
    rows.sort_by(better_first);
    let total = rows.len();
    let mut by_host: BTreeMap<Arc<str>, std::vec::IntoIter<Cand>> = BTreeMap::new();
    let mut groups: BTreeMap<Arc<str>, Vec<Cand>> = BTreeMap::new();
    for c in rows {
        groups.entry(c.host.clone()).or_default().push(c);
    }
    for (h, v) in groups {
        by_host.insert(h, v.into_iter());
    }
    let mut queues: Vec<_> = by_host.into_values().collect();
    let mut out = Vec::with_capacity(total);
    while out.len() < total {
        for q in queues.iter_mut() {
            if let Some(c) = q.next() {
                out.push(c.row);
            }
        }
    }
    out
}

/// Pass 2: reads the part at `path` and writes, for each fetch list `j`, the rows
/// `lists[j]` (row indices, in the order given) into `writers[j]`.
pub fn copy_rows(
    path: &Path,
    lists: &[Vec<u32>],
    writers: &mut [PartWriter<CrawlDatum>],
) -> Result<()> {
    let mut wanted: Vec<u32> = lists.iter().flatten().copied().collect();
    if wanted.is_empty() {
        return Ok(());
    }
    wanted.sort_unstable();
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| Error::parquet(path, e))?
        .with_batch_size(storage::ROW_GROUP_ROWS)
        .build()
        .map_err(|e| Error::parquet(path, e))?;
    let arrow_err = |e: arrow::error::ArrowError| Error::arrow(path.display().to_string(), e);
    let schema = CrawlDatum::schema();
    let mut picked = Vec::new();
    let mut next = 0usize;
    let mut base: u32 = 0;
    for batch in reader {
        let batch = batch.map_err(|e| Error::arrow(path.display().to_string(), e))?;
        let n = batch.num_rows() as u32;
        let mut mask = vec![false; n as usize];
        let mut any = false;
        while next < wanted.len() && wanted[next] < base + n {
            mask[(wanted[next] - base) as usize] = true;
            any = true;
            next += 1;
        }
        if any {
            let b = arrow::compute::filter_record_batch(&batch, &BooleanArray::from(mask))
                .map_err(arrow_err)?;
            picked.push(
                RecordBatch::try_new(schema.clone(), b.columns().to_vec()).map_err(arrow_err)?,
            );
        }
        base += n;
    }
    let all = arrow::compute::concat_batches(&schema, &picked).map_err(arrow_err)?;
    drop(picked);
    // Position of each wanted row in `all` (wanted is sorted, as `all` is).
    let pos: HashMap<u32, u32> = wanted
        .iter()
        .enumerate()
        .map(|(i, r)| (*r, i as u32))
        .collect();
    for (list, w) in lists.iter().zip(writers.iter_mut()) {
        if list.is_empty() {
            continue;
        }
        let idx: UInt32Array = list.iter().map(|r| pos.get(r).copied()).collect();
        if idx.null_count() > 0 {
            return Err(Error::crawl_dir(
                path,
                "crawldb part changed while generate was reading it",
            ));
        }
        let b = arrow::compute::take_record_batch(&all, &idx).map_err(arrow_err)?;
        w.write_batch(&b)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn datum(url: &str, host: &str, score: f64) -> CrawlDatum {
        let mut d = CrawlDatum::unfetched(url.into(), host.into(), 100, 1);
        d.score = score;
        d
    }

    fn cand(url: &str, host: &str, score: f64, row: u32) -> Cand {
        Cand {
            score,
            row,
            url: url.into(),
            host: Arc::from(host),
            key: Arc::from(host),
        }
    }

    #[test]
    fn interleaves_hosts_best_first() {
        let rows = vec![
            cand("a1", "a", 3.0, 0),
            cand("a2", "a", 2.0, 1),
            cand("a3", "a", 1.0, 2),
            cand("b1", "b", 1.0, 3),
            cand("c1", "c", 5.0, 4),
        ];
        assert_eq!(interleave(rows), [0, 3, 4, 1, 2]);
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
        let mut w = PartWriter::<CrawlDatum>::create(&path).unwrap();
        for r in rows {
            w.push(r).unwrap();
        }
        w.finish().unwrap();
        let rules = Rules {
            now: 500,
            min_score: 0.0,
            max_per_key: 2,
            by_domain: false,
            limit: 10,
        };
        let pending: HashSet<String> = ["http://c.test/1".to_string()].into();
        let r = rank_part(&path, &rules, &pending).unwrap();
        assert_eq!((r.scanned, r.due, r.pending), (8, 4, 1));
        let mut got: Vec<Cand> = r.cands;
        got.sort_by(better_first);
        let urls: Vec<&str> = got.iter().map(|c| &*c.url).collect();
        // a.test capped at 2: score 5 and the first of the two tied at 1.0 (by url).
        assert_eq!(urls, ["http://a.test/2", "http://a.test/1"]);

        // copy_rows writes the chosen rows, in the order asked.
        let out = t.path().join("out.parquet");
        let mut ws = vec![PartWriter::<CrawlDatum>::create(&out).unwrap()];
        copy_rows(&path, &[vec![1, 0, 6]], &mut ws).unwrap();
        for w in ws {
            w.finish().unwrap();
        }
        let back: Vec<CrawlDatum> = storage::read_part_all(&out).unwrap();
        let urls: Vec<&str> = back.iter().map(|d| d.url.as_str()).collect();
        assert_eq!(
            urls,
            ["http://a.test/2", "http://a.test/1", "http://c.test/1"]
        );
        assert_eq!(back[0].score, 5.0);
    }
}
