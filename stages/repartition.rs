//! `repartition`: change the partition count or key of an existing crawl.

use clap::{Parser, ValueEnum};
use trawl::stage::StageCtx;
use trawl::store::partition::PartitionKey;
use trawl::tools::repartition::{self, RepartitionOpts};

/// `--partition-key`.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum Key {
    /// By host name.
    Host,
    /// By registrable domain (public suffix list).
    Domain,
}

#[derive(Debug, Parser)]
#[command(
    name = "repartition",
    version,
    about = "Change the partition count or key of a crawl (crawldb, linkdb, pagerank, every segment)",
    long_about = "Rewrites every partitioned dataset of the crawl directory to --partitions \
parts by --partition-key (host or registrable domain; each the crawl's when not given): the crawldb (a new version; crawldb/old keeps the previous one), the linkdb, pagerank/ and \
every dataset of every segment, so that part i of each holds the hosts of partition i; the new \
count and key are recorded in their _meta.json. When the key stays and N is a multiple of the \
current count, each new part is split from one old part (no shuffle); otherwise rows shuffle, still streaming with bounded memory. Holds the crawldb, linkdb and segment locks. \
Safe to interrupt: rerun the same command to finish (what is already at N is skipped). See \
docs/repartition.md."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    /// The new partition count (the range of crawl.partitions); the crawl's when not given.
    #[arg(long, value_name = "N")]
    partitions: Option<usize>,
    /// The new partition key (crawl.partition_key): host or domain; the crawl's when
    /// not given. Set crawl.partition_key to it afterwards.
    #[arg(long, value_enum, value_name = "KEY")]
    partition_key: Option<Key>,
}

/// Runs the command with its arguments (`args[0]` is its name).
pub fn main(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    trawl::cli::finish(run(args))
}

fn run(args: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    let args = Args::parse_from(args);
    trawl::signal::install()?;
    let ctx = StageCtx::from_args(&args.common)?;
    let report = repartition::run(
        &ctx,
        &RepartitionOpts {
            partitions: args.partitions,
            partition_key: args.partition_key.map(|k| match k {
                Key::Host => PartitionKey::Host,
                Key::Domain => PartitionKey::Domain,
            }),
        },
    )?;
    ctx.finish(&report)?;
    Ok(())
}
