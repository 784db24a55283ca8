//! updatedb's merge kernel: one crawldb part (streamed as Arrow batches) merged with
//! the segment rows of its partition (streams sorted by URL, see [`crate::crawldb::spill`]).
//!
//! Rows the segment does not mention are passed through as Arrow rows, never decoded;
//! only touched rows are decoded into `CrawlDatum`s, run through the state machine
//! and re-encoded. Each input batch becomes one output batch (an Arrow interleave of
//! the untouched rows and the re-encoded ones), so URL order is kept.

use std::fs::File;
use std::path::Path;

use ::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use arrow::array::{AsArray, RecordBatch, UInt32Array};

use crate::crawldb::state::{self, Ctx, Inlink, Observed, Settle, Unparsed};
use crate::datum::{CrawlDatum, DbStatus};
use crate::error::{Error, Result};
use crate::records::FetchRecord;
use crate::store::parquet::{self, PartWriter};

/// What a segment says about a URL besides its fetch.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum SegRow {
    /// The parse signature.
    Sig(String),
    /// A link or redirect to the URL.
    Link(Inlink),
    /// `updatedb --no-parse`: a successful fetch of the URL (at `fetch_time`) in
    /// `segment` merged without its parse results.
    Unparsed {
        /// The segment.
        segment: String,
        /// The fetch's time.
        fetch_time: i64,
    },
    /// Completing the partially applied `segment`: the URL was fetched there
    /// (`signature` = `None`) or parsed with `signature`.
    Settle {
        /// The segment.
        segment: String,
        /// The parse signature, when this row comes from `crawl_parse`.
        signature: Option<String>,
    },
}

/// A segment row with its key.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Keyed {
    /// The URL (sort key).
    pub url: String,
    /// Its host.
    pub host: String,
    /// The row.
    pub row: SegRow,
}

/// Counts of one merged part.
#[derive(Debug, Default, Clone, Copy)]
pub struct Totals {
    /// Rows written.
    pub rows: u64,
    /// New URLs added.
    pub added: u64,
    /// URLs with a fetch outcome.
    pub fetched: u64,
    /// Rows dropped.
    pub purged: u64,
}

/// A stream of rows with its head row pulled.
struct Peeked<I, T> {
    rows: I,
    head: Option<T>,
}

impl<I: Iterator<Item = Result<T>>, T> Peeked<I, T> {
    fn new(mut rows: I) -> Result<Self> {
        let head = rows.next().transpose()?;
        Ok(Peeked { rows, head })
    }

    /// Moves the rows whose key is `url` (`key` gives a row's) to `out`.
    fn take_while_key(
        &mut self,
        url: &str,
        key: impl Fn(&T) -> &str,
        out: &mut Vec<T>,
    ) -> Result<()> {
        while self.head.as_ref().is_some_and(|r| key(r) == url) {
            let next = self.rows.next().transpose()?;
            if let Some(r) = std::mem::replace(&mut self.head, next) {
                out.push(r);
            }
        }
        Ok(())
    }
}

struct Merger<'a, F, P> {
    fetches: Peeked<F, FetchRecord>,
    parse: Peeked<P, Keyed>,
    ctx: &'a Ctx,
    admit: &'a (dyn Fn(&str) -> bool + Sync),
    totals: Totals,
}

