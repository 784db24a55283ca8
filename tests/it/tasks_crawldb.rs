//! The crawldb stages (inject, generate, updatedb, pagerank, dedup) run as partition
//! tasks plus a commit, over the local test web: uneven partition sets, a task run
//! twice (a zombie and its retry), an attempt killed mid-write, and the crawldb equal
//! to a one-process crawl of the same web. Commit refusals leave everything unchanged.

use crate::common;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use common::*;

/// The test web (after `seeds`, the subcommand that writes its seed list).
const WEB: &[&str] = &["seeds", "--seed", "42", "--hosts", "8", "--pages", "12"];

/// Partition sets of the tasks: uneven, covering 0..8.
const SETS: &[&str] = &["0-2", "3", "4-7"];

fn out_text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs `stage args --job job --partitions pset --attempt attempt [extra]`.
fn task(
    stage: &str,
    crawl: &Path,
    config: &Path,
    args: &[&str],
    job: &str,
    pset: &str,
    attempt: &str,
) -> Output {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--job", job, "--partitions", pset, "--attempt", attempt]);
    run(stage, crawl, config, &all)
}

fn task_ok(
    stage: &str,
    crawl: &Path,
    config: &Path,
    args: &[&str],
    job: &str,
    pset: &str,
    attempt: &str,
) -> Output {
    let o = task(stage, crawl, config, args, job, pset, attempt);
    assert!(
        o.status.success(),
        "{stage} task {pset}/{attempt}: {}",
        out_text(&o)
    );
    o
}

/// Runs `stage args --job job --commit`.
fn commit(stage: &str, crawl: &Path, config: &Path, args: &[&str], job: &str) -> Output {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--job", job, "--commit"]);
    run(stage, crawl, config, &all)
}

