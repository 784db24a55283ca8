//! The fetch benchmark behind the `fetchbench` binary: an in-process loopback
//! server with H hosts x P pages (reached through `fetch.resolve`), a hand-made
//! segment, and the real fetcher; reports pages/s, MB/s and peak RSS, and for a
//! politeness run the achieved rate as a fraction of the ideal H/delay. With
//! `https`, the server speaks TLS only (certificates per SNI name from a throw-away
//! [`TestCa`], trusted through `fetch.ca_file`), so the run measures TLS with
//! keep-alive: one handshake per host connection.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::rt::TokioIo;

use testweb::TestCa;
use trawl::config::Config;
use trawl::datum::CrawlDatum;
use trawl::error::{Error, IoContext, Result};
use trawl::store::layout::SegmentMeta;
use trawl::store::parquet::{self, PartWriter, StagedDataset};

/// One benchmark scenario.
#[derive(Debug, Clone)]
pub struct BenchSpec {
    /// Hosts.
    pub hosts: usize,
    /// Pages per host.
    pub pages: usize,
    /// Body bytes per page.
    pub page_bytes: usize,
    /// `fetch.delay` (seconds).
    pub delay: f64,
    /// `fetch.max_connections`.
    pub max_connections: usize,
    /// `https://` URLs, served over TLS.
    pub https: bool,
    /// `fetch.checkpoint_interval` (seconds; 0 = no checkpoints).
    pub checkpoint_interval: f64,
}

/// What one scenario measured.
#[derive(Debug, Clone)]
pub struct BenchReport {
    /// The scenario.
    pub spec: BenchSpec,
    /// Pages fetched (2xx).
    pub pages: u64,
    /// Content bytes.
    pub bytes: u64,
    /// Wall time of the fetch (seconds).
    pub secs: f64,
    /// Peak resident set size of the process so far (kB, VmHWM), if known.
    pub peak_rss_kb: Option<u64>,
    /// CPU seconds (user + system) used during the run, by thread group.
    pub cpu: CpuSplit,
    /// The 1-minute load average when the run ended (other processes' load).
    pub load_avg: Option<f64>,
    /// Connections the server accepted (TLS handshakes with `https`): about one per
    /// host when keep-alive works.
    pub connections: u64,
}

/// CPU seconds of the run split by who used them.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuSplit {
    /// The benchmark's loopback server (one runtime thread).
    pub server: f64,
    /// The writer thread (Parquet encoding, zstd).
    pub writer: f64,
    /// Everything else: the fetcher's runtime (HTTP client, scheduling, robots).
    pub fetcher: f64,
}

impl CpuSplit {
    /// All CPU seconds of the process.
    pub fn total(&self) -> f64 {
        self.server + self.writer + self.fetcher
    }
}

/// Thread name of the benchmark server's runtime.
const SERVER_THREAD: &str = "bench-server";
/// Clock ticks per second of /proc stat times (USER_HZ, 100 on Linux).
const TICKS_PER_SEC: f64 = 100.0;

/// (comm, utime + stime ticks) of a /proc stat line; comm is in parentheses and may
/// hold spaces.
fn stat_ticks(stat: &str) -> Option<(String, u64)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat.get(open + 1..close)?.to_string();
    let mut f = stat.get(close + 2..)?.split_whitespace();
    // After the comm: state is field 3; utime and stime are fields 14 and 15.
    let utime: u64 = f.nth(11)?.parse().ok()?;
    let stime: u64 = f.next()?.parse().ok()?;
    Some((comm, utime + stime))
}

/// CPU ticks of the whole process so far.
fn process_ticks() -> u64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| stat_ticks(&s))
        .map_or(0, |(_, t)| t)
}

/// Samples the CPU ticks of this process's threads every 100 ms (threads end before
/// the run does, so their last sample is what counts), to split a run's CPU time.
pub struct CpuSampler {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    join: std::thread::JoinHandle<std::collections::HashMap<u64, (String, u64)>>,
    start_total: u64,
    start_threads: std::collections::HashMap<u64, (String, u64)>,
}

fn sample_threads(into: &mut std::collections::HashMap<u64, (String, u64)>) {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return;
    };
    for t in tasks.flatten() {
        let Some(tid) = t.file_name().to_str().and_then(|n| n.parse::<u64>().ok()) else {
            continue;
        };
        if let Some(v) = std::fs::read_to_string(t.path().join("stat"))
            .ok()
            .and_then(|s| stat_ticks(&s))
        {
            into.insert(tid, v);
        }
    }
}

