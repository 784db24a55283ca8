//! The fetcher's queue modes, adaptive delay, robots.txt cache between runs, inline
//! redirect following and DNS failures, through the real binaries against the local
//! test web: politeness is checked in the server's request log, outcomes in
//! `crawl_fetch`. No DNS query leaves the machine: test hosts are mapped with
//! `fetch.resolve`, and the dead host with its `"nxdomain"` value.

use crate::common;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::*;
use testweb::hostile::{HOSTILE_HOST, ROBOTS_MOVED_HOST};
use trawl::net::robots::RobotsRecord;

/// One regular host and the hostile hosts (Crawl-delay 2 s on hostile.web.test).
const HOSTILE_WEB: [&str; 7] = ["--seed", "5", "--hosts", "1", "--pages", "3", "--hostile"];

/// Writes a config for the test web at `addr` with `fetch` keys (raw TOML lines) and
/// extra `fetch.resolve` entries.
fn config(dir: &Path, addr: &str, fetch: &str, resolve: &str) -> PathBuf {
    let path = dir.join("trawl.toml");
    let text = format!(
        "[crawl]\npartitions = 2\n\n[fetch]\nmax_connections = 16\n{fetch}\n\n\
         [fetch.resolve]\n\"*.web.test\" = \"{addr}\"\n{resolve}\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

fn robots_rows(segment: &str) -> Vec<RobotsRecord> {
    trawl::store::parquet::read_dataset(&Path::new(segment).join("robots")).unwrap()
}

/// Injects `seeds` into a new crawl, generates and fetches one segment; returns the
/// segment's path and fetch's summary line.
fn fetch_seeds(dir: &Path, crawl: &Path, cfg: &Path, seeds: &[String]) -> (String, String) {
    inject_seeds(dir, crawl, cfg, seeds);
    let segment = generate_segment(crawl, cfg);
    let summary = fetch_ok(crawl, cfg, &segment);
    (segment, summary)
}

/// Asserts that consecutive requests of `lines` (any host) are at least `min_ms` apart.
fn assert_spaced(lines: &[&LogLine], min_ms: i64) {
    let mut v: Vec<&&LogLine> = lines.iter().collect();
    v.sort_by_key(|l| l.time_ms);
    assert!(v.len() >= 4, "too few requests: {v:?}");
    for w in v.windows(2) {
        let gap = w[1].time_ms - w[0].time_ms;
        assert!(
            gap + 2 >= min_ms,
            "{} ms between {}{} and {}{} (delay {min_ms} ms)",
            gap,
            w[0].host,
            w[0].path,
            w[1].host,
            w[1].path
        );
    }
}

fn pages(host: &str, range: std::ops::Range<usize>) -> Vec<String> {
    range
        .map(|j| {
            if j == 0 {
                format!("http://{host}/")
            } else {
                format!("http://{host}/p{j}.html")
            }
        })
        .collect()
}

/// One queue for two hosts (ip mode: both map to the same address; domain mode: both
/// under `web.test`): one request at a time, `delay` apart, over both hosts.
fn one_queue_for_two_hosts(mode: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let crawl = dir.join("crawl");
    let web = TestWeb::start(dir, &["--seed", "3", "--hosts", "2", "--pages", "5"]);
    let cfg = config(
        dir,
        &web.addr,
        &format!("delay = 0.4\nqueue_mode = \"{mode}\""),
        "",
    );
    let mut seeds = pages("site0.web.test", 0..5);
    seeds.extend(pages("site1.web.test", 0..5));
    let (segment, summary) = fetch_seeds(dir, &crawl, &cfg, &seeds);
    let log = web.stop();
    assert!(summary.contains("2 hosts, 1 queues"), "{summary}");
    let rows = fetch_rows(&segment);
    assert_eq!(rows.len(), 10);
    assert!(rows.values().all(|r| r.status.as_str() == "fetch_success"));
    // 10 pages and 2 robots.txt, never two closer than the delay whatever the host.
    let lines: Vec<&LogLine> = log.iter().collect();
    assert_eq!(lines.len(), 12, "{lines:?}");
    assert_spaced(&lines, 400);
}

#[test]
fn ip_queue_mode_spaces_hosts_on_one_address() {
    one_queue_for_two_hosts("ip");
}

#[test]
fn domain_queue_mode_spaces_subdomains_of_one_domain() {
    one_queue_for_two_hosts("domain");
}

/// `fetch.delays`: a host matching a pattern gets its own delay, the others keep
/// `fetch.delay`; a negative entry is refused naming the key.
#[test]
fn per_queue_delay_overrides() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let crawl = dir.join("crawl");
    let web = TestWeb::start(dir, &["--seed", "3", "--hosts", "2", "--pages", "6"]);
    let cfg = config(
        dir,
        &web.addr,
        "delay = 0.05\n\n[fetch.delays]\n\"*.web.test\" = 0.05\n\"site1.web.test\" = 0.6",
        "",
    );
    let mut seeds = pages("site0.web.test", 0..5);
    seeds.extend(pages("site1.web.test", 0..5));
    let (segment, _) = fetch_seeds(dir, &crawl, &cfg, &seeds);
    let log = web.stop();
    let rows = fetch_rows(&segment);
    assert_eq!(rows.len(), 10);
    assert!(rows.values().all(|r| r.status.as_str() == "fetch_success"));
    let of = |host: &str| -> Vec<&LogLine> { log.iter().filter(|l| l.host == host).collect() };
    let (fast, slow) = (of("site0.web.test"), of("site1.web.test"));
    // The exact name wins over the suffix pattern: 0.6 s between site1's requests.
    assert_spaced(&slow, 600);
    let span = |lines: &[&LogLine]| {
        lines.iter().map(|l| l.time_ms).max().unwrap()
            - lines.iter().map(|l| l.time_ms).min().unwrap()
    };
    assert_eq!(
        (fast.len(), slow.len()),
        (6, 6),
        "robots.txt and 5 pages each"
    );
    assert!(
        span(&fast) * 2 < span(&slow),
        "site0 at 0.05 s took {} ms, site1 at 0.6 s {} ms",
        span(&fast),
        span(&slow)
    );

    let bad = config(dir, "127.0.0.1:9", "[fetch.delays]\n\"x.test\" = -1.0", "");
    let out = run("fetch", &crawl, &bad, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("fetch.delays.\"x.test\""), "{err}");
}

/// Heritrix's adaptive delay on the hostile host (Crawl-delay 2): after `/slow.html`
/// (3 s before its head) the next request waits 2 x 3 s; after fast pages the
/// Crawl-delay is the floor.
#[test]
fn adaptive_delay_grows_after_slow_pages() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let crawl = dir.join("crawl");
    let web = TestWeb::start(dir, &HOSTILE_WEB);
    let cfg = config(
        dir,
        &web.addr,
        "delay = 0.1\nadaptive_delay_factor = 2.0\nmin_delay = 0.2\nmax_delay = 10.0\n\
         read_timeout = 6.0\ntotal_timeout = 10.0",
        "",
    );
    let h = |p: &str| format!("http://{HOSTILE_HOST}{p}");
    let seeds = vec![
        format!("{}\tscore=5", h("/")),
        format!("{}\tscore=4", h("/slow.html")),
        format!("{}\tscore=3", h("/final.html")),
        format!("{}\tscore=2", h("/tmp/ok.html")),
    ];
    let (segment, _) = fetch_seeds(dir, &crawl, &cfg, &seeds);
    let log = web.stop();
    let rows = fetch_rows(&segment);
    assert_eq!(rows[&h("/slow.html")].status.as_str(), "fetch_success");
    let mut lines: Vec<&LogLine> = log.iter().filter(|l| l.host == HOSTILE_HOST).collect();
    lines.sort_by_key(|l| l.time_ms);
    let paths: Vec<&str> = lines.iter().map(|l| l.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/robots.txt",
            "/",
            "/slow.html",
            "/final.html",
            "/tmp/ok.html"
        ]
    );
    let gap = |i: usize| lines[i + 1].time_ms - lines[i].time_ms;
    // Fast responses: clamp(2 x ~0 s, 0.2, 10) < Crawl-delay 2 s, so 2 s.
    for i in [0, 3] {
        assert!(gap(i) + 2 >= 2000, "gap {i}: {} ms: {paths:?}", gap(i));
    }
    // /slow.html took >= 3 s (the server logs it when its head is sent): >= 6 s.
    assert!(gap(2) + 2 >= 6000, "after the slow page: {} ms", gap(2));
}

