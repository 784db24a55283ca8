//! The `parse` stage over one segment: streams `content` part by part in small
//! record batches, parses the pages of a batch in parallel (rayon), and writes
//! `parse_text` and `parse_data` (one part per content part, same partitioning)
//! and `crawl_parse` (partitioned by the host of each row's `url`).
//!
//! `crawl_parse` gets one `signature` row per successfully parsed page and one
//! `link` row per followable outlink: allowed by `[urls]`, the page not
//! `nofollow` (meta robots / X-Robots-Tag), the link not `rel=nofollow` when
//! `parse.ignore_nofollow_links`, and within `urls.max_depth`. A link row's
//! `score` is the page's score divided by the number of link rows of the page
//! (OPIC: a page hands its cash out evenly to the pages it links to) and its
//! `depth` is the page's depth + 1.
//!
//! All three datasets are staged and renamed into place at the end,
//! `parse_data` last: its presence means the segment is parsed. The stage holds the
//! segment's lock (`segments/<name>.lock`) for its whole run, so it is refused on a
//! segment a fetch (or another parse) is writing.

use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Instant;

use ::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use indicatif::ProgressBar;
use rayon::prelude::*;

use super::page::{PageInput, PageOpts, ParsedPage, parse_page};
use crate::cli;
use crate::config::Config;
use crate::error::{Error, IoContext, Result};
use crate::records::{ContentRecord, CrawlParseRecord, ParseDataRecord, ParseTextRecord};
use crate::stage::{Report, StageCtx};
use crate::store::layout::CrawlDir;
use crate::store::layout::Segment;
use crate::store::names::SegmentDataset;
use crate::store::parquet::{self, PartWriter, StagedDataset, partition_for_host};
use crate::urls::{UrlPolicy, host_of};

/// Content rows decoded and parsed at a time (bounds memory by batch, not segment).
pub const BATCH_ROWS: usize = 64;

/// What to parse (the `[parse]` keys come from the configuration).
#[derive(Debug, Clone, Default)]
pub struct ParseOpts {
    /// The segment (path or name); default: the newest with content and no parse_data.
    pub segment: Option<PathBuf>,
    /// Parse again a segment that already has parse_data (replacing it).
    pub reparse: bool,
}

/// Counts reported by the stage.
#[derive(Debug, Clone, Default)]
pub struct ParseReport {
    /// The segment parsed.
    pub segment: String,
    /// Pages read from content.
    pub pages: u64,
    /// Pages parsed (`parse_success`).
    pub success: u64,
    /// Pages that failed (`parse_failed`).
    pub failed: u64,
    /// Outlinks recorded in parse_data.
    pub outlinks: u64,
    /// Link rows written to crawl_parse.
    pub link_rows: u64,
    /// Content bytes parsed.
    pub bytes: u64,
    /// Seconds since the stage started, when the segment was parsed (for the rate).
    pub secs: f64,
}

impl fmt::Display for ParseReport {
    /// `segment S: P pages (A success, F failed), O outlinks, L link rows, M MB at R MB/s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mb = self.bytes as f64 / 1e6;
        write!(
            f,
            "segment {}: {} pages ({} success, {} failed), {} outlinks, {} link rows, {:.1} MB at {:.1} MB/s",
            self.segment,
            self.pages,
            self.success,
            self.failed,
            self.outlinks,
            self.link_rows,
            mb,
            mb / self.secs.max(1e-9)
        )
    }
}

impl Report for ParseReport {
    const STAGE: &'static str = "parse";
}

fn pick_segment(dir: &CrawlDir, opts: &ParseOpts) -> Result<Segment> {
    if let Some(s) = &opts.segment {
        return dir.segment(s);
    }
    dir.segments()?
        .into_iter()
        .rev()
        .find(|s| s.has(SegmentDataset::Content) && !s.has(SegmentDataset::ParseData))
        .ok_or_else(|| {
            Error::crawl_dir(
                dir.segments_dir(),
                "no segment has content waiting to be parsed; run `fetch` first, or name a segment (with --reparse to parse it again)",
            )
        })
}

