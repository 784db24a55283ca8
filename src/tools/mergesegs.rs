//! `mergesegs`: merges several segments into one new segment (Nutch's
//! `SegmentMerger`), optionally filtering and normalizing URLs and slicing the
//! output by URL count.
//!
//! **What is merged.** Every dataset, partition by partition (the output has the
//! crawldb's partition count; inputs with another count are re-partitioned). When
//! a URL was fetched in several inputs, the newest fetch wins (latest
//! `crawl_fetch.fetch_time`, ties to the newer segment) and every row about that
//! URL comes from the winning segment: its `crawl_generate`, `crawl_fetch`,
//! `content`, `parse_text`, `parse_data` rows, its `crawl_parse` signature row and
//! the `crawl_parse` link rows of the links on it. `crawl_generate`, `crawl_fetch`,
//! `parse_data` and `crawl_parse` are sorted by URL in each part; `content` and
//! `parse_text` (the heavy ones) are streamed in input order with bounded memory.
//! `robots` (what fetch learned from each origin's robots.txt, whose `Sitemap:`
//! lines the sitemap stage reads) keeps the newest fetch of each origin's
//! robots.txt. The datasets are those of [`SEGMENT_DATASETS`], the one list of
//! them; a dataset without a merge rule here is refused, never dropped.
//!
//! **Applied state.** Only segments whose data already reached the crawldb (listed
//! in its `applied_segments`) and the linkdb (listed in its `inverted_segments`,
//! when there is a linkdb) are merged; anything else is refused, naming the stage
//! to run, before anything is written. The new segments' names are then added to
//! both lists, so `updatedb` and `linkdb` never apply the merged data a second
//! time, and no unapplied data can be lost by the newest-wins rule. Each output
//! records its provenance in `_merged.json` ([`Provenance`]).
//!
//! **Crash safety.** The tool holds the crawldb and linkdb locks, and the lock of
//! every input and output segment (`segments/<name>.lock`). Outputs are
//! written under `segments/<name>.tmp-<pid>` (invisible to every stage); once all
//! are complete their names are recorded in the crawldb's and linkdb's
//! `_meta.json` (each replaced atomically), then they are renamed into place, and
//! only then are inputs removed (`--delete-inputs`: each renamed away, then
//! deleted). A kill before the renames leaves the inputs as they were (the
//! recorded names of segments that never appeared are harmless); a kill during the
//! deletions is finished by rerunning the same command, which finds the installed
//! merge of the same inputs with the same options and only deletes.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::fs;
use std::path::PathBuf;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::segstate::{self, Applied};
use crate::datum::{CrawlDatum, Millis, now_millis};
use crate::error::{Error, IoContext, Result};
use crate::graph::linkdb::{LINKDB_META, LinkDbMeta};
use crate::net::robots::RobotsRecord;
use crate::records::{
    ContentRecord, CrawlParseRecord, FetchRecord, ParseDataRecord, ParseTextRecord,
};
use crate::stage::{Report, StageCtx};
use crate::store::disk;
use crate::store::integrity::Check;
use crate::store::layout::{
    CRAWLDB_META, CrawlDir, SEGMENT_DATASETS, SEGMENT_META, Segment, SegmentMeta,
};
use crate::store::lock::{Lock, segment_lock_path};
use crate::store::names::SegmentDataset;
use crate::store::parquet::{
    self, PartWriter, Record, SUCCESS_MARKER, StagedDataset, part_files, part_name, read_part,
};
use crate::store::partition::Partitioner;
use crate::store::versioned::test_pause;
use crate::urls::{UrlPolicy, host_of};

/// The provenance file of a merged segment.
pub const PROVENANCE: &str = "_merged.json";

/// Bytes of content (or text) buffered per output part before a row group is
/// written out, so memory stays bounded whatever the page sizes.
const FLUSH_BYTES: usize = 8 * 1024 * 1024;

/// `_merged.json`: where a merged segment's data came from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// The segments given to the merge that produced this one.
    pub inputs: Vec<String>,
    /// Every segment whose data this one holds: the inputs and, for inputs that
    /// were themselves merged, what they were merged from.
    pub merged_from: Vec<String>,
    /// When the merge ran (ms UTC).
    pub merged_time: Millis,
    /// This output's index among the merge's outputs (`--slice`), from 0.
    pub slice: usize,
    /// How many outputs the merge wrote.
    pub slices: usize,
    /// Whether URLs went through the configured filters (`--filter`).
    pub filtered: bool,
    /// Whether URLs were normalized (`--normalize`).
    pub normalized: bool,
    /// The `--slice` size given, if any.
    #[serde(default)]
    pub slice_size: Option<u64>,
}

