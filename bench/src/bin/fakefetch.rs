//! `fakefetch`: a synthetic fetch and parse result for a generated segment (see
//! `trawl_bench::fakefetch`), so updatedb, linkdb and pagerank can be measured at
//! scale without a network.

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;

#[derive(Debug, Parser)]
#[command(
    about = "Write a synthetic fetch and parse result for a generated segment",
    long_about = "Marks every URL of the segment's fetch list fetched (200) and parsed with \
--outlinks links each to new URLs: writes and commits crawl_fetch, then parse_text, \
crawl_parse and parse_data, as fetch and parse do (no content, no robots). For benchmarks: \
the segment must be generated and not fetched yet."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    /// The segment (a name under segments/ or a path).
    #[arg(long)]
    segment: PathBuf,
    /// New outlinks per page.
    #[arg(long, default_value_t = 5)]
    outlinks: usize,
    /// Words of synthetic text (Zipf over a 30,000-word vocabulary) per page, and a
    /// title; 0 = a short placeholder text.
    #[arg(long, default_value_t = 0)]
    text_words: usize,
}

trawl::global_allocator!();

fn main() -> std::process::ExitCode {
    trawl::cli::finish(run())
}

fn run() -> anyhow::Result<()> {
    let args = Args::parse();
    let (_cfg, dir) = args.common.setup()?;
    let started = Instant::now();
    let r =
        trawl_bench::fakefetch::fake_fetch(&dir, &args.segment, args.outlinks, args.text_words)?;
    trawl::cli::summary(
        "fakefetch",
        started,
        &format!(
            "{} pages fetched and parsed, {} outlinks, segment {}",
            r.pages,
            r.links,
            args.segment.display()
        ),
    );
    Ok(())
}