fn commit_ok(stage: &str, crawl: &Path, config: &Path, args: &[&str], job: &str) -> String {
    let o = commit(stage, crawl, config, args, job);
    assert!(o.status.success(), "{stage} commit: {}", out_text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The tasks of one pass over [`SETS`], `extra` appended to each (`--pass P`); the
/// set `3` also runs as a second attempt (a zombie finishing after its retry).
fn tasks_over_sets(
    stage: &str,
    crawl: &Path,
    config: &Path,
    args: &[&str],
    job: &str,
    extra: &[&str],
) {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(extra);
    for set in SETS {
        task_ok(
            stage,
            crawl,
            config,
            &all,
            job,
            set,
            &format!("{stage}-{set}-1"),
        );
    }
    // The zombie: the first attempt of set 3 ends after its retry.
    task_ok(stage, crawl, config, &all, job, "3", "0-zombie");
}

/// pagerank's partition tasks over [`SETS`] (zombies included) through the
/// binary, as a driver runs them ([`pagerank_as_tasks`]).
fn pagerank_tasks(crawl: &Path, config: &Path, job: &str) -> usize {
    pagerank_as_tasks(crawl, config, job, &|flags| {
        tasks_over_sets("pagerank", crawl, config, &[], job, flags)
    })
}

/// What the comparison covers of a crawldb row: everything but the times that
/// depend on when each crawl ran.
#[derive(Debug, PartialEq)]
struct Row {
    status: String,
    signature: Option<String>,
    score: f64,
    depth: i32,
    retries: i32,
    fetch_interval: i64,
    http_status: Option<i32>,
    reason: Option<String>,
    redirect_target: Option<String>,
    fetched: bool,
}

fn rows(crawl: &Path) -> BTreeMap<String, Row> {
    crawldb(crawl)
        .into_iter()
        .map(|(url, d)| {
            (
                url,
                Row {
                    status: d.status.as_str().to_string(),
                    signature: d.signature,
                    score: d.score,
                    depth: d.depth,
                    retries: d.retries,
                    fetch_interval: d.fetch_interval,
                    http_status: d.http_status,
                    reason: d.reason,
                    redirect_target: d.redirect_target,
                    fetched: d.fetched_time.is_some(),
                },
            )
        })
        .collect()
}

fn assert_same_crawldb(a: &Path, b: &Path, when: &str) {
    let (ra, rb) = (rows(a), rows(b));
    assert_eq!(
        ra.keys().collect::<Vec<_>>(),
        rb.keys().collect::<Vec<_>>(),
        "{when}: URLs differ"
    );
    for (url, x) in &ra {
        let y = &rb[url];
        // Scores are sums of shares and PageRank: equal up to float rounding order.
        let close = (x.score - y.score).abs() <= 1e-9 * x.score.abs().max(1.0);
        assert!(close, "{when}: {url}: score {} vs {}", x.score, y.score);
        assert_eq!(
            (
                &x.status,
                &x.signature,
                x.depth,
                x.retries,
                x.fetch_interval
            ),
            (
                &y.status,
                &y.signature,
                y.depth,
                y.retries,
                y.fetch_interval
            ),
            "{when}: {url}"
        );
        assert_eq!(
            (&x.http_status, &x.reason, &x.redirect_target, x.fetched),
            (&y.http_status, &y.reason, &y.redirect_target, y.fetched),
            "{when}: {url}"
        );
    }
    // Each part holds the same URLs in both crawls (partitioned alike).
    let parts = |c: &Path| -> Vec<Vec<String>> {
        trawl::store::parquet::part_files(&c.join("crawldb/current"))
            .unwrap()
            .iter()
            .map(|p| {
                trawl::store::parquet::read_part_all::<trawl::CrawlDatum>(p)
                    .unwrap()
                    .into_iter()
                    .map(|d| d.url)
                    .collect()
            })
            .collect()
    };
    assert_eq!(parts(a), parts(b), "{when}: parts differ");
}

/// The fetch list of a segment: per part, its URLs in order.
fn fetch_list(segment: &Path) -> Vec<Vec<String>> {
    trawl::store::parquet::part_files(&segment.join("crawl_generate"))
        .unwrap()
        .iter()
        .map(|p| {
            trawl::store::parquet::read_part_all::<trawl::CrawlDatum>(p)
                .unwrap()
                .into_iter()
                .map(|d| d.url)
                .collect()
        })
        .collect()
}

/// The crawldb's files with their bytes (what a refused commit must not change).
fn crawldb_snapshot(crawl: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    snapshot(&crawl.join("crawldb"))
        .into_iter()
        .filter(|(p, _)| !p.to_string_lossy().ends_with(".lock"))
        .collect()
}

/// Every `.tmp-` directory under `dir`.
fn tmp_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                if p.file_name().unwrap().to_string_lossy().contains(".tmp-") {
                    out.push(p.clone());
                }
                todo.push(p);
            }
        }
    }
    out
}

