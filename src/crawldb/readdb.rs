//! `readdb`: statistics, single records, dumps and top lists of the crawldb.
//! Every mode streams the parts; only the score column is held for quantiles.

use std::collections::{BTreeMap, BinaryHeap, HashSet};
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use regex::Regex;

use crate::crawldb::current_part;
use crate::crawldb::stream::DatumStream;
use crate::datum::{CrawlDatum, DbStatus, Millis, format_millis};
use crate::error::{Error, IoContext, Result};
use crate::stage::{Report, StageCtx};
use crate::store::layout::CrawlDir;
use crate::store::parquet::PartWriter;

/// What readdb prints.
#[derive(Debug, Clone)]
pub enum Query {
    /// Statistics (`--stats`), per host (`--per-host`), as JSON (`--json`) or text.
    Stats {
        /// With per-host status counts.
        per_host: bool,
        /// JSON instead of text.
        json: bool,
    },
    /// The record of one URL as JSON (`--url`).
    Url(String),
    /// Rows (`--dump`) in `format`, those `filter` keeps, to the output or to `file`.
    Dump {
        /// The dump format.
        format: Format,
        /// Which rows.
        filter: Filter,
        /// The file to write instead of the output (`--out`; required for Parquet).
        file: Option<PathBuf>,
    },
    /// The N highest-scoring rows as jsonl (`--top`).
    Top(usize),
}

/// Options of one readdb run.
#[derive(Debug, Clone)]
pub struct ReaddbOpts {
    /// What to print.
    pub query: Query,
}

/// What readdb printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReaddbReport {
    /// Statistics of this many URLs and hosts.
    Stats {
        /// URLs.
        urls: u64,
        /// Hosts.
        hosts: u64,
    },
    /// The record of the URL asked for.
    Record,
    /// The URL asked for is not in the crawldb (nothing printed; the binary ends with
    /// [`crate::cli::exit::ERROR`]).
    Missing(String),
    /// This many rows dumped.
    Dumped(u64),
    /// This many top rows.
    Top(usize),
}

impl fmt::Display for ReaddbReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReaddbReport::Stats { urls, hosts } => write!(f, "{urls} urls, {hosts} hosts"),
            ReaddbReport::Record => f.write_str("1 record"),
            ReaddbReport::Missing(url) => write!(f, "{url} is not in the crawldb"),
            ReaddbReport::Dumped(n) => write!(f, "{n} rows dumped"),
            ReaddbReport::Top(n) => write!(f, "top {n} rows"),
        }
    }
}

impl Report for ReaddbReport {
    const STAGE: &'static str = "readdb";
}

/// Runs readdb on the crawl directory of `ctx` (which must hold a crawldb): prints what
/// `opts.query` asks for to `out` (flushed), or to the `--out` file of a dump.
pub fn run(ctx: &StageCtx, opts: &ReaddbOpts, out: &mut impl Write) -> Result<ReaddbReport> {
    let dir = ctx.open_existing()?;
    let out_err = |e: std::io::Error| Error::io("<output>", e);
    let report = match &opts.query {
        Query::Stats { per_host, json } => {
            let st = stats(&dir, *per_host)?;
            if *json {
                serde_json::to_writer_pretty(&mut *out, &st)
                    .map_err(|e| Error::input("<output>", e.to_string()))?;
                writeln!(out).map_err(out_err)?;
            } else {
                print_stats(&st, out).map_err(out_err)?;
            }
            ReaddbReport::Stats {
                urls: st.urls,
                hosts: st.hosts,
            }
        }
        Query::Url(url) => match lookup(&dir, url)? {
            Some(d) => {
                serde_json::to_writer_pretty(&mut *out, &d)
                    .map_err(|e| Error::input(url, e.to_string()))?;
                writeln!(out).map_err(out_err)?;
                ReaddbReport::Record
            }
            None => ReaddbReport::Missing(url.clone()),
        },
        Query::Dump {
            format,
            filter,
            file,
        } => ReaddbReport::Dumped(match (file, format) {
            (Some(p), Format::Parquet) => dump(&dir, *format, filter, out, Some(p))?,
            (Some(p), _) => {
                let f = std::fs::File::create(p)
                    .map_err(|e| Error::input(format!("--out {}", p.display()), e.to_string()))?;
                dump(&dir, *format, filter, &mut std::io::BufWriter::new(f), None)?
            }
            (None, _) => dump(&dir, *format, filter, out, None)?,
        }),
        Query::Top(n) => {
            let rows = top(&dir, *n)?;
            for d in &rows {
                serde_json::to_writer(&mut *out, d)
                    .map_err(|e| Error::input(&d.url, e.to_string()))?;
                writeln!(out).map_err(out_err)?;
            }
            ReaddbReport::Top(rows.len())
        }
    };
    out.flush().map_err(out_err)?;
    Ok(report)
}

