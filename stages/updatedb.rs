//! `updatedb`: merges fetch and parse results of segments into the crawldb.

use std::path::PathBuf;

use clap::Parser;
use trawl::crawldb::updatedb::{self, UpdateOpts};
use trawl::stage::StageCtx;

#[derive(Debug, Parser)]
#[command(
    name = "updatedb",
    version,
    about = "Merge fetched segments into the crawldb",
    long_about = "Applies the fetch outcomes (crawl_fetch) and parse results (crawl_parse: \
signatures and outlinks) of segments to the crawldb through the crawldb state machine, adding \
newly discovered URLs. Without SEGMENT, applies the newest fetched segment not yet applied. \
A segment already applied is skipped, so rerunning is harmless. A fetched segment that is not \
parsed is refused (its outlinks would be lost): run parse on it first, or pass --no-parse to \
apply its fetch statuses only; the segment is then recorded as partially applied, and \
updatedb after parse merges the rest (signatures, outlinks) without applying the fetches again."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    #[command(flatten)]
    task: trawl::cli::TaskArgs,
    /// Segments to apply (names under segments/ or paths) [default: newest unapplied fetched segment].
    segments: Vec<PathBuf>,
    /// Do not add URLs discovered as outlinks or redirect targets.
    #[arg(long)]
    no_additions: bool,
    /// Apply fetch statuses only, without parse results (for a segment not parsed yet):
    /// the segment is recorded as partially applied; run updatedb again after parse.
    #[arg(long)]
    no_parse: bool,
}

/// Runs the command with its arguments (`args[0]` is its name).
pub fn main(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    trawl::cli::finish(run(args))
}

fn run(args: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    let args = Args::parse_from(args);
    trawl::signal::install()?;
    let mut ctx = StageCtx::from_task_args(&args.common, &args.task)?;
    if args.no_additions {
        ctx.config_mut().updatedb.additions_allowed = false;
    }
    ctx.validate_flags()?;
    let opts = UpdateOpts {
        segments: args.segments,
        no_parse: args.no_parse,
    };
    let r = updatedb::run(&ctx, &opts)?;
    for s in &r.skipped {
        eprintln!("updatedb: segment {s} already applied: skipped");
    }
    for s in &r.partial {
        eprintln!(
            "updatedb: segment {s} partially applied (fetch statuses only); after `parse {s}`, run `updatedb {s}` to merge its signatures and outlinks"
        );
    }
    ctx.finish(&r)?;
    Ok(())
}
