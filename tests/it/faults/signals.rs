//! Faults: signals (SIGINT/SIGTERM during a stage) and a web that does not answer.
//!
//! The contract (docs/exit-codes.md, "Signals"): the first signal stops a stage at
//! its next safe point: fetch sends nothing more, lets requests in flight finish for
//! at most min(fetch.total_timeout, 5 s), writes what it fetched (the rest
//! `fetch_retry`/`interrupted`, due again after updatedb), prints its summary and
//! exits 4; the other stages install nothing and exit 4. A second signal exits at
//! once (143 for SIGTERM) with nothing installed. A fetch that reached no server
//! writes its segment with the real cause on every row and exits 5 with a warning.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{
    LogLine, TestWeb, bin, crawldb, fetch_rows, generate_segment, inject_seeds, read_log, run,
    run_ok, stage_command, write_config,
};

/// `http://site0.web.test/` and its pages `/p1.html` .. `/p{n-1}.html`.
fn site0_pages(n: usize) -> Vec<String> {
    (0..n)
        .map(|j| {
            if j == 0 {
                "http://site0.web.test/".to_string()
            } else {
                format!("http://site0.web.test/p{j}.html")
            }
        })
        .collect()
}

/// Starts `stage` on the crawl in the background, stderr captured.
fn spawn(stage: &str, crawl: &Path, config: &Path, args: &[&str], env: &[(&str, &str)]) -> Child {
    let mut cmd = stage_command(bin(stage), crawl, config, args);
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap_or_else(|e| panic!("spawn {stage}: {e}"))
}

fn sigterm(child: &Child) {
    let ok = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -TERM failed");
}

/// Waits for `child` to exit (at most `limit`); returns its exit code and stderr.
fn wait_exit(mut child: Child, limit: Duration) -> (Option<i32>, String) {
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "still running after {limit:?}; stderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Polls the test web's log until `pred` holds for it (at most 20 s).
fn wait_for_log(log: &Path, what: &str, pred: impl Fn(&[LogLine]) -> bool) {
    let started = Instant::now();
    while !pred(&read_log(log)) {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the server log never showed {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Entries of `dir` whose name contains `.tmp-` (staging left behind).
fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains(".tmp-"))
                .collect()
        })
        .unwrap_or_default()
}

/// A crawl of one host with `n` pages injected and generated; returns (crawl, config,
/// segment).
fn one_host_segment(
    dir: &Path,
    web: &TestWeb,
    n: usize,
    delay: f64,
    extra: &str,
) -> (PathBuf, PathBuf, String) {
    let crawl = dir.join("crawl");
    let config = write_config(dir, &web.addr, delay, extra);
    inject_seeds(dir, &crawl, &config, &site0_pages(n));
    let segment = generate_segment(&crawl, &config);
    (crawl, config, segment)
}

