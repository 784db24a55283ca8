//! `inject`: adds seed URLs to the crawldb.

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use trawl::crawldb::inject::{SeedInput, expand_inputs};

/// Adds seed URLs to the crawldb (creating the crawl directory on first run).
#[derive(Debug, Parser)]
#[command(
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
    /// Seed files, directories of seed files, or `-` for standard input (optional with
    /// --sitemaps).
    #[arg(value_name = "SEED", required_unless_present = "sitemaps")]
    seeds: Vec<PathBuf>,
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
    // Check every input before touching the crawl directory.
    let inputs = expand_inputs(&args.seeds)?;
    if let Some(list) = &args.sitemaps {
        let extra = trawl::sitemaps::read_sitemap_list(list)?;
        if !inputs.is_empty() {
            inject_seeds(&dir, &cfg, &inputs, started)?;
        }
        let started = Instant::now();
        let opts = trawl::sitemaps::SitemapOpts {
            extra,
            force: false,
            only_extra: true,
        };
        let summary = trawl::sitemaps::run(&trawl::stage::StageCtx::new(&dir, cfg), &opts)?;
        trawl::sitemaps::print_problems(&summary);
        trawl::cli::summary("inject --sitemaps", started, &summary.to_string());
        return Ok(());
    }
    inject_seeds(&dir, &cfg, &inputs, started)
}

fn inject_seeds(
    dir: &std::path::Path,
    cfg: &trawl::Config,
    inputs: &[SeedInput],
    started: Instant,
) -> anyhow::Result<()> {
    let report = trawl::crawldb::inject::run(dir, cfg, inputs)?;
    for r in &report.rejected {
        eprintln!("{r}");
    }
    let per_input = |i: &trawl::crawldb::inject::InputReport| {
        format!(
            "{}: {} accepted, {} rejected",
            i.name, i.accepted, i.rejected
        )
    };
    let inputs_note = match report.inputs.as_slice() {
        [one] => per_input(one),
        many => {
            for i in many {
                eprintln!("inject: {}", per_input(i));
            }
            format!("{} inputs", many.len())
        }
    };
    trawl::cli::summary(
        "inject",
        started,
        &format!(
            "injected {}, already known {}, rejected {}, crawldb {} urls ({inputs_note})",
            report.injected,
            report.known,
            report.rejected.len(),
            report.rows
        ),
    );
    Ok(())
}
