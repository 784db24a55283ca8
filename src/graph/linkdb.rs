//! The `linkdb` stage: inverts the outlinks of segments' `parse_data` into inlink
//! rows (target, source, anchor, segment) merged into `linkdb/current`.
//!
//! Like Nutch's `invertlinks`, every outlink is kept whatever its `rel=nofollow`
//! (the linkdb records who links to whom and with which anchor; consumers can
//! filter). Links between pages of the same host are dropped when
//! `linkdb.ignore_internal` is set (off by default, unlike Nutch: a site's anchors
//! are its internal links), links between hosts when `linkdb.ignore_external` is. Self-links are internal. A (target, source) pair is
//! stored once: rows already in the linkdb win over new ones, older segments over
//! newer ones, and an empty anchor is replaced by the first non-empty anchor seen.
//! At most `linkdb.max_inlinks` inlinks are kept per target, preferring the earliest
//! seen (by segment, then source URL), so inverting a segment twice changes nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;
use std::sync::Mutex;

use arrow::array::{Array, AsArray};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::ids::url_host;
use super::source::read_columns;
use crate::config::LinkDbConfig;
use crate::datum::now_millis;
use crate::error::{Error, Result};
use crate::records::InlinkRecord;
use crate::stage::{Guard, Partitioned, Report, StageCtx};
use crate::store::disk;
use crate::store::integrity;
use crate::store::integrity::Check;
use crate::store::jobs::{Job, PartitionSet};
use crate::store::layout::CrawlDir;
use crate::store::layout::Segment;
use crate::store::names::{SegmentDataset, VersionedDb};
use crate::store::parquet::{self, PartWriter};
use crate::store::partition::{PartitionKey, Partitioner};

/// The linkdb's `_meta.json`, stored inside each version.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LinkDbMeta {
    /// Number of partitions (part files), by the target's host (or its registrable
    /// domain: `partition_key`).
    pub partitions: usize,
    /// What the partitions group targets by, the crawl's `partition_key`; `host` in
    /// linkdbs older than it.
    #[serde(default)]
    pub partition_key: PartitionKey,
    /// Segments whose `parse_data` has been inverted into this version.
    #[serde(default)]
    pub inverted_segments: Vec<String>,
    /// When this version was written (ms UTC).
    #[serde(default)]
    pub written_time: i64,
}

/// Name of the linkdb's metadata file.
pub const LINKDB_META: &str = crate::store::names::META;

/// Which segments to invert.
#[derive(Debug, Clone)]
pub enum SegmentChoice {
    /// Every segment with `parse_data` not yet inverted.
    New,
    /// Every segment with `parse_data`.
    All,
    /// These segments (names under `segments/` or paths); each must have `parse_data`.
    Given(Vec<std::path::PathBuf>),
}

/// What linkdb does (flags merged over `[linkdb]` in the config).
#[derive(Debug, Clone)]
pub struct LinkDbOpts {
    /// Which segments to invert.
    pub segments: SegmentChoice,
}

/// What a linkdb run did.
#[derive(Debug, Clone, Default)]
pub struct LinkDbReport {
    /// Segments inverted in this run.
    pub segments: usize,
    /// Outlinks read from them (after the internal/external filters).
    pub links_read: u64,
    /// Rows (distinct target/source pairs) in the new linkdb.
    pub links: u64,
    /// Distinct targets in the new linkdb.
    pub targets: u64,
}

impl fmt::Display for LinkDbReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} segments, {} links read, {} links, {} targets",
            self.segments, self.links_read, self.links, self.targets
        )
    }
}

impl Report for LinkDbReport {
    const STAGE: &'static str = "linkdb";
}

/// Reads the current linkdb's metadata, if there is a linkdb.
pub fn read_meta(dir: &CrawlDir) -> Result<Option<LinkDbMeta>> {
    let cur = dir.linkdb_current();
    integrity::refuse_unmarked(&cur)?;
    if !parquet::dataset_complete(&cur) {
        return Ok(None);
    }
    integrity::verify(&cur, Check::Sizes)?;
    Ok(Some(parquet::read_json(&cur.join(LINKDB_META))?))
}

