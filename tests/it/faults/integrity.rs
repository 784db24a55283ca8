//! Faults: integrity. Every dataset's `_SUCCESS` is a manifest (each part's name,
//! rows, bytes, blake3); a missing, added or resized part is refused by every
//! stage that reads the dataset, and a flipped byte by every stage that rewrites
//! from it, with exit code 7, a message naming the file and the way back, and
//! nothing in the crawl directory changed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::*;

const WEB: &[&str] = &["--seed", "5", "--hosts", "3", "--pages", "12"];
const CORRUPT: i32 = 7;

/// A crawl of the test web: two full rounds (so crawldb/old and linkdb/old exist),
/// the segments in order.
struct Crawl {
    _tmp: tempfile::TempDir,
    web: TestWeb,
    dir: PathBuf,
    config: PathBuf,
    crawl: PathBuf,
    segments: Vec<String>,
}

impl Crawl {
    fn two_rounds() -> Crawl {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let web = TestWeb::start(&dir, WEB);
        let config = write_config(&dir, &web.addr, 0.0, "");
        let crawl = dir.join("crawl");
        let seeds: Vec<String> = (0..3)
            .map(|h| format!("http://site{h}.web.test/"))
            .collect();
        inject_seeds(&dir, &crawl, &config, &seeds);
        let mut segments = Vec::new();
        for _ in 0..2 {
            segments.push(round(&crawl, &config).expect("URLs due"));
        }
        assert!(crawl.join("crawldb/old/_SUCCESS").is_file());
        assert!(crawl.join("linkdb/old/_SUCCESS").is_file());
        Crawl {
            _tmp: tmp,
            web,
            dir,
            config,
            crawl,
            segments,
        }
    }

    /// generate, fetch and parse a third segment (not applied, not inverted).
    fn fetched_and_parsed_segment(&mut self) -> String {
        let seg = generate_segment(&self.crawl, &self.config);
        fetch_ok(&self.crawl, &self.config, &seg);
        run_ok("parse", &self.crawl, &self.config, &[&seg]);
        self.segments.push(seg.clone());
        seg
    }

    fn run(&self, stage: &str, args: &[&str]) -> Output {
        if stage != "warc" {
            return run(stage, &self.crawl, &self.config, args);
        }
        std::process::Command::new(crate::common::bin("warc"))
            .arg("--crawl-dir")
            .arg(&self.crawl)
            .arg("--config")
            .arg(&self.config)
            .args(args)
            .env_remove("TRAWL_CONFIG")
            .env_remove("TRAWL_CRAWL_DIR")
            .env("RUST_LOG", "warn")
            .output()
            .unwrap()
    }

