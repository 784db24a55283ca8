//! WARC/1.1 export of segments (`warc` stage): [`writer`] serializes records,
//! [`http`] rebuilds the HTTP messages of request/response blocks, [`export`] turns
//! a segment's `content` into rotated `.warc.gz` files.

pub mod export;
mod http;
pub mod writer;

pub use export::{ExportOpts, ExportStats, WarcOpts, WarcReport, run};