/// robots.txt is persisted between runs: a second run within the TTL requests no
/// robots.txt but obeys the cached rules; after expiry, or with a corrupt cache file,
/// it is requested again.
#[test]
fn robots_cache_between_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let crawl = dir.join("crawl");
    let web = TestWeb::start(dir, &["--seed", "3", "--hosts", "2", "--pages", "12"]);
    let fetch_keys = |ttl: f64| format!("delay = 0.05\nrobots_cache_ttl = {ttl}");
    let cfg = config(dir, &web.addr, &fetch_keys(3600.0), "");
    let log_path = web.log.clone();
    let robots_requests = |since: usize| -> Vec<String> {
        read_log(&log_path)[since..]
            .iter()
            .filter(|l| l.path == "/robots.txt")
            .map(|l| l.host.clone())
            .collect()
    };
    let round = |seeds: Vec<String>, cfg: &Path| -> (String, String, usize) {
        let before = read_log(&log_path).len();
        inject_seeds(dir, &crawl, cfg, &seeds);
        let segment = generate_segment(&crawl, cfg);
        let summary = fetch_ok(&crawl, cfg, &segment);
        run_ok("updatedb", &crawl, cfg, &["--no-parse", &segment]);
        // The server writes its log as it goes; give it a moment.
        std::thread::sleep(std::time::Duration::from_millis(300));
        (segment, summary, before)
    };
    let both = |r: std::ops::Range<usize>| {
        let mut v = pages("site0.web.test", r.clone());
        v.extend(pages("site1.web.test", r));
        v
    };
    // Round 1: robots.txt of both hosts fetched and cached.
    let (_, s1, since) = round(both(0..3), &cfg);
    let mut r1 = robots_requests(since);
    r1.sort();
    assert_eq!(r1, ["site0.web.test", "site1.web.test"], "{s1}");
    // The cache is kept per partition (fetch_state/<n>/p<i>/robots_cache.json).
    let state = trawl::store::layout::CrawlDir::new(&crawl).fetch_state_root();
    let caches: Vec<std::path::PathBuf> = walk_files(&state)
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "robots_cache.json"))
        .collect();
    assert!(
        !caches.is_empty(),
        "no per-partition robots cache under {}",
        state.display()
    );

    // Round 2: no robots.txt request, the cached rules still apply (site0 and site1
    // forbid /private/).
    let mut seeds = both(3..6);
    seeds.push("http://site0.web.test/private/s1.html".into());
    let (seg2, s2, since) = round(seeds, &cfg);
    assert!(robots_requests(since).is_empty(), "{s2}");
    assert!(s2.contains("2 robots.txt (2 cached)"), "{s2}");
    let rows = fetch_rows(&seg2);
    let private = &rows["http://site0.web.test/private/s1.html"];
    assert_eq!(private.reason, "robots_denied");
    assert!(
        !read_log(&log_path)[since..]
            .iter()
            .any(|l| l.path.starts_with("/private/")),
        "a denied page was requested"
    );
    assert_eq!(
        robots_rows(&seg2).len(),
        2,
        "cached robots.txt recorded too"
    );

    // Round 3: the TTL (now 1 s) has passed: fetched again.
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let short = config(dir, &web.addr, &fetch_keys(1.0), "");
    let (_, s3, since) = round(both(6..9), &short);
    assert_eq!(robots_requests(since).len(), 2, "{s3}");

    // Round 4: a corrupt cache file is reported and ignored.
    for cache in &caches {
        std::fs::write(cache, "{\"version\": 1, \"entr").unwrap();
    }
    let cfg = config(dir, &web.addr, &fetch_keys(3600.0), "");
    let (_, s4, since) = round(both(9..12), &cfg);
    assert_eq!(robots_requests(since).len(), 2, "{s4}");
    assert!(s4.contains("corrupt"), "{s4}");
    let text: String = caches
        .iter()
        .map(|c| std::fs::read_to_string(c).unwrap())
        .collect();
    assert!(text.contains("site1.web.test"), "cache rewritten: {text}");
    drop(web);
}

