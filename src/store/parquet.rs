//! Parquet datasets: typed record batches, and partitioned datasets written
//! atomically.
//!
//! A *dataset* is a directory of `part-NNNNN.parquet` files plus a `_SUCCESS` marker
//! that holds its manifest (every part's name, rows, bytes and blake3; see
//! [`super::integrity`]).
//! Datasets are always written under a temporary name beside their final place and
//! renamed into place when complete, so a reader never sees a half-written dataset
//! and a killed stage leaves only a `*.tmp-*` directory that the next run removes.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use ::parquet::arrow::ArrowWriter;
use ::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use ::parquet::basic::{Compression, ZstdLevel};
use ::parquet::file::properties::WriterProperties;
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::integrity::{self, Check};
use super::names;
use super::storage::{LocalFs, Storage};
use crate::datum::fields_of;
use crate::error::{Error, IoContext, Result};

/// Rows per Parquet row group at most (and per in-memory batch when streaming).
pub const ROW_GROUP_ROWS: usize = 64 * 1024;

/// Rows per record batch read by pass 2 of generate and other row selections.
pub const READ_BATCH_ROWS: usize = ROW_GROUP_ROWS;

/// Name of the marker file a complete dataset carries; it holds the dataset's
/// manifest ([`integrity::Manifest`]).
pub const SUCCESS_MARKER: &str = names::SUCCESS;

/// A row type stored in Parquet: serde-convertible with a fixed Arrow schema.
pub trait Record: Serialize + DeserializeOwned + Send + Sync {
    /// The dataset's Arrow schema (the documented public schema).
    fn schema() -> SchemaRef;
}

impl Record for crate::datum::CrawlDatum {
    fn schema() -> SchemaRef {
        crate::datum::CrawlDatum::schema()
    }
}

/// Converts rows to a record batch with `R`'s schema.
pub fn to_batch<R: Record>(rows: &[R]) -> Result<RecordBatch> {
    let schema = R::schema();
    let fields = fields_of(&schema);
    let batch = serde_arrow::to_record_batch(&fields, &rows)
        .map_err(|e| Error::arrow(std::any::type_name::<R>(), e))?;
    // serde_arrow builds the schema from the fields; re-attach the canonical one.
    RecordBatch::try_new(schema, batch.columns().to_vec())
        .map_err(|e| Error::arrow(std::any::type_name::<R>(), e))
}

/// Converts a record batch (read from a dataset of `R`) back to rows.
pub fn from_batch<R: Record>(batch: &RecordBatch) -> Result<Vec<R>> {
    serde_arrow::from_record_batch(batch).map_err(|e| Error::arrow(std::any::type_name::<R>(), e))
}

/// Writer properties shared by every dataset: zstd, row groups of [`ROW_GROUP_ROWS`].
pub fn writer_properties() -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(3).unwrap_or_default()))
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_created_by(format!("trawl {}", env!("CARGO_PKG_VERSION")))
        .build()
}

/// The file name of part `i` (`part-00003.parquet`).
pub fn part_name(i: usize) -> String {
    format!("part-{i:05}.parquet")
}

/// The partition of a host among `n` parts: stable across runs and versions
/// (first 8 bytes of blake3 of the lowercase host, modulo `n`).
pub fn partition_for_host(host: &str, n: usize) -> usize {
    let h = blake3::hash(host.as_bytes());
    let mut b = [0u8; 8];
    b.copy_from_slice(&h.as_bytes()[..8]);
    (u64::from_le_bytes(b) % n.max(1) as u64) as usize
}

/// Streams rows of one type into one Parquet file, a row group at a time.
pub struct PartWriter<R: Record> {
    path: PathBuf,
    writer: ArrowWriter<File>,
    buffer: Vec<R>,
    rows: u64,
}

impl<R: Record> PartWriter<R> {
    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Creates `path` (truncating it).
    pub fn create(path: &Path) -> Result<Self> {
        let file = File::create(path).at(path)?;
        let writer = ArrowWriter::try_new(file, R::schema(), Some(writer_properties()))
            .map_err(|e| Error::parquet(path, e))?;
        Ok(PartWriter {
            path: path.to_path_buf(),
            writer,
            buffer: Vec::new(),
            rows: 0,
        })
    }

