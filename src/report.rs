//! `report`: `crawl/report.html`, one self-contained page (inline SVG charts, no
//! script, nothing fetched) that shows a crawl: per round (segment) the URLs fetched,
//! failed, gone and redirected and the new URLs, the crawldb's statuses, the top
//! hosts, response-time and page-size distributions and the crawl depth.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use crate::datum::{CrawlDatum, FetchStatus};
use crate::error::Result;
use crate::index::search::escape_into;
use crate::records::FetchRecord;
use crate::stage::{Report, StageCtx};
use crate::store::names::SegmentDataset;
use crate::store::parquet;

/// Where the page goes (default `<crawl>/report.html`).
#[derive(Debug, Clone, Default)]
pub struct ReportOpts {
    /// The output file.
    pub out: Option<PathBuf>,
}

/// What was written.
#[derive(Debug, Clone)]
pub struct ReportReport {
    /// The page.
    pub path: PathBuf,
    /// Rounds (segments) shown.
    pub rounds: usize,
    /// URLs in the crawldb.
    pub urls: u64,
    /// Charts drawn.
    pub charts: usize,
}

impl std::fmt::Display for ReportReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} rounds, {} urls, {} charts -> {}",
            self.rounds,
            self.urls,
            self.charts,
            self.path.display()
        )
    }
}

impl Report for ReportReport {
    const STAGE: &'static str = "report";
}

/// One round: a segment's fetch outcomes.
#[derive(Debug, Default, Clone)]
struct Round {
    name: String,
    fetched: f64,
    failed: f64,
    gone: f64,
    redirects: f64,
    new_urls: Option<f64>,
}

/// Response-time buckets (ms, upper bounds) and page-size buckets (bytes).
const TIME_BUCKETS: &[(i64, &str)] = &[
    (10, "< 10 ms"),
    (50, "10-50 ms"),
    (100, "50-100 ms"),
    (500, "100-500 ms"),
    (1000, "0.5-1 s"),
    (5000, "1-5 s"),
    (i64::MAX, "> 5 s"),
];
const SIZE_BUCKETS: &[(i64, &str)] = &[
    (1 << 10, "< 1 KB"),
    (10 << 10, "1-10 KB"),
    (100 << 10, "10-100 KB"),
    (1 << 20, "100 KB-1 MB"),
    (i64::MAX, "> 1 MB"),
];

fn bucket(v: i64, buckets: &[(i64, &str)]) -> usize {
    buckets
        .iter()
        .position(|(max, _)| v < *max)
        .unwrap_or(buckets.len() - 1)
}

