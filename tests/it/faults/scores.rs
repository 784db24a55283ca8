//! Faults: scores and segment datasets (issue 13, "correctness against peers"):
//! mergesegs carries every segment dataset (robots/ included, so the sitemap stage
//! still finds the `Sitemap:` lines), the crawldb's scores are on one scale whose
//! order is PageRank's, PageRank's defaults converge on a demo-sized crawl, and
//! `round.sh` passes flags to every stage.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use crate::common::{
    self, DEMO_WEB, TestWeb, bin, crawldb, inject_seeds, round, run, run_ok, site_map, write_config,
};
use trawl::graph::rows::PageRankMeta;
use trawl::net::robots::RobotsRecord;
use trawl::records::PageRankRecord;
use trawl::sitemaps::SitemapRecord;

const SMALL_WEB: &[&str] = &["--seed", "7", "--hosts", "3", "--pages", "10", "--sitemaps"];

fn segments(crawl: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(crawl.join("segments"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.len() == 14 && n.bytes().all(|b| b.is_ascii_digit()))
        .collect();
    v.sort();
    v
}

fn robots_rows(seg: &Path) -> Vec<RobotsRecord> {
    trawl::store::parquet::read_dataset(&seg.join("robots")).unwrap()
}

fn sitemapdb_urls(crawl: &Path) -> BTreeSet<String> {
    trawl::store::parquet::read_dataset::<SitemapRecord>(&crawl.join("sitemapdb/current"))
        .unwrap()
        .into_iter()
        .map(|r| r.url)
        .collect()
}

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// mergesegs --delete-inputs used to drop every segment's robots/ dataset, and with it
/// the `Sitemap:` lines the sitemap stage reads: a twin crawl without the merge
/// found the sitemaps, the merged one found none.
#[test]
fn mergesegs_keeps_robots_so_the_sitemap_stage_still_finds_its_sitemaps() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let map = site_map(dir, SMALL_WEB);
    let web = TestWeb::start(dir, SMALL_WEB);
    let config = write_config(dir, &web.addr, 0.0, "");
    let merged = dir.join("merged");
    let twin = dir.join("twin");
    for crawl in [&merged, &twin] {
        inject_seeds(dir, crawl, &config, &map.seeds);
        for _ in 0..2 {
            round(crawl, &config).expect("a round");
        }
    }
    let inputs = segments(&merged);
    assert_eq!(inputs.len(), 2);
    // The newest robots.txt fetch of each origin, as the inputs hold them.
    let mut newest: BTreeMap<String, RobotsRecord> = BTreeMap::new();
    for s in &inputs {
        for r in robots_rows(&merged.join("segments").join(s)) {
            match newest.get(&r.origin) {
                Some(n) if n.fetch_time > r.fetch_time => {}
                _ => {
                    newest.insert(r.origin.clone(), r);
                }
            }
        }
    }
    assert!(
        newest.values().any(|r| !r.sitemaps.is_empty()),
        "the test web's robots.txt files name sitemaps: {newest:?}"
    );

    let mut args: Vec<&str> = inputs.iter().map(String::as_str).collect();
    args.push("--delete-inputs");
    run_ok("mergesegs", &merged, &config, &args);
    let out = segments(&merged);
    assert_eq!(out.len(), 1, "one merged segment, inputs deleted: {out:?}");
    let seg = merged.join("segments").join(&out[0]);
    assert!(seg.join("robots/_SUCCESS").is_file(), "robots/ copied");
    let rows = robots_rows(&seg);
    assert_eq!(rows.len(), newest.len(), "one row per origin: {rows:?}");
    for r in &rows {
        assert_eq!(
            Some(r),
            newest.get(&r.origin),
            "newest fetch of {}",
            r.origin
        );
    }
    // readseg --list names it among the segment's datasets.
    let list = run_ok("readseg", &merged, &config, &["--list", "--json"]);
    let row: serde_json::Value = serde_json::from_str(list.trim()).unwrap();
    assert!(
        row["datasets"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d == "robots"),
        "{row}"
    );
    // And prunesegs keeps it (the light datasets stay).
    run_ok("prunesegs", &merged, &config, &[]);
    assert!(
        seg.join("robots/_SUCCESS").is_file(),
        "prunesegs keeps robots/"
    );
    assert!(!seg.join("content").exists());

    // The sitemap stage finds the same sitemaps as in the twin crawl.
    let a = run("sitemap", &merged, &config, &[]);
    let b = run("sitemap", &twin, &config, &[]);
    assert!(
        a.status.success() && b.status.success(),
        "{}\n{}",
        stderr_of(&a),
        stderr_of(&b)
    );
    let (sa, sb) = (sitemapdb_urls(&merged), sitemapdb_urls(&twin));
    assert!(!sb.is_empty(), "the twin found sitemaps");
    assert_eq!(sa, sb, "same sitemaps with and without the merge");
    assert_eq!(
        crawldb(&merged).keys().collect::<Vec<_>>(),
        crawldb(&twin).keys().collect::<Vec<_>>(),
        "same URLs added from them"
    );
    drop(web);
}