impl<'a, F, P> Merger<'a, F, P>
where
    F: Iterator<Item = Result<FetchRecord>>,
    P: Iterator<Item = Result<Keyed>>,
{
    fn next_key(&self) -> Option<&str> {
        let f = self.fetches.head.as_ref().map(|f| f.url.as_str());
        let p = self.parse.head.as_ref().map(|p| p.url.as_str());
        match (f, p) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Takes every segment row of the smallest pending URL.
    fn take_next(&mut self) -> Result<(String, Vec<FetchRecord>, Vec<Keyed>)> {
        let url = self.next_key().unwrap_or_default().to_string();
        let mut fr = Vec::new();
        self.fetches
            .take_while_key(&url, |f| f.url.as_str(), &mut fr)?;
        let mut pr = Vec::new();
        self.parse
            .take_while_key(&url, |p| p.url.as_str(), &mut pr)?;
        Ok((url, fr, pr))
    }

    fn apply(
        &mut self,
        url: &str,
        old: Option<CrawlDatum>,
        fetches: Vec<FetchRecord>,
        rows: Vec<Keyed>,
    ) -> Option<CrawlDatum> {
        let mut signature = None;
        let mut inlinks = Vec::new();
        let mut unparsed = Vec::new();
        let mut settle: Vec<Settle<'_>> = Vec::new();
        for k in &rows {
            match &k.row {
                SegRow::Sig(s) => signature = Some(s.as_str()),
                SegRow::Link(l) => inlinks.push(l.clone()),
                SegRow::Unparsed {
                    segment,
                    fetch_time,
                } => unparsed.push(Unparsed {
                    segment,
                    fetch_time: *fetch_time,
                }),
                SegRow::Settle { segment, signature } => {
                    match settle.iter_mut().find(|s| s.segment == segment) {
                        Some(s) => s.signature = s.signature.or(signature.as_deref()),
                        None => settle.push(Settle {
                            segment,
                            signature: signature.as_deref(),
                        }),
                    }
                }
            }
        }
        let host = old
            .as_ref()
            .map(|d| d.host.clone())
            .or_else(|| rows.first().map(|r| r.host.clone()))
            .or_else(|| fetches.first().map(|f| f.host.clone()))
            .unwrap_or_default();
        let was_known = old.is_some();
        let fetched = !fetches.is_empty();
        let admit = self.admit;
        let out = state::reduce(
            url,
            &host,
            old,
            Observed {
                fetches: &fetches,
                signature,
                inlinks: &inlinks,
                unparsed: &unparsed,
                settle: &settle,
            },
            self.ctx,
            || admit(url),
        );
        match &out {
            Some(_) => {
                self.totals.rows += 1;
                self.totals.fetched += u64::from(fetched);
                self.totals.added += u64::from(!was_known && !fetched);
            }
            None => self.totals.purged += u64::from(was_known),
        }
        out
    }
}

enum Step {
    Keep(u32),
    Old(Vec<FetchRecord>, Vec<Keyed>),
    New(String, Vec<FetchRecord>, Vec<Keyed>),
}

/// Merges the part at `part` (missing = empty) with `fetches` and `parse` (both
/// sorted by URL, fetches then by fetch time), writing the result to `w`.
/// Slice form of [`merge_sorted`].
pub fn merge_part(
    part: &Path,
    fetches: &[FetchRecord],
    parse: &[Keyed],
    ctx: &Ctx,
    admit: &(dyn Fn(&str) -> bool + Sync),
    w: &mut PartWriter<CrawlDatum>,
) -> Result<Totals> {
    merge_sorted(
        part,
        fetches.iter().cloned().map(Ok),
        parse.iter().cloned().map(Ok),
        ctx,
        admit,
        w,
    )
}

/// Merges the part at `part` (missing = empty) with the streams `fetches` (sorted by
/// URL, then fetch time) and `parse` (sorted by URL; the rows of one URL in the
/// order they apply), writing the result to `w`. Only the segment rows of the
/// crawldb batch being merged are held in memory.
pub fn merge_sorted<F, P>(
    part: &Path,
    fetches: F,
    parse: P,
    ctx: &Ctx,
    admit: &(dyn Fn(&str) -> bool + Sync),
    w: &mut PartWriter<CrawlDatum>,
) -> Result<Totals>
where
    F: Iterator<Item = Result<FetchRecord>>,
    P: Iterator<Item = Result<Keyed>>,
{
    let mut m = Merger {
        fetches: Peeked::new(fetches)?,
        parse: Peeked::new(parse)?,
        ctx,
        admit,
        totals: Totals::default(),
    };
    let mut last_url: Option<String> = None;
    if part.is_file() {
        let schema = CrawlDatum::schema();
        let file = File::open(part).map_err(|e| Error::io(part, e))?;
        let builder =
            ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| Error::parquet(part, e))?;
        let rows = parquet::batch_rows(builder.metadata());
        let reader = builder
            .with_batch_size(rows)
            .build()
            .map_err(|e| Error::parquet(part, e))?;
        for batch in reader {
            let batch = batch.map_err(|e| arrow_err(part, e))?;
            let batch = RecordBatch::try_new(schema.clone(), batch.columns().to_vec())
                .map_err(|e| arrow_err(part, e))?;
            m.merge_batch(part, &batch, &mut last_url, w)?;
        }
    }
    m.write_tail(part, last_url.as_deref(), w)?;
    Ok(m.totals)
}

fn arrow_err(part: &Path, e: arrow::error::ArrowError) -> Error {
    Error::arrow(part.display().to_string(), e)
}

