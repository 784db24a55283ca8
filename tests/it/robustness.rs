//! Bad input gets a clear error and changes nothing; a stage killed at any point
//! leaves the crawl directory usable, and rerunning it works.

use crate::common;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

const WEB: &[&str] = &["--seed", "5", "--hosts", "3", "--pages", "12"];

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn seeds_file(dir: &Path, lines: &str) -> String {
    let p = dir.join("seeds.txt");
    std::fs::write(&p, lines).unwrap();
    p.display().to_string()
}

#[test]
fn bad_inputs_get_clear_errors_and_change_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let config = write_config(dir, "127.0.0.1:9", 0.0, "");
    let crawl = dir.join("crawl");

    // A missing seed file: an error naming it, no crawl dir created.
    let out = run(
        "inject",
        &crawl,
        &config,
        &[dir.join("nope.txt").to_str().unwrap()],
    );
    assert!(!out.status.success());
    assert!(stderr(&out).contains("nope.txt"), "{}", stderr(&out));
    assert!(!crawl.join("crawldb/current").exists());

    // A malformed line is reported with its line number and reason; the rest is injected.
    let seeds = seeds_file(
        dir,
        "# seeds\nhttp://site0.web.test/\nnot a url\nhttp://site1.web.test/\tscore=abc\nhttp://site2.web.test/\tscore=2.5\n",
    );
    let out = run("inject", &crawl, &config, &[&seeds]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(":3") || err.contains("line 3"),
        "line 3 reported: {err}"
    );
    assert!(
        err.contains(":4") || err.contains("line 4"),
        "line 4 reported: {err}"
    );
    let db = crawldb_statuses(&crawl);
    assert_eq!(
        db.keys().cloned().collect::<Vec<_>>(),
        vec![
            "http://site0.web.test/".to_string(),
            "http://site2.web.test/".to_string()
        ]
    );

    // A crawl dir that is not one.
    let empty = dir.join("empty");
    std::fs::create_dir(&empty).unwrap();
    for stage in ["generate", "updatedb", "readdb"] {
        let args: &[&str] = if stage == "readdb" { &["--stats"] } else { &[] };
        let out = run(stage, &empty, &config, args);
        assert!(!out.status.success(), "{stage} accepted a non-crawl dir");
        assert!(stderr(&out).contains("inject"), "{stage}: {}", stderr(&out));
    }

    // A segment that was never fetched, given to parse and updatedb: clear error, nothing changed.
    let segment = run_ok("generate", &crawl, &config, &[])
        .trim()
        .lines()
        .last()
        .unwrap()
        .to_string();
    let before = snapshot(&crawl);
    for stage in ["parse", "updatedb"] {
        let out = run(stage, &crawl, &config, &[&segment]);
        assert!(
            !out.status.success(),
            "{stage} accepted an unfetched segment"
        );
        assert!(
            stderr(&out).contains("fetch"),
            "{stage} says to run fetch: {}",
            stderr(&out)
        );
    }
    assert_eq!(snapshot(&crawl), before, "failed stages changed nothing");
}

#[test]
fn killed_fetch_leaves_no_partial_output_and_rerun_succeeds() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let web = TestWeb::start(dir, WEB);
    // A slow polite fetch (0.4 s per request and host) that we kill half way.
    let config = write_config(dir, &web.addr, 0.4, "");
    let crawl = dir.join("crawl");
    let seeds = seeds_file(
        dir,
        "http://site0.web.test/\nhttp://site1.web.test/\nhttp://site2.web.test/\n",
    );
    run_ok("inject", &crawl, &config, &[&seeds]);
    assert!(round(&crawl, &config).is_some());
    let segment = run_ok("generate", &crawl, &config, &[])
        .trim()
        .lines()
        .last()
        .unwrap()
        .to_string();
    let fetch_list: Vec<trawl::CrawlDatum> =
        trawl::store::parquet::read_dataset(&Path::new(&segment).join("crawl_generate")).unwrap();
    assert!(
        fetch_list.len() > 6,
        "a fetch list long enough to kill mid-run"
    );

    let mut child = Command::new(bin("fetch"))
        .arg("--crawl-dir")
        .arg(&crawl)
        .arg("--config")
        .arg(&config)
        .arg(&segment)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    assert!(
        child.try_wait().unwrap().is_none(),
        "fetch still running when killed"
    );
    child.kill().unwrap(); // SIGKILL: no cleanup
    child.wait().unwrap();
    assert!(!trawl::store::parquet::dataset_complete(
        &Path::new(&segment).join("crawl_fetch")
    ));

    // The rerun fetches everything, every URL exactly once.
    let started = Instant::now();
    run_ok("fetch", &crawl, &config, &[&segment]);
    assert!(started.elapsed() < Duration::from_secs(120));
    let rows: Vec<trawl::records::FetchRecord> =
        trawl::store::parquet::read_dataset(&Path::new(&segment).join("crawl_fetch")).unwrap();
    let mut got: Vec<&str> = rows.iter().map(|r| r.url.as_str()).collect();
    let mut want: Vec<&str> = fetch_list.iter().map(|d| d.url.as_str()).collect();
    got.sort();
    want.sort();
    assert_eq!(got, want, "one crawl_fetch row per fetch-list URL");
    // No leftovers of the killed run.
    let leftovers: Vec<_> = std::fs::read_dir(&segment)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // And the round completes.
    for stage in ["parse", "updatedb", "linkdb"] {
        run_ok(stage, &crawl, &config, &[&segment]);
    }
}

#[test]
fn interrupted_crawldb_install_and_stale_lock_are_recovered() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let config = write_config(dir, "127.0.0.1:9", 0.0, "");
    let crawl = dir.join("crawl");
    let seeds = seeds_file(dir, "http://site0.web.test/\n");
    run_ok("inject", &crawl, &config, &[&seeds]);
    let seeds2 = seeds_file(dir, "http://site1.web.test/\n");
    run_ok("inject", &crawl, &config, &[&seeds2]);
    let want = crawldb_statuses(&crawl);
    assert_eq!(want.len(), 2);

    // Killed between "current -> old" and "new -> current": current is missing.
    let db = crawl.join("crawldb");
    std::fs::remove_dir_all(db.join("old")).unwrap();
    std::fs::rename(db.join("current"), db.join("current.tmp-424242")).unwrap();
    // ... and its lock left behind by a process that no longer exists.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    std::fs::write(
        db.join(".lock"),
        format!(
            "pid=999999999\nhost={}\nstage=updatedb\nsince=then\n",
            host.trim()
        ),
    )
    .unwrap();
    let out = run("readdb", &crawl, &config, &["--stats"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        crawldb_statuses(&crawl),
        want,
        "the complete new version was installed"
    );
    // A writer takes the stale lock over (and says so).
    let seeds3 = seeds_file(dir, "http://site2.web.test/\n");
    let out = run("inject", &crawl, &config, &[&seeds3]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("stale lock"), "{}", stderr(&out));
    assert_eq!(crawldb_statuses(&crawl).len(), 3);
    assert!(!db.join(".lock").exists());

    // A lock held by a live process is refused, naming the holder.
    std::fs::write(
        db.join(".lock"),
        format!(
            "pid={}\nhost={}\nstage=updatedb\nsince=now\n",
            std::process::id(),
            host.trim()
        ),
    )
    .unwrap();
    let out = run("inject", &crawl, &config, &[&seeds3]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("locked"), "{}", stderr(&out));
}
