//! Dataset manifests: what a complete dataset holds, and the checks readers run
//! against it before they read a row.
//!
//! Every dataset is sealed when it is installed ([`StagedDataset`] commits call
//! [`seal_tree`]): its `_SUCCESS` marker becomes a JSON [`Manifest`] listing every
//! `part-NNNNN.parquet` with its row count, byte size and blake3 checksum. Readers
//! call [`verify`] (or [`crate::store::parquet::part_files`], which runs the cheap check)
//! and refuse a version whose parts do not match it with [`Error::Integrity`]
//! (exit code 7), naming the file and the way back:
//!
//! - [`Check::Sizes`]: every listed part is present with its recorded size, and no
//!   unlisted part is present. One `stat` per part; every reader runs it.
//! - [`Check::Checksums`]: the above plus the blake3 of every part, hashed in
//!   parallel. Stages that rewrite a versioned dataset run it on what they read, so
//!   a flipped byte is refused before its wrong value can reach `current` and `old`.
//!
//! Datasets written before manifests existed carry a plain timestamp in `_SUCCESS`;
//! they are read as before, with one warning per dataset, and a versioned dataset
//! gains a manifest with its next rewrite (see docs/integrity.md).
//!
//! [`StagedDataset`]: crate::store::parquet::StagedDataset

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::{Error, IoContext, Result};
use crate::store::parquet::SUCCESS_MARKER;

/// The `format` of manifests written by this version.
pub const MANIFEST_FORMAT: &str = "trawl-manifest/1";

/// A dataset's manifest, stored as JSON in its `_SUCCESS` marker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`MANIFEST_FORMAT`].
    pub format: String,
    /// When the dataset was sealed (RFC 3339, UTC).
    pub written: String,
    /// Every part file of the dataset, in part order.
    pub parts: Vec<PartEntry>,
}

/// One part file as it was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartEntry {
    /// File name inside the dataset (`part-00003.parquet`).
    pub name: String,
    /// Rows in the file (from its Parquet footer).
    pub rows: u64,
    /// Size of the file in bytes.
    pub bytes: u64,
    /// blake3 of the whole file, lowercase hex (what `b3sum` prints).
    pub blake3: String,
}

impl Manifest {
    /// Rows of all parts.
    pub fn rows(&self) -> u64 {
        self.parts.iter().map(|p| p.rows).sum()
    }

    /// Bytes of all parts.
    pub fn bytes(&self) -> u64 {
        self.parts.iter().map(|p| p.bytes).sum()
    }
}

/// How much of a dataset [`verify`] checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Part list and sizes (one `stat` per part).
    Sizes,
    /// Part list, sizes and the blake3 of every part (reads every byte).
    Checksums,
}

/// Whether `name` is a part file name (`part-*.parquet`).
pub fn is_part_name(name: &str) -> bool {
    name.starts_with("part-") && name.ends_with(".parquet")
}

/// The part files present in `dir`, sorted by name.
fn listed_parts(dir: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).at(dir)? {
        let entry = entry.at(dir)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if is_part_name(&name) {
            out.push(name);
        }
    }
    out.sort();
    Ok(out)
}

/// What is known of a placeholder file: a local stand-in (a sparse file of the
/// right size) for an object of an object-store crawl directory that this process
/// did not download (another partition's part, an attempt's part at commit; see
/// docs/object-store.md, "Partition tasks"). Hard links share it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    /// The object's size.
    pub bytes: u64,
    /// The object's blake3 (hex).
    pub blake3: String,
    /// Its rows, for a Parquet part.
    pub rows: Option<u64>,
    /// Its key under the crawl directory's prefix on the store.
    pub key: String,
}

/// A file's identity: (device, inode, size, mtime seconds, mtime nanoseconds).
type FileId = (u64, u64, u64, i64, i64);

/// Placeholders registered in this process, by (device, inode, size, mtime): a new
/// file that reuses a deleted placeholder's inode has another mtime.
static REMOTE: Mutex<BTreeMap<FileId, Remote>> = Mutex::new(BTreeMap::new());

fn identity(md: &fs::Metadata) -> FileId {
    use std::os::unix::fs::MetadataExt;
    (md.dev(), md.ino(), md.len(), md.mtime(), md.mtime_nsec())
}

