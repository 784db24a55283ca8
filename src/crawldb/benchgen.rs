//! Synthetic data for benchmarks: a crawldb of `urls` URLs over `hosts` hosts and a
//! segment in which 10% of them were fetched, each with 5 outlinks (about half to
//! URLs not yet in the crawldb).
//!
//! Host `j` is `h{j}.bench.test`; its pages are `http://h{j}.bench.test/p{k:07}`.
//! Page `(j, k)` is fetched when `k % 10 == 0`; its outlink `m` (0..5) points to host
//! `(j + m) % hosts`, page `(2k + m) % (2 * per_host)`: pages at or beyond `per_host`
//! are new. Everything is generated per partition, in parallel.

use std::path::Path;

use rayon::prelude::*;

use crate::datum::{CrawlDatum, DbStatus, FetchStatus, now_millis};
use crate::error::Result;
use crate::records::{CrawlParseRecord, FetchRecord};
use crate::store::layout::{CrawlDbMeta, CrawlDir, SEGMENT_META, SegmentMeta};
use crate::store::parquet::{self, PartWriter, StagedDataset, partition_for_host};

/// Fills the fetch or parse rows of one partition.
type FillPart<'a> = dyn Fn(usize, &mut Vec<FetchRecord>, &mut Vec<CrawlParseRecord>) + Sync + 'a;

/// What to generate.
#[derive(Debug, Clone)]
pub struct BenchSpec {
    /// URLs in the crawldb.
    pub urls: u64,
    /// Hosts (URLs are spread evenly).
    pub hosts: u64,
    /// Partitions of the crawldb and the segment.
    pub partitions: usize,
}

fn host(j: u64) -> String {
    format!("h{j}.bench.test")
}

fn url(j: u64, k: u64) -> String {
    format!("http://h{j}.bench.test/p{k:07}")
}

/// Writes the crawldb and the segment; returns the segment's path.
pub fn generate(root: &Path, spec: &BenchSpec) -> Result<std::path::PathBuf> {
    let dir = CrawlDir::new(root);
    let n = spec.partitions;
    let hosts = spec.hosts.max(1);
    let per_host = (spec.urls / hosts).max(1);
    let now = now_millis();
    let mut by_part: Vec<Vec<u64>> = (0..n).map(|_| Vec::new()).collect();
    for j in 0..hosts {
        by_part[partition_for_host(&host(j), n)].push(j);
    }

    let _lock = crate::crawldb::lock(&dir, "benchgen")?;
    let mut meta = CrawlDbMeta {
        partitions: n,
        seed_hosts: Vec::new(),
        ..CrawlDbMeta::default()
    };
    crate::crawldb::write_version(&dir, &mut meta, "benchgen", |i, w| {
        let mut rows: Vec<CrawlDatum> = Vec::new();
        for &j in &by_part[i] {
            for k in 0..per_host {
                let mut d = CrawlDatum::unfetched(url(j, k), host(j), now - 1000, 30 * 86400);
                d.score = ((j * 31 + k * 17) % 1000) as f64 / 1000.0;
                if k % 3 == 1 {
                    d.status = DbStatus::DbFetched;
                    d.fetched_time = Some(now - 86_400_000);
                    d.signature = Some(format!("{:016x}", j * 1_000_003 + k));
                }
                rows.push(d);
            }
        }
        rows.sort_unstable_by(|a, b| a.url.cmp(&b.url));
        for r in rows {
            w.push(r)?;
        }
        Ok(())
    })?;

    let name = crate::store::layout::new_segment_name(&dir, now);
    let seg = StagedDataset::new(&dir.segments_dir().join(&name))?;
    let write = |dataset: &str, f: &FillPart<'_>| -> Result<()> {
        let path = seg.path().join(dataset);
        std::fs::create_dir_all(&path).map_err(|e| crate::error::Error::io(&path, e))?;
        (0..n)
            .into_par_iter()
            .map(|i| {
                let (mut fr, mut pr) = (Vec::new(), Vec::new());
                f(i, &mut fr, &mut pr);
                let p = path.join(parquet::part_name(i));
                if dataset == crate::store::names::SegmentDataset::CrawlFetch.as_str() {
                    let mut w = PartWriter::<FetchRecord>::create(&p)?;
                    for r in fr {
                        w.push(r)?;
                    }
                    w.finish()?;
                } else {
                    let mut w = PartWriter::<CrawlParseRecord>::create(&p)?;
                    for r in pr {
                        w.push(r)?;
                    }
                    w.finish()?;
                }
                Ok(())
            })
            .collect::<Result<Vec<()>>>()?;
        parquet::write_atomic(&path.join(parquet::SUCCESS_MARKER), b"benchgen\n")
    };
    let fetched_of = |_host: u64| (0..per_host).step_by(10);
    write(
        crate::store::names::SegmentDataset::CrawlFetch.as_str(),
        &|i, fr, _| {
            for &j in &by_part[i] {
                for k in fetched_of(j) {
                    fr.push(FetchRecord {
                        url: url(j, k),
                        host: host(j),
                        status: if k % 100 == 50 {
                            FetchStatus::FetchGone
                        } else {
                            FetchStatus::FetchSuccess
                        },
                        reason: "ok".into(),
                        fetch_time: now,
                        http_status: Some(200),
                        content_type: Some("text/html".into()),
                        content_length: Some(10_000),
                        redirect_target: None,
                        etag: None,
                        last_modified: None,
                        response_time_ms: Some(50),
                        score: 1.0,
                        depth: 1,
                    });
                }
            }
        },
    )?;
    write(
        crate::store::names::SegmentDataset::CrawlParse.as_str(),
        &|i, _, pr| {
            for &t in &by_part[i] {
                for k in fetched_of(t) {
                    pr.push(CrawlParseRecord {
                        url: url(t, k),
                        host: host(t),
                        kind: "signature".into(),
                        from_url: None,
                        anchor: None,
                        score: 0.0,
                        depth: 0,
                        signature: Some(format!("{:016x}", t * 7 + k)),
                    });
                }
                // Inlinks of host t: from hosts t - m, link m.
                for m in 0..5u64 {
                    let j = (t + hosts - m % hosts) % hosts;
                    for k in fetched_of(j) {
                        let target = (2 * k + m) % (2 * per_host);
                        pr.push(CrawlParseRecord {
                            url: url(t, target),
                            host: host(t),
                            kind: "link".into(),
                            from_url: Some(url(j, k)),
                            anchor: Some("link".into()),
                            score: 0.2,
                            depth: 2,
                            signature: None,
                        });
                    }
                }
            }
        },
    )?;
    let fetched = (0..hosts).map(|j| fetched_of(j).count() as u64).sum();
    parquet::write_json(
        &seg.path().join(SEGMENT_META),
        &SegmentMeta {
            name,
            generated_time: now,
            partitions: n,
            urls: fetched,
        },
    )?;
    seg.commit()
}
