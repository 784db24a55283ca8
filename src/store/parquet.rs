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

use ::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use ::parquet::arrow::{ArrowWriter, ProjectionMask};
use ::parquet::basic::{Compression, ZstdLevel};
use ::parquet::file::metadata::ParquetMetaData;
use ::parquet::file::properties::WriterProperties;
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::integrity::{self, Check};
use super::names;
use super::storage::LocalFs;
use crate::datum::fields_of;
use crate::error::{Error, IoContext, Result};

/// Rows per Parquet row group at most (and per in-memory batch when streaming).
pub const ROW_GROUP_ROWS: usize = 64 * 1024;

/// Uncompressed bytes per Parquet row group at most (the Arrow size of its rows):
/// whichever of this and [`ROW_GROUP_ROWS`] is reached first closes a row group, so
/// a reader (trawl, DuckDB, Spark) never holds more than about 64 MiB of one part's
/// column chunks at once, whatever the rows hold (page bodies, texts). A row group
/// may pass it by one row larger than the budget.
pub const ROW_GROUP_BYTES: usize = 64 * 1024 * 1024;

/// Bytes of rows a [`PartWriter`] buffers as values before encoding them to Arrow.
const ENCODE_BATCH_BYTES: usize = 8 * 1024 * 1024;

/// Rows a [`PartWriter`] buffers before it knows their size.
const FIRST_BATCH_ROWS: usize = 256;

/// Uncompressed bytes per record batch read, at most (see [`batch_rows`]).
pub const READ_BATCH_BYTES: usize = 16 * 1024 * 1024;

/// Rows per record batch read by row selections (generate's pass 2).
pub const READ_BATCH_ROWS: usize = ROW_GROUP_ROWS;

/// The batch size to read a Parquet file with: [`ROW_GROUP_ROWS`] rows, fewer when
/// its widest row group's rows (uncompressed size from the footer) would make a
/// batch larger than [`READ_BATCH_BYTES`]: crawldb rows are read 64Ki at a time,
/// page bodies a few at a time.
pub fn batch_rows(meta: &ParquetMetaData) -> usize {
    let widest = meta
        .row_groups()
        .iter()
        .filter(|g| g.num_rows() > 0)
        .map(|g| g.total_byte_size().max(0) as usize / g.num_rows() as usize)
        .max()
        .unwrap_or(0);
    (READ_BATCH_BYTES / widest.max(1)).clamp(1, ROW_GROUP_ROWS)
}

/// The exact size of a batch's data (its slices, not the buffers they share).
fn batch_bytes(batch: &RecordBatch) -> usize {
    batch
        .columns()
        .iter()
        .map(|c| {
            c.to_data()
                .get_slice_memory_size()
                .unwrap_or_else(|_| c.get_array_memory_size())
        })
        .sum()
}

/// Name of the marker file a complete dataset carries; it holds the dataset's
/// manifest ([`integrity::Manifest`]).
pub const SUCCESS_MARKER: &str = names::SUCCESS;

/// A row type stored in Parquet: serde-convertible with a fixed Arrow schema.
pub trait Record: Serialize + DeserializeOwned + Send + Sync + Sized {
    /// The dataset's Arrow schema (the documented public schema).
    fn schema() -> SchemaRef;

    /// Converts rows to a record batch with [`Record::schema`]; through serde
    /// ([`serde_batch`]) unless the type builds its columns itself.
    fn encode(rows: &[Self]) -> Result<RecordBatch> {
        serde_batch(rows)
    }

    /// The bytes of the row's large values (page bodies, texts, link lists), which
    /// [`PartWriter`] counts to encode rows before they pile up; 0 for rows of small
    /// fields only (their size is measured once encoded).
    fn heavy_bytes(&self) -> usize {
        0
    }
}

impl Record for crate::datum::CrawlDatum {
    fn schema() -> SchemaRef {
        crate::datum::CrawlDatum::schema()
    }

    /// The crawldb's rows are the most written: built column by column.
    fn encode(rows: &[Self]) -> Result<RecordBatch> {
        crate::datum::CrawlDatum::to_batch(rows)
            .map_err(|e| Error::arrow(std::any::type_name::<Self>(), e))
    }
}

