//! `readdb`: statistics, records, dumps and top lists of the crawldb.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::Parser;
use trawl::crawldb::readdb::{self, Filter, Format};
use trawl::store::layout::CrawlDir;

#[derive(Debug, Parser)]
#[command(
    about = "Read the crawldb: stats, one URL, dumps, top scores",
    long_about = "Streams the crawldb and prints, on stdout, one of: --stats (URLs by status, score \
min/avg/max and quantiles, fetch_time range, interval/retry/depth distributions, host count; \
--per-host adds per-host status counts), --url URL (the record as JSON), --dump (all or filtered \
rows as jsonl, csv or parquet), --top N (best scores as jsonl)."
)]
#[command(group(clap::ArgGroup::new("mode").required(true).args(["stats", "url", "dump", "top"])))]
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
}

/// `--status`: a crawldb status (else a usage error, exit code 2).
fn status(s: &str) -> Result<trawl::DbStatus, String> {
    trawl::DbStatus::parse(s).ok_or_else(|| {
        "unknown status; use one of db_unfetched, db_fetched, db_gone, db_redir_temp, db_redir_perm, db_notmodified, db_duplicate".into()
    })
}

fn main() -> std::process::ExitCode {
    trawl::cli::finish(run())
}

fn run() -> anyhow::Result<()> {
    let args = Args::parse();
    let (_cfg, root) = args.common.setup()?;
    let started = Instant::now();
    let dir = CrawlDir::open_existing(&root)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let summary;
    if args.stats {
        let st = readdb::stats(&dir, args.per_host)?;
        if args.json {
            serde_json::to_writer_pretty(&mut out, &st)?;
            writeln!(out)?;
        } else {
            readdb::print_stats(&st, &mut out)?;
        }
        summary = format!("{} urls, {} hosts", st.urls, st.hosts);
    } else if let Some(url) = &args.url {
        match readdb::lookup(&dir, url)? {
            Some(d) => {
                serde_json::to_writer_pretty(&mut out, &d)?;
                writeln!(out)?;
                summary = "1 record".into();
            }
            None => {
                out.flush()?;
                return Err(trawl::cli::Exit::new(
                    trawl::cli::exit::ERROR,
                    format!("readdb: {url} is not in the crawldb"),
                )
                .into());
            }
        }
    } else if args.dump {
        let filter = Filter {
            status: args.status,
            regex: args.regex.clone(),
        };
        let n = match (&args.out, args.format) {
            (Some(p), Format::Parquet) => {
                readdb::dump(&dir, args.format, &filter, &mut out, Some(p))?
            }
            (Some(p), _) => {
                let f =
                    std::fs::File::create(p).with_context(|| format!("--out {}", p.display()))?;
                readdb::dump(
                    &dir,
                    args.format,
                    &filter,
                    &mut std::io::BufWriter::new(f),
                    None,
                )?
            }
            (None, _) => readdb::dump(&dir, args.format, &filter, &mut out, None)?,
        };
        summary = format!("{n} rows dumped");
    } else if let Some(n) = args.top {
        let rows = readdb::top(&dir, n)?;
        for d in &rows {
            serde_json::to_writer(&mut out, d)?;
            writeln!(out)?;
        }
        summary = format!("top {} rows", rows.len());
    } else {
        anyhow::bail!("pass one of --stats, --url, --dump, --top");
    }
    out.flush()?;
    trawl::cli::summary("readdb", started, &summary);
    Ok(())
}
