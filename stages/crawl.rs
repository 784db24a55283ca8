//! `crawl`: the crawl driver (Nutch's `bin/crawl`): inject, then rounds of every stage.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use trawl::driver::{self, CrawlOpts};

#[derive(Debug, Parser)]
#[command(
    name = "crawl",
    version,
    about = "Crawl: inject the seeds, then N rounds of every stage (Nutch's bin/crawl)",
    long_about = "Injects the seeds (--seeds, a seed file or a directory of them; optional when \
the crawl exists), then runs --rounds rounds of generate, fetch, parse, updatedb, linkdb, dedup, \
pagerank, sitemap and index in this process, each stage printing its own summary line, and a \
line per round. Stops early when no URL is due (or, with --wait, sleeps and generates again). \
Create <crawl>/STOP to stop a running crawl after its current stage (the file is removed). \
Resumable: killed at any point, the same command run again goes on where it was (a segment not \
fetched, parsed, applied or inverted is finished before anything new is generated; the journal \
crawl_journal.json records the rounds done and the steps of the round in progress). \
Exit codes: 0 done (all rounds, nothing due, or STOP), 4 interrupted by a signal, 5 fetch \
reached no server (its segment was applied), 6 locked, others as the stages (docs/exit-codes.md)."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    /// Serve the live status (status.json's figures) as Prometheus text at
    /// http://ADDR/metrics while running; a loopback address (127.0.0.1:9464; port 0
    /// picks one, named in the log).
    #[arg(long, value_name = "ADDR")]
    metrics_addr: Option<std::net::SocketAddr>,
    /// A seed file or a directory of seed files to inject first (repeatable; `inject`'s
    /// format). Optional when the crawl directory already has a crawldb.
    #[arg(long, short = 's', value_name = "PATH")]
    seeds: Vec<PathBuf>,
    /// Rounds to crawl (generate to index); the crawl stops earlier when nothing is due.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    rounds: u64,
    /// URLs per round's fetch list (sets generate.top_n; Nutch's --size-fetchlist).
    #[arg(long, value_name = "N")]
    size_fetchlist: Option<usize>,
    /// Time allowed to each fetch (sets fetch.time_limit): a number with a unit s, m,
    /// h or d; a bare number is minutes, as in Nutch's bin/crawl.
    #[arg(long, value_name = "TIME", value_parser = minutes)]
    time_limit_fetch: Option<Duration>,
    /// When no URL is due, wait this long and generate again instead of stopping (a
    /// number with a unit s, m, h or d; a bare number is seconds, as in Nutch).
    #[arg(long, value_name = "TIME", value_parser = seconds)]
    wait: Option<Duration>,
    /// Partitions of a new crawl (sets crawl.partitions; Nutch's --num-tasks). An
    /// existing crawl keeps its own: `repartition` changes it.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    num_tasks: Option<u64>,
    /// Do not build the search index each round.
    #[arg(long)]
    no_index: bool,
    /// Do not mark duplicates each round.
    #[arg(long)]
    no_dedup: bool,
}

fn minutes(s: &str) -> Result<Duration, String> {
    driver::parse_duration(s, 'm')
}

fn seconds(s: &str) -> Result<Duration, String> {
    driver::parse_duration(s, 's')
}

/// Runs the command with its arguments (`args[0]` is its name).
pub fn main(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    trawl::cli::finish(run(args))
}

fn run(args: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    let mut args = Args::parse_from(args);
    trawl::signal::install()?;
    if let Some(addr) = args.metrics_addr {
        trawl::status::serve_metrics(addr)?;
    }
    let set = &mut args.common.set;
    if let Some(n) = args.size_fetchlist {
        set.push(format!("generate.top_n={n}"));
    }
    if let Some(t) = args.time_limit_fetch {
        set.push(format!("fetch.time_limit={}", t.as_secs_f64()));
    }
    if let Some(n) = args.num_tasks {
        set.push(format!("crawl.partitions={n}"));
    }
    let opts = CrawlOpts {
        seeds: args.seeds,
        rounds: args.rounds as usize,
        wait: args.wait,
        index: !args.no_index,
        dedup: !args.no_dedup,
        partitions: args.num_tasks.map(|n| n as usize),
    };
    let (ctx, report) = driver::run(&args.common, &opts)?;
    ctx.finish(&report)?;
    Ok(())
}