/// Converts rows to a record batch with `R`'s schema ([`Record::encode`]).
pub fn to_batch<R: Record>(rows: &[R]) -> Result<RecordBatch> {
    R::encode(rows)
}

/// Converts rows to a record batch with `R`'s schema through serde.
pub fn serde_batch<R: Record>(rows: &[R]) -> Result<RecordBatch> {
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

/// Writer properties shared by every dataset: zstd, row groups of at most
/// [`ROW_GROUP_ROWS`] rows ([`PartWriter`] also closes them at [`ROW_GROUP_BYTES`]).
pub fn writer_properties() -> WriterProperties {
    properties(Compression::ZSTD(ZstdLevel::try_new(3).unwrap_or_default()))
}

/// Writer properties of scratch files trawl reads back once and removes (fetch's
/// checkpoints): Snappy, which costs the writer thread less than zstd.
pub fn scratch_properties() -> WriterProperties {
    properties(Compression::SNAPPY)
}

/// [`writer_properties`] with another codec.
fn properties(compression: Compression) -> WriterProperties {
    WriterProperties::builder()
        .set_compression(compression)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_column_dictionary_enabled(::parquet::schema::types::ColumnPath::from("url"), false)
        .set_created_by(format!("trawl {}", env!("CARGO_PKG_VERSION")))
        .build()
}

/// The file name of part `i` (`part-00003.parquet`).
pub fn part_name(i: usize) -> String {
    format!("part-{i:05}.parquet")
}

/// Whether the file `name` holds rows of partition `j`: `part-0000j.parquet`, or a
/// shuffle output `part-0000j-<pset>.parquet` (one per map task).
pub fn is_partition_file(name: &str, j: usize) -> bool {
    let stem = format!("part-{j:05}");
    name.strip_prefix(&stem).is_some_and(|rest| {
        rest == ".parquet" || (rest.starts_with('-') && rest.ends_with(".parquet"))
    })
}

/// Streams rows of one type into one Parquet file, a row group at a time.
///
/// Row groups close at [`ROW_GROUP_ROWS`] rows or [`ROW_GROUP_BYTES`] uncompressed
/// bytes, whichever comes first; rows are buffered as values for at most about
/// [`ENCODE_BATCH_BYTES`] (by their measured size and [`Record::heavy_bytes`]), so
/// the writer's memory is one row group's encoded pages plus one batch.
pub struct PartWriter<R: Record> {
    path: PathBuf,
    writer: ArrowWriter<File>,
    buffer: Vec<R>,
    /// [`Record::heavy_bytes`] of the buffered rows.
    buffer_bytes: usize,
    /// Rows to buffer before encoding, from the size of the rows seen.
    buffer_rows: usize,
    rows: u64,
    /// Rows and (uncompressed) bytes in the row group being written.
    group_rows: usize,
    group_bytes: usize,
}

impl<R: Record> PartWriter<R> {
    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Creates `path` (truncating it).
    pub fn create(path: &Path) -> Result<Self> {
        Self::create_with(path, writer_properties())
    }

    /// Creates `path` (truncating it) written with `props`.
    pub fn create_with(path: &Path, props: WriterProperties) -> Result<Self> {
        let file = File::create(path).at(path)?;
        let writer = ArrowWriter::try_new(file, R::schema(), Some(props))
            .map_err(|e| Error::parquet(path, e))?;
        Ok(PartWriter {
            path: path.to_path_buf(),
            writer,
            buffer: Vec::new(),
            buffer_bytes: 0,
            buffer_rows: FIRST_BATCH_ROWS,
            rows: 0,
            group_rows: 0,
            group_bytes: 0,
        })
    }

    /// Appends one row; encodes the buffer when it holds a batch's worth.
    pub fn push(&mut self, row: R) -> Result<()> {
        self.buffer_bytes += row.heavy_bytes();
        self.buffer.push(row);
        if self.buffer.len() >= self.buffer_rows || self.buffer_bytes >= ENCODE_BATCH_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    /// Appends a prepared batch (must have `R`'s schema), split over row groups
    /// as the budgets require.
    pub fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        self.flush()?;
        self.rows += batch.num_rows() as u64;
        self.write_arrow(batch)
    }

    /// Writes `batch` into the current row group, closing it (and going on in the
    /// next) whenever it reaches [`ROW_GROUP_ROWS`] or [`ROW_GROUP_BYTES`]; rows are
    /// counted at the batch's average size.
    fn write_arrow(&mut self, batch: &RecordBatch) -> Result<()> {
        let n = batch.num_rows();
        if n == 0 {
            return Ok(());
        }
        let per_row = (batch_bytes(batch) / n).max(1);
        let mut at = 0usize;
        while at < n {
            let room_rows = ROW_GROUP_ROWS - self.group_rows;
            let room_bytes = ROW_GROUP_BYTES.saturating_sub(self.group_bytes);
            let take = room_rows.min((room_bytes / per_row).max(1)).min(n - at);
            self.writer
                .write(&batch.slice(at, take))
                .map_err(|e| Error::parquet(&self.path, e))?;
            at += take;
            self.group_rows += take;
            self.group_bytes += take * per_row;
            if self.group_rows >= ROW_GROUP_ROWS || self.group_bytes >= ROW_GROUP_BYTES {
                self.close_row_group()?;
            }
        }
        Ok(())
    }

    fn close_row_group(&mut self) -> Result<()> {
        self.writer
            .flush()
            .map_err(|e| Error::parquet(&self.path, e))?;
        self.group_rows = 0;
        self.group_bytes = 0;
        Ok(())
    }

    /// Encodes buffered rows and writes them out.
    pub fn flush(&mut self) -> Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let batch = to_batch(&self.buffer)?;
        self.rows += self.buffer.len() as u64;
        self.buffer.clear();
        self.buffer_bytes = 0;
        // Buffer about ENCODE_BATCH_BYTES next time, at the size these rows had.
        let per_row = (batch_bytes(&batch) / batch.num_rows().max(1)).max(1);
        self.buffer_rows = (ENCODE_BATCH_BYTES / per_row).clamp(1, ROW_GROUP_ROWS);
        self.write_arrow(&batch)
    }

    /// Writes buffered rows out and closes the current row group now (a writer
    /// that wants smaller row groups than the budgets give).
    pub fn end_row_group(&mut self) -> Result<()> {
        self.flush()?;
        self.close_row_group()
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

/// Reads a Parquet file's record batches, [`batch_rows`] rows at a time.
pub fn read_batches(path: &Path) -> Result<impl Iterator<Item = Result<RecordBatch>>> {
    let file = File::open(path).at(path)?;
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| Error::parquet(path, e))?;
    let rows = batch_rows(builder.metadata());
    let reader = builder
        .with_batch_size(rows)
        .build()
        .map_err(|e| Error::parquet(path, e))?;
    let p = path.to_path_buf();
    Ok(reader.map(move |b| b.map_err(|e| Error::arrow(p.display().to_string(), e))))
}

/// Reads only `columns` of a Parquet file, batch by batch, decoding each batch into
/// `T`, a struct of those columns: a reader that needs a few small columns of wide
/// rows (a crawldb row's status, not its metadata; a parse's title, not its links)
/// leaves the others undecoded.
pub fn read_part_columns<T: DeserializeOwned>(
    path: &Path,
    columns: &[&str],
) -> Result<impl Iterator<Item = Result<Vec<T>>>> {
    let file = File::open(path).at(path)?;
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| Error::parquet(path, e))?;
    let mut roots = Vec::with_capacity(columns.len());
    for c in columns {
        let i = builder.schema().index_of(c).map_err(|_| {
            Error::crawl_dir(
                path,
                format!("the part has no `{c}` column: was it written by trawl?"),
            )
        })?;
        roots.push(i);
    }
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    let rows = batch_rows(builder.metadata());
    let reader = builder
        .with_projection(mask)
        .with_batch_size(rows)
        .build()
        .map_err(|e| Error::parquet(path, e))?;
    let p = path.to_path_buf();
    Ok(reader.map(move |b| {
        let b = b.map_err(|e| Error::arrow(p.display().to_string(), e))?;
        serde_arrow::from_record_batch(&b).map_err(|e| Error::arrow(std::any::type_name::<T>(), e))
    }))
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

/// The partition `j` of a shuffle output file named `part-0000j.parquet` (as a map
/// task writes it into its attempt); `None` for any other name.
pub fn part_index(path: &Path) -> Option<usize> {
    let name = path.file_name()?.to_str()?;
    name.strip_prefix("part-")?
        .strip_suffix(".parquet")?
        .parse()
        .ok()
}

/// Every part file of partition `j` in a dataset directory: `part-0000j.parquet` and
/// the shuffle outputs committed as `part-0000j-<pset>.parquet` (one per map task,
/// see [`super::jobs::shuffle_part_name`]), in name order.
pub fn partition_files(dir: &Path, j: usize) -> Result<Vec<PathBuf>> {
    Ok(part_files(dir)?
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| is_partition_file(&n.to_string_lossy(), j))
        })
        .collect())
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
/// [`LocalFs::put`]).
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datum::{CrawlDatum, DbStatus};

    #[test]
    fn crawldb_columns_built_by_hand_equal_serde() {
        let mut a = CrawlDatum::unfetched("http://a.test/".into(), "a.test".into(), 5, 60);
        a.metadata.insert("lang".into(), "en".into());
        a.metadata.insert("etag".into(), "\"x\"".into());
        let mut b = CrawlDatum::unfetched("http://b.test/x".into(), "b.test".into(), 7, 3600);
        b.status = DbStatus::DbFetched;
        b.modified_time = Some(3);
        b.fetched_time = Some(4);
        b.retries = 2;
        b.score = 0.25;
        b.signature = Some("abc".into());
        b.depth = 3;
        b.http_status = Some(200);
        b.content_type = Some("text/html".into());
        b.reason = Some("http_200".into());
        b.redirect_target = Some("http://c.test/".into());
        let rows = vec![a, b];
        let fast = to_batch(&rows).unwrap();
        assert_eq!(fast, serde_batch(&rows).unwrap());
        assert_eq!(from_batch::<CrawlDatum>(&fast).unwrap(), rows);
        let empty: Vec<CrawlDatum> = Vec::new();
        assert_eq!(to_batch(&empty).unwrap(), serde_batch(&empty).unwrap());
    }

    use arrow::datatypes::{DataType, Field, Schema};
    use serde::Deserialize;
    use std::sync::{Arc, OnceLock};

    /// A row with a large value (a page body).
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Page {
        id: i64,
        body: String,
    }

    impl Record for Page {
        fn schema() -> SchemaRef {
            static S: OnceLock<SchemaRef> = OnceLock::new();
            S.get_or_init(|| {
                Arc::new(Schema::new(vec![
                    Field::new("id", DataType::Int64, false),
                    Field::new("body", DataType::Utf8, false),
                ]))
            })
            .clone()
        }

        fn heavy_bytes(&self) -> usize {
            self.body.len()
        }
    }

    fn footer(path: &Path) -> ParquetMetaData {
        let file = File::open(path).unwrap();
        ParquetRecordBatchReaderBuilder::try_new(file)
            .unwrap()
            .metadata()
            .as_ref()
            .clone()
    }

    #[test]
    fn row_groups_stay_within_the_byte_budget_and_rows_round_trip() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join(part_name(0));
        // 1 KiB .. 1.5 MiB bodies, about 230 MiB in all: pushed one by one, then a
        // prepared batch of 60 more.
        let mut seed = 5u64;
        let mut size = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            1024 + (seed >> 33) as usize % (1536 * 1024)
        };
        let rows: Vec<Page> = (0..300)
            .map(|id| Page {
                id,
                body: format!("{id:06}.").repeat(size() / 7),
            })
            .collect();
        let widest = rows.iter().map(|r| r.body.len()).max().unwrap();
        let mut w = PartWriter::<Page>::create(&path).unwrap();
        for r in &rows[..240] {
            w.push(r.clone()).unwrap();
        }
        w.write_batch(&to_batch(&rows[240..]).unwrap()).unwrap();
        assert_eq!(w.finish().unwrap(), 300);

        let meta = footer(&path);
        let groups = meta.row_groups();
        assert!(groups.len() >= 4, "{} row groups", groups.len());
        for g in groups {
            let bytes = g.total_byte_size() as usize;
            assert!(
                bytes <= ROW_GROUP_BYTES + widest + 64 * 1024,
                "a row group of {} rows holds {bytes} bytes",
                g.num_rows()
            );
        }
        // Read back whole, and in batches bounded by bytes too.
        assert_eq!(read_part_all::<Page>(&path).unwrap(), rows);
        let mut read = 0;
        for b in read_batches(&path).unwrap() {
            let b = b.unwrap();
            assert!(batch_bytes(&b) <= READ_BATCH_BYTES + widest + 64 * 1024);
            read += b.num_rows();
        }
        assert_eq!(read, 300);
    }

    #[test]
    fn small_rows_fill_row_groups_of_row_group_rows() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join(part_name(0));
        let n = 2 * ROW_GROUP_ROWS + 1000;
        let mut w = PartWriter::<Page>::create(&path).unwrap();
        for id in 0..n as i64 {
            w.push(Page {
                id,
                body: format!("http://h{}.test/{id}", id % 97),
            })
            .unwrap();
        }
        w.finish().unwrap();
        let rows: Vec<i64> = footer(&path)
            .row_groups()
            .iter()
            .map(|g| g.num_rows())
            .collect();
        let full = ROW_GROUP_ROWS as i64;
        assert_eq!(rows, [full, full, 1000]);
        let back = read_part_all::<Page>(&path).unwrap();
        assert_eq!(back.len(), n);
        assert!(back.iter().enumerate().all(|(i, r)| r.id == i as i64));
    }
}

