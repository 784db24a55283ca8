//! `generate`: selects the URLs due for fetching into new segments (fetch lists).
//!
//! Per crawldb partition, in parallel, the part is streamed once; due and eligible
//! rows go into a bounded per-host (or per-domain) top-k heap of `max_per_host`
//! entries, and the partition keeps its best `top_n x segments` rows. The partition
//! results are merged by (score desc, url asc), the per-host/domain cap is applied
//! again over all partitions (a domain may span partitions) and the best
//! `top_n x segments` are cut into `segments` fetch lists of at most `top_n`.
//! Memory: O(hosts x max_per_host + partitions x top_n), never the whole crawldb.
//!
//! URLs held by a pending fetch list (a segment not yet applied by updatedb,
//! generated less than `generate.gen_delay` seconds ago) are not handed out again.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::config::Config;
use crate::crawldb::stream::{DatumStream, read_partition};
use crate::crawldb::{current_part, lock};
use crate::datum::{CrawlDatum, DbStatus, Millis, now_millis};
use crate::error::{IoContext, Result};
use crate::layout::{self, CrawlDir, SEGMENT_META, SegmentMeta};
use crate::storage::{self, PartWriter, StagedDataset, partition_for_host};
use crate::urls::registrable_domain;

/// Options of one generate run (flags over `[generate]`).
#[derive(Debug, Clone)]
pub struct GenerateOptions {
    /// URLs per fetch list.
    pub top_n: usize,
    /// Cap per host or domain (0 = none).
    pub max_per_host: usize,
    /// Fetch lists to cut.
    pub segments: usize,
    /// The time deciding due-ness (ms); normally now.
    pub now: Millis,
}

impl GenerateOptions {
    /// Options from the config, for now.
    pub fn from_config(cfg: &Config) -> Self {
        GenerateOptions {
            top_n: cfg.generate.top_n,
            max_per_host: cfg.generate.max_per_host,
            segments: 1,
            now: now_millis(),
        }
    }
}

/// What generate did.
#[derive(Debug, Clone, Default)]
pub struct GenerateReport {
    /// The segments written, in order.
    pub segments: Vec<PathBuf>,
    /// URLs per segment.
    pub urls: Vec<u64>,
    /// Rows of the crawldb read.
    pub scanned: u64,
    /// Rows due and eligible (before caps).
    pub due: u64,
    /// Due rows held by pending fetch lists.
    pub pending: u64,
}

/// Whether a row's status may be generated (Nutch: everything but duplicates).
pub fn status_eligible(s: DbStatus) -> bool {
    !matches!(s, DbStatus::DbDuplicate)
}

/// A candidate ordered so that the *worst* is the greatest (max-heap top = worst).
struct Cand(CrawlDatum);

impl Cand {
    fn better_first(a: &CrawlDatum, b: &CrawlDatum) -> Ordering {
        b.score.total_cmp(&a.score).then_with(|| a.url.cmp(&b.url))
    }
}

