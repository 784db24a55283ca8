//! The crawl directory on S3: the stage binaries against moto's S3 server on
//! loopback (`moto_server`, from the project venv: `make venv`). Skipped, with a
//! message, when moto cannot be started.
//!
//! - two committers race for the same crawldb version: exactly one wins, the other
//!   fails with a clear error, nothing is damaged, its rerun succeeds;
//! - a stage killed (SIGKILL) between two uploads: the previous version stays
//!   current, a rerun completes, `gc` removes exactly the orphans;
//! - a full round (inject → generate → fetch → parse → updatedb → linkdb →
//!   pagerank) with the crawl directory on S3 ends with the crawldb (URL, status,
//!   signature) of the same round on a local directory;
//! - `crawl` on S3 (the index committed to the store, `search` pulling it alone)
//!   equals `crawl` on a local directory, and continues from another machine.

use crate::common;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::moto::*;
use common::*;
use futures::TryStreamExt;
use object_store::ObjectStoreExt;
use trawl::store::object::VersionManifest;

fn s3_command(
    moto: &Moto,
    work: &Path,
    stage: &str,
    uri: &str,
    config: &Path,
    args: &[&str],
) -> Command {
    let mut cmd = stage_command(bin_any(stage), Path::new(uri), config, args);
    s3_env(&mut cmd, moto, work);
    cmd
}

fn bin_any(stage: &str) -> &'static str {
    match stage {
        "gc" => common::bin("gc"),
        other => bin(other),
    }
}

fn s3_run(
    moto: &Moto,
    work: &Path,
    stage: &str,
    uri: &str,
    config: &Path,
    args: &[&str],
) -> Output {
    s3_command(moto, work, stage, uri, config, args)
        .output()
        .unwrap_or_else(|e| panic!("run {stage}: {e}"))
}

fn s3_ok(moto: &Moto, work: &Path, stage: &str, uri: &str, config: &Path, args: &[&str]) -> String {
    let out = s3_run(moto, work, stage, uri, config, args);
    assert!(
        out.status.success(),
        "{stage} {args:?} on {uri} failed ({:?}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `inject SEEDS` on `uri` that pauses at `object:<pause>` (`POINT:SECONDS`).
fn paused_inject(
    moto: &Moto,
    work: &Path,
    uri: &str,
    config: &Path,
    seeds: &Path,
    pause: &str,
) -> Command {
    let mut cmd = s3_command(
        moto,
        work,
        "inject",
        uri,
        config,
        &[seeds.to_str().unwrap()],
    );
    cmd.env("TRAWL_TEST_PAUSE_SEGTOOLS", format!("object:{pause}"));
    cmd
}

/// Waits until `child` (started with `object:uploaded-one:SECS` and its stderr
/// piped) pauses after its first upload, then kills it with SIGKILL.
fn kill_when_uploaded(child: &mut std::process::Child, what: &str) {
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let mut seen = String::new();
    loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "{what} ended before its first upload:\n{seen}"
        );
        seen.push_str(&line);
        if line.contains("pausing") && line.contains("object:uploaded-one") {
            break;
        }
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
}

/// A client of the test bucket (for listing what is stored).
struct Bucket {
    store: object_store::aws::AmazonS3,
    rt: tokio::runtime::Runtime,
}

impl Bucket {
    fn new(moto: &Moto) -> Bucket {
        Bucket::at(&moto.endpoint)
    }

    /// A client of the test bucket of the S3 server at `endpoint`.
    fn at(endpoint: &str) -> Bucket {
        trawl::tls::install_provider();
        let store = object_store::aws::AmazonS3Builder::new()
            .with_endpoint(endpoint)
            .with_bucket_name(BUCKET)
            .with_access_key_id("testing")
            .with_secret_access_key("testing")
            .with_region("us-east-1")
            .with_allow_http(true)
            .build()
            .unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        Bucket { store, rt }
    }

    /// Every key under `prefix`.
    fn keys(&self, prefix: &str) -> BTreeSet<String> {
        self.rt.block_on(async {
            let p = object_store::path::Path::from(prefix);
            object_store::ObjectStore::list(&self.store, Some(&p))
                .map_ok(|m| m.location.to_string())
                .try_collect()
                .await
                .unwrap()
        })
    }

    /// The data objects under `prefix`: content-addressed objects and the tables'
    /// data files.
    fn data_objects(&self, prefix: &str) -> BTreeSet<String> {
        self.keys(prefix)
            .into_iter()
            .filter(|k| is_data_object(k))
            .collect()
    }

    fn put(&self, key: &str, body: &str) {
        self.rt.block_on(async {
            self.store
                .put(
                    &object_store::path::Path::from(key),
                    object_store::PutPayload::from(body.as_bytes().to_vec()),
                )
                .await
                .unwrap();
        });
    }

    fn put_bytes(&self, key: &str, body: Vec<u8>) {
        self.rt.block_on(async {
            self.store
                .put(
                    &object_store::path::Path::from(key),
                    object_store::PutPayload::from(body),
                )
                .await
                .unwrap();
        });
    }

    fn delete(&self, key: &str) {
        self.rt.block_on(async {
            self.store
                .delete(&object_store::path::Path::from(key))
                .await
                .unwrap();
        });
    }

    fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.rt.block_on(async {
            match self.store.get(&object_store::path::Path::from(key)).await {
                Ok(r) => Some(r.bytes().await.unwrap().to_vec()),
                Err(object_store::Error::NotFound { .. }) => None,
                Err(e) => panic!("GET {key}: {e}"),
            }
        })
    }

    /// The object keys a unit's manifests (every version present) reference, and the
    /// newest version number.
    fn referenced(&self, prefix: &str) -> (BTreeSet<String>, BTreeMap<String, u64>) {
        let mut keys = BTreeSet::new();
        let mut newest = BTreeMap::new();
        for k in self.keys(prefix) {
            if let Some((unit, file)) = k.split_once("/_versions/")
                && file.ends_with(".json")
            {
                let m: VersionManifest = serde_json::from_slice(&self.get(&k).unwrap()).unwrap();
                keys.extend(m.files.iter().map(|f| format!("{prefix}/{}", f.key)));
                let unit = unit
                    .trim_start_matches(prefix)
                    .trim_start_matches('/')
                    .to_string();
                let n = newest.entry(unit).or_insert(0);
                *n = m.version.max(*n);
            }
        }
        (keys, newest)
    }
}

/// Whether a key is a data object: under `objects/`, or a table's data file (not a
/// version manifest, not a Delta log entry).
fn is_data_object(key: &str) -> bool {
    key.contains("/objects/")
        || trawl::store::delta::is_data_name(key.rsplit('/').next().unwrap_or_default())
}

/// What `scripts/read_delta.py` (the `deltalake` package, polars and pyarrow, no trawl
/// code) reads of each table: one JSON object a table. `None` (the test skips, and
/// fails under CI) when the virtualenv lacks the readers.
fn read_delta(moto: &Moto, tables: &[String]) -> Option<Vec<serde_json::Value>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = root.join(".venv/bin/python");
    let ok = Command::new(&python)
        .args(["-c", "import deltalake, polars, pyarrow"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        common::missing(
            "the Delta Lake readers (deltalake, polars, pyarrow)",
            &format!(
                "{} cannot import them; `make test` installs them",
                python.display()
            ),
        );
        return None;
    }
    common::ran_with("deltalake + polars + pyarrow");
    let mut cmd = Command::new(&python);
    cmd.arg(root.join("scripts/read_delta.py")).args(tables);
    s3_env(&mut cmd, moto, &std::env::temp_dir());
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "read_delta.py {tables:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
    )
}

/// Rows of the dataset in `dir` of a pulled mirror, as its `_SUCCESS` lists them.
fn sealed_rows(dir: &Path) -> u64 {
    trawl::store::integrity::read(dir)
        .unwrap()
        .unwrap_or_else(|| panic!("{} has no _SUCCESS", dir.display()))
        .rows()
}

fn seeds_file(dir: &Path, name: &str, hosts: std::ops::Range<usize>) -> PathBuf {
    let path = dir.join(name);
    let text: String = hosts
        .map(|h| format!("http://h{h}.example.test/\nhttp://h{h}.example.test/a\n"))
        .collect();
    std::fs::write(&path, text).unwrap();
    path
}

