//! The crawldb lifecycle: `inject`, `generate`, `updatedb`, `readdb`.
//!
//! The crawldb (`crawldb/current/`) holds one row per URL, partitioned by host with
//! [`partition_for_host`](crate::store::parquet::partition_for_host) and sorted by URL within
//! each part. Every writer takes the crawldb lock, repairs an interrupted install,
//! writes a complete new version beside the current one (partitions in parallel) and
//! installs it as a [`VersionedDataset`](crate::store::versioned::VersionedDataset);
//! see [`write_version`].

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

use crate::datum::{CrawlDatum, now_millis};
use crate::error::Result;
use crate::store::integrity::Check;
use crate::store::layout::{CRAWLDB_META, CrawlDbMeta, CrawlDir};
use crate::store::lock::Lock;
use crate::store::names::VersionedDb;
use crate::store::parquet::{self, PartWriter};

/// Takes the crawldb lock for `stage` and repairs an install a killed stage left half
/// done. The crawldb directory is created if needed.
pub fn lock(dir: &CrawlDir, stage: &str) -> Result<Lock> {
    dir.versioned(VersionedDb::CrawlDb).lock(stage)
}

/// The current crawldb's metadata, or fresh metadata with `crawl.partitions` parts
/// when there is no crawldb yet; the flag says whether a crawldb exists. A
/// `crawldb/current/` with parts but no manifest, or whose parts do not match its
/// manifest's list and sizes, is an [`crate::error::Error::Integrity`], never "no
/// crawldb". Writers verify checksums with [`verify_for_rewrite`].
pub fn meta_or_new(dir: &CrawlDir, cfg: &crate::config::Config) -> Result<(bool, CrawlDbMeta)> {
    dir.refuse_unmarked_crawldb()?;
    if parquet::dataset_complete(&dir.crawldb_current()) {
        dir.verify_crawldb(Check::Sizes)?;
        Ok((true, dir.crawldb_meta()?))
    } else {
        Ok((
            false,
            CrawlDbMeta {
                partitions: cfg.crawl.partitions,
                ..CrawlDbMeta::default()
            },
        ))
    }
}

/// Before a stage rewrites the crawldb (under its lock): refuses a damaged
/// `crawldb/current/` (no manifest, a part missing, added, resized, or with a
/// blake3 that differs from its manifest), so that nothing read from it is written
/// into a new version. No crawldb yet is fine.
pub fn verify_for_rewrite(dir: &CrawlDir) -> Result<()> {
    dir.refuse_unmarked_crawldb()?;
    if parquet::dataset_complete(&dir.crawldb_current()) {
        dir.verify_crawldb(Check::Checksums)?;
    }
    Ok(())
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
fn interrupted(stage: &str) -> Result<()> {
    crate::signal::check(&format!(
        "{stage} stopped before installing anything: the crawldb is unchanged; rerun {stage}"
    ))
}
