//! Runs the real `dedup` binary on a hand-built crawldb.

use crate::common;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use trawl::datum::{CrawlDatum, DbStatus};
use trawl::records::ParseDataRecord;
use trawl::store::layout::CrawlDir;
use trawl::store::parquet;
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
        simhash: Some(simhash),
        ..common::parse_data_row(url)
    }
}

fn build(root: &Path) {
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
    // A parsed segment with SimHashes: n1 and n2 are 2 bits apart.
    let mut sims: Vec<Vec<ParseDataRecord>> = vec![Vec::new(); PARTS];
    let d = Partitioner::by_host(PARTS).of_host("d.test");
    sims[d].push(parse_data("http://d.test/n1", 0xF0F0_1234_5678_9ABC));
    sims[d].push(parse_data(
        "http://d.test/n2",
        0xF0F0_1234_5678_9ABC ^ 0b101,
    ));
    common::write_crawl(root, by_part, sims);
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

/// A crawl of 6 hosts x 60 pages in `parts` partitions whose pages come in 25
/// families: some members share their family's signature (exact copies), the others
/// have SimHashes 0 to 3 bits from the family's, so that near copies are joined
/// through pairs found in different buckets. Scores repeat, so the URL decides many
/// winners; some rows are former duplicates, some are unfetched or have no SimHash.
fn build_families(root: &Path, parts: usize) {
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let bases: Vec<u64> = (0..25).map(|_| next()).collect();
    let pt = Partitioner::by_host(parts);
    let mut rows: Vec<Vec<CrawlDatum>> = vec![Vec::new(); parts];
    let mut sims: Vec<Vec<ParseDataRecord>> = vec![Vec::new(); parts];
    for h in 0..6 {
        for p in 0..60 {
            let url = format!(
                "http://h{h}.test/{}",
                "p".repeat(1 + (p % 3)) + &p.to_string()
            );
            let family = (next() % 25) as usize;
            let r = next();
            let signature = if r % 3 == 0 {
                format!("family{family}")
            } else {
                format!("page{h}-{p}")
            };
            let status = match r % 11 {
                0 => DbStatus::DbUnfetched,
                1 | 2 => DbStatus::DbDuplicate,
                3 => DbStatus::DbNotmodified,
                _ => DbStatus::DbFetched,
            };
            let sig = (status != DbStatus::DbUnfetched).then_some(signature.as_str());
            let d = datum(&url, status, sig, ((r >> 8) % 4) as f64 * 0.5);
            let i = pt.of_host(&d.host);
            if (r >> 16) % 7 != 0 {
                let mut hash = bases[family];
                for _ in 0..(r >> 24) % 4 {
                    hash ^= 1 << (next() % 64);
                }
                sims[i].push(parse_data(&url, hash));
            }
            rows[i].push(d);
        }
    }
    common::write_crawl(root, rows, sims);
}

/// Every crawldb row's status.
fn all_statuses(root: &Path) -> BTreeMap<String, DbStatus> {
    let dir = CrawlDir::new(root);
    let mut out = BTreeMap::new();
    for part in parquet::part_files(&dir.crawldb_current()).unwrap() {
        for r in parquet::read_part_all::<CrawlDatum>(&part).unwrap() {
            out.insert(r.url, r.status);
        }
    }
    out
}

/// Runs `dedup --crawl-dir root args`; returns its summary's counts (without the time).
fn dedup_counts(root: &Path, args: &[&str]) -> String {
    let out = Command::new(common::bin("dedup"))
        .arg("--crawl-dir")
        .arg(root)
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "dedup {args:?}: {err}");
    err.lines()
        .filter_map(|l| l.strip_prefix("dedup: "))
        .filter_map(|l| l.rsplit_once(" in "))
        .map(|(counts, _)| counts.to_string())
        .next_back()
        .unwrap_or_default()
}

#[test]
fn as_partition_tasks_the_verdicts_equal_one_process_dedup() {
    const N: usize = 4;
    for flags in [&[][..], &["--near"][..], &["--near", "--distance", "1"][..]] {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        build_families(&a, N);
        build_families(&b, N);
        assert_eq!(all_statuses(&a), all_statuses(&b));
        let want = dedup_counts(&a, flags);
        eprintln!("dedup {flags:?}: {want}");

        let job = "j1";
        let task = |pass: &str, set: &str, attempt: &str| {
            let mut args = flags.to_vec();
            args.extend([
                "--job",
                job,
                "--pass",
                pass,
                "--partitions",
                set,
                "--attempt",
                attempt,
            ]);
            dedup_counts(&b, &args)
        };
        for set in ["0", "1-3"] {
            task("keys", set, "k-1");
        }
        // Buckets in other sets than the keys' partitions, and a zombie's late twin.
        for set in ["0-1", "2", "3"] {
            task("groups", set, "g-1");
        }
        task("groups", "2", "g-0-zombie");
        task("resolve", "all", "r-1");
        for set in ["0-2", "3"] {
            task("rewrite", set, "w-1");
        }
        let mut commit = flags.to_vec();
        commit.extend(["--job", job, "--commit"]);
        let got = dedup_counts(&b, &commit);
        assert_eq!(got, want, "{flags:?}: the tasks' counts");
        let (sa, sb) = (all_statuses(&a), all_statuses(&b));
        assert_eq!(sb, sa, "{flags:?}: the tasks' verdicts");
        let dups = sa.values().filter(|s| **s == DbStatus::DbDuplicate).count();
        assert!(
            dups > 20,
            "{flags:?}: a real test: {dups} duplicates, {want}"
        );
        if flags.contains(&"--near") && flags.len() == 1 {
            let pairs: u64 = want
                .rsplit_once(", ")
                .and_then(|(_, p)| p.strip_suffix(" near pairs"))
                .and_then(|p| p.parse().ok())
                .unwrap_or(0);
            assert!(pairs > 10, "near pairs joined groups: {want}");
        }
        assert!(
            !b.join("_jobs").join(job).exists(),
            "the commit removed the job"
        );
    }
}

#[test]
fn a_task_pass_run_with_other_flags_than_the_keys_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("crawl");
    build_families(&root, 2);
    let run = |args: &[&str]| {
        Command::new(common::bin("dedup"))
            .arg("--crawl-dir")
            .arg(&root)
            .args(args)
            .output()
            .unwrap()
    };
    let keys = run(&[
        "--near",
        "--job",
        "j",
        "--pass",
        "keys",
        "--partitions",
        "all",
        "--attempt",
        "1",
    ]);
    assert!(keys.status.success());
    let groups = run(&[
        "--job",
        "j",
        "--pass",
        "groups",
        "--partitions",
        "all",
        "--attempt",
        "1",
    ]);
    let err = String::from_utf8_lossy(&groups.stderr);
    assert!(!groups.status.success());
    assert!(
        err.contains("--pass groups") && err.contains("same --near"),
        "{err}"
    );
    let resolve = run(&[
        "--near",
        "--job",
        "j",
        "--pass",
        "resolve",
        "--partitions",
        "0",
        "--attempt",
        "1",
    ]);
    let err = String::from_utf8_lossy(&resolve.stderr);
    assert!(!resolve.status.success());
    assert!(err.contains("--partitions all"), "{err}");
}
