//! sitemap and warc as partition tasks plus a commit, and the redirect shuffle:
//! uneven task sets with a retried attempt give the one-process result; a killed
//! sitemap task leaves the crawl usable and its retry works; a redirect to another
//! partition's host reaches that partition's crawldb part, and an updatedb task
//! reads no crawl_fetch part but its own.

use crate::common;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;
use trawl::sitemaps::SitemapRecord;
use trawl::store::parquet::read_dataset;
use trawl::store::partition::Partitioner;

/// The partition of `host` among `n` (the default key, by host).
fn part_of_host(host: &str, n: usize) -> usize {
    Partitioner::by_host(n).of_host(host)
}

/// The sitemap hosts and two plain ones.
const SM_WEB: &[&str] = &["--hosts", "2", "--pages", "6", "--sitemaps"];

/// A config with a task time limit (the leases' length) and `partitions`.
fn config_with(dir: &Path, addr: &str, delay: f64, partitions: usize) -> PathBuf {
    let config = write_config(dir, addr, delay, "");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("partitions = 4", &format!("partitions = {partitions}"))
        .replace("[fetch]\n", "[fetch]\ntime_limit = 120.0\n");
    std::fs::write(&config, text).unwrap();
    config
}

/// The crawldb without its clocks: url -> (status, score, interval, sitemap metadata).
fn crawldb_view(crawl: &Path) -> BTreeMap<String, String> {
    crawldb(crawl)
        .into_iter()
        .map(|(u, d)| {
            let meta: Vec<String> = d
                .metadata
                .iter()
                .filter(|(k, _)| k.starts_with("sitemap"))
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let v = format!(
                "{} {:.9} {} {} {:?}",
                d.status.as_str(),
                d.score,
                d.fetch_interval,
                d.depth,
                meta
            );
            (u, v)
        })
        .collect()
}

/// The sitemapdb without its clocks.
fn sitemapdb_view(crawl: &Path) -> BTreeMap<String, String> {
    let db = crawl.join("sitemapdb/current");
    if !db.exists() {
        return BTreeMap::new();
    }
    read_dataset::<SitemapRecord>(&db)
        .unwrap()
        .into_iter()
        .map(|r| {
            let v = format!(
                "{} {} {} {:?} {} {} {} {} {}",
                r.source,
                r.status,
                r.reason,
                r.format,
                r.depth,
                r.urls_found,
                r.urls_rejected,
                r.urls_added,
                r.problems
            );
            (r.url, v)
        })
        .collect()
}

/// A crawl of `SM_WEB` after one round (its robots.txt files name the sitemaps).
fn crawl_after_round(dir: &Path, config: &Path, map: &testweb::SiteMap) -> PathBuf {
    let a = dir.join("a");
    inject_seeds(dir, &a, config, &map.seeds);
    round(&a, config).expect("round 1");
    a
}