/// Reads a segment's `_merged.json`, if it is a merged segment.
pub fn provenance(seg: &Segment) -> Result<Option<Provenance>> {
    let p = seg.path().join(PROVENANCE);
    if !p.is_file() {
        return Ok(None);
    }
    Ok(Some(parquet::read_json(&p)?))
}

/// What one mergesegs run does.
#[derive(Debug, Clone, Default)]
pub struct MergeSegsOpts {
    /// The segments to merge (names under `segments/` or paths).
    pub segments: Vec<PathBuf>,
    /// Drop URLs the configured `[urls]` filters reject.
    pub filter: bool,
    /// Normalize URLs with the configured `[urls]` normalization.
    pub normalize: bool,
    /// At most this many URLs per output segment.
    pub slice: Option<u64>,
    /// Delete the inputs once the output is installed.
    pub delete_inputs: bool,
}

/// What a mergesegs run did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MergeReport {
    /// The segments merged, oldest first.
    pub inputs: Vec<String>,
    /// The segments written (paths), in slice order.
    pub outputs: Vec<PathBuf>,
    /// `crawl_fetch` rows read from the inputs.
    pub input_rows: u64,
    /// URLs written (one `crawl_fetch` row each).
    pub urls: u64,
    /// Older fetches of a URL dropped because a newer one won.
    pub superseded: u64,
    /// Fetches dropped by `--filter`.
    pub filtered: u64,
    /// Inputs deleted (`--delete-inputs`).
    pub deleted: Vec<String>,
    /// Installed segments that already are this merge (same inputs and options),
    /// found by a rerun; nothing new is written then.
    pub existing: Vec<String>,
    /// Segments given that were gone because an earlier (interrupted) run had
    /// merged them: (segment, merged into).
    pub already_merged: Vec<(String, String)>,
    /// Bytes of the inputs' files.
    pub input_bytes: u64,
    /// Bytes of the outputs' files.
    pub output_bytes: u64,
}

impl fmt::Display for MergeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self
            .outputs
            .iter()
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        write!(
            f,
            "merged [{}] into [{}]: {} urls ({} fetch rows read, {} superseded, {} filtered), {} -> {} bytes, {} inputs deleted",
            self.inputs.join(", "),
            names.join(", "),
            self.urls,
            self.input_rows,
            self.superseded,
            self.filtered,
            self.input_bytes,
            self.output_bytes,
            self.deleted.len()
        )
    }
}

impl Report for MergeReport {
    const STAGE: &'static str = "mergesegs";
}

/// How URLs become merge keys: as they are, filtered, normalized, or both.
struct Keyer {
    policy: UrlPolicy,
    filter: bool,
    normalize: bool,
}

impl Keyer {
    fn rewrites(&self) -> bool {
        self.filter || self.normalize
    }

    /// The key of `url`, or `None` when the filters reject it.
    fn key(&self, url: &str) -> Option<String> {
        match (self.filter, self.normalize) {
            (false, false) => Some(url.to_string()),
            (true, false) => self.policy.check(url).ok().map(|_| url.to_string()),
            (false, true) => Some(
                url::Url::parse(url)
                    .ok()
                    .and_then(|u| self.policy.normalize(u).ok())
                    .map(|u| u.to_string())
                    .unwrap_or_else(|| url.to_string()),
            ),
            (true, true) => self.policy.check(url).ok().map(|u| u.to_string()),
        }
    }
}

/// One input segment.
struct Input {
    seg: Segment,
    parts: Partitioner,
}

/// Everything the per-partition merge needs.
struct Plan<'a> {
    inputs: &'a [Input],
    /// The output's partitioning (the crawldb's).
    pt: Partitioner,
    keyer: &'a Keyer,
    /// key -> (fetch time, input index) of the winning fetch.
    winners: HashMap<String, (Millis, usize)>,
    /// key -> output slice (absent: slice 0).
    slice_of: HashMap<String, usize>,
    slices: usize,
    outputs: Vec<PathBuf>,
    datasets: Vec<SegmentDataset>,
}

#[derive(Debug, Default, Clone)]
struct PartStats {
    /// crawl_generate rows per slice.
    generate: Vec<u64>,
    /// crawl_fetch rows per slice.
    fetch: Vec<u64>,
}