/// A Parquet part opened for reading by pages: the file, or, for a placeholder in an
/// object-store mirror (a part this process did not download), its object, read by
/// ranged GETs of just the bytes a read needs (the footer, the pages of the columns
/// and rows selected). generate's cut-off reads the URLs of candidates tied at a cut
/// this way, without downloading the crawldb.
#[derive(Debug)]
pub enum PartFile {
    /// A local file.
    Local(File),
    /// A placeholder's object.
    Remote {
        /// The placeholder.
        path: PathBuf,
        /// The object's size.
        len: u64,
    },
}

/// Opens the part `path` for reading by pages ([`PartFile`]).
pub fn open_part(path: &Path) -> Result<PartFile> {
    match integrity::placeholder(path) {
        Some(r) => Ok(PartFile::Remote {
            path: path.to_path_buf(),
            len: r.bytes,
        }),
        None => Ok(PartFile::Local(File::open(path).at(path)?)),
    }
}

fn external(e: Error) -> ::parquet::errors::ParquetError {
    ::parquet::errors::ParquetError::External(Box::new(e))
}

impl ::parquet::file::reader::Length for PartFile {
    fn len(&self) -> u64 {
        match self {
            PartFile::Local(f) => ::parquet::file::reader::Length::len(f),
            PartFile::Remote { len, .. } => *len,
        }
    }
}

