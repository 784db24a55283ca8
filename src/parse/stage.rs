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
use crate::records::{
    ContentRecord, CrawlParseRecord, FetchRecord, InlinkRecord, ParseDataRecord, ParseTextRecord,
};
use crate::stage::{Guard, Partitioned, Report, StageCtx};
use crate::store::integrity;
use crate::store::jobs::{self, Job, PartitionSet};
use crate::store::layout::CrawlDir;
use crate::store::layout::Segment;
use crate::store::names::SegmentDataset;
use crate::store::parquet::{self, PartWriter, StagedDataset, part_name};
use crate::store::partition::Partitioner;
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

/// Counts reported by the stage (a task's, or the sum of a job's tasks).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
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
    /// Seconds spent parsing (for the rate; a job's: its tasks' seconds summed).
    pub secs: f64,
    /// Redirects of crawl_fetch routed into crawl_parse (the redirect shuffle).
    #[serde(default)]
    pub redirects: u64,
    /// Whether the task routed its partitions' redirects (the segment had a
    /// complete crawl_fetch); the commit marks the segment when every task did.
    #[serde(default)]
    pub redirects_routed: bool,
}

impl ParseReport {
    /// Adds the counts of another task's report.
    fn add(&mut self, o: &ParseReport) {
        self.pages += o.pages;
        self.success += o.success;
        self.failed += o.failed;
        self.outlinks += o.outlinks;
        self.link_rows += o.link_rows;
        self.bytes += o.bytes;
        self.secs += o.secs;
        self.redirects += o.redirects;
    }
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

fn pick_segment(dir: &CrawlDir, ctx: &StageCtx, opts: &ParseOpts) -> Result<Segment> {
    if let Some(s) = &opts.segment {
        return dir.segment(s);
    }
    if !ctx.is_whole() {
        return Err(Error::input(
            "parse --job",
            "name the segment: every task of a job and its commit work on the same SEGMENT",
        ));
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

/// What every content part of one task shares.
struct Shared<'a> {
    cfg: &'a Config,
    page: PageOpts,
    policy: UrlPolicy,
    seg: &'a Segment,
    pb: ProgressBar,
}

/// The shuffle outputs of one map task: one file per target partition, in the
/// attempt's `crawl_parse/` (updatedb's rows) and `parse_inlinks/` (linkdb's rows).
/// A task over every partition writes every target's file (empty or not, as a
/// one-process parse always did); a task over some partitions only the non-empty ones.
struct Shuffle {
    cp_dir: PathBuf,
    inl_dir: PathBuf,
    cp: Vec<Option<PartWriter<CrawlParseRecord>>>,
    inl: Vec<Option<PartWriter<InlinkRecord>>>,
    /// The segment's partitioning: a row goes to its target's partition.
    pt: Partitioner,
}

impl Shuffle {
    fn new(cp_dir: PathBuf, inl_dir: PathBuf, pt: Partitioner, every: bool) -> Result<Self> {
        let partitions = pt.n();
        let mut s = Shuffle {
            cp_dir,
            inl_dir,
            pt,
            cp: (0..partitions).map(|_| None).collect(),
            inl: (0..partitions).map(|_| None).collect(),
        };
        if every {
            for j in 0..partitions {
                s.cp_writer(j)?;
                s.inl_writer(j)?;
            }
        }
        Ok(s)
    }

    fn cp_writer(&mut self, j: usize) -> Result<&mut PartWriter<CrawlParseRecord>> {
        let w = &mut self.cp[j];
        if w.is_none() {
            *w = Some(PartWriter::create(&self.cp_dir.join(part_name(j)))?);
        }
        w.as_mut()
            .ok_or_else(|| Error::crawl_dir(&self.cp_dir, "internal: no writer"))
    }

    fn inl_writer(&mut self, j: usize) -> Result<&mut PartWriter<InlinkRecord>> {
        let w = &mut self.inl[j];
        if w.is_none() {
            *w = Some(PartWriter::create(&self.inl_dir.join(part_name(j)))?);
        }
        w.as_mut()
            .ok_or_else(|| Error::crawl_dir(&self.inl_dir, "internal: no writer"))
    }

    fn finish(self) -> Result<()> {
        for w in self.cp.into_iter().flatten() {
            w.finish()?;
        }
        for w in self.inl.into_iter().flatten() {
            w.finish()?;
        }
        Ok(())
    }
}

/// Parses a segment of the crawl directory of `ctx` (which must exist): the whole
/// segment in this process, or one task of a job on some of its content parts, or
/// the job's commit (see [`crate::stage::execute`] and docs/tasks-segments.md).
pub fn run(ctx: &StageCtx, opts: &ParseOpts) -> Result<ParseReport> {
    let dir = ctx.open_for_segments()?;
    let seg = pick_segment(&dir, ctx, opts)?;
    // Held by a one-process run and by a commit (which install into the segment);
    // tasks only read the segment and write their own attempt, many at once.
    let mut report = crate::stage::execute(ctx, Guard::Segment(&seg), || {
        seg.require(SegmentDataset::Content, "fetch")?;
        if seg.has(SegmentDataset::ParseData) && !opts.reparse {
            return Err(Error::crawl_dir(
                seg.path(),
                format!(
                    "segment {} is already parsed (parse_data/ exists); rerun with --reparse to parse it again (replaces parse_text/, parse_data/, crawl_parse/ and parse_inlinks/)",
                    seg.name()
                ),
            ));
        }
        Ok(Parse {
            ctx,
            dir: &dir,
            seg: &seg,
            pt: seg.meta()?.partitioner(),
        })
    })?;
    if ctx.is_whole() {
        report.secs = ctx.started().elapsed().as_secs_f64();
    }
    Ok(report)
}

/// The parse stage as the executor runs it ([`crate::stage::execute`]).
struct Parse<'a> {
    ctx: &'a StageCtx,
    dir: &'a CrawlDir,
    seg: &'a Segment,
    pt: Partitioner,
}

impl Partitioned for Parse<'_> {
    type Out = ParseReport;
    const NAME: &'static str = "parse";

