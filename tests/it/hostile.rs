//! The fetcher against the test web's hostile hosts (`testweb serve --hostile`), through
//! the real binaries: every hostile URL in one fetch list, outcomes checked against the
//! site map's description of each URL, politeness checked against the server's log.
//!
//! The three tests run in parallel, each against its own server. The hostile host's
//! robots.txt asks for `Crawl-delay: 2`, so its ~20 requests take ~45 s whatever the
//! fetcher does: that test dominates the file's wall time.

use crate::common;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::*;
use testweb::hostile::{BOMB_BYTES, ETAG, HOSTILE_HOST, LAST_MODIFIED};
use testweb::model::Behavior;
use testweb::{SiteMap, WebSpec};
use trawl::net::robots::RobotsRecord;

/// Flags of the served web; `spec()` is the same web for the site map.
const WEB: &[&str] = &["--seed", "5", "--hosts", "1", "--pages", "3", "--hostile"];
const CAP: usize = 1 << 20;
const READ_TIMEOUT_MS: u64 = 500;
const TOTAL_TIMEOUT_MS: u64 = 2000;
const MAX_RETRY_AFTER: u64 = 6;

fn spec() -> WebSpec {
    WebSpec {
        seed: 5,
        hosts: 1,
        pages_per_host: 3,
        hostile: true,
        ..WebSpec::default()
    }
}

fn site_map() -> SiteMap {
    testweb::generate(&spec()).unwrap().site_map()
}

/// A config with short timeouts and a 1 MiB cap, mapping `*.web.test` to the server.
fn config(dir: &Path, addr: &str) -> PathBuf {
    let path = dir.join("trawl.toml");
    let text = format!(
        "[crawl]\npartitions = 2\n\n[fetch]\ndelay = 0.1\nmax_connections = 8\n\
         connect_timeout = 2.0\nread_timeout = {}\ntotal_timeout = {}\n\
         max_content_bytes = {CAP}\nmax_retry_after = {MAX_RETRY_AFTER}.0\n\n\
         [fetch.resolve]\n\"*.web.test\" = \"{addr}\"\n",
        READ_TIMEOUT_MS as f64 / 1000.0,
        TOTAL_TIMEOUT_MS as f64 / 1000.0,
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// Injects `seeds` (lines of the seed file, with optional `key=value` fields).
fn inject(dir: &Path, crawl: &Path, cfg: &Path, seeds: &[String]) {
    let file = dir.join("seeds.txt");
    std::fs::write(&file, seeds.join("\n") + "\n").unwrap();
    run_ok("inject", crawl, cfg, &[file.to_str().unwrap()]);
}

fn robots_rows(segment: &str) -> BTreeMap<String, RobotsRecord> {
    let rows: Vec<RobotsRecord> =
        trawl::store::parquet::read_dataset(&Path::new(segment).join("robots")).unwrap();
    rows.into_iter().map(|r| (r.host.clone(), r)).collect()
}

fn path_of(url: &str) -> String {
    url::Url::parse(url).unwrap().path().to_string()
}

/// Every page URL the site map lists for `host` (robots.txt files excluded).
fn urls_of_host(map: &SiteMap, host: &str) -> Vec<String> {
    let prefix = format!("http://{host}/");
    map.urls
        .keys()
        .filter(|u| u.starts_with(&prefix) && !path_of(u).starts_with("/robots"))
        .cloned()
        .collect()
}

/// The (status, reason) the site map's description of a URL implies for a fetcher
/// with this test's config (the order-dependent `retry_after` is the caller's).
fn expected(map: &SiteMap, url: &str) -> (&'static str, String) {
    let e = &map.urls[url];
    if e.disallowed {
        return ("fetch_gone", "robots_denied".into());
    }
    match e.behavior {
        Behavior::Delay { ms } if ms > READ_TIMEOUT_MS => return ("fetch_retry", "timeout".into()),
        Behavior::SlowBody {
            chunks,
            interval_ms,
        } if interval_ms > READ_TIMEOUT_MS
            || u64::from(chunks) * interval_ms > TOTAL_TIMEOUT_MS =>
        {
            return ("fetch_retry", "timeout".into());
        }
        Behavior::Endless { .. } => return ("fetch_retry", "timeout".into()),
        Behavior::Reset => return ("fetch_retry", "connection_reset".into()),
        _ => {}
    }
    let gzip_bomb = e.headers.get("content-encoding").map(String::as_str) == Some("gzip");
    match e.status {
        200 if gzip_bomb || e.body_bytes as usize > CAP => ("fetch_success", "truncated".into()),
        200 => ("fetch_success", "ok".into()),
        301 | 308 => ("fetch_redir_perm", format!("http_{}", e.status)),
        302 | 303 | 307 => ("fetch_redir_temp", format!("http_{}", e.status)),
        304 => ("fetch_notmodified", "not_modified".into()),
        408 | 429 | 500..=599 => ("fetch_retry", format!("http_{}", e.status)),
        s => ("fetch_gone", format!("http_{s}")),
    }
}

/// Log lines of `host` in time order.
fn log_of<'a>(log: &'a [LogLine], host: &str) -> Vec<&'a LogLine> {
    let mut v: Vec<&LogLine> = log.iter().filter(|l| l.host == host).collect();
    v.sort_by_key(|l| l.time_ms);
    v
}