/// Runs mergesegs on the crawl directory of `ctx` (which must have a crawldb).
///
/// About 110 lines, on purpose: it is the sequence of a merge's crash-safe steps (lock,
/// clean up, resolve inputs, plan, stage, run the partitions, record, install, delete
/// inputs) with the test-pause points between them, each step its own function; read
/// in one place, the order that makes a kill at any point recoverable stays visible.
pub fn run(ctx: &StageCtx, opts: &MergeSegsOpts) -> Result<MergeReport> {
    let dir = ctx.open_existing()?;
    if opts.segments.is_empty() {
        return Err(Error::input(
            "mergesegs",
            "no segments given: name the segments to merge (see `readseg --list`)",
        ));
    }
    if opts.slice == Some(0) {
        return Err(Error::input(
            "--slice",
            "must be at least 1 URL per segment",
        ));
    }
    let (_held, applied) = Applied::lock(ctx, &dir, "mergesegs")?;
    segstate::clean_leftovers(&dir)?;
    let mut report = MergeReport::default();
    let (live, earlier) = resolve_inputs(&dir, opts, &mut report)?;
    // Every input's lock, held to the end: no stage writes into an input (a reparse)
    // or reads one (warc) while it is merged or deleted.
    let _input_locks = live
        .iter()
        .map(|s| s.lock("mergesegs"))
        .collect::<Result<Vec<_>>>()?;
    if live.is_empty() {
        tracing::info!("every segment given was already merged and removed: nothing to do");
        return Ok(report);
    }
    let done = same_merge(&earlier, opts, &report);
    if !done.is_empty() {
        finish_existing(&live, done, opts, &mut report)?;
        return Ok(report);
    }
    let inputs = check_inputs(&applied, &live, &mut report)?;
    // The merged segments hold at most what the inputs hold.
    disk::ensure_space(
        &dir.segments_dir(),
        disk::with_headroom(report.input_bytes),
        "mergesegs",
        &format!(
            "the merged segments (about {})",
            disk::human(report.input_bytes)
        ),
    )?;

    let crawldb_meta = dir.crawldb_meta()?;
    let keyer = Keyer {
        policy: UrlPolicy::new(&ctx.config().urls, &crawldb_meta.seed_hosts)?,
        filter: opts.filter,
        normalize: opts.normalize,
    };
    let pt = crawldb_meta.partitioner();
    let n = pt.n();
    let winners = find_winners(&inputs, &keyer, &mut report)?;
    let (slice_of, slices) = slice_keys(&winners, opts.slice);
    let newest_input = report.inputs.last().cloned().unwrap_or_default();
    let (names, last_name_secs) = output_names(&dir, &applied, &newest_input, slices);
    let datasets = datasets_to_merge(&inputs)?;

    // The outputs' locks, taken before they are staged and held to the end: once
    // renamed into place they are complete, but no stage touches them before the
    // whole merge (input deletions included) is done.
    let _output_locks = names
        .iter()
        .map(|nm| {
            Lock::acquire(
                &segment_lock_path(&dir.segments_dir().join(nm)),
                "mergesegs",
            )
        })
        .collect::<Result<Vec<_>>>()?;
    let staged: Vec<StagedDataset> = names
        .iter()
        .map(|nm| StagedDataset::new(&dir.segments_dir().join(nm)))
        .collect::<Result<_>>()?;
    for st in &staged {
        for d in &datasets {
            let p = st.path().join(d.as_str());
            fs::create_dir_all(&p).at(&p)?;
        }
    }
    let plan = Plan {
        inputs: &inputs,
        pt,
        keyer: &keyer,
        winners,
        slice_of,
        slices,
        outputs: staged.iter().map(|s| s.path().to_path_buf()).collect(),
        datasets,
    };
    let pb = crate::cli::progress_bar(n as u64, "mergesegs");
    let stats = (0..n)
        .into_par_iter()
        .map(|i| {
            let st = plan.run_partition(i);
            pb.inc(1);
            st
        })
        .collect::<Result<Vec<PartStats>>>()?;
    pb.finish_and_clear();

    let outputs = Outputs {
        names: &names,
        staged: &staged,
        datasets: &plan.datasets,
        partitions: pt,
        slices,
    };
    write_output_metas(&outputs, &inputs, &stats, opts, &mut report)?;
    test_pause("mergesegs:staged");
    record_outputs(&dir, &applied, &names, last_name_secs)?;
    test_pause("mergesegs:recorded");
    for st in staged {
        report.outputs.push(st.commit()?);
    }
    test_pause("mergesegs:installed");
    if opts.delete_inputs {
        for s in &live {
            segstate::remove_dir(s.path())?;
            report.deleted.push(s.name().to_string());
        }
    }
    Ok(report)
}

/// Installed merged segments (by name) and what each was merged from.
type Provenances = Vec<(String, Provenance)>;

