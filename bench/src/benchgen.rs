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

use trawl::datum::{CrawlDatum, DbStatus, FetchStatus, now_millis};
use trawl::error::Result;
use trawl::records::{CrawlParseRecord, FetchRecord};
use trawl::store::layout::{CrawlDbMeta, CrawlDir, SEGMENT_META, SegmentMeta};
use trawl::store::parquet::{self, PartWriter, StagedDataset};
use trawl::store::partition::Partitioner;

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

/// The shape of the generated data, derived from a [`BenchSpec`].
struct Plan {
    /// Partitions.
    n: usize,
    /// Hosts (at least 1).
    hosts: u64,
    /// Pages per host (at least 1).
    per_host: u64,
    /// The time every row is stamped with.
    now: i64,
    /// The hosts of each partition.
    by_part: Vec<Vec<u64>>,
}

impl Plan {
    fn new(spec: &BenchSpec) -> Plan {
        let n = spec.partitions;
        let hosts = spec.hosts.max(1);
        let mut by_part: Vec<Vec<u64>> = (0..n).map(|_| Vec::new()).collect();
        for j in 0..hosts {
            by_part[Partitioner::by_host(n).of_host(&host(j))].push(j);
        }
        Plan {
            n,
            hosts,
            per_host: (spec.urls / hosts).max(1),
            now: now_millis(),
            by_part,
        }
    }

    /// The pages of a host that were fetched: every tenth.
    fn fetched_of(&self) -> std::iter::StepBy<std::ops::Range<u64>> {
        (0..self.per_host).step_by(10)
    }
}

/// Writes the crawldb and the segment; returns the segment's path.
pub fn generate(root: &Path, spec: &BenchSpec) -> Result<std::path::PathBuf> {
    let dir = CrawlDir::new(root);
    let plan = Plan::new(spec);
    let _lock = dir
        .versioned(trawl::store::names::VersionedDb::CrawlDb)
        .lock("benchgen")?;
    write_crawldb(&dir, &plan)?;
    write_segment(&dir, &plan)
}

/// The crawldb: every URL, a third of them fetched a day ago.
fn write_crawldb(dir: &CrawlDir, plan: &Plan) -> Result<()> {
    let now = plan.now;
    let mut meta = CrawlDbMeta {
        partitions: plan.n,
        seed_hosts: Vec::new(),
        ..CrawlDbMeta::default()
    };
    trawl::crawldb::write_version(dir, &mut meta, "benchgen", |i, w| {
        let mut rows: Vec<CrawlDatum> = Vec::new();
        for &j in &plan.by_part[i] {
            for k in 0..plan.per_host {
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
    Ok(())
}

/// The segment: `crawl_fetch` and `crawl_parse` of the fetched tenth, and its meta.
fn write_segment(dir: &CrawlDir, plan: &Plan) -> Result<std::path::PathBuf> {
    let name = trawl::store::layout::new_segment_name(dir, plan.now);
    let seg = StagedDataset::new(&dir.segments_dir().join(&name))?;
    write_dataset(seg.path(), "crawl_fetch", plan.n, &|i, fr, _| {
        fetch_rows(plan, i, fr)
    })?;
    write_dataset(seg.path(), "crawl_parse", plan.n, &|i, _, pr| {
        parse_rows(plan, i, pr)
    })?;
    let fetched = plan.hosts * plan.fetched_of().count() as u64;
    parquet::write_json(
        &seg.path().join(SEGMENT_META),
        &SegmentMeta {
            name,
            generated_time: plan.now,
            partitions: plan.n,
            partition_key: Default::default(),
            urls: fetched,
            redirects_in_crawl_parse: false,
        },
    )?;
    seg.commit()
}

/// Writes `dataset` of the segment at `seg`: `n` parts filled by `f`, in parallel.
fn write_dataset(seg: &Path, dataset: &str, n: usize, f: &FillPart<'_>) -> Result<()> {
    let path = seg.join(dataset);
    std::fs::create_dir_all(&path).map_err(|e| trawl::error::Error::io(&path, e))?;
    (0..n)
        .into_par_iter()
        .map(|i| {
            let (mut fr, mut pr) = (Vec::new(), Vec::new());
            f(i, &mut fr, &mut pr);
            let p = path.join(parquet::part_name(i));
            if dataset == "crawl_fetch" {
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
}

/// The `crawl_fetch` rows of partition `i` (one in a hundred gone).
fn fetch_rows(plan: &Plan, i: usize, fr: &mut Vec<FetchRecord>) {
    for &j in &plan.by_part[i] {
        for k in plan.fetched_of() {
            let mut r = fetch_ok(url(j, k), host(j), plan.now, 1.0, 1);
            if k % 100 == 50 {
                r.status = FetchStatus::FetchGone;
            }
            fr.push(r);
        }
    }
}

/// The `crawl_fetch` row of `url` fetched at `now` with a 200 (a 10 kB HTML page).
pub fn fetch_ok(url: String, host: String, now: i64, score: f64, depth: i32) -> FetchRecord {
    FetchRecord {
        url,
        host,
        status: FetchStatus::FetchSuccess,
        reason: "ok".into(),
        fetch_time: now,
        http_status: Some(200),
        content_type: Some("text/html".into()),
        content_length: Some(10_000),
        redirect_target: None,
        etag: None,
        last_modified: None,
        response_time_ms: Some(50),
        score,
        depth,
    }
}

/// The `crawl_parse` rows of partition `i`: a signature per fetched page and the
/// links into its hosts.
fn parse_rows(plan: &Plan, i: usize, pr: &mut Vec<CrawlParseRecord>) {
    let (hosts, per_host) = (plan.hosts, plan.per_host);
    for &t in &plan.by_part[i] {
        for k in plan.fetched_of() {
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
            for k in plan.fetched_of() {
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
}

/// Writes a seed file of `n` URLs over `hosts` hosts to `path`, one a line in the
/// shape of issue 15's measurements: URL `i` is
/// `http://h{i % hosts}.example.com/p/{i / hosts}.html`. Returns its size in bytes.
pub fn write_seeds(path: &Path, n: u64, hosts: u64) -> Result<u64> {
    use std::io::Write;
    let io = |e| trawl::error::Error::io(path, e);
    let file = std::fs::File::create(path).map_err(io)?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
    let hosts = hosts.max(1);
    for i in 0..n {
        writeln!(w, "http://h{}.example.com/p/{}.html", i % hosts, i / hosts).map_err(io)?;
    }
    w.flush().map_err(io)?;
    let f = w.into_inner().map_err(|e| io(e.into_error()))?;
    Ok(f.metadata().map_err(io)?.len())
}
