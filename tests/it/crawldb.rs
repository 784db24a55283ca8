//! Integration tests of inject, generate, updatedb and readdb, driving the real binaries.

use crate::common;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use trawl::datum::{CrawlDatum, DbStatus, FetchStatus};
use trawl::records::{CrawlParseRecord, FetchRecord};
use trawl::store::layout::{CrawlDir, SegmentMeta};
use trawl::store::parquet::{self, PartWriter, Record, StagedDataset};
use trawl::store::partition::Partitioner;

fn bin(name: &str) -> Command {
    let exe = match name {
        "inject" => common::bin("inject"),
        "generate" => common::bin("generate"),
        "updatedb" => common::bin("updatedb"),
        "readdb" => common::bin("readdb"),
        other => panic!("unknown binary {other}"),
    };
    let mut c = Command::new(exe);
    c.env_remove("TRAWL_CONFIG")
        .env_remove("TRAWL_CRAWL_DIR")
        .env_remove(trawl::store::versioned::PAUSE_BEFORE_INSTALL_ENV)
        .env("RUST_LOG", "warn");
    c
}

fn run(name: &str, crawl: &Path, args: &[&str]) -> Output {
    bin(name)
        .arg("--crawl-dir")
        .arg(crawl)
        .args(args)
        .output()
        .expect("run binary")
}

fn ok(name: &str, crawl: &Path, args: &[&str]) -> (String, String) {
    let out = run(name, crawl, args);
    let (so, se) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "{name} {args:?} failed: {se}");
    (so, se)
}

fn write_seeds(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("seeds.txt");
    std::fs::write(&p, text).unwrap();
    p
}

/// Every row of the crawldb, checking the partition and sort invariants.
fn crawldb_rows(crawl: &Path) -> Vec<CrawlDatum> {
    let dir = CrawlDir::open_existing(crawl).unwrap();
    let meta = dir.crawldb_meta().unwrap();
    let parts = parquet::part_files(&dir.crawldb_current()).unwrap();
    assert_eq!(parts.len(), meta.partitions, "one part per partition");
    let mut all = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let rows: Vec<CrawlDatum> = parquet::read_part_all(p).unwrap();
        for w in rows.windows(2) {
            assert!(
                w[0].url < w[1].url,
                "part {i} sorted and unique: {} {}",
                w[0].url,
                w[1].url
            );
        }
        for r in &rows {
            assert_eq!(
                Partitioner::by_host(meta.partitions).of_host(&r.host),
                i,
                "{} in its host's part",
                r.url
            );
        }
        all.extend(rows);
    }
    all
}

fn by_url(rows: Vec<CrawlDatum>) -> BTreeMap<String, CrawlDatum> {
    rows.into_iter().map(|d| (d.url.clone(), d)).collect()
}

fn segment_rows(seg: &Path) -> Vec<CrawlDatum> {
    parquet::read_dataset(&seg.join("crawl_generate")).unwrap()
}

/// Writes a segment dataset partitioned by host like fetch/parse do.
fn write_seg_dataset<R: Record>(seg: &Path, name: &str, rows: Vec<R>, host: impl Fn(&R) -> String) {
    let meta: SegmentMeta = parquet::read_json(&seg.join("_meta.json")).unwrap();
    let staged = StagedDataset::new(&seg.join(name)).unwrap();
    let mut parts: Vec<Vec<R>> = (0..meta.partitions).map(|_| Vec::new()).collect();
    for r in rows {
        let p = Partitioner::by_host(meta.partitions).of_host(&host(&r));
        parts[p].push(r);
    }
    for (i, rows) in parts.into_iter().enumerate() {
        let mut w = PartWriter::<R>::create(&staged.part_path(i)).unwrap();
        for r in rows {
            w.push(r).unwrap();
        }
        w.finish().unwrap();
    }
    staged.commit().unwrap();
}

fn fetch_rec(
    d: &CrawlDatum,
    status: FetchStatus,
    reason: &str,
    redirect: Option<&str>,
) -> FetchRecord {
    FetchRecord {
        url: d.url.clone(),
        host: d.host.clone(),
        status,
        reason: reason.into(),
        fetch_time: trawl::datum::now_millis(),
        http_status: Some(200),
        content_type: Some("text/html".into()),
        content_length: Some(100),
        redirect_target: redirect.map(String::from),
        etag: None,
        last_modified: None,
        response_time_ms: Some(3),
        score: d.score,
        depth: d.depth,
    }
}