/// Writes the report.
pub fn run(ctx: &StageCtx, opts: &ReportOpts) -> Result<ReportReport> {
    let dir = ctx.open_existing()?;
    // The crawldb: statuses, depths, fetched pages per host.
    let mut statuses: BTreeMap<String, f64> = BTreeMap::new();
    let mut depths: BTreeMap<i32, f64> = BTreeMap::new();
    let mut host_pages: BTreeMap<String, f64> = BTreeMap::new();
    let mut urls = 0u64;
    for file in parquet::part_files(&dir.crawldb_current())? {
        for batch in parquet::read_part::<CrawlDatum>(&file)? {
            for d in batch? {
                urls += 1;
                *statuses.entry(d.status.as_str().to_string()).or_default() += 1.0;
                *depths.entry(d.depth).or_default() += 1.0;
                if matches!(d.status.as_str(), "db_fetched" | "db_notmodified") {
                    *host_pages.entry(d.host).or_default() += 1.0;
                }
            }
        }
    }
    // The rounds: one per fetched segment; new URLs from the crawl driver's journal.
    let journal = crate::driver::journal::Journal::load(&dir.crawl_journal()).unwrap_or_else(|e| {
        tracing::warn!("{e}: the report shows no new URLs per round");
        None
    });
    let journal: BTreeMap<String, f64> = journal
        .map(|j| {
            j.rounds
                .iter()
                .filter(|r| r.segments.len() == 1)
                .map(|r| (r.segments[0].clone(), r.new_urls as f64))
                .collect()
        })
        .unwrap_or_default();
    let mut rounds = Vec::new();
    let mut times = vec![0.0; TIME_BUCKETS.len()];
    let mut sizes = vec![0.0; SIZE_BUCKETS.len()];
    for seg in dir.segments()? {
        if !seg.has(SegmentDataset::CrawlFetch) {
            continue;
        }
        let mut r = Round {
            name: seg.name().to_string(),
            new_urls: journal.get(seg.name()).copied(),
            ..Default::default()
        };
        let rows: Vec<FetchRecord> =
            parquet::read_dataset(&seg.dataset(SegmentDataset::CrawlFetch))?;
        for f in rows {
            match f.status {
                FetchStatus::FetchSuccess | FetchStatus::FetchNotmodified => r.fetched += 1.0,
                FetchStatus::FetchRetry => r.failed += 1.0,
                FetchStatus::FetchGone => r.gone += 1.0,
                FetchStatus::FetchRedirTemp | FetchStatus::FetchRedirPerm => r.redirects += 1.0,
            }
            if let (Some(ms), Some(_)) = (f.response_time_ms, f.http_status) {
                times[bucket(ms, TIME_BUCKETS)] += 1.0;
            }
            if f.status == FetchStatus::FetchSuccess
                && let Some(b) = f.content_length
            {
                sizes[bucket(b, SIZE_BUCKETS)] += 1.0;
            }
        }
        rounds.push(r);
    }
    // Top hosts: the hostdb's when there is one (with failures), else the crawldb's.
    let hostdb = crate::hosts::read_all(&dir)?;
    let hosts = if hostdb.is_empty() {
        host_pages.len()
    } else {
        hostdb.len()
    };
    let mut top: Vec<(String, f64)> = if hostdb.is_empty() {
        host_pages.into_iter().collect()
    } else {
        hostdb
            .iter()
            .map(|h| (h.host.clone(), h.fetch_successes as f64))
            .collect()
    };
    top.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    top.truncate(15);

    let mut charts = 0;
    let mut body = String::new();
    let _ = write!(
        body,
        "<p>{urls} URLs in the crawldb on {hosts} hosts, {} rounds (segments fetched). Written {}.</p>",
        rounds.len(),
        crate::datum::format_millis(crate::datum::now_millis())
    );
    section(
        &mut body,
        "Rounds",
        "Per round (segment): fetch outcomes, and the URLs the round added to the crawldb (from the crawl driver's journal).",
    );
    let labels: Vec<String> = rounds
        .iter()
        .enumerate()
        .map(|(i, _)| format!("{}", i + 1))
        .collect();
    body.push_str(&columns(
        "fetch outcomes per round",
        &[
            ("fetched", "#2b8a3e"),
            ("failed", "#c92a2a"),
            ("gone", "#868e96"),
            ("redirects", "#1971c2"),
        ],
        &rounds
            .iter()
            .zip(&labels)
            .map(|(r, l)| (l.clone(), vec![r.fetched, r.failed, r.gone, r.redirects]))
            .collect::<Vec<_>>(),
    ));
    charts += 1;
    if rounds.iter().any(|r| r.new_urls.is_some()) {
        body.push_str(&bars(
            "new URLs per round",
            &rounds
                .iter()
                .zip(&labels)
                .map(|(r, l)| (format!("round {l}"), r.new_urls.unwrap_or(0.0)))
                .collect::<Vec<_>>(),
        ));
        charts += 1;
    }
    let mut table = String::from(
        "<table><tr><th>round</th><th>segment</th><th>fetched</th><th>failed</th><th>gone</th><th>redirects</th><th>new URLs</th></tr>",
    );
    for (r, l) in rounds.iter().zip(&labels) {
        let _ = write!(
            table,
            "<tr><td>{l}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&r.name),
            r.fetched,
            r.failed,
            r.gone,
            r.redirects,
            r.new_urls.map_or("-".to_string(), |n| n.to_string())
        );
    }
    table.push_str("</table>");
    body.push_str(&table);
    section(&mut body, "Statuses", "URLs in the crawldb by status.");
    body.push_str(&bars(
        "crawldb statuses",
        &statuses.into_iter().collect::<Vec<_>>(),
    ));
    charts += 1;
    section(
        &mut body,
        "Top hosts",
        "Hosts by pages fetched (the hostdb's successes when there is one).",
    );
    body.push_str(&bars("pages fetched per host", &top));
    charts += 1;
    section(
        &mut body,
        "Response times",
        "Fetches with a response, by time from request to the end of the body.",
    );
    body.push_str(&bars("response time", &with_labels(TIME_BUCKETS, &times)));
    charts += 1;
    section(
        &mut body,
        "Page sizes",
        "Pages fetched (2xx) by bytes kept.",
    );
    body.push_str(&bars("page size", &with_labels(SIZE_BUCKETS, &sizes)));
    charts += 1;
    section(
        &mut body,
        "Crawl depth",
        "URLs in the crawldb by depth (links from a seed).",
    );
    body.push_str(&bars(
        "crawl depth",
        &depths
            .into_iter()
            .map(|(d, n)| (format!("depth {d}"), n))
            .collect::<Vec<_>>(),
    ));
    charts += 1;
    let html = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>trawl crawl report: {title}</title>\
<style>body{{font:14px/1.4 system-ui,sans-serif;max-width:960px;margin:2em auto;padding:0 1em;color:#212529}}\
h1{{font-size:1.6em}}h2{{margin-top:2em;border-bottom:1px solid #dee2e6}}table{{border-collapse:collapse;margin:1em 0}}\
td,th{{border:1px solid #dee2e6;padding:2px 8px;text-align:right}}svg{{display:block;margin:1em 0}}</style></head>\
<body><h1>Crawl report: {title}</h1>{body}</body></html>\n",
        title = esc(&dir.root().display().to_string()),
    );
    let path = opts.out.clone().unwrap_or_else(|| dir.report_file());
    parquet::write_atomic(&path, html.as_bytes())?;
    Ok(ReportReport {
        path,
        rounds: rounds.len(),
        urls,
        charts,
    })
}

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    escape_into(&mut out, s);
    out
}

fn section(body: &mut String, title: &str, what: &str) {
    let _ = write!(body, "<h2>{}</h2><p>{}</p>", esc(title), esc(what));
}

fn with_labels(buckets: &[(i64, &str)], counts: &[f64]) -> Vec<(String, f64)> {
    buckets
        .iter()
        .zip(counts)
        .map(|((_, l), n)| (l.to_string(), *n))
        .collect()
}

/// A horizontal bar chart: one labelled bar per row, its value at the end.
fn bars(title: &str, rows: &[(String, f64)]) -> String {
    let (label_w, bar_w, row_h) = (180.0, 560.0, 22.0);
    let max = rows.iter().map(|r| r.1).fold(0.0_f64, f64::max).max(1.0);
    let h = 30.0 + row_h * rows.len().max(1) as f64;
    let mut s = format!(
        "<svg class=\"chart\" role=\"img\" aria-label=\"{t}\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" xmlns=\"http://www.w3.org/2000/svg\"><title>{t}</title><text x=\"0\" y=\"16\" font-weight=\"bold\">{t}</text>",
        t = esc(title),
        w = label_w + bar_w + 80.0,
    );
    if rows.is_empty() {
        s.push_str("<text x=\"0\" y=\"40\">(none)</text>");
    }
    for (i, (label, v)) in rows.iter().enumerate() {
        let y = 26.0 + row_h * i as f64;
        let w = bar_w * v / max;
        let _ = write!(
            s,
            "<text x=\"{lx}\" y=\"{ty}\" text-anchor=\"end\">{l}</text><rect class=\"bar\" x=\"{label_w}\" y=\"{y}\" width=\"{w:.1}\" height=\"{bh}\" fill=\"#1971c2\"><title>{l}: {v}</title></rect><text x=\"{vx:.1}\" y=\"{ty}\">{v}</text>",
            lx = label_w - 6.0,
            ty = y + 14.0,
            l = esc(label),
            bh = row_h - 6.0,
            vx = label_w + w + 4.0,
        );
    }
    s.push_str("</svg>");
    s
}

/// Stacked columns: one column per row, one colour per series, with a legend.
fn columns(title: &str, series: &[(&str, &str)], rows: &[(String, Vec<f64>)]) -> String {
    let (plot_h, col_w, gap) = (200.0, 36.0, 14.0);
    let max = rows
        .iter()
        .map(|(_, v)| v.iter().sum::<f64>())
        .fold(0.0_f64, f64::max)
        .max(1.0);
    let w =
        (60.0 + (col_w + gap) * rows.len().max(1) as f64).max(140.0 + 100.0 * series.len() as f64);
    let h = plot_h + 80.0;
    let mut s = format!(
        "<svg class=\"chart\" role=\"img\" aria-label=\"{t}\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" xmlns=\"http://www.w3.org/2000/svg\"><title>{t}</title><text x=\"0\" y=\"16\" font-weight=\"bold\">{t}</text><text x=\"0\" y=\"36\">max {max}</text>",
        t = esc(title),
    );
    for (i, (name, colour)) in series.iter().enumerate() {
        let x = 120.0 + 100.0 * i as f64;
        let _ = write!(
            s,
            "<rect x=\"{x}\" y=\"26\" width=\"10\" height=\"10\" fill=\"{colour}\"/><text x=\"{tx}\" y=\"36\">{n}</text>",
            tx = x + 14.0,
            n = esc(name)
        );
    }
    let base = 44.0 + plot_h;
    for (c, (label, values)) in rows.iter().enumerate() {
        let x = 40.0 + (col_w + gap) * c as f64;
        let mut top = base;
        for (v, (name, colour)) in values.iter().zip(series) {
            let hgt = plot_h * v / max;
            top -= hgt;
            let _ = write!(
                s,
                "<rect class=\"bar\" x=\"{x}\" y=\"{top:.1}\" width=\"{col_w}\" height=\"{hgt:.1}\" fill=\"{colour}\"><title>round {l}: {v} {n}</title></rect>",
                l = esc(label),
                n = esc(name)
            );
        }
        let _ = write!(
            s,
            "<text x=\"{cx}\" y=\"{ly}\" text-anchor=\"middle\">{l}</text>",
            cx = x + col_w / 2.0,
            ly = base + 16.0,
            l = esc(label)
        );
    }
    s.push_str("</svg>");
    s
}
