//! `mergesegs` and `prunesegs` on real multi-round crawls of the test web (every
//! URL is due again a second after its fetch, so later rounds re-fetch pages):
//! the merged segment is the union of its inputs with the newest fetch winning,
//! nothing is applied twice, pruning frees bytes without changing readdb, linkdb
//! or pagerank, a SIGKILL at any point leaves a usable crawl that a rerun
//! finishes, and bad inputs are refused without changing anything.

use crate::common;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde::Serialize;
use trawl::CrawlDatum;
use trawl::records::{
    ContentRecord, CrawlParseRecord, FetchRecord, InlinkRecord, PageRankRecord, ParseDataRecord,
    ParseTextRecord,
};
use trawl::store::parquet::{Record, part_files, read_dataset, read_part_all};
use trawl::store::partition::Partitioner;
use trawl::urls::host_of;

const WEB: &[&str] = &["--seed", "11", "--hosts", "4", "--pages", "12"];
/// Every URL is due again one second after its fetch, so each round re-fetches.
const REFETCH: &str = "[inject]\nfetch_interval = 1\n\n[updatedb]\ndefault_interval = 1\n";
const PARTS: usize = 4;

struct Crawl {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    crawl: PathBuf,
    config: PathBuf,
    segments: Vec<PathBuf>,
    _web: TestWeb,
}

/// A crawl of `rounds` full rounds (generate, fetch, parse, updatedb, linkdb, pagerank).
fn crawl(rounds: usize, extra: &str) -> Crawl {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let map = site_map(&dir, WEB);
    let web = TestWeb::start(&dir, WEB);
    let config = write_config(&dir, &web.addr, 0.01, &format!("{REFETCH}\n{extra}"));
    let crawl = dir.join("crawl");
    inject_seeds(&dir, &crawl, &config, &map.seeds);
    let mut segments = Vec::new();
    for r in 0..rounds {
        if r > 0 {
            std::thread::sleep(Duration::from_millis(1100));
        }
        segments.push(PathBuf::from(round(&crawl, &config).expect("a round")));
    }
    Crawl {
        _tmp: tmp,
        dir,
        crawl,
        config,
        segments,
        _web: web,
    }
}

fn name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap()
}

/// Rows of a dataset as sorted JSON strings (order-independent comparison).
fn rows_json<R: Record>(ds: &Path) -> Vec<String> {
    let mut v: Vec<String> = read_dataset::<R>(ds).unwrap().iter().map(json).collect();
    v.sort();
    v
}

/// What the crawl's databases hold: crawldb rows, linkdb rows, pagerank rows.
#[derive(Debug, PartialEq)]
struct Dbs {
    crawldb: Vec<String>,
    linkdb: Vec<String>,
    pagerank: BTreeMap<String, (i64, i64, String)>,
}

fn dbs(crawl: &Path) -> Dbs {
    let pr: Vec<PageRankRecord> = read_dataset(&crawl.join("pagerank")).unwrap();
    Dbs {
        crawldb: rows_json::<CrawlDatum>(&crawl.join("crawldb/current")),
        linkdb: rows_json::<InlinkRecord>(&crawl.join("linkdb/current")),
        // Scores compared to 12 significant digits (summation order may differ).
        pagerank: pr
            .into_iter()
            .map(|r| {
                (
                    r.url,
                    (r.in_degree, r.out_degree, format!("{:.12e}", r.score)),
                )
            })
            .collect(),
    }
}

