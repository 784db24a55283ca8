//! Shared helpers of the integration tests: start the local test web, write a crawl
//! config that maps its hosts to it, run stage binaries, read what they wrote.
#![allow(dead_code)]

pub mod browser;
pub mod moto;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A running `testweb serve`, killed on drop.
pub struct TestWeb {
    child: Child,
    /// The `ip:port` it listens on.
    pub addr: String,
    /// Its request log (JSON lines).
    pub log: PathBuf,
}

impl TestWeb {
    /// Starts the test web with `flags` (e.g. `["--seed", "7", "--hosts", "6"]`) on a
    /// free loopback port, logging into `dir`.
    pub fn start(dir: &Path, flags: &[&str]) -> TestWeb {
        TestWeb::start_on(dir, "127.0.0.1:0", flags)
    }

    /// Starts the test web with `flags` on `addr` (e.g. the address a stopped one had,
    /// to serve its next generation where the crawl's config points), logging into `dir`.
    pub fn start_on(dir: &Path, addr: &str, flags: &[&str]) -> TestWeb {
        let addr_file = dir.join("testweb.addr");
        let log = dir.join("testweb.log");
        let _ = std::fs::remove_file(&addr_file);
        let child = Command::new(testweb_bin())
            .args(["serve", "--addr", addr])
            .args(flags)
            .arg("--log")
            .arg(&log)
            .arg("--addr-file")
            .arg(&addr_file)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start testweb");
        let started = Instant::now();
        while !addr_file.is_file() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "testweb did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let addr = std::fs::read_to_string(&addr_file)
            .unwrap()
            .trim()
            .to_string();
        TestWeb { child, addr, log }
    }

    /// Stops the server (flushing its log) and returns the log lines.
    pub fn stop(mut self) -> Vec<LogLine> {
        stop_gracefully(&mut self.child);
        read_log(&self.log)
    }
}

impl Drop for TestWeb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn stop_gracefully(child: &mut Child) {
    // SIGTERM lets the server flush its request log.
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(10) {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// One request the test web served.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct LogLine {
    pub time_ms: i64,
    pub host: String,
    pub path: String,
    pub status: u16,
    /// The server's number of the connection (keep-alive reuse: same number).
    #[serde(default)]
    pub conn: u64,
    /// The request came over TLS.
    #[serde(default)]
    pub tls: bool,
}

/// Reads a test web request log.
pub fn read_log(path: &Path) -> Vec<LogLine> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad log line {l:?}: {e}")))
        .collect()
}

/// Writes a config file for a crawl of the test web at `addr`, with extra TOML appended
/// per section (`extra` is raw TOML placed after the generated sections).
pub fn write_config(dir: &Path, addr: &str, fetch_delay: f64, extra: &str) -> PathBuf {
    let path = dir.join("trawl.toml");
    let text = format!(
        "[crawl]\npartitions = 4\n\n[fetch]\ndelay = {fetch_delay}\nmax_connections = 32\n\n\
         [fetch.resolve]\n\"*.web.test\" = \"{addr}\"\n\n{extra}\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// The path of the `testweb` binary. It belongs to the workspace member
/// `trawl-testweb`, so Cargo sets no `CARGO_BIN_EXE_testweb` here: it lies beside the
/// stage binaries in the workspace's target directory. A full `cargo test` at the
/// workspace root builds it (trawl-testweb has integration tests of its own); a run of
/// selected files (`cargo test --test x`) does not, so this refuses a binary that is
/// missing or older than a source file of `testweb/src`.
pub fn testweb_bin() -> &'static str {
    static PATH: OnceLock<String> = OnceLock::new();
    PATH.get_or_init(|| {
        let stage = Path::new(env!("CARGO_BIN_EXE_trawl"));
        let path = stage.with_file_name(format!("testweb{}", std::env::consts::EXE_SUFFIX));
        let rebuild = "run `cargo build --release --bins` (or a full `cargo test`) first";
        let built = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .unwrap_or_else(|_| panic!("{} is missing: {rebuild}", path.display()));
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("testweb/src");
        for f in files_under(&src) {
            let changed = std::fs::metadata(&f).and_then(|m| m.modified()).unwrap();
            assert!(
                changed <= built,
                "{} is older than {}: {rebuild}",
                path.display(),
                f.display()
            );
        }
        path.to_string_lossy().into_owned()
    })
}

/// The path of a command: `trawl`, `testweb`, or a stage or tool by its own name (a
/// link to `trawl`, made beside it once per test binary as `make build` makes them).
pub fn bin(name: &str) -> &'static str {
    static LINKS: OnceLock<BTreeMap<&'static str, String>> = OnceLock::new();
    match name {
        "trawl" => env!("CARGO_BIN_EXE_trawl"),
        "testweb" => testweb_bin(),
        _ => LINKS
            .get_or_init(|| {
                let exe = Path::new(env!("CARGO_BIN_EXE_trawl"));
                let dir = exe.parent().unwrap();
                trawl::cli::install_links(exe, dir)
                    .unwrap_or_else(|e| panic!("links to {}: {e}", exe.display()));
                trawl::cli::COMMANDS
                    .iter()
                    .map(|c| (c.name, dir.join(c.name).to_string_lossy().into_owned()))
                    .collect()
            })
            .get(name)
            .unwrap_or_else(|| panic!("unknown binary {name}")),
    }
}

