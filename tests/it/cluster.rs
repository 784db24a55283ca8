//! trawl on a real Spark standalone cluster on 127.0.0.1 (cluster/spark-local.sh: a
//! master and two one-core workers), driven by cluster/trawl_spark.py: inject and two
//! rounds over the test web, one fetch task's process frozen mid-run (SIGSTOP, as on a
//! machine cut off) and its executor killed (SIGKILL, as a lost machine), so that Spark
//! retries the task while the frozen process still holds its leases: the retry waits
//! for them to expire (`fetch.lease_ttl`, `fetch.lease_wait`), takes them over and
//! fetches the partition; resumed after the rounds, the frozen process sends nothing.
//! The crawldb must equal (URL, status, signature) that of the
//! same crawl by `crawl` in one process (dedup's duplicates included), and so must the
//! hostdb's counts and the search index's top 10, and the test web's request log must show politeness held
//! across the workers (no two requests to a host closer than the delay, the killed
//! attempt and its retry included) and robots.txt obeyed.
//!
//! Needs Java 17+ (skipped, saying so, when `java` is missing) and pyspark in the
//! project's virtualenv (`make cluster-venv`; `make test` installs it).

use crate::common;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use trawl::store::partition::Partitioner;

use common::*;

const WEB: &[&str] = &["--seed", "16", "--hosts", "6", "--pages", "24"];
const DELAY_MS: i64 = 300;
const PARTITIONS: usize = 4;
/// Page requests (robots.txt not counted) the doomed fetch attempt makes before it is
/// frozen.
const KILL_AFTER_PAGES: usize = 3;
/// `fetch.checkpoint_interval` of the Spark crawl: the retry of the frozen attempt
/// requests again only what it fetched since its last checkpoint.
const CHECKPOINT_SECS: f64 = 0.2;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn bin_dir() -> PathBuf {
    Path::new(bin("inject")).parent().unwrap().to_path_buf()
}

/// The virtualenv's Python, asserting it has pyspark.
fn venv_python() -> PathBuf {
    let python = repo().join(".venv/bin/python");
    let ok = Command::new(&python)
        .args(["-c", "import pyspark"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        ok,
        "{} cannot import pyspark: run `make cluster-venv` (make test does it)",
        python.display()
    );
    python
}

fn java_present() -> bool {
    Command::new("java")
        .arg("-version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// A cluster started by cluster/spark-local.sh, stopped on drop (also when the test fails).
struct Cluster {
    run: PathBuf,
    python: PathBuf,
    master: String,
}

impl Cluster {
    fn start(run: &Path, python: &Path, workers: usize) -> Cluster {
        ran_with("Spark");
        let out = Command::new(repo().join("cluster/spark-local.sh"))
            .arg("start")
            .arg(run)
            .arg(workers.to_string())
            .env("PYTHON", python)
            .output()
            .unwrap();
        // Built first, so that a failed start below still stops what did start.
        let mut cluster = Cluster {
            run: run.to_path_buf(),
            python: python.to_path_buf(),
            master: String::new(),
        };
        assert!(
            out.status.success(),
            "spark-local.sh start failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        cluster.master = std::fs::read_to_string(run.join("master.url"))
            .unwrap()
            .trim()
            .to_string();
        cluster
    }

    /// `spark-submit cluster/trawl_spark.py <args> --crawl-dir .. --config ..`.
    fn submit(&self, crawl: &Path, config: &Path, args: &[&str]) -> Output {
        self.submit_env(crawl, config, args, None)
    }

    /// [`Cluster::submit`] with the crawl directory on moto's S3: the driver gets the
    /// endpoint and credentials (and passes them on to the executors).
    fn submit_env(
        &self,
        crawl: &Path,
        config: &Path,
        args: &[&str],
        moto: Option<&common::moto::Moto>,
    ) -> Output {
        let submit = self.python.with_file_name("spark-submit");
        let mut cmd = Command::new(submit);
        if let Some(moto) = moto {
            let work = crawl_work(config);
            common::moto::s3_env(&mut cmd, moto, &work);
            cmd.env_remove("TRAWL_WORK_DIR");
        }
        let out = cmd
            .arg("--master")
            .arg(&self.master)
            .arg(repo().join("cluster/trawl_spark.py"))
            .args(args)
            .arg("--crawl-dir")
            .arg(crawl)
            .arg("--config")
            .arg(config)
            .arg("--bin-dir")
            .arg(bin_dir())
            .env("SPARK_LOCAL_IP", "127.0.0.1")
            .env("SPARK_CONF_DIR", repo().join("cluster/conf"))
            .env("PYSPARK_PYTHON", &self.python)
            .env("RUST_LOG", "warn")
            // The driver's own state (its default progress file) stays in the test's
            // directory.
            .env("XDG_STATE_HOME", config.with_file_name("driver-state"))
            .env_remove("TRAWL_CONFIG")
            .env_remove("TRAWL_CRAWL_DIR")
            .output()
            .unwrap();
        eprintln!(
            "trawl_spark.py {args:?}: {:?}\n--- stdout\n{}--- stderr (tail)\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            tail(&String::from_utf8_lossy(&out.stderr), 40)
        );
        out
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(repo().join("cluster/spark-local.sh"))
            .arg("stop")
            .arg(&self.run)
            .env("PYTHON", &self.python)
            .status();
    }
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n") + "\n"
}

/// A running process's argv, from /proc.
fn cmdline(pid: &str) -> Option<Vec<String>> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(
        raw.split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect(),
    )
}

fn flag<'a>(argv: &'a [String], name: &str) -> Option<&'a str> {
    let i = argv.iter().position(|a| a == name)?;
    argv.get(i + 1).map(String::as_str)
}

/// The pid of a running fetch task of partition set `spec` in its first attempt, on
/// the crawl directory `crawl`.
fn first_fetch_attempt(crawl: &Path, spec: &str) -> Option<String> {
    let trawl = bin("trawl");
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Some(argv) = cmdline(&pid) else { continue };
        // The driver runs `<bin-dir>/trawl fetch ...`.
        if argv.first().map(String::as_str) == Some(trawl)
            && argv.get(1).map(String::as_str) == Some("fetch")
            && flag(&argv, "--partitions") == Some(spec)
            && flag(&argv, "--crawl-dir").map(Path::new) == Some(crawl)
            && flag(&argv, "--attempt").is_some_and(|a| a.ends_with("-0"))
        {
            return Some(pid);
        }
    }
    None
}