/// SIGTERM to a fetch half way: exit 4 after the summary, one crawl_fetch row per
/// fetch-list URL (the fetched ones ok with content, the rest
/// `fetch_retry`/`interrupted` and never requested), and updatedb makes the unsent
/// URLs due again: the next generate lists exactly them.
#[test]
fn sigterm_during_fetch_writes_what_was_fetched_and_exits_4() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let web = TestWeb::start(dir, &["--seed", "5", "--hosts", "1", "--pages", "30"]);
    let (crawl, config, segment) = one_host_segment(dir, &web, 30, 0.2, "");
    let child = spawn("fetch", &crawl, &config, &[&segment], &[]);
    wait_for_log(&web.log, "four page requests", |l| {
        l.iter().filter(|l| l.path != "/robots.txt").count() >= 4
    });
    sigterm(&child);
    let signalled = Instant::now();
    let (code, stderr) = wait_exit(child, Duration::from_secs(15));
    let took = signalled.elapsed();
    let log = web.stop();
    assert_eq!(code, Some(4), "exit code 4 (interrupted):\n{stderr}");
    assert!(
        took < Duration::from_secs(3),
        "stopped within the grace period: {took:?}"
    );
    assert!(stderr.contains("SIGTERM received"), "{stderr}");
    assert!(
        stderr.contains(&format!("fetch: segment {segment}: 30 urls")),
        "summary printed:\n{stderr}"
    );
    assert!(stderr.contains("fetch: interrupted by SIGTERM"), "{stderr}");

    let rows = fetch_rows(&segment);
    assert_eq!(
        rows.keys().cloned().collect::<BTreeSet<_>>(),
        site0_pages(30).into_iter().collect::<BTreeSet<_>>(),
        "exactly one crawl_fetch row per fetch-list URL"
    );
    let content = crate::common::content_rows(&segment);
    let requested: BTreeSet<String> = log
        .iter()
        .map(|l| format!("http://{}{}", l.host, l.path))
        .collect();
    let mut fetched = BTreeSet::new();
    let mut interrupted = BTreeSet::new();
    for (url, r) in &rows {
        match (r.status.as_str(), r.reason.as_str()) {
            ("fetch_success", "ok") => {
                assert!(content.contains_key(url), "{url} has content");
                assert!(requested.contains(url), "{url} was requested");
                fetched.insert(url.clone());
            }
            ("fetch_retry", "interrupted") => {
                assert!(!requested.contains(url), "{url} was requested: {log:?}");
                assert!(!content.contains_key(url));
                interrupted.insert(url.clone());
            }
            other => panic!("{url}: unexpected {other:?}"),
        }
    }
    assert!(fetched.len() >= 4, "fetched before the signal: {fetched:?}");
    assert!(
        interrupted.len() >= 10,
        "left by the signal: {interrupted:?}"
    );
    assert_eq!(content.len(), fetched.len());
    assert!(
        stderr.contains(&format!(
            "status: fetch_retry={} fetch_success={}",
            interrupted.len(),
            fetched.len()
        )),
        "{stderr}"
    );
    assert!(leftovers(Path::new(&segment)).is_empty());

    // Applied as usual: fetched pages db_fetched, the unsent ones untouched and due.
    for stage in ["parse", "updatedb", "linkdb"] {
        run_ok(stage, &crawl, &config, &[&segment]);
    }
    let db = crawldb(&crawl);
    let now = trawl::datum::now_millis();
    for u in &fetched {
        assert_eq!(db[u].status.as_str(), "db_fetched", "{u}");
    }
    for u in &interrupted {
        let d = &db[u];
        assert_eq!(d.status.as_str(), "db_unfetched", "{u}");
        assert_eq!(d.retries, 0, "{u}: not attempted, no retry counted");
        assert!(d.fetch_time <= now, "{u} is due");
    }
    let next = generate_segment(&crawl, &config);
    let listed: Vec<trawl::CrawlDatum> =
        trawl::store::parquet::read_dataset(&Path::new(&next).join("crawl_generate")).unwrap();
    let listed: BTreeSet<String> = listed.into_iter().map(|d| d.url).collect();
    for u in &interrupted {
        assert!(listed.contains(u), "{u} is generated again");
    }
    assert!(listed.is_disjoint(&fetched), "fetched pages are not due");
}

/// The first SIGTERM lets a request in flight finish (a 3 s response: fetch is still
/// running 0.5 s later); the second exits at once with 143, installing nothing; the
/// rerun cleans up and fetches every URL once.
#[test]
fn second_sigterm_exits_at_once_and_installs_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let web_flags = &["--seed", "5", "--hosts", "1", "--pages", "3", "--hostile"];
    let web = TestWeb::start(dir, web_flags);
    let crawl = dir.join("crawl");
    let config = write_config(dir, &web.addr, 0.0, "");
    std::fs::write(
        &config,
        std::fs::read_to_string(&config)
            .unwrap()
            .replace("[fetch]\n", "[fetch]\nrespect_robots = false\n"),
    )
    .unwrap();
    let seeds = vec![
        "http://hostile.web.test/slow.html".to_string(),
        "http://site0.web.test/".to_string(),
    ];
    inject_seeds(dir, &crawl, &config, &seeds);
    let segment = generate_segment(&crawl, &config);
    let child = spawn("fetch", &crawl, &config, &[&segment], &[]);
    // site0's page is answered at once; slow.html (3 s before its head) is in flight.
    wait_for_log(&web.log, "site0's page", |l| {
        l.iter().any(|l| l.host == "site0.web.test")
    });
    std::thread::sleep(Duration::from_millis(300));
    sigterm(&child);
    let first = Instant::now();
    std::thread::sleep(Duration::from_millis(500));
    let mut child = child;
    assert!(
        child.try_wait().unwrap().is_none(),
        "the request in flight is given time to finish"
    );
    sigterm(&child);
    let (code, stderr) = wait_exit(child, Duration::from_secs(5));
    assert!(
        first.elapsed() < Duration::from_millis(2500),
        "the second signal did not wait for the slow response"
    );
    assert_eq!(code, Some(143), "second SIGTERM: exit at once:\n{stderr}");
    assert!(!stderr.contains("fetch: segment"), "no summary: {stderr}");
    let seg = Path::new(&segment);
    for name in ["crawl_fetch", "content", "robots"] {
        assert!(!seg.join(name).exists(), "{name} installed");
    }
    let addr = web.addr.clone();
    drop(web);

    // The rerun removes what the dead run left and fetches both URLs once.
    // The same address the config points at.
    let web = TestWeb::start_on(dir, &addr, web_flags);
    let out = run("fetch", &crawl, &config, &[&segment]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = web.stop();
    let rows = fetch_rows(&segment);
    assert_eq!(rows.len(), 2);
    for u in &seeds {
        assert_eq!(rows[u].status.as_str(), "fetch_success", "{u}");
        assert_eq!(
            log.iter()
                .filter(|l| format!("http://{}{}", l.host, l.path) == *u)
                .count(),
            1,
            "{u} requested once by the rerun"
        );
    }
    assert!(leftovers(seg).is_empty(), "{:?}", leftovers(seg));
}