/// Streams every row of the current crawldb through `f`, part by part.
pub fn for_each(dir: &CrawlDir, mut f: impl FnMut(CrawlDatum) -> Result<()>) -> Result<()> {
    let n = dir.crawldb_meta()?.partitions;
    for i in 0..n {
        let mut s = DatumStream::open(&current_part(dir, i))?;
        while let Some(d) = s.next_row()? {
            f(d)?;
        }
    }
    Ok(())
}

/// Crawldb statistics.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Stats {
    /// Rows.
    pub urls: u64,
    /// Rows per status.
    pub by_status: BTreeMap<String, u64>,
    /// Distinct hosts.
    pub hosts: u64,
    /// Score minimum, mean, maximum.
    pub score_min: f64,
    /// Mean score.
    pub score_avg: f64,
    /// Maximum score.
    pub score_max: f64,
    /// Score quantiles (p10, p25, p50, p75, p90, p99).
    pub score_quantiles: Vec<(String, f64)>,
    /// Earliest and latest fetch_time.
    pub fetch_time_min: Option<Millis>,
    /// Latest fetch_time.
    pub fetch_time_max: Option<Millis>,
    /// Rows per fetch interval (seconds).
    pub intervals: BTreeMap<i64, u64>,
    /// Rows per retry count.
    pub retries: BTreeMap<i32, u64>,
    /// Rows per depth.
    pub depths: BTreeMap<i32, u64>,
    /// Bytes of the crawldb's part files on disk (`crawldb/current/`, compressed
    /// Parquet; `crawldb/old/`, the previous version, takes about as much again).
    pub disk_bytes: u64,
    /// `disk_bytes` per URL.
    pub bytes_per_url: f64,
    /// Per host: rows per status (only with `per_host`).
    pub per_host: BTreeMap<String, BTreeMap<String, u64>>,
}

/// Computes statistics; `per_host` adds a per-host status table.
pub fn stats(dir: &CrawlDir, per_host: bool) -> Result<Stats> {
    let mut st = Stats::default();
    let mut scores = Vec::new();
    let mut hosts: HashSet<String> = HashSet::new();
    for_each(dir, |d| {
        st.urls += 1;
        *st.by_status.entry(d.status.to_string()).or_default() += 1;
        scores.push(d.score);
        st.fetch_time_min = Some(
            st.fetch_time_min
                .map_or(d.fetch_time, |m| m.min(d.fetch_time)),
        );
        st.fetch_time_max = Some(
            st.fetch_time_max
                .map_or(d.fetch_time, |m| m.max(d.fetch_time)),
        );
        *st.intervals.entry(d.fetch_interval).or_default() += 1;
        *st.retries.entry(d.retries).or_default() += 1;
        *st.depths.entry(d.depth).or_default() += 1;
        if per_host {
            *st.per_host
                .entry(d.host.clone())
                .or_default()
                .entry(d.status.to_string())
                .or_default() += 1;
        }
        if !hosts.contains(&d.host) {
            hosts.insert(d.host);
        }
        Ok(())
    })?;
    st.hosts = hosts.len() as u64;
    st.disk_bytes = crate::store::disk::dataset_bytes(&dir.crawldb_current())?;
    if st.urls > 0 {
        st.bytes_per_url = st.disk_bytes as f64 / st.urls as f64;
    }
    if !scores.is_empty() {
        scores.sort_unstable_by(f64::total_cmp);
        st.score_min = scores[0];
        st.score_max = scores[scores.len() - 1];
        st.score_avg = scores.iter().sum::<f64>() / scores.len() as f64;
        for (name, q) in [
            ("p10", 0.10),
            ("p25", 0.25),
            ("p50", 0.5),
            ("p75", 0.75),
            ("p90", 0.9),
            ("p99", 0.99),
        ] {
            let idx = ((scores.len() - 1) as f64 * q).round() as usize;
            st.score_quantiles.push((name.to_string(), scores[idx]));
        }
    }
    Ok(st)
}

/// Writes stats as text.
pub fn print_stats(st: &Stats, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(out, "urls\t{}", st.urls)?;
    writeln!(out, "hosts\t{}", st.hosts)?;
    writeln!(out, "disk bytes\t{}", st.disk_bytes)?;
    writeln!(out, "disk bytes per url\t{:.1}", st.bytes_per_url)?;
    for s in DbStatus::ALL {
        writeln!(
            out,
            "status {}\t{}",
            s,
            st.by_status.get(s.as_str()).copied().unwrap_or(0)
        )?;
    }
    if st.urls > 0 {
        writeln!(
            out,
            "score min/avg/max\t{:.6}\t{:.6}\t{:.6}",
            st.score_min, st.score_avg, st.score_max
        )?;
        for (q, v) in &st.score_quantiles {
            writeln!(out, "score {q}\t{v:.6}")?;
        }
    }
    if let (Some(a), Some(b)) = (st.fetch_time_min, st.fetch_time_max) {
        writeln!(
            out,
            "fetch_time min/max\t{}\t{}",
            format_millis(a),
            format_millis(b)
        )?;
    }
    for (i, c) in &st.intervals {
        writeln!(out, "fetch_interval {i}s\t{c}")?;
    }
    for (r, c) in &st.retries {
        writeln!(out, "retries {r}\t{c}")?;
    }
    for (d, c) in &st.depths {
        writeln!(out, "depth {d}\t{c}")?;
    }
    for (h, m) in &st.per_host {
        let cols: Vec<String> = m.iter().map(|(k, v)| format!("{k}={v}")).collect();
        writeln!(out, "host {h}\t{}", cols.join("\t"))?;
    }
    Ok(())
}

