//! hostdb as partition tasks plus a commit: uneven task sets with a retried attempt
//! give the one-process hostdb (incremental, over an existing version); tasks install
//! nothing; a commit over a hostdb that changed since its tasks ran is refused.

use crate::common;
use std::path::Path;

use common::*;
use trawl::records::HostRecord;

const WEB: &[&str] = &["--hosts", "3", "--pages", "8"];

/// The hostdb's rows, sorted by host, as text (every field: no clock of its own).
fn hostdb_rows(crawl: &Path) -> Vec<String> {
    let mut rows: Vec<HostRecord> =
        trawl::store::parquet::read_dataset(&crawl.join("hostdb/current")).unwrap();
    rows.sort_by(|a, b| a.host.cmp(&b.host));
    rows.iter().map(|r| format!("{r:?}")).collect()
}

/// hostdb's summary line without its stage name and time.
fn summary(out: &str) -> String {
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("hostdb: "))
        .unwrap_or_else(|| panic!("no hostdb summary in {out}"));
    line[..line.rfind(" in ").unwrap_or(line.len())].to_string()
}

/// The segments the hostdb folded in.
fn hostdb_applied(crawl: &Path) -> Vec<String> {
    trawl::hostdb::read_meta(&trawl::store::layout::CrawlDir::new(crawl))
        .unwrap()
        .expect("a hostdb")
        .applied_segments
}

#[test]
fn hostdb_as_tasks_equals_one_process() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let map = site_map(dir, WEB);
    let web = TestWeb::start(dir, WEB);
    let config = write_config(dir, &web.addr, 0.0, "");
    let a = dir.join("a");
    inject_seeds(dir, &a, &config, &map.seeds);
    round(&a, &config).expect("round 1");
    run_ok("hostdb", &a, &config, &[]);
    round(&a, &config).expect("round 2");
    let b = dir.join("b");
    copy_tree(&a, &b);

    let one = output_ok(stage_command(bin("hostdb"), &a, &config, &[]));
    assert!(summary(&one).starts_with("1 segments folded in"), "{one}");

    // Uneven sets, partition 3 twice (a retry after a zombie finished): the commit
    // takes one attempt of it.
    let before = hostdb_rows(&b);
    for (set, attempt) in [
        ("0-1", "h-01-0"),
        ("2", "h-2-0"),
        ("3", "h-3-1"),
        ("3", "h-3-0"),
    ] {
        output_ok(task_command("hostdb", &b, &config, &[], "h1", set, attempt));
    }
    assert_eq!(before, hostdb_rows(&b), "tasks install nothing");
    let committed = commit_ok("hostdb", &b, &config, &[], "h1");
    assert_eq!(summary(&committed), summary(&one));
    assert!(!b.join("_jobs").exists(), "the commit removes the job");
    let rows = hostdb_rows(&b);
    assert!(rows.len() >= 3, "{rows:?}");
    assert_eq!(hostdb_rows(&a), rows);
    assert_eq!(hostdb_applied(&a), hostdb_applied(&b));
    assert_eq!(hostdb_applied(&b).len(), 2);

    // A job committed over another hostdb version is refused, installing nothing.
    output_ok(task_command("hostdb", &b, &config, &[], "h2", "all", "t-0"));
    run_ok("hostdb", &b, &config, &["--full"]);
    let installed = hostdb_rows(&b);
    let out = stage_command(bin("hostdb"), &b, &config, &["--job", "h2", "--commit"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("the hostdb changed since the task"),
        "{err}"
    );
    assert_eq!(installed, hostdb_rows(&b));
    web.stop();
}
