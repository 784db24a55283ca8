//! `mergesegs`: merge several segments into new ones.

use std::path::PathBuf;

use clap::Parser;
use trawl::stage::StageCtx;
use trawl::tools::mergesegs::{self, MergeSegsOpts};

#[derive(Debug, Parser)]
#[command(
    name = "mergesegs",
    version,
    about = "Merge segments into one new segment (newest fetch of each URL wins)",
    long_about = "Merges the given segments, dataset by dataset and partition by partition, into a \
new segment under <crawl-dir>/segments (Nutch's mergesegs). When a URL was fetched in several \
of them, the newest fetch wins and all rows about that URL come from its segment. Only segments \
whose data already reached the crawldb and the linkdb (updatedb and linkdb ran on them) are \
merged; the new segment is recorded as applied in both, so nothing is applied twice. Its \
provenance is written to _merged.json. The output is written under a temporary name and renamed \
into place; inputs are deleted (--delete-inputs) only after that. Safe to interrupt: rerun the \
same command. Prints the paths of the new segments on stdout."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    /// Segments to merge (names under <crawl-dir>/segments or paths).
    #[arg(value_name = "SEGMENT", required = true)]
    segments: Vec<PathBuf>,
    /// Drop URLs the configured [urls] filters reject (scheme, length, traps, filter file, scope).
    #[arg(long)]
    filter: bool,
    /// Normalize URLs with the configured [urls] normalization (rows of URLs that become equal: newest wins).
    #[arg(long)]
    normalize: bool,
    /// Write several segments of at most N URLs each instead of one.
    #[arg(long, value_name = "N")]
    slice: Option<u64>,
    /// Delete the input segments once the merged segment is installed.
    #[arg(long)]
    delete_inputs: bool,
}

/// Runs the command with its arguments (`args[0]` is its name).
pub fn main(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    trawl::cli::finish(run(args))
}

fn run(args: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    let args = Args::parse_from(args);
    let ctx = StageCtx::from_args(&args.common)?;
    let opts = MergeSegsOpts {
        segments: args.segments,
        filter: args.filter,
        normalize: args.normalize,
        slice: args.slice,
        delete_inputs: args.delete_inputs,
    };
    let r = mergesegs::run(&ctx, &opts)?;
    for p in &r.outputs {
        println!("{}", p.display());
    }
    if !r.existing.is_empty() {
        eprintln!(
            "mergesegs: already merged into [{}] with the same options; nothing merged again",
            r.existing.join(", ")
        );
    }
    for (s, into) in &r.already_merged {
        eprintln!("mergesegs: segment {s} was already merged into {into} and removed");
    }
    ctx.finish(&r)?;
    Ok(())
}