/// A linkdb task's report (`_report.json` of its attempt): its counts, and what it
/// read, which every attempt of the job must share with the commit.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct TaskReport {
    /// The linkdb version the task merged into ([`version_id`]).
    base: String,
    /// The segments it inverted, in order.
    segments: Vec<String>,
    links_read: u64,
    links: u64,
    targets: u64,
}

/// Identifies the current linkdb version: the blake3 of its manifest (which lists
/// every part's blake3), or `none` without a linkdb.
fn version_id(dir: &CrawlDir) -> Result<String> {
    let v = dir.versioned(VersionedDb::LinkDb).version_id()?;
    Ok(if v.is_empty() { "none".into() } else { v })
}

/// Runs the linkdb stage on the crawl directory of `ctx` (which must exist): in
/// this process, or as one task of a job (the new linkdb parts of some partitions,
/// from the current parts and the segments' `parse_inlinks` for them), or as the
/// job's commit (see docs/tasks-segments.md).
pub fn run(ctx: &StageCtx, opts: &LinkDbOpts) -> Result<LinkDbReport> {
    // Refuses a missing or empty crawl directory before creating anything in it.
    let dir = ctx.open_for_segments()?;
    let dir = &dir;
    let cfg = ctx.config();
    let db = dir.versioned(VersionedDb::LinkDb);
    // A task only reads the linkdb; the commit checks that the version the tasks
    // read is still current.
    crate::stage::execute(ctx, Guard::Db(VersionedDb::LinkDb), || {
        let old_meta = read_meta(dir)?;
        let done: BTreeSet<String> = old_meta
            .as_ref()
            .map(|m| m.inverted_segments.iter().cloned().collect())
            .unwrap_or_default();
        let segments = select_segments(dir, &opts.segments, &done)?;
        let pt = match &old_meta {
            Some(m) if m.partitions > 0 => Partitioner::new(m.partitions, m.partition_key),
            _ => dir
                .crawldb_meta()
                .ok()
                .filter(|m| m.partitions > 0)
                .map(|m| m.partitioner())
                .unwrap_or_else(|| Partitioner::new(cfg.crawl.partitions, cfg.crawl.partition_key)),
        };
        Ok(LinkDb {
            dir,
            cfg,
            db: &db,
            unchanged: segments.is_empty() && old_meta.is_some(),
            segments,
            done,
            pt,
        })
    })
}

/// The linkdb stage as the executor runs it ([`crate::stage::execute`]).
struct LinkDb<'a> {
    dir: &'a CrawlDir,
    cfg: &'a crate::config::Config,
    db: &'a crate::store::versioned::VersionedDataset,
    /// No new segment to invert into a linkdb that exists.
    unchanged: bool,
    segments: Vec<Segment>,
    done: BTreeSet<String>,
    pt: Partitioner,
}

impl Partitioned for LinkDb<'_> {
    type Out = LinkDbReport;
    const NAME: &'static str = "linkdb";

    fn partitions(&self) -> usize {
        self.pt.n()
    }

    fn task(&mut self, job: &Job, set: &PartitionSet, attempt: &str) -> Result<LinkDbReport> {
        let r = run_task(
            self.dir,
            self.cfg,
            &self.segments,
            job,
            set,
            attempt,
            self.pt,
        )?;
        Ok(LinkDbReport {
            segments: self.segments.len(),
            links_read: r.links_read,
            links: r.links,
            targets: r.targets,
        })
    }

    fn commit(&mut self, job: &Job) -> Result<LinkDbReport> {
        commit(self.dir, self.db, &self.segments, &self.done, job, self.pt)
    }

    fn up_to_date(&mut self) -> Result<Option<LinkDbReport>> {
        if !self.unchanged {
            return Ok(None);
        }
        tracing::info!("no new segments to invert; the linkdb is unchanged");
        let mut summary = LinkDbReport {
            segments: 0,
            ..Default::default()
        };
        count_current(self.dir, &mut summary)?;
        Ok(Some(summary))
    }
}

