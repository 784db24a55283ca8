//! `parse`: parses a fetched segment's content into parse_text, parse_data and crawl_parse.

use std::path::PathBuf;

use clap::Parser;
use trawl::parse::{self, ParseOpts};
use trawl::stage::StageCtx;

/// Parse a fetched segment.
#[derive(Debug, Parser)]
#[command(
    name = "parse",
    version,
    about = "Parse a fetched segment: text, metadata, outlinks, signatures",
    long_about = "Reads the segment's content/ and writes parse_text/ (visible and main text), \
parse_data/ (title, charset, robots directives, outlinks, signatures, metadata) and crawl_parse/ \
(one signature row per page and one link row per followable outlink, partitioned by the row's \
host, for updatedb). Without SEGMENT, parses the newest segment that has content but no parse_data."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    #[command(flatten)]
    task: trawl::cli::TaskArgs,
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

/// Runs the command with its arguments (`args[0]` is its name).
pub fn main(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    trawl::cli::finish(run(args))
}

fn run(args: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    let args = Args::parse_from(args);
    trawl::signal::install()?;
    let mut ctx = StageCtx::from_task_args(&args.common, &args.task)?;
    if let Some(n) = args.max_outlinks {
        ctx.config_mut().parse.max_outlinks = n;
    }
    if let Some(ms) = args.max_page_millis {
        ctx.config_mut().parse.max_page_millis = ms;
    }
    ctx.validate_flags()?;
    let opts = ParseOpts {
        segment: args.segment,
        reparse: args.reparse,
    };
    let report = parse::run(&ctx, &opts)?;
    ctx.finish(&report)?;
    Ok(())
}