    fn partitions(&self) -> usize {
        self.pt.n()
    }

    fn task(&mut self, job: &Job, set: &PartitionSet, attempt: &str) -> Result<ParseReport> {
        run_task(self.ctx, self.dir, self.seg, job, set, attempt, self.pt)
    }

    fn commit(&mut self, job: &Job) -> Result<ParseReport> {
        commit(self.seg, job, self.pt.n())
    }

    /// A one-process run reports what its task parsed, with its timings.
    fn whole(&mut self, task: ParseReport, _commit: ParseReport) -> ParseReport {
        task
    }
}

/// The map task on content parts `set` (attempt `attempt` of `job`): parse_text and
/// parse_data parts `i` for `i` in `set`, and the shuffle outputs (crawl_parse and
/// parse_inlinks rows by the target's partition) into the attempt.
fn run_task(
    ctx: &StageCtx,
    dir: &CrawlDir,
    seg: &Segment,
    job: &Job,
    set: &PartitionSet,
    attempt: &str,
    pt: Partitioner,
) -> Result<ParseReport> {
    let started = Instant::now();
    let cfg = ctx.config();
    let seeds = dir.crawldb_meta().map(|m| m.seed_hosts).unwrap_or_default();
    let content = seg.dataset(SegmentDataset::Content);
    // Checked in full: cheap next to parsing, and what parse writes flows into the
    // crawldb (the sizes of every part, the checksums of the task's own parts).
    integrity::verify(&content, integrity::Check::Sizes)?;
    let mut parts: Vec<(usize, PathBuf)> = Vec::new();
    for i in set.iter() {
        for p in parquet::partition_files(&content, i)? {
            parts.push((i, p));
        }
    }
    let files: Vec<PathBuf> = parts.iter().map(|(_, p)| p.clone()).collect();
    integrity::verify_files(&content, &files)?;
    let total_rows: u64 = files.iter().map(|p| count_rows(p)).sum::<Result<u64>>()?;
    let w = job.attempt_writer(set, attempt)?;
    let text_dir = w.dataset(SegmentDataset::ParseText.as_str())?;
    let data_dir = w.dataset(SegmentDataset::ParseData.as_str())?;
    let mut shuffle = Shuffle::new(
        w.dataset(SegmentDataset::CrawlParse.as_str())?,
        w.dataset(SegmentDataset::ParseInlinks.as_str())?,
        pt,
        set.is_all(pt.n()),
    )?;
    let sh = Shared {
        cfg,
        page: PageOpts::from_config(cfg),
        policy: UrlPolicy::new(&cfg.urls, &seeds)?,
        seg,
        pb: cli::progress_bar(total_rows, "parse"),
    };
    let mut report = ParseReport {
        segment: seg.name().to_string(),
        ..Default::default()
    };
    // A content part per partition (as fetch writes them): parse_text and parse_data
    // parts keep its name.
    for i in set.iter() {
        let mut text_w = PartWriter::<ParseTextRecord>::create(&text_dir.join(part_name(i)))?;
        let mut data_w = PartWriter::<ParseDataRecord>::create(&data_dir.join(part_name(i)))?;
        for (_, part) in parts.iter().filter(|(p, _)| *p == i) {
            run_partition(
                &sh,
                part,
                &mut text_w,
                &mut data_w,
                &mut shuffle,
                &mut report,
            )?;
        }
        text_w.finish()?;
        data_w.finish()?;
    }
    route_redirects(seg, set, &sh.policy, &mut shuffle, &mut report)?;
    shuffle.finish()?;
    sh.pb.finish_and_clear();
    interrupted(seg)?;
    report.secs = started.elapsed().as_secs_f64();
    w.finish(&report)?;
    tracing::debug!(
        "parsed partitions {set} of {} in {:?}",
        seg.name(),
        started.elapsed()
    );
    Ok(report)
}

