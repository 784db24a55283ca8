//! End to end: inject and three full rounds through the stage binaries against the
//! local test web, checked against figures derived from the web's own site map.

use crate::common;
use std::collections::BTreeSet;

use common::*;

const WEB: &[&str] = &["--seed", "7", "--hosts", "10", "--pages", "12"];
const DELAY_MS: i64 = 150;

#[test]
fn three_rounds_match_the_site_map() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let map = site_map(dir, WEB);
    let web = TestWeb::start(dir, WEB);
    let max_depth = 2;
    let config = write_config(
        dir,
        &web.addr,
        DELAY_MS as f64 / 1000.0,
        &format!("[urls]\nmax_depth = {max_depth}\n"),
    );
    let crawl = dir.join("crawl");
    inject_seeds(dir, &crawl, &config, &map.seeds);

    let expected = expected_rounds(&map, 3, max_depth);
    for (r, want) in expected.iter().enumerate() {
        assert!(
            round(&crawl, &config).is_some(),
            "round {} generated nothing",
            r + 1
        );
        let got = crawldb_statuses(&crawl);
        assert_eq!(
            counts(&got),
            counts(want),
            "URLs per status after round {}",
            r + 1
        );
        assert_eq!(&got, want, "crawldb after round {}", r + 1);
    }
    // The depth limit: every URL within depth 2 was reached and attempted, nothing deeper.
    let last = expected.last().unwrap();
    assert!(
        last.values().all(|s| s != "db_unfetched"),
        "depth-2 set fully attempted"
    );
    assert_eq!(
        crawldb_statuses(&crawl).keys().collect::<BTreeSet<_>>(),
        last.keys().collect::<BTreeSet<_>>()
    );

    // Server side: robots.txt obeyed, politeness delay held.
    let log = web.stop();
    assert!(!log.is_empty());
    assert_polite(&log, &map, DELAY_MS);

    // PageRank: sums to 1, the web's biggest hub first.
    let ranks: Vec<trawl::records::PageRankRecord> =
        trawl::store::parquet::read_dataset(&crawl.join("pagerank")).unwrap();
    let sum: f64 = ranks.iter().map(|r| r.score).sum();
    assert!((sum - 1.0).abs() < 1e-6, "PageRank sums to {sum}");
    let top = ranks
        .iter()
        .max_by(|a, b| a.score.total_cmp(&b.score))
        .unwrap();
    let hub = map
        .urls
        .iter()
        .filter(|(u, _)| last.get(*u).map(String::as_str) == Some("db_fetched"))
        .max_by_key(|(_, e)| e.in_degree)
        .unwrap();
    assert_eq!(&top.url, hub.0, "the biggest hub ranks first");

    // Dedup: of every copy pair the site map names (a page and its byte-identical copy
    // under another URL) that the crawl fetched, exactly one stays db_fetched.
    let before = crawldb_statuses(&crawl);
    run_ok("dedup", &crawl, &config, &[]);
    let after = crawldb_statuses(&crawl);
    let mut pairs = 0;
    let mut copies = BTreeSet::new();
    for (url, e) in &map.urls {
        let Some(original) = &e.duplicate_of else {
            continue;
        };
        let fetched = |u: &str| before.get(u).map(String::as_str) == Some("db_fetched");
        if !(fetched(url) && fetched(original)) {
            continue;
        }
        pairs += 1;
        copies.insert(url.clone());
        copies.insert(original.clone());
        let kept = [url, original]
            .iter()
            .filter(|u| after[u.as_str()] == "db_fetched")
            .count();
        assert_eq!(kept, 1, "one of {url} and its original {original} kept");
    }
    assert!(pairs > 0, "the crawl fetched at least one copy pair");
    for (url, status) in &after {
        if status == "db_duplicate" {
            assert!(
                copies.contains(url),
                "{url} marked duplicate but the site map has no copy of it"
            );
        }
    }
}