/// Starts an updatedb task that pauses after writing its parts, and kills it there:
/// its attempt stays a `.tmp-` directory.
fn killed_attempt(crawl: &Path, config: &Path, segment: &str, job: &str) {
    let mut cmd = stage_command(
        bin("updatedb"),
        crawl,
        config,
        &[
            segment,
            "--job",
            job,
            "--partitions",
            "4-7",
            "--attempt",
            "killed",
        ],
    );
    cmd.env("TRAWL_TEST_PAUSE_SEGTOOLS", "task:written:30");
    let mut child = cmd.spawn().unwrap();
    let started = Instant::now();
    let jobdir = crawl.join("_jobs").join(job);
    loop {
        let found = tmp_dirs(&jobdir)
            .iter()
            .any(|p| p.to_string_lossy().contains("killed") && p.join("crawldb").is_dir());
        if found {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the killed attempt never started writing"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Let it write its parts, then kill it mid-attempt.
    std::thread::sleep(Duration::from_millis(500));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        tmp_dirs(&jobdir)
            .iter()
            .any(|p| p.to_string_lossy().contains("killed")),
        "the killed attempt left no .tmp- directory"
    );
}

struct Crawl {
    a: PathBuf,
    b: PathBuf,
    cfg: PathBuf,
}

/// A round on both crawls: `a` one process, `b` as tasks.
fn round_both(c: &Crawl, r: usize) -> bool {
    // generate
    let out = run("generate", &c.a, &c.cfg, &[]);
    if out.status.code() == Some(3) {
        return false;
    }
    assert!(out.status.success(), "generate: {}", out_text(&out));
    let seg_a = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let job = format!("r{r}-generate");
    tasks_over_sets(
        "generate",
        &c.b,
        &c.cfg,
        &[],
        &job,
        &["--pass", "histogram"],
    );
    run_ok("generate", &c.b, &c.cfg, &["--job", &job, "--cutoff"]);
    // Without a per-domain cap the cut-off is ranges of each partition's candidates,
    // not the lists' rows: its size does not grow with the lists.
    let cut: serde_json::Value = serde_json::from_slice(
        &std::fs::read(c.b.join("_jobs").join(&job).join("cutoff.json")).unwrap(),
    )
    .unwrap();
    let ranges = &cut["selection"]["prefixes"]["ranges"];
    assert!(ranges.is_array(), "ranges in the cut-off: {cut}");
    assert!(
        ranges
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l.as_array().unwrap().len() == 8),
        "one range per partition and list: {cut}"
    );
    tasks_over_sets("generate", &c.b, &c.cfg, &[], &job, &["--pass", "select"]);
    let seg_b = commit_ok("generate", &c.b, &c.cfg, &[], &job)
        .trim()
        .to_string();
    assert!(
        !c.b.join("_jobs").join(&job).exists(),
        "the job was not removed"
    );
    assert_eq!(
        fetch_list(Path::new(&seg_a)),
        fetch_list(Path::new(&seg_b)),
        "round {r}: the task path selected other URLs than one-process generate"
    );
    for (crawl, seg) in [(&c.a, &seg_a), (&c.b, &seg_b)] {
        run_ok("fetch", crawl, &c.cfg, &[seg]);
        run_ok("parse", crawl, &c.cfg, &[seg]);
    }
    // updatedb: a zombie attempt, and (round 1) an attempt killed mid-write.
    run_ok("updatedb", &c.a, &c.cfg, &[&seg_a]);
    let job = format!("r{r}-updatedb");
    if r == 1 {
        killed_attempt(&c.b, &c.cfg, &seg_b, &job);
    }
    tasks_over_sets("updatedb", &c.b, &c.cfg, &[&seg_b], &job, &[]);
    let o = commit("updatedb", &c.b, &c.cfg, &[&seg_b], &job);
    assert!(o.status.success(), "updatedb commit: {}", out_text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("updatedb: applied ["), "{err}");
    assert_same_crawldb(&c.a, &c.b, &format!("round {r} after updatedb"));
    for crawl in [&c.a, &c.b] {
        run_ok("linkdb", crawl, &c.cfg, &[]);
    }
    // pagerank: round 1 as the scores pass (one task over the whole graph), round 2
    // as the iteration's partition tasks.
    run_ok("pagerank", &c.a, &c.cfg, &[]);
    let job = format!("r{r}-pagerank");
    if r == 1 {
        task_ok(
            "pagerank",
            &c.b,
            &c.cfg,
            &["--pass", "scores"],
            &job,
            "all",
            "s-1",
        );
        tasks_over_sets("pagerank", &c.b, &c.cfg, &[], &job, &["--pass", "rewrite"]);
        commit_ok("pagerank", &c.b, &c.cfg, &[], &job);
    } else {
        pagerank_tasks(&c.b, &c.cfg, &job);
    }
    assert_same_crawldb(&c.a, &c.b, &format!("round {r} after pagerank"));
    let (pa, pb) = (pagerank_rows(&c.a), pagerank_rows(&c.b));
    if r == 1 {
        assert_eq!(pa, pb, "round {r}: pagerank/ differs");
    } else {
        assert_same_pagerank(&pa, &pb, &format!("round {r}"));
        let meta = |crawl: &Path| -> serde_json::Value {
            serde_json::from_slice(&std::fs::read(crawl.join("pagerank/_meta.json")).unwrap())
                .unwrap()
        };
        let (ma, mb) = (meta(&c.a), meta(&c.b));
        for key in [
            "nodes",
            "edges",
            "iterations",
            "partitions",
            "crawldb_scale",
        ] {
            assert_eq!(ma[key], mb[key], "round {r}: pagerank/_meta.json {key}");
        }
    }
    // dedup: the decision as partition tasks (keys, groups over buckets, resolve),
    // then the rewrite tasks; equal to the one-process decision in memory.
    let one = run("dedup", &c.a, &c.cfg, &[]);
    assert!(one.status.success(), "{}", out_text(&one));
    let job = format!("r{r}-dedup");
    tasks_over_sets("dedup", &c.b, &c.cfg, &[], &job, &["--pass", "keys"]);
    tasks_over_sets("dedup", &c.b, &c.cfg, &[], &job, &["--pass", "groups"]);
    task_ok(
        "dedup",
        &c.b,
        &c.cfg,
        &["--pass", "resolve"],
        &job,
        "all",
        "s-1",
    );
    tasks_over_sets("dedup", &c.b, &c.cfg, &[], &job, &["--pass", "rewrite"]);
    let o = commit("dedup", &c.b, &c.cfg, &[], &job);
    assert!(o.status.success(), "dedup commit: {}", out_text(&o));
    let counts = |o: &Output| {
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        err.lines()
            .find_map(|l| l.strip_prefix("dedup: "))
            .and_then(|l| l.rsplit_once(" in "))
            .map(|(counts, _)| counts.to_string())
            .unwrap_or_else(|| panic!("no dedup summary: {err}"))
    };
    assert_eq!(counts(&o), counts(&one), "round {r}: dedup's counts");
    assert_same_crawldb(&c.a, &c.b, &format!("round {r} after dedup"));
    true
}

