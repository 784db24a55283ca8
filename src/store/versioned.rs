//! Versioned datasets (`crawldb/`, `linkdb/`, `sitemapdb/`): the one way a new
//! version is written and installed.
//!
//! ```text
//! <base>/current/        the installed version (a sealed dataset)
//! <base>/old/            the previous version
//! <base>/current.tmp-*/  a version being written (removed by the next run after a kill)
//! <base>/.lock           held while a stage rewrites it
//! ```
//!
//! A writer [`lock`](VersionedDataset::lock)s (which also
//! [`recover`](VersionedDataset::recover)s an install a killed stage left half done),
//! [`stage`](VersionedDataset::stage)s a new version beside `current`, writes its
//! parts, and [`install`](VersionedDataset::install)s it: the staged version is
//! sealed (its checksum manifest written as `_SUCCESS`), `current` becomes `old`
//! (replacing the previous `old`) and the staged version becomes `current`. A kill
//! at any point leaves either the previous or the new version current.
//!
//! Tests stop writers at named points with [`test_pause`] (one mechanism for every
//! stage and tool; see [`PAUSE_BEFORE_INSTALL_ENV`] and [`PAUSE_AT_ENV`]).

use std::path::{Path, PathBuf};

use super::lock::Lock;
use super::names;
use super::parquet::{self, StagedDataset};
use super::storage::LocalFs;
use crate::error::{Error, Result};

/// A versioned dataset rooted at `base` (see the module doc).
#[derive(Debug, Clone)]
pub struct VersionedDataset {
    base: PathBuf,
}

impl VersionedDataset {
    /// The versioned dataset at `base` (`<crawl-dir>/crawldb`, ...); nothing is
    /// checked or created.
    pub fn new(base: impl Into<PathBuf>) -> Self {
        VersionedDataset { base: base.into() }
    }

    /// Its directory.
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// `<base>/current/`.
    pub fn current(&self) -> PathBuf {
        self.base.join(names::CURRENT)
    }

    /// `<base>/old/`.
    pub fn old(&self) -> PathBuf {
        self.base.join(names::OLD)
    }

    /// `<base>/.lock`.
    pub fn lock_path(&self) -> PathBuf {
        self.base.join(names::LOCK)
    }

    /// The identity of the version installed now: the blake3 of its `_SUCCESS`
    /// manifest (which lists every part's blake3 and when it was sealed), so two
    /// versions never share it; empty when none is installed. Tasks of a job record
    /// the version they read, and its commit installs only over that same version.
    pub fn version_id(&self) -> Result<String> {
        let marker = self.current().join(names::SUCCESS);
        if !marker.is_file() {
            return Ok(String::new());
        }
        Ok(super::integrity::hash_file(&marker)?.1)
    }

    /// Whether a complete version is installed.
    pub fn is_installed(&self) -> bool {
        parquet::dataset_complete(&self.current())
    }

    /// Takes the dataset's lock for `stage`, then repairs an install a killed
    /// stage left half done.
    pub fn lock(&self, stage: &str) -> Result<Lock> {
        let lock = Lock::acquire(&self.lock_path(), stage)?;
        self.recover()?;
        Ok(lock)
    }

    /// Repairs an install interrupted between its two renames: a complete staged
    /// version (with its `_SUCCESS`) wins over `old`.
    pub fn recover(&self) -> Result<()> {
        let fs = LocalFs;
        let current = self.current();
        if fs.exists(&current)? || !self.base.is_dir() {
            return Ok(());
        }
        let staged_prefix = format!("{}.tmp-", names::CURRENT);
        for entry in fs.list(&self.base)? {
            let name = entry
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if name.starts_with(&staged_prefix) && parquet::dataset_complete(&entry) {
                tracing::warn!(
                    "finishing an interrupted install: {} -> current",
                    entry.display()
                );
                return fs.rename(&entry, &current);
            }
        }
        let old = self.old();
        if parquet::dataset_complete(&old) {
            tracing::warn!(
                "restoring {} as current after an interrupted install",
                old.display()
            );
            fs.rename(&old, &current)?;
        }
        Ok(())
    }

    /// Starts writing a new version beside `current` (removing what a killed run
    /// left staged). Install it with [`VersionedDataset::install`].
    pub fn stage(&self) -> Result<StagedDataset> {
        StagedDataset::new(&self.current())
    }