/// The error for a crawldb part whose rows are not strictly sorted by URL.
fn unsorted(part: &Path, url: &str) -> Error {
    Error::crawl_dir(
        part,
        format!(
            "crawldb part is not sorted by url or holds {url} twice; restore crawldb/old or re-create the crawldb"
        ),
    )
}

impl<F, P> Merger<'_, F, P>
where
    F: Iterator<Item = Result<FetchRecord>>,
    P: Iterator<Item = Result<Keyed>>,
{
    /// Merges one crawldb batch (after `last_url`, updated to its last URL) with the
    /// segment rows up to its last URL, writing one output batch: the untouched rows
    /// as they are, interleaved with the re-encoded ones.
    fn merge_batch(
        &mut self,
        part: &Path,
        batch: &RecordBatch,
        last_url: &mut Option<String>,
        w: &mut PartWriter<CrawlDatum>,
    ) -> Result<()> {
        let (plan, touched) = self.plan_batch(part, batch, last_url)?;
        let decoded: Vec<CrawlDatum> = if touched.is_empty() {
            Vec::new()
        } else {
            let t = arrow::compute::take_record_batch(batch, &UInt32Array::from(touched))
                .map_err(|e| arrow_err(part, e))?;
            parquet::from_batch(&t)?
        };
        let mut decoded = decoded.into_iter();
        let mut changed = Vec::new();
        let mut order: Vec<(usize, usize)> = Vec::with_capacity(plan.len());
        for step in plan {
            let out = match step {
                Step::Keep(r) => {
                    self.totals.rows += 1;
                    order.push((0, r as usize));
                    continue;
                }
                Step::Old(fr, pr) => {
                    let old = decoded.next();
                    let url = old.as_ref().map(|d| d.url.clone()).unwrap_or_default();
                    self.apply(&url, old, fr, pr)
                }
                Step::New(url, fr, pr) => self.apply(&url, None, fr, pr),
            };
            if let Some(d) = out {
                order.push((1, changed.len()));
                changed.push(d);
            }
        }
        let fresh = parquet::to_batch(&changed)?;
        let out = arrow::compute::interleave_record_batch(&[batch, &fresh], &order)
            .map_err(|e| arrow_err(part, e))?;
        if out.num_rows() > 0 {
            w.write_batch(&out)?;
        }
        Ok(())
    }

    /// What becomes of each row of a crawldb batch (and of the new URLs between them),
    /// in URL order, with the indices of the rows to decode. Refuses rows not sorted
    /// after `last_url` and each other; sets `last_url` to the batch's last URL.
    fn plan_batch(
        &mut self,
        part: &Path,
        batch: &RecordBatch,
        last_url: &mut Option<String>,
    ) -> Result<(Vec<Step>, Vec<u32>)> {
        let urls = batch
            .column(0)
            .as_string_opt::<i32>()
            .ok_or_else(|| Error::crawl_dir(part, "crawldb part has no utf8 url column"))?;
        let status = batch
            .column(2)
            .as_string_opt::<i32>()
            .ok_or_else(|| Error::crawl_dir(part, "crawldb part has no utf8 status column"))?;
        let gone = DbStatus::DbGone.as_str();
        let mut plan = Vec::with_capacity(batch.num_rows());
        let mut touched: Vec<u32> = Vec::new();
        for r in 0..batch.num_rows() {
            let u = urls.value(r);
            let prev = if r > 0 {
                Some(urls.value(r - 1))
            } else {
                last_url.as_deref()
            };
            if prev.is_some_and(|p| p >= u) {
                return Err(unsorted(part, u));
            }
            while self.next_key().is_some_and(|k| k < u) {
                let (k, fr, pr) = self.take_next()?;
                plan.push(Step::New(k, fr, pr));
            }
            if self.next_key() == Some(u) {
                let (_, fr, pr) = self.take_next()?;
                plan.push(Step::Old(fr, pr));
                touched.push(r as u32);
            } else if self.ctx.cfg.purge_gone && status.value(r) == gone {
                plan.push(Step::Old(Vec::new(), Vec::new()));
                touched.push(r as u32);
            } else {
                plan.push(Step::Keep(r as u32));
            }
        }
        if let Some(n) = batch.num_rows().checked_sub(1) {
            *last_url = Some(urls.value(n).to_string());
        }
        Ok((plan, touched))
    }

    /// Writes the segment rows after the last crawldb row (`last_url`): new URLs.
    fn write_tail(
        &mut self,
        part: &Path,
        last_url: Option<&str>,
        w: &mut PartWriter<CrawlDatum>,
    ) -> Result<()> {
        let mut tail = Vec::new();
        while let Some(k) = self.next_key() {
            if last_url.is_some_and(|l| l >= k) {
                return Err(unsorted(part, k));
            }
            let (k, fr, pr) = self.take_next()?;
            if let Some(d) = self.apply(&k, None, fr, pr) {
                tail.push(d);
            }
            if tail.len() == parquet::ROW_GROUP_ROWS {
                w.write_batch(&parquet::to_batch(&tail)?)?;
                tail.clear();
            }
        }
        if !tail.is_empty() {
            w.write_batch(&parquet::to_batch(&tail)?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::UpdateDbConfig;
    use crate::datum::FetchStatus;

    fn row(url: &str, status: DbStatus) -> CrawlDatum {
        let mut d = CrawlDatum::unfetched(url.into(), "h.test".into(), 0, 100);
        d.status = status;
        d.score = 1.0;
        d
    }

    fn link(url: &str, score: f64) -> Keyed {
        Keyed {
            url: url.into(),
            host: "h.test".into(),
            row: SegRow::Link(Inlink {
                score,
                depth: 1,
                redirect: false,
            }),
        }
    }

    #[test]
    fn merges_keeps_untouched_rows_and_adds_in_order() {
        let t = tempfile::tempdir().unwrap();
        let part = t.path().join("in.parquet");
        let mut w = PartWriter::<CrawlDatum>::create(&part).unwrap();
        for (u, s) in [
            ("http://h.test/a", DbStatus::DbFetched),
            ("http://h.test/c", DbStatus::DbUnfetched),
            ("http://h.test/e", DbStatus::DbGone),
        ] {
            w.push(row(u, s)).unwrap();
        }
        w.finish().unwrap();
        let fetch = FetchRecord {
            url: "http://h.test/c".into(),
            host: "h.test".into(),
            status: FetchStatus::FetchSuccess,
            reason: "ok".into(),
            fetch_time: 1000,
            http_status: Some(200),
            content_type: None,
            content_length: None,
            redirect_target: None,
            etag: None,
            last_modified: None,
            response_time_ms: None,
            score: 1.0,
            depth: 0,
        };
        let parse = vec![
            link("http://h.test/0", 0.5),
            link("http://h.test/b", 0.25),
            link("http://h.test/c", 0.5),
            link("http://h.test/f", 0.75),
        ];
        let cfg = UpdateDbConfig {
            purge_gone: true,
            ..UpdateDbConfig::default()
        };
        let ctx = Ctx::new(&cfg, 0, 5000);
        let out = t.path().join("out.parquet");
        let mut w = PartWriter::<CrawlDatum>::create(&out).unwrap();
        let totals = merge_part(&part, &[fetch], &parse, &ctx, &|_| true, &mut w).unwrap();
        w.finish().unwrap();
        let rows: Vec<CrawlDatum> = parquet::read_part_all(&out).unwrap();
        let urls: Vec<&str> = rows.iter().map(|d| d.url.as_str()).collect();
        assert_eq!(
            urls,
            [
                "http://h.test/0",
                "http://h.test/a",
                "http://h.test/b",
                "http://h.test/c",
                "http://h.test/f"
            ]
        );
        assert_eq!(
            rows[1],
            row("http://h.test/a", DbStatus::DbFetched),
            "untouched row as it was"
        );
        assert_eq!(rows[3].status, DbStatus::DbFetched);
        assert_eq!(rows[3].score, 1.5);
        assert_eq!(rows[4].score, 0.75);
        assert_eq!(
            (totals.rows, totals.added, totals.fetched, totals.purged),
            (5, 3, 1, 1)
        );

        // A part out of order is refused, naming it.
        let bad = t.path().join("bad.parquet");
        let mut w = PartWriter::<CrawlDatum>::create(&bad).unwrap();
        w.push(row("http://h.test/z", DbStatus::DbFetched)).unwrap();
        w.push(row("http://h.test/a", DbStatus::DbFetched)).unwrap();
        w.finish().unwrap();
        let mut w = PartWriter::<CrawlDatum>::create(&t.path().join("o2.parquet")).unwrap();
        let err = merge_part(&bad, &[], &[], &ctx, &|_| true, &mut w)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("bad.parquet") && err.contains("not sorted"),
            "{err}"
        );
    }
}
