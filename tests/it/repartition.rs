//! `repartition` on real crawls of the test web: every host-partitioned dataset
//! (crawldb, linkdb, pagerank with hits and hosts, every segment dataset) ends at
//! the new count with each part holding only its hosts and every host's rows
//! unchanged and in the same order; the crawl goes on and ends like a twin that
//! never repartitioned; a SIGKILL at any point leaves a usable crawl that a rerun
//! finishes; bad requests are refused without changing anything.

use crate::common;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde::Serialize;
use trawl::CrawlDatum;
use trawl::graph::rows::{HitsRecord, HostRankRecord};
use trawl::net::robots::RobotsRecord;
use trawl::records::{
    ContentRecord, CrawlParseRecord, FetchRecord, InlinkRecord, PageRankRecord, ParseDataRecord,
    ParseTextRecord,
};
use trawl::store::names::SegmentDataset;
use trawl::store::parquet::{Record, part_files, part_name, read_part_all};
use trawl::store::partition::PartitionKey;
use trawl::store::partition::Partitioner;
use trawl::urls::{host_of, registrable_domain};

const WEB: &[&str] = &["--seed", "5", "--hosts", "10", "--pages", "10"];
const EXTRA: &str = "[pagerank]\nhits = true\nhostrank = true\n";

struct Crawl {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    crawl: PathBuf,
    config: PathBuf,
    web: TestWeb,
    seeds: Vec<String>,
}

/// Hosts of registrable domains other than the test web's `web.test`, resolved to
/// the test web (which answers 404 for them): `a.test` with two hosts,
/// `shop.co.uk` (under the two-label public suffix `co.uk`) with two, `b.test`.
const OTHER_HOSTS: &[&str] = &[
    "www.a.test",
    "news.a.test",
    "www.shop.co.uk",
    "img.shop.co.uk",
    "b.test",
];

/// A crawl of the test web (4 partitions) after `rounds` full rounds.
fn crawl(rounds: usize) -> Crawl {
    crawl_with(rounds, "host", &[])
}

/// A crawl of the test web and the home pages of `other` hosts (4 partitions by
/// `key`) after `rounds` full rounds.
fn crawl_with(rounds: usize, key: &str, other: &[&str]) -> Crawl {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let map = site_map(&dir, WEB);
    let web = TestWeb::start(&dir, WEB);
    let resolve: String = ["*.a.test", "*.shop.co.uk", "b.test"]
        .iter()
        .map(|p| format!("\"{p}\" = \"{}\"\n", web.addr))
        .collect();
    let config = write_config(&dir, &web.addr, 0.0, &format!("{resolve}\n{EXTRA}"));
    set_key(&config, key);
    let crawl = dir.join("crawl");
    let mut seeds = map.seeds.clone();
    seeds.extend(other.iter().map(|h| format!("http://{h}/")));
    inject_seeds(&dir, &crawl, &config, &seeds);
    for _ in 0..rounds {
        round(&crawl, &config).expect("a round");
    }
    Crawl {
        _tmp: tmp,
        dir,
        crawl,
        config,
        web,
        seeds,
    }
}

/// Sets `crawl.partition_key` in the config file at `config`.
fn set_key(config: &Path, key: &str) {
    let text = std::fs::read_to_string(config).unwrap();
    let text = match text.find("partition_key = ") {
        Some(i) => {
            let end = i + text[i..].find('\n').unwrap();
            format!("{}partition_key = \"{key}\"{}", &text[..i], &text[end..])
        }
        None => text.replacen(
            "[crawl]\n",
            &format!("[crawl]\npartition_key = \"{key}\"\n"),
            1,
        ),
    };
    std::fs::write(config, text).unwrap();
}

