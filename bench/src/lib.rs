//! trawl's benchmarks: the workloads behind the bench binaries (`benchgen`, `bench`,
//! `fetchbench`, `graphbench`, `parsebench`, `fakefetch`, `scalebench`, `relbench`, `searchbench`; `scripts/bench.sh` runs them) and the
//! parser corpus evaluation the corpus tests share.
//!
//! Nothing here ships in the library: this crate uses trawl only through its public
//! API (and the test web's [`testweb::TestCa`] for HTTPS runs).

pub mod articles;
pub mod benchgen;
pub mod corpus;
pub mod fakefetch;
pub mod fetch;
pub mod graph;
pub mod measure;
pub mod relevance;
pub mod sitecrawl;
pub mod synthtext;
