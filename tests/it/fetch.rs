//! Integration tests of the `fetch` binary against an in-process loopback server
//! that serves several virtual hosts (`*.test`, mapped with `fetch.resolve`).

use crate::common;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::Frame;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

use trawl::datum::{CrawlDatum, FetchStatus};
use trawl::net::robots::RobotsRecord;
use trawl::records::{ContentRecord, FetchRecord};
use trawl::store::layout::SegmentMeta;
use trawl::store::parquet::{self, PartWriter, StagedDataset};
use trawl::store::partition::Partitioner;

type Body = BoxBody<Bytes, Infallible>;

/// One request the server saw.
#[derive(Debug, Clone)]
struct Hit {
    host: String,
    path: String,
    start: Instant,
    end: Instant,
    if_none_match: Option<String>,
    user_agent: Option<String>,
}

#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<Hit>>>);

impl Log {
    fn hits(&self) -> Vec<Hit> {
        self.0.lock().unwrap().clone()
    }
    fn for_host(&self, host: &str) -> Vec<Hit> {
        let mut v: Vec<Hit> = self.hits().into_iter().filter(|h| h.host == host).collect();
        v.sort_by_key(|h| h.start);
        v
    }
}

fn full(status: u16, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(Full::new(body.into()).boxed());
    *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
    r
}

fn with(mut r: Response<Body>, name: &'static str, value: &str) -> Response<Body> {
    r.headers_mut().append(name, value.parse().unwrap());
    r
}

fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn respond(host: &str, path: &str, req: &Request<hyper::body::Incoming>) -> Response<Body> {
    let html = |t: &str| {
        with(
            full(200, format!("<html><body>{t}</body></html>")),
            "content-type",
            "text/html",
        )
    };
    match (host, path) {
        ("a.test", "/robots.txt") => full(
            200,
            "User-agent: *\nDisallow: /private/\nSitemap: http://a.test/sitemap.xml\n",
        ),
        ("b.test", "/robots.txt") => full(200, "User-agent: *\nCrawl-delay: 0.6\n"),
        ("c.test", "/robots.txt") => full(200, "User-agent: *\nCrawl-delay: 100\n"),
        ("e.test", "/robots.txt") => full(503, "busy"),
        ("j.test", "/robots.txt") => with(full(301, ""), "location", "/real-robots.txt"),
        ("j.test", "/real-robots.txt") => full(200, "User-agent: trawl\nDisallow: /no\n"),
        ("i.test", "/busy") => with(full(503, "later"), "retry-after", "1"),
        (_, "/robots.txt") => full(404, "none"),
        ("a.test", "/redir301") => with(full(301, ""), "location", "/page1#frag"),
        ("a.test", "/redir302") => with(full(302, ""), "location", "http://b.test/x"),
        ("a.test", "/missing") => full(404, "no"),
        ("a.test", "/gone") => full(410, "gone"),
        ("a.test", "/error") => full(500, "oops"),
        ("a.test", "/etag") | ("a.test", "/etag2") => {
            let inm = req
                .headers()
                .get("if-none-match")
                .map(|v| v.to_str().unwrap());
            if inm == Some("\"v1\"") {
                with(full(304, ""), "etag", "\"v1\"")
            } else {
                with(html("etag"), "etag", "\"v1\"")
            }
        }
        ("a.test", "/big.gz") => {
            let r = full(200, gzip(&vec![b'a'; 200_000]));
            with(
                with(r, "content-encoding", "gzip"),
                "content-type",
                "text/plain",
            )
        }
        ("a.test", "/slow") => {
            let s = futures::stream::unfold(0u32, |n| async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Some((
                    Ok::<_, Infallible>(Frame::data(Bytes::from_static(b"x"))),
                    n + 1,
                ))
            });
            Response::new(BoxBody::new(StreamBody::new(s)))
        }
        ("d.test", _) => with(full(429, "slow down"), "retry-after", "3600"),
        ("f.test", _) => full(500, "down"),
        _ => html(&format!("{host}{path}")),
    }
}