fn plain_config(dir: &Path) -> PathBuf {
    let path = dir.join("trawl.toml");
    std::fs::write(&path, "[crawl]\npartitions = 4\n").unwrap();
    path
}

#[test]
fn racing_committers_one_wins_the_other_fails_cleanly() {
    let Some(moto) = start_moto() else { return };
    let t = tempfile::tempdir().unwrap();
    let config = plain_config(t.path());
    let uri = format!("s3://{BUCKET}/race");
    let base = seeds_file(t.path(), "base.txt", 0..5);
    let a = seeds_file(t.path(), "a.txt", 10..15);
    let b = seeds_file(t.path(), "b.txt", 20..25);
    s3_ok(
        &moto,
        &t.path().join("w0"),
        "inject",
        &uri,
        &config,
        &[base.to_str().unwrap()],
    );
    // Two injects on two "machines" (work dirs) read version 1 and both pause before
    // committing version 2.
    let start = |seeds: &Path, work: &str| {
        paused_inject(
            &moto,
            &t.path().join(work),
            &uri,
            &config,
            seeds,
            "before-commit:4",
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
    };
    let pa = start(&a, "wa");
    let pb = start(&b, "wb");
    let outs = [
        pa.wait_with_output().unwrap(),
        pb.wait_with_output().unwrap(),
    ];
    let won: Vec<bool> = outs.iter().map(|o| o.status.success()).collect();
    assert_eq!(
        won.iter().filter(|w| **w).count(),
        1,
        "exactly one committer wins: {:?}",
        outs.iter()
            .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
            .collect::<Vec<_>>()
    );
    let loser = outs.iter().find(|o| !o.status.success()).unwrap();
    let err = String::from_utf8_lossy(&loser.stderr);
    assert_eq!(loser.status.code(), Some(6), "{err}");
    assert!(
        err.contains("another writer (inject) committed version 2 of crawldb first")
            && err.contains("rerun inject")
            && err.contains("nothing is damaged"),
        "{err}"
    );
    // The winner's seeds are in, the loser's are not, and the crawldb reads cleanly.
    let (winner, loser_seeds) = if won[0] { (10, 20) } else { (20, 10) };
    let rows = s3_crawldb(&moto, t.path(), &uri, &config);
    assert_eq!(rows.len(), 20);
    assert!(rows.contains_key(&format!("http://h{winner}.example.test/")));
    assert!(!rows.contains_key(&format!("http://h{loser_seeds}.example.test/")));
    // The Delta log has the winner's entry only: the table's versions 0 and 1.
    let log = |v: u64| format!("race/crawldb/_delta_log/{v:020}.json");
    assert_eq!(
        Bucket::new(&moto).keys("race/crawldb/_delta_log"),
        BTreeSet::from([log(0), log(1)])
    );
    // The loser's rerun (same machine) pulls version 2 and commits version 3.
    let (seeds, work) = if won[0] { (&b, "wb") } else { (&a, "wa") };
    s3_ok(
        &moto,
        &t.path().join(work),
        "inject",
        &uri,
        &config,
        &[seeds.to_str().unwrap()],
    );
    assert_eq!(s3_crawldb(&moto, t.path(), &uri, &config).len(), 30);
    let (_, newest) = Bucket::new(&moto).referenced("race");
    assert_eq!(newest.get("crawldb"), Some(&3));
}

#[test]
fn a_stage_killed_between_uploads_leaves_the_previous_version_and_gc_removes_the_orphans() {
    let Some(moto) = start_moto() else { return };
    let t = tempfile::tempdir().unwrap();
    let config = plain_config(t.path());
    let uri = format!("s3://{BUCKET}/killed");
    let work = t.path().join("w");
    let base = seeds_file(t.path(), "base.txt", 0..8);
    let more = seeds_file(t.path(), "more.txt", 10..30);
    s3_ok(
        &moto,
        &work,
        "inject",
        &uri,
        &config,
        &[base.to_str().unwrap()],
    );
    let bucket = Bucket::new(&moto);
    let before = bucket.keys("killed");

    let mut child = paused_inject(&moto, &work, &uri, &config, &more, "uploaded-one:60")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    kill_when_uploaded(&mut child, "inject");

    // PUTs the killed process had in flight may still land: list until the
    // bucket stops changing.
    let mut after_kill = bucket.keys("killed");
    for _ in 0..20 {
        std::thread::sleep(std::time::Duration::from_millis(500));
        let again = bucket.keys("killed");
        if again == after_kill {
            break;
        }
        after_kill = again;
    }
    let uploaded: BTreeSet<_> = after_kill.difference(&before).cloned().collect();
    assert!(
        !uploaded.is_empty() && uploaded.iter().all(|k| is_data_object(k)),
        "the killed run uploaded data files and created no version and no log entry: {uploaded:?}"
    );
    // The previous version is still current, for a fresh reader too.
    assert_eq!(s3_crawldb(&moto, t.path(), &uri, &config).len(), 16);

    // The rerun (same machine: its mirror holds the killed run's local work) completes.
    s3_ok(
        &moto,
        &work,
        "inject",
        &uri,
        &config,
        &[more.to_str().unwrap()],
    );
    assert_eq!(s3_crawldb(&moto, t.path(), &uri, &config).len(), 56);

    let (referenced, _) = bucket.referenced("killed");
    let objects = bucket.data_objects("killed");
    let orphans: BTreeSet<_> = objects.difference(&referenced).cloned().collect();
    assert!(
        !orphans.is_empty(),
        "the killed run left unreferenced objects"
    );
    assert!(
        orphans.is_subset(&uploaded),
        "orphans come from the killed run: {orphans:?}"
    );

    // gc --dry-run counts them, keeps them; gc without --min-age keeps them (young);
    // gc --min-age 0 removes exactly them.
    let dry = s3_run(
        &moto,
        &work,
        "gc",
        &uri,
        &config,
        &["--dry-run", "--min-age", "0"],
    );
    let dry_err = String::from_utf8_lossy(&dry.stderr);
    assert!(dry.status.success(), "{dry_err}");
    assert!(
        dry_err.contains(&format!(
            "gc: would remove {} unreferenced objects",
            orphans.len()
        )),
        "{dry_err}"
    );
    assert_eq!(bucket.data_objects("killed").len(), objects.len());
    // A zombie attempt's manifest published after its job's commit (which deleted
    // the job's keys): left under _jobs/, removed by gc once older than --min-age.
    let stray = "killed/_jobs/inject-late/attempts/p00000-00003/inject-0-1.json";
    bucket.put(stray, "{}");
    let young = s3_run(&moto, &work, "gc", &uri, &config, &[]);
    let young_err = String::from_utf8_lossy(&young.stderr);
    assert!(
        young_err.contains("gc: removed 0 unreferenced objects")
            && young_err.contains("and 0 job keys older than --min-age"),
        "{young_err}"
    );
    assert!(bucket.get(stray).is_some());
    let gc = s3_run(&moto, &work, "gc", &uri, &config, &["--min-age", "0"]);
    let gc_err = String::from_utf8_lossy(&gc.stderr);
    assert!(
        gc.status.success() && gc_err.contains("and 1 job keys older than --min-age"),
        "{gc_err}"
    );
    assert!(bucket.get(stray).is_none(), "gc removed the stray job key");
    let left = bucket.data_objects("killed");
    assert_eq!(
        left,
        objects
            .difference(&orphans)
            .cloned()
            .collect::<BTreeSet<_>>()
    );
    assert_eq!(s3_crawldb(&moto, t.path(), &uri, &config).len(), 56);
}

/// A crawl in the layout before open tables (Parquet parts as content-addressed
/// `objects/`, no Delta log) is moved to Delta tables by `gc`, which then keeps what
/// the last `--keep-versions` versions need; a log entry a writer killed after its
/// commit left missing is written by the next commit.
#[test]
fn gc_migrates_an_old_layout_crawl_to_delta_tables_and_keeps_the_last_n_versions() {
    let Some(moto) = start_moto() else { return };
    let t = tempfile::tempdir().unwrap();
    let config = plain_config(t.path());
    let uri = format!("s3://{BUCKET}/migrate");
    let work = t.path().join("w");
    let bucket = Bucket::new(&moto);
    let inject = |hosts: std::ops::Range<usize>, name: &str| {
        let seeds = seeds_file(t.path(), name, hosts);
        s3_ok(
            &moto,
            &work,
            "inject",
            &uri,
            &config,
            &[seeds.to_str().unwrap()],
        );
    };
    inject(0..8, "a.txt");
    // Rewrite the crawldb as an older trawl stored it: version 2 names its parts by
    // objects/<b3>, has no tables, and there is no log and no data file.
    let v1: VersionManifest = serde_json::from_slice(
        &bucket
            .get(&format!("migrate/crawldb/_versions/{:020}.json", 1))
            .unwrap(),
    )
    .unwrap();
    let mut v2 = v1.clone();
    v2.version = 2;
    v2.commit = "old-layout".into();
    v2.tables.clear();
    for f in &mut v2.files {
        let body = bucket.get(&format!("migrate/{}", f.key)).unwrap();
        f.key = format!("objects/{}/{}", &f.blake3[..2], f.blake3);
        bucket.put_bytes(&format!("migrate/{}", f.key), body);
    }
    for k in bucket.keys("migrate/crawldb") {
        if !k.contains("/_versions/") {
            bucket.delete(&k);
        }
    }
    bucket.put(
        &format!("migrate/crawldb/_versions/{:020}.json", 2),
        &serde_json::to_string(&v2).unwrap(),
    );
    bucket.put("migrate/crawldb/_versions/_latest", "2");
    // trawl reads it as it is.
    assert_eq!(s3_crawldb(&moto, t.path(), &uri, &config).len(), 16);

    // gc counts it; with --migrate (and --dry-run: counts) it moves it.
    let gc = |args: &[&str]| -> String {
        let out = s3_run(&moto, &work, "gc", &uri, &config, args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "gc {args:?}: {err}");
        err
    };
    let err = gc(&["--min-age", "0"]);
    assert!(
        err.contains("found (gc --migrate moves them): 1 units in the layout before open tables"),
        "{err}"
    );
    let err = gc(&["--migrate", "--dry-run", "--min-age", "0"]);
    assert!(
        err.contains("would migrate: 1 units in the layout before open tables"),
        "{err}"
    );
    let err = gc(&["--migrate", "--min-age", "0"]);
    assert!(
        err.contains("migrated: 1 units in the layout before open tables"),
        "{err}"
    );
    let (_, newest) = bucket.referenced("migrate");
    assert_eq!(newest.get("crawldb"), Some(&3));
    let Some(read) = read_delta(&moto, &[format!("{uri}/crawldb")]) else {
        return;
    };
    assert_eq!(read[0]["deltalake"], 16, "{}", read[0]);
    assert_eq!(read[0]["version"], 0, "{}", read[0]);
    // Migrated once: a second gc finds nothing to do.
    let err = gc(&["--migrate", "--min-age", "0"]);
    assert!(
        err.contains("migrated: 0 units")
            && err.contains("wrote the missing Delta log entries of 0 versions"),
        "{err}"
    );

    // A writer killed after its version, before its log entry: the table lags one
    // version, and the next commit (or gc) writes the missing entry first.
    inject(10..12, "b.txt");
    let log = |v: u64| format!("migrate/crawldb/_delta_log/{v:020}.json");
    let entry = bucket
        .get(&log(1))
        .expect("inject wrote the log entry of its version");
    bucket.delete(&log(1));
    let read = read_delta(&moto, &[format!("{uri}/crawldb")]).unwrap();
    assert_eq!(
        read[0]["deltalake"], 16,
        "the readers see the version before: {}",
        read[0]
    );
    inject(12..14, "c.txt");
    assert_eq!(
        bucket.get(&log(1)),
        Some(entry),
        "the next commit wrote the same entry"
    );
    let read = read_delta(&moto, &[format!("{uri}/crawldb")]).unwrap();
    assert_eq!(read[0]["deltalake"], 24, "{}", read[0]);
    assert_eq!(read[0]["previous_version_rows"], 20, "{}", read[0]);

    // Versions 4 to 6 of the crawldb are the last 3; gc keeps what they need.
    // Two versions' entries missing: the next commit walks back and writes both.
    let (one, two) = (bucket.get(&log(1)).unwrap(), bucket.get(&log(2)).unwrap());
    bucket.delete(&log(1));
    bucket.delete(&log(2));
    inject(14..16, "d.txt");
    assert_eq!(bucket.get(&log(1)), Some(one));
    assert_eq!(bucket.get(&log(2)), Some(two));
    let (referenced, newest) = bucket.referenced("migrate");
    assert_eq!(newest.get("crawldb"), Some(&6));
    let need = |keep: u64| -> BTreeSet<String> {
        (7 - keep..=6)
            .flat_map(|n| {
                let m: VersionManifest = serde_json::from_slice(
                    &bucket
                        .get(&format!("migrate/crawldb/_versions/{n:020}.json"))
                        .unwrap(),
                )
                .unwrap();
                m.files
                    .into_iter()
                    .map(|f| format!("migrate/{}", f.key))
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let kept = need(3);
    assert!(referenced.len() > kept.len());
    let out = s3_run(
        &moto,
        &work,
        "gc",
        &uri,
        &config,
        &["--min-age", "0", "--keep-versions", "3"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let left: BTreeSet<String> = bucket
        .data_objects("migrate/crawldb")
        .into_iter()
        .chain(bucket.data_objects("migrate/objects"))
        .collect();
    let crawldb_keys: BTreeSet<String> = left
        .iter()
        .filter(|k| k.starts_with("migrate/crawldb/"))
        .cloned()
        .collect();
    assert_eq!(
        crawldb_keys,
        kept.iter()
            .filter(|k| k.starts_with("migrate/crawldb/"))
            .cloned()
            .collect::<BTreeSet<_>>(),
        "the crawldb's data files of the last 3 versions, no other"
    );
    let versions: Vec<String> = bucket
        .keys("migrate/crawldb/_versions")
        .into_iter()
        .filter(|k| k.ends_with(".json"))
        .collect();
    assert_eq!(versions.len(), 3, "{versions:?}");
    let read = read_delta(&moto, &[format!("{uri}/crawldb")]).unwrap();
    assert_eq!(read[0]["deltalake"], 28, "{}", read[0]);
    assert_eq!(read[0]["previous_version_rows"], 24, "{}", read[0]);
    assert_eq!(s3_crawldb(&moto, t.path(), &uri, &config).len(), 28);
}

const WEB: &[&str] = &["--seed", "7", "--hosts", "6", "--pages", "10"];

/// (URL, status, signature) of every crawldb row.
fn triples(
    rows: &BTreeMap<String, trawl::CrawlDatum>,
) -> BTreeMap<String, (String, Option<String>)> {
    rows.iter()
        .map(|(u, d)| {
            (
                u.clone(),
                (d.status.as_str().to_string(), d.signature.clone()),
            )
        })
        .collect()
}

/// The test web of [`WEB`] started in `dir`, a config for it, and its seed file.
fn web_and_seeds(dir: &Path) -> (TestWeb, PathBuf, PathBuf) {
    let web = TestWeb::start(dir, WEB);
    let config = write_config(dir, &web.addr, 0.05, "");
    let seeds = dir.join("seeds.txt");
    std::fs::write(&seeds, site_map(dir, WEB).seeds.join("\n") + "\n").unwrap();
    (web, config, seeds)
}

#[test]
fn a_round_on_s3_equals_the_round_on_a_local_directory() {
    let Some(moto) = start_moto() else { return };
    let t = tempfile::tempdir().unwrap();
    let (_web, config, seeds) = web_and_seeds(t.path());

    // Locally.
    let local = t.path().join("crawl");
    run_ok("inject", &local, &config, &[seeds.to_str().unwrap()]);
    let segment = round(&local, &config).expect("seeds are due");
    assert!(Path::new(&segment).is_dir());

    // On S3: the same stages, segments named by their name.
    let uri = format!("s3://{BUCKET}/round");
    let work = t.path().join("w");
    s3_ok(
        &moto,
        &work,
        "inject",
        &uri,
        &config,
        &[seeds.to_str().unwrap()],
    );
    let out = s3_ok(&moto, &work, "generate", &uri, &config, &[]);
    let path = out.trim().lines().last().unwrap();
    let name = Path::new(path)
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    for stage in ["fetch", "parse", "updatedb", "linkdb"] {
        s3_ok(&moto, &work, stage, &uri, &config, &[&name]);
    }
    s3_ok(&moto, &work, "pagerank", &uri, &config, &[]);
    // The steps over the whole crawl that need no local index: the hostdb and the
    // report run on the store too.
    for stage in ["hostdb", "report"] {
        run_ok(stage, &local, &config, &[]);
        s3_ok(&moto, &work, stage, &uri, &config, &[]);
    }

    let (remote, hosts, report) = common::moto::s3_pull(&moto, t.path(), &uri, &config, |m| {
        (
            crawldb(m),
            read_hosts(m),
            std::fs::read_to_string(m.join("report.html")).unwrap_or_default(),
        )
    });
    let here = crawldb(&local);
    assert!(here.values().any(|d| d.status.as_str() == "db_fetched"));
    assert_eq!(triples(&remote), triples(&here));
    assert!(hosts.len() >= 2, "{hosts:?}");
    assert_eq!(
        hosts,
        read_hosts(&local),
        "the hostdb on S3 is the local one"
    );
    assert!(
        report.contains("<html"),
        "report.html was committed: {report:.200}"
    );

    // Every dataset of the round is committed: a fresh reader of the segment sees
    // what the local one has.
    let (_, newest) = Bucket::new(&moto).referenced("round");
    for unit in [
        "crawldb",
        "linkdb",
        "hostdb",
        "pagerank",
        "segments",
        &format!("segments/{name}"),
    ] {
        assert!(
            newest.contains_key(unit),
            "{unit} has no version: {newest:?}"
        );
    }
    let reader = t.path().join("reader2");
    let seg = s3_ok(&moto, &reader, "readseg", &uri, &config, &["--list"]);
    assert!(seg.contains(&name), "{seg}");

    // Stock readers read every table where it lives: the same rows as trawl's.
    let segment_datasets = [
        "crawl_generate",
        "crawl_fetch",
        "content",
        "parse_data",
        "parse_text",
        "crawl_parse",
    ];
    let mut tables: Vec<(String, PathBuf)> = ["crawldb", "linkdb", "hostdb"]
        .iter()
        .map(|d| (d.to_string(), PathBuf::from(d).join("current")))
        .collect();
    tables.push(("pagerank".into(), PathBuf::from("pagerank")));
    for d in segment_datasets {
        tables.push((
            format!("segments/{name}/{d}"),
            PathBuf::from("segments").join(&name).join(d),
        ));
    }
    let want: Vec<u64> = common::moto::s3_pull(&moto, t.path(), &uri, &config, |m| {
        tables
            .iter()
            .map(|(_, dir)| sealed_rows(&m.join(dir)))
            .collect()
    });
    let uris: Vec<String> = tables
        .iter()
        .map(|(table, _)| format!("{uri}/{table}"))
        .collect();
    let Some(read) = read_delta(&moto, &uris) else {
        return;
    };
    let stats = s3_ok(&moto, &reader, "readdb", &uri, &config, &["--stats"]);
    for ((table, _), (got, rows)) in tables.iter().zip(read.iter().zip(&want)) {
        for reader in ["deltalake", "polars", "pyarrow"] {
            assert_eq!(got[reader], *rows, "{table} read by {reader}: {got}");
        }
        assert!(*rows > 0, "{table} is empty");
        // Pruned to one partition, polars reads that partition's rows; the
        // partitions add up.
        let parts = got["parts"].as_object().unwrap();
        assert!(parts.len() > 1, "{table}: one partition only: {got}");
        let sum: u64 = parts.values().map(|v| v.as_u64().unwrap()).sum();
        assert_eq!(sum, *rows, "{table}: {got}");
    }
    assert!(
        stats.contains(&format!("urls\t{}\n", want[0])),
        "readdb --stats counts the crawldb's rows as the readers do ({}): {stats}",
        want[0]
    );
    // readseg counts the segment's generated and fetched rows as the readers do.
    let row: Vec<&str> = seg
        .lines()
        .find(|l| l.starts_with(&name))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        read[4]["deltalake"],
        row[1].parse::<u64>().unwrap(),
        "{seg}"
    );
    assert_eq!(
        read[5]["deltalake"],
        row[2].parse::<u64>().unwrap(),
        "{seg}"
    );
    // The crawldb's versions are the table's: inject, updatedb, pagerank (and the
    // rows of the version before the newest are those time travel reads).
    assert!(read[0]["version"].as_u64().unwrap() >= 2, "{}", read[0]);
    assert!(read[0]["previous_version_rows"].as_u64().is_some());
}

/// `crawl` on S3 runs every step of its rounds on one working mirror, each stage
/// committing its datasets as it ends (the index too), and `search` on the store pulls
/// the index alone: the crawldb, hostdb and search results equal those of the same
/// `crawl` on a local directory. A second run on a fresh machine (another work
/// directory) continues from what the store holds.
#[test]
fn crawl_on_s3_equals_crawl_on_a_local_directory_and_search_reads_the_index_on_s3() {
    let Some(moto) = start_moto() else { return };
    let t = tempfile::tempdir().unwrap();
    let (web, config, seeds) = web_and_seeds(t.path());
    let crawl_args = ["--seeds", seeds.to_str().unwrap(), "--rounds", "2"];

    let local = t.path().join("crawl");
    run_ok("crawl", &local, &config, &crawl_args);
    let uri = format!("s3://{BUCKET}/crawl");
    let work = t.path().join("w");
    s3_ok(&moto, &work, "crawl", &uri, &config, &crawl_args);
    // Every unit committed, the index too; the driver's journal is the machine's
    // (beside the mirror), in no manifest.
    let bucket = Bucket::new(&moto);
    let (_, newest) = bucket.referenced("crawl");
    for unit in [
        "crawldb", "linkdb", "hostdb", "pagerank", "index", "segments",
    ] {
        assert!(newest.contains_key(unit), "{unit} is committed: {newest:?}");
    }
    for key in bucket
        .keys("crawl")
        .iter()
        .filter(|k| k.contains("/_versions/") && k.ends_with(".json"))
    {
        let m: VersionManifest = serde_json::from_slice(&bucket.get(key).unwrap()).unwrap();
        assert!(
            m.files
                .iter()
                .all(|f| !f.name.contains("crawl_journal") && f.name != "status.json"),
            "{key} lists the driver's own files: {:?}",
            m.files.iter().map(|f| &f.name).collect::<Vec<_>>()
        );
    }

    // Search on the store from a fresh machine: the index alone is pulled.
    let reader = t.path().join("searcher");
    let mut found = 0;
    for query in [
        "stone river",
        "winter",
        "forest garden",
        "lighthouse keeper",
    ] {
        let args = ["--json", "--top", "10", query];
        let here =
            hit_urls(&serde_json::from_str(&run_ok("search", &local, &config, &args)).unwrap());
        let there = hit_urls(
            &serde_json::from_str(&s3_ok(&moto, &reader, "search", &uri, &config, &args)).unwrap(),
        );
        assert_eq!(there, here, "search {query:?} on S3 and locally");
        found += here.len();
    }
    assert!(found > 0, "the queries find pages");
    // A crawl without an index on the store: said of the store, in one line.
    let none = format!("s3://{BUCKET}/none");
    let out = s3_run(&moto, &reader, "search", &none, &config, &["winter"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("{none}: no search index on the store"))
            && err.contains(&format!("index --crawl-dir {none}")),
        "{err}"
    );
    let pulled: Vec<PathBuf> = files_under(&reader)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .collect();
    assert!(
        pulled.is_empty(),
        "search pulled only the index: {pulled:?}"
    );
    let out = s3_ok(
        &moto,
        &reader,
        "index",
        &uri,
        &config,
        &["--to", "jsonl", "-"],
    );
    let local_out = run_ok("index", &local, &config, &["--to", "jsonl", "-"]);
    assert_eq!(
        out.lines().count(),
        local_out.lines().count(),
        "the export on S3"
    );

    // One more round on both, the S3 one from another work directory: it starts from
    // the store (the index updated, not rebuilt).
    let more = ["--rounds", "1"];
    run_ok("crawl", &local, &config, &more);
    s3_ok(&moto, &t.path().join("w2"), "crawl", &uri, &config, &more);
    let (remote, hosts) = common::moto::s3_pull(&moto, t.path(), &uri, &config, |m| {
        (crawldb(m), read_hosts(m))
    });
    let here = crawldb(&local);
    assert!(here.values().any(|d| d.status.as_str() == "db_fetched"));
    assert_eq!(
        triples(&remote),
        triples(&here),
        "the crawldb on S3 and locally"
    );
    assert_eq!(hosts, read_hosts(&local), "the hostdb on S3 and locally");
    for query in ["stone river", "winter"] {
        let args = ["--json", "--top", "10", query];
        let here =
            hit_urls(&serde_json::from_str(&run_ok("search", &local, &config, &args)).unwrap());
        let there = hit_urls(
            &serde_json::from_str(&s3_ok(&moto, &reader, "search", &uri, &config, &args)).unwrap(),
        );
        assert_eq!(
            there, here,
            "search {query:?} on S3 and locally after the third round"
        );
    }
    web.stop();
}

/// The hostdb's counts of the crawl at `crawl`, by host (URLs by status, fetches by
/// outcome, robots.txt; not the times, which two crawls do not share).
fn read_hosts(crawl: &Path) -> BTreeMap<String, String> {
    let rows: Vec<trawl::records::HostRecord> =
        trawl::store::parquet::read_dataset(&crawl.join("hostdb/current")).unwrap();
    rows.into_iter()
        .map(|h| {
            let counts = format!(
                "{} {} {} {} {} {} {} {} {:?} {:?}",
                h.urls,
                h.db_unfetched,
                h.db_fetched,
                h.db_gone,
                h.fetches,
                h.fetch_successes,
                h.fetch_failures,
                h.consecutive_failures,
                h.robots,
                h.robots_reason
            );
            (h.host, counts)
        })
        .collect()
}

/// Partition sets of the task test: uneven, covering 0..4.
const SETS: &[&str] = &["0-1", "2", "3"];

/// What one task or commit process on S3 did, from its log
/// (`RUST_LOG=info,trawl::store::object=debug`).
#[derive(Debug, Default, Clone)]
struct Requests {
    get: u64,
    head: u64,
    put: u64,
    list: u64,
    /// The files it downloaded (`crawl_fetch/part-00003.parquet of segments/..`).
    downloaded: Vec<String>,
}

fn requests(stderr: &str) -> Requests {
    let num = |line: &str, what: &str| -> u64 {
        line.split(&[',', '(', ')'][..])
            .map(str::trim)
            .find_map(|w| w.strip_suffix(what).and_then(|n| n.trim().parse().ok()))
            .unwrap_or(0)
    };
    let mut r = Requests::default();
    for line in stderr.lines() {
        if line.contains("pulled into") {
            r.get += num(line, " GET");
            r.head += num(line, " HEAD");
            r.list += num(line, " LIST");
        }
        if line.contains(": committed [") {
            r.put += num(line, " PUT");
        }
        if let Some(rest) = line.split("GET ").nth(1)
            && (line.contains(" of segments/")
                || line.contains(" of attempt ")
                || line.contains(" of crawldb")
                || line.contains(" of linkdb")
                || line.contains(" of pagerank")
                || line.contains(" of index"))
        {
            r.downloaded.push(rest.trim().to_string());
        }
    }
    r
}

/// The partition index of a downloaded part (`part-00003...parquet of ...`).
fn part_of(downloaded: &str) -> Option<usize> {
    let file = downloaded.split(' ').next()?.rsplit('/').next()?;
    file.strip_prefix("part-")?.get(..5)?.parse().ok()
}

/// The partition of a downloaded file of a search-index shard
/// (`shard-00003/meta.json of index`, or of an index task's attempt).
fn shard_of(downloaded: &str) -> Option<usize> {
    let name = downloaded.split(' ').next()?;
    name.split('/')
        .find_map(|p| p.strip_prefix("shard-").and_then(|d| d.parse().ok()))
}

/// A partition task (`--job --partitions --attempt`) or a commit (`pset` empty) on
/// S3 in a fresh work dir of its own; checks that it downloaded no part of another
/// partition (a commit: no part at all) and returns what it requested.
#[allow(clippy::too_many_arguments)]
fn s3_step(
    moto: &Moto,
    scratch: &Path,
    uri: &str,
    config: &Path,
    stage: &str,
    args: &[&str],
    job: &str,
    pset: &str,
    attempt: &str,
    log: &mut Vec<(String, Requests)>,
) -> Output {
    let work = scratch.join(format!("w-{job}-{pset}-{attempt}").replace('/', "_"));
    let mut all: Vec<&str> = args.to_vec();
    if pset.is_empty() {
        all.extend(["--job", job, "--commit"]);
    } else {
        all.extend(["--job", job, "--partitions", pset, "--attempt", attempt]);
    }
    let out = s3_command(moto, &work, stage, uri, config, &all)
        .env("RUST_LOG", "info,trawl::store::object=debug")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{stage} {all:?} failed ({:?}):\nstdout: {}\nstderr: {err}",
        out.status,
        String::from_utf8_lossy(&out.stdout)
    );
    let r = requests(&err);
    let set = trawl::store::jobs::PartitionSet::parse(if pset.is_empty() { "0-3" } else { pset })
        .unwrap();
    for d in &r.downloaded {
        let Some(i) = part_of(d).or_else(|| shard_of(d)) else {
            continue;
        };
        // updatedb tasks too: parse routed the segment's redirects into
        // crawl_parse (the redirect shuffle), so no task reads all of crawl_fetch.
        assert!(
            !pset.is_empty() && (set.contains(i) || pset == "all"),
            "{stage} {all:?} downloaded {d}: a task reads only its partitions' parts, a commit none\n{err}"
        );
    }
    log.push((
        format!(
            "{stage} {}",
            if pset.is_empty() {
                "commit".to_string()
            } else {
                format!("task {pset}")
            }
        ),
        r,
    ));
    let _ = std::fs::remove_dir_all(&work);
    out
}

/// The tasks of one pass over [`SETS`] plus a zombie: a second attempt of set `2`
/// finishing after the first.
#[allow(clippy::too_many_arguments)]
fn s3_tasks(
    moto: &Moto,
    scratch: &Path,
    uri: &str,
    config: &Path,
    stage: &str,
    args: &[&str],
    job: &str,
    log: &mut Vec<(String, Requests)>,
) {
    for set in SETS {
        s3_step(
            moto,
            scratch,
            uri,
            config,
            stage,
            args,
            job,
            set,
            &format!("{stage}-{set}-1"),
            log,
        );
    }
    s3_step(
        moto, scratch, uri, config, stage, args, job, "2", "0-zombie", log,
    );
}

#[test]
fn partition_tasks_on_s3_equal_the_one_process_crawl() {
    let Some(moto) = start_moto() else { return };
    let t = tempfile::tempdir().unwrap();
    let web = TestWeb::start(t.path(), WEB);
    let config = write_config(t.path(), &web.addr, 0.0, "");
    let map = site_map(t.path(), WEB);
    let seeds = t.path().join("seeds.txt");
    std::fs::write(&seeds, map.seeds.join("\n") + "\n").unwrap();
    let seeds = seeds.to_str().unwrap();

    // One process, locally.
    let local = t.path().join("crawl");
    run_ok("inject", &local, &config, &[seeds]);
    round(&local, &config).expect("seeds are due");
    run_ok("dedup", &local, &config, &["--near"]);

    // Partition tasks on S3; every task and commit in a process (and work dir) of
    // its own.
    let uri = format!("s3://{BUCKET}/tasks");
    let scratch = t.path().join("s");
    let mut log = Vec::new();
    s3_ok(
        &moto,
        &scratch.join("inject"),
        "inject",
        &uri,
        &config,
        &[seeds],
    );
    let c = &config;
    let m = &moto;
    let sc = &scratch;
    s3_tasks(
        m,
        sc,
        &uri,
        c,
        "generate",
        &["--pass", "histogram"],
        "g1",
        &mut log,
    );
    s3_ok(
        m,
        &sc.join("cutoff"),
        "generate",
        &uri,
        c,
        &["--job", "g1", "--cutoff"],
    );
    s3_tasks(
        m,
        sc,
        &uri,
        c,
        "generate",
        &["--pass", "select"],
        "g1",
        &mut log,
    );
    let out = s3_step(m, sc, &uri, c, "generate", &[], "g1", "", "", &mut log);
    let path = String::from_utf8_lossy(&out.stdout)
        .trim()
        .lines()
        .last()
        .unwrap()
        .to_string();
    let seg = Path::new(&path)
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    // A fetch task needs a time limit (its leases expire after it).
    let fetch_args = [seg.as_str(), "--time-limit", "60"];
    // Leases are objects of the store: a live one (another machine's attempt)
    // refuses the task with exit 6; an expired one is taken over (If-Match).
    // On the partition holding the most seed hosts (it has pages to fetch).
    let mut seeds_in = [0usize; 4];
    for u in &map.seeds {
        let host = url::Url::parse(u).unwrap().host_str().unwrap().to_string();
        seeds_in[trawl::store::partition::Partitioner::by_host(4).of_host(&host)] += 1;
    }
    let busy = (0..4).max_by_key(|&i| (seeds_in[i], i)).unwrap();
    // Its task: the set of SETS holding it.
    let pset = SETS
        .iter()
        .find(|s| {
            trawl::store::jobs::PartitionSet::parse(s)
                .unwrap()
                .contains(busy)
        })
        .unwrap()
        .to_string();
    let attempt = format!("f-{pset}-0");
    let lease_key: &'static str =
        Box::leak(format!("tasks/fetch_state/00004/p{busy:05}/fetch.lease").into_boxed_str());
    let lease = |expires: i64| {
        serde_json::json!({
            "job": "f0", "attempt": "elsewhere", "pid": 1, "host": "another-machine",
            "since": "2026-11-24T00:00:00+00:00", "expires": expires
        })
        .to_string()
    };
    let now = trawl::datum::now_millis();
    let bucket = Bucket::new(m);
    bucket.put(lease_key, &lease(now + 600_000));
    let mut refused = fetch_args.to_vec();
    refused.extend(["--job", "f1", "--partitions", &pset, "--attempt", "refused"]);
    let o = s3_run(m, &sc.join("refused"), "fetch", &uri, c, &refused);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(6), "{err}");
    assert!(
        err.contains("is leased by attempt elsewhere of job f0"),
        "{err}"
    );
    // A live lease that expires within `fetch.lease_wait` (its holder's machine was
    // lost a moment ago) is waited for, then taken over. The taker's heartbeat renews
    // its own lease on the store (`lease_ttl = 0.45`: every 0.15 s, a conditional
    // update); a slower delay keeps the task running long enough to see it.
    let beating = t.path().join("beating.toml");
    let text = std::fs::read_to_string(c).unwrap().replace(
        "[fetch]\ndelay = 0\n",
        "[fetch]\ndelay = 1.5\nlease_ttl = 0.45\n",
    );
    assert!(text.contains("lease_ttl = 0.45"), "{text}");
    std::fs::write(&beating, text).unwrap();
    bucket.put(lease_key, &lease(trawl::datum::now_millis() + 1500));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let poller = {
        let (endpoint, stop) = (moto.endpoint.clone(), stop.clone());
        std::thread::spawn(move || {
            let bucket = Bucket::at(&endpoint);
            let mut seen = BTreeSet::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if let Some(b) = bucket.get(lease_key) {
                    let l: serde_json::Value = serde_json::from_slice(&b).unwrap();
                    seen.insert((l["attempt"].to_string(), l["expires"].to_string()));
                }
                std::thread::sleep(std::time::Duration::from_millis(40));
            }
            seen
        })
    };
    let o = s3_step(
        m,
        sc,
        &uri,
        &beating,
        "fetch",
        &fetch_args,
        "f1",
        &pset,
        &attempt,
        &mut log,
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let seen = poller.join().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("waiting") && err.contains("is taken over: it expired"),
        "{err}"
    );
    let renewals = seen
        .iter()
        .filter(|(a, _)| *a == format!("{attempt:?}"))
        .count();
    assert!(
        renewals >= 3,
        "the task's heartbeat renewed its lease on the store: {seen:?}\n{err}"
    );
    assert!(bucket.get(lease_key).is_none(), "the lease is released");
    s3_tasks(m, sc, &uri, c, "fetch", &fetch_args, "f1", &mut log);
    s3_step(m, sc, &uri, c, "fetch", &[&seg], "f1", "", "", &mut log);
    s3_tasks(m, sc, &uri, c, "parse", &[&seg], "p1", &mut log);
    s3_step(m, sc, &uri, c, "parse", &[&seg], "p1", "", "", &mut log);
    // updatedb: an attempt killed between its uploads and its manifest is not
    // seen by the commit.
    let mut killed = s3_command(
        m,
        &sc.join("killed"),
        "updatedb",
        &uri,
        c,
        &[
            &seg,
            "--job",
            "u1",
            "--partitions",
            "0-1",
            "--attempt",
            "0-killed",
        ],
    )
    .env("TRAWL_TEST_PAUSE_SEGTOOLS", "object:uploaded-one:60")
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    kill_when_uploaded(&mut killed, "the updatedb task");
    s3_tasks(m, sc, &uri, c, "updatedb", &[&seg], "u1", &mut log);
    s3_step(m, sc, &uri, c, "updatedb", &[&seg], "u1", "", "", &mut log);
    s3_tasks(m, sc, &uri, c, "linkdb", &[&seg], "l1", &mut log);
    // Two commits of the job at once (both read the job, then both create the
    // linkdb's next version): exactly one wins, the other exits 6 saying so.
    let racer = |name: &str| {
        s3_command(
            m,
            &sc.join(name),
            "linkdb",
            &uri,
            c,
            &[&seg, "--job", "l1", "--commit"],
        )
        .env("TRAWL_TEST_PAUSE_SEGTOOLS", "object:before-commit:3")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
    };
    let (ra, rb) = (racer("race-a"), racer("race-b"));
    let outs = [
        ra.wait_with_output().unwrap(),
        rb.wait_with_output().unwrap(),
    ];
    let winners = outs.iter().filter(|o| o.status.success()).count();
    let errs: Vec<String> = outs
        .iter()
        .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
        .collect();
    assert_eq!(winners, 1, "exactly one commit wins: {errs:?}");
    let loser = outs.iter().position(|o| !o.status.success()).unwrap();
    assert_eq!(outs[loser].status.code(), Some(6), "{}", errs[loser]);
    assert!(
        errs[loser].contains("committed version 1 of linkdb first")
            && errs[loser].contains("was not installed"),
        "{}",
        errs[loser]
    );
    s3_step(
        m,
        sc,
        &uri,
        c,
        "pagerank",
        &["--pass", "scores"],
        "r1",
        "all",
        "s-1",
        &mut log,
    );
    s3_tasks(
        m,
        sc,
        &uri,
        c,
        "pagerank",
        &["--pass", "rewrite"],
        "r1",
        &mut log,
    );
    s3_step(m, sc, &uri, c, "pagerank", &[], "r1", "", "", &mut log);
    // pagerank again, as the iteration's partition tasks: each iterate task downloads
    // its partitions' graph and what the previous iteration sent them, no older
    // iteration's parts; the check runs on a mirror of the job alone.
    for pass in ["links", "graph"] {
        s3_tasks(
            m,
            sc,
            &uri,
            c,
            "pagerank",
            &["--pass", pass],
            "p2",
            &mut log,
        );
    }
    let mut k = 0usize;
    loop {
        let ks = k.to_string();
        let from = log.len();
        s3_tasks(
            m,
            sc,
            &uri,
            c,
            "pagerank",
            &["--pass", "iterate", "--iteration", &ks],
            "p2",
            &mut log,
        );
        for (what, r) in &log[from..] {
            // Of the job's attempts (the crawl's own datasets: its partitions' parts).
            for d in r
                .downloaded
                .iter()
                .filter(|d| part_of(d).is_some() && d.contains(" of attempt "))
            {
                let read = d
                    .split(" of attempt shuffle.")
                    .nth(1)
                    .and_then(|a| a.split('/').next())
                    .unwrap_or_default();
                let wanted = ["graph".to_string(), format!("rank.{}", k.wrapping_sub(1))];
                assert!(
                    wanted.iter().any(|w| w == read),
                    "{what} of iteration {k} downloaded {d}"
                );
            }
        }
        let previous = format!("shuffle.rank.{}/", k.wrapping_sub(1));
        assert!(
            k == 0
                || log[from..]
                    .iter()
                    .any(|(_, r)| r.downloaded.iter().any(|d| d.contains(&previous))),
            "iteration {k}'s tasks read what iteration {} sent them: {:?}",
            k.wrapping_sub(1),
            &log[from..]
        );
        let out = s3_ok(
            m,
            &sc.join(format!("check-{k}")),
            "pagerank",
            &uri,
            c,
            &["--job", "p2", "--check", "--iteration", &ks],
        );
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON line");
        if !v["again"].as_bool().expect("again") {
            break;
        }
        assert!(k < 200, "the iteration does not stop");
        k += 1;
    }
    assert!(k >= 2, "pagerank iterated: {k}");
    // The checks removed the older iterations' attempts from the store as well: a
    // task lists and GETs two iterations' manifests, not all of them.
    let iterations: std::collections::BTreeSet<String> = Bucket::new(&moto)
        .keys("tasks/_jobs/p2/attempts")
        .into_iter()
        .filter_map(|key| {
            key.split("shuffle.rank.")
                .nth(1)
                .and_then(|r| r.split('/').next())
                .map(str::to_string)
        })
        .collect();
    assert_eq!(
        iterations,
        [k - 1, k].iter().map(|i| i.to_string()).collect(),
        "iterations left on the store after check {k}"
    );
    let ks = k.to_string();
    s3_tasks(
        m,
        sc,
        &uri,
        c,
        "pagerank",
        &["--pass", "rewrite", "--iteration", &ks],
        "p2",
        &mut log,
    );
    s3_step(m, sc, &uri, c, "pagerank", &[], "p2", "", "", &mut log);
    // dedup's shuffle: a groups task reads its buckets' parts of every keys attempt,
    // a rewrite task its partitions' verdicts of every groups attempt, and nothing of
    // another partition (s3_step checks what each downloaded).
    let mut crossed = 0;
    for pass in ["keys", "groups"] {
        let from = log.len();
        s3_tasks(
            m,
            sc,
            &uri,
            c,
            "dedup",
            &["--near", "--pass", pass],
            "d1",
            &mut log,
        );
        // A groups task's buckets come from keys attempts of other partition sets.
        for (_, r) in &log[from..] {
            for d in &r.downloaded {
                let theirs = d
                    .split(" of attempt shuffle.keys/")
                    .nth(1)
                    .and_then(|a| a.split('/').next())
                    .and_then(trawl::store::jobs::PartitionSet::from_dir_name);
                if let (Some(theirs), Some(i)) = (theirs, part_of(d))
                    && !theirs.contains(i)
                {
                    crossed += 1;
                }
            }
        }
    }
    assert!(
        crossed > 0,
        "dedup's groups tasks read keys routed by other partition sets' tasks: {log:?}"
    );
    let from = log.len();
    s3_step(
        m,
        sc,
        &uri,
        c,
        "dedup",
        &["--near", "--pass", "resolve"],
        "d1",
        "all",
        "r-1",
        &mut log,
    );
    s3_tasks(
        m,
        sc,
        &uri,
        c,
        "dedup",
        &["--near", "--pass", "rewrite"],
        "d1",
        &mut log,
    );
    s3_step(m, sc, &uri, c, "dedup", &["--near"], "d1", "", "", &mut log);
    // The resolve and rewrite tasks read the groups' output, not the keys shuffle
    // (of which they take the reports).
    for (what, r) in &log[from..] {
        assert!(
            !r.downloaded
                .iter()
                .any(|d| d.contains("shuffle.keys") && part_of(d).is_some()),
            "{what} downloaded the keys shuffle: {:?}",
            r.downloaded
        );
    }

    // The index as tasks on S3, twice (the second over the installed shards): a task
    // pulls its own partitions' shards alone and a commit none (s3_step checks what
    // each downloaded); a task pushes no shard file the store holds already, so the
    // second run's tasks, with nothing new to index, send only each shard's new
    // commit files. The documents are the one process's.
    run_ok("index", &local, &config, &[]);
    let mut puts = Vec::new();
    for job in ["i1", "i2"] {
        let from = log.len();
        s3_tasks(m, sc, &uri, c, "index", &[], job, &mut log);
        puts.push(log[from..].iter().map(|(_, r)| r.put).sum::<u64>());
        s3_step(m, sc, &uri, c, "index", &[], job, "", "", &mut log);
    }
    assert!(
        log.iter().any(|(w, r)| w.starts_with("index task")
            && r.downloaded.iter().any(|d| shard_of(d).is_some())),
        "the second run's tasks pulled their shards: {log:?}"
    );
    assert!(
        puts[1] * 2 < puts[0],
        "the second index run's tasks sent only their new commit files: {puts:?} PUT"
    );
    // The documents but when and in which segment a page was fetched (the two crawls
    // fetched apart).
    let exported = |text: &str| -> BTreeSet<String> {
        text.lines()
            .skip(1)
            .step_by(2)
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                let o = v.as_object_mut().unwrap();
                o.remove("fetch_time");
                o.remove("segment");
                v.to_string()
            })
            .collect()
    };
    let on_s3 = s3_ok(
        m,
        &sc.join("export"),
        "index",
        &uri,
        c,
        &["--to", "jsonl", "-"],
    );
    let here = run_ok("index", &local, &config, &["--to", "jsonl", "-"]);
    assert!(!exported(&here).is_empty());
    assert_eq!(
        exported(&on_s3),
        exported(&here),
        "the index on S3 is the one process's"
    );

    let (remote, ranks) = common::moto::s3_pull(&moto, t.path(), &uri, &config, |m| {
        (crawldb(m), pagerank_rows(m))
    });
    assert_same_pagerank(&ranks, &pagerank_rows(&local), "pagerank/ on S3");
    let here = crawldb(&local);
    assert!(here.values().any(|d| d.status.as_str() == "db_fetched"));
    assert_eq!(triples(&remote), triples(&here));
    // The jobs are gone from the store once committed.
    let left: Vec<String> = Bucket::new(&moto).keys("tasks/_jobs").into_iter().collect();
    assert!(left.is_empty(), "jobs left on the store: {left:?}");
    for (what, r) in &log {
        eprintln!(
            "requests {what}: {} GET ({} files, {} of them parts), {} HEAD, {} PUT, {} LIST",
            r.get,
            r.downloaded.len(),
            r.downloaded.iter().filter(|d| part_of(d).is_some()).count(),
            r.head,
            r.put,
            r.list
        );
    }
}