impl ::parquet::file::reader::ChunkReader for PartFile {
    type T = Box<dyn std::io::Read + Send>;

    fn get_read(&self, start: u64) -> ::parquet::errors::Result<Self::T> {
        match self {
            PartFile::Local(f) => Ok(Box::new(f.get_read(start)?)),
            PartFile::Remote { path, len } => Ok(Box::new(RangedRead {
                path: path.clone(),
                pos: start,
                end: *len,
                buf: Vec::new(),
                at: 0,
            })),
        }
    }

    fn get_bytes(&self, start: u64, length: usize) -> ::parquet::errors::Result<bytes::Bytes> {
        match self {
            PartFile::Local(f) => f.get_bytes(start, length),
            PartFile::Remote { path, .. } => {
                let (mut got, _) =
                    integrity::read_ranges(&[(path.clone(), start, length)]).map_err(external)?;
                Ok(bytes::Bytes::from(got.pop().unwrap_or_default()))
            }
        }
    }
}

/// A placeholder's object read forward from `pos`, 64 KiB per ranged GET.
struct RangedRead {
    path: PathBuf,
    pos: u64,
    end: u64,
    buf: Vec<u8>,
    at: usize,
}

impl std::io::Read for RangedRead {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.at == self.buf.len() {
            let len = (self.end.saturating_sub(self.pos)).min(64 * 1024) as usize;
            if len == 0 {
                return Ok(0);
            }
            let (mut got, _) = integrity::read_ranges(&[(self.path.clone(), self.pos, len)])
                .map_err(std::io::Error::other)?;
            self.buf = got.pop().unwrap_or_default();
            self.at = 0;
            self.pos += self.buf.len() as u64;
        }
        let n = out.len().min(self.buf.len() - self.at);
        out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}