fn setup(tmp: &Path, addr: &str) -> (Crawl, PathBuf) {
    let cfg = write_config(tmp, addr, 0.0, "");
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("partitions = 4", "partitions = 8");
    std::fs::write(&cfg, text).unwrap();
    let seeds = tmp.join("seeds.txt");
    let out = std::process::Command::new(bin("testweb"))
        .args(WEB)
        .args(["--seed-count", "8", "--out"])
        .arg(&seeds)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", out_text(&out));
    let mut text = std::fs::read_to_string(&seeds).unwrap();
    text.push_str("not a url\n");
    std::fs::write(&seeds, text).unwrap();
    (
        Crawl {
            a: tmp.join("a"),
            b: tmp.join("b"),
            cfg,
        },
        seeds,
    )
}

#[test]
fn crawldb_stages_as_tasks_equal_the_one_process_crawl() {
    let tmp = tempfile::tempdir().unwrap();
    let web = TestWeb::start(tmp.path(), &WEB[1..]);
    let (c, seeds) = setup(tmp.path(), &web.addr);
    let seeds = seeds.to_str().unwrap();

    // inject: one process into a, tasks into b.
    let a_out = run("inject", &c.a, &c.cfg, &[seeds]);
    assert!(a_out.status.success(), "{}", out_text(&a_out));
    std::fs::create_dir_all(&c.b).unwrap();
    let mut rejects = 0;
    for set in SETS {
        let o = task_ok("inject", &c.b, &c.cfg, &[seeds], "inject-1", set, "i-1");
        rejects += String::from_utf8_lossy(&o.stderr)
            .matches("rejected")
            .count();
    }
    task_ok("inject", &c.b, &c.cfg, &[seeds], "inject-1", "0-2", "i-0");
    let o = commit("inject", &c.b, &c.cfg, &[seeds], "inject-1");
    assert!(o.status.success(), "{}", out_text(&o));
    // Every task reads every seed file; the bad line is reported by one of them.
    assert!(rejects >= 1, "the rejected line was not reported");
    let summary = |o: &Output| {
        String::from_utf8_lossy(&o.stderr)
            .lines()
            .find(|l| l.starts_with("inject: injected"))
            .map(|l| l.split(" in ").next().unwrap().to_string())
            .unwrap()
    };
    assert_eq!(summary(&a_out), summary(&o), "inject summaries differ");
    assert_same_crawldb(&c.a, &c.b, "after inject");
    let meta = |crawl: &Path| -> serde_json::Value {
        serde_json::from_str(
            &std::fs::read_to_string(crawl.join("crawldb/current/_meta.json")).unwrap(),
        )
        .unwrap()
    };
    assert_eq!(meta(&c.a)["seed_hosts"], meta(&c.b)["seed_hosts"]);

    for r in 1..=2 {
        assert!(round_both(&c, r), "round {r}: nothing due");
    }
    assert!(
        !c.b.join("_jobs").exists()
            || std::fs::read_dir(c.b.join("_jobs"))
                .unwrap()
                .next()
                .is_none(),
        "jobs left behind"
    );
    drop(web);
}

