//! `sitemap`: discovers, fetches and parses sitemaps and merges their URLs into the crawldb.

use clap::Parser;
use trawl::sitemaps::{self, SitemapOpts};
use trawl::stage::StageCtx;

/// A round step: sitemaps from robots.txt (and /sitemap.xml when configured) into the crawldb.
#[derive(Debug, Parser)]
#[command(
    name = "sitemap",
    version,
    about = "Fetch sitemaps and merge their URLs into the crawldb",
    long_about = "Discovers sitemaps from the Sitemap: lines of the robots.txt files the fetcher \
recorded (every segment's robots/ dataset), from /sitemap.xml of every known host when \
sitemaps.probe_sitemap_xml is on, and keeps those given by `inject --sitemaps`. Fetches the \
ones that are new or due (sitemapdb/ remembers each; sitemaps.refetch_interval) politely \
(robots.txt, fetch.delay, size cap, timeouts), follows sitemap indexes down to \
sitemaps.max_depth, and merges the URLs into the crawldb: new URLs enter db_unfetched with \
score = <priority>, fetch interval from <changefreq>, modified time = <lastmod>; known URLs \
keep their record (a <lastmod> newer than the last fetch makes them due). Problems in the \
files are reported with the sitemap URL, position and reason; the rest is kept. Runs as \
partition tasks with --job/--partitions/--attempt (each fetches the sitemaps on its \
partitions' hosts under their fetch leases and writes the URLs found per target partition) \
then --pass merge tasks (the URLs found for a task's partitions merged into their crawldb \
parts), and --job --commit (installs the merged parts, or merges the URLs itself when no \
merge task ran, and installs the sitemapdb). See \
docs/sitemaps.md."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    #[command(flatten)]
    task: trawl::cli::TaskArgs,
    #[command(flatten)]
    pass: trawl::cli::PassArgs<Pass>,
    /// Fetch every known sitemap now, due or not.
    #[arg(long)]
    force: bool,
    /// Also try /sitemap.xml on every host of the crawldb (sitemaps.probe_sitemap_xml).
    #[arg(long)]
    probe: bool,
    /// Seconds between two requests to one host (overrides `fetch.delay`, as `fetch --delay`).
    #[arg(long, value_name = "SECS")]
    delay: Option<f64>,
    /// A task's time limit in seconds (overrides `fetch.time_limit`, as `fetch
    /// --time-limit`): a sitemap task needs one, its partitions' leases expire after it.
    #[arg(long, value_name = "SECS")]
    time_limit: Option<f64>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Pass {
    /// The sitemaps on the task's partitions' hosts, under their fetch leases (also without --pass).
    Fetch,
    /// The URLs every fetch attempt found for the task's partitions, merged into their crawldb parts.
    Merge,
}

/// Runs the command with its arguments (`args[0]` is its name).
pub fn main(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    trawl::cli::finish(run(args))
}

fn run(args: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    let args = Args::parse_from(args);
    trawl::signal::install()?;
    let mut ctx = StageCtx::from_pass_task_args(&args.common, &args.task, args.pass.name())?;
    let cfg = ctx.config_mut();
    if args.probe {
        cfg.sitemaps.probe_sitemap_xml = true;
    }
    if let Some(d) = args.delay {
        cfg.fetch.delay = d;
    }
    if let Some(t) = args.time_limit {
        cfg.fetch.time_limit = t;
    }
    ctx.validate_flags()?;
    let opts = SitemapOpts {
        pass: args.pass.pass.map(|p| match p {
            Pass::Fetch => sitemaps::SitemapPass::Fetch,
            Pass::Merge => sitemaps::SitemapPass::Merge,
        }),
        force: args.force,
        ..Default::default()
    };
    let report = sitemaps::run(&ctx, &opts)?;
    sitemaps::print_problems(&report);
    ctx.finish(&report)?;
    Ok(())
}
