//! Issue 13, "no silent loss": `updatedb` on a fetched but unparsed segment (refused,
//! or applied partially with `--no-parse` and completed exactly once after parse);
//! every stage refusing a missing or empty crawl directory the same way; messages
//! that give the right next step; exit codes of `scripts/round.sh`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{
    TestWeb, crawldb, fetch_ok, generate_segment, run, run_ok, snapshot, write_config,
};
use trawl::CrawlDatum;
use trawl::store::layout::{NO_CRAWL_DIR, NO_CRAWLDB};

const WEB: &[&str] = &["--seed", "3", "--hosts", "3", "--pages", "6"];

/// The pending-parse marker (`trawl::crawldb::state::PARSE_PENDING_KEY`).
const MARKER: &str = trawl::crawldb::state::PARSE_PENDING_KEY;

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn seg_name(seg: &str) -> String {
    Path::new(seg)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

fn meta(crawl: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(crawl.join("crawldb/current/_meta.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn names(v: &serde_json::Value, key: &str) -> Vec<String> {
    v[key]
        .as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// What two crawls of the same web must agree on for a URL, whatever the time they
/// ran at: everything but absolute times, and the times relative to the fetch.
fn comparable(d: &CrawlDatum) -> String {
    let fetched_rel = d.fetched_time.map(|f| {
        (
            d.fetch_time - f,
            d.modified_time.map(|m| m == f),
            d.fetch_interval,
        )
    });
    format!(
        "{} retries={} sig={:?} depth={} score={:.9} interval={} reason={:?} http={:?} type={:?} redirect={:?} meta={:?} fetched={:?}",
        d.status.as_str(),
        d.retries,
        d.signature,
        d.depth,
        d.score,
        d.fetch_interval,
        d.reason,
        d.http_status,
        d.content_type,
        d.redirect_target,
        d.metadata,
        fetched_rel
    )
}

fn assert_same_crawldb(a: &Path, b: &Path, when: &str) {
    let (ra, rb) = (crawldb(a), crawldb(b));
    assert_eq!(
        ra.keys().collect::<Vec<_>>(),
        rb.keys().collect::<Vec<_>>(),
        "{when}: the two crawls know different URLs"
    );
    for (url, da) in &ra {
        assert_eq!(
            comparable(da),
            comparable(&rb[url]),
            "{when}: {url} differs between fetch->parse->updatedb and updatedb --no-parse->parse->updatedb"
        );
    }
}

/// A crawl of the test web plus `dead.test`, whose fetches fail (connection refused
/// on 127.0.0.1:1), so retry counters move; the adaptive schedule makes every
/// application of a fetch visible in the interval.
fn twin_setup(root: &Path, addr: &str, name: &str) -> (PathBuf, PathBuf) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = write_config(
        &dir,
        addr,
        0.0,
        "\"dead.test\" = \"127.0.0.1:1\"\n\n[updatedb]\nschedule = \"adaptive\"\nmax_retries = 5\n",
    );
    let crawl = dir.join("crawl");
    let seeds = dir.join("seeds.txt");
    let out = Command::new(crate::common::bin("testweb"))
        .arg("seeds")
        .args(WEB)
        .arg("--out")
        .arg(&seeds)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let mut text = std::fs::read_to_string(&seeds).unwrap();
    text.push_str("http://dead.test/\n");
    std::fs::write(&seeds, text).unwrap();
    run_ok("inject", &crawl, &cfg, &[seeds.to_str().unwrap()]);
    (crawl, cfg)
}

fn generate_round(crawl: &Path, cfg: &Path, round: usize) -> String {
    if round == 1 {
        generate_segment(crawl, cfg)
    } else {
        // Every URL due again: fetched pages are re-fetched (unchanged content).
        let out = run_ok("generate", crawl, cfg, &["--add-days", "400"]);
        out.trim().lines().last().unwrap().to_string()
    }
}

#[test]
fn updatedb_refuses_an_unparsed_segment_and_no_parse_then_parse_applies_it_exactly_once() {
    let t = tempfile::tempdir().unwrap();
    let web = TestWeb::start(t.path(), WEB);
    let (a, cfg_a) = twin_setup(t.path(), &web.addr, "a");
    let (b, cfg_b) = twin_setup(t.path(), &web.addr, "b");

    for round in 1..=2 {
        // Twin a: the normal order.
        let seg_a = generate_round(&a, &cfg_a, round);
        fetch_ok(&a, &cfg_a, &seg_a);
        run_ok("parse", &a, &cfg_a, &[&seg_a]);
        run_ok("updatedb", &a, &cfg_a, &[&seg_a]);

        // Twin b: updatedb right after fetch.
        let seg = generate_round(&b, &cfg_b, round);
        let name = seg_name(&seg);
        assert_eq!(name.len(), 14);
        fetch_ok(&b, &cfg_b, &seg);
        let before = snapshot(&b.join("crawldb"));
        let out = run("updatedb", &b, &cfg_b, &[&seg]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!(
                "segment {name} is fetched but not parsed (no complete crawl_parse/): run `parse {name}` first, or pass --no-parse to apply fetch statuses only (a later `updatedb {name}` after parse merges the rest). Nothing was changed"
            )),
            "{}",
            stderr(&out)
        );
        // Without a segment argument: never picks the unparsed segment silently.
        let out = run("updatedb", &b, &cfg_b, &[]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!(
                "segment {name} (the newest fetched segment not yet applied) is fetched but not parsed"
            )),
            "{}",
            stderr(&out)
        );
        assert!(
            before == snapshot(&b.join("crawldb")),
            "a refused updatedb changed the crawldb"
        );

        // --no-parse: fetch statuses only, recorded as partially applied.
        let known_before = crawldb(&b).len();
        let out = run_ok("updatedb", &b, &cfg_b, &["--no-parse", &seg]);
        let _ = out;
        let m = meta(&b);
        assert_eq!(names(&m, "partial_segments"), std::slice::from_ref(&name));
        assert!(!names(&m, "applied_segments").contains(&name));
        let partial = crawldb(&b);
        let marked = partial
            .values()
            .filter(|d| d.metadata.contains_key(MARKER))
            .count();
        let fetched_ok = crate::common::fetch_rows(&seg)
            .values()
            .filter(|f| f.status == trawl::datum::FetchStatus::FetchSuccess)
            .count();
        assert!(fetched_ok > 0);
        assert_eq!(
            marked, fetched_ok,
            "every successful fetch waits for its parse signature"
        );
        let retries_partial: i32 = partial.values().map(|d| d.retries).sum();
        assert!(retries_partial > 0, "dead.test fetches count as retries");
        if round == 1 {
            // Outlinks are not in yet: only seeds and redirect targets.
            assert!(
                partial.len() < crawldb(&a).len(),
                "{} vs {}",
                partial.len(),
                crawldb(&a).len()
            );
            assert!(partial.len() >= known_before);
            // The maintenance tools leave a partially applied segment alone.
            for tool in ["prunesegs", "mergesegs"] {
                let out = run(tool, &b, &cfg_b, &[&seg]);
                assert_eq!(out.status.code(), Some(1), "{tool}: {}", stderr(&out));
                assert!(
                    stderr(&out).contains(&format!(
                        "segment {name} is only partially applied (fetch statuses only, by `updatedb --no-parse`) and not parsed"
                    )),
                    "{tool}: {}",
                    stderr(&out)
                );
            }
        }
        // Still unparsed: a plain updatedb refuses, --no-parse again changes nothing.
        let out = run("updatedb", &b, &cfg_b, &[&seg]);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("is partially applied (fetch statuses only"),
            "{}",
            stderr(&out)
        );
        let before = snapshot(&b.join("crawldb"));
        run_ok("updatedb", &b, &cfg_b, &["--no-parse", &seg]);
        assert!(before == snapshot(&b.join("crawldb")));

        // parse, then updatedb without argument merges the rest.
        run_ok("parse", &b, &cfg_b, &[&seg]);
        let out = run("updatedb", &b, &cfg_b, &[]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("applied [{name}] (completing [{name}])")),
            "{}",
            stderr(&out)
        );
        let m = meta(&b);
        assert!(names(&m, "partial_segments").is_empty());
        assert!(names(&m, "applied_segments").contains(&name));
        assert!(
            crawldb(&b)
                .values()
                .all(|d| !d.metadata.contains_key(MARKER)),
            "markers left after the segment was completed"
        );
        assert_same_crawldb(&a, &b, &format!("round {round}"));

        // Once applied, applying again (with or without --no-parse) changes nothing.
        let before = snapshot(&b.join("crawldb/current"));
        for args in [vec![seg.as_str()], vec!["--no-parse", seg.as_str()]] {
            let out = run("updatedb", &b, &cfg_b, &args);
            assert!(out.status.success(), "{}", stderr(&out));
            assert!(stderr(&out).contains("already applied"), "{}", stderr(&out));
        }
        assert!(before == snapshot(&b.join("crawldb/current")));
    }
    // Retries were counted once per failed fetch: two rounds, two failures.
    let dead = &crawldb(&b)["http://dead.test/"];
    assert_eq!(dead.retries, 2, "{dead:?}");
}

