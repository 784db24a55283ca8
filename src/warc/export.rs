//! Exporting a segment's `content` to gzipped WARC/1.1 files: for each fetched page
//! a `request` record (the GET trawl sent) and a `response` record (status line,
//! stored headers, payload), plus a `conversion` record of the rendered DOM for a page
//! rendered in headless Chromium, each file starting with a `warcinfo` record and rotated
//! at a size limit. Files are written under temporary names and renamed when the
//! whole export is done, so a killed export leaves no half file under a final name.

use std::collections::HashMap;
use std::fmt;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::datum::CrawlDatum;
use crate::error::{Error, IoContext, Result};
use crate::records::ContentRecord;
use crate::stage::{Guard, Partitioned, Report, StageCtx};
use crate::store::integrity;
use crate::store::jobs::{self, Job, PartitionSet};
use crate::store::layout::Segment;
use crate::store::names::{self, SegmentDataset};
use crate::store::parquet::{partition_files, read_dataset, read_part};
use crate::warc::http::{RequestInfo, request_block, response_block};
use crate::warc::writer::{WarcRecord, record_id, sha1_digest, warc_date};

/// What the `warc` stage exports and where.
#[derive(Debug, Clone)]
pub struct WarcOpts {
    /// The segment (a name under `segments/` or a path); `None`: the newest.
    pub segment: Option<PathBuf>,
    /// The output directory; `None`: [`default_out_dir`] of the crawl directory.
    pub out_dir: Option<PathBuf>,
    /// File name prefix: files are `<prefix>-<segment>-<NNNNN>.warc.gz`.
    pub prefix: String,
    /// A file is closed and the next one started once it reaches this many bytes.
    pub max_file_bytes: u64,
}

/// What a `warc` run wrote: the segment exported and the export's counts.
#[derive(Debug, Clone)]
pub struct WarcReport {
    /// The segment's name.
    pub segment: String,
    /// What the export wrote.
    pub stats: ExportStats,
}

impl fmt::Display for WarcReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "segment {}: {} pages, {} records, {} skipped, {} files, {} bytes",
            self.segment,
            self.stats.pages,
            self.stats.records,
            self.stats.skipped,
            self.stats.files.len(),
            self.stats.bytes
        )
    }
}

impl Report for WarcReport {
    const STAGE: &'static str = "warc";
}

/// Runs the `warc` stage on the crawl directory of `ctx` (which must exist) with the
/// User-Agent of `fetch.user_agent`: the whole export in this process, or one task
/// of a job on some of the segment's content parts, or the job's commit (see
/// [`crate::stage::execute`] and docs/warc.md, "As partition tasks").
pub fn run(ctx: &StageCtx, opts: &WarcOpts) -> Result<WarcReport> {
    let dir = ctx.open_for_segments()?;
    let segment = match &opts.segment {
        Some(s) => dir.segment(s)?,
        None if !ctx.is_whole() => {
            return Err(Error::input(
                "warc --job",
                "name the segment: every task of a job and its commit export the same SEGMENT",
            ));
        }
        None => dir.latest_segment()?.ok_or_else(|| {
            Error::crawl_dir(
                ctx.root(),
                "no segments: run `generate` and `fetch` first, or pass the right --crawl-dir",
            )
        })?,
    };
    // Held by a one-process run and by a commit: the content read is not deleted
    // (prunesegs, mergesegs) or written (fetch) meanwhile, and the files a commit
    // replaces are not a concurrent export's. Tasks (many at once) only read the
    // segment and write their own attempt.
    let stats = crate::stage::execute(ctx, Guard::Segment(&segment), || {
        if segment.pruned(SegmentDataset::Content) {
            return Err(Error::crawl_dir(
                segment.path(),
                format!(
                    "segment {}: content was pruned by prunesegs; it cannot be exported (crawl the URLs again in a new round and export that segment)",
                    segment.name()
                ),
            ));
        }
        Ok(WarcExport {
            segment: &segment,
            content: segment.require(SegmentDataset::Content, "fetch")?,
            partitions: segment.meta()?.partitions.max(1),
            export: ExportOpts {
                out_dir: opts
                    .out_dir
                    .clone()
                    .unwrap_or_else(|| default_out_dir(ctx.root())),
                prefix: opts.prefix.clone(),
                max_file_bytes: opts.max_file_bytes.max(1),
                user_agent: ctx.config().fetch.user_agent.clone(),
            },
        })
    })?;
    Ok(WarcReport {
        segment: segment.name().to_string(),
        stats,
    })
}

