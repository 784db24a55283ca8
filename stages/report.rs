//! `report`: the crawl as one HTML page with charts (crawl/report.html).

use std::path::PathBuf;

use clap::Parser;
use trawl::report::{self, ReportOpts};
use trawl::stage::StageCtx;

#[derive(Debug, Parser)]
#[command(
    name = "report",
    version,
    about = "Write crawl/report.html: rounds, statuses, top hosts, response times, page sizes, depth",
    long_about = "Writes one self-contained HTML page (inline SVG charts, no script, nothing \
loaded from the network: readable offline) showing the crawl: per round (fetched segment) the \
URLs fetched, failed, gone and redirected and the new URLs (from the crawl driver's journal), \
the crawldb's URLs by status, the top hosts (the hostdb's when there is one), the distributions \
of response times and page sizes, and the crawl depth. Written atomically to \
<crawl>/report.html, or --out FILE."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    /// The output file [default: <crawl>/report.html].
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// Runs the command with its arguments (`args[0]` is its name).
pub fn main(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    trawl::cli::finish(run(args))
}

fn run(args: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    let args = Args::parse_from(args);
    let ctx = StageCtx::from_args(&args.common)?;
    let r = report::run(&ctx, &ReportOpts { out: args.out })?;
    ctx.finish(&r)?;
    Ok(())
}