impl CpuSampler {
    /// Starts sampling.
    pub fn start() -> CpuSampler {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut start_threads = std::collections::HashMap::new();
        sample_threads(&mut start_threads);
        let flag = stop.clone();
        let join = std::thread::spawn(move || {
            let mut seen = std::collections::HashMap::new();
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                sample_threads(&mut seen);
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            sample_threads(&mut seen);
            seen
        });
        CpuSampler {
            stop,
            join,
            start_total: process_ticks(),
            start_threads,
        }
    }

    /// Stops sampling; the CPU seconds since `start`, split by thread group.
    pub fn finish(self) -> CpuSplit {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let seen = self.join.join().unwrap_or_default();
        let total = process_ticks().saturating_sub(self.start_total);
        let mut split = CpuSplit::default();
        let mut named = 0u64;
        for (tid, (comm, ticks)) in seen {
            let before = self.start_threads.get(&tid).map_or(0, |(_, t)| *t);
            let n = ticks.saturating_sub(before);
            if comm == SERVER_THREAD {
                split.server += n as f64 / TICKS_PER_SEC;
                named += n;
            } else if comm == "fetch-writer" {
                split.writer += n as f64 / TICKS_PER_SEC;
                named += n;
            }
        }
        split.fetcher = total.saturating_sub(named) as f64 / TICKS_PER_SEC;
        split
    }
}

/// The 1-minute load average, from /proc/loadavg.
pub fn load_avg() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

impl BenchReport {
    /// Pages per second.
    pub fn pages_per_sec(&self) -> f64 {
        self.pages as f64 / self.secs.max(1e-9)
    }

    /// Megabytes (10^6) per second.
    pub fn mb_per_sec(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.secs.max(1e-9)
    }

    /// Achieved rate over the ideal politeness-bound rate `hosts / delay`.
    pub fn politeness_fraction(&self) -> Option<f64> {
        (self.spec.delay > 0.0)
            .then(|| self.pages_per_sec() / (self.spec.hosts as f64 / self.spec.delay))
    }
}

/// Peak RSS (VmHWM, kB) of this process.
pub fn peak_rss_kb() -> Option<u64> {
    crate::measure::vm_hwm_kb("self")
}

/// Serves every path of every host: `/robots.txt` is 404, anything else a page; over
/// TLS with `tls`. Counts accepted connections in `conns`.
async fn serve(
    listener: tokio::net::TcpListener,
    page: Bytes,
    tls: Option<tokio_rustls::TlsAcceptor>,
    conns: Arc<AtomicU64>,
) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        let _ = stream.set_nodelay(true);
        conns.fetch_add(1, Ordering::Relaxed);
        let page = page.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req: hyper::Request<_>| {
                let page = page.clone();
                async move {
                    let mut resp = hyper::Response::new(Full::new(page));
                    if req.uri().path() == "/robots.txt" {
                        *resp.body_mut() = Full::new(Bytes::new());
                        *resp.status_mut() = hyper::StatusCode::NOT_FOUND;
                    } else {
                        resp.headers_mut().insert(
                            hyper::header::CONTENT_TYPE,
                            hyper::header::HeaderValue::from_static("text/html"),
                        );
                    }
                    Ok::<_, Infallible>(resp)
                }
            });
            let http = hyper::server::conn::http1::Builder::new();
            match tls {
                None => {
                    let _ = http.serve_connection(TokioIo::new(stream), svc).await;
                }
                Some(acceptor) => {
                    if let Ok(s) = acceptor.accept(stream).await {
                        let _ = http.serve_connection(TokioIo::new(s), svc).await;
                    }
                }
            }
        });
    }
}