/// `trawl plan round`: the round `crawl` runs, as the Spark driver reads it, with the
/// crawl's partition count (the crawldb's, else the config's).
#[test]
fn the_plan_is_the_round_crawl_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let crawl = dir.join("crawl");
    let plan = |config: &std::path::Path, extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["round"];
        args.extend_from_slice(extra);
        let out = run_ok("plan", &crawl, config, &args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("plan: {e}: {out}"))
    };
    let stages = |p: &serde_json::Value| -> Vec<String> {
        p["round"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["stage"].as_str().unwrap().to_string())
            .collect()
    };
    // No crawl yet: the config's partition count.
    let config = dir.join("five.toml");
    std::fs::write(&config, "[crawl]\npartitions = 5\n").unwrap();
    let p = plan(&config, &[]);
    assert_eq!(p["plan_version"], 1);
    assert_eq!(p["partitions"], 5);
    assert_eq!(p["crawldb"], false);
    assert_eq!(p["object_store"], false);
    assert_eq!(
        stages(&p),
        [
            "generate", "fetch", "parse", "updatedb", "linkdb", "dedup", "pagerank", "sitemap",
            "hostdb", "index"
        ]
    );
    assert!(p.get("skipped").is_none(), "no step is left out: {p}");
    // generate: passes around the cut-off, then the commit; nothing due is an outcome.
    let generate = &p["round"][0];
    assert_eq!(generate["segment"], "makes");
    let runs: Vec<&str> = generate["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["run"].as_str().unwrap())
        .collect();
    assert_eq!(runs, ["tasks", "driver", "tasks", "commit"]);
    assert_eq!(
        generate["outcomes"][0],
        serde_json::json!([3, "nothing_due"])
    );
    assert_eq!(p["round"][1]["leases"], true, "fetch holds leases");
    assert_eq!(p["jobs"]["inject"]["stage"], "inject");
    // Options leave steps out or add the export.
    let lean = plan(&config, &["--no-dedup", "--no-index", "--warc"]);
    let names = stages(&lean);
    assert!(!names.contains(&"dedup".to_string()) && !names.contains(&"index".to_string()));
    assert_eq!(names.last().map(String::as_str), Some("warc"));
    // After inject: the crawldb's count, whatever the config says.
    let seeds = dir.join("seeds.txt");
    std::fs::write(&seeds, "http://site0.web.test/\n").unwrap();
    let three = dir.join("three.toml");
    std::fs::write(&three, "[crawl]\npartitions = 3\n").unwrap();
    run_ok("inject", &crawl, &three, &[seeds.to_str().unwrap()]);
    let p = plan(&config, &[]);
    assert_eq!(p["partitions"], 3);
    assert_eq!(p["crawldb"], true);
}

/// `trawl plan next`: the step `crawl` would run now, read off the crawl directory and
/// the round's progress: a pending segment's next step first (whoever made it, however
/// the driver that ran its first steps was lost), else generate, then the steps over
/// the whole crawl; after an unreachable fetch only those that record the failures.
#[test]
fn plan_next_walks_the_round_crawl_runs_and_resumes_a_lost_one() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let map = site_map(dir, WEB);
    let web = TestWeb::start(dir, WEB);
    let config = write_config(dir, &web.addr, 0.01, "");
    let crawl = dir.join("crawl");
    inject_seeds(dir, &crawl, &config, &map.seeds);
    // (stage, segment) of `plan next` with `progress`.
    let next = |progress: &[&str]| -> Option<(String, Option<String>)> {
        let mut args = vec!["next"];
        args.extend_from_slice(progress);
        let out = run_ok("plan", &crawl, &config, &args);
        let p: serde_json::Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("plan next: {e}: {out}"));
        assert_eq!(p["plan_version"], 1, "{p}");
        assert_eq!(p["partitions"], 4, "{p}");
        let n = &p["next"];
        (!n.is_null()).then(|| {
            (
                n["step"]["stage"].as_str().unwrap().to_string(),
                n["segment"].as_str().map(str::to_string),
            )
        })
    };
    let stage = |s: &str| Some((s.to_string(), None));
    assert_eq!(next(&[]), stage("generate"), "a new round generates");

    // A segment generated and fetched by hand, its driver lost: a new driver knows
    // nothing of it, and is told to parse it first.
    let out = run_ok("generate", &crawl, &config, &[]);
    let path = out.trim().lines().last().unwrap().to_string();
    let name = std::path::Path::new(&path)
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let on = |s: &str| Some((s.to_string(), Some(name.clone())));
    assert_eq!(next(&[]), on("fetch"), "the pending segment is fetched");
    run_ok("fetch", &crawl, &config, &[&name]);
    assert_eq!(next(&[]), on("parse"));
    // After an unreachable fetch the segment is still parsed, applied and inverted.
    assert_eq!(next(&["--unreachable", "--segment", &name]), on("parse"));
    for s in ["parse", "updatedb", "linkdb"] {
        assert_eq!(next(&[]), on(s));
        run_ok(s, &crawl, &config, &[&name]);
    }

    // The steps over the whole crawl, in the round's order, each once.
    let mut progress = vec!["--segment".to_string(), name.clone()];
    for s in ["dedup", "pagerank", "sitemap", "hostdb", "index"] {
        let args: Vec<&str> = progress.iter().map(String::as_str).collect();
        assert_eq!(next(&args), stage(s), "after {progress:?}");
        progress.extend(["--done".to_string(), s.to_string()]);
    }
    let args: Vec<&str> = progress.iter().map(String::as_str).collect();
    assert_eq!(next(&args), None, "the round is over");
    // --warc closes the round with its segment's export; --no-index leaves the index out.
    let mut warc = args.clone();
    warc.push("--warc");
    assert_eq!(next(&warc), on("warc"));
    warc.extend(["--done", "warc"]);
    assert_eq!(next(&warc), None);
    let lean = [
        "--segment",
        &name,
        "--no-dedup",
        "--no-index",
        "--done",
        "pagerank",
    ];
    assert_eq!(next(&lean), stage("sitemap"));
    // No server reached: only the steps that record the failures, then the end.
    let down = ["--segment", &name, "--unreachable"];
    assert_eq!(next(&down), stage("hostdb"));
    assert_eq!(next(&[&down[..], &["--done", "hostdb"]].concat()), None);
    // A driver that lost its progress after the segment steps starts a new round.
    assert_eq!(next(&[]), stage("generate"));
    web.stop();
}
