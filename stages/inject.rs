//! `inject`: adds seed URLs to the crawldb.

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use trawl::crawldb::inject::{self, InjectOpts, expand_inputs};
use trawl::stage::StageCtx;

/// Adds seed URLs to the crawldb (creating the crawl directory on first run).
#[derive(Debug, Parser)]
#[command(
    name = "inject",
    version,
    about = "Inject seed URLs into the crawldb",
    long_about = "Reads seed files (one URL per line, optionally followed by whitespace-separated \
key=value pairs: score=, fetch_interval= (seconds, pinned), anything else becomes metadata; \
'#' comments and blank lines are skipped), normalizes and filters the URLs with [urls], and \
merges them into the crawldb. URLs already known keep their record. Each SEED is a file, a \
directory (every regular file in it, sorted by name; names starting with '.' or '_' and \
subdirectories are skipped) or '-' for standard input. Seeds are UTF-8 (a leading byte order \
mark is skipped). Rejected lines (a bad URL, bad metadata, a line that is not UTF-8) are \
reported once each with file:line and reason, echoing at most 200 characters of the line; the \
rest is injected, and the summary counts accepted and rejected lines per input. With \
--sitemaps FILE, FILE lists sitemap URLs (one per line): they are fetched at once (like the \
`sitemap` stage) and their URLs merged into the crawldb; the sitemaps are remembered and \
refetched by later `sitemap` runs when due (docs/sitemaps.md)."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    #[command(flatten)]
    task: trawl::cli::TaskArgs,
    /// Seed files, directories of seed files, or `-` for standard input (optional with
    /// --sitemaps).
    #[arg(value_name = "SEED", required_unless_present = "sitemaps")]
    seeds: Vec<PathBuf>,
    /// A file of sitemap URLs, one per line (`#` comments): fetch them and inject their URLs.
    #[arg(long, value_name = "FILE")]
    sitemaps: Option<PathBuf>,
}

/// Runs the command with its arguments (`args[0]` is its name).
pub fn main(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    trawl::cli::finish(run(args))
}

fn run(args: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    let args = Args::parse_from(args);
    if args.sitemaps.is_some() && args.task.job.is_some() {
        anyhow::bail!(
            "inject --sitemaps runs in one process only: inject the seed files as a job, then run --sitemaps without --job"
        );
    }
    let ctx = StageCtx::from_task_args(&args.common, &args.task)?;
    // Check every input before touching the crawl directory.
    let opts = InjectOpts {
        inputs: expand_inputs(&args.seeds)?,
    };
    if let Some(list) = &args.sitemaps {
        let extra = trawl::sitemaps::read_sitemap_list(list)?;
        if !opts.inputs.is_empty() {
            inject_seeds(&ctx, &opts)?;
        }
        let started = Instant::now();
        let opts = trawl::sitemaps::SitemapOpts {
            extra,
            force: false,
            pass: None,
            only_extra: true,
        };
        let summary = trawl::sitemaps::run(&ctx, &opts)?;
        trawl::sitemaps::print_problems(&summary);
        trawl::cli::summary("inject --sitemaps", started, &summary.to_string());
        return Ok(());
    }
    inject_seeds(&ctx, &opts)
}

fn inject_seeds(ctx: &StageCtx, opts: &InjectOpts) -> anyhow::Result<()> {
    let report = inject::run(ctx, opts, &mut |r| eprintln!("{r}"))?;
    if report.inputs.len() > 1 {
        for i in &report.inputs {
            eprintln!("inject: {}", i.line());
        }
    }
    ctx.finish(&report)?;
    Ok(())
}