#[test]
fn sitemap_as_tasks_equals_one_process() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let map = site_map(dir, SM_WEB);
    let web = TestWeb::start(dir, SM_WEB);
    let config = config_with(dir, &web.addr, 0.0, 4);
    let a = crawl_after_round(dir, &config, &map);
    let b = dir.join("b");
    copy_tree(&a, &b);

    let one = output_ok(stage_command(bin("sitemap"), &a, &config, &["--probe"]));
    assert!(summary_count(&one, "sitemap", "added") > 0, "{one}");

    // Uneven sets, partition 3 twice (a retry after a zombie finished): the commit
    // takes one attempt of it.
    let before = crawldb_view(&b);
    output_ok(task_command(
        "sitemap",
        &b,
        &config,
        &["--probe"],
        "s1",
        "0-1",
        "s-01-0",
    ));
    output_ok(task_command(
        "sitemap",
        &b,
        &config,
        &["--probe"],
        "s1",
        "2",
        "s-2-0",
    ));
    output_ok(task_command(
        "sitemap",
        &b,
        &config,
        &["--probe"],
        "s1",
        "3",
        "s-3-1",
    ));
    output_ok(task_command(
        "sitemap",
        &b,
        &config,
        &["--probe"],
        "s1",
        "3",
        "s-3-0",
    ));
    assert_eq!(before, crawldb_view(&b), "tasks install nothing");
    // The shuffle: a task writes the URLs its sitemaps listed to their host's
    // partition; the fetches were its own partitions' hosts only.
    let mut targets = Vec::new();
    for set in std::fs::read_dir(b.join("_jobs/s1/shuffle.fetch")).unwrap() {
        for attempt in std::fs::read_dir(set.unwrap().path()).unwrap() {
            let urls = attempt.unwrap().path().join("sitemap_urls");
            for p in trawl::store::parquet::part_files(&urls).unwrap() {
                let j = trawl::store::parquet::part_index(&p).unwrap();
                for r in read_dataset_file(&p) {
                    assert_eq!(part_of_host(&r.host, 4), j, "{}", r.url);
                    targets.push(j);
                }
            }
        }
    }
    assert!(!targets.is_empty());
    for i in 0..4 {
        let st = b.join(format!("fetch_state/00004/p{i:05}"));
        assert!(!st.join("fetch.lease").exists(), "lease of {i} released");
    }
    // The merge tasks (uneven sets again, one run twice): each merges the URLs every
    // fetch attempt found for its partitions into their crawldb parts.
    let merge = |set: &str, attempt: &str| {
        output_ok(task_command(
            "sitemap",
            &b,
            &config,
            &["--probe", "--pass", "merge"],
            "s1",
            set,
            attempt,
        ))
    };
    for (set, attempt) in [("0", "m-0"), ("1-3", "m-13"), ("1-3", "m-13-zombie")] {
        merge(set, attempt);
    }
    assert_eq!(before, crawldb_view(&b), "merge tasks install nothing");
    // A zombie fetch attempt of set 2 finishes after the merges, with an id that
    // sorts first: the commit chooses it, so no merge task read what it will
    // install; it refuses, and merge tasks run again under new ids are taken.
    output_ok(task_command(
        "sitemap",
        &b,
        &config,
        &["--probe"],
        "s1",
        "2",
        "s-2--zombie",
    ));
    refused_commit(
        &b,
        &config,
        &["--probe", "--job", "s1", "--commit"],
        "run the merge tasks of those partitions again",
    );
    assert_eq!(
        before,
        crawldb_view(&b),
        "a refused commit installs nothing"
    );
    for (set, attempt) in [("0", "n-0"), ("1-3", "n-13")] {
        merge(set, attempt);
    }
    let summary = commit_ok("sitemap", &b, &config, &["--probe"], "s1");
    assert_eq!(
        summary_count(&summary, "sitemap", "added"),
        summary_count(&one, "sitemap", "added"),
        "{summary}\n{one}"
    );
    assert!(!b.join("_jobs").exists(), "the commit removes the job");
    assert_eq!(crawldb_view(&a), crawldb_view(&b));
    assert_eq!(sitemapdb_view(&a), sitemapdb_view(&b));
    // A job committed over another crawldb version is refused.
    output_ok(task_command(
        "sitemap",
        &b,
        &config,
        &["--force"],
        "s2",
        "0-3",
        "t-0",
    ));
    run_ok("sitemap", &b, &config, &["--force"]);
    refused_commit(
        &b,
        &config,
        &["--force", "--job", "s2", "--commit"],
        "changed since the tasks",
    );
    web.stop();
}

/// Runs `sitemap args` (a commit) on `crawl`, asserting that it fails with `why` in
/// its error.
fn refused_commit(crawl: &Path, config: &Path, args: &[&str], why: &str) {
    let out = stage_command(bin("sitemap"), crawl, config, args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains(why), "{err}");
}

fn read_dataset_file(p: &Path) -> Vec<trawl::sitemaps::SitemapUrlRow> {
    trawl::store::parquet::read_part_all(p).unwrap()
}

#[test]
fn a_killed_sitemap_task_leaves_the_crawl_usable_and_its_retry_works() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let map = site_map(dir, SM_WEB);
    let web = TestWeb::start(dir, SM_WEB);
    // A delay long enough to kill the task between two requests of a host.
    let config = config_with(dir, &web.addr, 0.4, 4);
    let a = crawl_after_round(dir, &config, &map);
    let before = crawldb_view(&a);
    let sm_before = sitemapdb_view(&a);

    let smap = part_of_host(testweb::xmlsitemaps::SMAP_HOST, 4);
    let lease = a.join(format!("fetch_state/00004/p{smap:05}/fetch.lease"));
    let mut victim = spawn_holding(
        &mut task_command("sitemap", &a, &config, &[], "k1", "0-3", "k-0"),
        &lease,
    );
    std::thread::sleep(Duration::from_millis(700));
    victim.kill().unwrap();
    let _ = victim.wait();
    // Nothing installed, no finished attempt; the crawl works as before.
    assert_eq!(before, crawldb_view(&a));
    assert_eq!(sm_before, sitemapdb_view(&a));
    let out = stage_command(bin("sitemap"), &a, &config, &["--job", "k1", "--commit"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("no finished attempt"),
        "{err}"
    );

    // The retry takes over the dead attempt's leases and finishes; the commit works.
    output_ok(task_command(
        "sitemap",
        &a,
        &config,
        &[],
        "k1",
        "0-3",
        "k-1",
    ));
    let summary = commit_ok("sitemap", &a, &config, &[], "k1");
    assert!(summary_count(&summary, "sitemap", "added") > 0, "{summary}");
    assert!(crawldb_view(&a).len() > before.len());
    // And the next round runs on it.
    round(&a, &config).expect("round 2");
    web.stop();
}

