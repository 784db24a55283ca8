//! The fetch benchmark behind the `fetchbench` binary: an in-process loopback
//! server with H hosts x P pages (reached through `fetch.resolve`), a hand-made
//! segment, and the real fetcher; reports pages/s, MB/s and peak RSS, and for a
//! politeness run the achieved rate as a fraction of the ideal H/delay.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Instant;

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::rt::TokioIo;

use crate::config::Config;
use crate::datum::CrawlDatum;
use crate::error::{Error, IoContext, Result};
use crate::layout::SegmentMeta;
use crate::storage::{self, PartWriter, StagedDataset};

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

/// Peak RSS (VmHWM, kB) of this process, from /proc/self/status.
pub fn peak_rss_kb() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Serves every path of every host: `/robots.txt` is 404, anything else a page.
async fn serve(listener: tokio::net::TcpListener, page: Bytes) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        let page = page.clone();
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
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}

/// Writes a segment of `hosts x pages` URLs under `root`; returns its path.
fn write_segment(root: &Path, spec: &BenchSpec, partitions: usize) -> Result<PathBuf> {
    let name = "20000101000000";
    let seg = root.join("segments").join(name);
    std::fs::create_dir_all(&seg).at(&seg)?;
    let staged = StagedDataset::new(&seg.join("crawl_generate"))?;
    let mut parts: Vec<PartWriter<CrawlDatum>> = (0..partitions)
        .map(|i| PartWriter::create(&staged.part_path(i)))
        .collect::<Result<_>>()?;
    // Page-major order, so hosts are interleaved in the file as generate does.
    for p in 0..spec.pages {
        for h in 0..spec.hosts {
            let host = format!("h{h}.bench.test");
            let url = format!("http://{host}/p{p}.html");
            let d = CrawlDatum::unfetched(url, host.clone(), 0, 86400);
            parts[storage::partition_for_host(&host, partitions)].push(d)?;
        }
    }
    for p in parts {
        p.finish()?;
    }
    staged.commit()?;
    let meta = SegmentMeta {
        name: name.to_string(),
        generated_time: crate::datum::now_millis(),
        partitions,
        urls: (spec.hosts * spec.pages) as u64,
    };
    storage::write_json(&seg.join("_meta.json"), &meta)?;
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
    server_rt.spawn(serve(listener, page));

    let mut cfg = Config::default();
    cfg.fetch.delay = spec.delay;
    cfg.fetch.max_connections = spec.max_connections;
    cfg.fetch.per_host_connections = 1;
    cfg.fetch
        .resolve
        .insert("*.bench.test".into(), addr.to_string());
    let seg = write_segment(&root, spec, cfg.crawl.partitions)?;
    let started = Instant::now();
    let summary = crate::fetch::run(&cfg, &root, Some(&seg))?;
    let secs = started.elapsed().as_secs_f64();
    server_rt.shutdown_background();
    std::fs::remove_dir_all(&root).at(&root)?;
    Ok(BenchReport {
        spec: spec.clone(),
        pages: summary.stats.pages,
        bytes: summary.stats.bytes,
        secs,
        peak_rss_kb: peak_rss_kb(),
    })
}