    /// Installs a staged new version for `stage`: `current` becomes `old`
    /// (replacing the previous `old`), the staged version is sealed and becomes
    /// `current`. The last point where a SIGINT/SIGTERM stops the stage (and where
    /// [`PAUSE_BEFORE_INSTALL_ENV`] pauses it): nothing installed, `current`
    /// untouched. A kill at any later point is repaired by
    /// [`VersionedDataset::recover`].
    pub fn install(&self, staged: StagedDataset, stage: &str) -> Result<()> {
        test_pause(BEFORE_INSTALL);
        let what = self
            .base
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        crate::signal::check(&format!(
            "{stage} stopped before installing anything: the {what} is unchanged; rerun {stage}"
        ))?;
        let current = self.current();
        if staged.dest() != current {
            return Err(Error::crawl_dir(
                staged.dest(),
                "internal: staged dataset is not the current version",
            ));
        }
        let fs = LocalFs;
        if fs.exists(&current)? {
            let old = self.old();
            fs.delete(&old)?;
            fs.rename(&current, &old)?;
        }
        staged.commit()?;
        Ok(())
    }
}

/// Test-only: `SECONDS` makes every writer of a versioned dataset sleep that long
/// at [`BEFORE_INSTALL`] (its new version fully written, nothing installed yet), so
/// tests can kill a stage at its most delicate moment. Never set it in production.
pub const PAUSE_BEFORE_INSTALL_ENV: &str = "TRAWL_TEST_PAUSE_BEFORE_INSTALL";

/// Test-only: `POINT:SECONDS` makes a stage or tool sleep that long when it reaches
/// the named point (`mergesegs:staged`, `prunesegs:deleted-one`, ...), so tests can
/// kill it there. Never set it in production.
pub const PAUSE_AT_ENV: &str = "TRAWL_TEST_PAUSE_SEGTOOLS";

/// The pause point of [`VersionedDataset::install`].
pub const BEFORE_INSTALL: &str = "before-install";

/// The one test-pause hook: sleeps when [`PAUSE_AT_ENV`] names `point` (or, for
/// [`BEFORE_INSTALL`], when [`PAUSE_BEFORE_INSTALL_ENV`] is set); a SIGINT/SIGTERM
/// ends the pause. Does nothing when neither variable is set.
pub fn test_pause(point: &str) {
    let Some((env, secs)) = pause_for(point) else {
        return;
    };
    tracing::warn!("{env} set: pausing {secs}s at {point} (test-only)");
    crate::signal::sleep(std::time::Duration::from_secs_f64(secs));
}

/// The variable asking for a pause at `point`, and its length in seconds.
fn pause_for(point: &str) -> Option<(&'static str, f64)> {
    let positive = |v: &str| v.parse::<f64>().ok().filter(|s| *s > 0.0);
    if point == BEFORE_INSTALL
        && let Some(secs) = std::env::var(PAUSE_BEFORE_INSTALL_ENV)
            .ok()
            .and_then(|v| positive(&v))
    {
        return Some((PAUSE_BEFORE_INSTALL_ENV, secs));
    }
    let v = std::env::var(PAUSE_AT_ENV).ok()?;
    let (p, secs) = v.rsplit_once(':')?;
    (p == point)
        .then(|| positive(secs))
        .flatten()
        .map(|s| (PAUSE_AT_ENV, s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datum::CrawlDatum;
    use crate::store::parquet::PartWriter;

    fn write(db: &VersionedDataset, urls: usize) {
        let staged = db.stage().unwrap();
        let mut w = PartWriter::<CrawlDatum>::create(&staged.part_path(0)).unwrap();
        for k in 0..urls {
            w.push(CrawlDatum::unfetched(
                format!("http://a.test/{k}"),
                "a.test".into(),
                0,
                1,
            ))
            .unwrap();
        }
        w.finish().unwrap();
        db.install(staged, "test").unwrap();
    }

    #[test]
    fn install_moves_current_to_old_and_recover_repairs_a_half_install() {
        let t = tempfile::tempdir().unwrap();
        let db = VersionedDataset::new(t.path().join("db"));
        let _lock = db.lock("test").unwrap();
        write(&db, 1);
        assert!(db.is_installed());
        assert!(!db.old().exists());
        write(&db, 2);
        assert!(parquet::dataset_complete(&db.old()));
        assert_eq!(
            parquet::read_dataset::<CrawlDatum>(&db.current())
                .unwrap()
                .len(),
            2
        );
        // Killed between the renames: current gone, old there.
        std::fs::rename(db.current(), t.path().join("away")).unwrap();
        db.recover().unwrap();
        assert_eq!(
            parquet::read_dataset::<CrawlDatum>(&db.current())
                .unwrap()
                .len(),
            1
        );
    }
}