/// The warc stage as the executor runs it ([`crate::stage::execute`]).
struct WarcExport<'a> {
    segment: &'a Segment,
    content: PathBuf,
    partitions: usize,
    export: ExportOpts,
}

impl Partitioned for WarcExport<'_> {
    type Out = ExportStats;
    const NAME: &'static str = "warc";

    fn partitions(&self) -> usize {
        self.partitions
    }

    fn task(&mut self, job: &Job, set: &PartitionSet, attempt: &str) -> Result<ExportStats> {
        run_task(
            self.segment,
            &self.content,
            job,
            set,
            attempt,
            self.partitions,
            &self.export,
        )
    }

    fn commit(&mut self, job: &Job) -> Result<ExportStats> {
        commit(self.segment, job, self.partitions, &self.export)
    }
}

/// What a warc task reports (its attempt's `_report.json`): its counts and the
/// files it wrote with their sizes, which the commit checks and installs.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct WarcTaskReport {
    pages: u64,
    records: u64,
    skipped: u64,
    bytes: u64,
    /// (file name, bytes), in the order written.
    files: Vec<(String, u64)>,
}

/// The file name stem of an export of `segment`: `<prefix>-<segment>-`; a task
/// over some of the partitions adds its partition set (`<prefix>-<segment>-
/// p00003-00005-`), so that the names of every task's files stay unique, whatever
/// ran, and say where the records come from.
fn stem(opts: &ExportOpts, segment: &Segment, set: &PartitionSet, partitions: usize) -> String {
    if set.is_all(partitions) {
        format!("{}-{}-", opts.prefix, segment.name())
    } else {
        format!("{}-{}-{}-", opts.prefix, segment.name(), set.dir_name())
    }
}

/// A warc task on content parts `set` (attempt `attempt` of `job`): their WARC
/// files, written into the attempt's `warc/`. Returns its counts (the files by name).
fn run_task(
    segment: &Segment,
    content: &Path,
    job: &Job,
    set: &PartitionSet,
    attempt: &str,
    partitions: usize,
    opts: &ExportOpts,
) -> Result<ExportStats> {
    let mut parts = Vec::new();
    for i in set.iter() {
        parts.extend(partition_files(content, i)?);
    }
    integrity::verify(content, integrity::Check::Sizes)?;
    integrity::verify_files(content, &parts)?;
    let w = job.attempt_writer(set, attempt)?;
    let task_opts = ExportOpts {
        out_dir: w.dataset(names::WARC)?,
        ..opts.clone()
    };
    let stats = export_parts(
        segment,
        &parts,
        &task_opts,
        stem(opts, segment, set, partitions),
    )?;
    let mut report = WarcTaskReport {
        pages: stats.pages,
        records: stats.records,
        skipped: stats.skipped,
        bytes: stats.bytes,
        files: Vec::new(),
    };
    for f in &stats.files {
        let size = fs::metadata(f).at(f)?.len();
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        report.files.push((name, size));
    }
    w.finish(&report)?;
    Ok(ExportStats {
        files: report.files.iter().map(|(n, _)| PathBuf::from(n)).collect(),
        ..stats
    })
}

/// The commit of a warc job (under the segment's lock): checks the chosen attempts'
/// files against their reports, links them into the output directory under
/// temporary names, removes the segment's files of an earlier export, renames the
/// new ones into place and removes the job. Returns the attempts' counts summed.
fn commit(
    segment: &Segment,
    job: &Job,
    partitions: usize,
    opts: &ExportOpts,
) -> Result<ExportStats> {
    let chosen = job.choose(partitions)?;
    let out_dir = &opts.out_dir;
    fs::create_dir_all(out_dir).at(out_dir)?;
    let stem = stem(opts, segment, &PartitionSet::all(partitions), partitions);
    // Leftovers of a killed export or commit (we hold the segment's lock).
    remove_export_files(out_dir, &stem, |n| n.contains(".warc.gz.tmp-"))?;
    let mut staged = Staged(Vec::new());
    let mut stats = ExportStats::default();
    for a in &chosen {
        let r: WarcTaskReport = a.report()?;
        for (name, bytes) in &r.files {
            let from = a.dataset(names::WARC).join(name);
            let found = fs::metadata(&from).at(&from)?.len();
            if found != *bytes || !name.starts_with(&stem) {
                return Err(Error::crawl_dir(
                    &from,
                    format!(
                        "attempt {} of partitions {} reports {name} with {bytes} bytes, found {found}: the attempt is damaged; delete its directory and rerun the task",
                        a.attempt(),
                        a.partitions()
                    ),
                ));
            }
            let tmp = out_dir.join(format!("{name}.tmp-{}", jobs::nonce()));
            jobs::link_part(&from, &tmp)?;
            staged.0.push((tmp, out_dir.join(name)));
        }
        stats.pages += r.pages;
        stats.records += r.records;
        stats.skipped += r.skipped;
        stats.bytes += r.bytes;
    }
    remove_export_files(out_dir, &stem, |n| n.ends_with(".warc.gz"))?;
    for (tmp, dest) in std::mem::take(&mut staged.0) {
        fs::rename(&tmp, &dest).at(&dest)?;
        stats.files.push(dest);
    }
    Ok(stats)
}

