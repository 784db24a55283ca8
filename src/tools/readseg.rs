//! `readseg`: what segments hold. `list` summarizes each segment from its
//! `_meta.json` and `crawl_fetch` (status counts, content bytes, fetch time range,
//! datasets present); `dump` writes a segment's datasets (or one URL's rows across
//! them) as JSON lines through Arrow's JSON writer.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use serde::Serialize;

use crate::datum::{CrawlDatum, FetchStatus};
use crate::datum::{Millis, format_millis};
use crate::error::{Error, Result};
use crate::records::{
    ContentRecord, CrawlParseRecord, FetchRecord, ParseDataRecord, ParseTextRecord,
};
use crate::stage::{Report, StageCtx};
use crate::store::layout::CrawlDir;
use crate::store::layout::SEGMENT_DATASETS;
use crate::store::layout::Segment;
use crate::store::names::SegmentDataset;
use crate::store::parquet::{Record, part_files, part_name, read_batches, read_part};

/// The summary of one segment.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SegmentSummary {
    /// The segment's name.
    pub name: String,
    /// URLs in the fetch list (from `_meta.json`).
    pub generated: u64,
    /// When generate created it (ms UTC).
    pub generated_time: Millis,
    /// `crawl_fetch` rows.
    pub fetched_rows: u64,
    /// Fetches that got the page (`fetch_success`, `fetch_notmodified`).
    pub succeeded: u64,
    /// Fetches that failed (`fetch_gone`: 4xx, robots denial, ...; `fetch_retry`:
    /// timeouts, 5xx, connection errors); redirects count in neither.
    pub failed: u64,
    /// `crawl_fetch` rows per fetch status (`fetch_success`, `fetch_gone`, ...).
    pub by_status: BTreeMap<String, u64>,
    /// `crawl_fetch` rows per reason (`ok`, `http_404`, `robots_denied`, ...).
    pub by_reason: BTreeMap<String, u64>,
    /// Bytes of content kept (sum of `crawl_fetch.content_length`).
    pub content_bytes: u64,
    /// Earliest fetch time.
    pub fetch_time_min: Option<Millis>,
    /// Latest fetch time.
    pub fetch_time_max: Option<Millis>,
    /// The complete datasets of the segment, in stage order.
    pub datasets: Vec<String>,
    /// Bytes of the segment's files on disk (every dataset, compressed).
    pub disk_bytes: u64,
    /// `disk_bytes` per `crawl_fetch` row (0 before fetch).
    pub disk_bytes_per_fetched: f64,
    /// For a segment written by `mergesegs`: every segment whose data it holds
    /// (`_merged.json`); empty otherwise.
    pub merged_from: Vec<String>,
}

/// Summarizes every segment of the crawl directory, oldest first.
pub fn list(dir: &CrawlDir) -> Result<Vec<SegmentSummary>> {
    dir.segments()?.iter().map(summarize).collect()
}

/// Summarizes one segment.
pub fn summarize(seg: &Segment) -> Result<SegmentSummary> {
    let meta = seg.meta()?;
    let mut s = SegmentSummary {
        name: seg.name().to_string(),
        generated: meta.urls,
        generated_time: meta.generated_time,
        datasets: SEGMENT_DATASETS
            .iter()
            .filter(|d| seg.has(**d))
            .map(|d| d.to_string())
            .collect(),
        disk_bytes: super::segstate::disk_bytes(seg.path()),
        merged_from: super::mergesegs::provenance(seg)?
            .map(|p| p.merged_from)
            .unwrap_or_default(),
        ..SegmentSummary::default()
    };
    if seg.has(SegmentDataset::CrawlFetch) {
        for part in part_files(&seg.dataset(SegmentDataset::CrawlFetch))? {
            for rows in read_part::<FetchRecord>(&part)? {
                for r in rows? {
                    s.fetched_rows += 1;
                    match r.status {
                        FetchStatus::FetchSuccess | FetchStatus::FetchNotmodified => {
                            s.succeeded += 1
                        }
                        FetchStatus::FetchGone | FetchStatus::FetchRetry => s.failed += 1,
                        FetchStatus::FetchRedirTemp | FetchStatus::FetchRedirPerm => {}
                    }
                    *s.by_status
                        .entry(r.status.as_str().to_string())
                        .or_default() += 1;
                    *s.by_reason.entry(r.reason.clone()).or_default() += 1;
                    s.content_bytes += r.content_length.unwrap_or(0).max(0) as u64;
                    s.fetch_time_min = Some(
                        s.fetch_time_min
                            .map_or(r.fetch_time, |m| m.min(r.fetch_time)),
                    );
                    s.fetch_time_max = Some(
                        s.fetch_time_max
                            .map_or(r.fetch_time, |m| m.max(r.fetch_time)),
                    );
                }
            }
        }
    }
    if s.fetched_rows > 0 {
        s.disk_bytes_per_fetched = s.disk_bytes as f64 / s.fetched_rows as f64;
    }
    Ok(s)
}