/// What every content part of one run shares.
struct Shared<'a> {
    cfg: &'a Config,
    page: PageOpts,
    policy: UrlPolicy,
    seg: &'a Segment,
    text_ds: StagedDataset,
    data_ds: StagedDataset,
    pb: ProgressBar,
}

/// Parses a segment of the crawl directory of `ctx` (which must exist).
pub fn run(ctx: &StageCtx, opts: &ParseOpts) -> Result<ParseReport> {
    let started = Instant::now();
    let cfg = ctx.config();
    let dir = ctx.open_for_segments()?;
    let seg = pick_segment(&dir, opts)?;
    // Held for the whole run: no fetch, parse or segment tool writes it meanwhile.
    let _lock = seg.lock("parse")?;
    let content = seg.require(SegmentDataset::Content, "fetch")?;
    if seg.has(SegmentDataset::ParseData) && !opts.reparse {
        return Err(Error::crawl_dir(
            seg.path(),
            format!(
                "segment {} is already parsed (parse_data/ exists); rerun with --reparse to parse it again (replaces parse_text/, parse_data/ and crawl_parse/)",
                seg.name()
            ),
        ));
    }
    let meta = seg.meta()?;
    let partitions = meta.partitions.max(1);
    let seeds = dir.crawldb_meta().map(|m| m.seed_hosts).unwrap_or_default();

    // Checked in full: cheap next to parsing, and what parse writes flows into the crawldb.
    let parts =
        crate::store::integrity::verify(&content, crate::store::integrity::Check::Checksums)?;
    let total_rows: u64 = parts.iter().map(|p| count_rows(p)).sum::<Result<u64>>()?;
    let sh = Shared {
        cfg,
        page: PageOpts::from_config(cfg),
        policy: UrlPolicy::new(&cfg.urls, &seeds)?,
        seg: &seg,
        text_ds: StagedDataset::new(&seg.dataset(SegmentDataset::ParseText))?,
        data_ds: StagedDataset::new(&seg.dataset(SegmentDataset::ParseData))?,
        pb: cli::progress_bar(total_rows, "parse"),
    };
    let cp_ds = StagedDataset::new(&seg.dataset(SegmentDataset::CrawlParse))?;
    let mut cp_writers = (0..partitions)
        .map(|i| PartWriter::<CrawlParseRecord>::create(&cp_ds.part_path(i)))
        .collect::<Result<Vec<_>>>()?;

    let mut report = ParseReport {
        segment: seg.name().to_string(),
        ..Default::default()
    };
    for (pos, part) in parts.iter().enumerate() {
        let i = part_index(part).unwrap_or(pos);
        run_partition(&sh, i, part, &mut cp_writers, &mut report)?;
    }
    for w in cp_writers {
        w.finish()?;
    }
    sh.pb.finish_and_clear();
    interrupted(&seg)?;
    sh.text_ds.commit_replacing()?;
    cp_ds.commit_replacing()?;
    sh.data_ds.commit_replacing()?;
    tracing::debug!("parsed {} in {:?}", seg.name(), started.elapsed());
    report.secs = ctx.started().elapsed().as_secs_f64();
    Ok(report)
}