    fn seeds(&self) -> String {
        self.dir.join("seeds.txt").display().to_string()
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Asserts nothing under `dir` changed since `before` (names and bytes).
fn assert_unchanged(dir: &Path, before: &BTreeMap<PathBuf, Vec<u8>>, what: &str) {
    let after = snapshot(dir);
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>(),
        "{what}: files changed"
    );
    for ((n, a), b) in after.iter().zip(before.values()) {
        assert!(a == b, "{what}: {} changed", n.display());
    }
}

/// The manifest of a dataset directory (panics on a plain marker).
fn manifest(dataset: &Path) -> trawl::store::integrity::Manifest {
    trawl::store::integrity::read(dataset)
        .unwrap()
        .unwrap_or_else(|| panic!("{} has no manifest", dataset.display()))
}

/// The name of the part with the most rows.
fn fullest_part(dataset: &Path) -> String {
    let m = manifest(dataset);
    let p = m.parts.iter().max_by_key(|p| p.rows).unwrap();
    assert!(p.rows > 0, "{} is empty", dataset.display());
    p.name.clone()
}

/// Flips one bit of the byte in the middle of `file` (its size is unchanged).
fn flip_byte(file: &Path) -> Vec<u8> {
    let orig = std::fs::read(file).unwrap();
    let mut b = orig.clone();
    let mid = b.len() / 2;
    b[mid] ^= 0x10;
    std::fs::write(file, &b).unwrap();
    orig
}

/// Asserts `out` is a refusal with exit code 7 whose message names `needle`.
fn assert_refused(out: &Output, stage: &str, needles: &[&str]) {
    let err = stderr(out);
    assert_eq!(
        out.status.code(),
        Some(CORRUPT),
        "{stage} must exit 7 (corrupt):\n{err}"
    );
    assert!(err.contains("integrity:"), "{stage}:\n{err}");
    for n in needles {
        assert!(err.contains(n), "{stage}: message lacks {n:?}:\n{err}");
    }
}

#[test]
fn a_missing_crawldb_part_is_refused_by_every_stage_and_old_is_untouched() {
    let c = Crawl::two_rounds();
    let current = c.crawl.join("crawldb/current");
    let old = c.crawl.join("crawldb/old");
    let part = fullest_part(&current);
    let rows_old = manifest(&old).rows();
    std::fs::remove_file(current.join(&part)).unwrap();
    let before = snapshot(&c.crawl);

    let missing = format!("{part} is missing");
    let mv = format!(
        "mv {} {}.damaged && mv {} {}",
        current.display(),
        current.display(),
        old.display(),
        current.display()
    );
    let seeds = c.seeds();
    let seg0 = c.segments[0].clone();
    let stages: &[(&str, Vec<&str>)] = &[
        ("generate", vec![]),
        ("updatedb", vec![]),
        ("readdb", vec!["--stats"]),
        ("readdb", vec!["--dump"]),
        ("inject", vec![&seeds]),
        ("dedup", vec![]),
        ("pagerank", vec![]),
        ("sitemap", vec![]),
        ("prunesegs", vec!["--dry-run"]),
        ("mergesegs", vec![&seg0]),
    ];
    for (stage, args) in stages {
        let out = c.run(stage, args);
        assert_refused(&out, stage, &[&missing, &mv, "crawldb/old"]);
        assert!(
            out.stdout.is_empty(),
            "{stage} printed rows: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert_unchanged(&c.crawl, &before, stage);
    }

    // The way back the message gives works: old becomes current, and is whole.
    std::fs::rename(&current, c.crawl.join("crawldb/current.damaged")).unwrap();
    std::fs::rename(&old, &current).unwrap();
    let stats = String::from_utf8_lossy(&c.run("readdb", &["--dump"]).stdout).into_owned();
    assert_eq!(stats.lines().count() as u64, rows_old);
    run_ok("pagerank", &c.crawl, &c.config, &[]);
}

#[test]
fn a_flipped_byte_in_the_crawldb_is_refused_by_every_stage_that_rewrites_it() {
    let mut c = Crawl::two_rounds();
    let seg = c.fetched_and_parsed_segment();
    let current = c.crawl.join("crawldb/current");
    let part = fullest_part(&current);
    let orig = flip_byte(&current.join(&part));
    let before = snapshot(&c.crawl);

    let seeds = c.seeds();
    let stages: &[(&str, Vec<&str>)] = &[
        ("updatedb", vec![&seg]),
        ("inject", vec![&seeds]),
        ("dedup", vec![]),
        ("pagerank", vec![]),
        ("sitemap", vec![]),
    ];
    for (stage, args) in stages {
        let out = c.run(stage, args);
        assert_refused(
            &out,
            stage,
            &[
                &format!("{part} has blake3"),
                "crawldb/old",
                "content changed",
            ],
        );
        assert_unchanged(&c.crawl, &before, stage);
    }

    // With the byte restored, the same updatedb applies the segment.
    std::fs::write(current.join(&part), orig).unwrap();
    run_ok("updatedb", &c.crawl, &c.config, &[&seg]);
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(current.join("_meta.json")).unwrap()).unwrap();
    assert!(
        meta["applied_segments"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| seg.ends_with(s.as_str().unwrap()))
    );
}

#[test]
fn a_flipped_byte_in_the_linkdb_parse_inlinks_or_parse_data_is_refused_by_linkdb_pagerank_and_dedup()
 {
    let mut c = Crawl::two_rounds();
    let seg = c.fetched_and_parsed_segment();

    // The linkdb: linkdb (which rewrites it from itself) refuses; linkdb/old is intact.
    let lcur = c.crawl.join("linkdb/current");
    let lpart = fullest_part(&lcur);
    let orig = flip_byte(&lcur.join(&lpart));
    let before = snapshot(&c.crawl);
    let out = c.run("linkdb", &[]);
    assert_refused(
        &out,
        "linkdb",
        &[&format!("{lpart} has blake3"), "linkdb/old"],
    );
    assert_unchanged(&c.crawl, &before, "linkdb");
    std::fs::write(lcur.join(&lpart), orig).unwrap();

    // parse_inlinks of the new segment (the outlinks linkdb inverts): linkdb refuses.
    let pinl = Path::new(&seg).join("parse_inlinks");
    let ipart = fullest_part(&pinl);
    let orig = flip_byte(&pinl.join(&ipart));
    let before = snapshot(&c.crawl);
    let out = c.run("linkdb", &[]);
    assert_refused(&out, "linkdb", &[&format!("{ipart} has blake3")]);
    assert_unchanged(&c.crawl, &before, "linkdb");
    std::fs::write(pinl.join(&ipart), orig).unwrap();

    // parse_data of the new segment: everything that turns it into stored data refuses.
    let pdata = Path::new(&seg).join("parse_data");
    let ppart = fullest_part(&pdata);
    let orig = flip_byte(&pdata.join(&ppart));
    let before = snapshot(&c.crawl);
    for (stage, args) in [("pagerank", vec![]), ("dedup", vec!["--near"])] {
        let out = c.run(stage, &args);
        assert_refused(
            &out,
            stage,
            &[&format!("{ppart} has blake3"), "parse --reparse"],
        );
        assert_unchanged(&c.crawl, &before, stage);
    }
    std::fs::write(pdata.join(&ppart), orig).unwrap();
    let out = run_ok("linkdb", &c.crawl, &c.config, &[]);
    assert!(out.is_empty() || !out.contains("integrity"));
    run_ok("pagerank", &c.crawl, &c.config, &[]);
}

#[test]
fn altered_segment_datasets_are_refused_by_the_stages_that_read_them() {
    let c = Crawl::two_rounds();
    // A third segment, generated but not fetched yet.
    let seg = generate_segment(&c.crawl, &c.config);
    let gen_ds = Path::new(&seg).join("crawl_generate");
    let gpart = fullest_part(&gen_ds);
    let orig = flip_byte(&gen_ds.join(&gpart));
    let before = snapshot(&c.crawl);
    let t0 = trawl::datum::now_millis();
    let out = c.run("fetch", &[&seg]);
    assert_refused(
        &out,
        "fetch",
        &[&format!("{gpart} has blake3"), "remove the segment"],
    );
    assert_unchanged(&c.crawl, &before, "fetch");
    std::fs::write(gen_ds.join(&gpart), orig).unwrap();
    fetch_ok(&c.crawl, &c.config, &seg);

    // content: a part missing is refused by parse and warc.
    let content = Path::new(&seg).join("content");
    let cpart = fullest_part(&content);
    let saved = std::fs::read(content.join(&cpart)).unwrap();
    std::fs::remove_file(content.join(&cpart)).unwrap();
    let before = snapshot(&c.crawl);
    let warc_out = c.dir.join("warc-out");
    for (stage, args) in [
        ("parse", vec![seg.as_str()]),
        (
            "warc",
            vec![seg.as_str(), "--out", warc_out.to_str().unwrap()],
        ),
        (
            "readseg",
            vec!["--dump", seg.as_str(), "--dataset", "content"],
        ),
    ] {
        let out = c.run(stage, &args);
        assert_refused(
            &out,
            stage,
            &[
                &format!("{cpart} is missing"),
                "Segment datasets have no previous version",
            ],
        );
        assert_unchanged(&c.crawl, &before, stage);
    }
    assert!(!warc_out.exists() || std::fs::read_dir(&warc_out).unwrap().next().is_none());
    std::fs::write(content.join(&cpart), saved).unwrap();
    run_ok("parse", &c.crawl, &c.config, &[&seg]);

    // crawl_parse with an extra part and crawl_fetch resized: updatedb refuses both.
    let cp = Path::new(&seg).join("crawl_parse");
    let cppart = fullest_part(&cp);
    std::fs::copy(cp.join(&cppart), cp.join("part-00099.parquet")).unwrap();
    let before = snapshot(&c.crawl);
    let out = c.run("updatedb", &[&seg]);
    assert_refused(
        &out,
        "updatedb",
        &["part-00099.parquet is not listed in the manifest"],
    );
    assert_unchanged(&c.crawl, &before, "updatedb");
    std::fs::remove_file(cp.join("part-00099.parquet")).unwrap();

    let cf = Path::new(&seg).join("crawl_fetch");
    let cfpart = fullest_part(&cf);
    let saved = std::fs::read(cf.join(&cfpart)).unwrap();
    std::fs::write(cf.join(&cfpart), &saved[..saved.len() - 10]).unwrap();
    let before = snapshot(&c.crawl);
    let out = c.run("updatedb", &[&seg]);
    assert_refused(
        &out,
        "updatedb",
        &[&format!("{cfpart} is {} bytes", saved.len() - 10)],
    );
    assert_unchanged(&c.crawl, &before, "updatedb");
    std::fs::write(cf.join(&cfpart), saved).unwrap();
    run_ok("updatedb", &c.crawl, &c.config, &[&seg]);

    // The refused fetch sent nothing: every request of the third segment's fetch
    // came after the refusal, and no URL was fetched twice in that fetch.
    let t1 = trawl::datum::now_millis();
    let log = c.web.stop();
    let third: Vec<_> = log
        .iter()
        .filter(|l| l.time_ms >= t0 && l.time_ms <= t1)
        .collect();
    let mut paths: Vec<(String, String)> = third
        .iter()
        .map(|l| (l.host.clone(), l.path.clone()))
        .collect();
    let n = paths.len();
    paths.sort();
    paths.dedup();
    assert_eq!(paths.len(), n, "a URL was requested twice");
    assert!(n > 0);
}

#[test]
fn every_dataset_records_its_parts_and_the_manifest_matches_the_files() {
    let mut c = Crawl::two_rounds();
    c.fetched_and_parsed_segment();
    let mut datasets = vec![
        c.crawl.join("crawldb/current"),
        c.crawl.join("crawldb/old"),
        c.crawl.join("linkdb/current"),
        c.crawl.join("linkdb/old"),
        c.crawl.join("pagerank"),
    ];
    for s in &c.segments {
        for d in [
            "crawl_generate",
            "crawl_fetch",
            "content",
            "parse_text",
            "parse_data",
            "crawl_parse",
            "robots",
        ] {
            datasets.push(Path::new(s).join(d));
        }
    }
    for d in &datasets {
        let m = manifest(d);
        assert_eq!(m.format, trawl::store::integrity::MANIFEST_FORMAT);
        let mut on_disk: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".parquet"))
            .collect();
        on_disk.sort();
        let listed: Vec<String> = m.parts.iter().map(|p| p.name.clone()).collect();
        assert_eq!(listed, on_disk, "{}", d.display());
        assert!(!listed.is_empty(), "{}", d.display());
        for p in &m.parts {
            let bytes = std::fs::read(d.join(&p.name)).unwrap();
            assert_eq!(p.bytes, bytes.len() as u64, "{}/{}", d.display(), p.name);
            // What `b3sum` prints for the file.
            assert_eq!(p.blake3, blake3::hash(&bytes).to_hex().to_string());
            let reader = parquet::file::serialized_reader::SerializedFileReader::new(
                bytes::Bytes::from(bytes),
            )
            .unwrap();
            use parquet::file::reader::FileReader;
            assert_eq!(
                p.rows,
                reader.metadata().file_metadata().num_rows() as u64,
                "{}/{}",
                d.display(),
                p.name
            );
        }
    }
    // The rows of the crawldb's manifest are readdb's count.
    let dump = run_ok("readdb", &c.crawl, &c.config, &["--dump"]);
    assert_eq!(
        dump.lines().count() as u64,
        manifest(&c.crawl.join("crawldb/current")).rows()
    );
}