/// Prints summaries as a table.
pub fn print_list(rows: &[SegmentSummary], out: &mut impl Write) -> Result<()> {
    let io = |e| Error::io("<stdout>", e);
    writeln!(
        out,
        "{:<14}  {:>9}  {:>9}  {:>9}  {:>9}  {:>12}  {:>12}  {:>9}  {:<20}  {:<20}  statuses / datasets",
        "segment",
        "generated",
        "fetched",
        "ok",
        "failed",
        "bytes",
        "disk",
        "disk/url",
        "first fetch",
        "last fetch"
    )
    .map_err(io)?;
    for s in rows {
        let t = |m: Option<Millis>| m.map(format_millis).unwrap_or_else(|| "-".into());
        let statuses: Vec<String> = s
            .by_status
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        writeln!(
            out,
            "{:<14}  {:>9}  {:>9}  {:>9}  {:>9}  {:>12}  {:>12}  {:>9.0}  {:<20}  {:<20}  {} / {}",
            s.name,
            s.generated,
            s.fetched_rows,
            s.succeeded,
            s.failed,
            s.content_bytes,
            s.disk_bytes,
            s.disk_bytes_per_fetched,
            t(s.fetch_time_min),
            t(s.fetch_time_max),
            if statuses.is_empty() {
                "-".into()
            } else {
                statuses.join(" ")
            },
            s.datasets.join(",")
        )
        .map_err(io)?;
    }
    Ok(())
}

/// What `dump` writes.
#[derive(Debug, Clone, Default)]
pub struct DumpOpts {
    /// Only these datasets (default: every complete one, in stage order).
    pub datasets: Vec<String>,
    /// Only rows whose `url` column is this URL.
    pub url: Option<String>,
    /// Only these columns (plus `dataset`), in this order; a column missing from a
    /// dataset is left out of its rows.
    pub columns: Vec<String>,
}

/// Dumps a segment's datasets as JSON lines, each row with a leading `dataset`
/// field. Binary columns (`content`) are hex; timestamps are ISO 8601 UTC.
/// Returns the number of rows written.
pub fn dump(seg: &Segment, opts: &DumpOpts, out: &mut impl Write) -> Result<u64> {
    let datasets: Vec<SegmentDataset> = if opts.datasets.is_empty() {
        SEGMENT_DATASETS
            .into_iter()
            .filter(|d| seg.has(*d))
            .collect()
    } else {
        let mut chosen = Vec::new();
        for name in &opts.datasets {
            let Some(d) = SegmentDataset::parse(name) else {
                return Err(Error::input(
                    "--dataset",
                    format!(
                        "unknown dataset {name:?}; one of {}",
                        SEGMENT_DATASETS.map(SegmentDataset::as_str).join(", ")
                    ),
                ));
            };
            if seg.pruned(d) {
                return Err(Error::crawl_dir(
                    seg.path(),
                    format!(
                        "segment {}: its {d}/ was pruned by prunesegs; it cannot be dumped (datasets present: {})",
                        seg.name(),
                        present(seg)
                    ),
                ));
            }
            if !seg.has(d) {
                return Err(Error::crawl_dir(
                    seg.path(),
                    format!(
                        "segment has no complete {d}/ (datasets present: {})",
                        present(seg)
                    ),
                ));
            }
            chosen.push(d);
        }
        chosen
    };
    check_columns(&datasets, &opts.columns)?;
    let mut writer = arrow::json::LineDelimitedWriter::new(&mut *out);
    let mut n = 0u64;
    for &dataset in &datasets {
        let name = dataset.as_str();
        for part in parts_to_read(seg, dataset, opts.url.as_deref())? {
            let ctx = part.display().to_string();
            for batch in read_batches(&part)? {
                let batch = batch?;
                let batch = match &opts.url {
                    // robots/ rows are per origin: the URL's origin's row.
                    Some(u) if dataset == SegmentDataset::Robots => match url::Url::parse(u) {
                        Ok(parsed) => filter_column(
                            &batch,
                            "origin",
                            &crate::net::robots::origin_of(&parsed),
                            &ctx,
                        )?,
                        Err(_) => batch.slice(0, 0),
                    },
                    Some(u) => filter_url(&batch, u, &ctx)?,
                    None => batch,
                };
                if batch.num_rows() == 0 {
                    continue;
                }
                let batch = shape(&batch, name, &opts.columns, &ctx)?;
                writer.write(&batch).map_err(|e| Error::arrow(&ctx, e))?;
                n += batch.num_rows() as u64;
            }
        }
    }
    writer.finish().map_err(|e| Error::arrow("<stdout>", e))?;
    Ok(n)
}

