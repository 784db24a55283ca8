//! `index`: builds and updates the crawl's search index, or exports it.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};
use trawl::index::build::{self, IndexOpts};
use trawl::index::export;
use trawl::stage::StageCtx;

#[derive(Debug, Parser)]
#[command(
    name = "index",
    version,
    about = "Build or update the search index (crawl/index/), or export it as JSON Lines",
    long_about = "Indexes the segments not indexed yet (parsed and merged by updatedb) into the \
crawl's tantivy index: one document per page with its title, main text, text, inlink anchors \
(linkdb), PageRank and HostRank (pagerank); refetched pages are replaced, gone, duplicate, \
redirected and noindex pages deleted. The index has one shard per partition (a tantivy index \
each, searched together); with --job it runs as partition tasks, each building its partitions' \
shards, and their commit (docs/cluster.md). --full indexes every segment again. --to jsonl FILE \
writes the index's documents in the Elasticsearch/OpenSearch bulk format instead. See \
docs/search.md."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    /// Index every segment again into an emptied index (refreshes every page's PageRank
    /// and anchors), in one commit.
    #[arg(long)]
    full: bool,
    /// The index directory (default: the crawl directory's index/).
    #[arg(long, value_name = "DIR")]
    index_dir: Option<PathBuf>,
    /// Export the index instead of updating it: the format.
    #[arg(long, value_enum, value_name = "FORMAT", requires = "file")]
    to: Option<Format>,
    /// The export's file (`-`: standard output).
    #[arg(value_name = "FILE", requires = "to")]
    file: Option<PathBuf>,
    /// The export's index name (`_index` of the bulk actions).
    #[arg(long, default_value = "trawl", value_name = "NAME", requires = "to")]
    index_name: String,
    #[command(flatten)]
    task: trawl::cli::TaskArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    /// JSON Lines in the Elasticsearch/OpenSearch bulk format.
    Jsonl,
}

/// Runs the command with its arguments (`args[0]` is its name).
pub fn main(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    trawl::cli::finish(run(args))
}

fn run(args: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    let args = Args::parse_from(args);
    trawl::signal::install()?;
    if let (Some(Format::Jsonl), Some(file)) = (args.to, &args.file) {
        let started = std::time::Instant::now();
        let dir = trawl::index::locate(&args.common, args.index_dir.as_deref())?;
        let n = export::export_jsonl(&dir, file, &args.index_name)?;
        let what = format!("{n} documents exported to {}", file.display());
        trawl::cli::summary("index", started, &what);
        return Ok(());
    }
    let ctx = StageCtx::from_task_args(&args.common, &args.task)?;
    let opts = IndexOpts {
        full: args.full,
        index_dir: args.index_dir,
    };
    let report = build::run(&ctx, &opts)?;
    ctx.finish(&report)?;
    Ok(())
}
