//! The `linkdb` and `pagerank` binaries on a hand-made crawl directory.

use crate::common;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use trawl::graph::rows::{HitsRecord, HostRankRecord};
use trawl::records::{InlinkRecord, Outlink, PageRankRecord, ParseDataRecord};
use trawl::store::layout::{CrawlDbMeta, SegmentMeta};
use trawl::store::parquet::{self, PartWriter, Record};
use trawl::store::partition::Partitioner;
use trawl::urls::host_of;
use trawl::{CrawlDatum, DbStatus};

const PARTS: usize = 3;

fn write_dataset<R: Record>(dir: &Path, parts: usize, rows: Vec<R>, host: impl Fn(&R) -> String) {
    std::fs::create_dir_all(dir).unwrap();
    let mut buckets: Vec<Vec<R>> = (0..parts).map(|_| Vec::new()).collect();
    for r in rows {
        let p = Partitioner::by_host(parts).of_host(&host(&r));
        buckets[p].push(r);
    }
    for (i, rows) in buckets.into_iter().enumerate() {
        let mut w = PartWriter::<R>::create(&dir.join(parquet::part_name(i))).unwrap();
        for r in rows {
            w.push(r).unwrap();
        }
        w.finish().unwrap();
    }
    std::fs::write(dir.join(parquet::SUCCESS_MARKER), "").unwrap();
}

fn page(url: &str, links: &[(&str, &str)]) -> ParseDataRecord {
    ParseDataRecord {
        url: url.into(),
        status: "parse_success".into(),
        reason: "ok".into(),
        title: None,
        content_type: Some("text/html".into()),
        charset: None,
        charset_source: None,
        lang: None,
        canonical: None,
        noindex: false,
        nofollow: false,
        noarchive: false,
        outlinks: links
            .iter()
            .map(|(u, a)| Outlink {
                url: u.to_string(),
                anchor: a.to_string(),
                nofollow: false,
            })
            .collect(),
        signature: None,
        simhash: None,
        metadata: BTreeMap::new(),
    }
}

fn segment(root: &Path, name: &str, pages: Vec<ParseDataRecord>) {
    let seg = root.join("segments").join(name);
    std::fs::create_dir_all(&seg).unwrap();
    let meta = SegmentMeta {
        name: name.into(),
        generated_time: 0,
        partitions: 2,
        partition_key: Default::default(),
        urls: pages.len() as u64,
        redirects_in_crawl_parse: false,
    };
    parquet::write_json(&seg.join("_meta.json"), &meta).unwrap();
    write_dataset(&seg.join("parse_data"), 2, pages, |r| host_of(&r.url));
}

/// A crawl with a hub page every other host links to.
fn crawl() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let urls = [
        "http://a.test/",
        "http://a.test/x",
        "http://b.test/",
        "http://c.test/",
        "http://hub.test/",
        "http://lonely.test/",
    ];
    let rows: Vec<CrawlDatum> = urls
        .iter()
        .map(|u| {
            let mut d = CrawlDatum::unfetched(u.to_string(), host_of(u), 0, 86400);
            d.status = DbStatus::DbFetched;
            d.score = 7.5;
            d.depth = if *u == "http://a.test/" { 0 } else { 1 };
            d
        })
        .collect();
    let mut rows = rows;
    rows.sort_by(|a, b| a.url.cmp(&b.url));
    write_dataset(&root.join("crawldb/current"), PARTS, rows, |r| {
        r.host.clone()
    });
    let meta = CrawlDbMeta {
        partitions: PARTS,
        seed_hosts: vec!["a.test".into()],
        ..Default::default()
    };
    parquet::write_json(&root.join("crawldb/current/_meta.json"), &meta).unwrap();
    segment(
        root,
        "20260101000000",
        vec![
            page(
                "http://a.test/",
                &[
                    ("http://hub.test/", "the hub"),
                    ("http://a.test/x", "internal"),
                    ("http://b.test/", ""),
                ],
            ),
            page(
                "http://b.test/",
                &[("http://hub.test/", "hub"), ("http://a.test/", "home of a")],
            ),
        ],
    );
    segment(
        root,
        "20260102000000",
        vec![
            page(
                "http://c.test/",
                &[("http://hub.test/", ""), ("http://b.test/", "bee")],
            ),
            page(
                "http://hub.test/",
                &[
                    ("http://hub.test/about", "about"),
                    ("http://hub.test/contact", ""),
                    ("http://hub.test/news", "news"),
                ],
            ),
            page(
                "http://a.test/x",
                &[
                    ("http://hub.test/", "x to hub"),
                    ("http://b.test/", "b again"),
                ],
            ),
        ],
    );
    tmp
}