/// Starts the server on 127.0.0.1:0; returns its address and request log.
fn start_server(rt: &tokio::runtime::Runtime) -> (SocketAddr, Log) {
    let log = Log::default();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let l = log.clone();
    rt.spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let l = l.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                    let l = l.clone();
                    async move {
                        let start = Instant::now();
                        let header = |n: &str| {
                            req.headers()
                                .get(n)
                                .map(|v| v.to_str().unwrap().to_string())
                        };
                        let host_header = header("host").unwrap_or_default();
                        let host = host_header.split(':').next().unwrap().to_string();
                        let path = req.uri().path().to_string();
                        let resp = respond(&host, &path, &req);
                        l.0.lock().unwrap().push(Hit {
                            host: host_header,
                            path,
                            start,
                            end: Instant::now(),
                            if_none_match: header("if-none-match"),
                            user_agent: header("user-agent"),
                        });
                        Ok::<_, Infallible>(resp)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    (addr, log)
}

/// A segment `name` whose fetch list is `http://{host}/p0` .. `p{n-1}` (no metadata).
fn host_segment(root: &Path, name: &str, host: &str, n: usize) -> PathBuf {
    let list: Vec<String> = (0..n).map(|i| format!("http://{host}/p{i}")).collect();
    let urls: Vec<(&str, Option<&str>)> = list.iter().map(|u| (u.as_str(), None)).collect();
    make_segment(root, name, &urls)
}

/// A crawl dir with one segment holding `urls` (with optional etag metadata).
fn make_segment(root: &Path, name: &str, urls: &[(&str, Option<&str>)]) -> PathBuf {
    let seg = root.join("segments").join(name);
    std::fs::create_dir_all(&seg).unwrap();
    let partitions = 2;
    let staged = StagedDataset::new(&seg.join("crawl_generate")).unwrap();
    let mut parts: Vec<PartWriter<CrawlDatum>> = (0..partitions)
        .map(|i| PartWriter::create(&staged.part_path(i)).unwrap())
        .collect();
    for (i, (u, etag)) in urls.iter().enumerate() {
        let host = url::Url::parse(u).unwrap().host_str().unwrap().to_string();
        let mut d = CrawlDatum::unfetched(u.to_string(), host.clone(), 0, 86400);
        d.score = i as f64;
        d.depth = 2;
        if let Some(e) = etag {
            d.metadata.insert("etag".into(), e.to_string());
        }
        parts[Partitioner::by_host(partitions).of_host(&host)]
            .push(d)
            .unwrap();
    }
    for p in parts {
        p.finish().unwrap();
    }
    staged.commit().unwrap();
    let meta = SegmentMeta {
        name: name.to_string(),
        generated_time: 0,
        partitions,
        partition_key: Default::default(),
        urls: urls.len() as u64,
        redirects_in_crawl_parse: false,
    };
    parquet::write_json(&seg.join("_meta.json"), &meta).unwrap();
    seg
}

fn write_config(root: &Path, addr: SocketAddr, extra: &str) -> PathBuf {
    let p = root.join("trawl.toml");
    std::fs::write(
        &p,
        format!(
            "[fetch]\nuser_agent = \"trawl-test/1.0\"\nconnect_timeout = 1.0\nread_timeout = 1.0\n\
             total_timeout = 1.5\nmax_host_exceptions = 2\nmax_retry_after = 5.0\n{extra}\n\
             [fetch.resolve]\n\"*.test\" = \"{addr}\"\n\"g.test\" = \"127.0.0.1:1\"\n"
        ),
    )
    .unwrap();
    p
}

/// `fetch --crawl-dir ROOT --config CONFIG` (warnings logged).
fn fetch_command(root: &Path, config: &Path) -> Command {
    let mut c = Command::new(common::bin("fetch"));
    c.arg("--crawl-dir")
        .arg(root)
        .arg("--config")
        .arg(config)
        .env("RUST_LOG", "warn");
    c
}

fn run_fetch(root: &Path, config: &Path, args: &[&str]) -> std::process::Output {
    fetch_command(root, config).args(args).output().unwrap()
}

fn by_url(rows: Vec<FetchRecord>) -> BTreeMap<String, FetchRecord> {
    let mut m = BTreeMap::new();
    for r in rows {
        let url = r.url.clone();
        assert!(
            m.insert(url.clone(), r).is_none(),
            "duplicate row for {url}"
        );
    }
    m
}

/// Asserts end-of-request to start-of-next gaps of at least `min` for a host.
fn assert_gaps(hits: &[Hit], min: Duration) {
    assert!(hits.len() >= 2);
    for w in hits.windows(2) {
        let gap = w[1].start.saturating_duration_since(w[0].end);
        assert!(
            gap + Duration::from_millis(5) >= min,
            "gap {gap:?} < {min:?} between {} and {}",
            w[0].path,
            w[1].path
        );
    }
}

#[test]
fn fetches_a_segment_politely_with_the_right_statuses() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (addr, log) = start_server(&rt);
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let urls: Vec<(&str, Option<&str>)> = vec![
        ("http://a.test/page1", None),
        ("http://a.test/private/secret", None),
        ("http://a.test/error", None),
        ("http://a.test/page2", None),
        ("http://a.test/redir301", None),
        ("http://a.test/redir302", None),
        ("http://a.test/missing", None),
        ("http://a.test/gone", None),
        ("http://a.test/etag", Some("\"v1\"")),
        ("http://a.test/etag2", None),
        ("http://a.test/big.gz", None),
        ("http://a.test/slow", None),
        ("http://a.test:9999/page3", None),
        ("http://b.test/x", None),
        ("http://b.test/y", None),
        ("http://b.test/z", None),
        ("http://c.test/1", None),
        ("http://c.test/2", None),
        ("http://d.test/1", None),
        ("http://d.test/2", None),
        ("http://d.test/3", None),
        ("http://e.test/1", None),
        ("http://f.test/1", None),
        ("http://f.test/2", None),
        ("http://f.test/3", None),
        ("http://f.test/4", None),
        ("http://g.test/1", None),
        ("http://i.test/busy", None),
        ("http://i.test/after", None),
        ("http://j.test/no", None),
        ("http://j.test/yes", None),
    ];
    let seg = make_segment(root, "20260101000000", &urls);
    let config = write_config(root, addr, "delay = 0.2\nmax_content_bytes = 50000");
    let out = run_fetch(root, &config, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "fetch failed: {stderr}");
    assert!(stderr.contains("fetch: segment"), "no summary: {stderr}");

    let rows = by_url(parquet::read_dataset::<FetchRecord>(&seg.join("crawl_fetch")).unwrap());
    assert_eq!(rows.len(), urls.len(), "one row per fetch-list URL");
    let expect = |u: &str, st: FetchStatus, reason: &str| {
        let r = rows.get(u).unwrap_or_else(|| panic!("no row for {u}"));
        assert_eq!((r.status, r.reason.as_str()), (st, reason), "{u}: {r:?}");
        r.clone()
    };
    use FetchStatus::*;
    let p1 = expect("http://a.test/page1", FetchSuccess, "ok");
    assert_eq!(p1.http_status, Some(200));
    assert_eq!(p1.content_type.as_deref(), Some("text/html"));
    assert_eq!((p1.score, p1.depth), (0.0, 2));
    expect("http://a.test/private/secret", FetchGone, "robots_denied");
    expect("http://a.test/error", FetchRetry, "http_500");
    expect("http://a.test/page2", FetchSuccess, "ok");
    let r = expect("http://a.test/redir301", FetchRedirPerm, "http_301");
    assert_eq!(r.redirect_target.as_deref(), Some("http://a.test/page1"));
    let r = expect("http://a.test/redir302", FetchRedirTemp, "http_302");
    assert_eq!(r.redirect_target.as_deref(), Some("http://b.test/x"));
    expect("http://a.test/missing", FetchGone, "http_404");
    expect("http://a.test/gone", FetchGone, "http_410");
    let r = expect("http://a.test/etag", FetchNotmodified, "not_modified");
    assert_eq!(r.etag.as_deref(), Some("\"v1\""));
    let r = expect("http://a.test/etag2", FetchSuccess, "ok");
    assert_eq!(r.etag.as_deref(), Some("\"v1\""));
    let r = expect("http://a.test/big.gz", FetchSuccess, "truncated");
    assert_eq!(r.content_length, Some(50_000));
    expect("http://a.test/slow", FetchRetry, "timeout");
    expect("http://a.test:9999/page3", FetchSuccess, "ok");
    for u in ["http://b.test/x", "http://b.test/y", "http://b.test/z"] {
        expect(u, FetchSuccess, "ok");
    }
    for u in ["http://c.test/1", "http://c.test/2"] {
        expect(u, FetchRetry, "crawl_delay_too_long");
    }
    expect("http://d.test/1", FetchRetry, "http_429");
    expect("http://d.test/2", FetchRetry, "retry_after");
    expect("http://d.test/3", FetchRetry, "retry_after");
    expect("http://e.test/1", FetchRetry, "robots_unavailable");
    expect("http://f.test/1", FetchRetry, "http_500");
    expect("http://f.test/2", FetchRetry, "http_500");
    expect("http://f.test/3", FetchRetry, "host_failing");
    expect("http://f.test/4", FetchRetry, "host_failing");
    // Nothing listens on g.test's port: robots.txt is unavailable, so no page request;
    // the page carries the cause.
    expect("http://g.test/1", FetchRetry, "connection_refused");

    expect("http://i.test/busy", FetchRetry, "http_503");
    expect("http://i.test/after", FetchSuccess, "ok");
    expect("http://j.test/no", FetchGone, "robots_denied");
    expect("http://j.test/yes", FetchSuccess, "ok");

    // Content: one row per 2xx, bodies decompressed and capped.
    let content: HashMap<String, ContentRecord> =
        parquet::read_dataset::<ContentRecord>(&seg.join("content"))
            .unwrap()
            .into_iter()
            .map(|c| (c.url.clone(), c))
            .collect();
    let successes = rows.values().filter(|r| r.status == FetchSuccess).count();
    assert_eq!(content.len(), successes);
    let big = &content["http://a.test/big.gz"];
    assert!(big.truncated);
    assert_eq!(big.content.len(), 50_000);
    assert!(big.content.iter().all(|&b| b == b'a'), "decompressed body");
    let page = &content["http://a.test/page1"];
    assert_eq!(page.content, b"<html><body>a.test/page1</body></html>");
    assert_eq!(page.ip_address.as_deref(), Some("127.0.0.1"));
    assert_eq!((page.score, page.depth, page.http_status), (0.0, 2, 200));
    assert!(!page.truncated);
    assert!(page.headers.iter().any(|h| h.name == "content-type"));
    // The mapped address was used although the URL names port 9999.
    let page3 = &content["http://a.test:9999/page3"];
    assert_eq!(page3.content, b"<html><body>a.test/page3</body></html>");

    // Server side: robots-denied and skipped URLs never requested; politeness kept.
    let hits = log.hits();
    assert!(!hits.iter().any(|h| h.path.starts_with("/private/")));
    assert!(
        !hits
            .iter()
            .any(|h| h.host.starts_with("c.test") && h.path != "/robots.txt")
    );
    assert!(
        !hits
            .iter()
            .any(|h| h.host.starts_with("e.test") && h.path != "/robots.txt")
    );
    assert_eq!(
        log.for_host("d.test").len(),
        2,
        "robots + one 429, then nothing"
    );
    assert_eq!(log.for_host("f.test").len(), 3, "robots + two 500s");
    assert!(
        hits.iter()
            .any(|h| h.host == "a.test:9999" && h.path == "/page3"),
        "Host header keeps the URL's port"
    );
    assert!(
        hits.iter()
            .all(|h| h.user_agent.as_deref() == Some("trawl-test/1.0"))
    );
    let etag_hits: Vec<_> = hits.iter().filter(|h| h.path == "/etag").collect();
    assert_eq!(etag_hits[0].if_none_match.as_deref(), Some("\"v1\""));
    let robots_a = hits
        .iter()
        .filter(|h| h.host == "a.test" && h.path == "/robots.txt")
        .count();
    assert_eq!(robots_a, 1, "robots.txt fetched once per origin");
    assert_gaps(&log.for_host("a.test"), Duration::from_millis(200));
    assert_gaps(&log.for_host("b.test"), Duration::from_millis(600));
    // Retry-After: 1 (under fetch.max_retry_after) made the host wait, then go on.
    assert_gaps(&log.for_host("i.test"), Duration::from_millis(200));
    let i = log.for_host("i.test");
    let busy = i.iter().position(|h| h.path == "/busy").unwrap();
    let gap = i[busy + 1].start.duration_since(i[busy].end);
    assert!(
        gap >= Duration::from_millis(990),
        "Retry-After ignored: {gap:?}"
    );
    assert!(!hits.iter().any(|h| h.host == "j.test" && h.path == "/no"));

    // robots/ records the sitemap, the Crawl-delay and unavailability.
    let robots =
        parquet::read_dataset::<trawl::net::robots::RobotsRecord>(&seg.join("robots")).unwrap();
    let a = robots.iter().find(|r| r.origin == "http://a.test").unwrap();
    assert_eq!(a.sitemaps, vec!["http://a.test/sitemap.xml".to_string()]);
    let b = robots.iter().find(|r| r.origin == "http://b.test").unwrap();
    assert_eq!(b.crawl_delay, Some(0.6));
    let e = robots.iter().find(|r| r.origin == "http://e.test").unwrap();
    assert_eq!(
        (e.outcome.as_str(), e.reason.as_str()),
        ("unavailable", "http_503")
    );
    let g = robots.iter().find(|r| r.origin == "http://g.test").unwrap();
    assert_eq!(
        (g.outcome.as_str(), g.reason.as_str()),
        ("unavailable", "connection_refused")
    );

    // A fetched segment is not fetched again.
    let again = run_fetch(root, &config, &[seg.to_str().unwrap()]);
    assert!(!again.status.success());
    let msg = String::from_utf8_lossy(&again.stderr);
    assert!(
        msg.contains("already fetched") && msg.contains("delete"),
        "{msg}"
    );
}

