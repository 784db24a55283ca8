//! The crawldb lifecycle: `inject`, `generate`, `updatedb`, `readdb`.
//!
//! The crawldb (`crawldb/current/`) holds one row per URL, partitioned by host with
//! [`Partitioner`](crate::store::partition::Partitioner) and sorted by URL within
//! each part. Every writer takes the crawldb lock, repairs an interrupted install,
//! writes a complete new version beside the current one (partitions in parallel) and
//! installs it as a [`VersionedDataset`](crate::store::versioned::VersionedDataset);
//! see [`write_version`].

pub mod cutoff;
pub mod generate;
pub mod inject;
pub mod merge;
pub mod readdb;
pub mod schedule;
mod scoring;
mod select;
pub mod spill;
pub mod state;
pub mod stream;
pub mod updatedb;

use rayon::prelude::*;

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::datum::{CrawlDatum, now_millis};
use crate::error::Result;
use crate::store::integrity::Check;
use crate::store::jobs::{AttemptWriter, Job, link_part};
use crate::store::layout::{CRAWLDB_META, CrawlDbMeta, CrawlDir};
use crate::store::names::VersionedDb;
use crate::store::parquet::{self, PartWriter};

/// The current crawldb's metadata (refused when `crawl.partition_key` differs from
/// the crawl's), or fresh metadata with `crawl.partitions` parts keyed by
/// `crawl.partition_key` when there is no crawldb yet; the flag says whether a
/// crawldb exists. A
/// `crawldb/current/` with parts but no manifest, or whose parts do not match its
/// manifest's list and sizes, is an [`crate::error::Error::Integrity`], never "no
/// crawldb". Writers verify checksums with [`verify_for_rewrite`].
pub fn meta_or_new(dir: &CrawlDir, cfg: &crate::config::Config) -> Result<(bool, CrawlDbMeta)> {
    dir.refuse_unmarked_crawldb()?;
    if parquet::dataset_complete(&dir.crawldb_current()) {
        dir.verify_crawldb(Check::Sizes)?;
        let meta = dir.crawldb_meta()?;
        crate::store::partition::check_key(
            &dir.crawldb_current(),
            meta.partition_key,
            cfg.crawl.partition_key,
        )?;
        Ok((true, meta))
    } else {
        Ok((
            false,
            CrawlDbMeta {
                partitions: cfg.crawl.partitions,
                partition_key: cfg.crawl.partition_key,
                ..CrawlDbMeta::default()
            },
        ))
    }
}

/// Before a stage rewrites the crawldb (under its lock): refuses a damaged
/// `crawldb/current/` ([`CrawlDir::verify_crawldb_for_rewrite`]).
pub fn verify_for_rewrite(dir: &CrawlDir) -> Result<()> {
    dir.verify_crawldb_for_rewrite()
}

/// The identity of the crawldb version installed now: the blake3 of its
/// `_SUCCESS` manifest (which lists every part's blake3 and when it was sealed), so
/// two versions never share it. Tasks of a job record the version they read; the
/// job's commit installs only over that same version. Empty when there is no
/// crawldb yet.
pub fn version_id(dir: &CrawlDir) -> Result<String> {
    dir.versioned(VersionedDb::CrawlDb).version_id()
}

/// The dataset name of the crawldb parts a task writes into its attempt.
pub const TASK_DATASET: &str = crate::store::names::CRAWLDB;

/// The test-pause point after a crawldb task wrote its output, before its attempt
/// is finished (`TRAWL_TEST_PAUSE_SEGTOOLS=task:written:SECONDS`): tests kill a task
/// there.
pub const TASK_WRITTEN: &str = "task:written";

/// Finishes a task's attempt with its `report` (after the [`TASK_WRITTEN`] test
/// pause).
pub fn finish_attempt<T: Serialize>(w: AttemptWriter, report: &T) -> Result<()> {
    crate::store::versioned::test_pause(TASK_WRITTEN);
    w.finish(report)?;
    Ok(())
}

/// The crawldb parts and reports of the attempts a commit of `job` installs (one per
/// partition set, covering `0..n` once: [`Job::choose`]).
pub fn chosen_parts<T: DeserializeOwned>(job: &Job, n: usize) -> Result<Vec<(PathBuf, T)>> {
    job.choose(n)?
        .iter()
        .map(|a| Ok((a.dataset(TASK_DATASET), a.report()?)))
        .collect()
}

/// Refuses a commit whose task read crawldb version `read` (in `attempt`) when
/// `current` is installed: the crawldb changed since the tasks ran.
pub fn check_version(dir: &CrawlDir, attempt: &Path, read: &str, current: &str) -> Result<()> {
    if read == current {
        return Ok(());
    }
    Err(crate::error::Error::crawl_dir(
        dir.crawldb_current(),
        format!(
            "the crawldb changed since the tasks of this job ran (the task in {} read version {read:?}, the current one is {current:?}): nothing was installed; rerun the job (its tasks, then the commit)",
            attempt.display()
        ),
    ))
}