/// Every file under `dir` with its size (to check a refused command changed nothing).
fn tree(dir: &Path) -> BTreeMap<PathBuf, u64> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if !p.ends_with(".lock") {
                out.insert(
                    p.strip_prefix(dir).unwrap().to_path_buf(),
                    e.metadata().unwrap().len(),
                );
            }
        }
    }
    out
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// The winning fetch of every URL over `segs` (oldest first): url -> segment index.
fn winners(segs: &[PathBuf]) -> (BTreeMap<String, usize>, usize) {
    let mut best: BTreeMap<String, (i64, usize)> = BTreeMap::new();
    let mut rows = 0;
    for (k, s) in segs.iter().enumerate() {
        for f in read_dataset::<FetchRecord>(&s.join("crawl_fetch")).unwrap() {
            rows += 1;
            let e = best.entry(f.url).or_insert((f.fetch_time, k));
            if (f.fetch_time, k) > *e {
                *e = (f.fetch_time, k);
            }
        }
    }
    (best.into_iter().map(|(u, (_, k))| (u, k)).collect(), rows)
}

/// The rows of `ds` in `segs` that newest-wins keeps, as sorted JSON strings;
/// `key` gives the URL whose winner decides.
fn expected<R: Record>(
    segs: &[PathBuf],
    win: &BTreeMap<String, usize>,
    ds: &str,
    key: impl Fn(&R) -> String,
) -> Vec<String> {
    let mut out = Vec::new();
    for (k, s) in segs.iter().enumerate() {
        for r in read_dataset::<R>(&s.join(ds)).unwrap() {
            if win.get(&key(&r)) == Some(&k) {
                out.push(json(&r));
            }
        }
    }
    out.sort();
    out
}

fn cp_key(r: &CrawlParseRecord) -> String {
    match (&r.kind[..], &r.from_url) {
        ("link", Some(f)) => f.clone(),
        _ => r.url.clone(),
    }
}

/// Asserts that each part of `ds` in `seg` holds only its partition's hosts, sorted by URL.
fn assert_partitioned<R: Record>(seg: &Path, ds: &str, url: impl Fn(&R) -> &str, sorted: bool) {
    let parts = part_files(&seg.join(ds)).unwrap();
    assert_eq!(parts.len(), PARTS, "{ds}: one part per crawldb partition");
    for (i, p) in parts.iter().enumerate() {
        let rows: Vec<R> = read_part_all(p).unwrap();
        for r in &rows {
            assert_eq!(
                Partitioner::by_host(PARTS).of_host(&host_of(url(r))),
                i,
                "{ds} part {i}"
            );
        }
        if sorted {
            let urls: Vec<&str> = rows.iter().map(&url).collect();
            assert!(urls.is_sorted(), "{ds} part {i} is sorted by url");
        }
    }
}

/// Checks the merged segment `m` against the union of `segs` with newest-wins.
fn assert_merge_of(m: &Path, segs: &[PathBuf]) {
    let (win, rows) = winners(segs);
    assert!(
        rows > win.len(),
        "the crawl re-fetched URLs, so some fetches are superseded ({rows} rows, {} urls)",
        win.len()
    );
    let fetch: Vec<FetchRecord> = read_dataset(&m.join("crawl_fetch")).unwrap();
    assert_eq!(fetch.len(), win.len(), "one crawl_fetch row per URL");
    assert_eq!(
        rows_json::<FetchRecord>(&m.join("crawl_fetch")),
        expected::<FetchRecord>(segs, &win, "crawl_fetch", |r| r.url.clone())
    );
    assert_eq!(
        rows_json::<CrawlDatum>(&m.join("crawl_generate")),
        expected::<CrawlDatum>(segs, &win, "crawl_generate", |r| r.url.clone())
    );
    assert_eq!(
        rows_json::<ContentRecord>(&m.join("content")),
        expected::<ContentRecord>(segs, &win, "content", |r| r.url.clone())
    );
    assert_eq!(
        rows_json::<ParseTextRecord>(&m.join("parse_text")),
        expected::<ParseTextRecord>(segs, &win, "parse_text", |r| r.url.clone())
    );
    assert_eq!(
        rows_json::<ParseDataRecord>(&m.join("parse_data")),
        expected::<ParseDataRecord>(segs, &win, "parse_data", |r| r.url.clone())
    );
    assert_eq!(
        rows_json::<CrawlParseRecord>(&m.join("crawl_parse")),
        expected::<CrawlParseRecord>(segs, &win, "crawl_parse", cp_key)
    );
    assert_partitioned::<FetchRecord>(m, "crawl_fetch", |r| &r.url, true);
    assert_partitioned::<CrawlDatum>(m, "crawl_generate", |r| &r.url, true);
    assert_partitioned::<ParseDataRecord>(m, "parse_data", |r| &r.url, true);
    assert_partitioned::<CrawlParseRecord>(m, "crawl_parse", |r| &r.url, true);
    assert_partitioned::<ContentRecord>(m, "content", |r| &r.url, false);
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(m.join("_meta.json")).unwrap()).unwrap();
    assert_eq!(meta["urls"], win.len() as u64);
    assert_eq!(meta["partitions"], PARTS as u64);
}