/// Inline redirect following on the hostile host's 5-hop chain and 2-URL loop, with
/// `follow_redirects = 2`: each followed target gets its own row, a target that is in
/// the fetch list is not fetched twice, the loop and the hop limit are recorded, the
/// host's Crawl-delay holds for followed requests, and updatedb takes the extra rows.
#[test]
fn redirects_followed_inline() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let crawl = dir.join("crawl");
    let web = TestWeb::start(dir, &HOSTILE_WEB);
    let cfg = config(dir, &web.addr, "delay = 0.1\nfollow_redirects = 2", "");
    let h = |p: &str| format!("http://{HOSTILE_HOST}{p}");
    let seeds = vec![
        format!("{}\tscore=5", h("/chain1")),
        format!("{}\tscore=4", h("/loop-a")),
        format!("{}\tscore=3", h("/chain3")),
    ];
    let (segment, summary) = fetch_seeds(dir, &crawl, &cfg, &seeds);
    let log = web.stop();
    assert!(summary.contains("3 urls"), "{summary}");
    assert!(summary.contains("4 redirects followed"), "{summary}");
    let rows = fetch_rows(&segment);
    let got: BTreeMap<String, (String, String, Option<String>)> = rows
        .iter()
        .map(|(u, r)| {
            (
                u.clone(),
                (
                    r.status.as_str().to_string(),
                    r.reason.clone(),
                    r.redirect_target.clone(),
                ),
            )
        })
        .collect();
    let row = |status: &str, reason: &str, target: &str| {
        (status.to_string(), reason.to_string(), Some(h(target)))
    };
    let want: BTreeMap<String, _> = [
        // chain1 -> chain2 (hop 1); chain3 is in the fetch list: not fetched from here.
        (h("/chain1"), row("fetch_redir_perm", "http_301", "/chain2")),
        (h("/chain2"), row("fetch_redir_perm", "http_301", "/chain3")),
        // chain3 -> chain4 (hop 1) -> chain5 (hop 2) -> limit.
        (h("/chain3"), row("fetch_redir_perm", "http_301", "/chain4")),
        (h("/chain4"), row("fetch_redir_perm", "http_301", "/chain5")),
        (
            h("/chain5"),
            row("fetch_redir_perm", "too_many_redirects", "/final.html"),
        ),
        // loop-a -> loop-b (hop 1) -> loop-a: a loop.
        (h("/loop-a"), row("fetch_redir_temp", "http_302", "/loop-b")),
        (
            h("/loop-b"),
            row("fetch_redir_temp", "redirect_loop", "/loop-a"),
        ),
    ]
    .into_iter()
    .collect();
    assert_eq!(got, want);
    // Every URL requested once, after robots.txt, Crawl-delay 2 s apart.
    let lines: Vec<&LogLine> = log.iter().filter(|l| l.host == HOSTILE_HOST).collect();
    let mut paths: Vec<&str> = lines.iter().map(|l| l.path.as_str()).collect();
    paths.sort();
    assert_eq!(
        paths,
        [
            "/chain1",
            "/chain2",
            "/chain3",
            "/chain4",
            "/chain5",
            "/loop-a",
            "/loop-b",
            "/robots.txt"
        ]
    );
    assert_spaced(&lines, 2000);

    // updatedb (fetch statuses only: not parsed): followed targets enter the crawldb
    // with their fetch outcome, the unfollowed target of the last hop as a new URL.
    run_ok("updatedb", &crawl, &cfg, &["--no-parse", &segment]);
    let db = crawldb_statuses(&crawl);
    for p in ["/chain1", "/chain2", "/chain3", "/chain4", "/chain5"] {
        assert_eq!(db[&h(p)], "db_redir_perm", "{p}");
    }
    assert_eq!(db[&h("/loop-b")], "db_redir_temp");
    assert_eq!(db[&h("/final.html")], "db_unfetched");
}

