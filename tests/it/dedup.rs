//! Runs the real `dedup` binary on a hand-built crawldb.

use crate::common;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use trawl::datum::{CrawlDatum, DbStatus};
use trawl::records::ParseDataRecord;
use trawl::store::layout::{CRAWLDB_META, CrawlDbMeta, CrawlDir, SegmentMeta};
use trawl::store::parquet::{self, PartWriter, StagedDataset};
use trawl::store::partition::Partitioner;

const PARTS: usize = 2;

fn datum(url: &str, status: DbStatus, sig: Option<&str>, score: f64) -> CrawlDatum {
    let mut d = CrawlDatum::unfetched(url.into(), trawl::urls::host_of(url), 0, 86400);
    d.status = status;
    d.signature = sig.map(str::to_string);
    d.score = score;
    d
}

fn parse_data(url: &str, simhash: u64) -> ParseDataRecord {
    ParseDataRecord {
        url: url.into(),
        status: "parse_success".into(),
        reason: "ok".into(),
        title: None,
        content_type: None,
        charset: None,
        charset_source: None,
        lang: None,
        canonical: None,
        noindex: false,
        nofollow: false,
        noarchive: false,
        outlinks: vec![],
        signature: None,
        simhash: Some(simhash),
        metadata: BTreeMap::new(),
    }
}

fn build(root: &Path) {
    let dir = CrawlDir::new(root);
    let rows = vec![
        datum("http://a.test/1", DbStatus::DbFetched, Some("s1"), 1.0),
        datum(
            "http://a.test/a-much-longer-url",
            DbStatus::DbFetched,
            Some("s1"),
            1.0,
        ),
        datum("http://b.test/x", DbStatus::DbNotmodified, Some("s1"), 2.0),
        datum("http://c.test/u", DbStatus::DbUnfetched, None, 5.0),
        datum("http://d.test/n1", DbStatus::DbFetched, Some("s2"), 0.5),
        datum("http://d.test/n2", DbStatus::DbFetched, Some("s3"), 0.4),
        datum("http://e.test/old", DbStatus::DbDuplicate, Some("s4"), 0.1),
    ];
    let mut by_part: Vec<Vec<CrawlDatum>> = vec![Vec::new(); PARTS];
    for r in rows {
        by_part[Partitioner::by_host(PARTS).of_host(&r.host)].push(r);
    }
    let staged = StagedDataset::new(&dir.crawldb_current()).unwrap();
    for (i, mut rows) in by_part.into_iter().enumerate() {
        rows.sort_by(|a, b| a.url.cmp(&b.url));
        let mut w = PartWriter::<CrawlDatum>::create(&staged.part_path(i)).unwrap();
        for r in rows {
            w.push(r).unwrap();
        }
        w.finish().unwrap();
    }
    let meta = CrawlDbMeta {
        partitions: PARTS,
        ..Default::default()
    };
    parquet::write_json(&staged.path().join(CRAWLDB_META), &meta).unwrap();
    staged.commit().unwrap();
    // A parsed segment with SimHashes: n1 and n2 are 2 bits apart.
    let seg = dir.segments_dir().join("20260101000000");
    std::fs::create_dir_all(&seg).unwrap();
    parquet::write_json(
        &seg.join("_meta.json"),
        &SegmentMeta {
            name: "20260101000000".into(),
            generated_time: 0,
            partitions: 1,
            partition_key: Default::default(),
            urls: 2,
            redirects_in_crawl_parse: false,
        },
    )
    .unwrap();
    let staged = StagedDataset::new(&seg.join("parse_data")).unwrap();
    let mut w = PartWriter::<ParseDataRecord>::create(&staged.part_path(0)).unwrap();
    w.push(parse_data("http://d.test/n1", 0xF0F0_1234_5678_9ABC))
        .unwrap();
    w.push(parse_data(
        "http://d.test/n2",
        0xF0F0_1234_5678_9ABC ^ 0b101,
    ))
    .unwrap();
    w.finish().unwrap();
    staged.commit().unwrap();
}

fn statuses(root: &Path) -> BTreeMap<String, DbStatus> {
    let dir = CrawlDir::new(root);
    let mut out = BTreeMap::new();
    for (i, part) in parquet::part_files(&dir.crawldb_current())
        .unwrap()
        .iter()
        .enumerate()
    {
        let rows = parquet::read_part_all::<CrawlDatum>(part).unwrap();
        let urls: Vec<&str> = rows.iter().map(|r| r.url.as_str()).collect();
        let mut sorted = urls.clone();
        sorted.sort();
        assert_eq!(urls, sorted, "part {i} stays sorted");
        for r in rows {
            assert_eq!(Partitioner::by_host(PARTS).of_host(&r.host), i);
            out.insert(r.url, r.status);
        }
    }
    out
}

fn dedup(root: &Path, extra: &[&str]) {
    let out = Command::new(common::bin("dedup"))
        .arg("--crawl-dir")
        .arg(root)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("dedup: 7 rows"));
}

#[test]
fn exact_then_near() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("crawl");
    build(&root);
    dedup(&root, &[]);
    let s = statuses(&root);
    assert_eq!(
        s["http://b.test/x"],
        DbStatus::DbNotmodified,
        "highest score wins"
    );
    assert_eq!(s["http://a.test/1"], DbStatus::DbDuplicate);
    assert_eq!(s["http://a.test/a-much-longer-url"], DbStatus::DbDuplicate);
    assert_eq!(s["http://c.test/u"], DbStatus::DbUnfetched);
    assert_eq!(s["http://d.test/n1"], DbStatus::DbFetched);
    assert_eq!(
        s["http://d.test/n2"],
        DbStatus::DbFetched,
        "no --near: different signatures stay"
    );
    assert_eq!(
        s["http://e.test/old"],
        DbStatus::DbFetched,
        "a lone former duplicate is restored"
    );
    assert!(
        CrawlDir::new(&root).crawldb_old().is_dir(),
        "previous version kept as old"
    );

    dedup(&root, &["--near"]);
    let s = statuses(&root);
    assert_eq!(s["http://d.test/n1"], DbStatus::DbFetched);
    assert_eq!(
        s["http://d.test/n2"],
        DbStatus::DbDuplicate,
        "2 bits apart, lower score"
    );
    assert_eq!(s["http://a.test/1"], DbStatus::DbDuplicate);
}

#[test]
fn near_respects_distance() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("crawl");
    build(&root);
    dedup(&root, &["--near", "--distance", "1"]);
    let s = statuses(&root);
    // 2 bits apart is beyond --distance 1.
    assert_eq!(s["http://d.test/n2"], DbStatus::DbFetched);
}