fn remote_table() -> std::sync::MutexGuard<'static, BTreeMap<FileId, Remote>> {
    match REMOTE.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// Creates the placeholder `path` for `remote` (a sparse file of its size: size
/// checks pass, and no byte is stored) and registers it: [`hash_file`] and the
/// row counts of [`seal`] answer from `remote` for it and its hard links.
pub fn create_placeholder(path: &Path, remote: Remote) -> Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).at(dir)?;
    }
    let f = File::create(path).at(path)?;
    f.set_len(remote.bytes).at(path)?;
    let md = f.metadata().at(path)?;
    remote_table().insert(identity(&md), remote);
    Ok(())
}

/// What is known of `path` when it is a placeholder ([`create_placeholder`]).
pub fn placeholder(path: &Path) -> Option<Remote> {
    if remote_table().is_empty() {
        return None;
    }
    let md = fs::metadata(path).ok()?;
    remote_table().get(&identity(&md)).cloned()
}

/// Reads byte ranges `(object, offset, len)` of the objects placeholders stand for
/// (installed by an object-store mirror when it opens: [`set_remote_ranges`]).
pub type RemoteRanges = dyn Fn(&[(Remote, u64, usize)]) -> Result<Vec<Vec<u8>>> + Send + Sync;

/// The reader of placeholders' objects this process has, if any.
static RANGES: Mutex<Option<std::sync::Arc<RemoteRanges>>> = Mutex::new(None);

/// Installs the reader of placeholders' objects (an object-store mirror's), so that
/// [`read_ranges`] reads a placeholder from its object instead of its zeros.
pub fn set_remote_ranges(f: std::sync::Arc<RemoteRanges>) {
    match RANGES.lock() {
        Ok(mut g) => *g = Some(f),
        Err(p) => *p.into_inner() = Some(f),
    }
}

/// Byte ranges `(path, offset, len)` of files, in order, and how many were read from
/// an object store: a placeholder's from the object it stands for (by ranged GETs,
/// many at once), any other file's from the file. What is read from an object is
/// not checked against its blake3 (a range cannot be): a reader of ranges carries
/// checksums of its own where it needs them.
pub fn read_ranges(ranges: &[(PathBuf, u64, usize)]) -> Result<(Vec<Vec<u8>>, u64)> {
    let mut out: Vec<Option<Vec<u8>>> = vec![None; ranges.len()];
    let mut remote = Vec::new();
    let mut at = Vec::new();
    for (i, (path, offset, len)) in ranges.iter().enumerate() {
        match placeholder(path) {
            Some(r) => {
                remote.push((r, *offset, *len));
                at.push(i);
            }
            None => out[i] = Some(super::storage::LocalFs.read_at(path, *offset, *len)?),
        }
    }
    let n = remote.len() as u64;
    if !remote.is_empty() {
        let reader = match RANGES.lock() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        };
        let Some(reader) = reader else {
            return Err(Error::Internal {
                message: format!(
                    "{}: a placeholder of an object, and no object store to read it from",
                    ranges[at[0]].0.display()
                ),
            });
        };
        for (i, bytes) in at.into_iter().zip(reader(&remote)?) {
            out[i] = Some(bytes);
        }
    }
    Ok((out.into_iter().map(Option::unwrap_or_default).collect(), n))
}

/// Size and blake3 (hex) of a file, read once in 1 MiB blocks (a placeholder's
/// are those of its object, not read).
pub fn hash_file(path: &Path) -> Result<(u64, String)> {
    if let Some(r) = placeholder(path) {
        return Ok((r.bytes, r.blake3));
    }
    let mut f = File::open(path).at(path)?;
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    loop {
        let n = match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io(path, e)),
        };
        hasher.update(&buf[..n]);
        bytes += n as u64;
    }
    Ok((bytes, hasher.finalize().to_hex().to_string()))
}

/// Rows recorded in a Parquet file's footer.
fn parquet_rows(path: &Path) -> Result<u64> {
    if let Some(r) = placeholder(path) {
        return r.rows.ok_or_else(|| Error::Integrity {
            path: path.to_path_buf(),
            message: "is a placeholder of an object whose row count its manifest does not record; rerun the tasks that wrote it".into(),
        });
    }
    let file = File::open(path).at(path)?;
    let meta = parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(&file)
        .map_err(|e| Error::parquet(path, e))?;
    Ok(u64::try_from(meta.file_metadata().num_rows()).unwrap_or(0))
}