/// Every stage but inject (which creates the crawl directory), with the arguments
/// that would otherwise make it work.
const STAGES: &[(&str, &[&str])] = &[
    ("generate", &[]),
    ("fetch", &[]),
    ("parse", &[]),
    ("updatedb", &[]),
    ("updatedb", &["--no-parse"]),
    ("linkdb", &[]),
    ("pagerank", &[]),
    ("sitemap", &[]),
    ("dedup", &[]),
    ("readdb", &["--stats"]),
    ("readdb", &["--url", "http://site0.web.test/"]),
    ("readseg", &["--list"]),
    ("readlinkdb", &["--dump"]),
    ("warc", &[]),
    ("mergesegs", &["20260101000000"]),
    ("prunesegs", &[]),
];

#[test]
fn every_stage_refuses_a_missing_or_empty_crawl_dir_the_same_way_and_creates_nothing() {
    let t = tempfile::tempdir().unwrap();
    let cfg = t.path().join("trawl.toml");
    std::fs::write(&cfg, "[crawl]\npartitions = 2\n").unwrap();
    let missing = t.path().join("missing");
    let empty = t.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    for (stage, args) in STAGES {
        let out = run(stage, &missing, &cfg, args);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{stage} {args:?} on a missing dir: {}",
            stderr(&out)
        );
        let want = format!("Error: {}: {NO_CRAWL_DIR}\n", missing.display());
        assert!(
            stderr(&out).contains(&want),
            "{stage} {args:?} on a missing dir:\n{}\nwanted:\n{want}",
            stderr(&out)
        );
        assert!(!missing.exists(), "{stage} created {}", missing.display());

        let out = run(stage, &empty, &cfg, args);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{stage} {args:?} on an empty dir: {}",
            stderr(&out)
        );
        let want = format!("Error: {}: {NO_CRAWLDB}\n", empty.display());
        assert!(
            stderr(&out).contains(&want),
            "{stage} {args:?} on an empty dir:\n{}\nwanted:\n{want}",
            stderr(&out)
        );
        let left: Vec<_> = std::fs::read_dir(&empty).unwrap().collect();
        assert!(left.is_empty(), "{stage} created {left:?} in an empty dir");
    }
    assert!(NO_CRAWL_DIR.contains("run `inject SEEDS` first"));
    assert!(NO_CRAWLDB.contains("run `inject SEEDS` first"));
}