/// Every default round ran pagerank, whose scores (summing to 1) replaced those of
/// linked pages only: an unlinked seed kept its injected 1.0 and led `readdb --top`.
/// Now every crawldb URL has its PageRank times the number of pages.
#[test]
fn readdb_top_is_the_pagerank_order_and_an_unlinked_seed_does_not_lead() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let map = site_map(dir, SMALL_WEB);
    let web = TestWeb::start(dir, SMALL_WEB);
    let config = write_config(dir, &web.addr, 0.0, "");
    let crawl = dir.join("crawl");
    // A seed that links nowhere and that no crawled page links to (smap2.web.test/:
    // only its orphan pages, which no link reaches, link to it).
    let lonely = map
        .seeds
        .iter()
        .find(|u| map.urls[*u].outlinks.is_empty())
        .cloned()
        .expect("a seed without links in the test web");
    let seeds = map.seeds.clone();
    inject_seeds(dir, &crawl, &config, &seeds);
    for _ in 0..2 {
        round(&crawl, &config).expect("a round");
    }
    drop(web);

    let pr: BTreeMap<String, PageRankRecord> =
        trawl::store::parquet::read_dataset::<PageRankRecord>(&crawl.join("pagerank"))
            .unwrap()
            .into_iter()
            .map(|r| (r.url.clone(), r))
            .collect();
    let meta: PageRankMeta =
        trawl::store::parquet::read_json(&crawl.join("pagerank/_meta.json")).unwrap();
    let n = pr.len() as f64;
    assert_eq!(meta.crawldb_scale, n, "crawldb scores are PageRank x N");
    let db = crawldb(&crawl);
    let l = &pr[&lonely];
    assert_eq!((l.in_degree, l.out_degree), (0, 0), "{lonely} is unlinked");
    for d in db.values() {
        let r = pr
            .get(&d.url)
            .unwrap_or_else(|| panic!("{} has no PageRank", d.url));
        assert_eq!(d.score, r.score * n, "{}", d.url);
    }
    let mean = db.values().map(|d| d.score).sum::<f64>() / db.len() as f64;
    assert!(
        (mean - 1.0).abs() < 1e-9,
        "scores average 1.0 (the injected scale): {mean}"
    );
    assert!(db[&lonely].score < 1.0, "an unlinked page is below average");

    // readdb --top 5 = the five best pages of pagerank/, best first.
    let top: Vec<String> = run_ok("readdb", &crawl, &config, &["--top", "5"])
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["url"].as_str().unwrap().to_string()
        })
        .collect();
    let mut by_rank: Vec<&PageRankRecord> =
        pr.values().filter(|r| db.contains_key(&r.url)).collect();
    by_rank.sort_by(|a, b| {
        (b.score * n)
            .total_cmp(&(a.score * n))
            .then(a.url.cmp(&b.url))
    });
    let want: Vec<String> = by_rank.iter().take(5).map(|r| r.url.clone()).collect();
    assert_eq!(top, want);
    assert!(!top.contains(&lonely), "{top:?}");
    let best = pr.values().map(|r| r.score).fold(0.0, f64::max);
    assert_eq!(
        pr[&top[0]].score, best,
        "the page with the highest PageRank leads"
    );
}