#[test]
fn a_crawldb_without_a_manifest_is_read_with_a_warning_and_gains_one_when_rewritten() {
    let c = Crawl::two_rounds();
    let current = c.crawl.join("crawldb/current");
    let rows = manifest(&current).rows();
    let part = fullest_part(&current);

    // A crawldb written before manifests: read, with one warning, then upgraded.
    std::fs::write(current.join("_SUCCESS"), "2025-01-01T00:00:00+00:00\n").unwrap();
    let out = c.run("readdb", &["--dump"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().count() as u64,
        rows
    );
    assert_eq!(
        stderr(&out)
            .matches("written before trawl kept manifests")
            .count(),
        1,
        "{}",
        stderr(&out)
    );
    run_ok("inject", &c.crawl, &c.config, &[&c.seeds()]);
    assert_eq!(manifest(&current).rows(), rows);

    // Without a manifest, a missing part is still caught by the part count.
    std::fs::write(current.join("_SUCCESS"), "2025-01-01T00:00:00+00:00\n").unwrap();
    std::fs::remove_file(current.join(&part)).unwrap();
    let before = snapshot(&c.crawl);
    for stage in ["readdb", "generate"] {
        let args: Vec<&str> = if stage == "readdb" {
            vec!["--stats"]
        } else {
            vec![]
        };
        let out = c.run(stage, &args);
        assert_refused(
            &out,
            stage,
            &["_meta.json says 4 partitions", &format!("missing: {part}")],
        );
        assert_unchanged(&c.crawl, &before, stage);
    }

    // A current/ whose _SUCCESS was deleted is not "no crawldb": inject refuses
    // instead of replacing old/ with it.
    std::fs::remove_file(current.join("_SUCCESS")).unwrap();
    let before = snapshot(&c.crawl);
    let out = c.run("inject", &[&c.seeds()]);
    assert_refused(&out, "inject", &["no _SUCCESS manifest", "crawldb/old"]);
    assert_unchanged(&c.crawl, &before, "inject");
}