/// Sitemap tasks hold fetch leases with a heartbeat too (`fetch.lease_ttl`): a task
/// frozen mid-run (SIGSTOP) stops renewing; a retry started at once waits for its
/// leases to expire (`fetch.lease_wait`), takes them over and finishes; resumed, the
/// frozen task sends no request, fails (exit 6) and leaves no attempt; the commit
/// installs the retry's.
#[test]
fn a_frozen_sitemap_task_loses_its_leases_and_sends_nothing_after() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let map = site_map(dir, SM_WEB);
    let web = TestWeb::start(dir, SM_WEB);
    // A long delay keeps the task fetching the sitemap host's sitemaps for seconds.
    let config = config_with(dir, &web.addr, 1.0, 4);
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("[fetch]\n", "[fetch]\nlease_ttl = 1.5\n");
    std::fs::write(&config, text).unwrap();
    let a = crawl_after_round(dir, &config, &map);
    let smap = part_of_host(testweb::xmlsitemaps::SMAP_HOST, 4);
    let lease = a.join(format!("fetch_state/00004/p{smap:05}/fetch.lease"));
    let frozen = spawn_holding(
        task_command("sitemap", &a, &config, &[], "k1", "0-3", "k-0")
            .stderr(std::process::Stdio::piped()),
        &lease,
    );
    std::thread::sleep(Duration::from_millis(1200));
    let pid = frozen.id();
    send_signal(pid, "-STOP");
    let held = trawl::store::lease::Lease::read(&lease).unwrap();
    assert_eq!(held.attempt, "k-0");
    assert!(
        held.expires.unwrap() - trawl::datum::now_millis() <= 1500,
        "the lease lasts the TTL, not the time limit: {held:?}"
    );
    let out = output_ok(task_command(
        "sitemap",
        &a,
        &config,
        &[],
        "k1",
        "0-3",
        "k-1",
    ));
    assert!(
        out.contains("waiting") && out.contains("is taken over"),
        "{out}"
    );
    let resumed_ms = trawl::datum::now_millis();
    send_signal(pid, "-CONT");
    let done = frozen.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(6), "{err}");
    assert!(err.contains("were not renewed"), "{err}");
    let summary = commit_ok("sitemap", &a, &config, &[], "k1");
    assert!(summary_count(&summary, "sitemap", "added") > 0, "{summary}");
    let log = web.stop();
    let after: Vec<_> = log.iter().filter(|l| l.time_ms > resumed_ms).collect();
    assert!(
        after.is_empty(),
        "requests after the frozen sitemap task resumed: {after:?}"
    );
}

/// warcio's view of every record of the `.warc.gz` files of `dir`: (type, target
/// URI, record id, block digest, payload digest), sorted.
fn warc_records(dir: &Path, scratch: &Path) -> Option<Vec<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = root.join(".venv/bin/python");
    let has_warcio = python.is_file()
        && Command::new(&python)
            .args(["-c", "import warcio"])
            .status()
            .is_ok_and(|s| s.success());
    if !has_warcio {
        common::missing("warcio", ".venv/bin/python with warcio not found");
        return None;
    }
    common::ran_with("warcio");
    let script = scratch.join("records.py");
    std::fs::write(
        &script,
        "import sys, glob\nfrom warcio.archiveiterator import ArchiveIterator\nout = []\n\
         for f in sorted(glob.glob(sys.argv[1] + '/*.warc.gz')):\n    with open(f, 'rb') as s:\n\
         \x20       for r in ArchiveIterator(s):\n            h = r.rec_headers\n\
         \x20           if r.rec_type == 'warcinfo':\n                continue\n\
         \x20           out.append(' '.join([r.rec_type, h.get_header('WARC-Target-URI'), h.get_header('WARC-Record-ID'), h.get_header('WARC-Block-Digest'), str(h.get_header('WARC-Payload-Digest')), str(len(r.content_stream().read()))]))\n\
         for l in sorted(out):\n    print(l)\n",
    )
    .unwrap();
    let out = Command::new(&python)
        .arg(&script)
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect(),
    )
}

