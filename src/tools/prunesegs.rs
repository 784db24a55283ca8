//! `prunesegs`: frees disk by deleting what segments no longer need to hold once
//! their data reached the crawldb and the linkdb.
//!
//! By default the heavy datasets are deleted, `content/` (raw pages) and
//! `parse_text/` (extracted text), and the light ones are kept:
//! `crawl_generate/`, `crawl_fetch/` (what `readseg --list` reports), `robots/`
//! (the `Sitemap:` lines of robots.txt, which the sitemap stage reads),
//! `parse_data/` (the outlinks from which `pagerank` with `source = "crawl"`
//! builds its graph, and from which `linkdb --all` rebuilds the linkdb) and
//! `crawl_parse/`. So pruning never changes the page graph or any score. With
//! `--whole` entire segments are deleted; that is refused while
//! `[pagerank] source = "crawl"`, since it would silently drop their links from
//! the graph.
//!
//! Only segments whose data is applied (fetched, parsed, in the crawldb's
//! `applied_segments` and, when there is a linkdb, in its `inverted_segments`) are
//! touched; others are listed with the reason and kept. Named segments that are
//! not applied are an error. `--older-than DAYS` (by generate time) and
//! `--keep-newest K` narrow the choice; `--dry-run` lists what would go and the
//! bytes it would free without changing anything.
//!
//! The lock of every segment it deletes from (`segments/<name>.lock`) is taken
//! before anything is deleted: a named segment in use by another stage (a reparse,
//! a warc export) is an error changing nothing; an unnamed one is kept, with the
//! holder as the reason.
//!
//! Crash safety: the tool holds the crawldb and linkdb locks; each dataset (or
//! segment) is renamed away in one step, then deleted, and the next run removes
//! anything a kill left half deleted.

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;

use super::segstate::{self, Applied};
use crate::datum::Millis;
use crate::error::{Error, Result};
use crate::stage::{Report, StageCtx};
use crate::store::layout::Segment;
use crate::store::lock::Lock;
use crate::store::names::SegmentDataset;

/// The datasets deleted by default.
pub const HEAVY_DATASETS: [SegmentDataset; 2] =
    [SegmentDataset::Content, SegmentDataset::ParseText];

/// What one prunesegs run does.
#[derive(Debug, Clone, Default)]
pub struct PruneSegsOpts {
    /// Only these segments (names or paths); empty = every segment.
    pub segments: Vec<PathBuf>,
    /// Only segments generated at least this many days before `now`.
    pub older_than_days: Option<f64>,
    /// Never touch the newest K segments of the crawl.
    pub keep_newest: usize,
    /// Delete whole segments instead of their heavy datasets.
    pub whole: bool,
    /// List what would be deleted; change nothing.
    pub dry_run: bool,
    /// The time ages are measured from (ms UTC).
    pub now: Millis,
}

/// What happens (or would happen) to one segment.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PruneEntry {
    /// The segment's name.
    pub segment: String,
    /// `delete_segment`, `delete_datasets`, or `keep`.
    pub action: String,
    /// The datasets deleted (or to be deleted); with `delete_segment`, all present.
    pub datasets: Vec<String>,
    /// Bytes freed (or to be freed).
    pub bytes: u64,
    /// Why it is kept.
    pub reason: Option<String>,
}

/// What a prunesegs run did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PruneReport {
    /// One entry per segment considered, oldest first.
    pub entries: Vec<PruneEntry>,
    /// Bytes freed (or, with `dry_run`, that would be freed).
    pub bytes: u64,
    /// Whether this was a dry run.
    pub dry_run: bool,
}

impl fmt::Display for PruneReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let touched = self.entries.iter().filter(|e| e.action != "keep").count();
        write!(
            f,
            "{}{} of {} segments pruned, {} bytes {}",
            if self.dry_run { "dry run: " } else { "" },
            touched,
            self.entries.len(),
            self.bytes,
            if self.dry_run {
                "would be freed"
            } else {
                "freed"
            }
        )
    }
}

impl Report for PruneReport {
    const STAGE: &'static str = "prunesegs";
}