/// The redirect shuffle (map side): every redirect of crawl_fetch parts `set` whose
/// target the URL policy admits becomes a `redirect` row of crawl_parse, pushed to
/// the writer of the target host's partition, so that updatedb's task on a
/// partition reads only its own files. Nothing when the segment has no complete
/// crawl_fetch (then updatedb reads crawl_fetch, as for segments parsed before).
fn route_redirects(
    seg: &Segment,
    set: &PartitionSet,
    policy: &UrlPolicy,
    shuffle: &mut Shuffle,
    report: &mut ParseReport,
) -> Result<()> {
    if !seg.has(SegmentDataset::CrawlFetch) {
        return Ok(());
    }
    let fetch = seg.dataset(SegmentDataset::CrawlFetch);
    let mut files = Vec::new();
    for i in set.iter() {
        files.extend(parquet::partition_files(&fetch, i)?);
    }
    integrity::verify_files(&fetch, &files)?;
    for p in &files {
        for rows in parquet::read_part::<FetchRecord>(p)? {
            for f in rows? {
                let Some(Ok(url)) = f.redirect().map(|t| policy.check(t)) else {
                    continue;
                };
                let url = url.to_string();
                let host = host_of(&url);
                let j = shuffle.pt.of_host(&host);
                shuffle.cp_writer(j)?.push(CrawlParseRecord {
                    url,
                    host,
                    kind: "redirect".into(),
                    from_url: Some(f.url),
                    anchor: None,
                    score: f.score,
                    depth: f.depth,
                    signature: None,
                })?;
                report.redirects += 1;
            }
        }
    }
    report.redirects_routed = true;
    Ok(())
}

