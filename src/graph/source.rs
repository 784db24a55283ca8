//! Where graph edges come from: the outlinks in segments' `parse_data` (the page
//! graph, every link) or the linkdb's inlink rows. Only the needed columns are
//! decoded (Parquet projection), straight from Arrow arrays.

use std::fs::File;
use std::path::{Path, PathBuf};

use ::parquet::arrow::ProjectionMask;
use ::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use arrow::array::{Array, AsArray, RecordBatch};

use super::ids::url_host;
use crate::error::{Error, IoContext, Result};
use crate::store::integrity::{self, Check};
use crate::store::layout::CrawlDir;
use crate::store::names::SegmentDataset;
use crate::store::parquet;

/// The kind of rows an edge file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeKind {
    /// `parse_data` rows: `url` links to each of `outlinks[].url`.
    ParseData,
    /// linkdb rows: `from_url` links to `url`.
    LinkDb,
}

/// A set of Parquet files holding edges.
#[derive(Debug, Clone)]
pub struct EdgeSource {
    kind: EdgeKind,
    files: Vec<PathBuf>,
    skip_internal: bool,
    /// Parquet files with a `url` column whose URLs are nodes, linked or not.
    node_files: Vec<PathBuf>,
}

impl EdgeSource {
    /// Edges from explicit files.
    pub fn new(kind: EdgeKind, files: Vec<PathBuf>) -> Self {
        EdgeSource {
            kind,
            files,
            skip_internal: false,
            node_files: Vec::new(),
        }
    }

    /// Makes every URL of the crawldb (`crawldb/current`) a node of the graph, with
    /// or without links: every known page gets a PageRank (an unlinked one, its
    /// share of the teleport and of the dangling pages' rank).
    pub fn with_crawldb_nodes(mut self, dir: &CrawlDir) -> Result<Self> {
        self.node_files = parquet::part_files(&dir.crawldb_current())?;
        Ok(self)
    }

    /// The files whose URLs are nodes by themselves.
    pub fn node_files(&self) -> &[PathBuf] {
        &self.node_files
    }

    /// Calls `f(url)` for every URL of one node file (its `url` column).
    pub fn scan_nodes(&self, path: &Path, f: &mut dyn FnMut(&str)) -> Result<()> {
        for batch in read_columns(path, &["url"])? {
            let batch = batch?;
            let url = batch.column(0).as_string_opt::<i32>().ok_or_else(|| {
                Error::crawl_dir(path, "unexpected column url: not a crawldb part")
            })?;
            for i in 0..batch.num_rows() {
                f(url.value(i));
            }
        }
        Ok(())
    }

    /// Drops (when `yes`) every edge whose source and target have the same host,
    /// self-links included.
    pub fn ignore_internal(mut self, yes: bool) -> Self {
        self.skip_internal = yes;
        self
    }

    /// The page graph of a crawl: `parse_data` of every segment that has it complete.
    pub fn crawl(dir: &CrawlDir) -> Result<Self> {
        let mut files = Vec::new();
        for seg in dir.segments()? {
            if seg.has(SegmentDataset::ParseData) {
                // Ranks flow into the crawldb: checked in full, not only listed.
                files.extend(integrity::verify(
                    &seg.dataset(SegmentDataset::ParseData),
                    Check::Checksums,
                )?);
            } else {
                tracing::info!(
                    "segment {} has no complete parse_data; its links are not in the graph",
                    seg.name()
                );
            }
        }
        Ok(Self::new(EdgeKind::ParseData, files))
    }

    /// The linkdb's rows (`linkdb/current`).
    pub fn linkdb(dir: &CrawlDir) -> Result<Self> {
        let cur = dir.linkdb_current();
        if !parquet::dataset_complete(&cur) {
            return Err(Error::crawl_dir(
                &cur,
                "no linkdb: run `linkdb` first, or use --source crawl",
            ));
        }
        Ok(Self::new(
            EdgeKind::LinkDb,
            integrity::verify(&cur, Check::Checksums)?,
        ))
    }

