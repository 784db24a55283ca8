//! `repartition`: change the partition count of an existing crawl.

use clap::Parser;
use trawl::stage::StageCtx;
use trawl::tools::repartition::{self, RepartitionOpts};

#[derive(Debug, Parser)]
#[command(
    about = "Change the partition count of a crawl (crawldb, linkdb, pagerank, every segment)",
    long_about = "Rewrites every host-partitioned dataset of the crawl directory to --partitions \
parts: the crawldb (a new version; crawldb/old keeps the previous one), the linkdb, pagerank/ and \
every dataset of every segment, so that part i of each holds the hosts of partition i. When N is \
a multiple of the current count, each new part is split from one old part (no shuffle); other \
counts shuffle, still streaming with bounded memory. Holds the crawldb, linkdb and segment locks. \
Safe to interrupt: rerun the same command to finish (what is already at N is skipped). See \
docs/repartition.md."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    /// The new partition count (the range of crawl.partitions).
    #[arg(long, value_name = "N")]
    partitions: usize,
}

trawl::global_allocator!();

fn main() -> std::process::ExitCode {
    trawl::cli::finish(run())
}

fn run() -> anyhow::Result<()> {
    let args = Args::parse();
    trawl::signal::install()?;
    let ctx = StageCtx::from_args(&args.common)?;
    let report = repartition::run(
        &ctx,
        &RepartitionOpts {
            partitions: args.partitions,
        },
    )?;
    ctx.finish(&report)?;
    Ok(())
}
