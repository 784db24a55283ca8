//! `readseg`: list segments, dump a segment's datasets.

use std::io::Write;
use std::path::PathBuf;

use clap::Parser;
use trawl::stage::StageCtx;
use trawl::tools::readseg::{self, DumpOpts, ReadSegOpts};

#[derive(Debug, Parser)]
#[command(
    name = "readseg",
    version,
    about = "Read segments: list them, dump their datasets",
    long_about = "--list prints one line per segment (fetch-list size, crawl_fetch rows, rows per \
fetch status, bytes of content, fetch time range, complete datasets); --json prints the same as \
JSON lines. --dump SEGMENT writes the segment's datasets as JSON lines on stdout, each row with a \
leading \"dataset\" field (binary content as hex, timestamps ISO 8601 UTC); --url keeps one URL's \
rows across the datasets, --dataset and --columns narrow what is written."
)]
#[command(group(clap::ArgGroup::new("mode").required(true).args(["list", "dump"])))]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    /// List the segments with their statistics.
    #[arg(long)]
    list: bool,
    /// With --list: JSON lines instead of a table.
    #[arg(long, requires = "list")]
    json: bool,
    /// Dump this segment (a name under <crawl-dir>/segments or a path).
    #[arg(long, value_name = "SEGMENT")]
    dump: Option<PathBuf>,
    /// With --dump: only rows whose url is URL (in every dataset; in robots, the row of its origin).
    #[arg(long, value_name = "URL", requires = "dump")]
    url: Option<String>,
    /// With --dump: only these datasets (comma-separated: crawl_generate, crawl_fetch,
    /// content, robots, parse_text, parse_data, crawl_parse) [default: every complete one].
    #[arg(long, value_name = "NAME", value_delimiter = ',', requires = "dump")]
    dataset: Vec<String>,
    /// With --dump: only these columns (comma-separated; `dataset` is always written).
    #[arg(long, value_name = "A,B", value_delimiter = ',', requires = "dump")]
    columns: Vec<String>,
}

/// Runs the command with its arguments (`args[0]` is its name).
pub fn main(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    trawl::cli::finish(run(args))
}

fn run(args: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    let args = Args::parse_from(args);
    let ctx = StageCtx::from_args(&args.common)?;
    let opts = if args.list {
        ReadSegOpts::List { json: args.json }
    } else if let Some(segment) = args.dump {
        ReadSegOpts::Dump {
            segment,
            dump: DumpOpts {
                datasets: args.dataset,
                url: args.url,
                columns: args.columns,
            },
        }
    } else {
        anyhow::bail!("pass --list or --dump SEGMENT");
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let report = readseg::run(&ctx, &opts, &mut out)?;
    out.flush()?;
    ctx.finish(&report)?;
    Ok(())
}