fn run(bin: &str, root: &Path, args: &[&str]) -> std::process::Output {
    Command::new(bin)
        .arg("--crawl-dir")
        .arg(root)
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap()
}

fn ok(bin: &str, root: &Path, args: &[&str]) -> String {
    let out = run(bin, root, args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{bin} {args:?} failed: {err}");
    err
}

fn linkdb_rows(root: &Path) -> Vec<Vec<InlinkRecord>> {
    parquet::part_files(&root.join("linkdb/current"))
        .unwrap()
        .iter()
        .map(|p| parquet::read_part_all::<InlinkRecord>(p).unwrap())
        .collect()
}

#[test]
fn linkdb_inverts_once_and_drops_internal_links() {
    let tmp = crawl();
    let root = tmp.path();
    // Nutch's invertlinks with its default db.ignore.internal.links.
    let summary = ok(common::bin("linkdb"), root, &["--ignore-internal"]);
    assert!(summary.contains("linkdb: 2 segments"), "{summary}");
    let parts = linkdb_rows(root);
    assert_eq!(parts.len(), PARTS);
    for (p, rows) in parts.iter().enumerate() {
        for r in rows {
            assert_eq!(Partitioner::by_host(PARTS).of_host(&host_of(&r.url)), p);
        }
        assert!(
            rows.windows(2)
                .all(|w| (&w[0].url, &w[0].from_url) < (&w[1].url, &w[1].from_url))
        );
    }
    let all: Vec<InlinkRecord> = parts.concat();
    assert!(
        all.iter().all(|r| host_of(&r.url) != host_of(&r.from_url)),
        "internal link kept"
    );
    // 12 outlinks in total, 4 internal (a/ -> a/x, hub/ -> hub/*).
    assert_eq!(all.len(), 8);
    let hub: Vec<&InlinkRecord> = all.iter().filter(|r| r.url == "http://hub.test/").collect();
    assert_eq!(hub.len(), 4);
    let from_a = hub.iter().find(|r| r.from_url == "http://a.test/").unwrap();
    assert_eq!(
        (from_a.anchor.as_str(), from_a.segment.as_str()),
        ("the hub", "20260101000000")
    );
    assert!(summary.contains("8 links, 3 targets"), "{summary}");

    // Twice = once: nothing new by default, and explicitly re-inverting changes nothing.
    let again = ok(common::bin("linkdb"), root, &["--ignore-internal"]);
    assert!(again.contains("linkdb: 0 segments"), "{again}");
    assert_eq!(linkdb_rows(root), parts);
    ok(
        common::bin("linkdb"),
        root,
        &["--ignore-internal", "20260102000000"],
    );
    assert_eq!(linkdb_rows(root), parts);
    ok(common::bin("linkdb"), root, &["--ignore-internal", "--all"]);
    assert_eq!(linkdb_rows(root), parts);
    assert!(root.join("linkdb/old/_SUCCESS").is_file());
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join("linkdb/current/_meta.json")).unwrap())
            .unwrap();
    assert_eq!(meta["inverted_segments"].as_array().unwrap().len(), 2);
    assert!(!root.join("linkdb/.lock").exists());
}

