//! `parse`: parses a fetched segment's content into parse_text, parse_data and crawl_parse.

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;

/// Parse a fetched segment.
#[derive(Debug, Parser)]
#[command(
    about = "Parse a fetched segment: text, metadata, outlinks, signatures",
    long_about = "Reads the segment's content/ and writes parse_text/ (visible and main text), \
parse_data/ (title, charset, robots directives, outlinks, signatures, metadata) and crawl_parse/ \
(one signature row per page and one link row per followable outlink, partitioned by the row's \
host, for updatedb). Without SEGMENT, parses the newest segment that has content but no parse_data."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    /// The segment: a path, or a name under <crawl-dir>/segments.
    #[arg(value_name = "SEGMENT")]
    segment: Option<PathBuf>,
    /// Parse again a segment that is already parsed, replacing its parse outputs.
    #[arg(long)]
    reparse: bool,
    /// Maximum outlinks kept per page [config: parse.max_outlinks].
    #[arg(long, value_name = "N")]
    max_outlinks: Option<usize>,
    /// Time budget per page in milliseconds, 0 = none [config: parse.max_page_millis].
    #[arg(long, value_name = "MS")]
    max_page_millis: Option<u64>,
}

fn main() -> std::process::ExitCode {
    trawl::cli::finish(run())
}

fn run() -> anyhow::Result<()> {
    let args = Args::parse();
    trawl::signal::install()?;
    let started = Instant::now();
    let (mut cfg, dir) = args.common.setup()?;
    if let Some(n) = args.max_outlinks {
        cfg.parse.max_outlinks = n;
    }
    if let Some(ms) = args.max_page_millis {
        cfg.parse.max_page_millis = ms;
    }
    cfg.validate_flags()?;
    let run_args = trawl::parse::ParseArgs {
        segment: args.segment,
        reparse: args.reparse,
    };
    let s = trawl::parse::run(&cfg, &dir, &run_args)?;
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    let mb = s.bytes as f64 / 1e6;
    trawl::cli::summary(
        "parse",
        started,
        &format!(
            "segment {}: {} pages ({} success, {} failed), {} outlinks, {} link rows, {:.1} MB at {:.1} MB/s",
            s.segment,
            s.pages,
            s.success,
            s.failed,
            s.outlinks,
            s.link_rows,
            mb,
            mb / secs
        ),
    );
    Ok(())
}
