//! `dedup`: marks duplicate pages in the crawldb as `db_duplicate`.

use clap::{Parser, ValueEnum};
use trawl::dedup::{self, DedupOpts, DedupPass};
use trawl::stage::StageCtx;

/// Mark duplicates in the crawldb.
#[derive(Debug, Parser)]
#[command(
    name = "dedup",
    version,
    about = "Mark duplicate pages in the crawldb as db_duplicate",
    long_about = "Groups fetched crawldb rows by content signature (and, with --near, by SimHash \
distance read from the segments' parse_data) and marks all but one row of each group db_duplicate: \
the highest score wins, then the shortest URL. Rewrites the crawldb under its lock."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    #[command(flatten)]
    task: trawl::cli::TaskArgs,
    #[command(flatten)]
    pass: trawl::cli::PassArgs<Pass>,
    /// Also group near duplicates: pages whose SimHashes differ in at most --distance bits.
    #[arg(long)]
    near: bool,
    /// Maximum differing SimHash bits for --near.
    #[arg(long, default_value_t = 3, value_name = "K")]
    distance: u32,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Pass {
    /// Per partition set: its candidates routed to buckets by signature and SimHash block.
    Keys,
    /// Per bucket set: each bucket's duplicate groups (with --near, its pairs).
    Groups,
    /// One task (--partitions all): with --near, the groups the buckets' pairs make.
    Resolve,
    /// The duplicate decision over the whole crawldb in memory (one task over every partition).
    Signatures,
    /// Crawldb parts rewritten with the job's decision.
    Rewrite,
}

/// Runs the command with its arguments (`args[0]` is its name).
pub fn main(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    trawl::cli::finish(run(args))
}

fn run(args: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    let args = Args::parse_from(args);
    trawl::signal::install()?;
    let ctx = StageCtx::from_pass_task_args(&args.common, &args.task, args.pass.name())?;
    let opts = DedupOpts {
        near: args.near,
        max_distance: args.distance.min(63),
        pass: args.pass.pass.map(|p| match p {
            Pass::Keys => DedupPass::Keys,
            Pass::Groups => DedupPass::Groups,
            Pass::Resolve => DedupPass::Resolve,
            Pass::Signatures => DedupPass::Signatures,
            Pass::Rewrite => DedupPass::Rewrite,
        }),
    };
    let report = dedup::run(&ctx, &opts)?;
    ctx.finish(&report)?;
    Ok(())
}