/// Files linked by a commit under temporary names, removed if it fails.
struct Staged(Vec<(PathBuf, PathBuf)>);

impl Drop for Staged {
    fn drop(&mut self) {
        for (tmp, _) in &self.0 {
            let _ = fs::remove_file(tmp);
        }
    }
}

/// Removes the files of `out_dir` whose names start with `stem` and are selected
/// by `pick`.
fn remove_export_files(out_dir: &Path, stem: &str, pick: impl Fn(&str) -> bool) -> Result<()> {
    for entry in fs::read_dir(out_dir).at(out_dir)? {
        let entry = entry.at(out_dir)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(stem) && pick(&name) {
            tracing::info!("removing {}", entry.path().display());
            fs::remove_file(entry.path()).at(entry.path())?;
        }
    }
    Ok(())
}

/// What to export and where.
#[derive(Debug, Clone)]
pub struct ExportOpts {
    /// The directory the `.warc.gz` files go to (created if missing).
    pub out_dir: PathBuf,
    /// File name prefix: files are `<prefix>-<segment>-<NNNNN>.warc.gz`.
    pub prefix: String,
    /// A file is closed and the next one started once it reaches this many bytes
    /// (a request/response pair is never split; a file holds at least one pair).
    pub max_file_bytes: u64,
    /// The User-Agent the fetch sent (from `fetch.user_agent`).
    pub user_agent: String,
}

/// What an export wrote.
#[derive(Debug, Clone, Default)]
pub struct ExportStats {
    /// Pages exported (request/response pairs).
    pub pages: u64,
    /// Records written, warcinfo records included.
    pub records: u64,
    /// Content rows skipped (URL that does not parse).
    pub skipped: u64,
    /// Compressed bytes written.
    pub bytes: u64,
    /// The files written, in order.
    pub files: Vec<PathBuf>,
}

/// Exports the content part files `parts` of `segment` as WARC files named
/// `<stem><NNNNN>.warc.gz` in `opts.out_dir` (see the module doc).
fn export_parts(
    segment: &Segment,
    parts: &[PathBuf],
    opts: &ExportOpts,
    stem: String,
) -> Result<ExportStats> {
    let conditionals = conditional_headers(segment)?;
    fs::create_dir_all(&opts.out_dir).at(&opts.out_dir)?;
    let mut files = FileSet::new(opts, segment, stem)?;
    let pb = crate::cli::progress_bar(parts.len() as u64, "warc");
    let mut stats = ExportStats::default();
    for part in parts {
        for rows in read_part::<ContentRecord>(part)? {
            for rec in rows? {
                let mut info = conditionals.get(&rec.url).cloned().unwrap_or_default();
                info.user_agent.clone_from(&opts.user_agent);
                match page_records(&rec, &info, segment.name()) {
                    Some(pair) => {
                        files.write_page(&pair)?;
                        stats.pages += 1;
                    }
                    None => {
                        tracing::warn!(
                            "{}: {}: URL does not parse; not exported",
                            part.display(),
                            rec.url
                        );
                        stats.skipped += 1;
                    }
                }
            }
        }
        pb.inc(1);
    }
    pb.finish_and_clear();
    let (files, records, bytes) = files.finish()?;
    stats.files = files;
    stats.records = records;
    stats.bytes = bytes;
    Ok(stats)
}