/// The record of one URL, reading only its host's part.
pub fn lookup(dir: &CrawlDir, url: &str) -> Result<Option<CrawlDatum>> {
    let pt = dir.crawldb_meta()?.partitioner();
    let mut s = DatumStream::open(&current_part(dir, pt.of_url(url)))?;
    while let Some(u) = s.peek_url() {
        if u > url {
            break;
        }
        if let Some(d) = s.next_row()?
            && d.url == url
        {
            return Ok(Some(d));
        }
    }
    Ok(None)
}

/// Dump formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One JSON object per line.
    Jsonl,
    /// CSV with a header (metadata as a JSON object).
    Csv,
    /// Parquet with the crawldb schema (needs --out).
    Parquet,
}

/// Dump filters.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only this status.
    pub status: Option<DbStatus>,
    /// Only URLs matching.
    pub regex: Option<Regex>,
}

impl Filter {
    fn keep(&self, d: &CrawlDatum) -> bool {
        self.status.is_none_or(|s| s == d.status)
            && self.regex.as_ref().is_none_or(|r| r.is_match(&d.url))
    }
}

const CSV_HEADER: &str = "url,host,status,fetch_time,modified_time,fetched_time,fetch_interval,retries,score,signature,depth,http_status,content_type,reason,redirect_target,metadata";

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn csv_line(d: &CrawlDatum) -> String {
    let o = |v: Option<String>| v.unwrap_or_default();
    let t = |v: Option<Millis>| v.map(format_millis).unwrap_or_default();
    let meta = serde_json::to_string(&d.metadata).unwrap_or_default();
    [
        d.url.clone(),
        d.host.clone(),
        d.status.to_string(),
        format_millis(d.fetch_time),
        t(d.modified_time),
        t(d.fetched_time),
        d.fetch_interval.to_string(),
        d.retries.to_string(),
        d.score.to_string(),
        o(d.signature.clone()),
        d.depth.to_string(),
        o(d.http_status.map(|s| s.to_string())),
        o(d.content_type.clone()),
        o(d.reason.clone()),
        o(d.redirect_target.clone()),
        meta,
    ]
    .iter()
    .map(|s| csv_field(s))
    .collect::<Vec<_>>()
    .join(",")
}

/// Dumps matching rows to `out` (or to the Parquet file `parquet_out`). Returns rows written.
pub fn dump(
    dir: &CrawlDir,
    format: Format,
    filter: &Filter,
    out: &mut impl Write,
    parquet_out: Option<&Path>,
) -> Result<u64> {
    let mut n = 0u64;
    let stdout_err = |e: std::io::Error| Error::io("<output>", e);
    match format {
        Format::Parquet => {
            let path = parquet_out.ok_or_else(|| {
                Error::input("--format parquet", "needs --out FILE (Parquet is binary)")
            })?;
            let mut w = PartWriter::<CrawlDatum>::create(path)?;
            for_each(dir, |d| {
                if filter.keep(&d) {
                    n += 1;
                    w.push(d)?;
                }
                Ok(())
            })?;
            w.finish()?;
        }
        Format::Jsonl | Format::Csv => {
            if format == Format::Csv {
                writeln!(out, "{CSV_HEADER}").map_err(stdout_err)?;
            }
            for_each(dir, |d| {
                if filter.keep(&d) {
                    n += 1;
                    let line = if format == Format::Csv {
                        csv_line(&d)
                    } else {
                        serde_json::to_string(&d)
                            .map_err(|e| Error::input(&d.url, e.to_string()))?
                    };
                    writeln!(out, "{line}").map_err(stdout_err)?;
                }
                Ok(())
            })?;
        }
    }
    out.flush().at("<output>")?;
    Ok(n)
}

struct ByScore(CrawlDatum);
impl PartialEq for ByScore {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == std::cmp::Ordering::Equal
    }
}
impl Eq for ByScore {}
impl PartialOrd for ByScore {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for ByScore {
    // Worst (lowest score, then largest url) is greatest: a max-heap evicts it.
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        o.0.score
            .total_cmp(&self.0.score)
            .then_with(|| self.0.url.cmp(&o.0.url))
    }
}

/// The `n` highest-scoring rows, best first (ties by url).
pub fn top(dir: &CrawlDir, n: usize) -> Result<Vec<CrawlDatum>> {
    let mut heap = BinaryHeap::new();
    for_each(dir, |d| {
        heap.push(ByScore(d));
        if heap.len() > n {
            heap.pop();
        }
        Ok(())
    })?;
    Ok(heap.into_sorted_vec().into_iter().map(|b| b.0).collect())
}