/// Every hostile URL in one fetch list. `/unavailable` (503, Retry-After 5) and
/// `/ratelimited` (429, Retry-After 10 > max_retry_after) are given low scores so they
/// come last but one: the first makes the host wait 5 s, the second closes the host,
/// and `/loop-b`, last, is then recorded `retry_after` without being requested.
#[test]
fn hostile_host_in_one_fetch_list() {
    let map = site_map();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let crawl = dir.join("crawl");
    let web = TestWeb::start(dir, WEB);
    let cfg = config(dir, &web.addr);
    let h = |p: &str| format!("http://{HOSTILE_HOST}{p}");
    let urls = urls_of_host(&map, HOSTILE_HOST);
    assert!(urls.len() > 20, "{urls:?}");
    let low = |u: &String| {
        if *u == h("/unavailable") {
            Some("0.3")
        } else if *u == h("/ratelimited") {
            Some("0.2")
        } else if *u == h("/loop-b") {
            Some("0.1")
        } else {
            None
        }
    };
    let seeds: Vec<String> = urls
        .iter()
        .map(|u| match low(u) {
            Some(s) => format!("{u}\tscore={s}"),
            None => u.clone(),
        })
        .collect();
    inject(dir, &crawl, &cfg, &seeds);
    let segment = generate_segment(&crawl, &cfg);
    run_ok("fetch", &crawl, &cfg, &[&segment]);
    let log = web.stop();

    // Exactly one row per fetch-list URL, each with the outcome its behavior implies.
    let rows = fetch_rows(&segment);
    let listed: BTreeSet<&String> = urls.iter().collect();
    let fetched: BTreeSet<&String> = rows.keys().collect();
    assert_eq!(listed, fetched);
    for url in &urls {
        let r = &rows[url];
        let (status, reason) = if *url == h("/loop-b") {
            ("fetch_retry", "retry_after".to_string())
        } else {
            expected(&map, url)
        };
        assert_eq!(
            (r.status.as_str(), r.reason.as_str()),
            (status, reason.as_str()),
            "{url}: {:?}",
            map.urls[url].note
        );
        if let Some(target) = &map.urls[url].redirect
            && *url != h("/loop-b")
        {
            assert_eq!(r.redirect_target.as_ref(), Some(target), "{url}");
        }
    }

    // Caps: the gzip bomb and the 6 MiB page are cut at max_content_bytes
    // decompressed bytes; the content rows say so.
    let content = content_rows(&segment);
    for p in ["/bomb.html", "/big.html"] {
        let c = &content[&h(p)];
        assert_eq!(c.content.len(), CAP, "{p}");
        assert!(c.truncated, "{p}");
        assert_eq!(rows[&h(p)].content_length, Some(CAP as i64), "{p}");
    }
    const { assert!(BOMB_BYTES > CAP) };
    assert!(content[&h("/bomb.html")].content.iter().all(|&b| b == b' '));
    // The 60 KB header is within hyper's limits: the page is fetched and the header
    // kept whole in content.headers.
    let hh = &content[&h("/huge-header.html")];
    let filler = hh.headers.iter().find(|x| x.name == "x-filler").unwrap();
    assert_eq!(filler.value.len(), 60_000);
    // Validators are recorded for the next round.
    let cond = &rows[&h("/cond.html")];
    assert_eq!(cond.etag.as_deref(), Some(ETAG));
    assert_eq!(cond.last_modified.as_deref(), Some(LAST_MODIFIED));
    // 503/429 carry their HTTP status.
    assert_eq!(rows[&h("/unavailable")].http_status, Some(503));
    assert_eq!(rows[&h("/ratelimited")].http_status, Some(429));

    // The server's log: nothing disallowed requested, nothing after the host closed,
    // robots.txt first, and Crawl-delay (2 s) between any two requests.
    let hlog = log_of(&log, HOSTILE_HOST);
    let requested: BTreeSet<String> = hlog.iter().map(|l| l.path.clone()).collect();
    for url in &urls {
        let e = &map.urls[url];
        let p = path_of(url);
        if e.disallowed || *url == h("/loop-b") {
            assert!(!requested.contains(&p), "{p} was requested");
        } else if matches!(e.behavior, Behavior::Delay { .. }) {
            // The server logs responses: a head it never sent (the fetcher gave up
            // first) leaves no line.
        } else {
            assert!(requested.contains(&p), "{p} was not requested");
        }
    }
    assert_eq!(hlog[0].path, "/robots.txt");
    assert_eq!(
        hlog.iter().filter(|l| l.path == "/robots.txt").count(),
        1,
        "robots.txt fetched once"
    );
    let crawl_delay_ms = 2000;
    for w in hlog.windows(2) {
        // The server logs a response when it produces its head: a delayed head
        // (/slow.html) is logged late even though the fetcher gave up early.
        if path_of(&h(&w[0].path)) == "/slow.html" {
            continue;
        }
        let gap = w[1].time_ms - w[0].time_ms;
        assert!(
            gap >= crawl_delay_ms - 20,
            "{} then {} only {gap} ms apart",
            w[0].path,
            w[1].path
        );
    }
    // Retry-After: 5 on /unavailable: the next request waits at least 5 s.
    let i = hlog.iter().position(|l| l.path == "/unavailable").unwrap();
    assert_eq!(hlog[i + 1].path, "/ratelimited", "unexpected fetch order");
    assert!(hlog[i + 1].time_ms - hlog[i].time_ms >= 5000 - 20);
    // Retry-After: 10 on /ratelimited (> max_retry_after): nothing after it.
    assert_eq!(hlog.last().unwrap().path, "/ratelimited");
}