    /// The files, in a fixed order.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// Calls `f(source_url, target_url)` for every edge of one file (but internal
    /// ones when they are ignored).
    pub fn scan_file(&self, path: &Path, f: &mut dyn FnMut(&str, &str)) -> Result<()> {
        if self.skip_internal {
            return self.scan_all(path, &mut |s, d| {
                if url_host(s) != url_host(d) {
                    f(s, d)
                }
            });
        }
        self.scan_all(path, f)
    }

    fn scan_all(&self, path: &Path, f: &mut dyn FnMut(&str, &str)) -> Result<()> {
        let cols: &[&str] = match self.kind {
            EdgeKind::ParseData => &["url", "outlinks"],
            EdgeKind::LinkDb => &["url", "from_url"],
        };
        for batch in read_columns(path, cols)? {
            let batch = batch?;
            let bad = |what: &str| {
                Error::crawl_dir(
                    path,
                    format!("unexpected column {what}: not a trawl dataset of this kind"),
                )
            };
            let url = batch
                .column(0)
                .as_string_opt::<i32>()
                .ok_or_else(|| bad("url"))?;
            match self.kind {
                EdgeKind::LinkDb => {
                    let from = batch
                        .column(1)
                        .as_string_opt::<i32>()
                        .ok_or_else(|| bad("from_url"))?;
                    for i in 0..batch.num_rows() {
                        f(from.value(i), url.value(i));
                    }
                }
                EdgeKind::ParseData => {
                    let list = batch
                        .column(1)
                        .as_list_opt::<i32>()
                        .ok_or_else(|| bad("outlinks"))?;
                    let targets = list
                        .values()
                        .as_struct_opt()
                        .and_then(|s| s.column_by_name("url"))
                        .and_then(|c| c.as_string_opt::<i32>())
                        .ok_or_else(|| bad("outlinks.url"))?;
                    let offsets = list.value_offsets();
                    for i in 0..batch.num_rows() {
                        if list.is_null(i) {
                            continue;
                        }
                        let src = url.value(i);
                        for j in offsets[i] as usize..offsets[i + 1] as usize {
                            f(src, targets.value(j));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// Calls `f(url, depth)` for every row of the crawldb part `part`.
pub fn scan_url_depth(part: &Path, f: &mut dyn FnMut(&str, i32)) -> Result<()> {
    for batch in read_columns(part, &["url", "depth"])? {
        let batch = batch?;
        let bad = || Error::crawl_dir(part, "not a crawldb part (unexpected column types)");
        let url = batch.column(0).as_string_opt::<i32>().ok_or_else(bad)?;
        let depth = batch
            .column(1)
            .as_primitive_opt::<arrow::datatypes::Int32Type>()
            .ok_or_else(bad)?;
        for i in 0..batch.num_rows() {
            f(url.value(i), depth.value(i));
        }
    }
    Ok(())
}

/// Reads only the named top-level columns of a Parquet file, in that order.
pub fn read_columns(
    path: &Path,
    names: &[&str],
) -> Result<impl Iterator<Item = Result<RecordBatch>> + use<>> {
    let file = File::open(path).at(path)?;
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| Error::parquet(path, e))?;
    let schema = builder.schema().clone();
    let batch = parquet::batch_rows(builder.metadata());
    let mut roots = Vec::with_capacity(names.len());
    for name in names {
        let idx = schema.index_of(name).map_err(|_| {
            Error::crawl_dir(
                path,
                format!("has no column {name:?}: not the dataset expected here"),
            )
        })?;
        roots.push(idx);
    }
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots.iter().copied());
    let reader = builder
        .with_projection(mask)
        .with_batch_size(batch)
        .build()
        .map_err(|e| Error::parquet(path, e))?;
    // The projected batch keeps the file's column order; reorder to `names`.
    let mut order: Vec<usize> = (0..roots.len()).collect();
    order.sort_by_key(|&i| roots[i]);
    let mut pos = vec![0; roots.len()];
    for (k, &i) in order.iter().enumerate() {
        pos[i] = k;
    }
    let p = path.to_path_buf();
    Ok(reader.map(move |b| {
        let b = b.map_err(|e| Error::arrow(p.display().to_string(), e))?;
        b.project(&pos)
            .map_err(|e| Error::arrow(p.display().to_string(), e))
    }))
}
