//! Disk space: stages refuse a disk too small for what they will write before they
//! write anything, and a disk that fills up during a write fails the stage cleanly
//! (exit code 1, the file named, nothing installed) leaving the crawl dir usable.
//!
//! The first test runs everywhere with the test-only free-space override
//! (`TRAWL_TEST_FREE_BYTES`); the second mounts a real small tmpfs and runs only where
//! that is allowed (root in a container that permits `mount -t tmpfs`), saying so
//! when it is skipped.

use crate::common;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{bin, snapshot, stage_command};
use trawl::store::disk::TEST_FREE_BYTES_ENV;
use trawl_bench::benchgen::{BenchSpec, generate};

const PARTS: usize = 4;

fn config(dir: &Path) -> PathBuf {
    let path = dir.join("trawl.toml");
    std::fs::write(&path, format!("[crawl]\npartitions = {PARTS}\n")).unwrap();
    path
}

/// A crawldb of `urls` URLs and a fetched, parsed segment (the benchmarks' shape).
fn crawl(root: &Path, urls: u64) {
    generate(
        root,
        &BenchSpec {
            urls,
            hosts: urls / 100,
            partitions: PARTS,
        },
    )
    .unwrap();
}

fn run_env(stage: &str, crawl: &Path, cfg: &Path, args: &[&str], free: Option<u64>) -> Output {
    let mut cmd: Command = stage_command(bin(stage), crawl, cfg, args);
    match free {
        Some(b) => cmd.env(TEST_FREE_BYTES_ENV, b.to_string()),
        None => cmd.env_remove(TEST_FREE_BYTES_ENV),
    };
    cmd.output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn stages_refuse_a_disk_too_small_before_writing_anything() {
    let t = tempfile::tempdir().unwrap();
    let cfg = config(t.path());
    let root = t.path().join("crawl");
    crawl(&root, 20_000);
    let before = snapshot(&root);
    let cases: [(&str, &[&str]); 5] = [
        ("updatedb", &[]),
        ("generate", &["--top-n", "1000"]),
        ("dedup", &[]),
        ("linkdb", &[]),
        ("pagerank", &[]),
    ];
    for (stage, args) in cases {
        let out = run_env(stage, &root, &cfg, args, Some(1000));
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{stage}: {err}");
        assert!(
            err.contains(&format!("not enough disk space for {stage}")),
            "{stage}: {err}"
        );
        assert!(err.contains("free (1000 bytes)"), "{stage}: {err}");
        assert!(err.contains("Nothing was written"), "{stage}: {err}");
        assert!(!err.contains("panicked"), "{stage}: {err}");
        assert_eq!(
            snapshot(&root),
            before,
            "{stage} changed the crawl dir although it refused"
        );
    }
    // inject: the new crawldb version and, for more seeds than its sort buffer, the
    // spill of the seeds.
    let seeds = t.path().join("seeds.txt");
    let text: String = (0..5000)
        .map(|i| format!("http://h{}.test/s{i}\n", i % 50))
        .collect();
    std::fs::write(&seeds, text).unwrap();
    let seeds_arg = seeds.to_str().unwrap();
    let small = t.path().join("small.toml");
    std::fs::write(
        &small,
        format!("[crawl]\npartitions = {PARTS}\n[inject]\nsort_buffer_rows = 100\n"),
    )
    .unwrap();
    let out = run_env("inject", &root, &small, &[seeds_arg], Some(1000));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "inject: {err}");
    assert!(err.contains("not enough disk space for inject"), "{err}");
    assert!(err.contains("with the sort spill of the seeds"), "{err}");
    assert_eq!(
        snapshot(&root),
        before,
        "inject changed the crawl dir although it refused"
    );
    let out = run_env("inject", &root, &small, &[seeds_arg], Some(u64::MAX / 4));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("injected 5000, already known 0"),
        "{}",
        stderr(&out)
    );
    // With enough room the same run goes through.
    let out = run_env("updatedb", &root, &cfg, &[], Some(u64::MAX / 4));
    assert!(out.status.success(), "{}", stderr(&out));
    let stats = run_env("readdb", &root, &cfg, &["--stats"], None);
    let text = String::from_utf8_lossy(&stats.stdout);
    assert!(text.contains("disk bytes\t"), "{text}");
    let per_url: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("disk bytes per url\t"))
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(per_url > 1.0 && per_url < 200.0, "{text}");
}

/// A tmpfs mounted at a directory for the test's duration.
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `bytes` at `dir`; `None` when this machine does not allow it.
    fn mount(dir: &Path, bytes: u64) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(dir)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn copy_tree(from: &Path, to: &Path) {
    let ok = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(ok.success(), "cp -a {} {}", from.display(), to.display());
}

#[test]
fn a_real_small_disk_is_refused_before_and_a_full_disk_fails_cleanly() {
    let t = tempfile::tempdir().unwrap();
    let cfg = config(t.path());
    let built = t.path().join("crawl");
    crawl(&built, 20_000);
    let bytes = trawl::store::disk::tree_bytes(&built);
    // Room for the crawl and a new crawldb version (filled below, then freed).
    let Some(mnt) = Tmpfs::mount(&t.path().join("mnt"), bytes + (4 << 20)) else {
        eprintln!(
            "skipped: mounting a tmpfs is not allowed here (needs root); the free-space override test covers the check"
        );
        return;
    };
    copy_tree(&built, &mnt.0);
    let root = mnt.0.join("crawl");
    // Fill the rest but 64 KiB, so the statvfs figure is what the check sees.
    let free = trawl::store::disk::free_bytes(&root).unwrap();
    let filler = mnt.0.join("filler");
    std::fs::write(&filler, vec![0u8; free.saturating_sub(64 << 10) as usize]).unwrap();
    let before = snapshot(&root);

    // The real figure: refused before anything is written.
    let out = run_env("updatedb", &root, &cfg, &[], None);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("not enough disk space for updatedb"), "{err}");
    assert_eq!(snapshot(&root), before);

    // The check fooled (an estimate too low, another writer): the write itself
    // fills the disk. A clear error naming the file, no panic, nothing installed.
    let out = run_env("updatedb", &root, &cfg, &[], Some(u64::MAX / 4));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    // The one-process updatedb writes its parts as attempt 0 of a private job.
    assert!(
        err.contains("/_jobs/updatedb-local-") && err.contains(".parquet"),
        "names the file being written: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(
        snapshot(&root),
        before,
        "the staged version is removed and current is untouched"
    );

    // Usable: readers work, and with room again the same updatedb succeeds.
    let out = run_env("readdb", &root, &cfg, &["--stats"], None);
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::remove_file(&filler).unwrap();
    let out = run_env("updatedb", &root, &cfg, &[], None);
    assert!(out.status.success(), "{}", stderr(&out));
    drop(mnt);
}