/// robots.txt variants: 500 -> nothing of the host requested, every URL
/// `robots_unavailable`; over 500 KiB -> parsed (the rules come first); a 301 ->
/// followed to `/robots-real.txt`.
#[test]
fn robots_variants() {
    let map = site_map();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let crawl = dir.join("crawl");
    let web = TestWeb::start(dir, WEB);
    let cfg = config(dir, &web.addr);
    let hosts = [
        "robots500.web.test",
        "robotsbig.web.test",
        "robotsmoved.web.test",
    ];
    let urls: Vec<String> = hosts.iter().flat_map(|h| urls_of_host(&map, h)).collect();
    // Three pages per host, plus robotsmoved's cross-host redirect /to-hostile.
    assert_eq!(urls.len(), 10, "{urls:?}");
    inject(dir, &crawl, &cfg, &urls);
    let segment = generate_segment(&crawl, &cfg);
    run_ok("fetch", &crawl, &cfg, &[&segment]);
    let log = web.stop();
    let rows = fetch_rows(&segment);
    assert_eq!(rows.len(), urls.len());

    // robots.txt 500: every URL fetch_retry/robots_unavailable, only robots.txt asked.
    for url in urls_of_host(&map, "robots500.web.test") {
        let r = &rows[&url];
        assert_eq!(
            (r.status.as_str(), r.reason.as_str()),
            ("fetch_retry", "robots_unavailable"),
            "{url}"
        );
    }
    let paths: Vec<&str> = log_of(&log, "robots500.web.test")
        .iter()
        .map(|l| l.path.as_str())
        .collect();
    assert_eq!(paths, ["/robots.txt"]);

    // Big and moved: the site map's verdicts hold; the rest is fetched.
    for host in ["robotsbig.web.test", "robotsmoved.web.test"] {
        for url in urls_of_host(&map, host) {
            let (status, reason) = expected(&map, &url);
            let r = &rows[&url];
            assert_eq!(
                (r.status.as_str(), r.reason.as_str()),
                (status, reason.as_str()),
                "{url}"
            );
        }
        assert!(
            !log_of(&log, host)
                .iter()
                .any(|l| l.path.starts_with("/private/")),
            "{host}: a disallowed path was requested"
        );
    }
    let moved: Vec<&str> = log_of(&log, "robotsmoved.web.test")
        .iter()
        .map(|l| l.path.as_str())
        .take(2)
        .collect();
    assert_eq!(moved, ["/robots.txt", "/robots-real.txt"]);

    let robots = robots_rows(&segment);
    assert_eq!(robots["robots500.web.test"].outcome, "unavailable");
    assert_eq!(robots["robots500.web.test"].http_status, Some(500));
    let big = &robots["robotsbig.web.test"];
    assert_eq!(big.outcome, "parsed");
    assert!(big.bytes > 0 && big.bytes <= 500 * 1024, "{}", big.bytes);
    assert_eq!(robots["robotsmoved.web.test"].outcome, "parsed");
    assert_eq!(robots["robotsmoved.web.test"].http_status, Some(200));
}