/// The reduce task on partitions `set`: new linkdb part `i` for each `i` in `set`,
/// from the current part `i` and the segments' inlinks of partition `i` (their
/// `parse_inlinks` files of partition `i`, or for segments parsed before parse wrote
/// `parse_inlinks`, their `parse_data` inverted: only in a one-process run).
fn run_task(
    dir: &CrawlDir,
    cfg: &crate::config::Config,
    segments: &[Segment],
    job: &Job,
    set: &PartitionSet,
    attempt: &str,
    pt: Partitioner,
) -> Result<TaskReport> {
    let partitions = pt.n();
    let base = version_id(dir)?;
    let cur = dir.linkdb_current();
    let has_old = parquet::dataset_complete(&cur);
    // Everything read below is written into the new version: refuse a damaged
    // linkdb or segment before anything is written.
    if has_old {
        integrity::verify(&cur, Check::Sizes)?;
        let own_old: Vec<_> = set
            .iter()
            .map(|i| cur.join(parquet::part_name(i)))
            .filter(|p| p.is_file())
            .collect();
        integrity::verify_files(&cur, &own_old)?;
    }
    let legacy: Vec<&Segment> = segments
        .iter()
        .filter(|s| !s.has(SegmentDataset::ParseInlinks))
        .collect();
    if !legacy.is_empty() && !set.is_all(partitions) {
        return Err(Error::crawl_dir(
            legacy[0].path(),
            format!(
                "segment {} was parsed before parse wrote parse_inlinks/ (linkdb's shuffle): a linkdb task would have to read every partition's parse_data; invert it once without --job (or parse it again with --reparse)",
                legacy[0].name()
            ),
        ));
    }
    for seg in segments {
        if seg.has(SegmentDataset::ParseInlinks) {
            let d = seg.dataset(SegmentDataset::ParseInlinks);
            integrity::verify(&d, Check::Sizes)?;
            let mut files = Vec::new();
            for i in set.iter() {
                files.extend(parquet::partition_files(&d, i)?);
            }
            integrity::verify_files(&d, &files)?;
        } else {
            seg.verify(SegmentDataset::ParseData, Check::Checksums)?;
        }
    }
    check_space(dir, segments)?;
    let mut report = TaskReport {
        base,
        segments: segments.iter().map(|s| s.name().to_string()).collect(),
        ..Default::default()
    };
    // Legacy segments (one-process runs only): inverted whole, as before.
    let mut legacy_rows: BTreeMap<String, Vec<Vec<InlinkRecord>>> = BTreeMap::new();
    for seg in &legacy {
        interrupted()?;
        legacy_rows.insert(
            seg.name().to_string(),
            invert_parse_data(seg, &cfg.linkdb, pt)?,
        );
    }
    let w = job.attempt_writer(set, attempt)?;
    let out = w.dataset(crate::store::names::LINKDB)?;
    let old = has_old.then_some(cur.as_path());
    let legacy_rows = Mutex::new(legacy_rows);
    let counts: Vec<Result<(u64, u64, u64)>> = set
        .iter()
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|i| {
            let mut new_rows = Vec::new();
            for seg in segments {
                if seg.has(SegmentDataset::ParseInlinks) {
                    read_inlinks(seg, i, &cfg.linkdb, &mut new_rows)?;
                } else {
                    let mut l = legacy_rows.lock().unwrap_or_else(|e| e.into_inner());
                    if let Some(b) = l.get_mut(seg.name()) {
                        new_rows.append(&mut b[i]);
                    }
                }
            }
            let read = new_rows.len() as u64;
            let (n, t) = run_partition(old, &out, i, new_rows, cfg.linkdb.max_inlinks)?;
            Ok((read, n, t))
        })
        .collect();
    for c in counts {
        let (r, n, t) = c?;
        report.links_read += r;
        report.links += n;
        report.targets += t;
    }
    w.finish(&report)?;
    Ok(report)
}