/// Computes the manifest of the parts now in `dir` (in parallel).
pub fn compute(dir: &Path) -> Result<Manifest> {
    let names = listed_parts(dir)?;
    let parts = names
        .into_par_iter()
        .map(|name| {
            let path = dir.join(&name);
            let (bytes, blake3) = hash_file(&path)?;
            let rows = parquet_rows(&path)?;
            Ok(PartEntry {
                name,
                rows,
                bytes,
                blake3,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Manifest {
        format: MANIFEST_FORMAT.into(),
        written: chrono::Utc::now().to_rfc3339(),
        parts,
    })
}

/// Marks `dir` complete: computes its manifest and writes it, atomically, as its
/// `_SUCCESS` marker. Call it once every part is written and closed.
pub fn seal(dir: &Path) -> Result<Manifest> {
    let started = std::time::Instant::now();
    let m = compute(dir)?;
    tracing::debug!(
        "sealed {}: {} parts, {} rows, {:.1} MB hashed in {:.3}s",
        dir.display(),
        m.parts.len(),
        m.rows(),
        m.bytes() as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    let mut bytes = serde_json::to_vec_pretty(&m)
        .map_err(|e| Error::crawl_dir(dir, format!("cannot encode the manifest: {e}")))?;
    bytes.push(b'\n');
    crate::store::parquet::write_atomic(&dir.join(SUCCESS_MARKER), &bytes)?;
    Ok(m)
}

/// Seals a dataset tree before it is installed: every direct subdirectory that
/// already carries a `_SUCCESS` marker without a manifest (the datasets inside a
/// segment, `pagerank/hits`), then `dir` itself.
pub fn seal_tree(dir: &Path) -> Result<()> {
    let mut children = Vec::new();
    for entry in fs::read_dir(dir).at(dir)? {
        let entry = entry.at(dir)?;
        let p = entry.path();
        if p.is_dir() && p.join(SUCCESS_MARKER).is_file() && !matches!(read(&p), Ok(Some(_))) {
            children.push(p);
        }
    }
    children.sort();
    for c in &children {
        seal(c)?;
    }
    seal(dir)?;
    Ok(())
}

/// Reads the manifest of `dir`: `None` when its `_SUCCESS` marker predates
/// manifests (plain text). A missing marker or a marker that starts like JSON but
/// does not parse as a manifest is an [`Error::Integrity`].
pub fn read(dir: &Path) -> Result<Option<Manifest>> {
    let path = dir.join(SUCCESS_MARKER);
    let bytes = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::Integrity {
                path,
                message: format!(
                    "missing: {} is not a complete dataset (no _SUCCESS manifest), so it is not read. {}",
                    dir.display(),
                    recovery_hint(dir)
                ),
            });
        }
        Err(e) => return Err(Error::io(&path, e)),
    };
    let text = String::from_utf8_lossy(&bytes);
    if !text.trim_start().starts_with('{') {
        return Ok(None);
    }
    match serde_json::from_slice::<Manifest>(&bytes) {
        Ok(m) if m.format == MANIFEST_FORMAT => Ok(Some(m)),
        Ok(m) => Err(Error::Integrity {
            path,
            message: format!(
                "manifest format {:?} is not one this trawl reads ({MANIFEST_FORMAT:?}); use the trawl version that wrote it",
                m.format
            ),
        }),
        Err(e) => Err(Error::Integrity {
            path,
            message: format!(
                "the manifest is damaged ({e}), so the dataset cannot be checked and is not read. {}",
                recovery_hint(dir)
            ),
        }),
    }
}

/// Refuses an installed dataset directory (a versioned dataset's `current/`) that
/// holds part files but no `_SUCCESS` manifest: trawl never installs one, so it was
/// damaged, and treating it as "no dataset yet" would let the next rewrite replace
/// `old/` with it. An absent directory is fine.
pub fn refuse_unmarked(dir: &Path) -> Result<()> {
    if dir.is_dir()
        && !crate::store::parquet::dataset_complete(dir)
        && !listed_parts(dir)?.is_empty()
    {
        return Err(Error::Integrity {
            path: dir.join(SUCCESS_MARKER),
            message: format!(
                "missing: {} holds part files but no _SUCCESS manifest (removed after it was installed), so it is not read and nothing was written. {}",
                dir.display(),
                recovery_hint(dir)
            ),
        });
    }
    Ok(())
}

/// Datasets already reported as written without a manifest (one warning each).
static LEGACY_WARNED: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

fn warn_legacy(dir: &Path) {
    let first = LEGACY_WARNED
        .lock()
        .map(|mut s| s.insert(dir.to_path_buf()))
        .unwrap_or(true);
    if first {
        tracing::warn!(
            "{}: written before trawl kept manifests (its _SUCCESS lists no parts): read unchecked; a versioned dataset gains a manifest when next rewritten (docs/integrity.md)",
            dir.display()
        );
    }
}

/// Checks `dir` against its manifest and returns its part files in part order.
///
/// A dataset written before manifests is listed as it is (after one warning). A
/// part that is missing, a part whose size (or, with [`Check::Checksums`], blake3)
/// differs from the manifest, and a part file the manifest does not list are all
/// refused with [`Error::Integrity`], which names every such file and how to go
/// back to a good version.
pub fn verify(dir: &Path, check: Check) -> Result<Vec<PathBuf>> {
    let Some(m) = read(dir)? else {
        warn_legacy(dir);
        return Ok(listed_parts(dir)?
            .into_iter()
            .map(|n| dir.join(n))
            .collect());
    };
    verify_against(dir, &m, check)?;
    Ok(m.parts.iter().map(|p| dir.join(&p.name)).collect())
}

/// Like [`verify`] (every part listed, present and of its size), but with
/// [`Check::Checksums`] hashing only the parts whose file name `wanted` accepts:
/// what a partition task reads of a dataset shared by many tasks.
pub fn verify_parts(dir: &Path, check: Check, wanted: &dyn Fn(&str) -> bool) -> Result<()> {
    let Some(m) = read(dir)? else {
        warn_legacy(dir);
        return Ok(());
    };
    verify_filtered(dir, &m, check, wanted)
}

/// [`verify_parts`] with checksums for the part files `parts` of the dataset `dir`
/// (what a partition task reads of it).
pub fn verify_files(dir: &Path, parts: &[PathBuf]) -> Result<()> {
    let names: std::collections::HashSet<String> = parts
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    verify_parts(dir, Check::Checksums, &|n| names.contains(n))
}

/// What is wrong with one file.
#[derive(Debug)]
struct Problem {
    name: String,
    what: String,
}

fn verify_against(dir: &Path, m: &Manifest, check: Check) -> Result<()> {
    verify_filtered(dir, m, check, &|_| true)
}

fn verify_filtered(
    dir: &Path,
    m: &Manifest,
    check: Check,
    wanted: &dyn Fn(&str) -> bool,
) -> Result<()> {
    let present: BTreeSet<String> = listed_parts(dir)?.into_iter().collect();
    let expected: BTreeMap<&str, &PartEntry> =
        m.parts.iter().map(|p| (p.name.as_str(), p)).collect();
    let mut problems: Vec<Problem> = Vec::new();
    let mut to_hash: Vec<&PartEntry> = Vec::new();
    for p in &m.parts {
        let path = dir.join(&p.name);
        match fs::metadata(&path) {
            Ok(md) if md.len() == p.bytes => {
                if wanted(&p.name) {
                    to_hash.push(p);
                }
            }
            Ok(md) => problems.push(Problem {
                name: p.name.clone(),
                what: format!(
                    "is {} bytes, the manifest says {} (changed after it was written)",
                    md.len(),
                    p.bytes
                ),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => problems.push(Problem {
                name: p.name.clone(),
                what: format!("is missing (the manifest lists it with {} rows)", p.rows),
            }),
            Err(e) => return Err(Error::io(&path, e)),
        }
    }
    for name in &present {
        if !expected.contains_key(name.as_str()) {
            problems.push(Problem {
                name: name.clone(),
                what: "is not listed in the manifest (added after it was written)".into(),
            });
        }
    }
    if check == Check::Checksums {
        let hashed = to_hash
            .par_iter()
            .map(|p| {
                let (bytes, hash) = hash_file(&dir.join(&p.name))?;
                Ok((p, bytes, hash))
            })
            .collect::<Result<Vec<_>>>()?;
        for (p, bytes, hash) in hashed {
            if bytes != p.bytes || hash != p.blake3 {
                problems.push(Problem {
                    name: p.name.clone(),
                    what: format!(
                        "has blake3 {hash}, the manifest says {} (its content changed after it was written)",
                        p.blake3
                    ),
                });
            }
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    problems.sort_by(|a, b| a.name.cmp(&b.name));
    let first = &problems[0];
    let mut message = format!("{} {}", first.name, first.what);
    for p in problems.iter().skip(1).take(7) {
        message.push_str(&format!("; {} {}", p.name, p.what));
    }
    if problems.len() > 8 {
        message.push_str(&format!("; and {} more", problems.len() - 8));
    }
    message.push_str(&format!(
        ". This version of {} is incomplete or altered, so it is not read and nothing was written. {}",
        dir.display(),
        recovery_hint(dir)
    ));
    Err(Error::Integrity {
        path: dir.join(&first.name),
        message,
    })
}

/// How to get back to a good version of the dataset at `dir`, from where it lives.
pub fn recovery_hint(dir: &Path) -> String {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let parent = dir.parent().unwrap_or(Path::new(""));
    let parent_name = parent
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if name == "current" {
        let old = parent.join("old");
        let quarantine = parent.join("current.damaged");
        if crate::store::parquet::dataset_complete(&old) {
            let written = read(&old)
                .ok()
                .flatten()
                .map(|m| format!(" (written {})", m.written))
                .unwrap_or_default();
            return format!(
                "The previous version is in {}{written}: to go back to it, run `mv {} {} && mv {} {}`, then rerun the stages since (updatedb re-applies every segment the previous version has not applied; see docs/integrity.md)",
                old.display(),
                dir.display(),
                quarantine.display(),
                old.display(),
                dir.display()
            );
        }
        return format!(
            "There is no previous version in {} to go back to: restore {} from a backup, or rebuild it ({})",
            old.display(),
            dir.display(),
            rebuild_hint(&parent_name)
        );
    }
    if parent_name.len() == 14 && parent_name.bytes().all(|b| b.is_ascii_digit()) {
        return match name.as_str() {
            "parse_text" | "parse_data" | "crawl_parse" => format!(
                "Segment datasets have no previous version: rewrite it with `parse --reparse {}`",
                parent.display()
            ),
            _ => format!(
                "Segment datasets have no previous version: restore {} from a backup, or remove the segment (`rm -r {}`) and run generate and fetch again (its URLs are due again unless updatedb already applied it)",
                dir.display(),
                parent.display()
            ),
        };
    }
    if name == "pagerank" || parent_name == "pagerank" {
        return "pagerank/ has no previous version: rerun `pagerank`, which rewrites it from the crawl".into();
    }
    format!("restore {} from a backup or rewrite it", dir.display())
}

fn rebuild_hint(base: &str) -> &'static str {
    match base {
        "crawldb" => "inject the seeds again and updatedb every segment",
        "linkdb" => "remove linkdb/ and run `linkdb` on every segment",
        "sitemapdb" => "remove sitemapdb/ and run `sitemap` again",
        _ => "rerun the stage that writes it",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datum::CrawlDatum;
    use crate::store::parquet::{PartWriter, part_name};

    fn dataset(dir: &Path, parts: usize) {
        fs::create_dir_all(dir).unwrap();
        for i in 0..parts {
            let mut w = PartWriter::<CrawlDatum>::create(&dir.join(part_name(i))).unwrap();
            for k in 0..(10 + i) {
                let url = format!("http://h{i}.test/{k:03}");
                w.push(CrawlDatum::unfetched(url, format!("h{i}.test"), 0, 1))
                    .unwrap();
            }
            w.finish().unwrap();
        }
    }

    #[test]
    fn a_sealed_dataset_verifies_and_lists_its_parts() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("ds");
        dataset(&d, 3);
        let m = seal(&d).unwrap();
        assert_eq!(m.parts.len(), 3);
        assert_eq!(m.rows(), 10 + 11 + 12);
        assert_eq!(read(&d).unwrap(), Some(m.clone()));
        let parts = verify(&d, Check::Checksums).unwrap();
        assert_eq!(
            parts,
            (0..3).map(|i| d.join(part_name(i))).collect::<Vec<_>>()
        );
        let (bytes, hash) = hash_file(&d.join(part_name(1))).unwrap();
        assert_eq!(bytes, m.parts[1].bytes);
        assert_eq!(hash, m.parts[1].blake3);
    }

    #[test]
    fn missing_extra_resized_and_flipped_parts_are_refused() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("ds");
        dataset(&d, 3);
        seal(&d).unwrap();
        let p1 = d.join(part_name(1));
        let orig = fs::read(&p1).unwrap();

        fs::remove_file(&p1).unwrap();
        let e = verify(&d, Check::Sizes).unwrap_err().to_string();
        assert!(e.contains("part-00001.parquet is missing"), "{e}");

        let mut flipped = orig.clone();
        let mid = flipped.len() / 2;
        flipped[mid] ^= 0x01;
        fs::write(&p1, &flipped).unwrap();
        verify(&d, Check::Sizes).unwrap();
        let e = verify(&d, Check::Checksums).unwrap_err();
        assert!(matches!(e, Error::Integrity { .. }));
        assert!(
            e.to_string().contains("part-00001.parquet has blake3"),
            "{e}"
        );

        fs::write(&p1, &orig[..orig.len() - 1]).unwrap();
        let e = verify(&d, Check::Sizes).unwrap_err().to_string();
        assert!(e.contains("the manifest says"), "{e}");

        fs::write(&p1, &orig).unwrap();
        fs::copy(&p1, d.join(part_name(7))).unwrap();
        let e = verify(&d, Check::Sizes).unwrap_err().to_string();
        assert!(e.contains("part-00007.parquet is not listed"), "{e}");
    }

    #[test]
    fn a_placeholder_answers_from_its_object_without_being_read() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("part-00000.parquet");
        let b3 = "ab".repeat(32);
        let remote = Remote {
            bytes: 1234,
            blake3: b3.clone(),
            rows: Some(7),
            key: format!("objects/ab/{b3}"),
        };
        create_placeholder(&p, remote.clone()).unwrap();
        assert_eq!(fs::metadata(&p).unwrap().len(), 1234);
        assert_eq!(hash_file(&p).unwrap(), (1234, b3));
        assert_eq!(parquet_rows(&p).unwrap(), 7);
        // A hard link (a commit's link_part) is the same placeholder.
        let q = t.path().join("part-00001.parquet");
        fs::hard_link(&p, &q).unwrap();
        assert_eq!(placeholder(&q), Some(remote));
        // A real file of the same size is not one.
        let r = t.path().join("part-00002.parquet");
        fs::write(&r, vec![0u8; 1234]).unwrap();
        assert_eq!(placeholder(&r), None);
    }

    #[test]
    fn a_legacy_marker_is_read_unchecked() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("ds");
        dataset(&d, 2);
        fs::write(d.join(SUCCESS_MARKER), "2025-01-01T00:00:00+00:00\n").unwrap();
        assert_eq!(read(&d).unwrap(), None);
        assert_eq!(verify(&d, Check::Checksums).unwrap().len(), 2);
        fs::write(d.join(SUCCESS_MARKER), "{\"format\": 3").unwrap();
        assert!(matches!(
            verify(&d, Check::Sizes).unwrap_err(),
            Error::Integrity { .. }
        ));
    }

    #[test]
    fn the_hint_points_at_old_when_it_exists() {
        let t = tempfile::tempdir().unwrap();
        let cur = t.path().join("crawldb").join("current");
        let old = t.path().join("crawldb").join("old");
        dataset(&cur, 1);
        dataset(&old, 1);
        seal(&old).unwrap();
        let h = recovery_hint(&cur);
        assert!(h.contains(&format!("mv {}", cur.display())), "{h}");
        assert!(
            h.contains(&format!("mv {} {}", old.display(), cur.display())),
            "{h}"
        );
        fs::remove_dir_all(&old).unwrap();
        assert!(recovery_hint(&cur).contains("no previous version"));
    }
}