/// Installs a crawldb version made of task output, under the crawldb lock: the
/// part files `<dir>/part-NNNNN.parquet` of each `(dir, partitions)` of `parts`
/// (together every partition of `meta` exactly once) are linked into a staged
/// version, never rewritten; `meta` is stored inside and the version installed.
pub fn install_parts(
    dir: &CrawlDir,
    parts: &[(&Path, &[usize])],
    meta: &mut CrawlDbMeta,
    stage: &str,
) -> Result<()> {
    let n = meta.partitions;
    let mut seen = vec![false; n];
    for (path, ps) in parts {
        for &i in *ps {
            if i >= n || std::mem::replace(&mut seen[i], true) {
                return Err(crate::error::Error::crawl_dir(
                    path,
                    format!(
                        "internal: partition {i} given twice or beyond the crawldb's {n}; nothing was installed"
                    ),
                ));
            }
        }
    }
    if let Some(missing) = seen.iter().position(|s| !s) {
        return Err(crate::error::Error::crawl_dir(
            dir.crawldb(),
            format!("no task wrote partition {missing}: nothing was installed"),
        ));
    }
    let db = dir.versioned(VersionedDb::CrawlDb);
    let staged = db.stage()?;
    for (path, ps) in parts {
        for &i in *ps {
            link_part(&path.join(parquet::part_name(i)), &staged.part_path(i))?;
        }
    }
    meta.written_time = now_millis();
    meta.written_by = stage.to_string();
    parquet::write_json(&staged.path().join(CRAWLDB_META), meta)?;
    db.install(staged, stage)
}

/// Path of part `i` of the current crawldb.
pub fn current_part(dir: &CrawlDir, i: usize) -> std::path::PathBuf {
    dir.crawldb_current().join(parquet::part_name(i))
}

/// Writes a new crawldb version of `meta.partitions` parts, part `i` produced by
/// `f(i, writer)` (run in parallel), stores `meta` inside it and installs it
/// (current -> old, new -> current). The caller must hold the crawldb [`lock`].
/// Returns what `f` returned for each part, in part order.
pub fn write_version<T, F>(
    dir: &CrawlDir,
    meta: &mut CrawlDbMeta,
    stage: &str,
    f: F,
) -> Result<Vec<T>>
where
    T: Send,
    F: Fn(usize, &mut PartWriter<CrawlDatum>) -> Result<T> + Sync,
{
    let staged = dir.versioned(VersionedDb::CrawlDb).stage()?;
    write_staged(dir, staged, meta, stage, f, |_, _| {})
}

/// [`write_version`] into a version already staged (with
/// [`VersionedDataset::stage`](crate::store::versioned::VersionedDataset::stage)), for
/// a stage that keeps temporary files (spilled runs) in it before the parts are
/// written; they must be gone when `f` has written the last part. `amend` may
/// change `meta` from what the parts returned before it is stored.
pub fn write_staged<T, F, M>(
    dir: &CrawlDir,
    staged: parquet::StagedDataset,
    meta: &mut CrawlDbMeta,
    stage: &str,
    f: F,
    amend: M,
) -> Result<Vec<T>>
where
    T: Send,
    F: Fn(usize, &mut PartWriter<CrawlDatum>) -> Result<T> + Sync,
    M: FnOnce(&[T], &mut CrawlDbMeta),
{
    let db = dir.versioned(VersionedDb::CrawlDb);
    let pb = crate::cli::progress_bar(meta.partitions as u64, stage);
    let out = (0..meta.partitions)
        .into_par_iter()
        .map(|i| {
            interrupted(stage)?;
            let mut w = PartWriter::<CrawlDatum>::create(&staged.part_path(i))?;
            let t = f(i, &mut w)?;
            w.finish()?;
            pb.inc(1);
            Ok(t)
        })
        .collect::<Result<Vec<T>>>()?;
    pb.finish_and_clear();
    amend(&out, meta);
    meta.written_time = now_millis();
    meta.written_by = stage.to_string();
    parquet::write_json(&staged.path().join(CRAWLDB_META), meta)?;
    db.install(staged, stage)?;
    Ok(out)
}

/// Stops a crawldb rewrite at a SIGINT/SIGTERM ([`crate::signal`]): nothing is
/// installed, the crawldb stays as it was.
pub(crate) fn interrupted(stage: &str) -> Result<()> {
    crate::signal::check(&format!(
        "{stage} stopped before installing anything: the crawldb is unchanged; rerun {stage}"
    ))
}