fn sig_row(url: &str, sig: &str) -> CrawlParseRecord {
    CrawlParseRecord {
        url: url.into(),
        host: trawl::urls::host_of(url),
        kind: "signature".into(),
        from_url: None,
        anchor: None,
        score: 0.0,
        depth: 0,
        signature: Some(sig.into()),
    }
}

fn link_row(from: &str, to: &str, score: f64, depth: i32) -> CrawlParseRecord {
    CrawlParseRecord {
        url: to.into(),
        host: trawl::urls::host_of(to),
        kind: "link".into(),
        from_url: Some(from.into()),
        anchor: Some("a".into()),
        score,
        depth,
        signature: None,
    }
}

#[test]
fn inject_reports_rejects_and_is_idempotent() {
    let t = tempfile::tempdir().unwrap();
    let crawl = t.path().join("crawl");
    let seeds = write_seeds(
        t.path(),
        "# seeds\nhttp://a.test/\nftp://nope.test/\n\nhttp://b.test/x score=3\thttp_lang=en\nhttp://c.test/ score=abc\nhttp://A.TEST/#top\nhttp://c.test/ok fetch_interval=3600\n",
    );
    let (_, err) = ok("inject", &crawl, &[seeds.to_str().unwrap()]);
    assert!(err.contains("seeds.txt:3"), "{err}");
    assert!(err.contains("seeds.txt:6"), "{err}");
    assert!(err.contains("score"), "{err}");
    assert!(
        err.contains("injected 3, already known 1, rejected 2"),
        "{err}"
    );
    let rows = by_url(crawldb_rows(&crawl));
    assert_eq!(rows.len(), 3);
    let b = &rows["http://b.test/x"];
    assert_eq!(b.score, 3.0);
    assert_eq!(b.status, DbStatus::DbUnfetched);
    assert_eq!(b.metadata.get("http_lang").map(String::as_str), Some("en"));
    assert_eq!(rows["http://c.test/ok"].fetch_interval, 3600);
    assert_eq!(rows["http://a.test/"].score, 1.0);
    let meta = CrawlDir::new(&crawl).crawldb_meta().unwrap();
    assert_eq!(meta.seed_hosts, ["a.test", "b.test", "c.test"]);
    assert_eq!(meta.partitions, 8);

    // Re-inject: nothing changes, known URLs keep their record.
    let (_, err) = ok("inject", &crawl, &[seeds.to_str().unwrap()]);
    assert!(err.contains("injected 0, already known 4"), "{err}");
    assert_eq!(by_url(crawldb_rows(&crawl)), rows);

    // New seeds merge in; known ones keep their score even if the line differs.
    let more = t.path().join("more.txt");
    std::fs::write(&more, "http://b.test/x score=9\nhttp://d.test/\n").unwrap();
    let (_, err) = ok("inject", &crawl, &[more.to_str().unwrap()]);
    assert!(err.contains("injected 1, already known 1"), "{err}");
    let rows2 = by_url(crawldb_rows(&crawl));
    assert_eq!(rows2.len(), 4);
    assert_eq!(rows2["http://b.test/x"].score, 3.0);
}

