//! What the segment maintenance tools ([`super::mergesegs`], [`super::prunesegs`])
//! share: which segments already reached the crawldb and the linkdb, crash-safe
//! removal of segments and datasets, and the clean-up of what a killed run left.
//!
//! Both tools hold the crawldb lock (and the linkdb lock when there is a linkdb)
//! for their whole run, so `generate`, `updatedb` and `linkdb` cannot change what
//! is applied, or stage a segment, while they work.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result};
use crate::graph::linkdb;
use crate::stage::{Guard, Held, StageCtx};
use crate::store::layout::{CrawlDir, Segment};
use crate::store::lock;
use crate::store::names::SegmentDataset;

/// What the crawldb and linkdb have applied, read under the locks a segment tool
/// holds for its whole run ([`crate::stage::Guard::Applied`]).
#[derive(Debug)]
pub struct Applied {
    /// Segments merged into the current crawldb (`applied_segments`).
    pub crawldb: BTreeSet<String>,
    /// Segments whose fetch statuses only are merged (`partial_segments`,
    /// `updatedb --no-parse`): not applied, so never merged or pruned.
    pub partial: BTreeSet<String>,
    /// Segments inverted into the current linkdb, or `None` without a linkdb.
    pub linkdb: Option<BTreeSet<String>>,
}

impl Applied {
    /// Takes the crawldb's and the linkdb's locks ([`crate::stage::Guard::Applied`])
    /// for the tool `stage` of `ctx`, and reads what is applied: the locks are held
    /// until the returned [`Held`] is dropped.
    pub fn lock(ctx: &StageCtx, dir: &CrawlDir, stage: &str) -> Result<(Held, Applied)> {
        let held = ctx.hold(stage, &[Guard::Applied])?;
        let meta = dir.crawldb_meta()?;
        let crawldb = meta.applied_segments.into_iter().collect();
        let partial = meta.partial_segments.into_iter().collect();
        let linkdb = linkdb::read_meta(dir)?.map(|m| m.inverted_segments.into_iter().collect());
        Ok((
            held,
            Applied {
                crawldb,
                partial,
                linkdb,
            },
        ))
    }

    /// Why `seg` has data that has not reached the crawldb or the linkdb yet, with
    /// what to run; `None` when everything it holds is applied.
    pub fn pending(&self, seg: &Segment) -> Option<String> {
        let name = seg.name();
        if !seg.has(SegmentDataset::CrawlFetch) {
            return Some(format!(
                "segment {name} was never fetched (no complete crawl_fetch/): run `fetch {name}`, `parse`, `updatedb` and `linkdb` on it first"
            ));
        }
        let partial = self.partial.contains(name);
        if partial && !seg.has(SegmentDataset::CrawlParse) {
            return Some(format!(
                "segment {name} is only partially applied (fetch statuses only, by `updatedb --no-parse`) and not parsed: run `parse {name}`, then `updatedb {name}` and `linkdb` on it first"
            ));
        }
        if partial {
            return Some(format!(
                "segment {name} is only partially applied (fetch statuses only, by `updatedb --no-parse`): run `updatedb {name}` to merge its signatures and outlinks first"
            ));
        }
        if !seg.has(SegmentDataset::ParseData) || !seg.has(SegmentDataset::CrawlParse) {
            return Some(format!(
                "segment {name} is not parsed (no complete parse_data/ and crawl_parse/): run `parse {name}`, then `updatedb` and `linkdb` on it first"
            ));
        }
        if !self.crawldb.contains(name) {
            return Some(format!(
                "segment {name} is not applied to the crawldb yet: run `updatedb {name}` first"
            ));
        }
        if let Some(l) = &self.linkdb
            && !l.contains(name)
        {
            return Some(format!(
                "segment {name} is not inverted into the linkdb yet: run `linkdb {name}` first"
            ));
        }
        None
    }
}

/// Removes a directory crash-safely: renamed to `<name>.tmp-trash-<pid>` first (one
/// atomic step after which readers no longer see it), then deleted; a kill during
/// the deletion leaves only the trash directory, removed by [`clean_leftovers`].
pub fn remove_dir(path: &Path) -> Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let trash = path.with_file_name(format!("{name}.tmp-trash-{}", std::process::id()));
    fs::rename(path, &trash).at(path)?;
    fs::remove_dir_all(&trash).at(&trash)?;
    Ok(())
}

/// Removes what killed segment tools (and killed `generate`s) left: every
/// `segments/*.tmp-*` (a staged segment or a segment being deleted), every
/// `segments/*/*.tmp-trash-*` (a dataset being deleted) and every stale
/// `segments/*.lock` (whose holder is gone). Call only while holding
/// the crawldb lock: `generate` stages its segments under that lock, so no live
/// process owns them. Returns the paths removed.
pub fn clean_leftovers(dir: &CrawlDir) -> Result<Vec<PathBuf>> {
    let segs = dir.segments_dir();
    let mut removed = Vec::new();
    if !segs.is_dir() {
        return Ok(removed);
    }
    for entry in fs::read_dir(&segs).at(&segs)? {
        let entry = entry.at(&segs)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if name.contains(".tmp-") {
            rm(&path)?;
            removed.push(path);
        } else if name.contains(crate::store::names::LOCK) && path.is_file() {
            // A segment lock a killed run left (of a segment it was deleting, or of
            // an output it never installed): nobody may take it again.
            if lock::remove_if_stale(&path)? {
                removed.push(path);
            }
        } else if path.is_dir() {
            for inner in fs::read_dir(&path).at(&path)? {
                let inner = inner.at(&path)?;
                if inner.file_name().to_string_lossy().contains(".tmp-trash-") {
                    rm(&inner.path())?;
                    removed.push(inner.path());
                }
            }
        }
    }
    for p in &removed {
        tracing::info!("removed leftover of an interrupted run: {}", p.display());
    }
    Ok(removed)
}

fn rm(p: &Path) -> Result<()> {
    if p.is_dir() {
        fs::remove_dir_all(p).at(p)
    } else {
        fs::remove_file(p).at(p)
    }
}

/// Bytes of the files under `path` (0 when it does not exist).
pub fn disk_bytes(path: &Path) -> u64 {
    crate::store::disk::tree_bytes(path)
}

/// Opens the segments named on the command line, with an error naming a bad one.
pub fn open_segments(dir: &CrawlDir, args: &[PathBuf]) -> Result<Vec<Segment>> {
    let mut out: Vec<Segment> = Vec::new();
    for a in args {
        let seg = dir.segment(a)?;
        if seg.path().parent() != Some(dir.segments_dir().as_path())
            && seg
                .path()
                .parent()
                .map(fs::canonicalize)
                .and_then(|r| r.ok())
                != fs::canonicalize(dir.segments_dir()).ok()
        {
            return Err(Error::crawl_dir(
                seg.path(),
                format!(
                    "not a segment of the crawl directory {} (segment tools only work on <crawl-dir>/segments/)",
                    dir.root().display()
                ),
            ));
        }
        if !out.iter().any(|s| s.name() == seg.name()) {
            out.push(seg);
        }
    }
    out.sort_by(|a, b| a.name().cmp(b.name()));
    Ok(out)
}
