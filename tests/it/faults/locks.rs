//! Faults: locks. Two stages writing one segment (or the crawldb, or the linkdb) at
//! once: the second is refused with exit code 6, naming the holder; a lock whose
//! holder is gone (dead pid, reused pid, rebooted host) is reported and taken over.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

const LOCKED: i32 = 6;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string()
}

fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .unwrap()
        .trim()
        .to_string()
}

/// Field 22 of `/proc/<pid>/stat`: the process's start time in ticks since boot.
fn start_time(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 1..];
    rest.split_whitespace().nth(19).unwrap().parse().unwrap()
}

/// Writes a lock file in the JSON format, as a `stage` run by `pid` would have.
fn write_lock(path: &Path, stage: &str, pid: u32, start: u64, boot: &str) {
    let body = serde_json::json!({
        "pid": pid,
        "host": hostname(),
        "stage": stage,
        "since": "2026-11-24T05:00:00+00:00",
        "start_time": start,
        "boot_id": boot,
    });
    std::fs::write(path, serde_json::to_string_pretty(&body).unwrap()).unwrap();
}

/// A process that runs until killed (a live pid for lock files).
struct Sleeper(Child);

impl Sleeper {
    fn start() -> Sleeper {
        Sleeper(
            Command::new("sleep")
                .arg("600")
                .stdout(Stdio::null())
                .spawn()
                .unwrap(),
        )
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Kills and reaps it: its pid no longer exists.
    fn stop(mut self) -> u32 {
        let pid = self.0.id();
        let _ = self.0.kill();
        let _ = self.0.wait();
        pid
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The pid of a process that has exited and been reaped.
fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    assert!(!Path::new(&format!("/proc/{pid}")).exists());
    pid
}

/// The lock file of the segment at `segment`: `segments/<name>.lock`.
fn segment_lock(segment: &str) -> PathBuf {
    let p = Path::new(segment);
    p.with_file_name(format!("{}.lock", p.file_name().unwrap().to_string_lossy()))
}

/// A crawl of one test web host with `pages` page URLs injected (all in one segment).
fn one_host_crawl(dir: &Path, web: &TestWeb, delay: f64, pages: usize) -> (PathBuf, PathBuf) {
    let config = write_config(dir, &web.addr, delay, "");
    let crawl = dir.join("crawl");
    let seeds: Vec<String> = (1..=pages)
        .map(|j| format!("http://site0.web.test/p{j}.html"))
        .collect();
    inject_seeds(dir, &crawl, &config, &seeds);
    (crawl, config)
}

fn assert_refused(out: &Output, what: &str, holder: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(LOCKED), "{what}: {err}");
    assert!(err.contains("is locked"), "{what}: {err}");
    assert!(err.contains(holder), "{what} names {holder:?}: {err}");
}

#[test]
fn second_fetch_of_a_segment_is_refused_and_every_url_is_fetched_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let web = TestWeb::start(dir, &["--seed", "5", "--hosts", "1", "--pages", "12"]);
    let (crawl, config) = one_host_crawl(dir, &web, 0.5, 10);
    let segment = generate_segment(&crawl, &config);
    let lock = segment_lock(&segment);

    // The first fetch: 10 pages and robots.txt on one host, 0.5 s apart (about 5 s:
    // room for the refused runs below on a loaded machine).
    let log_a = dir.join("fetch-a.log");
    let mut first = Command::new(bin("fetch"))
        .arg("--crawl-dir")
        .arg(&crawl)
        .arg("--config")
        .arg(&config)
        .arg(&segment)
        .env_remove("TRAWL_CONFIG")
        .env_remove("TRAWL_CRAWL_DIR")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log_a).unwrap())
        .spawn()
        .unwrap();
    let pid = first.id();
    let started = Instant::now();
    while !lock.is_file() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the first fetch never took {}",
            lock.display()
        );
        assert!(
            first.try_wait().unwrap().is_none(),
            "first fetch ended early"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let holder = format!("held by fetch (pid {pid} on host {}", hostname());

    // While it runs (the refusals name its pid: it holds the lock), a second fetch of
    // the segment, named or picked as the newest unfetched one, and a parse of it are
    // refused.
    let out = run("fetch", &crawl, &config, &[&segment]);
    assert_refused(&out, "second fetch", &holder);
    let out = run("fetch", &crawl, &config, &[]);
    assert_refused(&out, "second fetch (newest segment)", &holder);
    let out = run("parse", &crawl, &config, &[&segment]);
    assert_refused(&out, "parse of a segment being fetched", &holder);

    // The first fetch completes undisturbed and releases the lock.
    let status = first.wait().unwrap();
    let err_a = std::fs::read_to_string(&log_a).unwrap();
    assert!(status.success(), "first fetch: {err_a}");
    assert!(!lock.exists(), "lock released");
    let fetch_list: Vec<trawl::CrawlDatum> =
        trawl::store::parquet::read_dataset(&Path::new(&segment).join("crawl_generate")).unwrap();
    assert_eq!(fetch_list.len(), 10);
    let rows = fetch_rows(&segment);
    assert_eq!(
        rows.keys().cloned().collect::<Vec<_>>(),
        fetch_list.iter().map(|d| d.url.clone()).collect::<Vec<_>>()
    );
    assert!(
        rows.values().all(|r| r.status.as_str() == "fetch_success"),
        "{rows:?}"
    );
    assert_eq!(content_rows(&segment).len(), 10);

    // The server saw every URL exactly once: robots.txt and the 10 pages.
    let log = web.stop();
    let mut requests: BTreeMap<String, usize> = BTreeMap::new();
    for l in &log {
        *requests
            .entry(format!("http://{}{}", l.host, l.path))
            .or_default() += 1;
    }
    let mut want: BTreeMap<String, usize> = fetch_list.iter().map(|d| (d.url.clone(), 1)).collect();
    want.insert("http://site0.web.test/robots.txt".into(), 1);
    assert_eq!(requests, want, "every URL requested exactly once");

    // And the round goes on.
    for stage in ["parse", "updatedb", "linkdb"] {
        run_ok(stage, &crawl, &config, &[&segment]);
    }
}