/// The segments given that are still there (opened, each once), with the installed
/// merged segments' provenance; segments an earlier run merged and removed are
/// noted in `report.already_merged`.
fn resolve_inputs(
    dir: &CrawlDir,
    opts: &MergeSegsOpts,
    report: &mut MergeReport,
) -> Result<(Vec<Segment>, Provenances)> {
    // Which installed segments hold which others (reruns, interrupted runs).
    let mut merged_into: HashMap<String, String> = HashMap::new();
    let mut earlier: Vec<(String, Provenance)> = Vec::new();
    for s in dir.segments()? {
        if let Some(p) = provenance(&s)? {
            for m in &p.merged_from {
                merged_into.insert(m.clone(), s.name().to_string());
            }
            earlier.push((s.name().to_string(), p));
        }
    }
    let mut live: Vec<Segment> = Vec::new();
    for a in &opts.segments {
        match dir.segment(a) {
            Ok(s) => {
                if !live.iter().any(|l| l.name() == s.name()) {
                    live.push(s);
                }
            }
            Err(e) => {
                let name = a
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                match merged_into.get(&name) {
                    Some(into) => {
                        tracing::warn!(
                            "segment {name} is gone: an earlier mergesegs merged it into {into}"
                        );
                        report.already_merged.push((name, into.clone()));
                    }
                    None => return Err(e),
                }
            }
        }
    }
    let live = segstate::open_segments(
        dir,
        &live
            .iter()
            .map(|s| s.path().to_path_buf())
            .collect::<Vec<_>>(),
    )?;
    report.inputs = live.iter().map(|s| s.name().to_string()).collect();
    Ok((live, earlier))
}

/// The installed segments that already are this merge (same inputs, same options):
/// found by a rerun, or a run killed while deleting its inputs.
fn same_merge(
    earlier: &[(String, Provenance)],
    opts: &MergeSegsOpts,
    report: &MergeReport,
) -> Vec<String> {
    let requested: BTreeSet<String> = report
        .inputs
        .iter()
        .cloned()
        .chain(report.already_merged.iter().map(|(n, _)| n.clone()))
        .collect();
    earlier
        .iter()
        .filter(|(_, p)| {
            p.inputs.iter().cloned().collect::<BTreeSet<_>>() == requested
                && p.filtered == opts.filter
                && p.normalized == opts.normalize
                && p.slice_size == opts.slice
        })
        .map(|(n, _)| n.clone())
        .collect()
}

/// The same merge is installed already (`done`): only the deletion of the inputs is
/// left to do (`--delete-inputs`).
fn finish_existing(
    live: &[Segment],
    done: Vec<String>,
    opts: &MergeSegsOpts,
    report: &mut MergeReport,
) -> Result<()> {
    if opts.delete_inputs {
        for s in live {
            tracing::warn!(
                "segment {} is already merged into [{}]: finishing its deletion",
                s.name(),
                done.join(", ")
            );
            report.input_bytes += segstate::disk_bytes(s.path());
            segstate::remove_dir(s.path())?;
            report.deleted.push(s.name().to_string());
        }
    } else {
        tracing::warn!(
            "these segments are already merged into [{}] with the same options: nothing to do",
            done.join(", ")
        );
    }
    report.existing = done;
    Ok(())
}

/// Refuses before writing anything: unfetched, unparsed or unapplied inputs, or a
/// damaged dataset. Returns the inputs with their partition counts.
fn check_inputs(
    applied: &Applied,
    live: &[Segment],
    report: &mut MergeReport,
) -> Result<Vec<Input>> {
    let mut inputs = Vec::new();
    for s in live {
        if let Some(why) = applied.pending(s) {
            return Err(Error::crawl_dir(
                s.path(),
                format!(
                    "{why}. mergesegs only merges segments whose data already reached the crawldb and the linkdb, so that nothing is applied twice or lost; nothing was changed"
                ),
            ));
        }
        s.require(SegmentDataset::CrawlGenerate, "generate")?;
        // Copied into the merged segments (and, with --delete-inputs, the only copy
        // left): every dataset is checked in full first.
        s.verify_all(Check::Checksums)?;
        let meta = s.meta()?;
        report.input_bytes += segstate::disk_bytes(s.path());
        inputs.push(Input {
            seg: s.clone(),
            parts: meta.partitioner(),
        });
    }
    Ok(inputs)
}

/// The winning fetch of every URL key: key -> (fetch time, input index), the newest
/// fetch winning, ties to the newer input. Counts rows read, filtered and superseded.
fn find_winners(
    inputs: &[Input],
    keyer: &Keyer,
    report: &mut MergeReport,
) -> Result<HashMap<String, (Millis, usize)>> {
    let mut winners: HashMap<String, (Millis, usize)> = HashMap::new();
    for (k, inp) in inputs.iter().enumerate() {
        for p in part_files(&inp.seg.dataset(SegmentDataset::CrawlFetch))? {
            for rows in read_part::<FetchRecord>(&p)? {
                for r in rows? {
                    report.input_rows += 1;
                    let Some(key) = keyer.key(&r.url) else {
                        report.filtered += 1;
                        continue;
                    };
                    let cand = (r.fetch_time, k);
                    let e = winners.entry(key).or_insert(cand);
                    if cand > *e {
                        *e = cand;
                    }
                }
            }
        }
    }
    if winners.is_empty() {
        return Err(Error::input(
            "mergesegs",
            "no URL left to write (every fetch was filtered out); nothing was changed",
        ));
    }
    report.superseded = report.input_rows - report.filtered - winners.len() as u64;
    Ok(winners)
}