/// The schema of a segment dataset.
fn dataset_schema(dataset: SegmentDataset) -> SchemaRef {
    match dataset {
        SegmentDataset::CrawlGenerate => CrawlDatum::schema(),
        SegmentDataset::CrawlFetch => FetchRecord::schema(),
        SegmentDataset::Content => ContentRecord::schema(),
        SegmentDataset::ParseText => ParseTextRecord::schema(),
        SegmentDataset::ParseData => ParseDataRecord::schema(),
        SegmentDataset::CrawlParse => CrawlParseRecord::schema(),
        SegmentDataset::ParseInlinks => crate::records::InlinkRecord::schema(),
        SegmentDataset::Robots => crate::net::robots::RobotsRecord::schema(),
    }
}

/// Fails when a requested column is in none of the datasets dumped.
fn check_columns(datasets: &[SegmentDataset], columns: &[String]) -> Result<()> {
    let schemas: Vec<SchemaRef> = datasets.iter().map(|d| dataset_schema(*d)).collect();
    for c in columns {
        if !schemas.iter().any(|s| s.index_of(c).is_ok()) {
            let mut all: Vec<String> = Vec::new();
            for s in &schemas {
                for f in s.fields() {
                    if !all.contains(f.name()) {
                        all.push(f.name().clone());
                    }
                }
            }
            return Err(Error::input(
                "--columns",
                format!(
                    "no column {c:?} in {}; columns: {}",
                    datasets
                        .iter()
                        .map(|d| d.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    all.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

fn present(seg: &Segment) -> String {
    let d: Vec<&str> = SEGMENT_DATASETS
        .into_iter()
        .filter(|d| seg.has(*d))
        .map(SegmentDataset::as_str)
        .collect();
    if d.is_empty() {
        "none".into()
    } else {
        d.join(", ")
    }
}

/// The part files that can hold `url`'s rows (its host's partition), or all parts.
fn parts_to_read(
    seg: &Segment,
    dataset: SegmentDataset,
    url: Option<&str>,
) -> Result<Vec<std::path::PathBuf>> {
    let all = part_files(&seg.dataset(dataset))?;
    let (Some(url), Ok(meta)) = (url, seg.meta()) else {
        return Ok(all);
    };
    if meta.partitions == 0 {
        return Ok(all);
    }
    let want = part_name(meta.partitioner().of_url(url));
    let one: Vec<_> = all
        .iter()
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy() == want))
        .cloned()
        .collect();
    Ok(if one.is_empty() { all } else { one })
}

fn filter_url(batch: &RecordBatch, url: &str, ctx: &str) -> Result<RecordBatch> {
    filter_column(batch, "url", url, ctx)
}

/// The rows whose string column `column` is `value` (none when there is no such column).
fn filter_column(batch: &RecordBatch, column: &str, value: &str, ctx: &str) -> Result<RecordBatch> {
    let Some(col) = batch.column_by_name(column) else {
        return Ok(batch.slice(0, 0));
    };
    let Some(urls) = col.as_any().downcast_ref::<StringArray>() else {
        return Err(Error::arrow(
            ctx,
            format!("column {column} is not a string"),
        ));
    };
    let mask: BooleanArray = urls.iter().map(|u| Some(u == Some(value))).collect();
    arrow::compute::filter_record_batch(batch, &mask).map_err(|e| Error::arrow(ctx, e.to_string()))
}

/// Projects `columns` (when given) and prepends the `dataset` column.
fn shape(batch: &RecordBatch, dataset: &str, columns: &[String], ctx: &str) -> Result<RecordBatch> {
    let mut fields = vec![Field::new("dataset", DataType::Utf8, false)];
    let mut arrays: Vec<ArrayRef> =
        vec![Arc::new(StringArray::from(vec![dataset; batch.num_rows()]))];
    let schema = batch.schema();
    let picked: Vec<usize> = if columns.is_empty() {
        (0..schema.fields().len()).collect()
    } else {
        columns
            .iter()
            .filter_map(|c| schema.index_of(c).ok())
            .collect()
    };
    for idx in picked {
        let (field, array) = utc_offset(schema.field(idx), batch.column(idx), ctx)?;
        fields.push(field);
        arrays.push(array);
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
        .map_err(|e| Error::arrow(ctx, e.to_string()))
}

/// Timestamp columns with the zone name `UTC` re-labelled `+00:00` (the same
/// instants): Arrow's JSON writer formats only offset zones without chrono-tz.
fn utc_offset(field: &Field, array: &ArrayRef, ctx: &str) -> Result<(Field, ArrayRef)> {
    match field.data_type() {
        DataType::Timestamp(unit, Some(_)) => {
            let to = DataType::Timestamp(*unit, Some("+00:00".into()));
            let cast = arrow::compute::cast(array, &to).map_err(|e| Error::arrow(ctx, e))?;
            Ok((field.clone().with_data_type(to), cast))
        }
        _ => Ok((field.clone(), array.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch() -> RecordBatch {
        let schema = Schema::new(vec![
            Field::new("url", DataType::Utf8, false),
            Field::new("n", DataType::Int32, false),
        ]);
        RecordBatch::try_new(
            Arc::new(schema),
            vec![
                Arc::new(StringArray::from(vec![
                    "http://a/",
                    "http://b/",
                    "http://a/",
                ])),
                Arc::new(arrow::array::Int32Array::from(vec![1, 2, 3])),
            ],
        )
        .unwrap()
    }

    #[test]
    fn filter_keeps_one_urls_rows() {
        let b = filter_url(&batch(), "http://a/", "t").unwrap();
        assert_eq!(b.num_rows(), 2);
        assert_eq!(
            filter_url(&batch(), "http://c/", "t").unwrap().num_rows(),
            0
        );
    }

    #[test]
    fn unknown_columns_are_named_with_the_choices() {
        let ds = vec![SegmentDataset::CrawlFetch];
        assert!(check_columns(&ds, &["url".into(), "reason".into()]).is_ok());
        let e = check_columns(&ds, &["nope".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("nope") && e.contains("http_status"), "{e}");
    }

    #[test]
    fn shape_projects_and_prepends_dataset() {
        let cols = vec!["n".to_string(), "nope".to_string()];
        let b = shape(&batch(), "content", &cols, "t").unwrap();
        let names: Vec<&String> = b.schema_ref().fields().iter().map(|f| f.name()).collect();
        assert_eq!(names, ["dataset", "n"]);
        let mut buf = Vec::new();
        let mut w = arrow::json::LineDelimitedWriter::new(&mut buf);
        w.write(&b).unwrap();
        w.finish().unwrap();
        assert!(
            String::from_utf8(buf)
                .unwrap()
                .starts_with("{\"dataset\":\"content\",\"n\":1}\n")
        );
    }
}

/// What `readseg` does.
#[derive(Debug, Clone)]
pub enum ReadSegOpts {
    /// List the segments with their statistics (`json`: as JSON lines, else a table).
    List {
        /// JSON lines instead of a table.
        json: bool,
    },
    /// Dump a segment's datasets as JSON lines.
    Dump {
        /// The segment (a name under `segments/` or a path).
        segment: std::path::PathBuf,
        /// What to dump.
        dump: DumpOpts,
    },
}

/// What a `readseg` run wrote.
#[derive(Debug, Clone)]
pub enum ReadSegReport {
    /// The number of segments listed.
    Listed(usize),
    /// The segment dumped and the rows written.
    Dumped {
        /// The segment's name.
        segment: String,
        /// Rows written.
        rows: u64,
    },
}

impl fmt::Display for ReadSegReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadSegReport::Listed(n) => write!(f, "{n} segments"),
            ReadSegReport::Dumped { segment, rows } => {
                write!(f, "segment {segment}: {rows} rows dumped")
            }
        }
    }
}

impl Report for ReadSegReport {
    const STAGE: &'static str = "readseg";
}

/// Runs `readseg` on the crawl directory of `ctx` (which must exist), writing the
/// listing or the dump to `out`.
pub fn run(ctx: &StageCtx, opts: &ReadSegOpts, out: &mut impl Write) -> Result<ReadSegReport> {
    let dir = ctx.open_for_segments()?;
    match opts {
        ReadSegOpts::List { json } => {
            let rows = list(&dir)?;
            if *json {
                for r in &rows {
                    serde_json::to_writer(&mut *out, r)
                        .map_err(|e| Error::input("<stdout>", e.to_string()))?;
                    writeln!(out).map_err(|e| Error::io("<stdout>", e))?;
                }
            } else {
                print_list(&rows, out)?;
            }
            Ok(ReadSegReport::Listed(rows.len()))
        }
        ReadSegOpts::Dump { segment, dump: d } => {
            let seg = dir.segment(segment)?;
            let rows = dump(&seg, d, out)?;
            Ok(ReadSegReport::Dumped {
                segment: seg.name().to_string(),
                rows,
            })
        }
    }
}