fn warc_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn warc_as_tasks_equals_one_process() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let web_args: &[&str] = &["--seed", "11", "--hosts", "8", "--pages", "10"];
    let map = site_map(dir, web_args);
    let web = TestWeb::start(dir, web_args);
    let config = config_with(dir, &web.addr, 0.0, 4);
    let crawl = dir.join("crawl");
    inject_seeds(dir, &crawl, &config, &map.seeds);
    let seg = round(&crawl, &config).expect("round 1");
    web.stop();
    let name = Path::new(&seg)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();

    let one = dir.join("one");
    let out = output_ok(stage_command(
        bin("warc"),
        &crawl,
        &config,
        &[&seg, "--out", one.to_str().unwrap()],
    ));
    let pages = summary_count(&out, "warc", &format!("segment {name}:"));
    assert!(pages > 0, "{out}");
    assert_eq!(warc_names(&one), [format!("trawl-{name}-00000.warc.gz")]);

    let tasks = dir.join("tasks");
    let o = tasks.to_str().unwrap();
    output_ok(task_command(
        "warc",
        &crawl,
        &config,
        &[&seg, "--out", o],
        "w1",
        "0",
        "w-0-0",
    ));
    output_ok(task_command(
        "warc",
        &crawl,
        &config,
        &[&seg, "--out", o],
        "w1",
        "1-2",
        "w-12-0",
    ));
    output_ok(task_command(
        "warc",
        &crawl,
        &config,
        &[&seg, "--out", o],
        "w1",
        "3",
        "w-3-1",
    ));
    output_ok(task_command(
        "warc",
        &crawl,
        &config,
        &[&seg, "--out", o],
        "w1",
        "3",
        "w-3-0",
    ));
    assert!(!tasks.exists(), "tasks install nothing");
    // An earlier export's files of the segment are replaced, others' kept.
    std::fs::create_dir_all(&tasks).unwrap();
    std::fs::write(tasks.join(format!("trawl-{name}-00007.warc.gz")), b"old").unwrap();
    std::fs::write(tasks.join("other-file.txt"), b"keep").unwrap();
    let out = commit_ok("warc", &crawl, &config, &[&seg, "--out", o], "w1");
    assert_eq!(
        summary_count(&out, "warc", &format!("segment {name}:")),
        pages,
        "{out}"
    );
    assert!(!crawl.join("_jobs").exists(), "the commit removes the job");
    let names = warc_names(&tasks);
    assert!(names.contains(&"other-file.txt".to_string()), "{names:?}");
    // One file per task whose content parts hold pages (a task without any writes none).
    let content = Path::new(&seg).join("content");
    let has_pages = |parts: &[usize]| {
        parts.iter().any(|&i| {
            trawl::store::parquet::partition_files(&content, i)
                .unwrap()
                .iter()
                .any(|p| {
                    !trawl::store::parquet::read_part_all::<trawl::records::ContentRecord>(p)
                        .unwrap()
                        .is_empty()
                })
        })
    };
    let mut want = vec!["other-file.txt".to_string()];
    for (set, parts) in [
        ("p00000", &[0][..]),
        ("p00001-00002", &[1, 2]),
        ("p00003", &[3]),
    ] {
        if has_pages(parts) {
            want.push(format!("trawl-{name}-{set}-00000.warc.gz"));
        }
    }
    want.sort();
    assert!(want.len() >= 3, "{want:?}");
    assert_eq!(names, want);
    std::fs::remove_file(tasks.join("other-file.txt")).unwrap();
    if let (Some(x), Some(y)) = (warc_records(&one, dir), warc_records(&tasks, dir)) {
        assert_eq!(x.len() as u64, 2 * pages);
        assert_eq!(x, y);
    }
}

