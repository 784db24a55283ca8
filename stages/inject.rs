//! `inject`: adds seed URLs to the crawldb.

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;

/// Adds seed URLs to the crawldb (creating the crawl directory on first run).
#[derive(Debug, Parser)]
#[command(
    about = "Inject seed URLs into the crawldb",
    long_about = "Reads a seed file (one URL per line, optionally followed by whitespace-separated \
key=value pairs: score=, fetch_interval= (seconds, pinned), anything else becomes metadata; \
'#' comments and blank lines are skipped), normalizes and filters the URLs with [urls], and \
merges them into the crawldb. URLs already known keep their record. Rejected lines are \
reported with file:line and reason; the rest is injected. With --sitemaps FILE, FILE lists \
sitemap URLs (one per line): they are fetched at once (like the `sitemap` stage) and their \
URLs merged into the crawldb; the sitemaps are remembered and refetched by later `sitemap` \
runs when due (docs/sitemaps.md)."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    /// The seed file (optional with --sitemaps).
    #[arg(required_unless_present = "sitemaps")]
    seed_file: Option<PathBuf>,
    /// A file of sitemap URLs, one per line (`#` comments): fetch them and inject their URLs.
    #[arg(long, value_name = "FILE")]
    sitemaps: Option<PathBuf>,
}

fn main() -> std::process::ExitCode {
    trawl::cli::finish(run())
}

fn run() -> anyhow::Result<()> {
    let args = Args::parse();
    let (cfg, dir) = args.common.setup()?;
    let started = Instant::now();
    if let Some(list) = &args.sitemaps {
        // Validate the list before touching the crawl directory.
        let extra = trawl::sitemaps::read_sitemap_list(list)?;
        if let Some(seeds) = &args.seed_file {
            inject_seeds(&dir, &cfg, seeds, started)?;
        }
        let started = Instant::now();
        let opts = trawl::sitemaps::Options {
            extra,
            force: false,
            only_extra: true,
        };
        let summary = trawl::sitemaps::run(&dir, &cfg, &opts)?;
        trawl::sitemaps::print_problems(&summary);
        trawl::cli::summary("inject --sitemaps", started, &summary.line());
        return Ok(());
    }
    if let Some(seeds) = &args.seed_file {
        inject_seeds(&dir, &cfg, seeds, started)?;
    }
    Ok(())
}

fn inject_seeds(
    dir: &std::path::Path,
    cfg: &trawl::Config,
    seeds: &std::path::Path,
    started: Instant,
) -> anyhow::Result<()> {
    let report = trawl::crawldb::inject::run(dir, cfg, seeds)?;
    for r in &report.rejected {
        eprintln!("{r}");
    }
    trawl::cli::summary(
        "inject",
        started,
        &format!(
            "injected {}, already known {}, rejected {}, crawldb {} urls",
            report.injected,
            report.known,
            report.rejected.len(),
            report.rows
        ),
    );
    Ok(())
}
