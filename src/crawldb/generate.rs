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

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::config::Config;
use crate::crawldb::select::{self, Cand, Rules};
use crate::crawldb::stream::read_partition;
use crate::crawldb::{current_part, lock};
use crate::datum::{CrawlDatum, DbStatus, Millis, now_millis};
use crate::error::{IoContext, Result};
use crate::layout::{self, CrawlDir, SEGMENT_META, SegmentMeta};
use crate::storage::{self, PartWriter, StagedDataset};

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
    let rules = Rules {
        now: opts.now,
        min_score: cfg.generate.min_score,
        max_per_key: opts.max_per_host,
        by_domain: cfg.generate.count_mode == "domain",
        limit: opts.top_n.saturating_mul(k),
    };
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
            let r = select::rank_part(&current_part(&dir, i), &rules, &pending[i]);
            pb.inc(1);
            r
        })
        .collect::<Result<Vec<_>>>()?;
    pb.finish_and_clear();
    drop(pending);

    let mut report = GenerateReport::default();
    let mut cands: Vec<(usize, Cand)> = Vec::new();
    for (i, p) in parts.into_iter().enumerate() {
        report.scanned += p.scanned;
        report.due += p.due;
        report.pending += p.pending;
        cands.extend(p.cands.into_iter().map(|c| (i, c)));
    }
    cands.par_sort_unstable_by(|a, b| select::better_first(&a.1, &b.1));
    // Host caps are exact per part (a host lives in one part); a domain may span
    // parts, so its cap is applied again over all of them.
    let mut counts: HashMap<std::sync::Arc<str>, usize> = HashMap::new();
    // lists[segment][part] = candidates
    let mut lists: Vec<Vec<Vec<Cand>>> = Vec::new();
    let mut taken = 0usize;
    for (i, c) in cands {
        if taken >= rules.limit {
            break;
        }
        if rules.by_domain && rules.max_per_key > 0 {
            let cnt = counts.entry(c.key.clone()).or_default();
            if *cnt >= rules.max_per_key {
                continue;
            }
            *cnt += 1;
        }
        let j = taken / opts.top_n.max(1);
        if lists.len() <= j {
            lists.push((0..n).map(|_| Vec::new()).collect());
        }
        lists[j][i].push(c);
        taken += 1;
    }
    if lists.is_empty() {
        return Ok(report);
    }
    // Stage every segment, then fill part i of each from one read of crawldb part i.
    let mut staged = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for (j, list) in lists.iter().enumerate() {
        let mut t = opts.now;
        let name = loop {
            let name = layout::new_segment_name(&dir, t);
            if !names.contains(&name) {
                break name;
            }
            t += 1000;
        };
        let urls: u64 = list.iter().map(|p| p.len() as u64).sum();
        let seg = StagedDataset::new(&dir.segments_dir().join(&name))?;
        let gen_dir = seg.path().join("crawl_generate");
        std::fs::create_dir_all(&gen_dir).at(&gen_dir)?;
        storage::write_json(
            &seg.path().join(SEGMENT_META),
            &SegmentMeta {
                name: name.clone(),
                generated_time: opts.now,
                partitions: n,
                urls,
            },
        )?;
        report.urls.push(urls);
        names.push(name);
        staged.push(seg);
        debug_assert_eq!(staged.len(), j + 1);
    }
    let gen_dirs: Vec<PathBuf> = staged
        .iter()
        .map(|s| s.path().join("crawl_generate"))
        .collect();
    // Transpose to per part: part i -> one row-order list per segment.
    let mut per_part: Vec<Vec<Vec<u32>>> = (0..n).map(|_| Vec::new()).collect();
    for list in lists {
        for (i, rows) in list.into_iter().enumerate() {
            per_part[i].push(select::interleave(rows));
        }
    }
    per_part
        .into_par_iter()
        .enumerate()
        .map(|(i, rows)| {
            let mut writers = gen_dirs
                .iter()
                .map(|d| PartWriter::<CrawlDatum>::create(&d.join(storage::part_name(i))))
                .collect::<Result<Vec<_>>>()?;
            select::copy_rows(&current_part(&dir, i), &rows, &mut writers)?;
            for w in writers {
                w.finish()?;
            }
            Ok(())
        })
        .collect::<Result<Vec<()>>>()?;
    for (seg, d) in staged.into_iter().zip(&gen_dirs) {
        storage::write_atomic(
            &d.join(storage::SUCCESS_MARKER),
            chrono::Utc::now().to_rfc3339().as_bytes(),
        )?;
        report.segments.push(seg.commit()?);
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

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