#[test]
fn linkdb_keep_internal_and_clear_errors() {
    // By default the links within a host are kept (a site's anchors), as with
    // --keep-internal.
    let by_default = crawl();
    ok(common::bin("linkdb"), by_default.path(), &[]);
    assert_eq!(linkdb_rows(by_default.path()).concat().len(), 12);
    let tmp = crawl();
    let root = tmp.path();
    ok(common::bin("linkdb"), root, &["--keep-internal"]);
    assert_eq!(linkdb_rows(root).concat().len(), 12);

    // A segment without parse_data, named explicitly: a clear error, nothing lost.
    let seg = root.join("segments/20260103000000");
    std::fs::create_dir_all(&seg).unwrap();
    parquet::write_json(
        &seg.join("_meta.json"),
        &SegmentMeta {
            name: "20260103000000".into(),
            generated_time: 0,
            partitions: 2,
            partition_key: Default::default(),
            urls: 0,
            redirects_in_crawl_parse: false,
        },
    )
    .unwrap();
    let out = run(common::bin("linkdb"), root, &["20260103000000"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("parse_data") && err.contains("run `parse`"),
        "{err}"
    );
    assert_eq!(linkdb_rows(root).concat().len(), 12);
    // By default such a segment is skipped.
    ok(common::bin("linkdb"), root, &[]);
}

fn pagerank_rows(root: &Path) -> Vec<PageRankRecord> {
    parquet::read_dataset(&root.join("pagerank")).unwrap()
}

#[test]
fn pagerank_ranks_the_hub_first_and_updates_the_crawldb() {
    let tmp = crawl();
    let root = tmp.path();
    let summary = ok(common::bin("pagerank"), root, &["--hits", "--hostrank"]);
    // Nodes: a/, a/x, b/, c/, hub/ and its 3 pages, and lonely.test/ (a crawldb URL
    // without any link); 12 links.
    assert!(summary.contains("9 nodes, 12 edges"), "{summary}");
    assert!(summary.contains("6 crawldb scores updated"), "{summary}");
    let rows = pagerank_rows(root);
    assert_eq!(rows.len(), 9);
    let lonely = rows
        .iter()
        .find(|r| r.url == "http://lonely.test/")
        .unwrap();
    assert_eq!((lonely.in_degree, lonely.out_degree), (0, 0));
    let total: f64 = rows.iter().map(|r| r.score).sum();
    assert!((total - 1.0).abs() < 1e-9, "{total}");
    let best = rows
        .iter()
        .max_by(|a, b| a.score.total_cmp(&b.score))
        .unwrap();
    assert_eq!(best.url, "http://hub.test/");
    assert_eq!((best.in_degree, best.out_degree), (4, 3));
    let about = rows
        .iter()
        .find(|r| r.url == "http://hub.test/about")
        .unwrap();
    assert_eq!((about.in_degree, about.out_degree), (1, 0));
    // Partitioned like the crawldb, sorted by URL.
    for (p, part) in parquet::part_files(&root.join("pagerank"))
        .unwrap()
        .iter()
        .enumerate()
    {
        let rows: Vec<PageRankRecord> = parquet::read_part_all(part).unwrap();
        assert!(
            rows.iter()
                .all(|r| Partitioner::by_host(PARTS).of_host(&host_of(&r.url)) == p)
        );
        assert!(rows.windows(2).all(|w| w[0].url < w[1].url));
    }
    // Crawldb scores = PageRank x N for every row (every crawldb URL is a node), so
    // they average 1.0 over the graph; the unlinked page is below average.
    let db: Vec<CrawlDatum> = parquet::read_dataset(&root.join("crawldb/current")).unwrap();
    assert_eq!(db.len(), 6);
    for d in &db {
        let r = rows.iter().find(|r| r.url == d.url).unwrap();
        assert_eq!(d.score, r.score * 9.0, "{}", d.url);
    }
    let lonely_db = db.iter().find(|d| d.url == "http://lonely.test/").unwrap();
    assert!(lonely_db.score < 1.0, "{}", lonely_db.score);
    let meta_pr: trawl::graph::rows::PageRankMeta =
        parquet::read_json(&root.join("pagerank/_meta.json")).unwrap();
    assert_eq!(meta_pr.crawldb_scale, 9.0);
    assert!(root.join("crawldb/old/_SUCCESS").is_file());
    let meta: CrawlDbMeta = parquet::read_json(&root.join("crawldb/current/_meta.json")).unwrap();
    assert_eq!(
        (meta.partitions, meta.written_by.as_str()),
        (PARTS, "pagerank")
    );
    assert!(!root.join("crawldb/.lock").exists());

    let hits: Vec<HitsRecord> = parquet::read_dataset(&root.join("pagerank/hits")).unwrap();
    assert_eq!(hits.len(), 9);
    let auth = hits
        .iter()
        .max_by(|a, b| a.authority.total_cmp(&b.authority))
        .unwrap();
    assert_eq!(auth.url, "http://hub.test/");
    assert!((hits.iter().map(|h| h.hub).sum::<f64>() - 1.0).abs() < 1e-9);
    let hosts: Vec<HostRankRecord> = parquet::read_dataset(&root.join("pagerank/hosts")).unwrap();
    assert_eq!(hosts.len(), 5);
    assert!((hosts.iter().map(|h| h.score).sum::<f64>() - 1.0).abs() < 1e-9);
    let top = hosts
        .iter()
        .max_by(|a, b| a.score.total_cmp(&b.score))
        .unwrap();
    assert_eq!((top.host.as_str(), top.in_degree), ("hub.test", 3));
}

#[test]
fn pagerank_from_linkdb_with_seed_teleport_and_no_crawldb_update() {
    let tmp = crawl();
    let root = tmp.path();
    let out = run(common::bin("pagerank"), root, &["--source", "linkdb"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("run `linkdb` first"));
    ok(common::bin("linkdb"), root, &["--ignore-internal"]);
    let before: Vec<CrawlDatum> = parquet::read_dataset(&root.join("crawldb/current")).unwrap();
    let summary = ok(
        common::bin("pagerank"),
        root,
        &[
            "--source",
            "linkdb",
            "--teleport",
            "seeds",
            "--no-update-crawldb",
            "--damping",
            "0.5",
        ],
    );
    // Internal links are not in the linkdb: a/ -> a/x and hub/ -> hub/about are gone
    // (a/x stays: it links to other hosts); lonely.test/ is a node as a crawldb URL.
    assert!(summary.contains("6 nodes, 8 edges"), "{summary}");
    let rows = pagerank_rows(root);
    assert!((rows.iter().map(|r| r.score).sum::<f64>() - 1.0).abs() < 1e-9);
    let after: Vec<CrawlDatum> = parquet::read_dataset(&root.join("crawldb/current")).unwrap();
    assert_eq!(before, after);
    // Seed teleport: only a.test/ (the seed host's home page, the one depth-0 URL)
    // receives teleport mass, so pages without inlinks (c/, a/x) get only the uniformly
    // spread share of the dangling hub/.
    let score = |u: &str| rows.iter().find(|r| r.url == u).unwrap().score;
    let (a, ax, c, hub) = (
        score("http://a.test/"),
        score("http://a.test/x"),
        score("http://c.test/"),
        score("http://hub.test/"),
    );
    assert!(c > 0.0 && (c - ax).abs() < 1e-12, "{c} {ax}");
    assert!((score("http://lonely.test/") - c).abs() < 1e-12);
    assert!(a > hub && hub > 5.0 * c, "{a} {c} {hub}");
}

#[test]
fn pagerank_ignore_internal_equals_the_linkdb_graph() {
    let tmp = crawl();
    let root = tmp.path();
    // The page graph without same-host links is the graph of a linkdb that drops
    // them (`linkdb --ignore-internal`): same nodes, edges and scores.
    let summary = ok(
        common::bin("pagerank"),
        root,
        &["--ignore-internal", "--no-update-crawldb"],
    );
    assert!(summary.contains("6 nodes, 8 edges"), "{summary}");
    let crawl_rows = pagerank_rows(root);
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join("pagerank/_meta.json")).unwrap()).unwrap();
    assert_eq!(meta["ignore_internal"], true);
    ok(common::bin("linkdb"), root, &["--ignore-internal"]);
    ok(
        common::bin("pagerank"),
        root,
        &["--source", "linkdb", "--no-update-crawldb"],
    );
    let linkdb_rows = pagerank_rows(root);
    assert_eq!(crawl_rows.len(), 6);
    assert_eq!(crawl_rows, linkdb_rows);
    assert!(
        !crawl_rows
            .iter()
            .any(|r| r.url.starts_with("http://hub.test/a"))
    );
}
