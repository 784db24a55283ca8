//! The storage backend under the crawl directory: the few file operations that
//! [`super`]'s own code (staged dataset commit, versioned install and recovery,
//! manifests and `_meta.json` files) goes through, so that another backend can
//! replace the local file system without touching a stage.
//!
//! [`LocalFs`] is the only backend of this trait. An object-store crawl directory
//! (`s3://`, ...) does not go through it: stages run on a local working mirror and
//! [`super::object`] pulls and pushes whole files, committing each dataset by a
//! version manifest created with a conditional PUT (docs/object-store.md).

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{IoContext, Result};

/// The file operations of the crawl directory's storage (see the module doc).
pub trait Storage {
    /// The entries directly under `dir`, sorted by name; empty when `dir` does not exist.
    fn list(&self, dir: &Path) -> Result<Vec<PathBuf>>;
    /// Whether `path` exists (a file or a directory).
    fn exists(&self, path: &Path) -> Result<bool>;
    /// The whole content of the file `path`.
    fn read(&self, path: &Path) -> Result<Vec<u8>>;
    /// Writes the file `path` atomically: readers see the old content or the new,
    /// never a part of it.
    fn put(&self, path: &Path, bytes: &[u8]) -> Result<()>;
    /// Creates the directory `path` (and its parents); nothing to do when it exists.
    fn create_dir(&self, path: &Path) -> Result<()>;
    /// Moves `from` to `to` atomically (the commit of a staged dataset or version);
    /// `to` must not exist.
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// Removes the file or directory tree `path`; nothing to do when it is absent.
    fn delete(&self, path: &Path) -> Result<()>;
}

/// The local file system (POSIX renames, fsync of files and their directories).
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalFs;

impl Storage for LocalFs {
    fn list(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        let entries = match fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(crate::error::Error::io(dir, e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            out.push(entry.at(dir)?.path());
        }
        out.sort();
        Ok(out)
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        Ok(fs::symlink_metadata(path).is_ok())
    }

    fn read(&self, path: &Path) -> Result<Vec<u8>> {
        fs::read(path).at(path)
    }

    fn put(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
        {
            let mut f = File::create(&tmp).at(&tmp)?;
            f.write_all(bytes).at(&tmp)?;
            f.sync_all().at(&tmp)?;
        }
        fs::rename(&tmp, path).at(path)?;
        sync_dir(path.parent());
        Ok(())
    }

    fn create_dir(&self, path: &Path) -> Result<()> {
        fs::create_dir_all(path).at(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        fs::rename(from, to).at(to)?;
        sync_dir(to.parent());
        Ok(())
    }

    fn delete(&self, path: &Path) -> Result<()> {
        match fs::symlink_metadata(path) {
            Ok(m) if m.is_dir() => fs::remove_dir_all(path).at(path),
            Ok(_) => fs::remove_file(path).at(path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(crate::error::Error::io(path, e)),
        }
    }
}

/// Flushes a directory's entries (after a rename into it); best effort.
fn sync_dir(dir: Option<&Path>) {
    if let Some(d) = dir
        && let Ok(f) = File::open(d)
    {
        let _ = f.sync_all();
    }
}