/// Parses content part `i` (`part`) batch by batch (the pages of a batch in parallel):
/// writes parse_text and parse_data part `i` and pushes the page's crawl_parse rows
/// to the writer of their host's partition (`cp_writers`); counts into `report`.
fn run_partition(
    sh: &Shared<'_>,
    i: usize,
    part: &Path,
    cp_writers: &mut [PartWriter<CrawlParseRecord>],
    report: &mut ParseReport,
) -> Result<()> {
    let partitions = cp_writers.len();
    let mut text_w = PartWriter::<ParseTextRecord>::create(&sh.text_ds.part_path(i))?;
    let mut data_w = PartWriter::<ParseDataRecord>::create(&sh.data_ds.part_path(i))?;
    let file = File::open(part).at(part)?;
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| Error::parquet(part, e))?;
    let rows = BATCH_ROWS.min(parquet::batch_rows(builder.metadata()));
    let reader = builder
        .with_batch_size(rows)
        .build()
        .map_err(|e| Error::parquet(part, e))?;
    for batch in reader {
        interrupted(sh.seg)?;
        let batch = batch.map_err(|e| Error::arrow(part.display().to_string(), e))?;
        let rows: Vec<ContentRecord> = parquet::from_batch(&batch)?;
        let results: Vec<(ParsedPage, Vec<CrawlParseRecord>)> = rows
            .par_iter()
            .map(|r| {
                let page = parse_guarded(r, &sh.page, &sh.policy);
                let cp = crawl_parse_rows(r, &page, sh.cfg);
                (page, cp)
            })
            .collect();
        for (r, (page, cp)) in rows.iter().zip(results) {
            report.pages += 1;
            report.bytes += r.content.len() as u64;
            if page.ok() {
                report.success += 1;
            } else {
                report.failed += 1;
            }
            report.outlinks += page.data.outlinks.len() as u64;
            for row in cp {
                if row.kind == "link" {
                    report.link_rows += 1;
                }
                let p = partition_for_host(&row.host, partitions);
                cp_writers[p].push(row)?;
            }
            text_w.push(page.text)?;
            data_w.push(page.data)?;
        }
        text_w.flush()?;
        data_w.flush()?;
        sh.pb.inc(rows.len() as u64);
    }
    text_w.finish()?;
    data_w.finish()?;
    Ok(())
}

/// Stops parse at a SIGINT/SIGTERM ([`crate::signal`]) between two batches of
/// pages: parse output is whole per segment, so nothing is installed (the staged
/// datasets are removed) and the segment stays unparsed (or keeps its previous
/// parse, with `--reparse`).
fn interrupted(seg: &Segment) -> Result<()> {
    crate::signal::check(&format!(
        "parse stopped: nothing installed, segment {} is left as it was (unparsed); rerun parse",
        seg.name()
    ))
}

fn count_rows(path: &Path) -> Result<u64> {
    let file = File::open(path).at(path)?;
    let b = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| Error::parquet(path, e))?;
    Ok(b.metadata().file_metadata().num_rows().max(0) as u64)
}

fn part_index(path: &Path) -> Option<usize> {
    let name = path.file_name()?.to_str()?;
    name.strip_prefix("part-")?
        .strip_suffix(".parquet")?
        .parse()
        .ok()
}

/// Parses one content row, turning a panic (a bug in a parser dependency) into
/// a `parse_failed` row instead of losing the segment.
fn parse_guarded(r: &ContentRecord, opts: &PageOpts, policy: &UrlPolicy) -> ParsedPage {
    let input = PageInput {
        url: &r.url,
        content_type: r.content_type.as_deref(),
        headers: &r.headers,
        content: &r.content,
        truncated: r.truncated,
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        parse_page(&input, opts, policy)
    })) {
        Ok(p) => p,
        Err(_) => {
            tracing::error!("parser panicked on {}; recorded as parse_failed", r.url);
            let mut p = parse_page(
                &PageInput {
                    content: &[],
                    content_type: Some("application/octet-stream"),
                    ..input
                },
                opts,
                policy,
            );
            p.data.status = super::page::PARSE_FAILED.into();
            p.data.reason = "parser_panic".into();
            p.data.signature = None;
            p
        }
    }
}

