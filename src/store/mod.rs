//! The crawl directory and how datasets are stored: the one owner of every path,
//! dataset name and file name under `<crawl-dir>/`, of the Parquet I/O, of dataset
//! manifests, of lock files and of versioned (`current`/`old`) installs.
//!
//! - [`layout`]: [`CrawlDir`](layout::CrawlDir) and [`Segment`](layout::Segment), the
//!   map of the crawl directory and every path in it.
//! - [`lock`]: lock files (who may write a dataset or a segment right now).
//! - [`lease`]: leases, lock files with an expiry (a partition fetched by at most
//!   one task at a time, across machines).
//! - [`parquet`]: typed Parquet I/O, [`PartWriter`](parquet::PartWriter),
//!   [`StagedDataset`](parquet::StagedDataset).
//! - [`partition`]: [`Partitioner`](partition::Partitioner), the one way a row finds
//!   its partition (by host or by registrable domain, `crawl.partition_key`).
//! - [`integrity`]: dataset manifests (`_SUCCESS`) and the checks readers run.
//! - [`names`]: every dataset and file name of the crawl directory
//!   ([`SegmentDataset`](names::SegmentDataset), [`VersionedDb`](names::VersionedDb)).
//! - [`versioned`]: [`VersionedDataset`](versioned::VersionedDataset), the one way
//!   `crawldb/`, `linkdb/` and `sitemapdb/` versions are written and installed, and
//!   the test-pause hook.
//! - [`disk`]: bytes on disk, free space, and the check ([`disk::ensure_space`])
//!   stages run before writing big data.
//! - [`jobs`]: partition tasks and their commit: attempt-private output under
//!   `_jobs/<job>/`, the choice of one finished attempt per partition set, and the
//!   links that install them ([`PartitionSet`](jobs::PartitionSet),
//!   [`Job`](jobs::Job)).
//! - [`storage`]: the file operations the code above goes through
//!   ([`LocalFs`](storage::LocalFs): atomic puts and renames, sorted listings); the
//!   object store is not a backend under it but a working mirror ([`object`]).
//! - [`object`]: the crawl directory on an object store (`s3://`, `gs://`, `az://`,
//!   `file://`): version manifests committed with a conditional create, the local
//!   working mirror a stage runs on ([`Mirror`](object::Mirror)), and `gc`.
//! - [`delta`]: the Delta Lake log of the crawl's tables on an object store (what
//!   stock readers read), written by [`object`] beside its version manifests.
//!
//! Stages never spell a dataset or file name of the crawl directory: they ask
//! [`layout`] for the path.

pub mod delta;
pub mod disk;
pub mod integrity;
pub mod jobs;
pub mod layout;
pub mod lease;
pub mod lock;
pub mod names;
pub mod object;
pub mod parquet;
pub mod partition;
pub mod storage;
pub mod versioned;