/// A request in flight that does not end (an endless body) is cut when the grace
/// period (min(total_timeout, 5 s)) is over: exit 4 after about 5 s, the URL
/// `fetch_retry`/`interrupted`.
#[test]
fn sigterm_cuts_a_request_in_flight_after_the_grace_period() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let web = TestWeb::start(
        dir,
        &["--seed", "5", "--hosts", "1", "--pages", "3", "--hostile"],
    );
    let crawl = dir.join("crawl");
    let config = write_config(dir, &web.addr, 0.0, "");
    std::fs::write(
        &config,
        std::fs::read_to_string(&config).unwrap().replace(
            "[fetch]\n",
            "[fetch]\nrespect_robots = false\ntotal_timeout = 30.0\n",
        ),
    )
    .unwrap();
    let seeds = vec![
        "http://hostile.web.test/endless.html".to_string(),
        "http://site0.web.test/".to_string(),
    ];
    inject_seeds(dir, &crawl, &config, &seeds);
    let segment = generate_segment(&crawl, &config);
    let child = spawn("fetch", &crawl, &config, &[&segment], &[]);
    wait_for_log(&web.log, "site0's page", |l| {
        l.iter().any(|l| l.host == "site0.web.test")
    });
    std::thread::sleep(Duration::from_millis(300));
    sigterm(&child);
    let signalled = Instant::now();
    let (code, stderr) = wait_exit(child, Duration::from_secs(20));
    let took = signalled.elapsed();
    drop(web);
    assert_eq!(code, Some(4), "{stderr}");
    assert!(
        took >= Duration::from_millis(4800) && took < Duration::from_secs(8),
        "cut after the 5 s grace period: {took:?}"
    );
    let rows = fetch_rows(&segment);
    assert_eq!(rows.len(), 2);
    let endless = &rows["http://hostile.web.test/endless.html"];
    assert_eq!(
        (endless.status.as_str(), endless.reason.as_str()),
        ("fetch_retry", "interrupted")
    );
    assert_eq!(
        rows["http://site0.web.test/"].status.as_str(),
        "fetch_success"
    );
}

/// SIGTERM to updatedb while its new crawldb version is staged: exit 4 at once,
/// nothing installed (the crawldb and its applied list as before, no staging or lock
/// left), and the rerun applies the segment.
#[test]
fn sigterm_during_updatedb_installs_nothing_and_a_rerun_applies() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let web = TestWeb::start(dir, &["--seed", "5", "--hosts", "1", "--pages", "4"]);
    let (crawl, config, segment) = one_host_segment(dir, &web, 4, 0.0, "");
    run_ok("fetch", &crawl, &config, &[&segment]);
    run_ok("parse", &crawl, &config, &[&segment]);
    drop(web);
    let before = crawldb(&crawl);
    let pause = [(trawl::store::versioned::PAUSE_BEFORE_INSTALL_ENV, "60")];
    let child = spawn("updatedb", &crawl, &config, &[&segment], &pause);
    let staged_meta = crawl
        .join("crawldb")
        .join(format!("current.tmp-{}", child.id()))
        .join("_meta.json");
    let started = Instant::now();
    while !staged_meta.is_file() {
        assert!(started.elapsed() < Duration::from_secs(30), "never staged");
        std::thread::sleep(Duration::from_millis(20));
    }
    sigterm(&child);
    let signalled = Instant::now();
    let (code, stderr) = wait_exit(child, Duration::from_secs(10));
    assert_eq!(code, Some(4), "{stderr}");
    assert!(
        signalled.elapsed() < Duration::from_secs(2),
        "the pause before install ends at the signal"
    );
    assert!(
        stderr.contains(
            "interrupted by SIGTERM: updatedb stopped before installing anything: the crawldb is unchanged; rerun updatedb"
        ),
        "{stderr}"
    );
    assert_eq!(
        crawldb(&crawl).keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>()
    );
    assert!(
        crawldb(&crawl)
            .values()
            .all(|d| d.status.as_str() == "db_unfetched")
    );
    let meta = trawl::store::layout::CrawlDir::new(&crawl)
        .crawldb_meta()
        .unwrap();
    assert!(
        meta.applied_segments.is_empty(),
        "{:?}",
        meta.applied_segments
    );
    assert!(leftovers(&crawl.join("crawldb")).is_empty());
    assert!(!crawl.join("crawldb/.lock").exists(), "lock released");

    run_ok("updatedb", &crawl, &config, &[&segment]);
    let db = crawldb(&crawl);
    for u in site0_pages(4) {
        assert_eq!(db[&u].status.as_str(), "db_fetched", "{u}");
    }
}