/// The conditional headers fetch sent, from the fetch list's metadata.
fn conditional_headers(segment: &Segment) -> Result<HashMap<String, RequestInfo>> {
    let mut out = HashMap::new();
    if !segment.has(SegmentDataset::CrawlGenerate) {
        tracing::warn!(
            "{}: no crawl_generate; request records will carry no conditional headers",
            segment.path().display()
        );
        return Ok(out);
    }
    for d in read_dataset::<CrawlDatum>(&segment.dataset(SegmentDataset::CrawlGenerate))? {
        let get = |k: &str| d.metadata.get(k).filter(|s| !s.is_empty()).cloned();
        let (etag, lm) = (get("etag"), get("last_modified"));
        if etag.is_some() || lm.is_some() {
            out.insert(
                d.url.clone(),
                RequestInfo {
                    user_agent: String::new(),
                    if_none_match: etag,
                    if_modified_since: lm,
                },
            );
        }
    }
    Ok(out)
}

/// The request and response records of one page (warcinfo id filled in later), and
/// for a rendered page a `conversion` record of the DOM its scripts left (WARC/1.1
/// 6.8: an alternative version of the response's content, `WARC-Refers-To` it).
fn page_records(rec: &ContentRecord, info: &RequestInfo, segment: &str) -> Option<Vec<WarcRecord>> {
    let req_block = request_block(&rec.url, info)?;
    let date = warc_date(rec.fetch_time);
    let seed = format!("{segment}\n{}\n{}", rec.url, rec.fetch_time);
    let req_id = record_id(format!("request\n{seed}").as_bytes());
    let resp_id = record_id(format!("response\n{seed}").as_bytes());
    let resp = response_block(rec);
    let payload_digest = sha1_digest(&resp.block[resp.payload_offset..]);

    let mut request = WarcRecord::new("request", &req_id, &date, req_block);
    request
        .add("WARC-Target-URI", rec.url.as_str())
        .add("WARC-Concurrent-To", resp_id.as_str())
        .add("Content-Type", "application/http; msgtype=request");
    if let Some(ip) = &rec.ip_address {
        request.add("WARC-IP-Address", ip.as_str());
    }

    let mut response = WarcRecord::new("response", &resp_id, &date, resp.block);
    response
        .add("WARC-Target-URI", rec.url.as_str())
        .add("WARC-Concurrent-To", req_id.as_str())
        .add("Content-Type", "application/http; msgtype=response")
        .add("WARC-Payload-Digest", payload_digest);
    if let Some(ip) = &rec.ip_address {
        response.add("WARC-IP-Address", ip.as_str());
    }
    if rec.truncated {
        response.add("WARC-Truncated", "length");
    }
    for (name, value) in resp.warc_fields {
        response.add(&name, value);
    }
    let mut records = vec![request, response];
    if let Some(dom) = &rec.rendered {
        let id = record_id(format!("conversion\n{seed}").as_bytes());
        let mut conversion = WarcRecord::new("conversion", &id, &date, dom.as_bytes().to_vec());
        conversion
            .add("WARC-Target-URI", rec.url.as_str())
            .add("WARC-Refers-To", resp_id.as_str())
            .add("Content-Type", "text/html; charset=utf-8");
        records.push(conversion);
    }
    Some(records)
}

struct OpenFile {
    out: BufWriter<File>,
    tmp: PathBuf,
    name: String,
    warcinfo_id: String,
    bytes: u64,
    pairs: u64,
}

/// The rotating set of output files of one export.
struct FileSet<'a> {
    opts: &'a ExportOpts,
    stem: String,
    segment: String,
    segment_path: PathBuf,
    hostname: String,
    current: Option<OpenFile>,
    done: Vec<(PathBuf, PathBuf)>,
    records: u64,
    bytes: u64,
}

impl<'a> FileSet<'a> {
    fn new(opts: &'a ExportOpts, segment: &Segment, stem: String) -> Result<Self> {
        let set = FileSet {
            opts,
            stem,
            segment: segment.name().to_string(),
            segment_path: segment.path().to_path_buf(),
            hostname: hostname(),
            current: None,
            done: Vec::new(),
            records: 0,
            bytes: 0,
        };
        set.remove_matching(|n| n.contains(".warc.gz.tmp-"))?;
        Ok(set)
    }

    /// Removes files of this export's name pattern selected by `pick`.
    fn remove_matching(&self, pick: impl Fn(&str) -> bool) -> Result<()> {
        remove_export_files(&self.opts.out_dir, &self.stem, pick)
    }

