//! The file operations of the crawl directory's own machinery (staged dataset commit,
//! versioned install and recovery, manifests, `_meta.json` files, job directories):
//! atomic puts and renames with their directory synced, listings sorted, deletes that
//! tolerate absence. One local implementation, [`LocalFs`]; there is no backend trait.
//! An object-store crawl directory (`s3://`, ...) is not a second backend under the
//! stages: they run on a local working mirror, which [`super::object`] pulls and
//! pushes, committing each dataset by a version manifest created with a conditional
//! PUT (docs/object-store.md). That mirror is the one storage seam.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{IoContext, Result};

/// The local file system (POSIX renames, fsync of files and their directories).
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalFs;

impl LocalFs {
    /// The entries directly under `dir`, sorted by name; empty when `dir` does not exist.
    pub fn list(&self, dir: &Path) -> Result<Vec<PathBuf>> {
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

    /// Whether `path` exists (a file or a directory).
    pub fn exists(&self, path: &Path) -> Result<bool> {
        Ok(fs::symlink_metadata(path).is_ok())
    }

    /// The whole content of the file `path`.
    pub fn read(&self, path: &Path) -> Result<Vec<u8>> {
        fs::read(path).at(path)
    }

    /// `len` bytes of the file `path` from byte `offset` (an error when the file is
    /// shorter).
    pub fn read_at(&self, path: &Path, offset: u64, len: usize) -> Result<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        let f = File::open(path).at(path)?;
        let mut buf = vec![0u8; len];
        f.read_exact_at(&mut buf, offset).at(path)?;
        Ok(buf)
    }

    /// Writes the file `path` atomically: readers see the old content or the new,
    /// never a part of it.
    pub fn put(&self, path: &Path, bytes: &[u8]) -> Result<()> {
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

    /// Creates the directory `path` (and its parents); nothing to do when it exists.
    pub fn create_dir(&self, path: &Path) -> Result<()> {
        fs::create_dir_all(path).at(path)
    }

    /// Moves `from` to `to` atomically (the commit of a staged dataset or version);
    /// `to` must not exist.
    pub fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        fs::rename(from, to).at(to)?;
        sync_dir(to.parent());
        Ok(())
    }

    /// Removes the file or directory tree `path`; nothing to do when it is absent.
    pub fn delete(&self, path: &Path) -> Result<()> {
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