/// Slices: URL keys in sorted order, cut every `slice` URLs. Returns key -> slice
/// (absent: slice 0) and the number of slices.
fn slice_keys(
    winners: &HashMap<String, (Millis, usize)>,
    slice: Option<u64>,
) -> (HashMap<String, usize>, usize) {
    let mut slice_of = HashMap::new();
    let mut slices = 1;
    if let Some(size) = slice
        && winners.len() as u64 > size
    {
        let mut keys: Vec<&String> = winners.keys().collect();
        keys.sort();
        let size = size as usize;
        slices = keys.len().div_ceil(size);
        for (j, key) in keys.into_iter().enumerate() {
            slice_of.insert(key.clone(), j / size);
        }
    }
    (slice_of, slices)
}

/// Output names: after every existing segment name and after `newest_input`, never
/// one already recorded. Returns them with the second of the last one.
fn output_names(
    dir: &CrawlDir,
    applied: &Applied,
    newest_input: &str,
    slices: usize,
) -> (Vec<String>, i64) {
    let mut names: Vec<String> = Vec::new();
    // From a few seconds back (so the clock is soon past the last name; see
    // `record_outputs`), but after the newest input.
    let newest_secs = chrono::NaiveDateTime::parse_from_str(newest_input, "%Y%m%d%H%M%S")
        .map(|d| d.and_utc().timestamp())
        .unwrap_or(0);
    let mut t = (now_millis() / 1000 - slices as i64).max(newest_secs + 1);
    while names.len() < slices {
        let name = chrono::DateTime::from_timestamp(t, 0)
            .map(|d| d.format("%Y%m%d%H%M%S").to_string())
            .unwrap_or_else(|| format!("{t:014}"));
        t += 1;
        let taken = dir.segments_dir().join(&name).exists()
            || applied.crawldb.contains(&name)
            || applied.partial.contains(&name)
            || applied.linkdb.as_ref().is_some_and(|l| l.contains(&name))
            || names.contains(&name);
        if !taken && name.as_str() > newest_input {
            names.push(name);
        }
    }
    (names, t - 1)
}

/// Every dataset of the segment layout (one list: `layout::SEGMENT_DATASETS`): those
/// every applied segment has, and the others when some input has them.
fn datasets_to_merge(inputs: &[Input]) -> Result<Vec<SegmentDataset>> {
    let mut datasets: Vec<SegmentDataset> = Vec::new();
    for d in SEGMENT_DATASETS {
        let how = merge_kind(d).ok_or_else(|| {
            Error::input(
                "mergesegs",
                format!(
                    "internal: no merge rule for the segment dataset {d}/; nothing was changed"
                ),
            )
        })?;
        if how == MergeKind::Always
            || (how == MergeKind::IfPresent && inputs.iter().any(|i| i.seg.has(d)))
        {
            datasets.push(d);
        }
    }
    Ok(datasets)
}

/// The staged outputs of one merge.
struct Outputs<'a> {
    names: &'a [String],
    staged: &'a [StagedDataset],
    datasets: &'a [SegmentDataset],
    partitions: Partitioner,
    slices: usize,
}

/// Completes every staged output: the datasets' markers, `_meta.json` and
/// `_merged.json`; counts URLs and output bytes.
fn write_output_metas(
    out: &Outputs<'_>,
    inputs: &[Input],
    stats: &[PartStats],
    opts: &MergeSegsOpts,
    report: &mut MergeReport,
) -> Result<()> {
    let now = now_millis();
    let mut merged_from: BTreeSet<String> = report.inputs.iter().cloned().collect();
    for inp in inputs {
        if let Some(p) = provenance(&inp.seg)? {
            merged_from.extend(p.merged_from);
        }
    }
    let generated_time = inputs
        .iter()
        .map(|i| i.seg.meta().map(|m| m.generated_time))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .max()
        .unwrap_or(now);
    for (s, st) in out.staged.iter().enumerate() {
        for d in out.datasets {
            parquet::write_atomic(
                &st.path().join(d.as_str()).join(SUCCESS_MARKER),
                chrono::Utc::now().to_rfc3339().as_bytes(),
            )?;
        }
        let urls: u64 = stats.iter().map(|p| p.generate[s]).sum();
        report.urls += stats.iter().map(|p| p.fetch[s]).sum::<u64>();
        parquet::write_json(
            &st.path().join(SEGMENT_META),
            &SegmentMeta {
                name: out.names[s].clone(),
                generated_time,
                partitions: out.partitions.n(),
                partition_key: out.partitions.key(),
                urls,
                redirects_in_crawl_parse: false,
            },
        )?;
        parquet::write_json(
            &st.path().join(PROVENANCE),
            &Provenance {
                inputs: report.inputs.clone(),
                merged_from: merged_from.iter().cloned().collect(),
                merged_time: now,
                slice: s,
                slices: out.slices,
                filtered: opts.filter,
                normalized: opts.normalize,
                slice_size: opts.slice,
            },
        )?;
        report.output_bytes += segstate::disk_bytes(st.path());
    }
    Ok(())
}