/// The commit: the chosen attempts must have read the linkdb version still current
/// and inverted the same segments; their parts are linked into a new version with
/// its `_meta.json`, which is installed; the job is removed.
fn commit(
    dir: &CrawlDir,
    db: &crate::store::versioned::VersionedDataset,
    segments: &[Segment],
    done: &BTreeSet<String>,
    job: &Job,
    pt: Partitioner,
) -> Result<LinkDbReport> {
    let partitions = pt.n();
    let chosen = job.choose(partitions)?;
    let now = version_id(dir)?;
    let names: Vec<String> = segments.iter().map(|s| s.name().to_string()).collect();
    let mut summary = LinkDbReport {
        segments: segments.len(),
        ..Default::default()
    };
    let mut reports = Vec::with_capacity(chosen.len());
    for a in &chosen {
        let r: TaskReport = a.report()?;
        if r.base != now || r.segments != names {
            return Err(Error::crawl_dir(
                job.dir(),
                format!(
                    "cannot commit job {}: attempt {} (partitions {}) merged into another linkdb version or other segments ({}) than the current linkdb and the segments to invert now ({}); the linkdb changed since its tasks ran: run the job's tasks again under a new job id",
                    job.id(),
                    a.attempt(),
                    a.partitions(),
                    r.segments.join(" "),
                    names.join(" ")
                ),
            ));
        }
        reports.push(r);
    }
    let staged = db.stage()?;
    for a in &chosen {
        a.link_parts(crate::store::names::LINKDB, staged.path())?;
    }
    for r in &reports {
        summary.links_read += r.links_read;
        summary.links += r.links;
        summary.targets += r.targets;
    }
    let mut inverted = done.clone();
    inverted.extend(names);
    let meta = LinkDbMeta {
        partitions,
        partition_key: pt.key(),
        inverted_segments: inverted.into_iter().collect(),
        written_time: now_millis(),
    };
    parquet::write_json(&staged.path().join(LINKDB_META), &meta)?;
    db.install(staged, "linkdb")?;
    Ok(summary)
}

/// Appends the inlinks of partition `i` that parse inverted for segment `seg`
/// (`parse_inlinks/` files of partition `i`), filtered and capped as `cfg` says.
fn read_inlinks(
    seg: &Segment,
    i: usize,
    cfg: &LinkDbConfig,
    out: &mut Vec<InlinkRecord>,
) -> Result<()> {
    let d = seg.dataset(SegmentDataset::ParseInlinks);
    for f in parquet::partition_files(&d, i)? {
        for rows in parquet::read_part::<InlinkRecord>(&f)? {
            for mut r in rows? {
                let internal = url_host(&r.url) == url_host(&r.from_url);
                if (internal && cfg.ignore_internal) || (!internal && cfg.ignore_external) {
                    continue;
                }
                r.anchor = cap_chars(&r.anchor, cfg.max_anchor_length);
                r.segment = seg.name().to_string();
                out.push(r);
            }
        }
    }
    Ok(())
}

/// Refuses to start when the disk cannot hold the new linkdb version: the current
/// one plus the segments' `parse_data` (whose outlinks become its new rows; an upper
/// bound), docs/crawldb.md, Disk.
fn check_space(dir: &CrawlDir, segments: &[Segment]) -> Result<()> {
    let mut need = disk::dataset_bytes(&dir.linkdb_current())?;
    for seg in segments {
        need += disk::dataset_bytes(&seg.dataset(SegmentDataset::ParseData))?;
    }
    disk::ensure_space(
        &dir.linkdb(),
        disk::with_headroom(need),
        "linkdb",
        &format!("the new linkdb version (about {})", disk::human(need)),
    )
}

/// The segments `choice` names: given ones must have `parse_data`; otherwise every
/// segment with `parse_data` (not yet in `done` unless [`SegmentChoice::All`]). None
/// may be locked by a stage writing it.
fn select_segments(
    dir: &CrawlDir,
    choice: &SegmentChoice,
    done: &BTreeSet<String>,
) -> Result<Vec<Segment>> {
    let segments: Vec<Segment> = match choice {
        SegmentChoice::Given(args) => {
            let mut out = Vec::new();
            for a in args {
                let seg = dir.segment(a)?;
                seg.check_unlocked("linkdb")?;
                seg.require(SegmentDataset::ParseData, "parse")?;
                out.push(seg);
            }
            out
        }
        SegmentChoice::New | SegmentChoice::All => {
            let all = matches!(choice, SegmentChoice::All);
            dir.segments()?
                .into_iter()
                .filter(|s| {
                    let ok = s.has(SegmentDataset::ParseData);
                    if !ok {
                        tracing::info!(
                            "skipping segment {}: no parse_data yet (run parse)",
                            s.name()
                        );
                    }
                    ok && (all || !done.contains(s.name()))
                })
                .collect()
        }
    };
    // A segment a stage is writing (fetch, parse, a segment tool) must not be
    // inverted half done.
    for s in &segments {
        s.check_unlocked("linkdb")?;
    }
    Ok(segments)
}

