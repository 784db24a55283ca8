//! The index as shards (one per partition) built by partition tasks (docs/search.md,
//! "Shards"): uneven task sets with a retried attempt give the one-process index
//! (its documents, and the same top 10 for the same queries), over an existing
//! version too; tasks install nothing; a commit over an index that changed since its
//! tasks ran is refused; and the shards search as one index: the same crawl
//! repartitioned into one partition gives the same hits with the same scores.
//! HostRank is on: a task reads its partitions' hosts alone.

use crate::common;
use std::collections::BTreeMap;
use std::path::Path;

use common::*;
use serde_json::Value;

const WEB: &[&str] = &["--seed", "11", "--hosts", "5", "--pages", "12"];

/// The index's documents by URL (`index --to jsonl -`), their `segment` kept.
fn documents(crawl: &Path, config: &Path) -> BTreeMap<String, Value> {
    let out = run_ok("index", crawl, config, &["--to", "jsonl", "-"]);
    out.lines()
        .skip(1)
        .step_by(2)
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["url"].as_str().unwrap().to_string(), v)
        })
        .collect()
}

/// index's summary line without its stage name and time.
fn summary(out: &str) -> String {
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("index: "))
        .unwrap_or_else(|| panic!("no index summary in {out}"));
    line[..line.rfind(" in ").unwrap_or(line.len())].to_string()
}

/// The top hits of `query` as (URL, score to 4 decimals), cut after the 10th score
/// (every hit scoring as the 10th kept, so that the order of equal scores, which
/// depends on where documents lie, does not matter), sorted by score, then URL.
fn top10(crawl: &Path, config: &Path, query: &str) -> Vec<(String, String)> {
    let v: Value = serde_json::from_str(&run_ok(
        "search",
        crawl,
        config,
        &["--json", "--top", "30", query],
    ))
    .unwrap();
    let mut hits: Vec<(String, f64)> = v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["url"].as_str().unwrap().to_string(),
                h["score"].as_f64().unwrap(),
            )
        })
        .collect();
    if let Some(tenth) = hits.get(9).map(|h| h.1) {
        hits.retain(|h| h.1 >= tenth - 1e-4);
    }
    let mut out: Vec<(String, String)> = hits
        .into_iter()
        .map(|(u, s)| (u, format!("{s:.4}")))
        .collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out
}

/// Queries over the crawl: each document's title, and the first word of some.
fn queries(docs: &BTreeMap<String, Value>) -> Vec<String> {
    let mut out: Vec<String> = docs
        .values()
        .filter_map(|d| d["title"].as_str().map(str::to_string))
        .collect();
    let words: Vec<String> = out
        .iter()
        .step_by(5)
        .filter_map(|t| t.split_whitespace().next().map(str::to_string))
        .collect();
    out.extend(words);
    out.sort();
    out.dedup();
    out
}

fn assert_same_hits(a: &Path, b: &Path, config: &Path, queries: &[String], what: &str) {
    let mut compared = 0;
    for q in queries {
        let (x, y) = (top10(a, config, q), top10(b, config, q));
        assert_eq!(x, y, "{what}: query {q:?}");
        compared += usize::from(!x.is_empty());
    }
    assert!(
        compared * 10 >= queries.len() * 9,
        "{what}: {compared} queries with hits"
    );
}

#[test]
fn index_as_tasks_equals_one_process_and_its_shards_search_as_one_index() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let map = site_map(dir, WEB);
    let web = TestWeb::start(dir, WEB);
    // With HostRank, which a task reads for its partitions' hosts alone.
    let config = write_config(dir, &web.addr, 0.0, "[pagerank]\nhostrank = true\n");
    let a = dir.join("a");
    inject_seeds(dir, &a, &config, &map.seeds);
    round(&a, &config).expect("round 1");
    round(&a, &config).expect("round 2");
    run_ok("index", &a, &config, &[]);
    round(&a, &config).expect("round 3");
    let b = dir.join("b");
    copy_tree(&a, &b);

    // One process: the third round's segment into the existing 4 shards.
    let one = String::from_utf8_lossy(&run("index", &a, &config, &[]).stderr).into_owned();
    assert!(
        summary(&one).starts_with("1 segments, ") && summary(&one).ends_with("(4 shards)"),
        "{one}"
    );

    // Uneven sets, partition 3 twice (a retry after a zombie finished): the commit
    // takes one attempt of it.
    let before = documents(&b, &config);
    for (set, attempt) in [
        ("0-1", "i-01-0"),
        ("2", "i-2-0"),
        ("3", "i-3-1"),
        ("3", "i-3-0"),
    ] {
        output_ok(task_command("index", &b, &config, &[], "x1", set, attempt));
    }
    assert_eq!(before, documents(&b, &config), "tasks install nothing");
    let committed = commit_ok("index", &b, &config, &[], "x1");
    assert_eq!(summary(&committed), summary(&one));
    assert!(!b.join("_jobs").exists(), "the commit removes the job");
    assert!(
        b.join("index/old/_meta.json").is_file(),
        "the previous version is kept"
    );
    let docs = documents(&a, &config);
    assert!(docs.len() >= 30, "a real crawl: {} documents", docs.len());
    for (url, d) in &docs {
        assert!(
            d["hostrank"].as_f64().unwrap() > 0.0,
            "{url}: hostrank: {d}"
        );
    }
    assert_eq!(docs, documents(&b, &config), "the same documents");
    let queries = queries(&docs);
    assert!(queries.len() >= 30, "{queries:?}");
    assert_same_hits(&a, &b, &config, &queries, "tasks vs one process");

    // A job committed over another version of the index is refused, installing
    // nothing.
    output_ok(task_command("index", &b, &config, &[], "x2", "all", "t-0"));
    run_ok("index", &b, &config, &["--full"]);
    let version = std::fs::read(b.join("index/current/_SUCCESS")).unwrap();
    let out = stage_command(bin("index"), &b, &config, &["--job", "x2", "--commit"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("the index changed since the task"), "{err}");
    assert_eq!(
        version,
        std::fs::read(b.join("index/current/_SUCCESS")).unwrap(),
        "nothing installed"
    );

    // The same crawl in one partition: one shard, the same documents, hits and
    // scores as the four shards searched together.
    let c = dir.join("c");
    copy_tree(&a, &c);
    run_ok("repartition", &c, &config, &["--partitions", "1"]);
    let rebuilt = String::from_utf8_lossy(&run("index", &c, &config, &[]).stderr).into_owned();
    assert!(summary(&rebuilt).ends_with("(1 shards)"), "{rebuilt}");
    assert!(
        rebuilt.contains("indexed again"),
        "a repartitioned crawl is indexed again: {rebuilt}"
    );
    // An incremental index keeps older documents' anchors and PageRank as they
    // were indexed: the four shards rebuilt for the comparison.
    run_ok("index", &a, &config, &["--full"]);
    assert_eq!(
        documents(&a, &config),
        documents(&c, &config),
        "the same documents in 1 shard as in 4"
    );
    assert_same_hits(&a, &c, &config, &queries, "4 shards vs 1");
}
