//! Tools over a crawl directory: the read-only [`readseg`] (segments) and
//! [`readlinkdb`] (the linkdb), and the segment maintenance tools [`mergesegs`]
//! and [`prunesegs`] (with what they share in [`segstate`]), and [`repartition`]
//! (changes the partition count of a whole crawl).

pub mod mergesegs;
pub mod prunesegs;
pub mod readlinkdb;
pub mod readseg;
pub mod repartition;
mod segstate;
