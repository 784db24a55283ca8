//! JavaScript rendering (`[fetch.render]`) through the binaries, in real headless
//! Chromium: the test web's scripted hosts (`testweb serve --scripted`) crawled with
//! `crawl`, one application host rendered and its twin not. What only scripts write
//! (a catalogue built from XHR data, a third-party widget, a timer's line, item pages'
//! titles) must show up on the rendered host alone; the response is still stored as
//! fetched; a script that never ends is cut at the time budget. The server's request
//! log must show the browser's requests kept to the crawl's politeness: nothing sent
//! to the blocked ad host, nothing under robots.txt's `/private/`, the third party's
//! robots.txt read before its script, every host's requests the delay apart.

use crate::common;
use common::*;
use testweb::scripted::{
    ADS_HOST, APP_HOSTS, APP_TEXT, BUSY, CDN_HOST, CDN_TEXT, ITEMS, NEVER_LINKED, TIMER_TEXT,
};
use trawl::records::ContentRecord;

const WEB: &[&str] = &[
    "--seed",
    "5",
    "--hosts",
    "1",
    "--pages",
    "3",
    "--seed-count",
    "0",
    "--scripted",
];
/// The crawl's delay between two requests to one host.
const DELAY_MS: i64 = 250;

fn at(host: &str, path: &str) -> String {
    format!("http://{host}{path}")
}

#[test]
fn rendered_hosts_reveal_what_scripts_write_and_stay_polite() {
    if !browser::available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let web = TestWeb::start(dir, WEB);
    let map = site_map(dir, WEB);
    let (app, plain) = (APP_HOSTS[0], APP_HOSTS[1]);
    let config = write_config(
        dir,
        &web.addr,
        DELAY_MS as f64 / 1000.0,
        &format!(
            "[fetch.render]\nhosts = [\"{app}\"]\nblock_hosts = [\"{ADS_HOST}\"]\n\
             max_pages = 2\ntimeout = 4.0\nsettle_time = 0.3\n"
        ),
    );
    let crawl = dir.join("crawl");
    let seeds = dir.join("seeds.txt");
    assert_eq!(map.seeds, [at(app, "/"), at(plain, "/")]);
    std::fs::write(&seeds, map.seeds.join("\n") + "\n").unwrap();
    let out = run(
        "crawl",
        &crawl,
        &config,
        &["--seeds", seeds.to_str().unwrap(), "--rounds", "2"],
    );
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "crawl failed: {err}");
    let log = web.stop();

    // What scripts link to was found and fetched on the rendered host only; what
    // only blocked scripts link to, nowhere.
    let db = crawldb_statuses(&crawl);
    for (path, _) in ITEMS.iter().chain([&BUSY]) {
        assert_eq!(
            db.get(&at(app, path)).map(String::as_str),
            Some("db_fetched"),
            "{path} on {app}: {db:?}"
        );
        assert!(!db.contains_key(&at(plain, path)), "{path} on {plain}");
    }
    for path in NEVER_LINKED {
        for host in APP_HOSTS {
            assert!(!db.contains_key(&at(host, path)), "{host}{path}: {db:?}");
        }
    }

    // parse read the DOM the scripts left on the rendered host, the response on the
    // other.
    let p = parses(&crawl);
    let (d, t) = &p[&at(app, "/")];
    assert_eq!(d.metadata["render_status"], "rendered", "{d:?}");
    for text in [APP_TEXT, CDN_TEXT, TIMER_TEXT] {
        assert!(t.text.contains(text), "{text:?} in {:?}", t.text);
    }
    let links: Vec<&str> = d.outlinks.iter().map(|o| o.url.as_str()).collect();
    let want: Vec<String> = ITEMS
        .iter()
        .chain([&BUSY])
        .map(|(path, _)| at(app, path))
        .collect();
    assert_eq!(links, want);
    let (d, t) = &p[&at(plain, "/")];
    assert!(!d.metadata.contains_key("render_status"), "{d:?}");
    assert!(d.outlinks.is_empty(), "{:?}", d.outlinks);
    assert!(!t.text.contains(APP_TEXT) && !t.text.contains(CDN_TEXT));
    for (path, title) in ITEMS {
        let (d, t) = &p[&at(app, path)];
        assert_eq!(d.title.as_deref(), Some(title), "{path}");
        assert!(t.text.contains("where the bird nests"), "{:?}", t.text);
    }
    // The script that never ends: cut at the budget, the response parsed instead.
    let (d, t) = &p[&at(app, BUSY.0)];
    assert_eq!(d.metadata["render_status"], "render_failed", "{d:?}");
    assert_eq!(d.title.as_deref(), Some(BUSY.1));
    assert!(t.text.contains("never ends"));

    // The response is stored as fetched, the DOM beside it.
    let mut content: Vec<ContentRecord> = Vec::new();
    for seg in segment_dirs(&crawl) {
        if seg.join("content").is_dir() {
            content.extend(
                trawl::store::parquet::read_dataset::<ContentRecord>(&seg.join("content")).unwrap(),
            );
        }
    }
    let home = content.iter().find(|c| c.url == at(app, "/")).unwrap();
    let raw = String::from_utf8_lossy(&home.content);
    assert!(raw.contains("<div id=\"app\"></div>") && !raw.contains(APP_TEXT));
    assert!(home.rendered.as_deref().unwrap().contains(APP_TEXT));
    let other = content.iter().find(|c| c.url == at(plain, "/")).unwrap();
    assert_eq!((&other.rendered, &other.render_status), (&None, &None));

    // The WARC export of round 1 (both home pages): the response as the server sent
    // it, and one conversion record with the rendered DOM, referring to it.
    let segs = segment_dirs(&crawl);
    run_ok("warc", &crawl, &config, &[segs[0].to_str().unwrap()]);
    let mut warc = String::new();
    for f in std::fs::read_dir(crawl.join("warc")).unwrap() {
        let bytes = std::fs::read(f.unwrap().path()).unwrap();
        std::io::Read::read_to_string(
            &mut flate2::read::MultiGzDecoder::new(&bytes[..]),
            &mut warc,
        )
        .unwrap();
    }
    assert_eq!(warc.matches("WARC-Type: response").count(), 2);
    let conversions: Vec<&str> = warc
        .split("WARC/1.1\r\n")
        .filter(|r| r.starts_with("WARC-Type: conversion"))
        .collect();
    assert_eq!(conversions.len(), 1, "{warc}");
    let c = conversions[0];
    assert!(
        c.contains(&format!("WARC-Target-URI: {}", at(app, "/"))),
        "{c}"
    );
    assert!(
        c.contains("WARC-Refers-To: <urn:uuid:") && c.contains(APP_TEXT),
        "{c}"
    );

    // The server's log: what the browser asked for, and how politely.
    let requested = |host: &str, path: &str| {
        log.iter()
            .filter(|l| l.host == host && l.path == path)
            .map(|l| l.time_ms)
            .collect::<Vec<_>>()
    };
    assert!(
        log.iter().all(|l| l.host != ADS_HOST),
        "the blocked host was contacted"
    );
    assert!(
        log.iter().all(|l| !l.path.starts_with("/private/")),
        "a robots-disallowed script was requested"
    );
    for path in ["/app.js", "/api/items.json"] {
        assert!(!requested(app, path).is_empty(), "{path} never requested");
        assert!(requested(plain, path).is_empty(), "{plain}{path} requested");
    }
    let cdn_robots = requested(CDN_HOST, "/robots.txt");
    let cdn_script = requested(CDN_HOST, "/lib.js");
    assert_eq!(cdn_robots.len(), 1, "{log:?}");
    assert!(!cdn_script.is_empty() && cdn_robots[0] <= cdn_script[0]);
    // Each page was requested once: the browser got the fetched response.
    assert_eq!(requested(app, "/").len(), 1);
    let hosts = assert_polite(&log, &map, DELAY_MS);
    assert_eq!(hosts, 3, "app, app-plain and cdn: {log:?}");

    // The summary line says what rendering did.
    assert!(
        err.contains("rendered 2 (time_budget 0, failed 1)"),
        "round 2's fetch summary: {err}"
    );
}