/// A redirect to another host is handed to the target's queue: the worker of the
/// redirecting host goes on with its own URLs at its own delay instead of waiting out
/// the target host's Crawl-delay; the target is fetched first in its queue, with that
/// queue's politeness. `updatedb --no-additions` then keeps the followed target (a URL
/// the crawldb did not know) out of the crawldb, as Nutch does.
#[test]
fn cross_host_redirect_is_handed_to_the_target_queue() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let crawl = dir.join("crawl");
    let web = TestWeb::start(dir, &HOSTILE_WEB);
    let cfg = config(
        dir,
        &web.addr,
        "delay = 0.1\nper_host_connections = 1\nfollow_redirects = 2",
        "",
    );
    let moved = |p: &str| format!("http://{ROBOTS_MOVED_HOST}{p}");
    let hostile = |p: &str| format!("http://{HOSTILE_HOST}{p}");
    let seeds = vec![
        format!("{}\tscore=9", moved("/to-hostile")),
        format!("{}\tscore=8", moved("/")),
        format!("{}\tscore=7", moved("/p1.html")),
        format!("{}\tscore=6", hostile("/")),
        format!("{}\tscore=5", hostile("/cond.html")),
        format!("{}\tscore=4", hostile("/script.cgi.html")),
    ];
    let (segment, summary) = fetch_seeds(dir, &crawl, &cfg, &seeds);
    let log = web.stop();
    assert!(summary.contains("1 redirects followed"), "{summary}");

    let rows = fetch_rows(&segment);
    assert_eq!(rows.len(), 7, "{rows:?}");
    let r = &rows[&moved("/to-hostile")];
    assert_eq!(r.status.as_str(), "fetch_redir_temp");
    assert_eq!(
        r.redirect_target.as_deref(),
        Some(hostile("/final.html").as_str())
    );
    let f = &rows[&hostile("/final.html")];
    assert_eq!(
        (f.status.as_str(), f.reason.as_str()),
        ("fetch_success", "ok")
    );
    assert_eq!(
        f.score, 9.0,
        "the target carries the redirecting URL's score"
    );
    for u in [
        moved("/"),
        moved("/p1.html"),
        hostile("/"),
        hostile("/cond.html"),
    ] {
        assert_eq!(rows[&u].status.as_str(), "fetch_success", "{u}");
    }

    let at = |host: &str, path: &str| {
        log.iter()
            .find(|l| l.host == host && l.path == path)
            .unwrap_or_else(|| panic!("{host}{path} never requested: {log:?}"))
            .time_ms
    };
    // The redirecting host's worker did not wait for the hostile host: its pages came
    // right after the redirect, at its own 0.1 s delay, long before the hostile host's
    // Crawl-delay of 2 s let the target through.
    let redirected = at(ROBOTS_MOVED_HOST, "/to-hostile");
    let last_moved = log
        .iter()
        .filter(|l| l.host == ROBOTS_MOVED_HOST)
        .map(|l| l.time_ms)
        .max()
        .unwrap();
    let target = at(HOSTILE_HOST, "/final.html");
    assert!(
        last_moved - redirected < 1500,
        "robotsmoved's last request {} ms after its redirect",
        last_moved - redirected
    );
    assert!(target > last_moved, "the target waited for its own queue");
    // Keep-alive: the redirecting host's requests (robots.txt, its redirect, the pages
    // moved robots.txt points to and the listed pages, 0.1 s apart) share one connection.
    let conns: std::collections::BTreeSet<u64> = log
        .iter()
        .filter(|l| l.host == ROBOTS_MOVED_HOST)
        .map(|l| l.conn)
        .collect();
    assert_eq!(conns.len(), 1, "{ROBOTS_MOVED_HOST}: connections {conns:?}");
    // In the target's queue: politeness held, and the handed-over target went first
    // in line, ahead of the listed URLs still waiting.
    let lines: Vec<&LogLine> = log.iter().filter(|l| l.host == HOSTILE_HOST).collect();
    assert_spaced(&lines, 2000);
    assert!(
        target < at(HOSTILE_HOST, "/script.cgi.html"),
        "the followed target waits at the front of its queue"
    );
    assert_eq!(
        lines.iter().filter(|l| l.path == "/final.html").count(),
        1,
        "fetched once"
    );

    run_ok(
        "updatedb",
        &crawl,
        &cfg,
        &["--no-parse", &segment, "--no-additions"],
    );
    let db = crawldb_statuses(&crawl);
    assert_eq!(db.len(), 6, "only the injected URLs: {db:?}");
    assert_eq!(db[&moved("/to-hostile")], "db_redir_temp");
    assert!(!db.contains_key(&hostile("/final.html")));
}