/// Counts the rows and targets of the current linkdb into `summary` (nothing to invert).
fn count_current(dir: &CrawlDir, summary: &mut LinkDbReport) -> Result<()> {
    let cur = dir.linkdb_current();
    for p in parquet::part_files(&cur)? {
        for rows in parquet::read_part::<InlinkRecord>(&p)? {
            let rows = rows?;
            summary.links += rows.len() as u64;
            summary.targets += count_targets(&rows);
        }
    }
    Ok(())
}

/// Inverts one segment's `parse_data` outlinks (a segment parsed before parse wrote
/// `parse_inlinks/`): new inlinks bucketed by the target's partition.
fn invert_parse_data(
    seg: &Segment,
    cfg: &LinkDbConfig,
    pt: Partitioner,
) -> Result<Vec<Vec<InlinkRecord>>> {
    let mut buckets: Vec<Vec<InlinkRecord>> = vec![Vec::new(); pt.n()];
    let files = parquet::part_files(&seg.dataset(SegmentDataset::ParseData))?;
    let per_file: Vec<Result<Vec<Vec<InlinkRecord>>>> = files
        .par_iter()
        .map(|f| invert_file(f, seg.name(), cfg, pt))
        .collect();
    for b in per_file {
        for (p, rows) in b?.into_iter().enumerate() {
            buckets[p].extend(rows);
        }
    }
    Ok(buckets)
}

/// Partition `i` of the new linkdb: the current version's part `i` (when `old` is the
/// current version's directory) merged with the new inlinks `new_rows`, written into
/// the directory `out`. Returns (rows, targets) written.
fn run_partition(
    old: Option<&Path>,
    out: &Path,
    i: usize,
    new_rows: Vec<InlinkRecord>,
    max_inlinks: usize,
) -> Result<(u64, u64)> {
    interrupted()?;
    let mut rows = match old {
        Some(cur) => {
            let path = cur.join(parquet::part_name(i));
            if path.is_file() {
                parquet::read_part_all::<InlinkRecord>(&path)?
            } else {
                Vec::new()
            }
        }
        None => Vec::new(),
    };
    rows.extend(new_rows);
    let rows = merge_inlinks(rows, max_inlinks);
    let targets = count_targets(&rows);
    let mut w = PartWriter::<InlinkRecord>::create(&out.join(parquet::part_name(i)))?;
    let n = rows.len() as u64;
    for r in rows {
        w.push(r)?;
    }
    w.finish()?;
    Ok((n, targets))
}

/// Stops linkdb at a SIGINT/SIGTERM ([`crate::signal`]): nothing installed.
fn interrupted() -> Result<()> {
    crate::signal::check(
        "linkdb stopped before installing anything: the linkdb is unchanged; rerun linkdb",
    )
}

fn count_targets(rows: &[InlinkRecord]) -> u64 {
    let mut n = 0;
    for (i, r) in rows.iter().enumerate() {
        if i == 0 || rows[i - 1].url != r.url {
            n += 1;
        }
    }
    n
}

/// Cuts `s` to at most `max` characters.
fn cap_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => s[..i].to_string(),
        None => s.to_string(),
    }
}