/// The crawl_parse rows of one page (see the module docs).
pub fn crawl_parse_rows(
    r: &ContentRecord,
    page: &ParsedPage,
    cfg: &Config,
) -> Vec<CrawlParseRecord> {
    if !page.ok() {
        return Vec::new();
    }
    let mut out = vec![CrawlParseRecord {
        url: r.url.clone(),
        host: r.host.clone(),
        kind: "signature".into(),
        from_url: None,
        anchor: None,
        score: 0.0,
        depth: r.depth,
        signature: page.data.signature.clone(),
    }];
    if page.data.nofollow {
        return out;
    }
    let depth = r.depth.saturating_add(1);
    if cfg.urls.max_depth > 0 && depth > cfg.urls.max_depth {
        return out;
    }
    let follow: Vec<_> = page
        .links
        .iter()
        .filter(|l| l.allowed && !(cfg.parse.ignore_nofollow_links && l.link.nofollow))
        .collect();
    if follow.is_empty() {
        return out;
    }
    let share = r.score / follow.len() as f64;
    for l in follow {
        out.push(CrawlParseRecord {
            host: host_of(&l.link.url),
            url: l.link.url.clone(),
            kind: "link".into(),
            from_url: Some(r.url.clone()),
            anchor: Some(l.link.anchor.clone()),
            score: share,
            depth,
            signature: None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::Header;

    fn content(body: &str) -> ContentRecord {
        ContentRecord {
            url: "http://a.test/".into(),
            host: "a.test".into(),
            fetch_time: 0,
            http_status: 200,
            content_type: Some("text/html".into()),
            headers: Vec::<Header>::new(),
            content: body.as_bytes().to_vec(),
            truncated: false,
            ip_address: None,
            score: 0.9,
            depth: 2,
        }
    }

    fn rows(cfg: &Config, body: &str) -> Vec<CrawlParseRecord> {
        let r = content(body);
        let policy = UrlPolicy::new(&cfg.urls, &[]).unwrap();
        let page = parse_guarded(&r, &PageOpts::from_config(cfg), &policy);
        crawl_parse_rows(&r, &page, cfg)
    }

    #[test]
    fn nofollow_links_follow_when_not_ignored() {
        let body = "<a href=/a>a</a><a rel=nofollow href=/b>b</a><a href=/c>c</a>";
        let mut cfg = Config::default();
        let links: Vec<_> = rows(&cfg, body)
            .into_iter()
            .filter(|r| r.kind == "link")
            .collect();
        assert_eq!(links.len(), 2);
        assert!(
            links
                .iter()
                .all(|l| (l.score - 0.45).abs() < 1e-12 && l.depth == 3)
        );
        cfg.parse.ignore_nofollow_links = false;
        let links: Vec<_> = rows(&cfg, body)
            .into_iter()
            .filter(|r| r.kind == "link")
            .collect();
        assert_eq!(links.len(), 3);
        assert!((links[0].score - 0.3).abs() < 1e-12);
    }

    #[test]
    fn max_depth_and_scope_limit_link_rows() {
        let body = "<a href=/a>a</a><a href=http://other.test/>o</a>";
        let mut cfg = Config::default();
        cfg.urls.max_depth = 2;
        let r = rows(&cfg, body);
        assert_eq!(r.len(), 1, "only the signature row: depth 3 > 2");
        assert_eq!(r[0].kind, "signature");
        let mut cfg = Config::default();
        cfg.urls.scope = crate::config::UrlScope::Host;
        let r = content(body);
        let policy = UrlPolicy::new(&cfg.urls, &["a.test".to_string()]).unwrap();
        let page = parse_guarded(&r, &PageOpts::from_config(&cfg), &policy);
        assert_eq!(
            page.data.outlinks.len(),
            2,
            "parse_data keeps out-of-scope links"
        );
        let links: Vec<_> = crawl_parse_rows(&r, &page, &cfg)
            .into_iter()
            .filter(|r| r.kind == "link")
            .collect();
        assert_eq!(links.len(), 1);
        assert_eq!(links[0].url, "http://a.test/a");
        assert!((links[0].score - 0.9).abs() < 1e-12);
    }
}