/// The test web's cross-host redirect (robotsmoved -> hostile) with a partition
/// count that puts the two hosts apart.
#[test]
fn redirect_targets_are_shuffled_to_their_partition() {
    use testweb::hostile::{HOSTILE_HOST, ROBOTS_MOVED_HOST};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let web_args: &[&str] = &["--seed", "5", "--hosts", "1", "--pages", "3", "--hostile"];
    let web = TestWeb::start(dir, web_args);
    let n = (2..16)
        .find(|&n| part_of_host(ROBOTS_MOVED_HOST, n) != part_of_host(HOSTILE_HOST, n))
        .unwrap();
    let (from, to) = (
        part_of_host(ROBOTS_MOVED_HOST, n),
        part_of_host(HOSTILE_HOST, n),
    );
    let config = config_with(dir, &web.addr, 0.0, n);
    let a = dir.join("a");
    let seed = format!("http://{ROBOTS_MOVED_HOST}/to-hostile");
    let target = format!("http://{HOSTILE_HOST}/final.html");
    inject_seeds(
        dir,
        &a,
        &config,
        &[seed.clone(), format!("http://{ROBOTS_MOVED_HOST}/")],
    );
    let seg = generate_segment(&a, &config);
    run_ok("fetch", &a, &config, &[&seg]);
    web.stop();
    // Parse tasks: the redirect lands in the target's partition of crawl_parse.
    let s = Path::new(&seg)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let all = format!("0-{}", n - 1);
    output_ok(task_command(
        "parse",
        &a,
        &config,
        &[&seg],
        "p",
        &all,
        "p-0",
    ));
    commit_ok("parse", &a, &config, &[&seg], "p");
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(Path::new(&seg).join("_meta.json")).unwrap())
            .unwrap();
    assert_eq!(meta["redirects_in_crawl_parse"], true);
    let cp = Path::new(&seg).join("crawl_parse");
    let rows: Vec<trawl::records::CrawlParseRecord> =
        trawl::store::parquet::read_part_all(&cp.join(trawl::store::parquet::part_name(to)))
            .unwrap();
    assert!(
        rows.iter().any(|r| r.kind == "redirect"
            && r.url == target
            && r.from_url.as_deref() == Some(seed.as_str())),
        "{rows:?}"
    );
    let b = dir.join("b");
    copy_tree(&a, &b);
    let old = dir.join("old");
    copy_tree(&a, &old);

    // One process.
    run_ok("updatedb", &a, &config, &[&seg]);
    // Tasks, one per partition: each reads no crawl_fetch part to route redirects.
    let seg_b = b.join("segments").join(&s).to_string_lossy().into_owned();
    for i in 0..n {
        output_ok(task_command(
            "updatedb",
            &b,
            &config,
            &[&seg_b],
            "u",
            &i.to_string(),
            &format!("u-{i}"),
        ));
        let report = b.join(format!("_jobs/u/p{i:05}/u-{i}/_report.json"));
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        assert_eq!(r["redirect_fetch_parts_read"], 0, "{r}");
    }
    commit_ok("updatedb", &b, &config, &[&seg_b], "u");
    let (da, db) = (crawldb_view(&a), crawldb_view(&b));
    assert_eq!(da, db);
    assert!(da.contains_key(&target), "{da:?}");
    let part: Vec<trawl::CrawlDatum> =
        read_dataset::<trawl::CrawlDatum>(&b.join("crawldb/current"))
            .unwrap()
            .into_iter()
            .filter(|d| d.url == target)
            .collect();
    assert_eq!(part.len(), 1);
    let in_to: Vec<trawl::CrawlDatum> = trawl::store::parquet::read_part_all(
        &b.join("crawldb/current")
            .join(trawl::store::parquet::part_name(to)),
    )
    .unwrap();
    assert!(
        in_to.iter().any(|d| d.url == target),
        "not in partition {to} (from {from})"
    );

    // A segment parsed before the shuffle (no mark): its redirects come from the
    // whole crawl_fetch, as before, and the result is the same.
    let seg_old = old.join("segments").join(&s);
    let mut meta = meta;
    meta["redirects_in_crawl_parse"] = serde_json::Value::Bool(false);
    std::fs::write(
        seg_old.join("_meta.json"),
        serde_json::to_vec(&meta).unwrap(),
    )
    .unwrap();
    let seg_old = seg_old.to_string_lossy().into_owned();
    output_ok(task_command(
        "updatedb",
        &old,
        &config,
        &[&seg_old],
        "u",
        "0",
        "u-0",
    ));
    let r: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(old.join("_jobs/u/p00000/u-0/_report.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(r["redirect_fetch_parts_read"], n as u64, "{r}");
    output_ok(task_command(
        "updatedb",
        &old,
        &config,
        &[&seg_old],
        "u",
        &format!("1-{}", n - 1),
        "u-1",
    ));
    commit_ok("updatedb", &old, &config, &[&seg_old], "u");
    assert_eq!(da, crawldb_view(&old));
}