/// The commit: links the chosen attempts' parse_text and parse_data parts and their
/// shuffle outputs (as [`jobs::shuffle_part_name`]) into the segment's datasets,
/// installs them (`parse_data` last: its presence means the segment is parsed),
/// removes the job and returns the attempts' reports summed.
fn commit(seg: &Segment, job: &Job, partitions: usize) -> Result<ParseReport> {
    let chosen = job.choose(partitions)?;
    let staged = |ds: SegmentDataset| StagedDataset::new(&seg.dataset(ds));
    let text = staged(SegmentDataset::ParseText)?;
    let data = staged(SegmentDataset::ParseData)?;
    let cp = staged(SegmentDataset::CrawlParse)?;
    let inl = staged(SegmentDataset::ParseInlinks)?;
    let mut report = ParseReport {
        segment: seg.name().to_string(),
        ..Default::default()
    };
    let mut routed = !chosen.is_empty();
    for a in &chosen {
        for (ds, to) in [
            (SegmentDataset::ParseText, &text),
            (SegmentDataset::ParseData, &data),
        ] {
            a.link_parts(ds.as_str(), to.path())?;
        }
        for (ds, to) in [
            (SegmentDataset::CrawlParse, &cp),
            (SegmentDataset::ParseInlinks, &inl),
        ] {
            for p in a.parts(ds.as_str())? {
                let j = parquet::part_index(&p).ok_or_else(|| {
                    Error::crawl_dir(
                        &p,
                        "not a shuffle output of a parse task (part-NNNNN.parquet)",
                    )
                })?;
                jobs::link_part(
                    &p,
                    &to.path()
                        .join(jobs::shuffle_part_name(j, a.partitions(), partitions)),
                )?;
            }
        }
        let r = a.report::<ParseReport>()?;
        routed &= r.redirects_routed;
        report.add(&r);
    }
    interrupted(seg)?;
    // The segment's mark says whether crawl_parse carries its redirects: cleared
    // before a crawl_parse without them is installed, set after one with them, so
    // a commit killed in between never marks a crawl_parse that lacks them.
    let mut meta = seg.meta()?;
    if !routed && meta.redirects_in_crawl_parse {
        meta.redirects_in_crawl_parse = false;
        seg.write_meta(&meta)?;
    }
    text.commit_replacing()?;
    cp.commit_replacing()?;
    if routed && !meta.redirects_in_crawl_parse {
        meta.redirects_in_crawl_parse = true;
        seg.write_meta(&meta)?;
    }
    inl.commit_replacing()?;
    data.commit_replacing()?;
    Ok(report)
}

/// Parses one content part batch by batch (the pages of a batch in parallel):
/// writes its pages' parse_text and parse_data rows (`text_w`, `data_w`) and pushes
/// each page's crawl_parse rows and inverted outlinks to the writer of their target's
/// partition (`shuffle`); counts into `report`.
fn run_partition(
    sh: &Shared<'_>,
    part: &Path,
    text_w: &mut PartWriter<ParseTextRecord>,
    data_w: &mut PartWriter<ParseDataRecord>,
    shuffle: &mut Shuffle,
    report: &mut ParseReport,
) -> Result<()> {
    let pt = shuffle.pt;
    let segment = sh.seg.name().to_string();
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
                let p = pt.of_host(&row.host);
                shuffle.cp_writer(p)?.push(row)?;
            }
            // linkdb's rows: every outlink of parse_data (linkdb applies its own
            // filters), by the target's partition.
            for o in &page.data.outlinks {
                let p = pt.of_url(&o.url);
                shuffle.inl_writer(p)?.push(InlinkRecord {
                    url: o.url.clone(),
                    from_url: page.data.url.clone(),
                    anchor: o.anchor.clone(),
                    segment: segment.clone(),
                })?;
            }
            text_w.push(page.text)?;
            data_w.push(page.data)?;
        }
        text_w.flush()?;
        data_w.flush()?;
        sh.pb.inc(rows.len() as u64);
    }
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

/// The Content-Type a rendered DOM is parsed with: HTML serialized as UTF-8.
const RENDERED_TYPE: &str = "text/html; charset=utf-8";

/// Parses one content row, turning a panic (a bug in a parser dependency) into
/// a `parse_failed` row instead of losing the segment.
fn parse_guarded(r: &ContentRecord, opts: &PageOpts, policy: &UrlPolicy) -> ParsedPage {
    // A rendered page is parsed from the DOM its scripts left (UTF-8 whatever the
    // response's charset was); its X-Robots-Tag headers still apply.
    let input = match &r.rendered {
        Some(dom) => PageInput {
            url: &r.url,
            content_type: Some(RENDERED_TYPE),
            headers: &r.headers,
            content: dom.as_bytes(),
            truncated: r.truncated,
        },
        None => PageInput {
            url: &r.url,
            content_type: r.content_type.as_deref(),
            headers: &r.headers,
            content: &r.content,
            truncated: r.truncated,
        },
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut p = parse_page(&input, opts, policy);
        if let Some(status) = &r.render_status {
            p.data
                .metadata
                .insert("render_status".into(), status.clone());
        }
        p
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
            rendered: None,
            render_status: None,
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