/// Two rounds of `/cond.html` with updatedb between: the second request carries the
/// validators, the server answers 304, fetch records fetch_notmodified and updatedb
/// makes it db_notmodified.
#[test]
fn conditional_refetch_is_not_modified() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let crawl = dir.join("crawl");
    let web = TestWeb::start(dir, WEB);
    let cfg = config(dir, &web.addr);
    let url = format!("http://{HOSTILE_HOST}/cond.html");
    inject(dir, &crawl, &cfg, &[format!("{url}\tfetch_interval=1")]);

    let first = generate_segment(&crawl, &cfg);
    run_ok("fetch", &crawl, &cfg, &[&first]);
    let r = &fetch_rows(&first)[&url];
    assert_eq!(r.status.as_str(), "fetch_success");
    assert_eq!(r.etag.as_deref(), Some(ETAG));
    run_ok("parse", &crawl, &cfg, &[&first]);
    run_ok("updatedb", &crawl, &cfg, &[&first]);
    assert_eq!(crawldb_statuses(&crawl)[&url], "db_fetched");

    // The fixed 1 s interval makes the page due again.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let second = generate_segment(&crawl, &cfg);
    run_ok("fetch", &crawl, &cfg, &[&second]);
    let r = &fetch_rows(&second)[&url];
    assert_eq!(
        (r.status.as_str(), r.reason.as_str()),
        ("fetch_notmodified", "not_modified")
    );
    assert_eq!(r.http_status, Some(304));
    assert_eq!(r.etag.as_deref(), Some(ETAG));
    // (The round also fetches `/`, the outlink found in round 1.)
    assert!(
        !content_rows(&second).contains_key(&url),
        "a 304 has no content row"
    );
    run_ok("parse", &crawl, &cfg, &[&second]);
    run_ok("updatedb", &crawl, &cfg, &[&second]);
    assert_eq!(crawldb_statuses(&crawl)[&url], "db_notmodified");

    let log = web.stop();
    let statuses: Vec<u16> = log_of(&log, HOSTILE_HOST)
        .iter()
        .filter(|l| l.path == "/cond.html")
        .map(|l| l.status)
        .collect();
    assert_eq!(statuses, [200, 304]);
}