/// With tolerance 1e-9 and 100 iterations, pagerank warned "did not converge" on
/// every round of the demo's crawl.
#[test]
fn pagerank_defaults_converge_on_a_demo_sized_crawl() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let map = site_map(dir, DEMO_WEB);
    let web = TestWeb::start(dir, DEMO_WEB);
    let config = write_config(dir, &web.addr, 0.0, "");
    let crawl = dir.join("crawl");
    inject_seeds(dir, &crawl, &config, &map.seeds);
    let defaults = trawl::Config::default().pagerank;
    let mut nodes = 0;
    for r in 0..3 {
        let seg = common::generate_segment(&crawl, &config);
        for stage in ["fetch", "parse", "updatedb", "linkdb"] {
            run_ok(stage, &crawl, &config, &[&seg]);
        }
        let out = run("pagerank", &crawl, &config, &[]);
        let err = stderr_of(&out);
        assert!(out.status.success(), "{err}");
        assert!(!err.contains("did not converge"), "round {r}: {err}");
        let meta: PageRankMeta =
            trawl::store::parquet::read_json(&crawl.join("pagerank/_meta.json")).unwrap();
        assert!(
            meta.delta < defaults.tolerance && meta.iterations < defaults.max_iterations,
            "round {r}: {} iterations, delta {}",
            meta.iterations,
            meta.delta
        );
        assert!(
            err.contains(&format!("{} iterations", meta.iterations)),
            "{err}"
        );
        nodes = meta.nodes;
    }
    assert!(nodes > 200, "a demo-sized graph: {nodes} nodes");
    drop(web);
}

/// round.sh passed flags to generate, fetch and sitemap only.
#[test]
fn round_sh_passes_flags_to_every_stage() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let map = site_map(dir, SMALL_WEB);
    let web = TestWeb::start(dir, SMALL_WEB);
    let config = write_config(dir, &web.addr, 0.0, "");
    let crawl = dir.join("crawl");
    inject_seeds(dir, &crawl, &config, &map.seeds);
    let before = crawldb(&crawl).len();
    let bindir = Path::new(bin("pagerank")).parent().unwrap();
    let out = Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/round.sh"))
        .env("BIN", bindir)
        .env("TRAWL_CRAWL_DIR", &crawl)
        .env("TRAWL_CONFIG", &config)
        .env("RUST_LOG", "warn")
        .env("PARSE_FLAGS", "--max-outlinks 1")
        .env("UPDATEDB_FLAGS", "--no-additions")
        .env("LINKDB_FLAGS", "--keep-internal")
        .env("PAGERANK_FLAGS", "--max-iterations 3 --tolerance 0 --hits")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let seg = crawl.join("segments").join(&segments(&crawl)[0]);
    let pages: Vec<trawl::records::ParseDataRecord> =
        trawl::store::parquet::read_dataset(&seg.join("parse_data")).unwrap();
    assert!(!pages.is_empty());
    assert!(pages.iter().all(|p| p.outlinks.len() <= 1), "PARSE_FLAGS");
    let after = crawldb(&crawl);
    let from_sitemaps = after
        .values()
        .filter(|d| d.metadata.contains_key("sitemap"))
        .count();
    assert_eq!(
        after.len() - from_sitemaps,
        before,
        "UPDATEDB_FLAGS: no additions"
    );
    let inlinks: Vec<trawl::records::InlinkRecord> =
        trawl::store::parquet::read_dataset(&crawl.join("linkdb/current")).unwrap();
    assert!(
        inlinks
            .iter()
            .any(|r| trawl::urls::host_of(&r.url) == trawl::urls::host_of(&r.from_url)),
        "LINKDB_FLAGS: internal links kept"
    );
    let meta: PageRankMeta =
        trawl::store::parquet::read_json(&crawl.join("pagerank/_meta.json")).unwrap();
    assert_eq!((meta.iterations, meta.hits), (3, true), "PAGERANK_FLAGS");
    // The round is the plan's (`trawl plan steps`): dedup and the hostdb ran too.
    let log = stderr_of(&out);
    for stage in ["dedup: ", "hostdb: ", "index: ", "sitemap: "] {
        assert!(log.contains(stage), "{stage} did not run: {log}");
    }
    assert!(crawl.join("hostdb/current/_SUCCESS").is_file(), "{log}");
    drop(web);
}