/// What the killer did: the frozen fetch process, the executor killed.
#[derive(Debug, Clone)]
struct Kill {
    pid: String,
    pages_before: usize,
    executor: String,
    /// When it was frozen (ms UTC).
    frozen_ms: i64,
}

/// Kills the frozen process on drop if it still runs (a test failing before resuming
/// it must not leave it stopped, holding its leases).
struct Reaper(Arc<Mutex<Option<Kill>>>);

impl Drop for Reaper {
    fn drop(&mut self) {
        let frozen = self
            .0
            .lock()
            .map(|k| k.clone())
            .unwrap_or_else(|e| e.into_inner().clone());
        if let Some(k) = frozen
            && cmdline(&k.pid).is_some_and(|a| !a.is_empty())
        {
            let _ = Command::new("kill").args(["-KILL", &k.pid]).status();
        }
    }
}

/// The parent pid of a running process, from /proc.
fn parent(pid: &str) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid ...`: comm may hold spaces and parentheses.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1).map(str::to_string)
}

/// A process's state letter (`T`: stopped), from /proc.
fn state(pid: &str) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .next()?
        .chars()
        .next()
}

/// The Spark executor (its JVM) that `pid` runs under: the nearest ancestor running
/// `CoarseGrainedExecutorBackend`.
fn executor_of(pid: &str) -> Option<String> {
    let mut p = parent(pid)?;
    for _ in 0..16 {
        if cmdline(&p).is_some_and(|a| a.iter().any(|x| x.contains("CoarseGrainedExecutorBackend")))
        {
            return Some(p);
        }
        p = parent(&p)?;
    }
    None
}

/// Watches for the first fetch attempt of partition `target`; once it has made
/// KILL_AFTER_PAGES page requests (seen in the test web's log) to its hosts, freezes
/// it (SIGSTOP: it keeps its leases, as a process on a machine cut off) and SIGKILLs
/// its executor (a lost machine: Spark retries the task elsewhere at once).
fn killer(
    crawl: PathBuf,
    log: PathBuf,
    target: usize,
    stop: Arc<AtomicBool>,
    done: Arc<Mutex<Option<Kill>>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let spec = target.to_string();
        // The log's length when no such attempt ran yet: the requests after it are
        // the attempt's (the first poll that finds it may come after its first requests).
        let mut seen_before = read_log(&log).len();
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(20));
            let Some(pid) = first_fetch_attempt(&crawl, &spec) else {
                seen_before = read_log(&log).len();
                continue;
            };
            loop {
                // Gone, or exited and not yet reaped (a zombie has an empty cmdline).
                let alive = cmdline(&pid).is_some_and(|a| !a.is_empty());
                if stop.load(Ordering::Relaxed) || !alive {
                    break;
                }
                let lines = read_log(&log);
                let pages = lines[seen_before.min(lines.len())..]
                    .iter()
                    .filter(|l| {
                        l.path != "/robots.txt"
                            && Partitioner::by_host(PARTITIONS).of_host(&l.host) == target
                    })
                    .count();
                if pages >= KILL_AFTER_PAGES {
                    let Some(executor) = executor_of(&pid) else {
                        // It ended by itself meanwhile: wait for the next attempt.
                        seen_before = read_log(&log).len();
                        break;
                    };
                    let frozen_ms = trawl::datum::now_millis();
                    let status = Command::new("kill").args(["-STOP", &pid]).status();
                    if !status.map(|s| s.success()).unwrap_or(false) {
                        seen_before = read_log(&log).len();
                        break;
                    }
                    let status = Command::new("kill").args(["-KILL", &executor]).status();
                    assert!(
                        status.map(|s| s.success()).unwrap_or(false),
                        "kill -KILL {executor} (the executor of fetch task {pid})"
                    );
                    *done.lock().unwrap() = Some(Kill {
                        pid: pid.clone(),
                        pages_before: pages,
                        executor,
                        frozen_ms,
                    });
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    })
}

/// The same crawl in one process: inject, then `rounds` rounds of the six stages.
/// A scratch directory beside the config (never used by the driver: each step and
/// task gets its own work dir).
fn crawl_work(config: &Path) -> PathBuf {
    config.with_file_name("work")
}

/// A small site served under two host names by the test web (`--static`): a mirror,
/// every page twice, so that dedup has work in the first round. Returns the
/// test web's flags with it.
fn with_mirror(dir: &Path) -> Vec<String> {
    let site = dir.join("mirror-site");
    std::fs::create_dir_all(&site).unwrap();
    let topics = [
        "lighthouse keeper logbook",
        "harbour tide tables",
        "fog signal maintenance",
        "lamp room cleaning",
        "keeper cottage repairs",
    ];
    let mut links = String::new();
    for (i, t) in topics.iter().enumerate() {
        links.push_str(&format!("<li><a href=\"page{i}.html\">{t}</a></li>"));
        std::fs::write(
            site.join(format!("page{i}.html")),
            format!(
                "<html><head><title>{t}</title></head><body><h1>{t}</h1><p>Notes on {t}, \
                 page {i} of the lighthouse handbook: how the {t} is done, step by step, \
                 with the tools it needs.</p><a href=\"index.html\">handbook</a></body></html>"
            ),
        )
        .unwrap();
    }
    std::fs::write(
        site.join("index.html"),
        format!(
            "<html><head><title>Lighthouse handbook</title></head><body><h1>Lighthouse \
             handbook</h1><p>Everything a lighthouse keeper does.</p><ul>{links}</ul></body></html>"
        ),
    )
    .unwrap();
    let mut flags: Vec<String> = WEB.iter().map(|s| s.to_string()).collect();
    for host in MIRRORS {
        flags.push("--static".into());
        flags.push(format!("{host}={}", site.display()));
    }
    flags
}

/// The two host names of the mirrored site.
const MIRRORS: [&str; 2] = ["docs.web.test", "mirror.web.test"];

/// What both cluster tests start from.
struct Setup {
    map: testweb::SiteMap,
    seeds: PathBuf,
    /// The one-process crawl's directory.
    reference: PathBuf,
    /// The Spark crawl's directory (its web's log, its config).
    spark_dir: PathBuf,
    web: TestWeb,
    config: PathBuf,
}

/// The seeds, the one-process reference crawl of `rounds` rounds (on a web of its
/// own: its own request log), and the web and config of the Spark crawl.
fn setup(dir: &Path, rounds: usize) -> Setup {
    let map = site_map(dir, WEB);
    let flags = with_mirror(dir);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let seeds = dir.join("seeds.txt");
    let mut urls = map.seeds.clone();
    urls.extend(MIRRORS.iter().map(|h| format!("http://{h}/index.html")));
    std::fs::write(&seeds, urls.join("\n") + "\n").unwrap();
    let reference_dir = dir.join("one-process");
    std::fs::create_dir_all(&reference_dir).unwrap();
    let reference = one_process_crawl(&reference_dir, &seeds, rounds, &flags);
    let spark_dir = dir.join("spark");
    std::fs::create_dir_all(&spark_dir).unwrap();
    let web = TestWeb::start(&spark_dir, &flags);
    let config = write_config(&spark_dir, &web.addr, DELAY_MS as f64 / 1000.0, "");
    // Leases of 10 s (renewed every 3.3 s): when Spark retries the task of the lost
    // executor, the frozen attempt's leases are still live; the retry waits for them
    // (`fetch.lease_wait`, 60 s) instead of failing (with `lease_wait = 0` its four
    // attempts exit 6 at once and the round fails).
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "[fetch]\n",
        &format!("[fetch]\nlease_ttl = 10.0\ncheckpoint_interval = {CHECKPOINT_SECS}\n"),
    );
    std::fs::write(&config, text).unwrap();
    Setup {
        map,
        seeds,
        reference,
        spark_dir,
        web,
        config,
    }
}

/// (URL, status, signature) of every crawldb row.
fn triples(db: BTreeMap<String, trawl::CrawlDatum>) -> BTreeMap<String, (String, Option<String>)> {
    db.into_iter()
        .map(|(u, d)| (u, (d.status.as_str().to_string(), d.signature)))
        .collect()
}

/// The same crawl by `crawl` in one process: the round the Spark driver must repeat.
fn one_process_crawl(dir: &Path, seeds: &Path, rounds: usize, web_flags: &[&str]) -> PathBuf {
    let web = TestWeb::start(dir, web_flags);
    let config = write_config(dir, &web.addr, DELAY_MS as f64 / 1000.0, "");
    let crawl = dir.join("crawl");
    run_ok(
        "crawl",
        &crawl,
        &config,
        &[
            "--seeds",
            seeds.to_str().unwrap(),
            "--rounds",
            &rounds.to_string(),
        ],
    );
    web.stop();
    crawl
}

/// The hostdb's rows by host: what the crawl counted (URLs by status, fetches by
/// outcome, robots.txt), without the times.
fn hostdb_counts(crawl: &Path) -> BTreeMap<String, Vec<String>> {
    let rows: Vec<trawl::records::HostRecord> =
        trawl::store::parquet::read_dataset(&crawl.join("hostdb/current")).unwrap();
    rows.into_iter()
        .map(|h| {
            let counts = [
                h.urls,
                h.db_unfetched,
                h.db_fetched,
                h.db_gone,
                h.db_redir_temp,
                h.db_redir_perm,
                h.db_notmodified,
                h.db_duplicate,
                h.fetches,
                h.fetch_successes,
                h.fetch_failures,
                h.fetch_gone,
                h.fetch_redirects,
                h.consecutive_failures,
                h.sitemaps,
            ];
            let mut v: Vec<String> = counts.iter().map(i64::to_string).collect();
            v.push(format!("{:?}/{:?}", h.robots, h.robots_reason));
            (h.host, v)
        })
        .collect()
}

/// The queries whose top 10 a cluster crawl's index must share with the one-process
/// crawl's.
const QUERIES: [&str; 4] = [
    "stone river",
    "winter",
    "forest garden",
    "lighthouse keeper",
];

/// The URLs `search --top 10 QUERY` returns on `crawl`, in order.
fn top10(crawl: &Path, config: &Path, query: &str) -> Vec<String> {
    let out = run_ok("search", crawl, config, &["--json", "--top", "10", query]);
    hit_urls(&serde_json::from_str(&out).unwrap_or_else(|e| panic!("search --json ({e}): {out}")))
}

#[test]
fn two_rounds_on_a_two_worker_spark_cluster_with_a_fetch_task_killed() {
    if !java_present() {
        missing("Spark", "no `java` on PATH (Spark needs Java 17 or newer)");
        return;
    }
    let python = venv_python();
    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let Setup {
        map,
        seeds,
        reference,
        spark_dir,
        web,
        config,
    } = setup(dir, 2);

    // The cluster crawl. The doomed partition: the one holding the most seed hosts.
    let crawl = spark_dir.join("crawl");
    let mut hosts_per_partition = BTreeMap::new();
    for s in &map.seeds {
        let host = url::Url::parse(s).unwrap().host_str().unwrap().to_string();
        *hosts_per_partition
            .entry(Partitioner::by_host(PARTITIONS).of_host(&host))
            .or_insert(0) += 1;
    }
    let target = *hosts_per_partition
        .iter()
        .max_by_key(|(p, n)| (**n, std::cmp::Reverse(**p)))
        .unwrap()
        .0;

    let cluster = Cluster::start(&dir.join("cluster"), &python, 2);
    let out = cluster.submit(&crawl, &config, &["inject", seeds.to_str().unwrap()]);
    assert!(out.status.success(), "inject through Spark failed");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        stdout.contains(&format!("{PARTITIONS} tasks over {PARTITIONS} partitions")),
        "inject ran as {PARTITIONS} tasks:\n{stdout}"
    );

    let stop = Arc::new(AtomicBool::new(false));
    let killed = Arc::new(Mutex::new(None));
    let watcher = killer(
        crawl.clone(),
        web.log.clone(),
        target,
        stop.clone(),
        killed.clone(),
    );
    // Should the test fail before it resumes the frozen process, it is killed.
    let _reaper = Reaper(killed.clone());
    let out = cluster.submit(&crawl, &config, &["round", "--rounds", "2"]);
    stop.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    assert!(out.status.success(), "the rounds through Spark failed");
    drop(cluster);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let kill = killed.lock().unwrap().clone();
    let kill = kill.unwrap_or_else(|| {
        panic!("no fetch attempt of partition {target} was frozen (it never made {KILL_AFTER_PAGES} page requests)")
    });
    eprintln!(
        "froze fetch attempt pid {} of partition {target} after {} page requests and killed its executor {}",
        kill.pid, kill.pages_before, kill.executor
    );
    // The frozen process outlived its executor, still stopped (as on a machine cut
    // off): its leases were live when Spark retried the task. Resumed now, it must
    // send nothing and end.
    let frozen_state = state(&kill.pid);
    let resumed_ms = trawl::datum::now_millis();
    let _ = Command::new("kill").args(["-CONT", &kill.pid]).status();
    let waited = Instant::now();
    while cmdline(&kill.pid).is_some_and(|a| !a.is_empty()) {
        assert!(
            waited.elapsed() < Duration::from_secs(30),
            "the resumed fetch process {} did not end",
            kill.pid
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        !crawl.join("_jobs/fetch-checkpoints").exists(),
        "the fetch commits removed the checkpoints, and the resumed process wrote none"
    );
    // Spark ran the killed task again: its retry (attempt number 1) is what was committed.
    let retried: Vec<&str> = stdout
        .lines()
        .filter(|l| {
            l.contains(&format!("[partitions {target}, attempt")) && l.contains(", retry 1,")
        })
        .collect();
    assert_eq!(
        retried.len(),
        1,
        "one retried task of partition {target}:\n{stdout}"
    );
    assert!(
        retried[0].contains("fetch: "),
        "the retried task is a fetch task: {}",
        retried[0]
    );
    assert_eq!(
        stdout.matches("== round ").count(),
        2,
        "two rounds:\n{stdout}"
    );

    // The crawldb equals the one-process crawl's by URL, status and signature.
    let got = triples(crawldb(&crawl));
    let want = triples(crawldb(&reference));
    assert!(
        got.values().filter(|(s, _)| s == "db_fetched").count() > 10,
        "a real crawl: {got:?}"
    );
    assert_eq!(
        got, want,
        "the Spark crawl's crawldb differs from the one-process crawl's"
    );

    // The round is `crawl`'s: dedup marked the same duplicates, the hostdb holds the
    // same counts, the index answers with the same pages.
    let mirrored = |db: &BTreeMap<String, (String, Option<String>)>| -> usize {
        db.iter()
            .filter(|(u, (s, _))| s == "db_duplicate" && MIRRORS.iter().any(|h| u.contains(h)))
            .count()
    };
    assert!(
        mirrored(&want) >= 3,
        "`crawl`'s dedup marked the mirror's copies db_duplicate: {want:?}"
    );
    for step in ["dedup", "pagerank", "sitemap", "hostdb", "index"] {
        assert_eq!(
            stdout.matches(&format!("\n{step}: job ")).count(),
            2,
            "{step} ran in both Spark rounds:\n{stdout}"
        );
    }
    let line = |step: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(&format!("{step}: job ")))
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        line("hostdb").contains(&format!(
            "{PARTITIONS} tasks over {PARTITIONS} partitions, commit"
        )),
        "hostdb runs as partition tasks:\n{stdout}"
    );
    assert!(
        line("dedup").contains(&format!(
            "pass keys: {PARTITIONS} tasks over {PARTITIONS} partitions, pass groups: {PARTITIONS} tasks over {PARTITIONS} partitions"
        )),
        "dedup decides as partition tasks (a shuffle by signature):\n{stdout}"
    );
    assert!(
        line("sitemap").contains(&format!(
            "pass merge: {PARTITIONS} tasks over {PARTITIONS} partitions, commit"
        )),
        "sitemap merges its URLs as partition tasks:\n{stdout}"
    );
    assert!(
        line("pagerank").contains(&format!(
            "pass iterate: {PARTITIONS} tasks over {PARTITIONS} partitions per iteration"
        )),
        "pagerank iterates as partition tasks:\n{stdout}"
    );
    let (pa, pb) = (pagerank_rows(&crawl), pagerank_rows(&reference));
    assert!(pa.len() > 10, "a link graph: {pa:?}");
    assert_same_pagerank(&pa, &pb, "the Spark crawl's pagerank/");
    assert!(
        line("index").contains(&format!(
            "{PARTITIONS} tasks over {PARTITIONS} partitions, commit"
        )),
        "index builds its shards as partition tasks:\n{stdout}"
    );
    let hosts = hostdb_counts(&crawl);
    assert!(hosts.len() >= 2, "a hostdb: {hosts:?}");
    assert_eq!(
        hosts,
        hostdb_counts(&reference),
        "the Spark crawl's hostdb differs from the one-process crawl's"
    );
    for query in QUERIES {
        let spark = top10(&crawl, &config, query);
        assert!(!spark.is_empty(), "search {query:?} finds pages");
        assert_eq!(
            spark,
            top10(&reference, &config, query),
            "search {query:?}: the Spark crawl's index differs from the one-process crawl's"
        );
    }

    // Politeness across workers and attempts, robots.txt obeyed, from the request log.
    let log = web.stop();
    assert_eq!(
        frozen_state,
        Some('T'),
        "the frozen fetch process {} was still stopped (holding its leases) when the rounds ended",
        kill.pid
    );
    let after: Vec<_> = log.iter().filter(|l| l.time_ms > resumed_ms).collect();
    assert!(
        after.is_empty(),
        "requests after the frozen fetch process was resumed: {after:?}"
    );
    eprintln!("the frozen fetch process, resumed after the rounds, sent nothing");
    let hosts = assert_polite(&log, &map, DELAY_MS);
    // What the lost attempt's work cost: the retry continued from its checkpoints,
    // so only the pages it requested within its last checkpoint interval before it
    // was frozen were requested again.
    let mut pages: BTreeMap<(String, String), Vec<i64>> = BTreeMap::new();
    for l in log.iter().filter(|l| {
        l.path != "/robots.txt" && Partitioner::by_host(PARTITIONS).of_host(&l.host) == target
    }) {
        pages
            .entry((l.host.clone(), l.path.clone()))
            .or_default()
            .push(l.time_ms);
    }
    let twice: Vec<_> = pages.iter().filter(|(_, t)| t.len() > 1).collect();
    eprintln!(
        "pages of partition {target} requested twice (by the frozen attempt since its last checkpoint, and by its retry): {} of {}",
        twice.len(),
        pages.len()
    );
    // A checkpoint is published at most 1.5 intervals (its tick) after its first row,
    // and a row is written when its response ends: slack for both.
    let window_ms = (CHECKPOINT_SECS * 1500.0) as i64 + 500;
    for ((host, path), times) in &twice {
        let before = kill.frozen_ms - times[0];
        assert!(
            before <= window_ms,
            "{host}{path} was first requested {before} ms before the fetch attempt was frozen (more than a checkpoint interval) and again by its retry"
        );
    }
    let fetched_hosts: std::collections::BTreeSet<&str> = got
        .iter()
        .filter(|(_, (s, _))| s == "db_fetched")
        .filter_map(|(u, _)| u.split('/').nth(2))
        .collect();
    assert!(
        hosts >= fetched_hosts.len() && hosts >= 2,
        "the request log has every fetched host: {hosts} hosts requested, fetched {fetched_hosts:?}"
    );
    eprintln!(
        "cluster test done in {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

/// One round through Spark with the crawl directory on S3 (moto on loopback): no
/// shared file system between the driver and the executors; every task and step runs
/// on a scratch mirror of its own; the crawldb, hostdb, PageRank and search results
/// equal the one-process crawl's. Then a round whose driver was lost after fetch: the
/// next Spark round finishes that segment first (`trawl plan next`).
#[test]
fn one_round_on_a_two_worker_spark_cluster_with_the_crawl_on_s3() {
    if !java_present() {
        missing("Spark", "no `java` on PATH (Spark needs Java 17 or newer)");
        return;
    }
    let Some(moto) = common::moto::start_moto() else {
        return;
    };
    let python = venv_python();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let Setup {
        seeds,
        reference,
        web,
        config,
        ..
    } = setup(dir, 1);
    let uri = format!("s3://{}/spark", common::moto::BUCKET);
    let crawl = Path::new(&uri);
    let cluster = Cluster::start(&dir.join("cluster"), &python, 2);
    let out = cluster.submit_env(
        crawl,
        &config,
        &["inject", seeds.to_str().unwrap()],
        Some(&moto),
    );
    assert!(out.status.success(), "inject through Spark on S3 failed");
    let out = cluster.submit_env(crawl, &config, &["round", "--rounds", "1"], Some(&moto));
    assert!(out.status.success(), "the round through Spark on S3 failed");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        stdout.contains(&format!("{PARTITIONS} tasks over {PARTITIONS} partitions")),
        "the driver read the partition count from the store:\n{stdout}"
    );
    for step in ["dedup", "hostdb", "index"] {
        assert!(
            stdout.contains(&format!("\n{step}: job ")),
            "{step} ran:\n{stdout}"
        );
    }
    assert!(
        stdout.contains("pagerank iteration 1: L1 change"),
        "pagerank iterates as partition tasks on S3:\n{stdout}"
    );
    assert!(
        stdout.lines().any(|l| l.starts_with("index: job ")
            && l.contains(&format!(
                "{PARTITIONS} tasks over {PARTITIONS} partitions, commit"
            ))),
        "index builds its shards as partition tasks on S3:\n{stdout}"
    );
    let (got, hosts, ranks) = common::moto::s3_pull(&moto, dir, &uri, &config, |m| {
        (triples(crawldb(m)), hostdb_counts(m), pagerank_rows(m))
    });
    assert!(ranks.len() > 10, "a link graph on S3: {ranks:?}");
    assert_same_pagerank(
        &ranks,
        &pagerank_rows(&reference),
        "the Spark crawl's pagerank/ on S3",
    );
    assert!(hosts.len() >= 2, "a hostdb on S3: {hosts:?}");
    assert_eq!(
        hosts,
        hostdb_counts(&reference),
        "the Spark crawl's hostdb on S3 differs from the one-process crawl's"
    );
    let want = triples(crawldb(&reference));
    assert!(
        got.values().any(|(s, _)| s == "db_fetched"),
        "a real crawl: {got:?}"
    );
    assert_eq!(
        got, want,
        "the Spark crawl on S3 differs from the one-process crawl"
    );
    // The index was built on S3: `search` on the store (pulling the index alone into
    // a mirror of its own) finds what the one-process crawl's index finds.
    let reader = dir.join("search-reader");
    for query in QUERIES {
        let mut cmd = stage_command(
            bin("search"),
            crawl,
            &config,
            &["--json", "--top", "10", query],
        );
        common::moto::s3_env(&mut cmd, &moto, &reader);
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "search {query:?} on S3: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = hit_urls(&serde_json::from_str(&stdout).unwrap());
        assert!(!got.is_empty(), "search {query:?} on S3 finds pages");
        assert_eq!(
            got,
            top10(&reference, &config, query),
            "search {query:?}: the Spark crawl's index on S3 differs from the one-process crawl's"
        );
    }

    // A round whose driver was lost after generate and fetch (run here by hand on the
    // store): the next Spark round asks trawl what to run (`plan next`) and finishes
    // that segment first, then the steps over the whole crawl; nothing is generated or
    // fetched again.
    let by_hand = |stage: &str, args: &[&str]| -> String {
        let mut cmd = stage_command(bin(stage), crawl, &config, args);
        common::moto::s3_env(&mut cmd, &moto, &dir.join("by-hand"));
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{stage} on S3: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let out = by_hand("generate", &[]);
    let name = Path::new(out.trim().lines().last().unwrap())
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    by_hand("fetch", &[&name]);
    // (Three PageRank iterations: the scores are not compared here.)
    let out = cluster.submit_env(
        crawl,
        &config,
        &[
            "round",
            "--rounds",
            "1",
            "--pagerank-flags",
            "--max-iterations 3",
        ],
        Some(&moto),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "the resumed round failed:\n{stdout}");
    assert!(
        stdout.contains(&format!("round 1: segment {name}")),
        "the round took the pending segment {name}:\n{stdout}"
    );
    for step in ["generate", "fetch"] {
        assert!(
            !stdout.contains(&format!("\n{step}: job ")),
            "{step} did not run again:\n{stdout}"
        );
    }
    for step in [
        "parse", "updatedb", "linkdb", "dedup", "pagerank", "hostdb", "index",
    ] {
        assert!(
            stdout.contains(&format!("\n{step}: job ")),
            "{step} ran:\n{stdout}"
        );
    }
    let applied = common::moto::s3_pull(&moto, dir, &uri, &config, |m| {
        let dir = trawl::store::layout::CrawlDir::new(m);
        dir.crawldb_meta().unwrap().is_applied(&name)
    });
    assert!(applied, "the resumed round applied {name}");

    // A Spark driver lost after its round's pagerank: the steps it ran (here by hand)
    // are in its progress file (`trawl plan done`, as the driver records them). A
    // driver started with the same file runs the rest of that round (sitemap, hostdb,
    // index), not a new one, and removes the file when the round is over.
    let progress = dir.join("state").join("spark-round.json");
    std::fs::create_dir_all(progress.parent().unwrap()).unwrap();
    let progress_arg = progress.to_str().unwrap();
    let out = by_hand("generate", &[]);
    let name = Path::new(out.trim().lines().last().unwrap())
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let record = |stage: &str, segment: Option<&str>| {
        let mut args = vec![
            "done",
            "--progress",
            progress_arg,
            "--done",
            stage,
            "--exit",
            "0",
        ];
        if let Some(s) = segment {
            args.extend(["--segment", s]);
        }
        let out = by_hand("plan", &args);
        assert!(out.contains("\"outcome\":null"), "plan done {stage}: {out}");
    };
    record("generate", Some(&name));
    for stage in ["fetch", "parse", "updatedb", "linkdb"] {
        by_hand(stage, &[&name]);
        record(stage, Some(&name));
    }
    by_hand("dedup", &[]);
    record("dedup", None);
    by_hand("pagerank", &["--set", "pagerank.max_iterations=3"]);
    record("pagerank", None);
    let out = cluster.submit_env(
        crawl,
        &config,
        &["round", "--rounds", "1", "--progress", progress_arg],
        Some(&moto),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the round of a lost driver failed:\n{stdout}"
    );
    for step in ["sitemap", "hostdb", "index"] {
        assert!(
            stdout.contains(&format!("\n{step}: job ")),
            "{step}, not run by the lost driver, ran:\n{stdout}"
        );
    }
    for step in [
        "generate", "fetch", "parse", "updatedb", "linkdb", "dedup", "pagerank",
    ] {
        assert!(
            !stdout.contains(&format!("\n{step}: job ")),
            "{step}, run by the lost driver, did not run again:\n{stdout}"
        );
    }
    assert!(
        !progress.exists(),
        "the round is over: its progress file is gone"
    );
    drop(cluster);
    web.stop();
}

/// Spark reads the tables of a crawl on an object store (here a `file://` one, the
/// same layout as S3: Spark would need hadoop-aws's JAR for `s3a://`) from the files
/// their current Delta version lists, as `deltalake` does: the rows trawl counts.
#[test]
fn spark_reads_the_tables_of_a_crawl_on_an_object_store_from_their_delta_file_lists() {
    if !java_present() {
        missing("Spark", "no `java` on PATH (Spark needs Java 17 or newer)");
        return;
    }
    let python = venv_python();
    let has_delta = Command::new(&python)
        .args(["-c", "import deltalake, polars, pyarrow"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_delta {
        missing(
            "the Delta Lake readers (deltalake, polars, pyarrow)",
            "the virtualenv cannot import them; `make test` installs them",
        );
        return;
    }
    ran_with("Spark");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let config = dir.join("trawl.toml");
    std::fs::write(&config, "[crawl]\npartitions = 4\n").unwrap();
    let seeds = dir.join("seeds.txt");
    let text: String = (0..12)
        .map(|h| format!("http://h{h}.example.test/\nhttp://h{h}.example.test/a\n"))
        .collect();
    std::fs::write(&seeds, text).unwrap();
    let store = dir.join("store");
    let uri = format!("file://{}", store.display());
    let stage = |name: &str, args: &[&str]| -> String {
        let out = stage_command(bin(name), Path::new(&uri), &config, args)
            .env("TRAWL_WORK_DIR", dir.join("work"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name} on {uri} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    stage("inject", &[seeds.to_str().unwrap()]);
    let generated = stage("generate", &[]);
    let segment = Path::new(generated.trim().lines().last().unwrap())
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let stats = stage("readdb", &["--stats"]);
    assert!(stats.contains("urls\t24\n"), "{stats}");
    let tables = [
        format!("{uri}/crawldb"),
        format!("{uri}/segments/{segment}/crawl_generate"),
    ];
    let out = Command::new(&python)
        .arg(repo().join("scripts/read_delta.py"))
        .arg("--spark")
        .args(&tables)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "read_delta.py --spark failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(read.len(), 2, "{stdout}");
    for (table, got) in tables.iter().zip(&read) {
        assert_eq!(got["spark"], got["deltalake"], "{table}: {got}");
        assert_eq!(got["pyarrow"], got["deltalake"], "{table}: {got}");
    }
    assert_eq!(read[0]["spark"], 24, "{}", read[0]);
    assert!(read[1]["spark"].as_u64().unwrap() > 0, "{}", read[1]);
}