impl PartialEq for Cand {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Cand {}
impl PartialOrd for Cand {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Cand {
    fn cmp(&self, o: &Self) -> Ordering {
        Cand::better_first(&self.0, &o.0)
    }
}

fn push_bounded(heap: &mut BinaryHeap<Cand>, d: CrawlDatum, k: usize) {
    if k == 0 {
        return;
    }
    if heap.len() < k {
        heap.push(Cand(d));
    } else if let Some(worst) = heap.peek()
        && Cand::better_first(&d, &worst.0) == Ordering::Less
    {
        heap.pop();
        heap.push(Cand(d));
    }
}

/// The key `max_per_host` counts by.
fn cap_key(host: &str, by_domain: bool) -> String {
    if by_domain {
        registrable_domain(host)
    } else {
        host.to_string()
    }
}

#[derive(Default)]
struct PartResult {
    best: Vec<CrawlDatum>,
    scanned: u64,
    due: u64,
    pending: u64,
}

/// Streams one part and keeps its best eligible rows.
fn select_partition(
    path: &Path,
    cfg: &Config,
    opts: &GenerateOptions,
    pending: &HashSet<String>,
    limit: usize,
) -> Result<PartResult> {
    let by_domain = cfg.generate.count_mode == "domain";
    let mut res = PartResult::default();
    let mut per_key: HashMap<String, BinaryHeap<Cand>> = HashMap::new();
    let mut all: BinaryHeap<Cand> = BinaryHeap::new();
    let mut db = DatumStream::open(path)?;
    while let Some(d) = db.next_row()? {
        res.scanned += 1;
        if d.fetch_time > opts.now || !status_eligible(d.status) || d.score < cfg.generate.min_score
        {
            continue;
        }
        if pending.contains(&d.url) {
            res.pending += 1;
            continue;
        }
        res.due += 1;
        if opts.max_per_host == 0 {
            push_bounded(&mut all, d, limit);
        } else {
            let key = cap_key(&d.host, by_domain);
            push_bounded(per_key.entry(key).or_default(), d, opts.max_per_host);
        }
    }
    for (_, heap) in per_key {
        for c in heap {
            push_bounded(&mut all, c.0, limit);
        }
    }
    res.best = all.into_iter().map(|c| c.0).collect();
    Ok(res)
}

/// URLs of pending fetch lists, per crawldb partition.
fn pending_urls(
    dir: &CrawlDir,
    applied: &[String],
    n: usize,
    now: Millis,
    gen_delay: i64,
) -> Result<Vec<HashSet<String>>> {
    let mut out: Vec<HashSet<String>> = (0..n).map(|_| HashSet::new()).collect();
    for s in dir.segments()? {
        if applied.iter().any(|a| a == s.name()) || !s.has("crawl_generate") {
            continue;
        }
        let meta = s.meta()?;
        if meta.generated_time + gen_delay * 1000 < now {
            continue;
        }
        for (i, set) in out.iter_mut().enumerate() {
            let rows: Vec<CrawlDatum> = read_partition(
                &s.dataset("crawl_generate"),
                i,
                n,
                meta.partitions,
                |d: &CrawlDatum| &d.host,
            )?;
            set.extend(rows.into_iter().map(|d| d.url));
        }
    }
    Ok(out)
}

/// Runs generate on `root`. An empty report (no segments) means nothing was due.
pub fn run(root: &Path, cfg: &Config, opts: &GenerateOptions) -> Result<GenerateReport> {
    let dir = CrawlDir::open_existing(root)?;
    // Held so that two generates cannot hand out the same URLs and updatedb cannot
    // apply a segment while we read the pending lists.
    let _lock = lock(&dir, "generate")?;
    let meta = dir.crawldb_meta()?;
    let n = meta.partitions;
    let k = opts.segments.max(1);
    let limit = opts.top_n.saturating_mul(k);
    let pending = pending_urls(
        &dir,
        &meta.applied_segments,
        n,
        opts.now,
        cfg.generate.gen_delay,
    )?;
    let pb = crate::cli::progress_bar(n as u64, "generate");
    let parts = (0..n)
        .into_par_iter()
        .map(|i| {
            let r = select_partition(&current_part(&dir, i), cfg, opts, &pending[i], limit);
            pb.inc(1);
            r
        })
        .collect::<Result<Vec<_>>>()?;
    pb.finish_and_clear();

    let mut report = GenerateReport::default();
    let mut cands = Vec::new();
    for p in parts {
        report.scanned += p.scanned;
        report.due += p.due;
        report.pending += p.pending;
        cands.extend(p.best);
    }
    cands.par_sort_unstable_by(Cand::better_first);
    let by_domain = cfg.generate.count_mode == "domain";
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut chosen = Vec::new();
    for d in cands {
        if chosen.len() >= limit {
            break;
        }
        if opts.max_per_host > 0 {
            let c = counts.entry(cap_key(&d.host, by_domain)).or_default();
            if *c >= opts.max_per_host {
                continue;
            }
            *c += 1;
        }
        chosen.push(d);
    }
    let mut chosen = chosen.into_iter();
    for _ in 0..k {
        let list: Vec<CrawlDatum> = chosen.by_ref().take(opts.top_n).collect();
        if list.is_empty() {
            break;
        }
        report.urls.push(list.len() as u64);
        report
            .segments
            .push(write_segment(&dir, n, list, opts.now)?);
    }
    Ok(report)
}

/// Writes one segment with its `crawl_generate`, staged and renamed into place.
fn write_segment(dir: &CrawlDir, n: usize, list: Vec<CrawlDatum>, now: Millis) -> Result<PathBuf> {
    let name = layout::new_segment_name(dir, now);
    let dest = dir.segments_dir().join(&name);
    let staged = StagedDataset::new(&dest)?;
    let gen_dir = staged.path().join("crawl_generate");
    std::fs::create_dir_all(&gen_dir).at(&gen_dir)?;
    let urls = list.len() as u64;
    let mut parts: Vec<Vec<CrawlDatum>> = (0..n).map(|_| Vec::new()).collect();
    for d in list {
        parts[partition_for_host(&d.host, n)].push(d);
    }
    parts
        .into_par_iter()
        .enumerate()
        .map(|(i, rows)| {
            let mut w = PartWriter::<CrawlDatum>::create(&gen_dir.join(storage::part_name(i)))?;
            for d in interleave_hosts(rows) {
                w.push(d)?;
            }
            w.finish().map(|_| ())
        })
        .collect::<Result<Vec<()>>>()?;
    storage::write_atomic(
        &gen_dir.join(storage::SUCCESS_MARKER),
        chrono::Utc::now().to_rfc3339().as_bytes(),
    )?;
    let meta = SegmentMeta {
        name: name.clone(),
        generated_time: now,
        partitions: n,
        urls,
    };
    storage::write_json(&staged.path().join(SEGMENT_META), &meta)?;
    staged.commit()
}

/// Orders rows so hosts alternate (round robin over hosts, each host's rows best first).
pub fn interleave_hosts(rows: Vec<CrawlDatum>) -> Vec<CrawlDatum> {
    let total = rows.len();
    let mut by_host: BTreeMap<String, Vec<CrawlDatum>> = BTreeMap::new();
    for d in rows {
        by_host.entry(d.host.clone()).or_default().push(d);
    }
    let mut queues: Vec<std::vec::IntoIter<CrawlDatum>> = by_host
        .into_values()
        .map(|mut v| {
            v.sort_by(Cand::better_first);
            v.into_iter()
        })
        .collect();
    let mut out = Vec::with_capacity(total);
    while out.len() < total {
        for q in queues.iter_mut() {
            if let Some(d) = q.next() {
                out.push(d);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(url: &str, host: &str, score: f64) -> CrawlDatum {
        let mut d = CrawlDatum::unfetched(url.into(), host.into(), 0, 1);
        d.score = score;
        d
    }

    #[test]
    fn bounded_heap_keeps_best_with_url_ties() {
        let mut h = BinaryHeap::new();
        for (u, s) in [("c", 1.0), ("a", 1.0), ("b", 2.0), ("d", 0.5), ("e", 1.0)] {
            push_bounded(&mut h, d(u, "h", s), 3);
        }
        let mut got: Vec<CrawlDatum> = h.into_iter().map(|c| c.0).collect();
        got.sort_by(Cand::better_first);
        let urls: Vec<&str> = got.iter().map(|d| d.url.as_str()).collect();
        assert_eq!(urls, ["b", "a", "c"]);
    }

    #[test]
    fn interleaves_hosts() {
        let rows = vec![
            d("a1", "a", 3.0),
            d("a2", "a", 2.0),
            d("a3", "a", 1.0),
            d("b1", "b", 1.0),
            d("c1", "c", 5.0),
        ];
        let urls: Vec<String> = interleave_hosts(rows).into_iter().map(|d| d.url).collect();
        assert_eq!(urls, ["a1", "b1", "c1", "a2", "a3"]);
    }

    #[test]
    fn duplicates_are_never_generated() {
        assert!(!status_eligible(DbStatus::DbDuplicate));
        for s in DbStatus::ALL
            .into_iter()
            .filter(|s| *s != DbStatus::DbDuplicate)
        {
            assert!(status_eligible(s), "{s}");
        }
    }
}
