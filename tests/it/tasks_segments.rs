//! The segment stages as partition tasks plus a commit (`--job --partitions
//! --attempt`, `--job --commit`): fetch, parse and linkdb run as uneven tasks give
//! the same datasets as one-process runs; fetch's partition leases keep a zombie
//! attempt and its retry apart; politeness holds across tasks.

use crate::common;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use trawl::records::{CrawlParseRecord, FetchRecord, InlinkRecord, ParseDataRecord};
use trawl::store::parquet::read_dataset;

const WEB: &[&str] = &["--seed", "11", "--hosts", "8", "--pages", "10"];
const DELAY: f64 = 0.3;

/// A copy of the config file `config`, `from` replaced by `to`, as `name` beside it.
fn config_variant(config: &Path, name: &str, from: &str, to: &str) -> PathBuf {
    let text = std::fs::read_to_string(config).unwrap();
    assert!(text.contains(from), "{from:?} not in the config");
    let path = config.with_file_name(name);
    std::fs::write(&path, text.replace(from, to)).unwrap();
    path
}

/// Runs `cmd`, which must fail; returns its stderr.
fn refused(mut cmd: Command) -> String {
    let out = cmd.output().unwrap();
    assert!(!out.status.success(), "{cmd:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn fetch_set(seg: &str) -> BTreeSet<(String, String, Option<i32>)> {
    let rows: Vec<FetchRecord> = read_dataset(&Path::new(seg).join("crawl_fetch")).unwrap();
    let n = rows.len();
    let set: BTreeSet<_> = rows
        .into_iter()
        .map(|r| (r.url, r.status.as_str().to_string(), r.http_status))
        .collect();
    assert_eq!(set.len(), n, "a URL has two crawl_fetch rows");
    set
}

fn parse_sets(seg: &str) -> (BTreeSet<String>, Vec<String>, Vec<String>) {
    let data: Vec<ParseDataRecord> = read_dataset(&Path::new(seg).join("parse_data")).unwrap();
    let mut cp: Vec<String> = read_dataset::<CrawlParseRecord>(&Path::new(seg).join("crawl_parse"))
        .unwrap()
        .into_iter()
        .map(|r| {
            format!(
                "{} {} {:?} {:?} {:.9} {}",
                r.url, r.kind, r.from_url, r.anchor, r.score, r.depth
            )
        })
        .collect();
    cp.sort();
    let mut inl: Vec<String> = read_dataset::<InlinkRecord>(&Path::new(seg).join("parse_inlinks"))
        .unwrap()
        .into_iter()
        .map(|r| format!("{} {} {}", r.url, r.from_url, r.anchor))
        .collect();
    inl.sort();
    (data.into_iter().map(|r| r.url).collect(), cp, inl)
}

fn linkdb(crawl: &Path) -> Vec<(String, String, String)> {
    let mut rows: Vec<_> = read_dataset::<InlinkRecord>(&crawl.join("linkdb/current"))
        .unwrap()
        .into_iter()
        .map(|r| (r.url, r.from_url, r.anchor))
        .collect();
    rows.sort();
    rows
}

/// Every host's requests at least `delay` apart (the log's times), from `since` on.
fn assert_polite(log: &[LogLine], since: i64, delay: f64) {
    let mut by_host: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for l in log.iter().filter(|l| l.time_ms >= since) {
        by_host.entry(&l.host).or_default().push(l.time_ms);
    }
    let min = (delay * 1000.0) as i64 - 30;
    for (host, mut t) in by_host {
        t.sort();
        for w in t.windows(2) {
            assert!(
                w[1] - w[0] >= min,
                "{host}: requests {} ms apart",
                w[1] - w[0]
            );
        }
    }
}

#[test]
fn fetch_parse_linkdb_as_tasks_equal_one_process() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let map = site_map(dir, WEB);
    let web = TestWeb::start(dir, WEB);
    let config = write_config(dir, &web.addr, DELAY, "");
    // Fetch tasks need a time limit (their leases' length); long enough for all.
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("[fetch]\n", "[fetch]\ntime_limit = 120.0\n");
    std::fs::write(&config, text).unwrap();

    // One process.
    let a = dir.join("a");
    inject_seeds(dir, &a, &config, &map.seeds);
    let seg_a = generate_segment(&a, &config);
    for stage in ["fetch", "parse", "linkdb"] {
        run_ok(stage, &a, &config, &[&seg_a]);
    }

    // Tasks: uneven partition sets (4 partitions), fetch tasks at the same time.
    let b = dir.join("b");
    inject_seeds(dir, &b, &config, &map.seeds);
    let seg_b = generate_segment(&b, &config);
    let since = trawl::datum::now_millis();
    let t1 = task_command("fetch", &b, &config, &[&seg_b], "f1", "0-1", "f-01-0")
        .spawn()
        .unwrap();
    let t2 = task_command("fetch", &b, &config, &[&seg_b], "f1", "2", "f-2-0")
        .spawn()
        .unwrap();
    output_ok(task_command(
        "fetch",
        &b,
        &config,
        &[&seg_b],
        "f1",
        "3",
        "f-3-1",
    ));
    // The same task again under another attempt id (a retry): both finish, the
    // commit takes one of them.
    output_ok(task_command(
        "fetch",
        &b,
        &config,
        &[&seg_b],
        "f1",
        "3",
        "f-3-0",
    ));
    for mut t in [t1, t2] {
        assert!(t.wait().unwrap().success());
    }
    assert!(
        !Path::new(&seg_b).join("crawl_fetch").exists(),
        "tasks install nothing"
    );
    let summary = commit_ok("fetch", &b, &config, &[&seg_b], "f1");
    assert!(summary.contains("fetch: segment"), "{summary}");
    assert!(!b.join("_jobs").exists(), "the commit removes the job");
    assert_eq!(fetch_set(&seg_a), fetch_set(&seg_b));
    for i in 0..4 {
        let st = b.join(format!("fetch_state/00004/p{i:05}"));
        assert!(st.join("fetch.last_end").is_file(), "{}", st.display());
        assert!(!st.join("fetch.lease").exists(), "lease released");
    }

    output_ok(task_command(
        "parse",
        &b,
        &config,
        &[&seg_b],
        "p1",
        "0",
        "p-0-0",
    ));
    output_ok(task_command(
        "parse",
        &b,
        &config,
        &[&seg_b],
        "p1",
        "1-3",
        "p-13-0",
    ));
    let summary = commit_ok("parse", &b, &config, &[&seg_b], "p1");
    assert!(summary.contains("parse: segment"), "{summary}");
    assert_eq!(parse_sets(&seg_a), parse_sets(&seg_b));
    // A partition's crawl_parse is made of the map outputs of both tasks (when
    // both pages' links reach it): every reader takes all its files.
    let cp = Path::new(&seg_b).join("crawl_parse");
    let files: Vec<usize> = (0..4)
        .map(|j| {
            trawl::store::parquet::partition_files(&cp, j)
                .unwrap()
                .len()
        })
        .collect();
    assert!(files.contains(&2), "{files:?}");
    assert!(files.iter().all(|&n| n <= 2), "{files:?}");

    output_ok(task_command(
        "linkdb",
        &b,
        &config,
        &[&seg_b],
        "l1",
        "0-2",
        "l-02-0",
    ));
    output_ok(task_command(
        "linkdb",
        &b,
        &config,
        &[&seg_b],
        "l1",
        "3",
        "l-3-0",
    ));
    commit_ok("linkdb", &b, &config, &[&seg_b], "l1");
    let want = linkdb(&a);
    assert!(!want.is_empty());
    assert_eq!(want, linkdb(&b));

    let log = web.stop();
    assert_polite(&log, since, DELAY);
}