#[test]
fn inject_missing_seed_file_is_a_clear_error() {
    let t = tempfile::tempdir().unwrap();
    let crawl = t.path().join("crawl");
    let out = run("inject", &crawl, &["/nonexistent/seeds.txt"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/seeds.txt"), "{err}");
    assert!(!crawl.exists(), "nothing created");
}

fn inject_hosts(t: &Path, crawl: &Path, hosts: &[&str], per_host: usize) {
    let mut text = String::new();
    for (hi, h) in hosts.iter().enumerate() {
        for i in 0..per_host {
            text.push_str(&format!("http://{h}/p{i} score={}\n", (hi * 10 + i) as f64));
        }
    }
    let seeds = write_seeds(t, &text);
    ok("inject", crawl, &[seeds.to_str().unwrap()]);
}

#[test]
fn generate_top_n_per_host_cap_and_generate_lock() {
    let t = tempfile::tempdir().unwrap();
    let crawl = t.path().join("crawl");
    inject_hosts(t.path(), &crawl, &["a.test", "b.test", "c.test"], 5);
    let (out, _) = ok("generate", &crawl, &["--top-n", "4", "--max-per-host", "2"]);
    let seg = PathBuf::from(out.trim());
    assert!(
        seg.join("_meta.json").is_file(),
        "stdout is the segment path: {out:?}"
    );
    let meta: SegmentMeta = parquet::read_json(&seg.join("_meta.json")).unwrap();
    assert_eq!(meta.urls, 4);
    assert_eq!(meta.partitions, 8);
    let rows = segment_rows(&seg);
    let mut urls: Vec<&str> = rows.iter().map(|d| d.url.as_str()).collect();
    urls.sort();
    // Best scores: c (20..24) and b (10..14) first, two per host.
    assert_eq!(
        urls,
        [
            "http://b.test/p3",
            "http://b.test/p4",
            "http://c.test/p3",
            "http://c.test/p4"
        ]
    );

    // A second generate does not hand out the same URLs.
    let (out2, _) = ok("generate", &crawl, &["--top-n", "4", "--max-per-host", "2"]);
    let seg2 = PathBuf::from(out2.trim());
    assert_ne!(seg, seg2);
    let mut urls2: Vec<String> = segment_rows(&seg2).into_iter().map(|d| d.url).collect();
    urls2.sort();
    assert_eq!(
        urls2,
        [
            "http://b.test/p1",
            "http://b.test/p2",
            "http://c.test/p1",
            "http://c.test/p2"
        ]
    );
    for u in &urls2 {
        assert!(!urls.contains(&u.as_str()), "{u} handed out twice");
    }
    assert_eq!(urls2.len(), 4);

    // --max-segments cuts several lists at once, disjoint.
    let (out3, _) = ok(
        "generate",
        &crawl,
        &["--top-n", "2", "--max-per-host", "0", "--max-segments", "3"],
    );
    let segs: Vec<&str> = out3.lines().collect();
    assert_eq!(segs.len(), 3, "{out3}");
    let mut seen = std::collections::HashSet::new();
    for s in &segs {
        let r = segment_rows(Path::new(s));
        assert_eq!(r.len(), 2);
        for d in r {
            assert!(seen.insert(d.url.clone()), "{} in two lists", d.url);
            assert!(!urls.contains(&d.url.as_str()) && !urls2.contains(&d.url));
        }
    }
    // 15 urls - 14 handed out = 1 left; then nothing -> exit code 3, no segment.
    let (out4, _) = ok("generate", &crawl, &["--top-n", "10"]);
    assert_eq!(out4.lines().count(), 1);
    let before = CrawlDir::new(&crawl).segments().unwrap().len();
    let o = run("generate", &crawl, &["--top-n", "10"]);
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("no URLs due"));
    assert!(o.stdout.is_empty());
    assert_eq!(CrawlDir::new(&crawl).segments().unwrap().len(), before);
}

#[test]
fn generate_interleaves_hosts_within_a_part() {
    let t = tempfile::tempdir().unwrap();
    let crawl = t.path().join("crawl");
    let cfg = t.path().join("one.toml");
    std::fs::write(&cfg, "[crawl]\npartitions = 1\n").unwrap();
    let seeds = write_seeds(
        t.path(),
        "http://a.test/1\nhttp://a.test/2\nhttp://b.test/1\nhttp://b.test/2\n",
    );
    ok(
        "inject",
        &crawl,
        &["--config", cfg.to_str().unwrap(), seeds.to_str().unwrap()],
    );
    let (out, _) = ok("generate", &crawl, &["--config", cfg.to_str().unwrap()]);
    let hosts: Vec<String> = segment_rows(Path::new(out.trim()))
        .into_iter()
        .map(|d| d.host)
        .collect();
    assert_eq!(hosts, ["a.test", "b.test", "a.test", "b.test"]);
}

/// Injects 4 URLs, generates them, and writes crawl_fetch + crawl_parse for the segment.
fn fetched_segment(t: &Path, crawl: &Path) -> PathBuf {
    let seeds = write_seeds(
        t,
        "http://a.test/ok score=1\nhttp://a.test/gone score=1\nhttp://b.test/moved score=1\nhttp://b.test/flaky score=1\nhttp://c.test/late score=1\n",
    );
    ok("inject", crawl, &[seeds.to_str().unwrap()]);
    let (out, _) = ok("generate", crawl, &[]);
    let seg = PathBuf::from(out.trim());
    let rows = by_url(segment_rows(&seg));
    let fetches = vec![
        fetch_rec(
            &rows["http://a.test/ok"],
            FetchStatus::FetchSuccess,
            "ok",
            None,
        ),
        fetch_rec(
            &rows["http://a.test/gone"],
            FetchStatus::FetchGone,
            "http_404",
            None,
        ),
        fetch_rec(
            &rows["http://b.test/moved"],
            FetchStatus::FetchRedirPerm,
            "http_301",
            Some("http://d.test/new"),
        ),
        fetch_rec(
            &rows["http://b.test/flaky"],
            FetchStatus::FetchRetry,
            "timeout",
            None,
        ),
        fetch_rec(
            &rows["http://c.test/late"],
            FetchStatus::FetchRetry,
            "time_limit",
            None,
        ),
    ];
    write_seg_dataset(&seg, "crawl_fetch", fetches, |r| r.host.clone());
    let parse = vec![
        sig_row("http://a.test/ok", "sig1"),
        link_row("http://a.test/ok", "http://a.test/new1", 0.25, 1),
        link_row("http://a.test/ok", "http://e.test/x", 0.25, 1),
        link_row("http://b.test/other", "http://e.test/x", 0.5, 3),
        link_row("http://a.test/ok", "http://b.test/flaky", 0.5, 1),
    ];
    write_seg_dataset(&seg, "crawl_parse", parse, |r| r.host.clone());
    seg
}

#[test]
fn updatedb_applies_transitions_and_is_idempotent() {
    let t = tempfile::tempdir().unwrap();
    let crawl = t.path().join("crawl");
    let seg = fetched_segment(t.path(), &crawl);
    let (_, err) = ok("updatedb", &crawl, &[]);
    assert!(
        err.contains("4 fetched") || err.contains("5 fetched"),
        "{err}"
    );
    let rows = by_url(crawldb_rows(&crawl));
    let ok_row = &rows["http://a.test/ok"];
    assert_eq!(ok_row.status, DbStatus::DbFetched);
    assert_eq!(ok_row.signature.as_deref(), Some("sig1"));
    assert!(ok_row.fetch_time > trawl::datum::now_millis() + 86_400_000);
    assert_eq!(rows["http://a.test/gone"].status, DbStatus::DbGone);
    assert_eq!(
        rows["http://a.test/gone"].reason.as_deref(),
        Some("http_404")
    );
    let moved = &rows["http://b.test/moved"];
    assert_eq!(moved.status, DbStatus::DbRedirPerm);
    assert_eq!(moved.redirect_target.as_deref(), Some("http://d.test/new"));
    let flaky = &rows["http://b.test/flaky"];
    assert_eq!(flaky.retries, 1);
    assert_eq!(flaky.status, DbStatus::DbUnfetched);
    assert_eq!(flaky.score, 1.5, "known URL gets its link share");
    let late = &rows["http://c.test/late"];
    assert_eq!(late.retries, 0);
    assert!(
        late.fetch_time <= trawl::datum::now_millis(),
        "time_limit: still due"
    );
    // New URLs: links and the redirect target.
    let new1 = &rows["http://a.test/new1"];
    assert_eq!(
        (new1.status, new1.depth, new1.score),
        (DbStatus::DbUnfetched, 1, 0.25)
    );
    let e = &rows["http://e.test/x"];
    assert_eq!((e.depth, e.score), (1, 0.75), "min depth, summed score");
    let d = &rows["http://d.test/new"];
    assert_eq!((d.status, d.depth), (DbStatus::DbUnfetched, 0));
    assert_eq!(rows.len(), 8);
    let meta = CrawlDir::new(&crawl).crawldb_meta().unwrap();
    let name = seg.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(meta.applied_segments, [name]);

    // Twice = once: explicit segment is skipped, default finds nothing.
    let (_, err) = ok("updatedb", &crawl, &[seg.to_str().unwrap()]);
    assert!(err.contains("already applied"), "{err}");
    ok("updatedb", &crawl, &[]);
    assert_eq!(by_url(crawldb_rows(&crawl)), rows);

    // The applied segment no longer locks its URLs: `late` is due again, `ok` is not.
    let (out, _) = ok("generate", &crawl, &["--top-n", "100"]);
    let listed: Vec<String> = segment_rows(Path::new(out.trim()))
        .into_iter()
        .map(|d| d.url)
        .collect();
    assert!(
        listed.contains(&"http://c.test/late".to_string()),
        "{listed:?}"
    );
    assert!(
        !listed.contains(&"http://a.test/ok".to_string()),
        "{listed:?}"
    );
    assert!(
        listed.contains(&"http://e.test/x".to_string()),
        "{listed:?}"
    );
}

#[test]
fn updatedb_options_no_additions_scope_and_depth() {
    let t = tempfile::tempdir().unwrap();
    let crawl = t.path().join("crawl");
    fetched_segment(t.path(), &crawl);
    let cfg = t.path().join("scope.toml");
    std::fs::write(&cfg, "[urls]\nscope = \"host\"\nmax_depth = 0\n").unwrap();
    ok("updatedb", &crawl, &["--config", cfg.to_str().unwrap()]);
    let rows = by_url(crawldb_rows(&crawl));
    assert!(rows.contains_key("http://a.test/new1"));
    assert!(
        !rows.contains_key("http://e.test/x"),
        "e.test is not a seed host"
    );
    assert!(
        !rows.contains_key("http://d.test/new"),
        "d.test is not a seed host"
    );

    let t2 = tempfile::tempdir().unwrap();
    let crawl2 = t2.path().join("crawl");
    fetched_segment(t2.path(), &crawl2);
    ok("updatedb", &crawl2, &["--no-additions"]);
    let rows = by_url(crawldb_rows(&crawl2));
    assert_eq!(rows.len(), 5);
    assert_eq!(rows["http://a.test/ok"].status, DbStatus::DbFetched);
}

#[test]
fn updatedb_requires_a_fetched_segment_and_a_parsed_one_unless_no_parse() {
    let t = tempfile::tempdir().unwrap();
    let crawl = t.path().join("crawl");
    inject_hosts(t.path(), &crawl, &["a.test"], 2);
    let (out, _) = ok("generate", &crawl, &[]);
    let seg = PathBuf::from(out.trim());
    let o = run("updatedb", &crawl, &[seg.to_str().unwrap()]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("never fetched") && err.contains("run `fetch "),
        "{err}"
    );

    let rows = segment_rows(&seg);
    let fetches = rows
        .iter()
        .map(|d| fetch_rec(d, FetchStatus::FetchSuccess, "ok", None))
        .collect();
    write_seg_dataset(&seg, "crawl_fetch", fetches, |r| r.host.clone());
    // Fetched but not parsed: refused (its outlinks would be lost), nothing changed.
    let before = crawldb_rows(&crawl);
    let o = run("updatedb", &crawl, &[seg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("is fetched but not parsed (no complete crawl_parse/)")
            && err.contains("or pass --no-parse"),
        "{err}"
    );
    assert_eq!(crawldb_rows(&crawl), before);
    // --no-parse: statuses only, each row waiting for its signature.
    let (_, err) = ok("updatedb", &crawl, &["--no-parse", seg.to_str().unwrap()]);
    assert!(err.contains("partially applied"), "{err}");
    for d in crawldb_rows(&crawl) {
        assert_eq!(d.status, DbStatus::DbFetched);
        assert_eq!(d.signature, None);
        assert!(
            d.metadata
                .contains_key(trawl::crawldb::state::PARSE_PENDING_KEY),
            "{d:?}"
        );
    }
}

#[test]
fn killed_updatedb_leaves_current_intact_and_rerun_works() {
    let t = tempfile::tempdir().unwrap();
    let crawl = t.path().join("crawl");
    fetched_segment(t.path(), &crawl);
    let before = by_url(crawldb_rows(&crawl));
    let mut child = bin("updatedb")
        .arg("--crawl-dir")
        .arg(&crawl)
        .env(trawl::store::versioned::PAUSE_BEFORE_INSTALL_ENV, "60")
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let staged_meta = crawl
        .join("crawldb")
        .join(format!("current.tmp-{}", child.id()))
        .join("_meta.json");
    let start = std::time::Instant::now();
    while !staged_meta.is_file() {
        assert!(
            start.elapsed().as_secs() < 30,
            "updatedb never reached the install"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(
        crawl.join("crawldb/.lock").is_file(),
        "the dead holder's lock is left"
    );
    assert_eq!(by_url(crawldb_rows(&crawl)), before, "current intact");
    assert!(
        CrawlDir::new(&crawl)
            .crawldb_meta()
            .unwrap()
            .applied_segments
            .is_empty()
    );

    let (_, err) = ok("updatedb", &crawl, &[]);
    assert!(err.contains("stale lock"), "{err}");
    let after = by_url(crawldb_rows(&crawl));
    assert_eq!(after["http://a.test/ok"].status, DbStatus::DbFetched);
    assert!(!crawl.join("crawldb/.lock").exists());
    let leftovers: Vec<_> = std::fs::read_dir(crawl.join("crawldb"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn readdb_modes() {
    let t = tempfile::tempdir().unwrap();
    let crawl = t.path().join("crawl");
    fetched_segment(t.path(), &crawl);
    ok("updatedb", &crawl, &[]);
    let (stats, err) = ok("readdb", &crawl, &["--stats"]);
    assert!(stats.contains("urls\t8"), "{stats}");
    assert!(stats.contains("status db_fetched\t1"), "{stats}");
    assert!(stats.contains("status db_unfetched\t5"), "{stats}");
    assert!(stats.contains("hosts\t5"), "{stats}");
    assert!(stats.contains("score p50"), "{stats}");
    assert!(err.contains("readdb:"), "summary on stderr: {err}");
    let (ph, _) = ok("readdb", &crawl, &["--stats", "--per-host"]);
    assert!(
        ph.contains("host a.test\tdb_fetched=1\tdb_gone=1\tdb_unfetched=1"),
        "{ph}"
    );

    let (one, _) = ok("readdb", &crawl, &["--url", "http://a.test/ok"]);
    let v: serde_json::Value = serde_json::from_str(&one).unwrap();
    assert_eq!(v["status"], "db_fetched");
    assert_eq!(
        run("readdb", &crawl, &["--url", "http://zzz.test/"])
            .status
            .code(),
        Some(1)
    );

    let (dump, _) = ok("readdb", &crawl, &["--dump"]);
    assert_eq!(dump.lines().count(), 8);
    let (dump, _) = ok(
        "readdb",
        &crawl,
        &[
            "--dump",
            "--status",
            "db_unfetched",
            "--regex",
            "^http://[ae]\\.",
        ],
    );
    let urls: Vec<String> = dump
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["url"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let mut urls = urls;
    urls.sort();
    assert_eq!(urls, ["http://a.test/new1", "http://e.test/x"]);
    let (csv, _) = ok("readdb", &crawl, &["--dump", "--format", "csv"]);
    assert!(csv.starts_with("url,host,status,"));
    assert_eq!(csv.lines().count(), 9);
    let pq = t.path().join("dump.parquet");
    ok(
        "readdb",
        &crawl,
        &[
            "--dump",
            "--format",
            "parquet",
            "--out",
            pq.to_str().unwrap(),
        ],
    );
    assert_eq!(parquet::read_part_all::<CrawlDatum>(&pq).unwrap().len(), 8);

    let (top, _) = ok("readdb", &crawl, &["--top", "2"]);
    let scores: Vec<(String, f64)> = top
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["url"].as_str().unwrap().to_string(),
                v["score"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        scores,
        [
            ("http://b.test/flaky".to_string(), 1.5),
            ("http://a.test/gone".to_string(), 1.0)
        ]
    );
}
