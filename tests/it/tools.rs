//! `readseg` and `readlinkdb` on a two-round crawl of the test web, checked against
//! the datasets read directly.

use crate::common;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Output};

use common::*;
use serde_json::Value;
use trawl::records::{ContentRecord, FetchRecord, InlinkRecord};

const WEB: &[&str] = &["--seed", "9", "--hosts", "4", "--pages", "10"];

fn tool(exe: &str, crawl: &Path, config: &Path, args: &[&str]) -> Output {
    Command::new(exe)
        .arg("--crawl-dir")
        .arg(crawl)
        .arg("--config")
        .arg(config)
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap()
}

fn lines(exe: &str, crawl: &Path, config: &Path, args: &[&str]) -> Vec<Value> {
    let out = tool(exe, crawl, config, args);
    assert!(
        out.status.success(),
        "{exe} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// Bytes of the files under `dir`.
fn walk_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk_bytes(&p)
            } else {
                p.metadata().unwrap().len()
            }
        })
        .sum()
}

#[test]
fn readseg_and_readlinkdb_report_what_the_datasets_hold() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let map = site_map(dir, WEB);
    let web = TestWeb::start(dir, WEB);
    let config = write_config(dir, &web.addr, 0.02, "");
    let crawl = dir.join("crawl");
    inject_seeds(dir, &crawl, &config, &map.seeds);

    // Before any linkdb: a clear error.
    let out = tool(common::bin("readlinkdb"), &crawl, &config, &["--dump"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("run `linkdb`"));

    let s1 = round(&crawl, &config).expect("round 1");
    let s2 = round(&crawl, &config).expect("round 2");
    drop(web);

    // --list --json: one line per segment, counts equal to crawl_fetch's.
    let list = lines(
        common::bin("readseg"),
        &crawl,
        &config,
        &["--list", "--json"],
    );
    assert_eq!(list.len(), 2);
    for (row, seg) in list.iter().zip([&s1, &s2]) {
        let seg = Path::new(seg);
        assert_eq!(row["name"], seg.file_name().unwrap().to_str().unwrap());
        let fetch: Vec<FetchRecord> =
            trawl::store::parquet::read_dataset(&seg.join("crawl_fetch")).unwrap();
        assert_eq!(row["generated"], fetch.len() as u64);
        assert_eq!(row["fetched_rows"], fetch.len() as u64);
        let mut by_status: BTreeMap<String, u64> = BTreeMap::new();
        for f in &fetch {
            *by_status.entry(f.status.as_str().to_string()).or_default() += 1;
        }
        assert_eq!(row["by_status"], serde_json::to_value(&by_status).unwrap());
        let count = |names: &[&str]| -> u64 {
            names
                .iter()
                .map(|n| by_status.get(*n).copied().unwrap_or(0))
                .sum()
        };
        assert_eq!(
            row["succeeded"],
            count(&["fetch_success", "fetch_notmodified"])
        );
        assert_eq!(row["failed"], count(&["fetch_gone", "fetch_retry"]));
        let disk: u64 = walk_bytes(seg);
        assert_eq!(row["disk_bytes"], disk);
        assert_eq!(row["merged_from"], serde_json::json!([]));
        let content: Vec<ContentRecord> =
            trawl::store::parquet::read_dataset(&seg.join("content")).unwrap();
        let bytes: usize = content.iter().map(|c| c.content.len()).sum();
        assert_eq!(row["content_bytes"], bytes as u64);
        assert_eq!(
            row["fetch_time_min"],
            fetch.iter().map(|f| f.fetch_time).min().unwrap()
        );
        assert_eq!(
            row["fetch_time_max"],
            fetch.iter().map(|f| f.fetch_time).max().unwrap()
        );
        assert_eq!(
            row["datasets"],
            serde_json::json!([
                "crawl_generate",
                "crawl_fetch",
                "content",
                "robots",
                "parse_text",
                "parse_data",
                "crawl_parse",
                "parse_inlinks"
            ])
        );
    }
    let table = tool(common::bin("readseg"), &crawl, &config, &["--list"]);
    let table = String::from_utf8_lossy(&table.stdout);
    assert_eq!(table.lines().count(), 3, "{table}");
    assert!(table.contains("fetch_success="), "{table}");

    // --dump --url: one fetched page's rows across every dataset.
    let seg2 = Path::new(&s2);
    let content: Vec<ContentRecord> =
        trawl::store::parquet::read_dataset(&seg2.join("content")).unwrap();
    let page = content
        .iter()
        .find(|c| c.http_status == 200)
        .expect("a 200 page");
    let rows = lines(
        common::bin("readseg"),
        &crawl,
        &config,
        &["--dump", &s2, "--url", &page.url],
    );
    let datasets: BTreeSet<&str> = rows
        .iter()
        .map(|r| r["dataset"].as_str().unwrap())
        .collect();
    assert_eq!(
        datasets,
        [
            "content",
            "crawl_fetch",
            "crawl_generate",
            "crawl_parse",
            "parse_data",
            "parse_text",
            "robots"
        ]
        .into()
    );
    // Every row is the page's, robots/ the one row of its origin.
    let origin = url::Url::parse(&page.url)
        .unwrap()
        .origin()
        .ascii_serialization();
    for r in &rows {
        if r["dataset"] == "robots" {
            assert_eq!(r["origin"], origin.as_str(), "{r}");
        } else {
            assert_eq!(r["url"], page.url.as_str(), "{r}");
        }
    }
    assert_eq!(rows.iter().filter(|r| r["dataset"] == "robots").count(), 1);
    let c = rows.iter().find(|r| r["dataset"] == "content").unwrap();
    let hex: String = page.content.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(c["content"], hex.as_str(), "content is hex");
    let f = rows.iter().find(|r| r["dataset"] == "crawl_fetch").unwrap();
    let t = f["fetch_time"].as_str().expect("fetch_time as text");
    assert!(t.starts_with("20") && t.ends_with('Z'), "ISO 8601 UTC: {t}");

    // --dataset and --columns.
    let name = seg2.file_name().unwrap().to_str().unwrap();
    let rows = lines(
        common::bin("readseg"),
        &crawl,
        &config,
        &[
            "--dump",
            name,
            "--dataset",
            "crawl_fetch",
            "--columns",
            "url,http_status",
        ],
    );
    let fetch: Vec<FetchRecord> =
        trawl::store::parquet::read_dataset(&seg2.join("crawl_fetch")).unwrap();
    assert_eq!(rows.len(), fetch.len());
    for r in &rows {
        let keys: Vec<&String> = r.as_object().unwrap().keys().collect();
        assert!(
            keys.iter()
                .all(|k| ["dataset", "url", "http_status"].contains(&k.as_str())),
            "{r}"
        );
        assert_eq!(r["dataset"], "crawl_fetch");
    }
    let out = tool(
        common::bin("readseg"),
        &crawl,
        &config,
        &["--dump", name, "--columns", "nope"],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no column \"nope\""));
    let out = tool(
        common::bin("readseg"),
        &crawl,
        &config,
        &["--dump", name, "--dataset", "bogus"],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown dataset"));

    // readlinkdb: the dump equals the linkdb; --url gives one target's inlinks.
    let linkdb: Vec<InlinkRecord> =
        trawl::store::parquet::read_dataset(&crawl.join("linkdb/current")).unwrap();
    assert!(!linkdb.is_empty());
    let dump = lines(common::bin("readlinkdb"), &crawl, &config, &["--dump"]);
    let mut got: Vec<InlinkRecord> = dump
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap())
        .collect();
    let mut want = linkdb.clone();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &linkdb {
        *counts.entry(r.url.as_str()).or_default() += 1;
    }
    let (target, n) = counts.iter().max_by_key(|(_, n)| **n).unwrap();
    let rows = lines(
        common::bin("readlinkdb"),
        &crawl,
        &config,
        &["--url", target],
    );
    assert_eq!(rows.len(), *n);
    let mut expected: Vec<&InlinkRecord> = linkdb.iter().filter(|r| r.url == *target).collect();
    expected.sort();
    for (r, e) in rows.iter().zip(expected) {
        assert_eq!(r["from_url"], e.from_url.as_str());
        assert_eq!(r["anchor"], e.anchor.as_str());
    }
    assert!(
        lines(
            common::bin("readlinkdb"),
            &crawl,
            &config,
            &["--url", "http://nowhere.web.test/x"]
        )
        .is_empty()
    );
}
