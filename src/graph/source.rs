//! Where graph edges come from: the outlinks in segments' `parse_data` (the page
//! graph, every link) or the linkdb's inlink rows. Only the needed columns are
//! decoded (Parquet projection), straight from Arrow arrays.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ::parquet::arrow::ProjectionMask;
use ::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use arrow::array::{Array, AsArray, RecordBatch};

use super::ids::url_host;
use super::template::{TemplateCounter, TemplateLinks, page_key};
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

/// The template links of one partition index, once found.
type TemplateSlot = Arc<Mutex<Option<Arc<TemplateLinks>>>>;

/// A set of Parquet files holding edges.
#[derive(Debug, Clone)]
pub struct EdgeSource {
    kind: EdgeKind,
    files: Vec<PathBuf>,
    skip_internal: bool,
    /// Leave out the template links of each file's hosts ([`super::template`]).
    skip_template: bool,
    /// The template links found per partition index, kept for the other files of
    /// the partition and the graph's second pass.
    templates: Arc<Mutex<HashMap<usize, TemplateSlot>>>,
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
            skip_template: false,
            templates: Arc::default(),
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

    /// Drops (when `yes`) every template link ([`super::template`]): a link within a
    /// host that most of the host's pages make with the same anchor text. Found per
    /// partition index over the files that have it (a dataset partitioned by host holds
    /// each host's links within it in one partition): a linkdb partition, or one
    /// partition of every segment's `parse_data`, each page's newest version.
    pub fn ignore_template(mut self, yes: bool) -> Self {
        self.skip_template = yes;
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
    /// ones and template ones when they are ignored; the first file of a partition to
    /// ask reads all of the partition's files once more to find its template links).
    pub fn scan_file(&self, path: &Path, f: &mut dyn FnMut(&str, &str)) -> Result<()> {
        let template = if self.skip_template && !self.skip_internal {
            self.template_links(path)?
        } else {
            Arc::default()
        };
        let skip_internal = self.skip_internal;
        let with_anchor = !template.is_empty();
        self.scan_all(path, with_anchor, &mut |s, d, a| {
            if skip_internal && url_host(s) == url_host(d) {
                return;
            }
            if with_anchor && template.is_template(s, d, a) {
                return;
            }
            f(s, d)
        })
    }

    /// The template links of the hosts of one file: found over every file of the
    /// source with its partition index (a host's links within it are all in its
    /// partition, in every segment), a page counted in its newest segment only (the
    /// files are in segment order), so that merging segments changes nothing. Found
    /// once a partition, whichever of its files asks first.
    fn template_links(&self, path: &Path) -> Result<Arc<TemplateLinks>> {
        let j = file_index(path);
        let slot = {
            // A panic elsewhere leaves the map as it was: go on with it.
            let mut all = self.templates.lock().unwrap_or_else(|e| e.into_inner());
            all.entry(j).or_default().clone()
        };
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = slot.as_ref() {
            return Ok(found.clone());
        }
        let mut counter = TemplateCounter::default();
        let mut newer: HashSet<u64> = HashSet::new();
        for file in self.files.iter().rev() {
            if file_index(file) == j {
                self.count_template(file, &mut counter, &mut newer)?;
            }
        }
        let found = Arc::new(counter.finish());
        *slot = Some(found.clone());
        Ok(found)
    }

    /// Counts the links within hosts of one file for [`TemplateCounter`]; of
    /// `parse_data`, only the pages not in `newer` (added to it).
    fn count_template(
        &self,
        path: &Path,
        counter: &mut TemplateCounter,
        newer: &mut HashSet<u64>,
    ) -> Result<()> {
        if self.kind == EdgeKind::LinkDb {
            return self.scan_all(path, true, &mut |s, d, a| counter.add(s, d, a));
        }
        let mut here: HashSet<u64> = HashSet::new();
        self.scan_rows(
            path,
            true,
            &mut |page| {
                // A page's first row in the file counts (a file holds a URL once;
                // were it there twice, its links would count twice).
                let key = page_key(page);
                here.insert(key) && !newer.contains(&key)
            },
            &mut |s, d, a| counter.add(s, d, a),
        )?;
        newer.extend(here);
        Ok(())
    }

    /// Calls `f(source, target, anchor)` for every edge of one file (the anchor is
    /// empty unless `with_anchor`).
    fn scan_all(
        &self,
        path: &Path,
        with_anchor: bool,
        f: &mut dyn FnMut(&str, &str, &str),
    ) -> Result<()> {
        self.scan_rows(path, with_anchor, &mut |_| true, f)
    }

    /// [`Self::scan_all`], but a `parse_data` page's edges only when `keep(page)`
    /// (called for every row, a page without links too).
    fn scan_rows(
        &self,
        path: &Path,
        with_anchor: bool,
        keep: &mut dyn FnMut(&str) -> bool,
        f: &mut dyn FnMut(&str, &str, &str),
    ) -> Result<()> {
        let cols: &[&str] = match (self.kind, with_anchor) {
            (EdgeKind::ParseData, _) => &["url", "outlinks"],
            (EdgeKind::LinkDb, false) => &["url", "from_url"],
            (EdgeKind::LinkDb, true) => &["url", "from_url", "anchor"],
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
                    let anchor = if with_anchor {
                        Some(
                            batch
                                .column(2)
                                .as_string_opt::<i32>()
                                .ok_or_else(|| bad("anchor"))?,
                        )
                    } else {
                        None
                    };
                    for i in 0..batch.num_rows() {
                        let a = anchor.map_or("", |a| a.value(i));
                        f(from.value(i), url.value(i), a);
                    }
                }
                EdgeKind::ParseData => {
                    let list = batch
                        .column(1)
                        .as_list_opt::<i32>()
                        .ok_or_else(|| bad("outlinks"))?;
                    let links = list
                        .values()
                        .as_struct_opt()
                        .ok_or_else(|| bad("outlinks"))?;
                    let targets = links
                        .column_by_name("url")
                        .and_then(|c| c.as_string_opt::<i32>())
                        .ok_or_else(|| bad("outlinks.url"))?;
                    let anchors = if with_anchor {
                        Some(
                            links
                                .column_by_name("anchor")
                                .and_then(|c| c.as_string_opt::<i32>())
                                .ok_or_else(|| bad("outlinks.anchor"))?,
                        )
                    } else {
                        None
                    };
                    let offsets = list.value_offsets();
                    for i in 0..batch.num_rows() {
                        let src = url.value(i);
                        if !keep(src) || list.is_null(i) {
                            continue;
                        }
                        for j in offsets[i] as usize..offsets[i + 1] as usize {
                            let a = anchors.map_or("", |a| a.value(j));
                            f(src, targets.value(j), a);
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// The partition index of a part file (`part-00003.parquet`, `part-00003-x.parquet`:
/// 3; 0 for a name without one).
pub(super) fn file_index(file: &Path) -> usize {
    file.file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("part-"))
        .map(|r| {
            r.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
        })
        .and_then(|d| d.parse().ok())
        .unwrap_or(0)
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