#[test]
fn refused_commits_change_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let web = TestWeb::start(tmp.path(), &WEB[1..]);
    let (c, seeds) = setup(tmp.path(), &web.addr);
    let crawl = &c.b;
    run_ok("inject", crawl, &c.cfg, &[seeds.to_str().unwrap()]);
    let seg = generate_segment(crawl, &c.cfg);
    run_ok("fetch", crawl, &c.cfg, &[&seg]);
    run_ok("parse", crawl, &c.cfg, &[&seg]);
    let before = crawldb_snapshot(crawl);

    // A partition missing.
    let job = "missing";
    task_ok("updatedb", crawl, &c.cfg, &[&seg], job, "0-2", "a");
    task_ok("updatedb", crawl, &c.cfg, &[&seg], job, "4-7", "a");
    let o = commit("updatedb", crawl, &c.cfg, &[&seg], job);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains('3'),
        "the message names the missing partition: {err}"
    );
    assert_eq!(
        before,
        crawldb_snapshot(crawl),
        "a refused commit changed the crawldb"
    );

    // Overlapping sets.
    let job = "overlap";
    task_ok("updatedb", crawl, &c.cfg, &[&seg], job, "0-3", "a");
    task_ok("updatedb", crawl, &c.cfg, &[&seg], job, "3-7", "a");
    let o = commit("updatedb", crawl, &c.cfg, &[&seg], job);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("overlap"), "{err}");
    assert_eq!(before, crawldb_snapshot(crawl));

    // The crawldb changed under the job: its tasks ran, then another updatedb
    // (one process) applied the segment.
    let job = "changed";
    for set in SETS {
        task_ok("updatedb", crawl, &c.cfg, &[&seg], job, set, "a");
    }
    run_ok("updatedb", crawl, &c.cfg, &[&seg]);
    let after = crawldb_snapshot(crawl);
    let o = commit("updatedb", crawl, &c.cfg, &[&seg], job);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("the crawldb changed since the tasks"), "{err}");
    assert_eq!(after, crawldb_snapshot(crawl));

    // Generate: an updatedb between the histogram pass and the commit.
    let seg2 = generate_segment(crawl, &c.cfg);
    run_ok("fetch", crawl, &c.cfg, &[&seg2]);
    run_ok("parse", crawl, &c.cfg, &[&seg2]);
    let job = "gen-changed";
    for set in SETS {
        task_ok(
            "generate",
            crawl,
            &c.cfg,
            &["--pass", "histogram"],
            job,
            set,
            "a",
        );
    }
    run_ok("updatedb", crawl, &c.cfg, &[&seg2]);
    let segs_before = std::fs::read_dir(crawl.join("segments")).unwrap().count();
    let o = run("generate", crawl, &c.cfg, &["--job", job, "--cutoff"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("the crawldb changed"),
        "{}",
        out_text(&o)
    );
    assert_eq!(
        segs_before,
        std::fs::read_dir(crawl.join("segments")).unwrap().count()
    );
    drop(web);
}

