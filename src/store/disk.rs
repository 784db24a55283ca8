//! Disk space: the bytes a dataset takes on disk, the free bytes of the file system
//! holding the crawl directory, and the check a stage runs before it writes big data.
//!
//! A stage that rewrites or writes a large dataset (updatedb, generate, linkdb,
//! pagerank, mergesegs, dedup; inject through the same call) estimates the bytes it
//! will write (its new version, plus the temporary spill of an external sort) and
//! calls [`ensure_space`] before the work starts: when the file system has less
//! free, it stops with an error naming the directory, the bytes needed and free, and
//! what to do, and nothing is written. The estimates are deliberately generous
//! ([`with_headroom`]); docs/crawldb.md ("Disk") lists what each stage needs.
//!
//! A disk that fills up anyway (another process writing, an estimate too low) fails
//! the stage's write with an I/O error naming the file; the staged version is
//! removed and nothing is installed, so the crawl directory keeps its previous state.
//!
//! [`TEST_FREE_BYTES_ENV`] is a test-only override of the free-space figure.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use ::parquet::file::reader::{FileReader, SerializedFileReader};

use super::integrity;
use super::layout::CrawlDir;
use crate::error::{Error, IoContext, Result};

/// Test-only: a number of bytes that [`free_bytes`] reports instead of asking the
/// file system, so tests can run a stage "on a full disk" without one. Never set it
/// in production.
pub const TEST_FREE_BYTES_ENV: &str = "TRAWL_TEST_FREE_BYTES";

/// The bytes available to this (unprivileged) process on the file system holding
/// `path`, or its nearest existing ancestor when `path` does not exist yet
/// (`statvfs`: available blocks times the fragment size). [`TEST_FREE_BYTES_ENV`]
/// overrides it.
pub fn free_bytes(path: &Path) -> Result<u64> {
    if let Some(v) = test_free_bytes() {
        return Ok(v);
    }
    let at = existing_ancestor(path);
    let st = rustix::fs::statvfs(&at).map_err(|e| Error::io(&at, e.into()))?;
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
}

/// The override of [`TEST_FREE_BYTES_ENV`], if set to a number.
fn test_free_bytes() -> Option<u64> {
    let v = std::env::var(TEST_FREE_BYTES_ENV).ok()?;
    let n = v.trim().parse::<u64>().ok();
    if n.is_some() {
        tracing::warn!(
            "{TEST_FREE_BYTES_ENV}={v} set: free disk space taken as {v} bytes (test-only)"
        );
    }
    n
}

/// `path` or its nearest ancestor that exists (`.` for a relative path with none).
fn existing_ancestor(path: &Path) -> PathBuf {
    let mut p = path;
    loop {
        if p.exists() {
            return p.to_path_buf();
        }
        match p.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => p = parent,
            _ => return PathBuf::from("."),
        }
    }
}

/// The bytes of the file `path`, or of every file under the directory `path`
/// (apparent sizes; 0 when it does not exist or cannot be read).
pub fn tree_bytes(path: &Path) -> u64 {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return 0;
    };
    if !meta.is_dir() {
        return meta.len();
    }
    let Ok(entries) = fs::read_dir(path) else {
        return 0;
    };
    entries
        .filter_map(|e| e.ok())
        .map(|e| tree_bytes(&e.path()))
        .sum()
}

/// The rows and bytes of each part of the dataset `dir`: from its manifest when it
/// is complete, else from the part files themselves (rows unknown: 0). Empty when
/// the dataset does not exist.
pub fn part_sizes(dir: &Path) -> Result<Vec<(u64, u64)>> {
    if super::parquet::dataset_complete(dir)
        && let Some(m) = integrity::read(dir)?
    {
        return Ok(m.parts.iter().map(|p| (p.rows, p.bytes)).collect());
    }
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).at(dir)? {
        let entry = entry.at(dir)?;
        if integrity::is_part_name(&entry.file_name().to_string_lossy()) {
            out.push((0, entry.metadata().at(entry.path())?.len()));
        }
    }
    Ok(out)
}

