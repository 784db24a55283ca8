//! `hostdb`: one row per host: URL counts, fetch successes and failures, robots.txt.

use clap::Parser;
use trawl::hostdb::{self, HostDbOpts};
use trawl::stage::StageCtx;

#[derive(Debug, Parser)]
#[command(
    name = "hostdb",
    version,
    about = "Update the host database (hostdb/): one row per host",
    long_about = "Writes a new version of hostdb/ (the previous kept as hostdb/old): per host, \
its URLs in the crawldb by status, and fetch counters folded in from the crawl_fetch of every \
segment applied to the crawldb since the last run (successes, failures, consecutive failures, \
connection and DNS errors, mean response time, last fetch, success and failure), the newest \
robots.txt outcome and Crawl-delay, and the sitemaps known. generate leaves hosts that failed \
generate.host_max_failures times in a row out of fetch lists for generate.host_backoff seconds. \
`crawl` runs it every round; `readhostdb` reads it (docs/hostdb.md). With --job it runs as \
partition tasks and their commit (docs/cluster.md)."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    /// Rebuild from the segments in the crawl directory instead of folding new ones in
    /// (counters of segments merged or deleted since are lost).
    #[arg(long)]
    full: bool,
    #[command(flatten)]
    task: trawl::cli::TaskArgs,
}

/// Runs the command with its arguments (`args[0]` is its name).
pub fn main(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    trawl::cli::finish(run(args))
}

fn run(args: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    let args = Args::parse_from(args);
    trawl::signal::install()?;
    let ctx = StageCtx::from_task_args(&args.common, &args.task)?;
    let report = hostdb::run(&ctx, &HostDbOpts { full: args.full })?;
    ctx.finish(&report)?;
    Ok(())
}