    /// Appends one row; flushes a row group when the buffer is full.
    pub fn push(&mut self, row: R) -> Result<()> {
        self.buffer.push(row);
        if self.buffer.len() >= ROW_GROUP_ROWS {
            self.flush()?;
        }
        Ok(())
    }

    /// Appends a prepared batch (must have `R`'s schema).
    pub fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        self.flush()?;
        self.rows += batch.num_rows() as u64;
        self.writer
            .write(batch)
            .map_err(|e| Error::parquet(&self.path, e))
    }

    /// Writes buffered rows out.
    pub fn flush(&mut self) -> Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let batch = to_batch(&self.buffer)?;
        self.rows += self.buffer.len() as u64;
        self.buffer.clear();
        self.writer
            .write(&batch)
            .map_err(|e| Error::parquet(&self.path, e))?;
        // Keep memory bounded by one row group for large rows (content).
        if self.writer.in_progress_size() > 64 * 1024 * 1024 {
            self.writer
                .flush()
                .map_err(|e| Error::parquet(&self.path, e))?;
        }
        Ok(())
    }

    /// Writes buffered rows out and closes the current row group, so that rows
    /// with large values (page bodies) do not pile up in memory until the 64 MiB
    /// row-group threshold.
    pub fn end_row_group(&mut self) -> Result<()> {
        self.flush()?;
        self.writer
            .flush()
            .map_err(|e| Error::parquet(&self.path, e))
    }

    /// Rows written so far.
    pub fn rows(&self) -> u64 {
        self.rows + self.buffer.len() as u64
    }

    /// Flushes and closes the file, fsyncing it.
    pub fn finish(mut self) -> Result<u64> {
        self.flush()?;
        let file = self
            .writer
            .into_inner()
            .map_err(|e| Error::parquet(&self.path, e))?;
        file.sync_all().at(&self.path)?;
        Ok(self.rows)
    }
}

/// Reads a Parquet file batch by batch, decoding each batch into rows.
pub fn read_part<R: Record>(path: &Path) -> Result<impl Iterator<Item = Result<Vec<R>>>> {
    let batches = read_batches(path)?;
    Ok(batches.map(|b| b.and_then(|b| from_batch::<R>(&b))))
}

/// Reads a Parquet file's record batches, [`ROW_GROUP_ROWS`] rows at a time.
pub fn read_batches(path: &Path) -> Result<impl Iterator<Item = Result<RecordBatch>>> {
    let file = File::open(path).at(path)?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| Error::parquet(path, e))?
        .with_batch_size(ROW_GROUP_ROWS)
        .build()
        .map_err(|e| Error::parquet(path, e))?;
    let p = path.to_path_buf();
    Ok(reader.map(move |b| b.map_err(|e| Error::arrow(p.display().to_string(), e))))
}

/// Reads every row of a Parquet file.
pub fn read_part_all<R: Record>(path: &Path) -> Result<Vec<R>> {
    let mut out = Vec::new();
    for rows in read_part::<R>(path)? {
        out.extend(rows?);
    }
    Ok(out)
}

/// The part files of a dataset directory, in part order.
///
/// A complete dataset (one with its `_SUCCESS` marker) is first checked against its
/// manifest ([`integrity::verify`] with [`Check::Sizes`]): a missing, resized or
/// unlisted part is an [`Error::Integrity`], never a smaller dataset. A directory
/// being written (no marker yet) is listed as it is.
pub fn part_files(dir: &Path) -> Result<Vec<PathBuf>> {
    if dataset_complete(dir) {
        return integrity::verify(dir, Check::Sizes);
    }
    let mut parts = Vec::new();
    for entry in fs::read_dir(dir).at(dir)? {
        let entry = entry.at(dir)?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if integrity::is_part_name(&name) {
            parts.push(entry.path());
        }
    }
    parts.sort();
    Ok(parts)
}

/// Reads every row of every part of a dataset (for small datasets and tests).
pub fn read_dataset<R: Record>(dir: &Path) -> Result<Vec<R>> {
    let mut out = Vec::new();
    for p in part_files(dir)? {
        out.extend(read_part_all::<R>(&p)?);
    }
    Ok(out)
}