/// Records the outputs as applied in the crawldb's and the linkdb's `_meta.json`.
/// Names are recorded only once the clock is past them (`last_name_secs`), so a
/// segment `generate` creates later (named from the current time) can never take a
/// recorded name, even if we are killed before the outputs are renamed into place.
fn record_outputs(
    dir: &CrawlDir,
    applied: &Applied,
    names: &[String],
    last_name_secs: i64,
) -> Result<()> {
    while now_millis() / 1000 <= last_name_secs {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let cur = dir.crawldb_current();
    let mut meta = dir.crawldb_meta()?;
    meta.applied_segments.extend(names.iter().cloned());
    parquet::write_json(&cur.join(CRAWLDB_META), &meta)?;
    if applied.linkdb.is_some() {
        let p = dir.linkdb_current().join(LINKDB_META);
        let mut lmeta: LinkDbMeta = parquet::read_json(&p)?;
        lmeta.inverted_segments.extend(names.iter().cloned());
        parquet::write_json(&p, &lmeta)?;
    }
    Ok(())
}

/// Whether a segment dataset is always written by a merge, or only when an input has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MergeKind {
    /// Every merged segment has it (fetched, parsed and applied).
    Always,
    /// Optional: `content` and `parse_text` (pruned by `prunesegs`), `robots`
    /// (absent from segments fetched before fetch recorded robots.txt).
    IfPresent,
    /// Not carried: `parse_inlinks` (linkdb's shuffle) is read only to invert a
    /// segment, and every input of a merge is inverted already.
    Dropped,
}

/// How mergesegs carries each dataset of [`SEGMENT_DATASETS`]; `None` for a name it
/// does not know (a dataset added to the layout without a merge rule: refused).
fn merge_kind(dataset: SegmentDataset) -> Option<MergeKind> {
    use SegmentDataset::*;
    match dataset {
        CrawlGenerate | CrawlFetch | ParseData | CrawlParse => Some(MergeKind::Always),
        Content | ParseText | Robots => Some(MergeKind::IfPresent),
        ParseInlinks => Some(MergeKind::Dropped),
    }
}

/// One empty row list per output slice.
fn empty<R>(slices: usize) -> Vec<Vec<R>> {
    (0..slices).map(|_| Vec::new()).collect()
}

