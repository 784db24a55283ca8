//! `readseg`: list segments, dump a segment's datasets.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use trawl::store::layout::CrawlDir;
use trawl::tools::readseg::{self, DumpOptions};

#[derive(Debug, Parser)]
#[command(
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

fn main() -> std::process::ExitCode {
    trawl::cli::finish(run())
}

fn run() -> anyhow::Result<()> {
    let args = Args::parse();
    let (_cfg, root) = args.common.setup()?;
    let started = Instant::now();
    let dir = CrawlDir::open_for_segments(&root)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let summary = if args.list {
        let rows = readseg::list(&dir)?;
        if args.json {
            for r in &rows {
                serde_json::to_writer(&mut out, r)?;
                writeln!(out)?;
            }
        } else {
            readseg::print_list(&rows, &mut out)?;
        }
        format!("{} segments", rows.len())
    } else if let Some(seg) = &args.dump {
        let seg = dir.segment(seg)?;
        let opts = DumpOptions {
            datasets: args.dataset.clone(),
            url: args.url.clone(),
            columns: args.columns.clone(),
        };
        let n = readseg::dump(&seg, &opts, &mut out)?;
        format!("segment {}: {n} rows dumped", seg.name())
    } else {
        anyhow::bail!("pass --list or --dump SEGMENT");
    };
    out.flush()?;
    trawl::cli::summary("readseg", started, &summary);
    Ok(())
}