/// Runs prunesegs on the crawl directory of `ctx` (which must have a crawldb).
pub fn run(ctx: &StageCtx, opts: &PruneSegsOpts) -> Result<PruneReport> {
    let dir = ctx.open_existing()?;
    check_opts(ctx, opts)?;
    let (_held, applied) = Applied::lock(ctx, &dir, "prunesegs")?;
    if !opts.dry_run {
        segstate::clean_leftovers(&dir)?;
    }
    let all = dir.segments()?;
    let named = !opts.segments.is_empty();
    let chosen: Vec<Segment> = if named {
        segstate::open_segments(&dir, &opts.segments)?
    } else {
        all.clone()
    };
    // The locks of the segments to prune, held to the end: no stage writes into
    // them (a reparse) or reads them (warc) while their data is deleted.
    let mut locks = if named {
        lock_named(&applied, &chosen, opts.dry_run)?
    } else {
        Vec::new()
    };
    let newest: Vec<&str> = all
        .iter()
        .rev()
        .take(opts.keep_newest)
        .map(|s| s.name())
        .collect();
    let mut report = PruneReport {
        dry_run: opts.dry_run,
        ..Default::default()
    };
    for s in &chosen {
        let mut e = plan_entry(&applied, s, &newest, opts)?;
        // Unnamed segments in use by another stage are kept, not waited for.
        if e.action != "keep" && !opts.dry_run && !named {
            match s.lock("prunesegs") {
                Ok(l) => locks.push(l),
                Err(Error::Locked { message, .. }) => {
                    tracing::warn!("keeping segment {}: {message}", s.name());
                    e.action = "keep".into();
                    e.datasets.clear();
                    e.bytes = 0;
                    e.reason = Some(format!("in use: {message}"));
                }
                Err(other) => return Err(other),
            }
        }
        report.bytes += e.bytes;
        report.entries.push(e);
    }
    if opts.dry_run {
        return Ok(report);
    }
    for (s, e) in chosen.iter().zip(&report.entries) {
        match e.action.as_str() {
            "delete_segment" => segstate::remove_dir(s.path())?,
            "delete_datasets" => {
                for d in e.datasets.iter().filter_map(|d| SegmentDataset::parse(d)) {
                    segstate::remove_dir(&s.dataset(d))?;
                    crate::store::versioned::test_pause("prunesegs:deleted-one");
                }
            }
            _ => {}
        }
    }
    Ok(report)
}

/// Refuses `--whole` while pagerank builds its graph from segments, and a bad
/// `--older-than`.
fn check_opts(ctx: &StageCtx, opts: &PruneSegsOpts) -> Result<()> {
    if opts.whole && ctx.config().pagerank.source == crate::config::GraphSource::Crawl {
        return Err(Error::input(
            "--whole",
            "deleting whole segments would delete their parse_data, from which pagerank builds its graph while [pagerank] source = \"crawl\" (the configured source); set source = \"linkdb\" in the config, or prune only the heavy datasets (content, parse_text) by leaving out --whole. Nothing was changed",
        ));
    }
    if let Some(d) = opts.older_than_days
        && !(d >= 0.0 && d.is_finite())
    {
        return Err(Error::input(
            "--older-than",
            format!("{d}: must be a number of days, 0 or more"),
        ));
    }
    Ok(())
}

/// Named segments must be prunable (and not in use): refuses before deleting
/// anything. Returns their locks (none for a dry run).
fn lock_named(applied: &Applied, chosen: &[Segment], dry_run: bool) -> Result<Vec<Lock>> {
    let mut locks = Vec::new();
    for s in chosen {
        if let Some(why) = applied.pending(s) {
            return Err(Error::crawl_dir(
                s.path(),
                format!(
                    "{why}. prunesegs never deletes data that has not reached the crawldb and the linkdb; nothing was changed"
                ),
            ));
        }
        if !dry_run {
            locks.push(s.lock("prunesegs").map_err(|e| match e {
                Error::Locked { path, message } => Error::Locked {
                    path,
                    message: format!("{message}; nothing was changed"),
                },
                other => other,
            })?);
        }
    }
    Ok(locks)
}

/// What happens to segment `s`: kept (with the reason), or what is deleted and the
/// bytes it frees.
fn plan_entry(
    applied: &Applied,
    s: &Segment,
    newest: &[&str],
    opts: &PruneSegsOpts,
) -> Result<PruneEntry> {
    let mut e = PruneEntry {
        segment: s.name().to_string(),
        action: "keep".into(),
        ..Default::default()
    };
    let generated = s.meta()?.generated_time;
    e.reason = if newest.contains(&s.name()) {
        Some(format!("among the newest {} segments", opts.keep_newest))
    } else if let Some(days) = opts.older_than_days
        && (opts.now - generated) < (days * 86_400_000.0) as i64
    {
        Some(format!("generated less than {days} days ago"))
    } else {
        applied.pending(s)
    };
    if e.reason.is_some() {
        return Ok(e);
    }
    if opts.whole {
        e.action = "delete_segment".into();
        e.datasets = crate::store::layout::SEGMENT_DATASETS
            .iter()
            .filter(|d| s.dataset(**d).exists())
            .map(|d| d.to_string())
            .collect();
        e.bytes = segstate::disk_bytes(s.path());
    } else {
        e.datasets = HEAVY_DATASETS
            .iter()
            .filter(|d| s.dataset(**d).exists())
            .map(|d| d.to_string())
            .collect();
        if e.datasets.is_empty() {
            e.reason = Some("already pruned (no content, no parse_text)".into());
        } else {
            e.action = "delete_datasets".into();
            e.bytes = e
                .datasets
                .iter()
                .filter_map(|d| SegmentDataset::parse(d))
                .map(|d| segstate::disk_bytes(&s.dataset(d)))
                .sum();
        }
    }
    Ok(e)
}
