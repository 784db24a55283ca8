//! `readdb`: statistics, records, dumps and top lists of the crawldb.

use std::path::PathBuf;

use clap::Parser;
use trawl::cli::{Exit, exit};
use trawl::crawldb::readdb::{self, Filter, Format, Query, ReaddbOpts, ReaddbReport};
use trawl::stage::StageCtx;

#[derive(Debug, Parser)]
#[command(
    name = "readdb",
    version,
    about = "Read the crawldb: stats, one URL, dumps, top scores",
    long_about = "Streams the crawldb and prints, on stdout, one of: --stats (URLs by status, score \
min/avg/max and quantiles, fetch_time range, interval/retry/depth distributions, host count; \
--per-host adds per-host status counts), --url URL (the record as JSON), --dump (all or filtered \
rows as jsonl, csv or parquet), --top N (best scores as jsonl)."
)]
#[command(group(clap::ArgGroup::new("mode").required(true).args(["stats", "url", "dump", "top", "partitions"])))]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    /// Print statistics.
    #[arg(long)]
    stats: bool,
    /// With --stats: per-host status counts.
    #[arg(long, requires = "stats")]
    per_host: bool,
    /// Print the record of one URL as JSON (exit code 1 if unknown).
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// Dump rows.
    #[arg(long)]
    dump: bool,
    /// Dump format.
    #[arg(long, value_enum, default_value_t = Format::Jsonl)]
    format: Format,
    /// Dump only rows with this status (db_fetched, ...).
    #[arg(long, value_name = "S", value_parser = status)]
    status: Option<trawl::DbStatus>,
    /// Dump only URLs matching this regex.
    #[arg(long, value_name = "R", value_parser = regex::Regex::new)]
    regex: Option<regex::Regex>,
    /// Write the dump to this file instead of stdout (required for parquet).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Print the N highest-scoring rows as jsonl.
    #[arg(long, value_name = "N")]
    top: Option<usize>,
    /// With --stats: print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Print the crawldb's partition count (from its `_meta.json`; on an object
    /// store no part is downloaded): what a cluster driver splits tasks by.
    #[arg(long)]
    partitions: bool,
}

/// `--status`: a crawldb status (else a usage error, exit code 2).
fn status(s: &str) -> Result<trawl::DbStatus, String> {
    trawl::DbStatus::parse(s).ok_or_else(|| {
        "unknown status; use one of db_unfetched, db_fetched, db_gone, db_redir_temp, db_redir_perm, db_notmodified, db_duplicate".into()
    })
}

/// Runs the command with its arguments (`args[0]` is its name).
pub fn main(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    trawl::cli::finish(run(args))
}

fn run(args: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    let args = Args::parse_from(args);
    if args.partitions {
        let ctx = StageCtx::from_meta_args(&args.common)?;
        let meta = ctx.open_existing()?.crawldb_meta()?;
        println!("{}", meta.partitions);
        ctx.finish_line("readdb", &format!("{} partitions", meta.partitions))?;
        return Ok(());
    }
    let ctx = StageCtx::from_args(&args.common)?;
    let query = if args.stats {
        Query::Stats {
            per_host: args.per_host,
            json: args.json,
        }
    } else if let Some(url) = args.url {
        Query::Url(url)
    } else if args.dump {
        Query::Dump {
            format: args.format,
            filter: Filter {
                status: args.status,
                regex: args.regex,
            },
            file: args.out,
        }
    } else if let Some(n) = args.top {
        Query::Top(n)
    } else {
        anyhow::bail!("pass one of --stats, --url, --dump, --top");
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let report = readdb::run(&ctx, &ReaddbOpts { query }, &mut out)?;
    if let ReaddbReport::Missing(url) = &report {
        return Err(Exit::new(exit::ERROR, format!("readdb: {url} is not in the crawldb")).into());
    }
    ctx.finish(&report)?;
    Ok(())
}