/// The bytes of the part files of the dataset `dir` ([`part_sizes`]); 0 when it
/// does not exist.
pub fn dataset_bytes(dir: &Path) -> Result<u64> {
    Ok(part_sizes(dir)?.iter().map(|(_, b)| b).sum())
}

/// The rows of the dataset `dir` from its manifest ([`part_sizes`]; 0 when it is
/// not complete).
pub fn dataset_rows(dir: &Path) -> Result<u64> {
    Ok(part_sizes(dir)?.iter().map(|(r, _)| r).sum())
}

/// The bytes per row of the complete dataset `dir` (rounded up; 0 when it holds no
/// rows): what a row of it costs on disk, to size a dataset of its rows.
pub fn bytes_per_row(dir: &Path) -> Result<u64> {
    let (rows, bytes) = part_sizes(dir)?
        .iter()
        .fold((0u64, 0u64), |(r, b), p| (r + p.0, b + p.1));
    Ok(if rows == 0 { 0 } else { bytes.div_ceil(rows) })
}

/// The temporary space an external sort of the rows of `datasets` may take when it
/// runs over `partitions` partitions, `workers` at a time, keeping `buffer_rows` rows
/// of a partition in memory: nothing when a partition's share fits the buffer, else
/// twice the rows' uncompressed Parquet size ([`uncompressed_bytes`]) for the
/// partitions sorting at once (a partition's runs are deleted when its merge ends).
/// Twice: spilled rows are bincode, without Parquet's dictionaries (measured 1.3x at
/// 1M URLs), and a merge pass over more than `spill::MAX_FAN_IN` runs writes its
/// output before deleting its inputs.
pub fn spill_estimate(
    datasets: &[PathBuf],
    partitions: usize,
    buffer_rows: usize,
    workers: usize,
) -> Result<u64> {
    let mut rows = 0u64;
    let mut bytes = 0u64;
    for d in datasets {
        rows += dataset_rows(d)?;
        bytes += uncompressed_bytes(d)?;
    }
    let partitions = partitions.max(1) as u64;
    if rows / partitions < buffer_rows as u64 {
        return Ok(0);
    }
    let at_once = (workers.max(1) as u64).min(partitions);
    Ok(bytes / partitions * at_once * 2)
}

/// The uncompressed bytes of the Parquet parts of the dataset `dir`, from their
/// footers (what its rows take decoded, about what an external sort spills of
/// them); 0 when it does not exist.
pub fn uncompressed_bytes(dir: &Path) -> Result<u64> {
    if !dir.is_dir() {
        return Ok(0);
    }
    let mut total = 0u64;
    for entry in fs::read_dir(dir).at(dir)? {
        let path = entry.at(dir)?.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !integrity::is_part_name(&name) {
            continue;
        }
        if let Some(remote) = integrity::placeholder(&path) {
            // Another partition's part left on the object store: its stored size
            // stands for it (its footer was not downloaded; a task spills only
            // its own partitions' rows).
            total += remote.bytes;
            continue;
        }
        let file = File::open(&path).at(&path)?;
        let reader = SerializedFileReader::new(file).map_err(|e| Error::parquet(&path, e))?;
        total += reader
            .metadata()
            .row_groups()
            .iter()
            .map(|rg| rg.total_byte_size().max(0) as u64)
            .sum::<u64>();
    }
    Ok(total)
}

/// `bytes` plus the margin every estimate gets (an eighth, and 1 MiB for metadata,
/// manifests and file system blocks).
pub fn with_headroom(bytes: u64) -> u64 {
    bytes.saturating_add(bytes / 8).saturating_add(1 << 20)
}