#[test]
fn a_pruned_segment_says_it_was_pruned() {
    let t = tempfile::tempdir().unwrap();
    let web = TestWeb::start(t.path(), &["--seed", "5", "--hosts", "2", "--pages", "4"]);
    let cfg = write_config(t.path(), &web.addr, 0.0, "");
    let crawl = t.path().join("crawl");
    let seeds = t.path().join("seeds.txt");
    std::fs::write(&seeds, "http://site0.web.test/\n").unwrap();
    run_ok("inject", &crawl, &cfg, &[seeds.to_str().unwrap()]);
    let seg = generate_segment(&crawl, &cfg);
    let name = seg_name(&seg);
    fetch_ok(&crawl, &cfg, &seg);
    for stage in ["parse", "updatedb", "linkdb"] {
        run_ok(stage, &crawl, &cfg, &[&seg]);
    }
    // Before pruning, the export works.
    let out = run("warc", &crawl, &cfg, &[&seg]);
    assert!(out.status.success(), "{}", stderr(&out));
    run_ok("prunesegs", &crawl, &cfg, &[]);
    assert!(!Path::new(&seg).join("content").exists());

    let out = run("warc", &crawl, &cfg, &[&seg]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "segment {name}: content was pruned by prunesegs; it cannot be exported"
        )),
        "{err}"
    );
    assert!(!err.contains("run `fetch`"), "{err}");

    let out = run("parse", &crawl, &cfg, &["--reparse", &seg]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "segment {name}: its content/ was pruned by prunesegs"
        )),
        "{}",
        stderr(&out)
    );
    let out = run(
        "readseg",
        &crawl,
        &cfg,
        &["--dump", &seg, "--dataset", "content"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "segment {name}: its content/ was pruned by prunesegs; it cannot be dumped"
        )),
        "{}",
        stderr(&out)
    );
}