fn applied(crawl: &Path) -> (Vec<String>, Vec<String>) {
    let c: serde_json::Value =
        serde_json::from_slice(&std::fs::read(crawl.join("crawldb/current/_meta.json")).unwrap())
            .unwrap();
    let l: serde_json::Value =
        serde_json::from_slice(&std::fs::read(crawl.join("linkdb/current/_meta.json")).unwrap())
            .unwrap();
    let list = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect()
    };
    (list(&c["applied_segments"]), list(&l["inverted_segments"]))
}

fn segment_names(crawl: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(crawl.join("segments"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn merged_segment_is_the_union_with_newest_wins_and_is_never_applied_twice() {
    let c = crawl(3, "");
    let before = dbs(&c.crawl);
    let args: Vec<&str> = c.segments.iter().map(|s| s.to_str().unwrap()).collect();
    let out = run_ok("mergesegs", &c.crawl, &c.config, &args);
    let merged = PathBuf::from(out.trim());
    assert_eq!(merged.parent(), Some(c.crawl.join("segments").as_path()));
    assert_merge_of(&merged, &c.segments);
    let m = name(&merged);
    assert!(
        c.segments.iter().all(|s| name(s) < m),
        "the merged segment sorts last"
    );

    // Provenance and applied state.
    let prov: serde_json::Value =
        serde_json::from_slice(&std::fs::read(merged.join("_merged.json")).unwrap()).unwrap();
    let inputs: Vec<String> = c.segments.iter().map(|s| name(s)).collect();
    assert_eq!(prov["merged_from"], serde_json::json!(inputs));
    let (crawldb_applied, linkdb_inverted) = applied(&c.crawl);
    assert!(crawldb_applied.contains(&m) && linkdb_inverted.contains(&m));
    let list = run_ok("readseg", &c.crawl, &c.config, &["--list", "--json"]);
    let last: serde_json::Value = serde_json::from_str(list.lines().last().unwrap()).unwrap();
    assert_eq!(last["name"], m);
    assert_eq!(last["merged_from"], serde_json::json!(inputs));

    // updatedb, linkdb and pagerank after the merge: nothing applied twice.
    let out = run("updatedb", &c.crawl, &c.config, &[]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains("applied []"),
        "{}",
        stderr_of(&out)
    );
    let out = run("updatedb", &c.crawl, &c.config, &[merged.to_str().unwrap()]);
    assert!(
        stderr_of(&out).contains("already applied"),
        "{}",
        stderr_of(&out)
    );
    run_ok("linkdb", &c.crawl, &c.config, &[]);
    run_ok("pagerank", &c.crawl, &c.config, &[]);
    assert_eq!(
        dbs(&c.crawl),
        before,
        "crawldb, linkdb and pagerank unchanged"
    );

    // Rerunning the same merge writes nothing.
    let out = run("mergesegs", &c.crawl, &c.config, &args);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(String::from_utf8_lossy(&out.stdout).trim().is_empty());
    assert!(
        stderr_of(&out).contains("already merged into"),
        "{}",
        stderr_of(&out)
    );
    assert_eq!(segment_names(&c.crawl).len(), 4);
    // Rerunning with --delete-inputs finds the inputs already merged: deletes them only.
    let out = run_ok(
        "mergesegs",
        &c.crawl,
        &c.config,
        &[&args[..], &["--delete-inputs"]].concat(),
    );
    assert!(out.trim().is_empty(), "no new segment: {out}");
    assert_eq!(segment_names(&c.crawl), std::slice::from_ref(&m));
    // The graph from the merged segment alone is the graph of the three.
    run_ok("pagerank", &c.crawl, &c.config, &[]);
    run_ok("linkdb", &c.crawl, &c.config, &["--all"]);
    assert_eq!(
        dbs(&c.crawl),
        before,
        "same databases from the merged segment alone"
    );
    // A removed input is now an error-free no-op, an unknown one an error.
    let out = run_ok("mergesegs", &c.crawl, &c.config, &[args[0]]);
    assert!(out.trim().is_empty());

    // The crawl goes on: a new round applies only the new segment.
    std::thread::sleep(Duration::from_millis(1100));
    let s4 = round(&c.crawl, &c.config).expect("round 4");
    let (crawldb_applied, _) = applied(&c.crawl);
    assert_eq!(crawldb_applied.last(), Some(&name(Path::new(&s4))));
    assert_eq!(crawldb_applied.iter().filter(|a| **a == m).count(), 1);

    // Slices: at most N URLs each, together the same as one merge.
    let all = [merged.clone(), PathBuf::from(&s4)];
    let (win, _) = winners(&all);
    let n = win.len().div_ceil(3);
    let out = run_ok(
        "mergesegs",
        &c.crawl,
        &c.config,
        &[
            all[0].to_str().unwrap(),
            all[1].to_str().unwrap(),
            "--slice",
            &n.to_string(),
        ],
    );
    let slices: Vec<PathBuf> = out.lines().map(PathBuf::from).collect();
    assert_eq!(slices.len(), 3, "{out}");
    let mut urls = BTreeSet::new();
    for s in &slices {
        let f: Vec<FetchRecord> = read_dataset(&s.join("crawl_fetch")).unwrap();
        assert!(f.len() <= n && !f.is_empty());
        urls.extend(f.into_iter().map(|r| r.url));
    }
    assert_eq!(urls, win.keys().cloned().collect::<BTreeSet<_>>());
    let out = run("updatedb", &c.crawl, &c.config, &[]);
    assert!(
        stderr_of(&out).contains("applied []"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn filter_and_normalize_on_the_way() {
    let mut c = crawl(2, "");
    // Exclude one host from now on.
    let rules = c.dir.join("filter.txt");
    std::fs::write(&rules, "-^http://site1\\.web\\.test/\n").unwrap();
    let text = std::fs::read_to_string(&c.config).unwrap();
    let filtered = c.dir.join("filtered.toml");
    std::fs::write(
        &filtered,
        format!("{text}\n[urls]\nfilter_file = \"{}\"\n", rules.display()),
    )
    .unwrap();
    c.config = filtered;
    let args: Vec<&str> = c.segments.iter().map(|s| s.to_str().unwrap()).collect();
    let out = run_ok(
        "mergesegs",
        &c.crawl,
        &c.config,
        &[&args[..], &["--filter", "--normalize"]].concat(),
    );
    let merged = PathBuf::from(out.trim());
    let (win, _) = winners(&c.segments);
    let kept: BTreeSet<String> = win
        .keys()
        .filter(|u| !u.starts_with("http://site1.web.test/"))
        .cloned()
        .collect();
    assert!(kept.len() < win.len(), "the crawl reached site1");
    for ds in ["crawl_fetch", "crawl_generate"] {
        let urls: BTreeSet<String> = if ds == "crawl_fetch" {
            read_dataset::<FetchRecord>(&merged.join(ds))
                .unwrap()
                .into_iter()
                .map(|r| r.url)
                .collect()
        } else {
            read_dataset::<CrawlDatum>(&merged.join(ds))
                .unwrap()
                .into_iter()
                .map(|r| r.url)
                .collect()
        };
        assert_eq!(urls, kept, "{ds}");
    }
    for r in read_dataset::<CrawlParseRecord>(&merged.join("crawl_parse")).unwrap() {
        assert!(!r.url.starts_with("http://site1.web.test/"), "{r:?}");
        assert!(
            !r.from_url
                .unwrap_or_default()
                .starts_with("http://site1.web.test/")
        );
    }
    assert_partitioned::<FetchRecord>(&merged, "crawl_fetch", |r| &r.url, true);
    let prov: serde_json::Value =
        serde_json::from_slice(&std::fs::read(merged.join("_merged.json")).unwrap()).unwrap();
    assert_eq!(prov["filtered"], true);
    assert_eq!(prov["normalized"], true);
}

/// Starts `stage` paused at `point`, waits until it reports the pause, SIGKILLs it.
fn kill_at(stage: &str, point: &str, c: &Crawl, args: &[&str]) {
    let log = c.dir.join(format!("kill-{}.log", point.replace(':', "-")));
    let mut child = Command::new(bin(stage))
        .arg("--crawl-dir")
        .arg(&c.crawl)
        .arg("--config")
        .arg(&c.config)
        .args(args)
        .env("RUST_LOG", "warn")
        .env(trawl::store::versioned::PAUSE_AT_ENV, format!("{point}:60"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let started = Instant::now();
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("pausing") {
            break;
        }
        if let Some(st) = child.try_wait().unwrap() {
            panic!("{stage} ended ({st}) before reaching {point}: {text}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{stage} never reached {point}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
}

#[test]
fn killed_at_any_point_the_crawl_stays_usable_and_a_rerun_finishes() {
    let base = crawl(3, "");
    let before = dbs(&base.crawl);
    let inputs: Vec<String> = base.segments.iter().map(|s| name(s)).collect();
    let pristine = base.dir.join("pristine");
    copy_dir(&base.crawl, &pristine);
    for point in [
        "mergesegs:staged",
        "mergesegs:recorded",
        "mergesegs:installed",
    ] {
        std::fs::remove_dir_all(&base.crawl).unwrap();
        copy_dir(&pristine, &base.crawl);
        let mut args: Vec<&str> = inputs.iter().map(|s| s.as_str()).collect();
        args.push("--delete-inputs");
        kill_at("mergesegs", point, &base, &args);

        // Usable: readseg lists, updatedb applies nothing, the databases are intact.
        run_ok("readseg", &base.crawl, &base.config, &["--list"]);
        let out = run("updatedb", &base.crawl, &base.config, &[]);
        assert!(out.status.success(), "{point}: {}", stderr_of(&out));
        assert!(
            stderr_of(&out).contains("applied []"),
            "{point}: {}",
            stderr_of(&out)
        );
        run_ok("linkdb", &base.crawl, &base.config, &[]);
        run_ok("pagerank", &base.crawl, &base.config, &[]);
        assert_eq!(dbs(&base.crawl), before, "{point}");

        // The same command again finishes the job.
        run_ok("mergesegs", &base.crawl, &base.config, &args);
        let names = segment_names(&base.crawl);
        assert_eq!(
            names.len(),
            1,
            "{point}: only the merged segment is left: {names:?}"
        );
        let merged = base.crawl.join("segments").join(&names[0]);
        let prov: serde_json::Value =
            serde_json::from_slice(&std::fs::read(merged.join("_merged.json")).unwrap()).unwrap();
        assert_eq!(prov["merged_from"], serde_json::json!(inputs), "{point}");
        let fetch: Vec<FetchRecord> = read_dataset(&merged.join("crawl_fetch")).unwrap();
        let (win, _) = winners(&pristine_segments(&pristine, &inputs));
        assert_eq!(fetch.len(), win.len(), "{point}");
        let out = run("updatedb", &base.crawl, &base.config, &[]);
        assert!(
            stderr_of(&out).contains("applied []"),
            "{point}: {}",
            stderr_of(&out)
        );
        run_ok("pagerank", &base.crawl, &base.config, &[]);
        assert_eq!(dbs(&base.crawl), before, "{point}: after the rerun");
    }

    // prunesegs killed between two deletions: usable, and a rerun finishes.
    std::fs::remove_dir_all(&base.crawl).unwrap();
    copy_dir(&pristine, &base.crawl);
    kill_at("prunesegs", "prunesegs:deleted-one", &base, &[]);
    run_ok("readseg", &base.crawl, &base.config, &["--list"]);
    run_ok("prunesegs", &base.crawl, &base.config, &[]);
    for s in &inputs {
        let seg = base.crawl.join("segments").join(s);
        assert!(!seg.join("content").exists() && !seg.join("parse_text").exists());
        assert!(seg.join("parse_data/_SUCCESS").is_file());
    }
    assert!(
        !tree(&base.crawl)
            .keys()
            .any(|p| p.to_string_lossy().contains(".tmp-")),
        "no leftovers"
    );
    run_ok("pagerank", &base.crawl, &base.config, &[]);
    assert_eq!(dbs(&base.crawl), before, "after pruning");
}

fn pristine_segments(pristine: &Path, names: &[String]) -> Vec<PathBuf> {
    names
        .iter()
        .map(|n| pristine.join("segments").join(n))
        .collect()
}

#[test]
fn pruning_frees_bytes_and_keeps_readdb_linkdb_and_pagerank() {
    let c = crawl(3, "");
    // A fourth segment fetched and parsed but not applied: never pruned.
    std::thread::sleep(Duration::from_millis(1100));
    let pending = PathBuf::from(
        run_ok("generate", &c.crawl, &c.config, &[])
            .trim()
            .lines()
            .last()
            .unwrap(),
    );
    run_ok("fetch", &c.crawl, &c.config, &[pending.to_str().unwrap()]);
    run_ok("parse", &c.crawl, &c.config, &[pending.to_str().unwrap()]);
    // Its links reach the linkdb and the graph, its fetches not the crawldb.
    run_ok("linkdb", &c.crawl, &c.config, &[]);
    run_ok("pagerank", &c.crawl, &c.config, &[]);
    let before = dbs(&c.crawl);
    let stats_before = run_ok("readdb", &c.crawl, &c.config, &["--stats"]);
    let files_before = tree(&c.crawl);

    // Dry run: lists what would go, changes nothing.
    let dry = run_ok("prunesegs", &c.crawl, &c.config, &["--dry-run", "--json"]);
    assert_eq!(tree(&c.crawl), files_before, "a dry run changes nothing");
    let entries: Vec<serde_json::Value> = dry
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(entries.len(), 4);
    let would: u64 = entries.iter().map(|e| e["bytes"].as_u64().unwrap()).sum();
    let heavy: u64 = files_before
        .iter()
        .filter(|(p, _)| {
            let s = p.to_string_lossy();
            c.segments
                .iter()
                .any(|seg| s.starts_with(&format!("segments/{}/", name(seg))))
                && (s.contains("/content/") || s.contains("/parse_text/"))
        })
        .map(|(_, n)| n)
        .sum();
    assert_eq!(
        would, heavy,
        "bytes = the applied segments' content and parse_text"
    );
    let last = &entries[3];
    assert_eq!(last["segment"], name(&pending));
    assert_eq!(last["action"], "keep");
    assert!(
        last["reason"].as_str().unwrap().contains("updatedb"),
        "{last}"
    );

    // Age and count limits.
    let none = run_ok(
        "prunesegs",
        &c.crawl,
        &c.config,
        &["--dry-run", "--json", "--older-than", "1"],
    );
    assert!(none.lines().all(|l| l.contains("\"keep\"")), "{none}");
    let keep2 = run_ok(
        "prunesegs",
        &c.crawl,
        &c.config,
        &["--dry-run", "--json", "--keep-newest", "2"],
    );
    let acts: Vec<bool> = keep2
        .lines()
        .map(|l| l.contains("delete_datasets"))
        .collect();
    assert_eq!(acts, [true, true, false, false], "{keep2}");

    // Refusals change nothing: a named unapplied segment, --whole with source = crawl.
    let out = run(
        "prunesegs",
        &c.crawl,
        &c.config,
        &[pending.to_str().unwrap()],
    );
    assert!(!out.status.success());
    assert!(
        stderr_of(&out).contains(&name(&pending)) && stderr_of(&out).contains("updatedb"),
        "{}",
        stderr_of(&out)
    );
    let out = run("prunesegs", &c.crawl, &c.config, &["--whole"]);
    assert!(!out.status.success());
    assert!(
        stderr_of(&out).contains("source = \"linkdb\""),
        "{}",
        stderr_of(&out)
    );
    assert_eq!(tree(&c.crawl), files_before);

    // Prune: the bytes go, the results stay.
    let out = run("prunesegs", &c.crawl, &c.config, &[]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(
        stderr_of(&out).contains(&format!("{would} bytes freed")),
        "{}",
        stderr_of(&out)
    );
    let files_after = tree(&c.crawl);
    let total = |t: &BTreeMap<PathBuf, u64>| t.values().sum::<u64>();
    assert_eq!(total(&files_before) - total(&files_after), would);
    assert!(
        pending.join("content/_SUCCESS").is_file(),
        "the pending segment keeps its content"
    );
    run_ok("pagerank", &c.crawl, &c.config, &[]);
    run_ok("linkdb", &c.crawl, &c.config, &["--all"]);
    assert_eq!(
        run_ok("readdb", &c.crawl, &c.config, &["--stats"]),
        stats_before
    );
    assert_eq!(
        dbs(&c.crawl),
        before,
        "crawldb, linkdb and pagerank unchanged by pruning"
    );
    // The pending segment is still applied normally, the pruned ones not again.
    run_ok("updatedb", &c.crawl, &c.config, &[]);
    let (applied_now, _) = applied(&c.crawl);
    assert_eq!(applied_now.last(), Some(&name(&pending)));
    assert_ne!(
        dbs(&c.crawl).crawldb,
        before.crawldb,
        "the pending fetches were applied"
    );

    // --whole with source = linkdb removes whole applied segments.
    let text = std::fs::read_to_string(&c.config).unwrap();
    let lconf = c.dir.join("linkdb-source.toml");
    std::fs::write(&lconf, format!("{text}\n[pagerank]\nsource = \"linkdb\"\n")).unwrap();
    run_ok("linkdb", &c.crawl, &lconf, &[]);
    let out = run_ok(
        "prunesegs",
        &c.crawl,
        &lconf,
        &["--whole", "--keep-newest", "1"],
    );
    assert!(out.contains("delete_segment"), "{out}");
    assert_eq!(segment_names(&c.crawl), [name(&pending)]);
}

#[test]
fn bad_inputs_are_refused_and_change_nothing() {
    let c = crawl(1, "");
    // A segment generated but not fetched yet.
    std::thread::sleep(Duration::from_millis(1100));
    let unfetched = run_ok("generate", &c.crawl, &c.config, &[])
        .trim()
        .lines()
        .last()
        .unwrap()
        .to_string();
    let files = tree(&c.crawl);
    let s1 = c.segments[0].to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["29990101000000"], "not a segment"),
        (vec![s1, "29990101000000"], "29990101000000"),
        (vec![s1, &unfetched], "never fetched"),
        (vec![&unfetched], "run `fetch"),
        (vec![s1, "--slice", "0"], "--slice"),
    ];
    for (args, msg) in cases {
        let out = run("mergesegs", &c.crawl, &c.config, &args);
        assert!(!out.status.success(), "mergesegs {args:?} must fail");
        assert!(
            stderr_of(&out).contains(msg),
            "mergesegs {args:?}: {}",
            stderr_of(&out)
        );
        assert_eq!(
            tree(&c.crawl),
            files,
            "mergesegs {args:?} changed the crawl dir"
        );
    }
    for args in [vec!["29990101000000"], vec![unfetched.as_str()]] {
        let out = run("prunesegs", &c.crawl, &c.config, &args);
        assert!(!out.status.success(), "prunesegs {args:?} must fail");
        assert_eq!(tree(&c.crawl), files);
    }
    // Fetched and parsed but not applied: refused, naming the stage to run.
    run_ok("fetch", &c.crawl, &c.config, &[&unfetched]);
    run_ok("parse", &c.crawl, &c.config, &[&unfetched]);
    let files = tree(&c.crawl);
    let out = run("mergesegs", &c.crawl, &c.config, &[s1, &unfetched]);
    assert!(!out.status.success());
    assert!(
        stderr_of(&out).contains("run `updatedb"),
        "{}",
        stderr_of(&out)
    );
    assert_eq!(tree(&c.crawl), files);
    // Applied to the crawldb but not inverted into the linkdb.
    run_ok("updatedb", &c.crawl, &c.config, &[&unfetched]);
    let files = tree(&c.crawl);
    let out = run("mergesegs", &c.crawl, &c.config, &[s1, &unfetched]);
    assert!(!out.status.success());
    assert!(
        stderr_of(&out).contains("run `linkdb"),
        "{}",
        stderr_of(&out)
    );
    assert_eq!(tree(&c.crawl), files);
    let out = run("mergesegs", &c.crawl.join("nowhere"), &c.config, &[s1]);
    assert!(!out.status.success());
    assert!(stderr_of(&out).contains("nowhere"), "{}", stderr_of(&out));
}

/// The README's "Looking into a crawl" commands, run as written (with `B` pointing
/// at the test's binaries) in a directory holding a crawl of the demo's test web.
#[test]
fn readme_looking_into_a_crawl_commands_work() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let section = &readme[readme
        .find("## Looking into a crawl")
        .expect("README section")..];
    let start = section.find("```sh\n").unwrap() + 6;
    let script = &section[start..start + section[start..].find("```").unwrap()];
    assert!(script.contains("B=target/release\n"), "{script}");
    let bindir = Path::new(bin("mergesegs")).parent().unwrap();
    let script = script.replace("B=target/release\n", &format!("B={}\n", bindir.display()));

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let map = site_map(dir, DEMO_WEB);
    let web = TestWeb::start(dir, DEMO_WEB);
    let config = write_config(dir, &web.addr, 0.01, "");
    let crawl = dir.join("crawl");
    inject_seeds(dir, &crawl, &config, &map.seeds);
    for _ in 0..3 {
        round(&crawl, &config).expect("a round");
    }
    drop(web);
    let before = dbs(&crawl);

    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &script])
        .current_dir(dir)
        .env_remove("TRAWL_CONFIG")
        .env_remove("TRAWL_CRAWL_DIR")
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "README commands failed:\n{stdout}\n{stderr}"
    );
    for what in [
        "fetch_success=",
        "\"dataset\":\"parse_data\"",
        "\"from_url\":",
        "\"url\": \"http://site0.web.test/\"",
        "delete_datasets",
    ] {
        assert!(stdout.contains(what), "no {what:?} in:\n{stdout}");
    }
    assert!(stderr.contains("3 inputs deleted"), "{stderr}");
    assert!(dir.join("titles.jsonl").metadata().unwrap().len() > 0);
    assert_eq!(segment_names(&crawl).len(), 1);
    assert_eq!(dbs(&crawl), before, "the databases are untouched");
}
