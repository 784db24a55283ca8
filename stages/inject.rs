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
reported with file:line and reason; the rest is injected."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    /// The seed file.
    seed_file: PathBuf,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let (cfg, dir) = args.common.setup()?;
    let started = Instant::now();
    let report = trawl::crawldb::inject::run(&dir, &cfg, &args.seed_file)?;
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