/// A crawl of `WEB` with `[fetch]` keys `fetch` and the politeness `delay`, injected
/// and generated: the test web, the config, the crawl, the segment and the path of
/// partition 1's fetch lease.
fn leased_segment(
    dir: &Path,
    delay: f64,
    fetch: &str,
) -> (TestWeb, PathBuf, PathBuf, String, PathBuf) {
    let map = site_map(dir, WEB);
    let web = TestWeb::start(dir, WEB);
    let config = write_config(dir, &web.addr, delay, "");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("[fetch]\n", &format!("[fetch]\n{fetch}"));
    std::fs::write(&config, text).unwrap();
    let crawl = dir.join("crawl");
    inject_seeds(dir, &crawl, &config, &map.seeds);
    let seg = generate_segment(&crawl, &config);
    let lease = crawl.join("fetch_state/00004/p00001/fetch.lease");
    (web, config, crawl, seg, lease)
}

#[test]
fn a_live_lease_refuses_a_second_attempt_until_it_expires() {
    let tmp = tempfile::tempdir().unwrap();
    // Leases that last the time limit (no heartbeat): a zombie's stays live; a
    // retry that does not wait for it (`lease_wait = 0`) fails at once.
    let (_web, config, crawl, seg, lease) = leased_segment(
        tmp.path(),
        0.5,
        "time_limit = 2.0\ntotal_timeout = 1.0\nlease_ttl = 0.0\nlease_wait = 0.0\n",
    );

    // The first attempt takes the leases, fetches for a while, then stops answering
    // (SIGSTOP: a zombie whose lease is live).
    let mut cmd = task_command("fetch", &crawl, &config, &[&seg], "j", "0-3", "a-0");
    let mut zombie = spawn_holding(&mut cmd, &lease);
    std::thread::sleep(Duration::from_millis(300));
    send_signal(zombie.id(), "-STOP");

    let out = task_command("fetch", &crawl, &config, &[&seg], "j", "0-3", "a-1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(6), "{err}");
    assert!(err.contains("leased by attempt a-0"), "{err}");

    // After the lease expires (time limit + total timeout + 1 s), a retry takes over.
    let held = trawl::store::lease::Lease::read(&lease).unwrap();
    let wait = held.expires.unwrap() - trawl::datum::now_millis();
    std::thread::sleep(Duration::from_millis(wait.max(0) as u64 + 100));
    output_ok(task_command(
        "fetch",
        &crawl,
        &config,
        &[&seg],
        "j",
        "0-3",
        "a-2",
    ));
    // The zombie is killed without a chance to finish: its attempt never counts.
    send_signal(zombie.id(), "-KILL");
    let _ = zombie.wait();
    // A fetch task without a time limit is refused (its lease could never expire).
    let cfg2 = config_variant(&config, "nolimit.toml", "time_limit = 2.0\n", "");
    let err = refused(task_command(
        "fetch",
        &crawl,
        &cfg2,
        &[&seg],
        "k",
        "0",
        "b-0",
    ));
    assert!(err.contains("needs a time limit"), "{err}");
    // queue_mode = ip cannot be partitioned.
    let cfg3 = config_variant(
        &config,
        "ip.toml",
        "[fetch]\n",
        "[fetch]\nqueue_mode = \"ip\"\n",
    );
    let err = refused(task_command(
        "fetch",
        &crawl,
        &cfg3,
        &[&seg],
        "k",
        "0",
        "b-1",
    ));
    assert!(err.contains("queue_mode = \"ip\""), "{err}");
    commit_ok("fetch", &crawl, &config, &[&seg], "j");
    let generated: Vec<trawl::CrawlDatum> =
        read_dataset(&Path::new(&seg).join("crawl_generate")).unwrap();
    let fetched = fetch_set(&seg);
    let urls: BTreeSet<String> = fetched.iter().map(|r| r.0.clone()).collect();
    assert_eq!(
        urls,
        generated
            .into_iter()
            .map(|d| d.url)
            .collect::<BTreeSet<_>>()
    );
}

/// Leases with a heartbeat (`fetch.lease_ttl`): a fetch task whose process is
/// frozen (SIGSTOP, as on a partitioned machine) stops renewing, its leases expire
/// within the TTL (not the time limit); a retry started at once waits for them
/// (`fetch.lease_wait`), takes them over and fetches the partitions; resumed, the
/// frozen task sends no request, fails (exit 6) and leaves no attempt, and the
/// commit installs the retry's.
#[test]
fn a_frozen_fetch_task_loses_its_leases_in_seconds_and_sends_nothing_after() {
    let tmp = tempfile::tempdir().unwrap();
    // A long delay: robots.txt, then each page 3 s later, so the task runs for a while.
    let (web, config, crawl, seg, lease) =
        leased_segment(tmp.path(), 3.0, "time_limit = 600.0\nlease_ttl = 1.5\n");
    let mut cmd = task_command("fetch", &crawl, &config, &[&seg], "j", "0-3", "a-0");
    let frozen = spawn_holding(cmd.stderr(std::process::Stdio::piped()), &lease);
    // Running for a while: its heartbeat renews the lease (expiry moves on).
    std::thread::sleep(Duration::from_millis(1200));
    let renewed = trawl::store::lease::Lease::read(&lease).unwrap();
    assert_eq!(renewed.attempt, "a-0");
    let pid = frozen.id();
    send_signal(pid, "-STOP");
    let frozen_at = Instant::now();
    // The lease expires within the TTL of its last renewal; a retry started now
    // waits for that, then takes over.
    let held = trawl::store::lease::Lease::read(&lease).unwrap();
    let wait = held.expires.unwrap() - trawl::datum::now_millis();
    assert!(
        wait <= 1500,
        "the lease lasts the TTL, not the time limit: {wait} ms"
    );
    let out = output_ok(task_command(
        "fetch",
        &crawl,
        &config,
        &[&seg],
        "j",
        "0-3",
        "a-1",
    ));
    assert!(
        out.contains("waiting") && out.contains("is taken over"),
        "{out}"
    );
    assert!(frozen_at.elapsed() < Duration::from_secs(60));
    // Resumed, the frozen task sends nothing and fails without an attempt.
    let resumed_ms = trawl::datum::now_millis();
    send_signal(pid, "-CONT");
    let done = frozen.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(6), "{err}");
    assert!(err.contains("were not renewed"), "{err}");
    let attempts: Vec<String> = std::fs::read_dir(crawl.join("_jobs/j"))
        .unwrap()
        .flat_map(|set| std::fs::read_dir(set.unwrap().path()).unwrap())
        .map(|a| a.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.contains(".tmp-"))
        .collect();
    assert_eq!(attempts, ["a-1"], "only the retry's attempt finished");
    commit_ok("fetch", &crawl, &config, &[&seg], "j");
    let generated: Vec<trawl::CrawlDatum> =
        read_dataset(&Path::new(&seg).join("crawl_generate")).unwrap();
    assert_eq!(fetch_set(&seg).len(), generated.len());
    let log = web.stop();
    let after: Vec<_> = log.iter().filter(|l| l.time_ms > resumed_ms).collect();
    assert!(
        after.is_empty(),
        "requests after the frozen task resumed: {after:?}"
    );
}

