//! `linkdb`: inverts segments' outlinks into the link database.

use std::path::PathBuf;

use clap::Parser;
use trawl::graph::linkdb::{self, LinkDbOpts, SegmentChoice};
use trawl::stage::StageCtx;

/// Inverts the outlinks of segments' parse_data into linkdb/current (inlinks per URL).
#[derive(Debug, Parser)]
#[command(
    name = "linkdb",
    version,
    about = "Invert segments' outlinks into the link database (linkdb/current)",
    long_about = "Reads the outlinks of each segment's parse_data and merges them, inverted \
(target URL, source URL, anchor, segment), into linkdb/current, partitioned by the target's \
host and sorted by (url, from_url). A (target, source) pair is stored once, so inverting a \
segment twice changes nothing. By default every segment not yet inverted is processed \
(the inverted ones are listed in linkdb/current/_meta.json). The previous version is kept \
in linkdb/old. Options follow Nutch's invertlinks: see [linkdb] in the config."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    #[command(flatten)]
    task: trawl::cli::TaskArgs,
    /// Segments to invert (names under segments/ or paths) [default: every segment not yet inverted].
    #[arg(value_name = "SEGMENT")]
    segments: Vec<PathBuf>,
    /// Invert every segment with parse_data, including those already inverted.
    #[arg(long, conflicts_with = "segments")]
    all: bool,
    /// Keep links between pages of the same host (sets linkdb.ignore_internal to
    /// false, the default).
    #[arg(long, conflicts_with = "ignore_internal")]
    keep_internal: bool,
    /// Drop links between pages of the same host (sets linkdb.ignore_internal, as
    /// Nutch's db.ignore.internal.links).
    #[arg(long)]
    ignore_internal: bool,
    /// Drop links between different hosts (sets linkdb.ignore_external).
    #[arg(long)]
    ignore_external: bool,
    /// Inlinks kept per target URL (overrides linkdb.max_inlinks).
    #[arg(long, value_name = "N")]
    max_inlinks: Option<usize>,
}

/// Runs the command with its arguments (`args[0]` is its name).
pub fn main(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    trawl::cli::finish(run(args))
}

fn run(args: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    let args = Args::parse_from(args);
    trawl::signal::install()?;
    let mut ctx = StageCtx::from_task_args(&args.common, &args.task)?;
    let cfg = ctx.config_mut();
    if args.keep_internal {
        cfg.linkdb.ignore_internal = false;
    }
    if args.ignore_internal {
        cfg.linkdb.ignore_internal = true;
    }
    if args.ignore_external {
        cfg.linkdb.ignore_external = true;
    }
    if let Some(n) = args.max_inlinks {
        cfg.linkdb.max_inlinks = n;
    }
    ctx.validate_flags()?;
    let segments = if args.all {
        SegmentChoice::All
    } else if args.segments.is_empty() {
        SegmentChoice::New
    } else {
        SegmentChoice::Given(args.segments)
    };
    let report = linkdb::run(&ctx, &LinkDbOpts { segments })?;
    ctx.finish(&report)?;
    Ok(())
}