#[test]
fn segment_lock_of_a_dead_process_is_taken_over_before_leftovers_are_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let web = TestWeb::start(dir, &["--seed", "5", "--hosts", "1", "--pages", "6"]);
    let (crawl, config) = one_host_crawl(dir, &web, 0.0, 3);
    let segment = generate_segment(&crawl, &config);
    let lock = segment_lock(&segment);

    // A fetch killed with its lock held and staging output left behind.
    let dead = dead_pid();
    write_lock(&lock, "fetch", dead, 12345, &boot_id());
    let leftover = Path::new(&segment).join(format!("crawl_fetch.tmp-{dead}"));
    std::fs::create_dir_all(&leftover).unwrap();
    std::fs::write(leftover.join("part-00000.parquet"), b"half written").unwrap();

    let out = run("fetch", &crawl, &config, &[&segment]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "stale lock {}: fetch (pid {dead} on host {}",
            lock.display(),
            hostname()
        )) && err.contains(&format!("pid {dead} no longer exists; taking it over")),
        "the takeover is reported: {err}"
    );
    assert!(!leftover.exists(), "leftover removed");
    assert!(!lock.exists(), "lock released");
    assert_eq!(fetch_rows(&segment).len(), 3);

    // An old-format lock (no start time) of a dead process: taken over as before.
    std::fs::write(
        &lock,
        format!("pid={dead}\nhost={}\nstage=parse\nsince=then\n", hostname()),
    )
    .unwrap();
    let out = run("parse", &crawl, &config, &[&segment]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!("parse (pid {dead} on host")) && err.contains("taking it over"),
        "{err}"
    );
    assert!(!lock.exists());
}