/// generate's per-domain cap (`count_mode = "domain"`) as tasks equals one-process
/// generate, whether partitions group URLs by host (a domain's hosts spread over
/// several tasks: the histogram pass keeps each part's best per domain and the
/// cut-off counts across parts) or by domain (a domain in one task). Nothing is
/// fetched: the seeds are the candidates.
#[test]
fn generate_caps_per_domain_as_tasks_with_either_partition_key() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut seeds = Vec::new();
    for (hosts, pages) in [
        (
            &[
                "site0.web.test",
                "site1.web.test",
                "site2.web.test",
                "site3.web.test",
            ][..],
            6,
        ),
        (&["www.a.test", "news.a.test", "shop.a.test"][..], 5),
        (&["www.shop.co.uk", "img.shop.co.uk"][..], 4),
        (&["b.test"][..], 2),
    ] {
        for h in hosts {
            for p in 0..pages {
                seeds.push(format!("http://{h}/p{p}.html"));
            }
        }
    }
    let mut lists = Vec::new();
    for key in ["host", "domain"] {
        let cfg = dir.join(format!("{key}.toml"));
        std::fs::write(
            &cfg,
            format!(
                "[crawl]\npartitions = 8\npartition_key = \"{key}\"\n\n\
                 [generate]\nmax_per_host = 7\ncount_mode = \"domain\"\n"
            ),
        )
        .unwrap();
        let (a, b) = (dir.join(format!("{key}-a")), dir.join(format!("{key}-b")));
        let seed_dir = dir.join(format!("{key}-seeds"));
        std::fs::create_dir_all(&seed_dir).unwrap();
        inject_seeds(&seed_dir, &a, &cfg, &seeds);
        inject_seeds(&seed_dir, &b, &cfg, &seeds);
        let seg_a = generate_segment(&a, &cfg);
        let job = "g";
        tasks_over_sets("generate", &b, &cfg, &[], job, &["--pass", "histogram"]);
        run_ok("generate", &b, &cfg, &["--job", job, "--cutoff"]);
        let cut = std::fs::read_to_string(b.join("_jobs").join(job).join("cutoff.json")).unwrap();
        assert!(
            cut.contains("\"rows\""),
            "with the per-domain cap the cut-off holds the rows: {cut}"
        );
        tasks_over_sets("generate", &b, &cfg, &[], job, &["--pass", "select"]);
        let seg_b = commit_ok("generate", &b, &cfg, &[], job).trim().to_string();
        let (la, lb) = (fetch_list(Path::new(&seg_a)), fetch_list(Path::new(&seg_b)));
        assert_eq!(la, lb, "{key}: tasks selected other URLs than one process");
        let mut per_domain: BTreeMap<String, usize> = BTreeMap::new();
        for url in la.iter().flatten() {
            *per_domain
                .entry(trawl::urls::registrable_domain(&trawl::urls::host_of(url)))
                .or_default() += 1;
        }
        assert_eq!(
            per_domain,
            BTreeMap::from([
                ("a.test".to_string(), 7),
                ("b.test".to_string(), 2),
                ("shop.co.uk".to_string(), 7),
                ("web.test".to_string(), 7),
            ]),
            "{key}"
        );
        let mut urls: Vec<String> = la.into_iter().flatten().collect();
        urls.sort();
        lists.push(urls);
    }
    assert_eq!(lists[0], lists[1], "the same selection under either key");
}