    fn open_next(&mut self) -> Result<()> {
        let index = self.done.len();
        let name = format!("{}{index:05}.warc.gz", self.stem);
        let tmp = self
            .opts
            .out_dir
            .join(format!("{name}.tmp-{}", std::process::id()));
        let file = File::create(&tmp).at(&tmp)?;
        let warcinfo_id = record_id(format!("warcinfo\n{}\n{name}", self.segment).as_bytes());
        let mut f = OpenFile {
            out: BufWriter::new(file),
            tmp,
            name,
            warcinfo_id,
            bytes: 0,
            pairs: 0,
        };
        let info = self.warcinfo(&f);
        write_member(&mut f, &info)?;
        self.records += 1;
        self.current = Some(f);
        Ok(())
    }

    fn warcinfo(&self, f: &OpenFile) -> WarcRecord {
        let fields = [
            ("software", format!("trawl/{}", env!("CARGO_PKG_VERSION"))),
            ("format", "WARC File Format 1.1".to_string()),
            (
                "conformsTo",
                "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"
                    .to_string(),
            ),
            ("hostname", self.hostname.clone()),
            ("isPartOf", self.segment.clone()),
            (
                "description",
                format!("trawl segment {}", self.segment_path.display()),
            ),
            ("robots", "obey".to_string()),
            ("http-header-user-agent", self.opts.user_agent.clone()),
        ];
        let mut block = String::new();
        for (k, v) in fields {
            block.push_str(&format!("{k}: {}\r\n", v.replace(['\r', '\n'], " ")));
        }
        let date = warc_date(crate::datum::now_millis());
        let mut r = WarcRecord::new("warcinfo", &f.warcinfo_id, &date, block.into_bytes());
        r.add("WARC-Filename", f.name.as_str())
            .add("Content-Type", "application/warc-fields");
        r
    }

    fn write_page(&mut self, records: &[WarcRecord]) -> Result<()> {
        let rotate = self
            .current
            .as_ref()
            .is_some_and(|f| f.pairs > 0 && f.bytes >= self.opts.max_file_bytes);
        if rotate {
            self.close_current()?;
        }
        if self.current.is_none() {
            self.open_next()?;
        }
        if let Some(f) = self.current.as_mut() {
            for r in records {
                let mut r = r.clone();
                r.headers
                    .insert(3, ("WARC-Warcinfo-ID".into(), f.warcinfo_id.clone()));
                write_member(f, &r)?;
            }
            f.pairs += 1;
        }
        self.records += records.len() as u64;
        Ok(())
    }

    fn close_current(&mut self) -> Result<()> {
        if let Some(f) = self.current.take() {
            let file = f
                .out
                .into_inner()
                .map_err(|e| crate::error::Error::io(&f.tmp, e.into_error()))?;
            file.sync_all().at(&f.tmp)?;
            self.bytes += f.bytes;
            let dest = self.opts.out_dir.join(&f.name);
            self.done.push((f.tmp, dest));
        }
        Ok(())
    }

    /// Closes the last file, removes this segment's files of an earlier export and
    /// renames the new ones into place.
    fn finish(mut self) -> Result<(Vec<PathBuf>, u64, u64)> {
        self.close_current()?;
        self.remove_matching(|n| n.ends_with(".warc.gz"))?;
        let mut out = Vec::new();
        for (tmp, dest) in &self.done {
            fs::rename(tmp, dest).at(dest)?;
            out.push(dest.clone());
        }
        self.done.clear();
        Ok((out, self.records, self.bytes))
    }
}

impl Drop for FileSet<'_> {
    fn drop(&mut self) {
        // An export that failed part way removes its temporary files.
        if let Some(f) = self.current.take() {
            let _ = fs::remove_file(&f.tmp);
        }
        for (tmp, _) in &self.done {
            let _ = fs::remove_file(tmp);
        }
    }
}

fn write_member(f: &mut OpenFile, r: &WarcRecord) -> Result<()> {
    let gz = r.to_gzip_member().at(&f.tmp)?;
    f.out.write_all(&gz).at(&f.tmp)?;
    f.bytes += gz.len() as u64;
    Ok(())
}

fn hostname() -> String {
    fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".to_string())
}

/// The default output directory of an export: `<crawl-dir>/warc`.
pub fn default_out_dir(crawl_dir: &Path) -> PathBuf {
    crate::store::layout::CrawlDir::new(crawl_dir).warc_dir()
}