/// A host that does not resolve (marked `"nxdomain"` in `fetch.resolve`, so no DNS
/// query is sent) fails fast: one lookup, every URL `fetch_retry`/`dns_failure`.
#[test]
fn unresolvable_host_fails_fast_with_one_lookup() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let crawl = dir.join("crawl");
    let web = TestWeb::start(dir, &["--seed", "3", "--hosts", "1", "--pages", "3"]);
    let cfg = config(
        dir,
        &web.addr,
        "delay = 0.05",
        "\"dead.web.test\" = \"nxdomain\"",
    );
    let mut seeds = pages("dead.web.test", 0..5);
    seeds.extend(pages("site0.web.test", 0..3));
    let (segment, summary) = fetch_seeds(dir, &crawl, &cfg, &seeds);
    let log = web.stop();
    assert!(
        summary.contains("1 dns lookups (1 failed)"),
        "one lookup for the dead host, none for mapped hosts: {summary}"
    );
    let rows = fetch_rows(&segment);
    assert_eq!(rows.len(), 8);
    for u in pages("dead.web.test", 0..5) {
        let r = &rows[&u];
        assert_eq!(
            (r.status.as_str(), r.reason.as_str()),
            ("fetch_retry", "dns_failure"),
            "{u}"
        );
    }
    for u in pages("site0.web.test", 0..3) {
        assert_eq!(rows[&u].status.as_str(), "fetch_success", "{u}");
    }
    assert!(log.iter().all(|l| l.host != "dead.web.test"));
    let robots = robots_rows(&segment);
    let dead = robots.iter().find(|r| r.host == "dead.web.test").unwrap();
    assert_eq!(dead.reason, "dns_failure");
}

/// Every file under `dir`, recursively.
fn walk_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk_files(&p));
        } else {
            out.push(p);
        }
    }
    out
}