/// Writes a segment of `hosts x pages` URLs under `root`; returns its path.
fn write_segment(root: &Path, spec: &BenchSpec, partitions: usize) -> Result<PathBuf> {
    let name = "20000101000000";
    let seg = trawl::store::layout::CrawlDir::new(root)
        .segments_dir()
        .join(name);
    std::fs::create_dir_all(&seg).at(&seg)?;
    let staged =
        StagedDataset::new(&seg.join(trawl::store::names::SegmentDataset::CrawlGenerate.as_str()))?;
    let mut parts: Vec<PartWriter<CrawlDatum>> = (0..partitions)
        .map(|i| PartWriter::create(&staged.part_path(i)))
        .collect::<Result<_>>()?;
    // Page-major order, so hosts are interleaved in the file as generate does.
    for p in 0..spec.pages {
        for h in 0..spec.hosts {
            let host = format!("h{h}.bench.test");
            let scheme = if spec.https { "https" } else { "http" };
            let url = format!("{scheme}://{host}/p{p}.html");
            let d = CrawlDatum::unfetched(url, host.clone(), 0, 86400);
            parts[trawl::store::partition::Partitioner::by_host(partitions).of_host(&host)]
                .push(d)?;
        }
    }
    for p in parts {
        p.finish()?;
    }
    staged.commit()?;
    let meta = SegmentMeta {
        name: name.to_string(),
        generated_time: trawl::datum::now_millis(),
        partitions,
        partition_key: Default::default(),
        urls: (spec.hosts * spec.pages) as u64,
        redirects_in_crawl_parse: false,
    };
    parquet::write_json(&seg.join(trawl::store::layout::SEGMENT_META), &meta)?;
    Ok(seg)
}

/// Runs one scenario in a fresh crawl directory under `work` (removed afterwards).
pub fn run_bench(spec: &BenchSpec, work: &Path) -> Result<BenchReport> {
    let root = work.join(format!("fetchbench-{}", std::process::id()));
    if root.exists() {
        std::fs::remove_dir_all(&root).at(&root)?;
    }
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name(SERVER_THREAD)
        .enable_all()
        .build()
        .map_err(|e| Error::Net(format!("cannot start the server runtime: {e}")))?;
    let listener = server_rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .map_err(|e| Error::Net(format!("cannot bind 127.0.0.1:0: {e}")))?;
    let addr: SocketAddr = listener
        .local_addr()
        .map_err(|e| Error::Net(format!("no local address: {e}")))?;
    let page = Bytes::from(std::iter::repeat_n(b'x', spec.page_bytes).collect::<Vec<u8>>());
    let mut cfg = Config::default();
    let tls = if spec.https {
        let ca = Arc::new(TestCa::generate()?);
        std::fs::create_dir_all(&root).at(&root)?;
        let ca_file = root.join("ca.pem");
        parquet::write_atomic(&ca_file, ca.ca_pem().as_bytes())?;
        cfg.fetch.ca_file = ca_file;
        Some(tokio_rustls::TlsAcceptor::from(ca.server_config()?))
    } else {
        None
    };
    let conns = Arc::new(AtomicU64::new(0));
    server_rt.spawn(serve(listener, page, tls, conns.clone()));

    cfg.fetch.delay = spec.delay;
    cfg.fetch.checkpoint_interval = spec.checkpoint_interval;
    cfg.fetch.max_connections = spec.max_connections;
    cfg.fetch.per_host_connections = 1;
    cfg.fetch
        .resolve
        .insert("*.bench.test".into(), addr.to_string());
    let seg = write_segment(&root, spec, cfg.crawl.partitions)?;
    let sampler = CpuSampler::start();
    let started = Instant::now();
    let summary = trawl::fetch::run(
        &trawl::stage::StageCtx::new(&root, cfg),
        &trawl::fetch::FetchOpts { segment: Some(seg) },
    )?;
    let secs = started.elapsed().as_secs_f64();
    let cpu = sampler.finish();
    server_rt.shutdown_background();
    std::fs::remove_dir_all(&root).at(&root)?;
    Ok(BenchReport {
        spec: spec.clone(),
        pages: summary.stats.pages,
        bytes: summary.stats.bytes,
        secs,
        peak_rss_kb: peak_rss_kb(),
        cpu,
        load_avg: load_avg(),
        connections: conns.load(Ordering::Relaxed),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Over TLS every page arrives and each host uses one connection (one handshake).
    /// A small delay lets each connection go back to the pool before the host's next
    /// request (with none, the client may race a new connection against the return).
    #[test]
    fn https_bench_fetches_every_page_on_one_connection_per_host() {
        let dir = tempfile::tempdir().unwrap();
        let spec = BenchSpec {
            hosts: 3,
            pages: 5,
            page_bytes: 1000,
            delay: 0.01,
            max_connections: 8,
            https: true,
            checkpoint_interval: 10.0,
        };
        let r = run_bench(&spec, dir.path()).unwrap();
        assert_eq!(r.pages, 15);
        assert_eq!(r.bytes, 15_000);
        assert_eq!(r.connections, 3);
    }
}