/// Refuses to start when the file system holding `dir` has less than `need` bytes
/// free: an [`Error::CrawlDir`] (exit code 1) naming `dir`, the bytes needed and
/// free, and what to do. `stage` is the stage's name, `what` what it is about to
/// write (`"the new crawldb version and its sort spill"`). Call it before anything
/// is written.
pub fn ensure_space(dir: &Path, need: u64, stage: &str, what: &str) -> Result<()> {
    let free = free_bytes(dir)?;
    tracing::debug!(
        "{stage}: {what}: needs about {} of disk, {} free under {}",
        human(need),
        human(free),
        dir.display()
    );
    if free >= need {
        return Ok(());
    }
    Err(Error::crawl_dir(
        dir,
        format!(
            "not enough disk space for {stage}: {what} needs about {} ({need} bytes), and the file system holding this directory has {} free ({free} bytes). Nothing was written. Free at least {} (`prunesegs` deletes the content of applied segments; crawldb/old/ and linkdb/old/ hold the previous versions) or move the crawl directory to a larger disk, then rerun {stage} (see docs/crawldb.md, Disk)",
            human(need),
            human(free),
            human(need - free),
        ),
    ))
}

/// [`ensure_space`] for a crawldb rewrite by `stage`: a new version of about `version`
/// bytes and, when `spill` is not 0, the sort spill of `spilled` (what is sorted),
/// each with [`with_headroom`]'s margin.
pub fn ensure_crawldb_space(
    dir: &CrawlDir,
    stage: &str,
    version: u64,
    spill: u64,
    spilled: &str,
) -> Result<()> {
    let what = match spill {
        0 => format!("the new crawldb version (about {})", human(version)),
        s => format!(
            "the new crawldb version (about {}) with the sort spill of {spilled} (about {})",
            human(version),
            human(s)
        ),
    };
    ensure_space(&dir.crawldb(), with_headroom(version + spill), stage, &what)
}

/// `bytes` for people: `1.5 GB`, `320.0 MB`, `12.0 kB`, `512 B` (powers of 1000).
pub fn human(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1e12 {
        format!("{:.1} TB", b / 1e12)
    } else if b >= 1e9 {
        format!("{:.1} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{bytes} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_bytes_of_a_missing_path_is_that_of_its_ancestor() {
        let t = tempfile::tempdir().unwrap();
        let deep = t.path().join("a/b/c");
        if std::env::var(TEST_FREE_BYTES_ENV).is_err() {
            let here = free_bytes(t.path()).unwrap();
            let there = free_bytes(&deep).unwrap();
            assert!(here > 0);
            // Same file system; free space may move a little between the calls.
            assert!(here.abs_diff(there) < 64 << 20, "{here} vs {there}");
        }
        assert_eq!(existing_ancestor(&deep), t.path());
    }

    #[test]
    fn tree_bytes_sums_files_below() {
        let t = tempfile::tempdir().unwrap();
        fs::create_dir_all(t.path().join("x/y")).unwrap();
        fs::write(t.path().join("x/a"), [0u8; 100]).unwrap();
        fs::write(t.path().join("x/y/b"), [0u8; 23]).unwrap();
        assert_eq!(tree_bytes(&t.path().join("x")), 123);
        assert_eq!(tree_bytes(&t.path().join("x/a")), 100);
        assert_eq!(tree_bytes(&t.path().join("none")), 0);
    }

    #[test]
    fn ensure_space_names_the_directory_and_both_figures() {
        let t = tempfile::tempdir().unwrap();
        let free = free_bytes(t.path()).unwrap();
        ensure_space(t.path(), 0, "test", "nothing").unwrap();
        let need = free.saturating_add(10 << 30);
        let e = ensure_space(t.path(), need, "updatedb", "the new crawldb version")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(&t.path().display().to_string()), "{e}");
        assert!(e.contains(&format!("({need} bytes)")), "{e}");
        assert!(e.contains("not enough disk space for updatedb"), "{e}");
        assert!(e.contains("Nothing was written"), "{e}");
        assert!(e.contains("rerun updatedb"), "{e}");
    }

    #[test]
    fn headroom_and_human() {
        assert_eq!(with_headroom(0), 1 << 20);
        assert_eq!(with_headroom(800), 900 + (1 << 20));
        assert_eq!(human(512), "512 B");
        assert_eq!(human(1_500_000_000), "1.5 GB");
    }
}