impl Plan<'_> {
    /// Whether input rows of `inp` for partition `i` are read from part `i` alone.
    fn direct(&self, inp: &Input) -> bool {
        !self.keyer.rewrites() && inp.parts == self.pt
    }

    /// The output slice of a row of input `k` keyed (for newest-wins) by `key`
    /// and partitioned by the host of `part_url`; `None` when it is dropped or
    /// belongs to another partition than `i`.
    fn place(&self, k: usize, key: &str, part_url: &str, direct: bool, i: usize) -> Option<usize> {
        if self.winners.get(key).map(|w| w.1) != Some(k) {
            return None;
        }
        if !direct && self.pt.of_url(part_url) != i {
            return None;
        }
        Some(self.slice_of.get(key).copied().unwrap_or(0))
    }

    /// Calls `f` for every row of dataset `ds` of input `inp` that may belong to
    /// partition `i`.
    fn rows<R: Record>(
        &self,
        inp: &Input,
        ds: SegmentDataset,
        i: usize,
        f: impl FnMut(R) -> Result<()>,
    ) -> Result<()> {
        self.rows_of(inp, ds, i, self.direct(inp), f)
    }

    /// Calls `f` for every row of dataset `ds` of input `inp`: those of part `i`
    /// alone when `direct`, else of every part.
    fn rows_of<R: Record>(
        &self,
        inp: &Input,
        ds: SegmentDataset,
        i: usize,
        direct: bool,
        mut f: impl FnMut(R) -> Result<()>,
    ) -> Result<()> {
        if !inp.seg.has(ds) {
            return Ok(());
        }
        let dir = inp.seg.dataset(ds);
        let files = if direct {
            // Part `i` and the shuffle outputs of partition `i` (crawl_parse of a
            // segment parsed as partition tasks).
            crate::store::parquet::partition_files(&dir, i)?
        } else {
            part_files(&dir)?
        };
        for p in files {
            for rows in read_part::<R>(&p)? {
                for r in rows? {
                    f(r)?;
                }
            }
        }
        Ok(())
    }

    fn writers<R: Record>(&self, ds: SegmentDataset, i: usize) -> Result<Vec<PartWriter<R>>> {
        self.outputs
            .iter()
            .map(|o| PartWriter::<R>::create(&o.join(ds.as_str()).join(part_name(i))))
            .collect()
    }

    /// Writes per-slice rows, sorted by `key`, to part `i` of `ds`; returns rows per slice.
    fn write_sorted<R: Record, K: Ord>(
        &self,
        ds: SegmentDataset,
        i: usize,
        mut per_slice: Vec<Vec<R>>,
        key: impl Fn(&R) -> K + Sync,
    ) -> Result<Vec<u64>> {
        let mut counts = Vec::with_capacity(self.slices);
        for (w, rows) in self.writers::<R>(ds, i)?.into_iter().zip(&mut per_slice) {
            rows.sort_by_key(|r| key(r));
            let mut w = w;
            for r in rows.drain(..) {
                w.push(r)?;
            }
            counts.push(w.finish()?);
        }
        Ok(counts)
    }

    /// Partition `i` of every output: each dataset's rows of the winning fetches
    /// (of the inputs' part `i`, or of every part when an input is partitioned
    /// otherwise or URLs are rewritten). Returns the rows written per slice.
    fn run_partition(&self, i: usize) -> Result<PartStats> {
        let direct: Vec<bool> = self.inputs.iter().map(|inp| self.direct(inp)).collect();
        // crawl_generate and crawl_fetch: the winning segment's row of each URL.
        let gen_rows =
            self.winning_rows::<CrawlDatum>(SegmentDataset::CrawlGenerate, i, &direct, |d| {
                (&mut d.url, Some(&mut d.host))
            })?;
        let fetch_rows =
            self.winning_rows::<FetchRecord>(SegmentDataset::CrawlFetch, i, &direct, |r| {
                (&mut r.url, Some(&mut r.host))
            })?;
        let generate = self.write_sorted(SegmentDataset::CrawlGenerate, i, gen_rows, |d| {
            d.url.clone()
        })?;
        let fetch =
            self.write_sorted(SegmentDataset::CrawlFetch, i, fetch_rows, |r| r.url.clone())?;

        // content and parse_text: streamed, a row group per FLUSH_BYTES.
        if self.datasets.contains(&SegmentDataset::Content) {
            self.stream::<ContentRecord>(
                SegmentDataset::Content,
                i,
                &direct,
                |r| (&mut r.url, Some(&mut r.host)),
                |r| r.content.len(),
            )?;
        }
        if self.datasets.contains(&SegmentDataset::ParseText) {
            self.stream::<ParseTextRecord>(
                SegmentDataset::ParseText,
                i,
                &direct,
                |r| (&mut r.url, None),
                |r| r.text.len() + r.main_text.as_ref().map_or(0, |t| t.len()),
            )?;
        }

        // parse_data: the winning segment's parse of each page.
        let data_rows =
            self.winning_rows::<ParseDataRecord>(SegmentDataset::ParseData, i, &direct, |r| {
                (&mut r.url, None)
            })?;
        self.write_sorted(SegmentDataset::ParseData, i, data_rows, |r| r.url.clone())?;
        let cp_rows = self.crawl_parse_rows(i, &direct)?;
        self.write_sorted(SegmentDataset::CrawlParse, i, cp_rows, |r| {
            (r.url.clone(), r.kind.clone(), r.from_url.clone())
        })?;
        if self.datasets.contains(&SegmentDataset::Robots) {
            self.merge_robots(i)?;
        }
        Ok(PartStats { generate, fetch })
    }

    /// The rows of dataset `ds` for partition `i` that come from each URL's winning
    /// fetch, per output slice. `fields` gives a row's URL and host (when it has one),
    /// rewritten to the key when URLs are filtered or normalized.
    fn winning_rows<R: Record>(
        &self,
        ds: SegmentDataset,
        i: usize,
        direct: &[bool],
        fields: impl Fn(&mut R) -> (&mut String, Option<&mut String>),
    ) -> Result<Vec<Vec<R>>> {
        let kr = self.keyer.rewrites();
        let mut out: Vec<Vec<R>> = empty(self.slices);
        for (k, inp) in self.inputs.iter().enumerate() {
            self.rows::<R>(inp, ds, i, |mut r| {
                let (url, host) = fields(&mut r);
                let Some(key) = self.keyer.key(url) else {
                    return Ok(());
                };
                if let Some(s) = self.place(k, &key, &key, direct[k], i) {
                    if kr {
                        if let Some(h) = host {
                            *h = host_of(&key);
                        }
                        *url = key;
                    }
                    out[s].push(r);
                }
                Ok(())
            })?;
        }
        Ok(out)
    }

    /// Streams the rows of dataset `ds` for partition `i` that come from each URL's
    /// winning fetch into the outputs in input order, ending a row group whenever
    /// `FLUSH_BYTES` (by `size`) are buffered for a slice.
    fn stream<R: Record>(
        &self,
        ds: SegmentDataset,
        i: usize,
        direct: &[bool],
        fields: impl Fn(&mut R) -> (&mut String, Option<&mut String>),
        size: impl Fn(&R) -> usize,
    ) -> Result<()> {
        let kr = self.keyer.rewrites();
        let mut ws = self.writers::<R>(ds, i)?;
        let mut buffered = vec![0usize; self.slices];
        for (k, inp) in self.inputs.iter().enumerate() {
            self.rows::<R>(inp, ds, i, |mut r| {
                let (url, host) = fields(&mut r);
                let Some(key) = self.keyer.key(url) else {
                    return Ok(());
                };
                if let Some(s) = self.place(k, &key, &key, direct[k], i) {
                    if kr {
                        if let Some(h) = host {
                            *h = host_of(&key);
                        }
                        *url = key;
                    }
                    buffered[s] += size(&r);
                    ws[s].push(r)?;
                    if buffered[s] >= FLUSH_BYTES {
                        ws[s].end_row_group()?;
                        buffered[s] = 0;
                    }
                }
                Ok(())
            })?;
        }
        for w in ws {
            w.finish()?;
        }
        Ok(())
    }

    /// `crawl_parse` rows for partition `i`: signature rows by their URL, link rows
    /// by the page they are on (its winning fetch), per output slice.
    fn crawl_parse_rows(&self, i: usize, direct: &[bool]) -> Result<Vec<Vec<CrawlParseRecord>>> {
        let kr = self.keyer.rewrites();
        let mut cp_rows: Vec<Vec<CrawlParseRecord>> = empty(self.slices);
        for (k, inp) in self.inputs.iter().enumerate() {
            self.rows::<CrawlParseRecord>(inp, SegmentDataset::CrawlParse, i, |mut r| {
                let Some(url) = self.keyer.key(&r.url) else {
                    return Ok(());
                };
                let page = match (&r.kind[..], &r.from_url) {
                    ("link", Some(from)) => match self.keyer.key(from) {
                        Some(f) => f,
                        None => return Ok(()),
                    },
                    _ => url.clone(),
                };
                if let Some(s) = self.place(k, &page, &url, direct[k], i) {
                    if kr {
                        r.host = host_of(&url);
                        r.url = url;
                        if r.from_url.is_some() && r.kind == "link" {
                            r.from_url = Some(page);
                        }
                    }
                    cp_rows[s].push(r);
                }
                Ok(())
            })?;
        }
        Ok(cp_rows)
    }

    /// `robots`: one row per robots.txt origin, the newest fetch of it winning
    /// (latest `fetch_time`, ties to the newer segment), like pages. The rows are
    /// facts about origins, not fetch-list URLs: `--filter` and `--normalize` leave
    /// them alone, and every output slice gets them all (a few rows per host), so
    /// each output keeps the `Sitemap:` lines the sitemap stage reads.
    fn merge_robots(&self, i: usize) -> Result<()> {
        let mut newest: HashMap<String, ((Millis, usize), RobotsRecord)> = HashMap::new();
        for (k, inp) in self.inputs.iter().enumerate() {
            let direct = inp.parts == self.pt;
            self.rows_of::<RobotsRecord>(inp, SegmentDataset::Robots, i, direct, |r| {
                if !direct && self.pt.of_host(&r.host) != i {
                    return Ok(());
                }
                let rank = (r.fetch_time, k);
                match newest.get(&r.origin) {
                    Some((best, _)) if *best >= rank => {}
                    _ => {
                        newest.insert(r.origin.clone(), (rank, r));
                    }
                }
                Ok(())
            })?;
        }
        let mut rows: Vec<RobotsRecord> = newest.into_values().map(|(_, r)| r).collect();
        rows.sort_by(|a, b| a.origin.cmp(&b.origin));
        for mut w in self.writers::<RobotsRecord>(SegmentDataset::Robots, i)? {
            for r in &rows {
                w.push(r.clone())?;
            }
            w.finish()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_segment_dataset_has_a_merge_rule() {
        for d in SEGMENT_DATASETS {
            assert!(merge_kind(d).is_some(), "no merge rule for {d}");
        }
        assert!(SEGMENT_DATASETS.contains(&SegmentDataset::Robots));
        assert_eq!(
            merge_kind(SegmentDataset::Robots),
            Some(MergeKind::IfPresent)
        );
    }
}
