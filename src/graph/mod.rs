//! The link graph: the `linkdb` stage (inverted outlinks) and the `pagerank` stage
//! (PageRank, HITS and HostRank over the page graph; PageRank also as partition
//! tasks, [`tasks`]).
//!
//! Building a graph ([`ids`]) takes two passes over the edge source and holds no
//! edge list: the first interns every URL into a sharded string-arena hash table
//! and counts out-links; the URLs are then ordered by (host partition, URL) into
//! dense `u32` ids; the second pass looks each edge's ends up and writes the
//! target straight into the out-link CSR ([`csr`]), whose lists are then sorted and
//! deduplicated.

pub mod csr;
mod hits;
mod hostrank;
pub mod ids;
pub mod linkdb;
pub mod mem;
pub mod pagerank;
pub mod rows;
pub mod source;
pub mod stage;
pub mod tasks;
pub mod template;
