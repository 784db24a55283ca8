//! `readlinkdb`: inlinks of one URL, or the whole linkdb.

use std::io::Write;
use std::time::Instant;

use clap::Parser;
use trawl::store::layout::CrawlDir;
use trawl::tools::readlinkdb;

#[derive(Debug, Parser)]
#[command(
    about = "Read the linkdb: one URL's inlinks, or a dump",
    long_about = "--url URL prints the URL's inlinks (url, from_url, anchor, segment) as JSON \
lines, sorted by source, reading only the target host's partition; --dump prints every row as \
JSON lines."
)]
#[command(group(clap::ArgGroup::new("mode").required(true).args(["url", "dump"])))]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    /// Print the inlinks of this URL.
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// Print every inlink.
    #[arg(long)]
    dump: bool,
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
    let summary = if let Some(url) = &args.url {
        let rows = readlinkdb::inlinks(&dir, url)?;
        for r in &rows {
            readlinkdb::write_row(r, &mut out)?;
        }
        format!("{}: {} inlinks", url, rows.len())
    } else if args.dump {
        let n = readlinkdb::dump(&dir, &mut out)?;
        format!("{n} inlinks dumped")
    } else {
        anyhow::bail!("pass --url URL or --dump");
    };
    out.flush()?;
    trawl::cli::summary("readlinkdb", started, &summary);
    Ok(())
}