/// With `crawl.partition_key = "domain"`, fetch tasks may keep one politeness queue
/// per domain (`queue_mode = "domain"`): all hosts of a domain are in one partition,
/// so two concurrent tasks never fetch one domain at once. The test web's hosts are
/// all under `web.test`; `www.a.test` and `b.a.test` (404 everywhere) are another
/// domain. Over a crawl partitioned by host, `queue_mode = "domain"` is refused in
/// partial tasks (naming the remedy), and `queue_mode = "ip"` is refused in partial
/// tasks whatever the key.
#[test]
fn domain_queues_hold_across_fetch_tasks_of_a_crawl_partitioned_by_domain() {
    use trawl::store::partition::{PartitionKey, Partitioner};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let web_flags = ["--seed", "11", "--hosts", "6", "--pages", "4"];
    let web = TestWeb::start(dir, &web_flags);
    let config = write_config(
        dir,
        &web.addr,
        DELAY,
        &format!("\"*.a.test\" = \"{}\"\n", web.addr),
    );
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("[crawl]\n", "[crawl]\npartition_key = \"domain\"\n")
        .replace(
            "[fetch]\n",
            "[fetch]\ntime_limit = 120.0\nqueue_mode = \"domain\"\n",
        );
    std::fs::write(&config, text).unwrap();
    let mut seeds = Vec::new();
    for i in 0..6 {
        for p in ["/", "/p1.html", "/p2.html"] {
            seeds.push(format!("http://site{i}.web.test{p}"));
        }
    }
    for h in ["www.a.test", "b.a.test"] {
        seeds.push(format!("http://{h}/"));
        seeds.push(format!("http://{h}/x.html"));
    }
    let crawl = dir.join("crawl");
    inject_seeds(dir, &crawl, &config, &seeds);
    let seg = generate_segment(&crawl, &config);
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(Path::new(&seg).join("_meta.json")).unwrap())
            .unwrap();
    assert_eq!(meta["partition_key"], "domain");
    // By host, the six hosts would fall into both tasks' partitions.
    let (first, second) = ("0-1", "2-3");
    let half = |p: usize| usize::from(p >= 2);
    let by_host: BTreeSet<usize> = (0..6)
        .map(|i| half(Partitioner::by_host(4).of_host(&format!("site{i}.web.test"))))
        .collect();
    assert_eq!(
        by_host.len(),
        2,
        "a test web whose hosts span both tasks by host"
    );

    // queue_mode = "ip" stays refused in a partial task, with the reason.
    let cfg_ip = config_variant(
        &config,
        "ip.toml",
        "queue_mode = \"domain\"",
        "queue_mode = \"ip\"",
    );
    let err = refused(task_command(
        "fetch",
        &crawl,
        &cfg_ip,
        &[&seg],
        "g",
        "0",
        "c-0",
    ));
    assert!(
        err.contains("queue_mode = \"ip\"")
            && err.contains("known only once a host is resolved")
            && err.contains("run fetch as one task"),
        "{err}"
    );

    let since = trawl::datum::now_millis();
    let t1 = task_command("fetch", &crawl, &config, &[&seg], "f", first, "a-0")
        .spawn()
        .unwrap();
    output_ok(task_command(
        "fetch",
        &crawl,
        &config,
        &[&seg],
        "f",
        second,
        "b-0",
    ));
    assert!(t1.wait_with_output().unwrap().status.success());
    let summary = commit_ok("fetch", &crawl, &config, &[&seg], "f");
    assert!(summary.contains("fetch: segment"), "{summary}");
    let fetched = fetch_set(&seg);
    assert_eq!(fetched.len(), seeds.len());
    let log = web.stop();

    // Every domain's requests (pages and robots.txt of all its hosts) at least the
    // delay apart, across both tasks.
    let min = (DELAY * 1000.0) as i64 - 2;
    let mut by_domain: BTreeMap<String, Vec<(i64, String)>> = BTreeMap::new();
    for l in log.iter().filter(|l| l.time_ms >= since) {
        by_domain
            .entry(trawl::urls::registrable_domain(&l.host))
            .or_default()
            .push((l.time_ms, format!("{}{}", l.host, l.path)));
    }
    assert_eq!(
        by_domain.keys().map(String::as_str).collect::<Vec<_>>(),
        ["a.test", "web.test"]
    );
    let hosts: BTreeSet<&str> = log.iter().map(|l| l.host.as_str()).collect();
    assert_eq!(hosts.len(), 8, "{hosts:?}");
    for (domain, mut reqs) in by_domain {
        reqs.sort();
        // 18 pages and 6 robots.txt of web.test; 4 pages and 2 robots.txt of a.test.
        assert!(reqs.len() >= 6, "{domain}: {reqs:?}");
        for w in reqs.windows(2) {
            assert!(
                w[1].0 - w[0].0 >= min,
                "{domain}: {} and {} {} ms apart (delay {} ms)",
                w[0].1,
                w[1].1,
                w[1].0 - w[0].0,
                min + 2
            );
        }
    }
    // Each domain's URLs were fetched by one task: its fetch-list partition.
    let pt = Partitioner::new(4, PartitionKey::Domain);
    assert_eq!(
        pt.of_host("site0.web.test"),
        pt.of_host("site5.web.test"),
        "one partition for a domain"
    );

    // Over a crawl partitioned by host, domain queues are refused in partial tasks.
    let host_crawl = dir.join("by-host");
    let cfg_host = config_variant(
        &config,
        "host.toml",
        "partition_key = \"domain\"",
        "partition_key = \"host\"",
    );
    inject_seeds(dir, &host_crawl, &cfg_host, &seeds);
    let seg3 = generate_segment(&host_crawl, &cfg_host);
    let err = refused(task_command(
        "fetch",
        &host_crawl,
        &cfg_host,
        &[&seg3],
        "h",
        "0-1",
        "d-0",
    ));
    assert!(
        err.contains("queue_mode = \"domain\"")
            && err.contains("repartition --partition-key domain"),
        "{err}"
    );
}
