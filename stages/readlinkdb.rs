//! `readlinkdb`: inlinks of one URL, or the whole linkdb.

use std::io::Write;

use clap::Parser;
use trawl::stage::StageCtx;
use trawl::tools::readlinkdb::{self, ReadLinkDbOpts};

#[derive(Debug, Parser)]
#[command(
    name = "readlinkdb",
    version,
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

/// Runs the command with its arguments (`args[0]` is its name).
pub fn main(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    trawl::cli::finish(run(args))
}

fn run(args: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    let args = Args::parse_from(args);
    let ctx = StageCtx::from_args(&args.common)?;
    let opts = if let Some(url) = args.url {
        ReadLinkDbOpts::Url(url)
    } else if args.dump {
        ReadLinkDbOpts::Dump
    } else {
        anyhow::bail!("pass --url URL or --dump");
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let report = readlinkdb::run(&ctx, &opts, &mut out)?;
    out.flush()?;
    ctx.finish(&report)?;
    Ok(())
}