/// The URLs of a segment's fetch list, sorted.
fn fetch_list_urls(segment: &Path) -> Vec<String> {
    let mut urls: Vec<String> = trawl::store::parquet::part_files(&segment.join("crawl_generate"))
        .unwrap()
        .iter()
        .flat_map(|p| trawl::store::parquet::read_part_all::<trawl::CrawlDatum>(p).unwrap())
        .map(|d| d.url)
        .collect();
    urls.sort();
    urls
}

/// generate as partition tasks on S3 with a cut: the cut-off downloads the
/// histogram tasks' summaries, never their candidates (placeholders in its mirror),
/// and reads the blocks it needs by ranged GETs; each select task downloads its own
/// partitions' candidates only; the fetch list is one-process generate's.
#[test]
fn the_generate_cutoff_on_s3_reads_blocks_of_candidates_by_ranged_gets() {
    let Some(moto) = start_moto() else { return };
    let t = tempfile::tempdir().unwrap();
    let config = write_config(t.path(), "127.0.0.1:9", 0.0, "");
    // 600 seeds on 40 hosts, scores spread with ties (never fetched).
    let lines: Vec<String> = (0..600)
        .map(|i| {
            format!(
                "http://h{}.web.test/p{i}\tscore={}",
                i % 40,
                f64::from(i % 17) / 4.0
            )
        })
        .collect();
    let seeds = t.path().join("seeds.txt");
    std::fs::write(&seeds, lines.join("\n") + "\n").unwrap();
    let seeds = seeds.to_str().unwrap();
    let local = t.path().join("crawl");
    run_ok("inject", &local, &config, &[seeds]);
    let out = run_ok("generate", &local, &config, &["--top-n", "150"]);
    let want = fetch_list_urls(Path::new(out.trim().lines().last().unwrap()));
    assert_eq!(want.len(), 150);

    let uri = format!("s3://{BUCKET}/cutoff");
    let sc = t.path().join("s");
    let mut log = Vec::new();
    s3_ok(&moto, &sc.join("inject"), "inject", &uri, &config, &[seeds]);
    let gen_args = ["--top-n", "150"];
    s3_tasks(
        &moto,
        &sc,
        &uri,
        &config,
        "generate",
        &[&gen_args[..], &["--pass", "histogram"]].concat(),
        "g",
        &mut log,
    );
    let work = sc.join("cutoff");
    let out = s3_run(
        &moto,
        &work,
        "generate",
        &uri,
        &config,
        &[&gen_args[..], &["--job", "g", "--cutoff"]].concat(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "generate --cutoff on S3: {stderr}");
    let gets: u64 = stderr
        .split(" ranged GETs")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the cut-off's summary names its ranged GETs: {stderr}"));
    assert!(
        gets >= 1,
        "the cut-off read blocks by ranged GETs: {stderr}"
    );
    let cands: Vec<PathBuf> = files_under(&work)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "cands"))
        .collect();
    assert!(!cands.is_empty(), "the mirror lists the candidates files");
    for p in &cands {
        assert!(
            std::fs::read(p).unwrap().iter().all(|&b| b == 0),
            "{}: a placeholder, not downloaded",
            p.display()
        );
    }
    s3_tasks(
        &moto,
        &sc,
        &uri,
        &config,
        "generate",
        &[&gen_args[..], &["--pass", "select"]].concat(),
        "g",
        &mut log,
    );
    let out = s3_step(
        &moto, &sc, &uri, &config, "generate", &gen_args, "g", "", "", &mut log,
    );
    let name = String::from_utf8_lossy(&out.stdout)
        .trim()
        .lines()
        .last()
        .and_then(|p| {
            Path::new(p)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap();
    let got = s3_pull(&moto, t.path(), &uri, &config, |m| {
        fetch_list_urls(&m.join("segments").join(&name))
    });
    assert_eq!(
        got, want,
        "the fetch list made on S3 is one-process generate's"
    );
}

/// Fetch checkpoints on an object store: a fetch task killed on one machine after it
/// published checkpoints to the store; its retry on another (a work dir of its own)
/// pulls them and requests only what they lack; the commit removes them from the
/// store.
#[test]
fn a_fetch_task_killed_on_s3_resumes_on_another_machine_from_its_checkpoints() {
    let Some(moto) = start_moto() else { return };
    let t = tempfile::tempdir().unwrap();
    let web = TestWeb::start(t.path(), WEB);
    let config = write_config(t.path(), &web.addr, 0.3, "");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "[fetch]\ndelay = 0.3\n",
        "[fetch]\ndelay = 0.3\ncheckpoint_interval = 0.2\nlease_ttl = 1\n",
    );
    assert!(text.contains("checkpoint_interval = 0.2"), "{text}");
    std::fs::write(&config, text).unwrap();
    let map = site_map(t.path(), WEB);
    let seeds = t.path().join("seeds.txt");
    std::fs::write(&seeds, map.seeds.join("\n") + "\n").unwrap();
    let uri = format!("s3://{BUCKET}/ckpt");
    let sc = t.path().join("s");
    s3_ok(
        &moto,
        &sc.join("inject"),
        "inject",
        &uri,
        &config,
        &[seeds.to_str().unwrap()],
    );
    // A first round fetched whole (the seeds' links make the second's list long).
    let generate = |name: &str| -> String {
        let out = s3_ok(&moto, &sc.join(name), "generate", &uri, &config, &[]);
        Path::new(out.trim().lines().last().unwrap())
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .to_string()
    };
    let first_seg = generate("generate-1");
    for stage in ["fetch", "parse", "updatedb"] {
        s3_ok(
            &moto,
            &sc.join(format!("{stage}-1")),
            stage,
            &uri,
            &config,
            &[&first_seg],
        );
    }
    let seg = generate("generate-2");
    let task = |attempt: &str| -> Vec<String> {
        [
            seg.as_str(),
            "--time-limit",
            "60",
            "--job",
            "f1",
            "--partitions",
            "all",
            "--attempt",
            attempt,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let round_ms = trawl::datum::now_millis();
    let first = task("lost");
    let first: Vec<&str> = first.iter().map(String::as_str).collect();
    let mut lost = s3_command(&moto, &sc.join("machine-a"), "fetch", &uri, &config, &first)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once the store holds two whole checkpoints.
    let bucket = Bucket::new(&moto);
    let prefix = format!("ckpt/_jobs/fetch-checkpoints/{seg}");
    let started = std::time::Instant::now();
    loop {
        let whole = bucket
            .keys(&prefix)
            .iter()
            .filter(|k| k.ends_with("/_PUBLISHED"))
            .count();
        if whole >= 2 {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "no checkpoint on the store: {:?}",
            bucket.keys(&prefix)
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    lost.kill().unwrap();
    lost.wait().unwrap();
    let killed_ms = trawl::datum::now_millis();

    let retry = task("retry");
    let retry: Vec<&str> = retry.iter().map(String::as_str).collect();
    let out = s3_command(&moto, &sc.join("machine-b"), "fetch", &uri, &config, &retry)
        .env("RUST_LOG", "info")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    assert!(err.contains("pulled from the store"), "{err}");
    let resumed: u64 = err
        .lines()
        .find(|l| l.starts_with("fetch: "))
        .and_then(|l| {
            l.split("; ")
                .find_map(|f| f.split_once(" rows resumed from the checkpoints of a lost attempt"))
        })
        .map(|(n, _)| n.parse().unwrap())
        .unwrap_or_else(|| panic!("the summary says what was resumed: {err}"));
    assert!(resumed >= 2, "{err}");
    s3_ok(
        &moto,
        &sc.join("commit"),
        "fetch",
        &uri,
        &config,
        &[&seg, "--job", "f1", "--commit"],
    );
    let left = bucket.keys("ckpt/_jobs");
    assert!(
        left.is_empty(),
        "the commit removed the checkpoints and the job: {left:?}"
    );

    // Every page fetched once in the segment; those requested twice are only what the
    // lost attempt fetched after its last checkpoint (fewer than it fetched).
    let log = web.stop();
    let mut pages: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut before = 0;
    for l in log
        .iter()
        .filter(|l| l.path != "/robots.txt" && l.time_ms >= round_ms)
    {
        *pages.entry((l.host.clone(), l.path.clone())).or_default() += 1;
        before += usize::from(l.time_ms <= killed_ms);
    }
    let twice = pages.values().filter(|n| **n > 1).count();
    eprintln!(
        "fetch on S3: {before} pages requested by the lost attempt, {resumed} resumed from its checkpoints by the retry on another machine, {twice} requested twice"
    );
    assert!(
        twice + resumed as usize <= before,
        "{twice} pages requested twice, {resumed} resumed, {before} requested before the kill"
    );
    let (listed, fetched) = common::moto::s3_pull(&moto, t.path(), &uri, &config, |m| {
        let seg = m.join("segments").join(&seg);
        let listed: BTreeSet<String> =
            trawl::store::parquet::read_dataset::<trawl::CrawlDatum>(&seg.join("crawl_generate"))
                .unwrap()
                .into_iter()
                .map(|d| d.url)
                .collect();
        let fetched: Vec<String> =
            trawl::store::parquet::read_dataset::<trawl::records::FetchRecord>(
                &seg.join("crawl_fetch"),
            )
            .unwrap()
            .into_iter()
            .map(|r| r.url)
            .collect();
        (listed, fetched)
    });
    assert!(listed.len() >= 10, "a long fetch list: {listed:?}");
    let once: BTreeSet<&String> = fetched.iter().collect();
    assert_eq!(once.len(), fetched.len(), "one crawl_fetch row per URL");
    assert!(
        listed.iter().all(|u| once.contains(u)),
        "every fetch-list URL fetched"
    );
}