/// Per dataset and registrable domain, the parts holding its rows.
fn parts_of_domains(crawl: &Path) -> BTreeMap<(String, String), BTreeSet<usize>> {
    let mut out: BTreeMap<(String, String), BTreeSet<usize>> = BTreeMap::new();
    for (rel, kind) in datasets(crawl) {
        for (i, part) in part_files(&crawl.join(&rel)).unwrap().iter().enumerate() {
            for (host, _) in part_rows(&kind, part) {
                out.entry((rel.clone(), registrable_domain(&host)))
                    .or_default()
                    .insert(i);
            }
        }
    }
    out
}

fn repartition(crawl: &Path, config: &Path, args: &[&str]) -> Output {
    stage_command(common::bin("repartition"), crawl, config, args)
        .output()
        .unwrap()
}

fn repartition_ok(c: &Crawl, n: usize) -> String {
    let out = repartition(&c.crawl, &c.config, &["--partitions", &n.to_string()]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "repartition {n} failed:\n{stderr}");
    stderr
}

fn rows_of<R: Record + Serialize>(
    part: &Path,
    host: impl Fn(&R) -> String,
) -> Vec<(String, String)> {
    read_part_all::<R>(part)
        .unwrap()
        .iter()
        .map(|r| (host(r), serde_json::to_string(r).unwrap()))
        .collect()
}

/// The rows of one part file of the dataset `kind`: (host, JSON row), in file order.
fn part_rows(kind: &str, part: &Path) -> Vec<(String, String)> {
    match kind {
        "crawldb" | "crawl_generate" => rows_of::<CrawlDatum>(part, |d| d.host.clone()),
        "linkdb" | "parse_inlinks" => rows_of::<InlinkRecord>(part, |r| host_of(&r.url)),
        "pagerank" => rows_of::<PageRankRecord>(part, |r| host_of(&r.url)),
        "hits" => rows_of::<HitsRecord>(part, |r| host_of(&r.url)),
        "hosts" => rows_of::<HostRankRecord>(part, |r| r.host.clone()),
        "crawl_fetch" => rows_of::<FetchRecord>(part, |r| r.host.clone()),
        "content" => rows_of::<ContentRecord>(part, |r| r.host.clone()),
        "robots" => rows_of::<RobotsRecord>(part, |r| r.host.clone()),
        "parse_text" => rows_of::<ParseTextRecord>(part, |r| host_of(&r.url)),
        "parse_data" => rows_of::<ParseDataRecord>(part, |r| host_of(&r.url)),
        "crawl_parse" => rows_of::<CrawlParseRecord>(part, |r| r.host.clone()),
        other => panic!("unknown dataset {other}"),
    }
}

