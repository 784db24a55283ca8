//! `updatedb`: merges fetch and parse results of segments into the crawldb.

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;

#[derive(Debug, Parser)]
#[command(
    about = "Merge fetched segments into the crawldb",
    long_about = "Applies the fetch outcomes (crawl_fetch) and parse results (crawl_parse: \
signatures and outlinks) of segments to the crawldb through the crawldb state machine, adding \
newly discovered URLs. Without SEGMENT, applies the newest fetched segment not yet applied. \
A segment already applied is skipped, so rerunning is harmless."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    /// Segments to apply (names under segments/ or paths) [default: newest unapplied fetched segment].
    segments: Vec<PathBuf>,
    /// Do not add URLs discovered as outlinks or redirect targets.
    #[arg(long)]
    no_additions: bool,
}

fn main() -> std::process::ExitCode {
    trawl::cli::finish(run())
}

fn run() -> anyhow::Result<()> {
    let args = Args::parse();
    trawl::signal::install()?;
    let (mut cfg, dir) = args.common.setup()?;
    if args.no_additions {
        cfg.updatedb.additions_allowed = false;
    }
    cfg.validate_flags()?;
    let started = Instant::now();
    let opts = trawl::crawldb::updatedb::UpdateOptions {
        segments: args.segments.clone(),
    };
    let r = trawl::crawldb::updatedb::run(&dir, &cfg, &opts)?;
    for s in &r.skipped {
        eprintln!("updatedb: segment {s} already applied: skipped");
    }
    trawl::cli::summary(
        "updatedb",
        started,
        &format!(
            "applied [{}], {} fetched, {} added, {} purged, crawldb {} urls",
            r.applied.join(", "),
            r.fetched,
            r.added,
            r.purged,
            r.rows
        ),
    );
    Ok(())
}
