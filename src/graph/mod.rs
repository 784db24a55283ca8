//! The link graph: the `linkdb` stage (inverted outlinks) and the `pagerank` stage
//! (PageRank, HITS and HostRank over the page graph).
//!
//! Building a graph: the URLs of the edge source ([`source`]) are given dense `u32`
//! ids by a partitioned sort ([`ids`]): each URL goes to its host's partition, every
//! partition is sorted and deduplicated in parallel, and ids are assigned partition
//! by partition in URL order. A second scan maps the edges to id pairs by binary
//! search, and the sorted, deduplicated edges become CSR arrays ([`csr`]).

pub mod bench;
pub mod csr;
pub mod hits;
pub mod hostrank;
pub mod ids;
pub mod linkdb;
pub mod pagerank;
pub mod rows;
pub mod source;
pub mod stage;
