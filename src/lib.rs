//! trawl: a batch web crawler in the tradition of Apache Nutch.
//!
//! A crawl advances in rounds of discrete stages (inject, generate, fetch, parse,
//! updatedb, linkdb, pagerank) that read and write partitioned Parquet datasets in
//! a crawl directory ([`store`]). This crate is the library behind the stage
//! binaries in `stages/`; each stage's job lives in one module here.

#![deny(missing_docs)]

pub mod check;
pub mod cli;
pub mod config;
pub mod crawldb;
pub mod datum;
pub mod dedup;
pub mod driver;
pub mod error;
pub mod fetch;
pub mod graph;
pub mod hostdb;
pub mod hosts;
pub mod index;
pub mod net;
pub mod parse;
pub mod records;
pub mod report;
pub mod round;
pub mod signal;
pub mod sitemaps;
pub mod stage;
pub mod status;
pub mod store;
pub mod tls;
pub mod tools;
pub mod urls;
pub mod warc;
pub mod xml;

pub use config::Config;
pub use datum::{CrawlDatum, DbStatus, FetchStatus};
pub use error::{Error, Result};

#[doc(hidden)]
pub use mimalloc as __mimalloc;

/// Makes mimalloc the binary's global allocator; every stage binary (and the
/// benchmarks measuring them) starts with `trawl::global_allocator!();`. The stages
/// allocate and free millions of small strings from several threads, where mimalloc
/// is markedly faster than the system allocator.
#[macro_export]
macro_rules! global_allocator {
    () => {
        #[global_allocator]
        static ALLOCATOR: $crate::__mimalloc::MiMalloc = $crate::__mimalloc::MiMalloc;
    };
}