/// Runs `scripts/round.sh` on `crawl` with `config`.
fn round_sh(crawl: &Path, config: &Path) -> Output {
    let bin_dir = Path::new(crate::common::bin("generate")).parent().unwrap();
    Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/round.sh"))
        .env("BIN", bin_dir)
        .env("TRAWL_CRAWL_DIR", crawl)
        .env("TRAWL_CONFIG", config)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap()
}

#[test]
fn round_sh_tells_nothing_due_from_errors() {
    let t = tempfile::tempdir().unwrap();
    let web = TestWeb::start(t.path(), &["--seed", "5", "--hosts", "1", "--pages", "2"]);
    let cfg = write_config(t.path(), &web.addr, 0.0, "");

    // An error (no crawl directory) stops the round with generate's code, 1.
    let missing = t.path().join("missing");
    let out = round_sh(&missing, &cfg);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains(NO_CRAWL_DIR), "{}", stderr(&out));
    assert!(
        !stderr(&out).contains("no URLs are due"),
        "{}",
        stderr(&out)
    );
    assert!(!missing.exists());

    // Nothing due: no round (the round's plan: generate's nothing-due outcome ends
    // it before any other step) and code 3.
    let crawl = t.path().join("crawl");
    let seeds = t.path().join("seeds.txt");
    std::fs::write(&seeds, "http://site0.web.test/\n").unwrap();
    run_ok("inject", &crawl, &cfg, &[seeds.to_str().unwrap()]);
    let strict = t.path().join("strict.toml");
    let text = std::fs::read_to_string(&cfg).unwrap() + "\n[generate]\nmin_score = 1000.0\n";
    std::fs::write(&strict, text).unwrap();
    let out = round_sh(&crawl, &strict);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("round: no URLs are due"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("sitemap: "), "{}", stderr(&out));

    // A round that works ends with 0.
    let out = round_sh(&crawl, &cfg);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(names(&meta(&crawl), "applied_segments").len(), 1);

    // A round lost after its fetch (generate and fetch run, nothing after): the next
    // round.sh finishes that segment first, as `crawl` does (it asks `plan next`),
    // and generates nothing new.
    let pending = generate_segment(&crawl, &cfg);
    fetch_ok(&crawl, &cfg, &pending);
    let segments = || std::fs::read_dir(crawl.join("segments")).unwrap().count();
    let before = segments();
    let out = round_sh(&crawl, &cfg);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(!err.contains("generate: "), "no generate ran:\n{err}");
    assert!(!err.contains("fetch: "), "no fetch ran:\n{err}");
    for stage in ["parse: ", "updatedb: ", "linkdb: ", "hostdb: "] {
        assert!(
            err.contains(stage),
            "{stage} ran on the pending segment:\n{err}"
        );
    }
    assert_eq!(segments(), before, "no new segment");
    let applied = names(&meta(&crawl), "applied_segments");
    assert_eq!(applied.len(), 2, "{applied:?}");
    assert!(applied.contains(&seg_name(&pending)), "{applied:?}");
}