/// A run of `seg`'s 10 URLs of `host` cut short: some fetched, at least 5 recorded
/// `fetch_retry` with `reason`, nothing else; the server saw robots.txt and exactly
/// the fetched pages (cut URLs were never requested).
fn assert_cut_short(seg: &Path, log: &Log, host: &str, reason: &str) {
    let rows = by_url(parquet::read_dataset::<FetchRecord>(&seg.join("crawl_fetch")).unwrap());
    assert_eq!(rows.len(), 10);
    let ok = rows
        .values()
        .filter(|r| r.status == FetchStatus::FetchSuccess)
        .count();
    let cut: Vec<&FetchRecord> = rows.values().filter(|r| r.reason == reason).collect();
    assert!(ok >= 1, "{rows:?}");
    assert!(cut.len() >= 5, "{rows:?}");
    assert!(cut.iter().all(|r| r.status == FetchStatus::FetchRetry));
    assert_eq!(ok + cut.len(), 10, "{rows:?}");
    let pages = log.for_host(host).len() - 1;
    assert_eq!(pages, ok, "URLs recorded {reason} were never requested");
}

#[test]
fn time_limit_records_unattempted_urls() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (addr, log) = start_server(&rt);
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let seg = host_segment(root, "20260102000000", "h.test", 10);
    // A leftover of a killed run must not get in the way.
    std::fs::create_dir_all(seg.join("crawl_fetch.tmp-999999")).unwrap();
    let config = write_config(root, addr, "delay = 0.4");
    let started = Instant::now();
    let out = run_fetch(root, &config, &["--time-limit", "1.0"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(started.elapsed() < Duration::from_secs(4));
    assert_cut_short(&seg, &log, "h.test", "time_limit");
    assert!(!seg.join("crawl_fetch.tmp-999999").exists());
}

/// `fetch.min_throughput`: a run below the floor for a whole window stops, the URLs
/// left are `fetch_retry`/`throughput_limit` and were never requested; a run above
/// the floor is not stopped.
#[test]
fn throughput_floor_stops_a_slow_run() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (addr, log) = start_server(&rt);
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let seg = host_segment(root, "20260102000000", "h.test", 10);
    // One host at 0.5 s: about 2 URLs/s, under a floor of 5.
    let config = write_config(
        root,
        addr,
        "delay = 0.5\nmin_throughput = 5.0\nmin_throughput_window = 0.5\nmin_throughput_after = 0.5",
    );
    let out = run_fetch(root, &config, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("fetch.min_throughput"), "{stderr}");
    assert_cut_short(&seg, &log, "h.test", "throughput_limit");

    // Above the floor (5 URLs/s against 1): every URL fetched.
    let seg = host_segment(root, "20260103000000", "q.test", 10);
    let config = write_config(
        root,
        addr,
        "delay = 0.2\nmin_throughput = 1.0\nmin_throughput_window = 0.5\nmin_throughput_after = 0.3",
    );
    let out = run_fetch(root, &config, &[]);
    assert!(out.status.success());
    let rows = parquet::read_dataset::<FetchRecord>(&seg.join("crawl_fetch")).unwrap();
    assert_eq!(rows.len(), 10);
    assert!(
        rows.iter().all(|r| r.status == FetchStatus::FetchSuccess),
        "{rows:?}"
    );
}

