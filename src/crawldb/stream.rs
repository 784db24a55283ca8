//! Streaming readers: a crawldb part as a sorted stream of rows, and the rows of one
//! host partition of a segment dataset.

use std::path::{Path, PathBuf};

use ::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::datum::CrawlDatum;
use crate::error::{Error, Result};
use crate::store::parquet::{self, Record};
use crate::store::partition::Partitioner;

type Batches = Box<dyn Iterator<Item = Result<Vec<CrawlDatum>>> + Send>;

/// A crawldb part read batch by batch, with one row of look-ahead. Checks that URLs
/// are strictly increasing (sorted, one row per URL).
pub struct DatumStream {
    path: PathBuf,
    batches: Option<Batches>,
    buf: std::vec::IntoIter<CrawlDatum>,
    head: Option<CrawlDatum>,
    last_url: Option<String>,
}

impl DatumStream {
    /// Opens `path`; a missing file is an empty stream (a crawldb being created).
    pub fn open(path: &Path) -> Result<Self> {
        let batches: Option<Batches> = if path.is_file() {
            Some(open_batches(path)?)
        } else {
            None
        };
        let mut s = DatumStream {
            path: path.to_path_buf(),
            batches,
            buf: Vec::new().into_iter(),
            head: None,
            last_url: None,
        };
        s.advance()?;
        Ok(s)
    }

    /// An empty stream.
    pub fn empty() -> Self {
        DatumStream {
            path: PathBuf::new(),
            batches: None,
            buf: Vec::new().into_iter(),
            head: None,
            last_url: None,
        }
    }

    fn advance(&mut self) -> Result<()> {
        loop {
            if let Some(d) = self.buf.next() {
                if let Some(last) = &self.last_url
                    && d.url.as_str() <= last.as_str()
                {
                    return Err(Error::crawl_dir(
                        &self.path,
                        format!(
                            "crawldb part is not sorted by url or holds {} twice; restore crawldb/old or re-create the crawldb",
                            d.url
                        ),
                    ));
                }
                self.last_url = Some(d.url.clone());
                self.head = Some(d);
                return Ok(());
            }
            match self.batches.as_mut().and_then(|b| b.next()) {
                Some(rows) => self.buf = rows?.into_iter(),
                None => {
                    self.head = None;
                    return Ok(());
                }
            }
        }
    }

    /// The URL of the next row, if any.
    pub fn peek_url(&self) -> Option<&str> {
        self.head.as_ref().map(|d| d.url.as_str())
    }

    /// Takes the next row.
    pub fn next_row(&mut self) -> Result<Option<CrawlDatum>> {
        let d = self.head.take();
        if d.is_some() {
            self.advance()?;
        }
        Ok(d)
    }
}

/// Opens a crawldb part as an owned iterator of decoded batches.
fn open_batches(path: &Path) -> Result<Batches> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| Error::parquet(path, e))?;
    let rows = parquet::batch_rows(builder.metadata());
    let reader = builder
        .with_batch_size(rows)
        .build()
        .map_err(|e| Error::parquet(path, e))?;
    let p = path.to_path_buf();
    Ok(Box::new(reader.map(move |b| {
        b.map_err(|e| Error::arrow(p.display().to_string(), e))
            .and_then(|b| parquet::from_batch::<CrawlDatum>(&b))
    })))
}

/// The files of partition `part` of a dataset partitioned like the reader
/// ([`parquet::partition_files`]); none when the dataset is missing.
fn same_partition_files(dataset: &Path, part: usize) -> Result<Vec<PathBuf>> {
    if !dataset.is_dir() {
        return Ok(Vec::new());
    }
    parquet::partition_files(dataset, part)
}

/// Like [`read_partition`], but hands the rows to `f` one record batch at a time
/// (at most [`parquet::ROW_GROUP_ROWS`] rows), never holding the whole partition.
pub fn scan_partition<R: Record>(
    dataset: &Path,
    part: usize,
    parts: Partitioner,
    dataset_parts: Partitioner,
    host_of: impl Fn(&R) -> &str,
    mut f: impl FnMut(Vec<R>) -> Result<()>,
) -> Result<()> {
    if dataset_parts == parts {
        // `part-NNNNN.parquet`, or one file per map task of a shuffle.
        for p in same_partition_files(dataset, part)? {
            for rows in parquet::read_part::<R>(&p)? {
                f(rows?)?;
            }
        }
        return Ok(());
    }
    for p in parquet::part_files(dataset)? {
        for rows in parquet::read_part::<R>(&p)? {
            let mut rows = rows?;
            rows.retain(|r| parts.of_host(host_of(r)) == part);
            f(rows)?;
        }
    }
    Ok(())
}

/// Reads the rows of partition `part` (of `parts`) of a segment dataset partitioned
/// as `dataset_parts`: the matching part file when the partitionings (count and key)
/// agree, else every part filtered by `parts`. A missing part file is empty.
pub fn read_partition<R: Record>(
    dataset: &Path,
    part: usize,
    parts: Partitioner,
    dataset_parts: Partitioner,
    host_of: impl Fn(&R) -> &str,
) -> Result<Vec<R>> {
    if dataset_parts == parts {
        let mut out = Vec::new();
        for p in same_partition_files(dataset, part)? {
            out.extend(parquet::read_part_all::<R>(&p)?);
        }
        return Ok(out);
    }
    let mut out = Vec::new();
    for p in parquet::part_files(dataset)? {
        for rows in parquet::read_part::<R>(&p)? {
            out.extend(
                rows?
                    .into_iter()
                    .filter(|r| parts.of_host(host_of(r)) == part),
            );
        }
    }
    Ok(out)
}