/// A web that is down (a test web started and stopped: nothing listens on its
/// port): every row `fetch_retry`/`connection_refused` (robots.txt too), a warning
/// naming the hosts and the address, exit code 5; updatedb records the retries.
#[test]
fn fetch_with_the_web_down_exits_5_naming_connection_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let web = TestWeb::start(dir, &["--seed", "5", "--hosts", "3", "--pages", "2"]);
    let addr = web.addr.clone();
    web.stop();
    let crawl = dir.join("crawl");
    let config = write_config(dir, &addr, 0.0, "");
    let seeds: Vec<String> = (0..3)
        .flat_map(|h| {
            [
                format!("http://site{h}.web.test/"),
                format!("http://site{h}.web.test/p1.html"),
            ]
        })
        .collect();
    inject_seeds(dir, &crawl, &config, &seeds);
    let segment = generate_segment(&crawl, &config);
    let out = run("fetch", &crawl, &config, &[&segment]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(5),
        "exit code 5 (unreachable):\n{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "fetch: WARNING: no server reached: all 3 hosts tried failed to connect or resolve (site0.web.test ({addr}): connection_refused; site1.web.test ({addr}): connection_refused; site2.web.test ({addr}): connection_refused)"
        )),
        "{stderr}"
    );
    assert!(stderr.contains("reasons: connection_refused=6"), "{stderr}");
    let rows = fetch_rows(&segment);
    assert_eq!(rows.len(), 6);
    for (u, r) in &rows {
        assert_eq!(
            (r.status.as_str(), r.reason.as_str()),
            ("fetch_retry", "connection_refused"),
            "{u}"
        );
    }
    let robots: Vec<trawl::net::robots::RobotsRecord> =
        trawl::store::parquet::read_dataset(&Path::new(&segment).join("robots")).unwrap();
    assert_eq!(robots.len(), 3);
    for r in &robots {
        assert_eq!(
            (r.outcome.as_str(), r.reason.as_str()),
            ("unavailable", "connection_refused")
        );
    }
    for stage in ["parse", "updatedb"] {
        run_ok(stage, &crawl, &config, &[&segment]);
    }
    let db = crawldb(&crawl);
    for u in &seeds {
        assert_eq!(db[u].retries, 1, "{u}: the failed attempt is recorded");
    }
}

/// `scripts/round.sh` with the web down: fetch exits 5, the round still applies the
/// segment (the failed attempts recorded, nothing left unapplied to hold the URLs
/// back), skips pagerank and sitemap, and exits 5 with a warning.
#[test]
fn round_with_the_web_down_applies_the_segment_and_exits_5() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let web = TestWeb::start(dir, &["--seed", "5", "--hosts", "2", "--pages", "2"]);
    let addr = web.addr.clone();
    web.stop();
    let crawl = dir.join("crawl");
    let config = write_config(dir, &addr, 0.0, "");
    let seeds = vec![
        "http://site0.web.test/".to_string(),
        "http://site1.web.test/".to_string(),
    ];
    inject_seeds(dir, &crawl, &config, &seeds);
    let bin_dir = Path::new(bin("fetch")).parent().unwrap();
    let out = Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/round.sh"))
        .env("BIN", bin_dir)
        .env("TRAWL_CRAWL_DIR", &crawl)
        .env("TRAWL_CONFIG", &config)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(
        stderr.contains("fetch: WARNING: no server reached: all 2 hosts"),
        "{stderr}"
    );
    assert!(
        stderr.contains("round: WARNING: fetch reached no server (exit code 5)"),
        "{stderr}"
    );
    assert!(!stderr.contains("pagerank:"), "pagerank skipped: {stderr}");
    let segments = trawl::store::layout::CrawlDir::new(&crawl)
        .segments()
        .unwrap();
    assert_eq!(segments.len(), 1);
    let meta = trawl::store::layout::CrawlDir::new(&crawl)
        .crawldb_meta()
        .unwrap();
    assert_eq!(meta.applied_segments, vec![segments[0].name().to_string()]);
    let db = crawldb(&crawl);
    for u in &seeds {
        assert_eq!(db[u].retries, 1, "{u}");
        assert_eq!(db[u].status.as_str(), "db_unfetched", "{u}");
    }
}