/// Every host-partitioned dataset of the crawl: (path relative to the crawl, kind).
fn datasets(crawl: &Path) -> Vec<(String, String)> {
    let mut out = vec![
        ("crawldb/current".to_string(), "crawldb".to_string()),
        ("linkdb/current".into(), "linkdb".into()),
        ("pagerank".into(), "pagerank".into()),
        ("pagerank/hits".into(), "hits".into()),
        ("pagerank/hosts".into(), "hosts".into()),
    ];
    let mut segs: Vec<String> = std::fs::read_dir(crawl.join("segments"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.len() == 14)
        .collect();
    segs.sort();
    for s in segs {
        for ds in SegmentDataset::ALL.map(SegmentDataset::as_str) {
            let rel = format!("segments/{s}/{ds}");
            if crawl.join(&rel).join("_SUCCESS").is_file() {
                out.push((rel, ds.to_string()));
            }
        }
    }
    out
}

/// Every host's rows of every dataset, in the order they are stored: a repartition
/// must keep this map exactly (the rows of a host move as a block, in order).
fn by_host(crawl: &Path) -> BTreeMap<(String, String), Vec<String>> {
    let mut out: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (rel, kind) in datasets(crawl) {
        for part in part_files(&crawl.join(&rel)).unwrap() {
            for (host, row) in part_rows(&kind, &part) {
                out.entry((rel.clone(), host)).or_default().push(row);
            }
        }
    }
    out
}

fn meta_partitions(path: &Path) -> u64 {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    v["partitions"].as_u64().unwrap()
}

/// The `partition_key` a `_meta.json` records (`host` when it has none).
fn meta_key(path: &Path) -> String {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    v["partition_key"].as_str().unwrap_or("host").to_string()
}

/// Every dataset has `n` parts `part-00000..`, part `i` holding only hosts of
/// partition `i`; the crawldb and linkdb parts are sorted; every `_meta.json` says `n`.
fn assert_partitioned(crawl: &Path, n: usize) {
    assert_partitioned_by(crawl, Partitioner::by_host(n));
}

/// [`assert_partitioned`] for the partitioning `pt` (count and key): every
/// `_meta.json` also records its key.
fn assert_partitioned_by(crawl: &Path, pt: Partitioner) {
    let n = pt.n();
    let all = datasets(crawl);
    assert!(all.len() > 8, "{all:?}");
    for (rel, kind) in all {
        let parts = part_files(&crawl.join(&rel)).unwrap();
        let names: Vec<String> = parts
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        let want: Vec<String> = (0..n).map(part_name).collect();
        assert_eq!(names, want, "{rel}: {n} parts");
        for (i, p) in parts.iter().enumerate() {
            let rows = part_rows(&kind, p);
            for (host, _) in &rows {
                assert_eq!(pt.of_host(host), i, "{rel} part {i}: host {host}");
            }
            if kind == "crawldb" {
                let urls: Vec<CrawlDatum> = read_part_all(p).unwrap();
                assert!(urls.windows(2).all(|w| w[0].url < w[1].url), "{rel} {i}");
            }
            if kind == "linkdb" {
                let r: Vec<InlinkRecord> = read_part_all(p).unwrap();
                assert!(
                    r.windows(2)
                        .all(|w| (&w[0].url, &w[0].from_url) < (&w[1].url, &w[1].from_url)),
                    "{rel} {i}"
                );
            }
        }
    }
    let mut metas = vec![
        crawl.join("crawldb/current/_meta.json"),
        crawl.join("linkdb/current/_meta.json"),
        crawl.join("pagerank/_meta.json"),
    ];
    for e in std::fs::read_dir(crawl.join("segments")).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            metas.push(p.join("_meta.json"));
        }
    }
    for m in metas {
        assert_eq!(meta_partitions(&m), n as u64, "{}", m.display());
        assert_eq!(meta_key(&m), pt.key().as_str(), "{}", m.display());
    }
}

/// Repartitions `c` to `n` and checks the result against what it held before.
fn repartition_and_check(c: &Crawl, n: usize) -> String {
    let before = by_host(&c.crawl);
    let urls = crawldb_statuses(&c.crawl).len();
    let stderr = repartition_ok(c, n);
    assert_partitioned(&c.crawl, n);
    assert_eq!(by_host(&c.crawl), before, "every host's rows, in order");
    // The previous crawldb is kept as old/.
    let old: Vec<CrawlDatum> =
        trawl::store::parquet::read_dataset(&c.crawl.join("crawldb/old")).unwrap();
    assert_eq!(old.len(), urls);
    let summary = stderr.lines().last().unwrap_or_default().to_string();
    assert!(
        summary.starts_with("repartition: ") && summary.contains(&format!("crawldb {urls} urls")),
        "{summary}"
    );
    summary
}

