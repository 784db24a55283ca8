//! `readlinkdb`: the inlinks of one URL, or the whole linkdb, as JSON lines.

use std::fmt;
use std::io::Write;

use crate::error::{Error, Result};
use crate::graph::linkdb::read_meta;
use crate::records::InlinkRecord;
use crate::stage::{Report, StageCtx};
use crate::store::layout::CrawlDir;
use crate::store::parquet::{part_files, part_name, read_part};
use crate::store::partition::Partitioner;

fn require_linkdb(dir: &CrawlDir) -> Result<Partitioner> {
    match read_meta(dir)? {
        Some(m) => Ok(Partitioner::new(m.partitions, m.partition_key)),
        None => Err(Error::crawl_dir(
            dir.linkdb_current(),
            "no linkdb (no linkdb/current with a _SUCCESS marker); run `linkdb` first",
        )),
    }
}

/// The inlinks of `url` (sorted by source URL), read from its host's partition only.
pub fn inlinks(dir: &CrawlDir, url: &str) -> Result<Vec<InlinkRecord>> {
    let pt = require_linkdb(dir)?;
    let path = dir.linkdb_current().join(part_name(pt.of_url(url)));
    let mut out = Vec::new();
    if !path.is_file() {
        return Ok(out);
    }
    for rows in read_part::<InlinkRecord>(&path)? {
        out.extend(rows?.into_iter().filter(|r| r.url == url));
    }
    out.sort();
    Ok(out)
}

/// Writes every linkdb row as a JSON line (`url`, `from_url`, `anchor`, `segment`),
/// part by part; returns the number of rows.
pub fn dump(dir: &CrawlDir, out: &mut impl Write) -> Result<u64> {
    require_linkdb(dir)?;
    let mut n = 0;
    for part in part_files(&dir.linkdb_current())? {
        for rows in read_part::<InlinkRecord>(&part)? {
            for r in rows? {
                write_row(&r, out)?;
                n += 1;
            }
        }
    }
    Ok(n)
}

/// Writes one row as a JSON line.
pub fn write_row(r: &InlinkRecord, out: &mut impl Write) -> Result<()> {
    serde_json::to_writer(&mut *out, r).map_err(|e| Error::input("<stdout>", e.to_string()))?;
    writeln!(out).map_err(|e| Error::io("<stdout>", e))
}

/// What `readlinkdb` does.
#[derive(Debug, Clone)]
pub enum ReadLinkDbOpts {
    /// Print the inlinks of this URL.
    Url(String),
    /// Print every inlink.
    Dump,
}

/// What a `readlinkdb` run wrote.
#[derive(Debug, Clone)]
pub enum ReadLinkDbReport {
    /// The URL asked for and its number of inlinks.
    Inlinks {
        /// The URL.
        url: String,
        /// Inlinks written.
        count: usize,
    },
    /// Rows dumped.
    Dumped(u64),
}

impl fmt::Display for ReadLinkDbReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadLinkDbReport::Inlinks { url, count } => write!(f, "{url}: {count} inlinks"),
            ReadLinkDbReport::Dumped(n) => write!(f, "{n} inlinks dumped"),
        }
    }
}

impl Report for ReadLinkDbReport {
    const STAGE: &'static str = "readlinkdb";
}

/// Runs `readlinkdb` on the crawl directory of `ctx` (which must exist), writing the
/// rows as JSON lines to `out`.
pub fn run(
    ctx: &StageCtx,
    opts: &ReadLinkDbOpts,
    out: &mut impl Write,
) -> Result<ReadLinkDbReport> {
    let dir = ctx.open_for_segments()?;
    match opts {
        ReadLinkDbOpts::Url(url) => {
            let rows = inlinks(&dir, url)?;
            for r in &rows {
                write_row(r, out)?;
            }
            Ok(ReadLinkDbReport::Inlinks {
                url: url.clone(),
                count: rows.len(),
            })
        }
        ReadLinkDbOpts::Dump => Ok(ReadLinkDbReport::Dumped(dump(&dir, out)?)),
    }
}