#[test]
fn a_reused_pid_is_stale_and_a_live_holder_is_refused_for_every_lock() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let web = TestWeb::start(dir, &["--seed", "5", "--hosts", "1", "--pages", "6"]);
    let (crawl, config) = one_host_crawl(dir, &web, 0.0, 3);
    let segment = generate_segment(&crawl, &config);
    let sleeper = Sleeper::start();
    let pid = sleeper.pid();
    let true_start = start_time(pid);
    let boot = boot_id();
    let holder = format!("held by other (pid {pid} on host {}", hostname());
    let reused = format!("pid {pid} is now another process");

    // The segment lock: a live pid with its true start time is refused (to every
    // stage that writes the segment, and to those that apply it)...
    let lock = segment_lock(&segment);
    write_lock(&lock, "other", pid, true_start, &boot);
    let name = Path::new(&segment).file_name().unwrap().to_string_lossy();
    for stage in ["fetch", "updatedb", "linkdb"] {
        let out = run(stage, &crawl, &config, &[&segment]);
        assert_refused(&out, stage, &format!("segment {name}: {holder}"));
    }
    assert!(!Path::new(&segment).join("crawl_fetch").exists());
    assert!(
        !crawl.join("linkdb/current").exists(),
        "linkdb wrote nothing"
    );
    // ...the same pid with another start time is another process: taken over.
    write_lock(&lock, "other", pid, true_start + 1, &boot);
    let out = run("fetch", &crawl, &config, &[&segment]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains(&reused), "{}", stderr(&out));
    assert!(!lock.exists());
    run_ok("parse", &crawl, &config, &[&segment]);

    // The crawldb lock: the same rules.
    let db_lock = crawl.join("crawldb/.lock");
    write_lock(&db_lock, "other", pid, true_start, &boot);
    let out = run("updatedb", &crawl, &config, &[&segment]);
    assert_refused(&out, "updatedb", &holder);
    let statuses = crawldb_statuses(&crawl);
    assert_eq!(statuses.len(), 3);
    assert!(
        statuses.values().all(|s| s == "db_unfetched"),
        "{statuses:?}"
    );
    write_lock(&db_lock, "other", pid, true_start + 1, &boot);
    let out = run("updatedb", &crawl, &config, &[&segment]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains(&reused), "{}", stderr(&out));
    let statuses = crawldb_statuses(&crawl);
    for j in 1..=3 {
        let url = format!("http://site0.web.test/p{j}.html");
        assert_eq!(statuses[&url], "db_fetched", "{statuses:?}");
    }
    // A lock from before a reboot is stale whatever its pid.
    write_lock(&db_lock, "other", pid, true_start, "an-earlier-boot");
    let more = dir.join("more-seeds.txt");
    std::fs::write(&more, "http://site0.web.test/p5.html\n").unwrap();
    let out = run("inject", &crawl, &config, &[more.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the host has rebooted since (boot id an-earlier-boot"),
        "{}",
        stderr(&out)
    );
    assert!(crawldb_statuses(&crawl).contains_key("http://site0.web.test/p5.html"));
    assert!(!db_lock.exists());

    // The linkdb lock too.
    let link_lock = crawl.join("linkdb/.lock");
    std::fs::create_dir_all(crawl.join("linkdb")).unwrap();
    write_lock(&link_lock, "other", pid, true_start, &boot);
    let out = run("linkdb", &crawl, &config, &[&segment]);
    assert_refused(&out, "linkdb", &holder);
    assert!(!crawl.join("linkdb/current").exists());
    write_lock(&link_lock, "other", pid, true_start + 1, &boot);
    let out = run("linkdb", &crawl, &config, &[&segment]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains(&reused), "{}", stderr(&out));
    assert!(crawl.join("linkdb/current").is_dir());
    assert!(!link_lock.exists());
    drop(sleeper);
    drop(web);
}

#[test]
fn segment_tools_refuse_a_segment_in_use() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let web = TestWeb::start(dir, &["--seed", "5", "--hosts", "1", "--pages", "6"]);
    let (crawl, config) = one_host_crawl(dir, &web, 0.0, 3);
    let segment = round(&crawl, &config).unwrap();
    let lock = segment_lock(&segment);
    let content = Path::new(&segment).join("content");
    let segments = || {
        std::fs::read_dir(crawl.join("segments"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect::<std::collections::BTreeSet<_>>()
    };

    // A reparse holds the applied segment.
    let sleeper = Sleeper::start();
    let pid = sleeper.pid();
    write_lock(&lock, "parse", pid, start_time(pid), &boot_id());
    let holder = format!("held by parse (pid {pid} on host {}", hostname());
    let before = segments();

    let out = run("mergesegs", &crawl, &config, &[&segment]);
    assert_refused(&out, "mergesegs", &holder);
    let out = run("mergesegs", &crawl, &config, &[&segment, "--delete-inputs"]);
    assert_refused(&out, "mergesegs --delete-inputs", &holder);
    assert_eq!(segments(), before, "mergesegs wrote and deleted nothing");

    let out = run("prunesegs", &crawl, &config, &[&segment]);
    assert_refused(&out, "prunesegs", &holder);
    assert!(
        stderr(&out).contains("nothing was changed"),
        "{}",
        stderr(&out)
    );
    assert!(content.is_dir(), "content kept");
    // Without names, the segment in use is kept with the holder as the reason.
    let out = run("prunesegs", &crawl, &config, &["--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("\"action\":\"keep\"") && stdout.contains("in use: segment"),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("pid {pid}")), "{stdout}");
    assert!(content.is_dir(), "content kept");

    let warc = || {
        Command::new(crate::common::bin("warc"))
            .arg("--crawl-dir")
            .arg(&crawl)
            .arg("--config")
            .arg(&config)
            .arg(&segment)
            .env_remove("TRAWL_CONFIG")
            .env_remove("TRAWL_CRAWL_DIR")
            .env("RUST_LOG", "warn")
            .output()
            .unwrap()
    };
    let out = warc();
    assert_refused(&out, "warc", &holder);
    assert!(!crawl.join("warc").exists(), "warc wrote nothing");
    let out = run("parse", &crawl, &config, &[&segment, "--reparse"]);
    assert_refused(&out, "parse --reparse", &holder);
    assert_eq!(segments(), before);

    // The holder dies: the next export takes its lock over (and says so), and
    // prunesegs then prunes.
    let dead = sleeper.stop();
    let out = warc();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("pid {dead} no longer exists; taking it over")),
        "{}",
        stderr(&out)
    );
    assert!(!lock.exists());
    run_ok("prunesegs", &crawl, &config, &[&segment]);
    assert!(!content.exists(), "content pruned");
    assert!(!lock.exists());

    // The lock a killed run left for a segment that no longer exists (a deleted
    // input, an output never installed): the segment tools' clean-up removes it.
    let orphan = crawl.join("segments/20200101000000.lock");
    write_lock(&orphan, "mergesegs", dead, 1, &boot_id());
    run_ok("prunesegs", &crawl, &config, &[]);
    assert!(!orphan.exists(), "stale lock of a deleted segment removed");
}