#[test]
fn a_non_multiple_shuffles_and_the_crawl_goes_on_like_its_twin() {
    let a = crawl(2);
    let summary = repartition_and_check(&a, 7);
    assert!(summary.contains("4 -> 7 partitions (shuffle)"), "{summary}");
    assert!(summary.contains("2 segments (16 datasets"), "{summary}");
    // Rerunning has nothing to do: refused, nothing changed.
    let snap = snapshot(&a.crawl);
    let out = repartition(&a.crawl, &a.config, &["--partitions", "7"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("already has 7 partitions"));
    assert_eq!(snapshot(&a.crawl), snap);

    // A twin crawl of the same web that keeps 4 partitions.
    let b_crawl = a.dir.join("twin");
    let b_dir = a.dir.join("twin-seeds");
    std::fs::create_dir_all(&b_dir).unwrap();
    inject_seeds(&b_dir, &b_crawl, &a.config, &a.seeds);
    round(&b_crawl, &a.config).expect("twin round 1");
    round(&b_crawl, &a.config).expect("twin round 2");
    for r in 0..2 {
        let seg = round(&a.crawl, &a.config).expect("a round after repartition");
        assert_eq!(
            meta_partitions(&Path::new(&seg).join("_meta.json")),
            7,
            "round {r}"
        );
        round(&b_crawl, &a.config).expect("twin round");
    }
    assert_partitioned(&a.crawl, 7);
    let (sa, sb) = (crawldb_statuses(&a.crawl), crawldb_statuses(&b_crawl));
    assert!(sa.len() > 50, "{}", sa.len());
    assert_eq!(sa, sb, "same URLs and statuses as the twin");
    let la: Vec<InlinkRecord> =
        trawl::store::parquet::read_dataset(&a.crawl.join("linkdb/current")).unwrap();
    let lb: Vec<InlinkRecord> =
        trawl::store::parquet::read_dataset(&b_crawl.join("linkdb/current")).unwrap();
    let key = |v: Vec<InlinkRecord>| {
        let mut k: Vec<(String, String)> = v.into_iter().map(|r| (r.url, r.from_url)).collect();
        k.sort();
        k
    };
    assert_eq!(key(la), key(lb), "same inlinks as the twin");
}

#[test]
fn a_multiple_splits_each_part_and_shrinking_shuffles() {
    let c = crawl(2);
    let summary = repartition_and_check(&c, 8);
    assert!(summary.contains("4 -> 8 partitions (split)"), "{summary}");
    let summary = repartition_and_check(&c, 3);
    assert!(summary.contains("8 -> 3 partitions (shuffle)"), "{summary}");
    let seg = round(&c.crawl, &c.config).expect("a round after repartition");
    assert_eq!(meta_partitions(&Path::new(&seg).join("_meta.json")), 3);
    assert_partitioned(&c.crawl, 3);
}

/// Starts repartition paused at `point` (`PAUSE_AT_ENV`), or before its first
/// install when `point` is `None`, waits for the pause and SIGKILLs it.
fn kill_at(c: &Crawl, n: usize, point: Option<&str>) {
    let log = c.dir.join(format!(
        "kill-{}.log",
        point.unwrap_or("install").replace(':', "-")
    ));
    let mut cmd = Command::new(common::bin("repartition"));
    cmd.arg("--crawl-dir")
        .arg(&c.crawl)
        .arg("--config")
        .arg(&c.config)
        .args(["--partitions", &n.to_string()])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    match point {
        Some(p) => cmd.env(trawl::store::versioned::PAUSE_AT_ENV, format!("{p}:60")),
        None => cmd.env(trawl::store::versioned::PAUSE_BEFORE_INSTALL_ENV, "60"),
    };
    let mut child = cmd.spawn().unwrap();
    let started = Instant::now();
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("pausing") {
            break;
        }
        if let Some(st) = child.try_wait().unwrap() {
            panic!("repartition ended ({st}) before its pause {point:?}: {text}");
        }
        assert!(started.elapsed() < Duration::from_secs(60), "no pause");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
}

#[test]
fn killed_at_any_point_the_crawl_stays_usable_and_a_rerun_finishes() {
    let c = crawl(2);
    let before = by_host(&c.crawl);
    let statuses = crawldb_statuses(&c.crawl);
    let segments = |crawl: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(crawl.join("segments"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !n.ends_with(".lock"))
            .collect();
        v.sort();
        v
    };
    let segs = segments(&c.crawl);

    // Killed once a segment is rewritten, before it is swapped in: nothing changed
    // for readers.
    kill_at(&c, 40, Some("repartition:segment-staged"));
    assert_eq!(by_host(&c.crawl), before);
    run_ok("readdb", &c.crawl, &c.config, &["--stats"]);

    // Killed in the middle of a segment's swap (the old one renamed away): the
    // rerun puts the new one in place.
    kill_at(&c, 40, Some("repartition:swapping"));
    // Killed before the first versioned install (pagerank/ and every segment at
    // 40, linkdb and crawldb still at 4): readers accept the mix.
    kill_at(&c, 40, None);
    assert_eq!(segments(&c.crawl), segs, "no leftover besides the segments");
    run_ok("readdb", &c.crawl, &c.config, &["--stats"]);
    run_ok("readseg", &c.crawl, &c.config, &["--list"]);
    assert_eq!(
        meta_partitions(&c.crawl.join("crawldb/current/_meta.json")),
        4
    );
    assert_eq!(by_host(&c.crawl), before);

    let stderr = repartition_ok(&c, 40);
    assert!(stderr.contains("4 -> 40 partitions"), "{stderr}");
    assert_partitioned(&c.crawl, 40);
    assert_eq!(by_host(&c.crawl), before);
    assert_eq!(crawldb_statuses(&c.crawl), statuses);
    let seg = round(&c.crawl, &c.config).expect("a round after repartition");
    assert_eq!(meta_partitions(&Path::new(&seg).join("_meta.json")), 40);
    assert_partitioned(&c.crawl, 40);
}

#[test]
fn bad_requests_are_refused_without_changing_anything() {
    let c = crawl(1);
    let snap = snapshot(&c.crawl);
    for (n, says) in [
        ("4", "already has 4 partitions"),
        ("0", "crawl.partitions"),
        ("5000", "crawl.partitions"),
    ] {
        let out = repartition(&c.crawl, &c.config, &["--partitions", n]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{n}: {stderr}");
        assert!(stderr.contains(says), "{n}: {stderr}");
        assert_eq!(snapshot(&c.crawl), snap, "{n}");
    }
    let empty = c.dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = repartition(&empty, &c.config, &["--partitions", "8"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no crawldb"), "{stderr}");
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
    drop(c.web);
}

#[test]
fn a_crawl_partitioned_by_domain_keeps_each_domain_in_one_part() {
    let c = crawl_with(2, "domain", OTHER_HOSTS);
    let pt = Partitioner::new(4, PartitionKey::Domain);
    assert_partitioned_by(&c.crawl, pt);
    // Whatever the partitioner computes: every domain's rows of a dataset are in one
    // part (the ten hosts of web.test, a.test's and shop.co.uk's two each).
    let parts = parts_of_domains(&c.crawl);
    for ((rel, domain), p) in &parts {
        assert_eq!(p.len(), 1, "{rel}: {domain} in parts {p:?}");
    }
    let domains: BTreeSet<&str> = parts.keys().map(|(_, d)| d.as_str()).collect();
    assert_eq!(
        domains,
        BTreeSet::from(["a.test", "b.test", "shop.co.uk", "web.test"])
    );
    // ... and the domains spread over the parts (by host, web.test's ten hosts would).
    let used: BTreeSet<usize> = parts
        .iter()
        .filter(|((rel, _), _)| rel == "crawldb/current")
        .flat_map(|(_, p)| p.iter().copied())
        .collect();
    assert!(used.len() >= 2, "{used:?}");
    let by_host: BTreeSet<usize> = (0..10)
        .map(|i| Partitioner::by_host(4).of_host(&format!("site{i}.web.test")))
        .collect();
    assert!(by_host.len() >= 2, "{by_host:?}");
    let urls = crawldb_statuses(&c.crawl);
    assert!(urls.len() > 50, "{}", urls.len());
    for h in OTHER_HOSTS {
        assert!(urls.contains_key(&format!("http://{h}/")), "{h}");
    }
}

#[test]
fn repartition_host_to_domain_keeps_every_row_and_the_key_is_enforced() {
    let c = crawl_with(1, "host", OTHER_HOSTS);
    let before = by_host(&c.crawl);
    let urls = crawldb_statuses(&c.crawl);

    // The config may not ask for another key than the crawl's.
    let domain_cfg = c.dir.join("domain.toml");
    std::fs::copy(&c.config, &domain_cfg).unwrap();
    set_key(&domain_cfg, "domain");
    let snap = snapshot(&c.crawl);
    for stage in ["generate", "updatedb", "readdb"] {
        let args: &[&str] = if stage == "readdb" { &["--stats"] } else { &[] };
        let out = run(stage, &c.crawl, &domain_cfg, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stage}: {err}");
        assert!(
            err.contains("partitioned by host")
                && err.contains("crawl.partition_key = \"domain\"")
                && err.contains("repartition --partition-key domain"),
            "{stage}: {err}"
        );
    }
    let seeds = c.dir.join("more.txt");
    std::fs::write(&seeds, "http://site0.web.test/new.html\n").unwrap();
    let out = run("inject", &c.crawl, &domain_cfg, &[seeds.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "inject: {err}");
    assert!(err.contains("partitioned by host"), "{err}");
    assert_eq!(snapshot(&c.crawl), snap, "a refused stage changes nothing");

    // Neither a count nor a key: refused.
    let out = repartition(&c.crawl, &c.config, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--partition-key"));

    // host -> domain, same count: a shuffle; every host's rows kept, in order.
    let out = repartition(&c.crawl, &c.config, &["--partition-key", "domain"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let summary = err.lines().last().unwrap_or_default();
    assert!(
        summary.contains("4 -> 4 partitions, key host -> domain (shuffle)")
            && summary.contains(&format!("crawldb {} urls", urls.len())),
        "{summary}"
    );
    let pt = Partitioner::new(4, PartitionKey::Domain);
    assert_partitioned_by(&c.crawl, pt);
    assert_eq!(by_host(&c.crawl), before, "every host's rows, in order");
    assert_eq!(crawldb_statuses(&c.crawl), urls);
    for ((rel, domain), p) in parts_of_domains(&c.crawl) {
        assert_eq!(p.len(), 1, "{rel}: {domain} in parts {p:?}");
    }

    // Now the host config is refused and the domain config crawls on.
    let out = run("generate", &c.crawl, &c.config, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() == Some(1) && err.contains("partitioned by domain"),
        "{err}"
    );
    let seg = round(&c.crawl, &domain_cfg).expect("a round after repartition");
    assert_eq!(meta_key(&Path::new(&seg).join("_meta.json")), "domain");
    assert_partitioned_by(&c.crawl, pt);

    // A count change keeps the key: 4 -> 8 by domain is still a split.
    let out = repartition(&c.crawl, &domain_cfg, &["--partitions", "8"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("4 -> 8 partitions (split)"), "{err}");
    assert_partitioned_by(&c.crawl, Partitioner::new(8, PartitionKey::Domain));

    // An old crawl (no partition_key in its _meta.json) reads as partitioned by host.
    let old = crawl(1);
    let meta = old.crawl.join("crawldb/current/_meta.json");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&meta).unwrap()).unwrap();
    assert_eq!(v["partition_key"], "host");
    let mut v = v;
    v.as_object_mut().unwrap().remove("partition_key");
    // (The manifest lists the parts only: the file is rewritten as an old trawl wrote it.)
    std::fs::write(&meta, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    run_ok("readdb", &old.crawl, &old.config, &["--stats"]);
    round(&old.crawl, &old.config).expect("a round on an old crawl");
}