/// The processes whose command line mentions `dir` (Chromium's profile is under it).
fn processes_under(dir: &std::path::Path) -> Vec<u32> {
    let needle = dir.to_string_lossy().into_owned();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(&needle) {
            out.push(pid);
        }
    }
    out
}

/// A fetch killed with SIGKILL while a page is being rendered leaves no Chromium
/// behind (its watchdog kills the process group when the fetch's pipe closes), and
/// the segment is fetched by the next run.
#[test]
fn a_killed_fetch_leaves_no_browser_and_reruns() {
    if !browser::available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let web = TestWeb::start(dir, WEB);
    let app = APP_HOSTS[0];
    let config = write_config(
        dir,
        &web.addr,
        0.0,
        &format!("[fetch.render]\nhosts = [\"{app}\"]\ntimeout = 60.0\n"),
    );
    let crawl = dir.join("crawl");
    inject_seeds(dir, &crawl, &config, &[at(app, BUSY.0)]);
    run_ok("generate", &crawl, &config, &[]);
    let profiles = dir.join("tmp");
    std::fs::create_dir(&profiles).unwrap();
    let mut fetch = stage_command(bin("fetch"), &crawl, &config, &[])
        .env("TMPDIR", &profiles)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while processes_under(&profiles).len() < 2 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "Chromium did not start under {}",
            profiles.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // The busy page holds its tab: the fetch is in the middle of rendering.
    std::thread::sleep(std::time::Duration::from_millis(500));
    fetch.kill().unwrap();
    fetch.wait().unwrap();
    let killed = std::time::Instant::now();
    while !processes_under(&profiles).is_empty() {
        assert!(
            killed.elapsed() < std::time::Duration::from_secs(10),
            "Chromium outlived the killed fetch: {:?}",
            processes_under(&profiles)
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // The rerun fetches the segment (the budget cut short this time).
    let out = run(
        "fetch",
        &crawl,
        &config,
        &["--set", "fetch.render.timeout=1"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("rendered 0 (time_budget 0, failed 1)"),
        "{err}"
    );
}