#[test]
fn missing_segment_and_bad_config_errors_are_clear() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join("segments")).unwrap();
    let cfg = root.join("t.toml");
    std::fs::write(&cfg, "[fetch]\n").unwrap();
    let out = run_fetch(root, &cfg, &[]);
    assert!(!out.status.success());
    let msg = String::from_utf8_lossy(&out.stderr);
    // No crawldb and no segment: an empty crawl directory, refused like every stage does.
    assert!(msg.contains(trawl::store::layout::NO_CRAWLDB), "{msg}");
    std::fs::write(&cfg, "[fetch.resolve]\n\"*.test\" = \"nowhere\"\n").unwrap();
    make_segment(root, "20260103000000", &[("http://a.test/", None)]);
    let out = run_fetch(root, &cfg, &[]);
    assert!(!out.status.success());
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(msg.contains("fetch.resolve"), "{msg}");
}

#[test]
fn a_killed_run_leaves_no_dataset_and_a_rerun_completes() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (addr, _log) = start_server(&rt);
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let seg = host_segment(root, "20260104000000", "k.test", 8);
    let config = write_config(root, addr, "delay = 0.5");
    let mut child = fetch_command(root, &config)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    child.kill().unwrap();
    child.wait().unwrap();
    for name in ["crawl_fetch", "content", "robots"] {
        assert!(!seg.join(name).exists(), "{name} exists after a kill");
    }
    let out = run_fetch(root, &config, &["--delay", "0"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = by_url(parquet::read_dataset::<FetchRecord>(&seg.join("crawl_fetch")).unwrap());
    assert_eq!(rows.len(), 8);
    assert!(rows.values().all(|r| r.status == FetchStatus::FetchSuccess));
    let leftovers: Vec<_> = std::fs::read_dir(&seg)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// A fetch killed mid-run (kill -9) and run again continues from its checkpoints
/// (`fetch.checkpoint_interval`): only the pages requested within the last interval
/// before the kill are requested again, robots.txt is not asked again, and the
/// segment has every page once, with its content.
#[test]
fn a_fetch_killed_mid_run_resumes_from_its_checkpoints() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (addr, log) = start_server(&rt);
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let n = 12;
    let seg = host_segment(root, "20260104000000", "k.test", n);
    let interval = 0.5;
    let delay = 0.25;
    let config = write_config(
        root,
        addr,
        &format!("delay = {delay}\ncheckpoint_interval = {interval}"),
    );
    let mut child = fetch_command(root, &config)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed once it has requested some pages, about half of them.
    let started = Instant::now();
    let pages = |log: &Log| {
        log.hits()
            .iter()
            .filter(|h| h.path != "/robots.txt")
            .count()
    };
    while pages(&log) < n / 2 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the fetch made {} requests",
            pages(&log)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    let killed = Instant::now();
    child.wait().unwrap();
    let before = pages(&log);
    assert!(
        !seg.join("crawl_fetch").exists(),
        "a killed fetch commits nothing"
    );
    let checkpoints = root.join("_jobs/fetch-checkpoints/20260104000000");
    assert!(
        checkpoints.is_dir(),
        "the killed fetch published checkpoints"
    );

    let out = run_fetch(root, &config, &["--delay", "0"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let summary = stderr
        .lines()
        .find(|l| l.starts_with("fetch: segment"))
        .unwrap_or_else(|| panic!("no summary: {stderr}"));
    let resumed: u64 = summary
        .split("; ")
        .find_map(|f| f.split_once(" rows resumed from the checkpoints of a lost attempt"))
        .map(|(n, _)| n)
        .unwrap_or_else(|| panic!("the summary says what was resumed: {summary}"))
        .parse()
        .unwrap();
    assert!(resumed >= 2, "{summary}");

    // Every page once in the segment, with its content.
    let rows = by_url(parquet::read_dataset::<FetchRecord>(&seg.join("crawl_fetch")).unwrap());
    assert_eq!(rows.len(), n);
    assert!(
        rows.values().all(|r| r.status == FetchStatus::FetchSuccess),
        "{rows:?}"
    );
    let content = parquet::read_dataset::<ContentRecord>(&seg.join("content")).unwrap();
    let with_content: BTreeSet<&str> = content.iter().map(|c| c.url.as_str()).collect();
    assert_eq!(with_content.len(), n, "one page per URL: {with_content:?}");
    for c in &content {
        let path = c.url.trim_start_matches("http://k.test");
        assert!(
            String::from_utf8_lossy(&c.content).contains(&format!(">k.test{path}<")),
            "the page of {} is its own",
            c.url
        );
    }
    let robots = parquet::read_dataset::<RobotsRecord>(&seg.join("robots")).unwrap();
    assert_eq!(robots.len(), 1, "one robots.txt row: {robots:?}");
    assert!(
        !root.join("_jobs").exists(),
        "the commit removed the checkpoints (and the job)"
    );

    // Only the last interval's pages were requested again; robots.txt once.
    let hits = log.hits();
    let mut first: BTreeMap<&str, Instant> = BTreeMap::new();
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    for h in &hits {
        first.entry(&h.path).or_insert(h.start);
        *count.entry(&h.path).or_default() += 1;
    }
    assert_eq!(count.get("/robots.txt"), Some(&1), "robots.txt asked once");
    let twice: Vec<&str> = count
        .iter()
        .filter(|(p, c)| **c > 1 && **p != "/robots.txt")
        .map(|(p, _)| *p)
        .collect();
    eprintln!(
        "{before} pages requested before the kill, {} again after it, {resumed} rows resumed",
        twice.len()
    );
    // A checkpoint is published at most 1.5 intervals (its tick) after its first row,
    // and a row is emitted when its response ends: slack for both.
    let window = Duration::from_secs_f64(interval * 1.5 + 0.5);
    for p in &twice {
        assert!(
            killed.duration_since(first[p]) <= window,
            "{p} was requested {:.2} s before the kill and again after it",
            killed.duration_since(first[p]).as_secs_f64()
        );
    }
    assert!(
        twice.len() < before,
        "the rerun did not fetch everything again"
    );
}