/// Inverts one `parse_data` file into inlinks bucketed by the target's partition.
fn invert_file(
    path: &Path,
    segment: &str,
    cfg: &LinkDbConfig,
    pt: Partitioner,
) -> Result<Vec<Vec<InlinkRecord>>> {
    let mut out: Vec<Vec<InlinkRecord>> = vec![Vec::new(); pt.n()];
    for batch in read_columns(path, &["url", "outlinks"])? {
        let batch = batch?;
        let bad = || Error::crawl_dir(path, "not a parse_data file (unexpected column types)");
        let url = batch.column(0).as_string_opt::<i32>().ok_or_else(bad)?;
        let list = batch.column(1).as_list_opt::<i32>().ok_or_else(bad)?;
        let items = list.values().as_struct_opt().ok_or_else(bad)?;
        let targets = items
            .column_by_name("url")
            .and_then(|c| c.as_string_opt::<i32>())
            .ok_or_else(bad)?;
        let anchors = items
            .column_by_name("anchor")
            .and_then(|c| c.as_string_opt::<i32>())
            .ok_or_else(bad)?;
        let offsets = list.value_offsets();
        for i in 0..batch.num_rows() {
            if list.is_null(i) {
                continue;
            }
            let from = url.value(i);
            let from_host = url_host(from);
            for j in offsets[i] as usize..offsets[i + 1] as usize {
                let to = targets.value(j);
                let to_host = url_host(to);
                let internal = to_host == from_host;
                if (internal && cfg.ignore_internal) || (!internal && cfg.ignore_external) {
                    continue;
                }
                let anchor = if anchors.is_null(j) {
                    String::new()
                } else {
                    cap_chars(anchors.value(j), cfg.max_anchor_length)
                };
                out[pt.of_host(&to_host)].push(InlinkRecord {
                    url: to.to_string(),
                    from_url: from.to_string(),
                    anchor,
                    segment: segment.to_string(),
                });
            }
        }
    }
    Ok(out)
}

/// Merges inlink rows given oldest first: one row per (url, from_url), the first
/// seen kept (its anchor replaced by the first non-empty one if empty), at most
/// `max_inlinks` per url (the earliest by segment, then source), sorted by
/// (url, from_url).
pub fn merge_inlinks(mut rows: Vec<InlinkRecord>, max_inlinks: usize) -> Vec<InlinkRecord> {
    // Stable: among equal keys the oldest stays first.
    rows.par_sort_by(|a, b| (&a.url, &a.from_url).cmp(&(&b.url, &b.from_url)));
    let mut out: Vec<InlinkRecord> = Vec::with_capacity(rows.len());
    for r in rows {
        if let Some(last) = out.last_mut()
            && last.url == r.url
            && last.from_url == r.from_url
        {
            if last.anchor.is_empty() && !r.anchor.is_empty() {
                last.anchor = r.anchor;
            }
            continue;
        }
        out.push(r);
    }
    // Cap per target.
    let mut capped = Vec::with_capacity(out.len());
    let mut start = 0;
    while start < out.len() {
        let mut end = start + 1;
        while end < out.len() && out[end].url == out[start].url {
            end += 1;
        }
        if end - start > max_inlinks {
            let mut group: Vec<InlinkRecord> = out[start..end].to_vec();
            group.sort_by(|a, b| (&a.segment, &a.from_url).cmp(&(&b.segment, &b.from_url)));
            group.truncate(max_inlinks);
            group.sort_by(|a, b| a.from_url.cmp(&b.from_url));
            capped.extend(group);
        } else {
            capped.extend(out[start..end].iter().cloned());
        }
        start = end;
    }
    capped
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(url: &str, from: &str, anchor: &str, seg: &str) -> InlinkRecord {
        InlinkRecord {
            url: url.into(),
            from_url: from.into(),
            anchor: anchor.into(),
            segment: seg.into(),
        }
    }

    #[test]
    fn merge_keeps_first_and_fills_empty_anchor() {
        let rows = vec![
            r("b", "x", "", "s1"),
            r("a", "y", "first", "s1"),
            r("a", "y", "second", "s2"),
            r("b", "x", "late", "s2"),
        ];
        let m = merge_inlinks(rows, 10);
        assert_eq!(
            m,
            vec![r("a", "y", "first", "s1"), r("b", "x", "late", "s1")]
        );
        // Idempotent.
        let again = merge_inlinks([m.clone(), m.clone()].concat(), 10);
        assert_eq!(again, m);
    }

    #[test]
    fn cap_prefers_oldest_segment() {
        let rows = vec![
            r("t", "z", "", "s1"),
            r("t", "a", "", "s2"),
            r("t", "b", "", "s2"),
        ];
        let m = merge_inlinks(rows, 2);
        assert_eq!(m, vec![r("t", "a", "", "s2"), r("t", "z", "", "s1")]);
    }

    #[test]
    fn anchors_are_capped_by_characters() {
        assert_eq!(cap_chars("héllo", 2), "hé");
        assert_eq!(cap_chars("hi", 5), "hi");
    }
}