/// The command that runs the binary at `path` on `crawl` with `config` and `args`,
/// logging at `warn`, the environment's TRAWL_* variables removed.
pub fn stage_command(path: &str, crawl: &Path, config: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(path);
    cmd.arg("--crawl-dir")
        .arg(crawl)
        .arg("--config")
        .arg(config)
        .args(args)
        .env_remove("TRAWL_CONFIG")
        .env_remove("TRAWL_CRAWL_DIR")
        .env_remove("TRAWL_SET")
        .env("RUST_LOG", "warn");
    cmd
}

/// Runs a stage with `--crawl-dir` and `--config`, returning its output (not checked).
pub fn run(stage: &str, crawl: &Path, config: &Path, args: &[&str]) -> Output {
    stage_command(bin(stage), crawl, config, args)
        .output()
        .unwrap_or_else(|e| panic!("run {stage}: {e}"))
}

/// Runs a stage and asserts it succeeded; returns stdout.
pub fn run_ok(stage: &str, crawl: &Path, config: &Path, args: &[&str]) -> String {
    let out = run(stage, crawl, config, args);
    assert!(
        out.status.success(),
        "{stage} {args:?} failed ({:?}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs generate; returns the new segment's path (its last stdout line).
pub fn generate_segment(crawl: &Path, config: &Path) -> String {
    let out = run_ok("generate", crawl, config, &[]);
    out.trim().lines().last().unwrap().to_string()
}

/// Runs fetch on `segment`, asserting success; returns its stderr (the summary line).
pub fn fetch_ok(crawl: &Path, config: &Path, segment: &str) -> String {
    let out = run("fetch", crawl, config, &[segment]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "fetch failed:\n{stderr}");
    stderr
}

/// A fetched segment's crawl_fetch rows by URL, asserting one row per URL.
pub fn fetch_rows(segment: &str) -> BTreeMap<String, trawl::records::FetchRecord> {
    let rows: Vec<trawl::records::FetchRecord> =
        trawl::store::parquet::read_dataset(&Path::new(segment).join("crawl_fetch")).unwrap();
    let n = rows.len();
    let map: BTreeMap<_, _> = rows.into_iter().map(|r| (r.url.clone(), r)).collect();
    assert_eq!(map.len(), n, "a URL has more than one crawl_fetch row");
    map
}

/// A fetched segment's content rows by URL.
pub fn content_rows(segment: &str) -> BTreeMap<String, trawl::records::ContentRecord> {
    let rows: Vec<trawl::records::ContentRecord> =
        trawl::store::parquet::read_dataset(&Path::new(segment).join("content")).unwrap();
    rows.into_iter().map(|r| (r.url.clone(), r)).collect()
}

/// One full round; returns the segment path, or None when generate found nothing due.
pub fn round(crawl: &Path, config: &Path) -> Option<String> {
    let out = run("generate", crawl, config, &[]);
    if out.status.code() == Some(3) {
        return None;
    }
    assert!(
        out.status.success(),
        "generate failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let segment = String::from_utf8_lossy(&out.stdout)
        .trim()
        .lines()
        .last()
        .unwrap()
        .to_string();
    for stage in ["fetch", "parse", "updatedb", "linkdb"] {
        run_ok(stage, crawl, config, &[&segment]);
    }
    run_ok("pagerank", crawl, config, &[]);
    Some(segment)
}

/// The crawldb as url -> status.
pub fn crawldb_statuses(crawl: &Path) -> BTreeMap<String, String> {
    let rows: Vec<trawl::CrawlDatum> =
        trawl::store::parquet::read_dataset(&crawl.join("crawldb/current")).unwrap();
    rows.into_iter()
        .map(|d| (d.url, d.status.as_str().to_string()))
        .collect()
}

/// The crawldb's rows by URL.
pub fn crawldb(crawl: &Path) -> BTreeMap<String, trawl::CrawlDatum> {
    let rows: Vec<trawl::CrawlDatum> =
        trawl::store::parquet::read_dataset(&crawl.join("crawldb/current")).unwrap();
    rows.into_iter().map(|d| (d.url.clone(), d)).collect()
}

/// The demo's test web (`make demo`): 20 sites of 40 pages and the sitemap hosts.
pub const DEMO_WEB: &[&str] = &[
    "--seed",
    "42",
    "--hosts",
    "20",
    "--pages",
    "40",
    "--sitemaps",
];

/// The corpus directory (`../shared/corpora` beside the checkout), if present.
pub fn corpora() -> Option<PathBuf> {
    let candidates = [
        std::env::var("TRAWL_CORPORA").ok().map(PathBuf::from),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpora")),
    ];
    candidates.into_iter().flatten().find(|p| p.is_dir())
}

/// Writes and loads the site map of the test web `testweb serve <web>` would serve.
pub fn site_map(dir: &Path, web: &[&str]) -> testweb::SiteMap {
    let path = dir.join("sitemap.json");
    let out = Command::new(bin("testweb"))
        .arg("sitemap")
        .args(web)
        .arg("--out")
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    testweb::SiteMap::load(&path).unwrap()
}

/// Asserts, from a test web's request log, that robots.txt was obeyed (no URL the
/// site map marks disallowed was requested) and the politeness delay held (no two
/// requests to one host closer than `delay_ms`, 2 ms of clock granularity allowed).
/// Returns the number of hosts requested.
pub fn assert_polite(log: &[LogLine], map: &testweb::SiteMap, delay_ms: i64) -> usize {
    let mut by_host: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for line in log {
        let url = format!("http://{}{}", line.host, line.path);
        if let Some(e) = map.get(&url) {
            assert!(!e.disallowed, "robots-disallowed {url} was requested");
        }
        by_host.entry(&line.host).or_default().push(line.time_ms);
    }
    let hosts = by_host.len();
    for (host, mut times) in by_host {
        times.sort();
        for w in times.windows(2) {
            assert!(
                w[1] - w[0] >= delay_ms - 2,
                "two requests to {host} {} ms apart (delay {delay_ms} ms)",
                w[1] - w[0]
            );
        }
    }
    hosts
}

/// Every segment's parse rows, the newest parse of each URL.
pub fn parses(
    crawl: &Path,
) -> BTreeMap<
    String,
    (
        trawl::records::ParseDataRecord,
        trawl::records::ParseTextRecord,
    ),
> {
    let mut out = BTreeMap::new();
    for s in segment_dirs(crawl) {
        let data: Vec<trawl::records::ParseDataRecord> =
            trawl::store::parquet::read_dataset(&s.join("parse_data")).unwrap();
        let text: Vec<trawl::records::ParseTextRecord> =
            trawl::store::parquet::read_dataset(&s.join("parse_text")).unwrap();
        let mut text: BTreeMap<String, trawl::records::ParseTextRecord> =
            text.into_iter().map(|t| (t.url.clone(), t)).collect();
        for d in data {
            let t = text.remove(&d.url).unwrap();
            out.insert(d.url.clone(), (d, t));
        }
    }
    out
}

/// The crawl's segment directories, oldest first.
pub fn segment_dirs(crawl: &Path) -> Vec<PathBuf> {
    let mut segs: Vec<PathBuf> = std::fs::read_dir(crawl.join("segments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    segs.sort();
    segs
}

/// Writes `seeds` to a seed file in `dir` and injects them.
pub fn inject_seeds(dir: &Path, crawl: &Path, config: &Path, seeds: &[String]) {
    let file = dir.join("seeds.txt");
    std::fs::write(&file, seeds.join("\n") + "\n").unwrap();
    run_ok("inject", crawl, config, &[file.to_str().unwrap()]);
}

/// The URLs of the hits of a search's JSON answer (`search --json`, the search API),
/// in rank order.
pub fn hit_urls(v: &serde_json::Value) -> Vec<String> {
    v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["url"].as_str().unwrap().to_string())
        .collect()
}

/// Every file under `dir`, recursively, sorted (none when it does not exist; a
/// directory removed while it is read, by a stage at work, is skipped).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Every file under `dir` with its bytes, to show that a refused stage changed nothing.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    files_under(dir)
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
}

/// The command of one partition task: `stage args --job J --partitions S --attempt A`.
pub fn task_command(
    stage: &str,
    crawl: &Path,
    config: &Path,
    args: &[&str],
    job: &str,
    pset: &str,
    attempt: &str,
) -> Command {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--job", job, "--partitions", pset, "--attempt", attempt]);
    stage_command(bin(stage), crawl, config, &all)
}

/// Runs `cmd`, asserting success; returns its stdout then its stderr.
pub fn output_ok(mut cmd: Command) -> String {
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{cmd:?} failed ({:?}):\n{err}",
        out.status
    );
    String::from_utf8_lossy(&out.stdout).into_owned() + &err
}

/// Runs a job's commit (`stage args --job J --commit`), asserting success; returns
/// its stdout then its stderr.
pub fn commit_ok(stage: &str, crawl: &Path, config: &Path, args: &[&str], job: &str) -> String {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--job", job, "--commit"]);
    output_ok(stage_command(bin(stage), crawl, config, &all))
}

/// Copies the directory tree `from` to `to` (created).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// The number after `key ` in the summary line of `stage` (`<stage>: ...`) in `out`.
pub fn summary_count(out: &str, stage: &str, key: &str) -> u64 {
    let line = out
        .lines()
        .find(|l| l.starts_with(&format!("{stage}: ")))
        .unwrap_or_else(|| panic!("no {stage} summary line in {out}"));
    let at = line
        .find(&format!("{key} "))
        .unwrap_or_else(|| panic!("no {key:?} in {line}"));
    line[at + key.len() + 1..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// What each URL's crawldb status must be after each round, simulated from the site
/// map alone: every known unfetched URL is fetched in the next round (the web is small
/// enough that no cap binds); a 200 page's outlinks (unless the page is nofollow) become
/// known with depth + 1 and a redirect's target with the redirect's own depth (it is the
/// same page under a new name: docs/crawldb.md), unless deeper than `max_depth`.
pub fn expected_rounds(
    map: &testweb::SiteMap,
    rounds: usize,
    max_depth: u32,
) -> Vec<BTreeMap<String, String>> {
    let mut status: BTreeMap<String, String> = BTreeMap::new();
    let mut depth: BTreeMap<String, u32> = BTreeMap::new();
    for s in &map.seeds {
        status.insert(s.clone(), "db_unfetched".into());
        depth.insert(s.clone(), 0);
    }
    let mut out = Vec::new();
    for _ in 0..rounds {
        let due: Vec<String> = status
            .iter()
            .filter(|(_, st)| *st == "db_unfetched")
            .map(|(u, _)| u.clone())
            .collect();
        let mut discovered = Vec::new();
        for url in due {
            let d = depth[&url];
            let entry = map.get(&url);
            let new_status = match entry {
                None => "db_gone",
                Some(e) if e.disallowed => "db_gone",
                Some(e) => match e.status {
                    200 => {
                        if !e.nofollow {
                            discovered.extend(e.outlinks.iter().map(|l| (l.clone(), d + 1)));
                        }
                        "db_fetched"
                    }
                    301 | 308 => {
                        discovered.extend(e.redirect.iter().map(|l| (l.clone(), d)));
                        "db_redir_perm"
                    }
                    302 | 303 | 307 => {
                        discovered.extend(e.redirect.iter().map(|l| (l.clone(), d)));
                        "db_redir_temp"
                    }
                    _ => "db_gone",
                },
            };
            status.insert(url, new_status.into());
        }
        for (u, d) in discovered {
            if d <= max_depth && !status.contains_key(&u) {
                status.insert(u.clone(), "db_unfetched".into());
                depth.insert(u, d);
            }
        }
        out.push(status.clone());
    }
    out
}

pub fn counts(m: &BTreeMap<String, String>) -> BTreeMap<String, usize> {
    let mut c = BTreeMap::new();
    for s in m.values() {
        *c.entry(s.clone()).or_insert(0) += 1;
    }
    c
}

/// Under `CI=true` (`.ci/run`, which installs every real component a test needs).
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// A real component this test needs is missing: under `CI=true` the test fails (CI
/// installs every component, so a missing one is a broken install, not a skip);
/// elsewhere it prints why the test is skipped.
pub fn missing(component: &str, why: &str) {
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    assert!(
        !under_ci(),
        "{test}: {component} is missing under CI=true ({why}); .ci/run installs it"
    );
    eprintln!("SKIPPED {test}: {component} is missing: {why}");
}

/// Records that this test runs against the real component `component` (Spark, the
/// S3 server, Chromium, warcio, the shared corpora): one line in
/// `target/tmp/real-components.txt`, which `make test` prints after the tests.
pub fn ran_with(component: &str) {
    use std::io::Write;
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("real-components.txt");
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
    {
        let _ = writeln!(f, "{component}\t{test}");
    }
}

/// Starts `cmd` (a task that takes fetch leases) and waits until it holds `lease`.
pub fn spawn_holding(cmd: &mut Command, lease: &Path) -> Child {
    let child = cmd.spawn().unwrap();
    let started = Instant::now();
    while !lease.is_file() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no lease taken"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// Sends `signal` (`-STOP`, `-CONT`, ..) to the process `pid`, asserting it was sent.
pub fn send_signal(pid: u32, signal: &str) {
    let sent = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill {signal} {pid}");
}

/// pagerank as partition tasks through the binary, as a driver runs them: links,
/// graph, iterate (`--iteration K` from 0, each followed by the check in the driver
/// until it prints `"again": false`), rewrite with the last K, the commit.
/// `run_pass(flags)` runs one pass's tasks (`flags`: `--pass P [--iteration K]`).
/// Returns the iterations run.
pub fn pagerank_as_tasks(
    crawl: &Path,
    config: &Path,
    job: &str,
    run_pass: &dyn Fn(&[&str]),
) -> usize {
    for pass in ["links", "graph"] {
        run_pass(&["--pass", pass]);
    }
    let mut k = 0usize;
    loop {
        let ks = k.to_string();
        run_pass(&["--pass", "iterate", "--iteration", &ks]);
        let out = run_ok(
            "pagerank",
            crawl,
            config,
            &["--job", job, "--check", "--iteration", &ks],
        );
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON line");
        assert_eq!(v["iteration"], k, "{out}");
        // The check removed the iterations no task reads again, and kept the one a
        // late attempt of this iteration may still read.
        let shuffle = |i: usize| crawl.join(format!("_jobs/{job}/shuffle.rank.{i}"));
        if k >= 2 {
            assert!(
                !shuffle(k - 2).exists(),
                "iteration {} left after check {k}",
                k - 2
            );
        }
        if k >= 1 {
            assert!(
                shuffle(k - 1).exists(),
                "iteration {} removed by check {k}",
                k - 1
            );
        }
        if !v["again"].as_bool().expect("again") {
            break;
        }
        assert!(k < 1000, "the iteration does not stop");
        k += 1;
    }
    let ks = k.to_string();
    run_pass(&["--pass", "rewrite", "--iteration", &ks]);
    commit_ok("pagerank", crawl, config, &[], job);
    k
}

/// Writes a crawldb of `rows` (one list per partition, sorted here) and a parsed
/// segment whose `parse_data` holds `sims` (one list per partition).
pub fn write_crawl(
    root: &Path,
    rows: Vec<Vec<trawl::CrawlDatum>>,
    sims: Vec<Vec<trawl::records::ParseDataRecord>>,
) {
    let dir = trawl::store::layout::CrawlDir::new(root);
    let parts = rows.len();
    let staged = trawl::store::parquet::StagedDataset::new(&dir.crawldb_current()).unwrap();
    for (i, mut rows) in rows.into_iter().enumerate() {
        rows.sort_by(|a, b| a.url.cmp(&b.url));
        let mut w =
            trawl::store::parquet::PartWriter::<trawl::CrawlDatum>::create(&staged.part_path(i))
                .unwrap();
        for r in rows {
            w.push(r).unwrap();
        }
        w.finish().unwrap();
    }
    let meta = trawl::store::layout::CrawlDbMeta {
        partitions: parts,
        ..Default::default()
    };
    trawl::store::parquet::write_json(
        &staged.path().join(trawl::store::layout::CRAWLDB_META),
        &meta,
    )
    .unwrap();
    staged.commit().unwrap();
    let seg = dir.segments_dir().join("20260101000000");
    std::fs::create_dir_all(&seg).unwrap();
    trawl::store::parquet::write_json(
        &seg.join("_meta.json"),
        &trawl::store::layout::SegmentMeta {
            name: "20260101000000".into(),
            generated_time: 0,
            partitions: parts,
            partition_key: Default::default(),
            urls: sims.iter().map(Vec::len).sum::<usize>() as u64,
            redirects_in_crawl_parse: false,
        },
    )
    .unwrap();
    let staged = trawl::store::parquet::StagedDataset::new(&seg.join("parse_data")).unwrap();
    for (i, rows) in sims.into_iter().enumerate() {
        let mut w = trawl::store::parquet::PartWriter::<trawl::records::ParseDataRecord>::create(
            &staged.part_path(i),
        )
        .unwrap();
        for r in rows {
            w.push(r).unwrap();
        }
        w.finish().unwrap();
    }
    staged.commit().unwrap();
}

/// `pagerank/` of a crawl: URL -> (score, in-degree, out-degree).
pub fn pagerank_rows(crawl: &Path) -> BTreeMap<String, (f64, i64, i64)> {
    trawl::store::parquet::read_dataset::<trawl::records::PageRankRecord>(&crawl.join("pagerank"))
        .unwrap()
        .into_iter()
        .map(|r| (r.url, (r.score, r.in_degree, r.out_degree)))
        .collect()
}

/// pagerank/ rows of two crawls: the same pages and degrees, scores within float
/// rounding of each other (L1 distance at most 1e-9).
pub fn assert_same_pagerank(
    a: &BTreeMap<String, (f64, i64, i64)>,
    b: &BTreeMap<String, (f64, i64, i64)>,
    when: &str,
) {
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "{when}: pagerank/ pages differ"
    );
    let mut l1 = 0.0;
    for (url, x) in a {
        let y = &b[url];
        assert_eq!((x.1, x.2), (y.1, y.2), "{when}: {url}: in/out degrees");
        l1 += (x.0 - y.0).abs();
    }
    assert!(l1 <= 1e-9, "{when}: pagerank/ scores differ by L1 {l1:e}");
}

/// A parsed page's `parse_data` row with no links, title, signature or SimHash.
pub fn parse_data_row(url: &str) -> trawl::records::ParseDataRecord {
    trawl::records::ParseDataRecord {
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
        simhash: None,
        metadata: Default::default(),
    }
}