/// Whether `dir` is a complete dataset (has its `_SUCCESS` marker).
pub fn dataset_complete(dir: &Path) -> bool {
    dir.join(SUCCESS_MARKER).is_file()
}

/// A dataset being written: a temporary directory renamed into place on commit.
///
/// Dropping it without [`StagedDataset::commit`] leaves the final path untouched;
/// the temporary directory is removed on drop (or by the next run, after a kill).
pub struct StagedDataset {
    tmp: PathBuf,
    dest: PathBuf,
    committed: bool,
}

impl StagedDataset {
    /// Prepares to write the dataset `dest`; removes leftovers of killed runs.
    pub fn new(dest: &Path) -> Result<Self> {
        let parent = dest
            .parent()
            .ok_or_else(|| Error::crawl_dir(dest, "dataset path has no parent directory"))?;
        LocalFs.create_dir(parent)?;
        remove_stale_tmp(dest)?;
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = parent.join(format!("{name}.tmp-{}", std::process::id()));
        LocalFs.create_dir(&tmp)?;
        Ok(StagedDataset {
            tmp,
            dest: dest.to_path_buf(),
            committed: false,
        })
    }

    /// The temporary directory to write parts into.
    pub fn path(&self) -> &Path {
        &self.tmp
    }

    /// The final path.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Path of part `i` inside the temporary directory.
    pub fn part_path(&self, i: usize) -> PathBuf {
        self.tmp.join(part_name(i))
    }

    /// Marks the dataset complete and renames it into place. Fails if the final
    /// path exists (use [`StagedDataset::commit_replacing`] to replace it).
    pub fn commit(mut self) -> Result<PathBuf> {
        if LocalFs.exists(&self.dest)? {
            return Err(Error::crawl_dir(
                &self.dest,
                "already exists; remove it first if you want it rewritten",
            ));
        }
        self.finish_and_rename()?;
        Ok(self.dest.clone())
    }

    /// Marks the dataset complete and replaces whatever is at the final path.
    pub fn commit_replacing(mut self) -> Result<PathBuf> {
        if LocalFs.exists(&self.dest)? {
            let trash = trash_path(&self.dest);
            LocalFs.rename(&self.dest, &trash)?;
            self.finish_and_rename()?;
            LocalFs.delete(&trash)?;
        } else {
            self.finish_and_rename()?;
        }
        Ok(self.dest.clone())
    }

    fn finish_and_rename(&mut self) -> Result<()> {
        // The marker is the manifest (every part's name, rows, size, blake3), written
        // last: a dataset with a `_SUCCESS` is complete and checkable.
        integrity::seal_tree(&self.tmp)?;
        LocalFs.rename(&self.tmp, &self.dest)?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for StagedDataset {
    fn drop(&mut self) {
        if !self.committed {
            let _ = LocalFs.delete(&self.tmp);
        }
    }
}

fn trash_path(dest: &Path) -> PathBuf {
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dest.with_file_name(format!("{name}.tmp-trash-{}", std::process::id()))
}

/// Removes `<dest>.tmp-*` directories left by killed runs.
pub fn remove_stale_tmp(dest: &Path) -> Result<()> {
    let (Some(parent), Some(name)) = (dest.parent(), dest.file_name()) else {
        return Ok(());
    };
    if !parent.is_dir() {
        return Ok(());
    }
    let prefix = format!("{}.tmp-", name.to_string_lossy());
    for p in LocalFs.list(parent)? {
        if p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(&prefix))
        {
            tracing::info!("removing leftover of an interrupted run: {}", p.display());
            LocalFs.delete(&p)?;
        }
    }
    Ok(())
}

/// Writes a small file atomically (temporary file, fsync, rename; see
/// [`Storage::put`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    LocalFs.put(path, bytes)
}

/// Reads a JSON file into `T`, naming the file on error.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let bytes = LocalFs.read(path)?;
    serde_json::from_slice(&bytes).map_err(|e| {
        Error::crawl_dir(
            path,
            format!("invalid JSON ({e}); the file is damaged: restore it or remove the dataset"),
        )
    })
}

/// Writes `value` as pretty JSON, atomically.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| Error::crawl_dir(path, format!("cannot encode JSON: {e}")))?;
    write_atomic(path, &bytes)
}
