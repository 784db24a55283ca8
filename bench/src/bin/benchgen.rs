//! `benchgen`: writes a synthetic crawldb and fetched segment for benchmarks.

use std::time::Instant;

use clap::Parser;

#[derive(Debug, Parser)]
#[command(
    about = "Write a synthetic crawldb and segment for benchmarks",
    long_about = "Writes a crawldb of --urls URLs over --hosts hosts (default urls/100) and one \
segment in which 10% of the URLs were fetched (crawl_fetch) and parsed with 5 outlinks each \
(crawl_parse), for measuring updatedb and generate with `bench`. The crawl directory should be \
new or disposable: its crawldb is replaced."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    /// URLs in the crawldb.
    #[arg(long, default_value_t = 1_000_000)]
    urls: u64,
    /// Hosts [default: urls / 100].
    #[arg(long)]
    hosts: Option<u64>,
}

trawl::global_allocator!();

fn main() -> std::process::ExitCode {
    trawl::cli::finish(run())
}

fn run() -> anyhow::Result<()> {
    let args = Args::parse();
    let (cfg, dir) = args.common.setup()?;
    let started = Instant::now();
    let spec = trawl_bench::benchgen::BenchSpec {
        urls: args.urls,
        hosts: args.hosts.unwrap_or((args.urls / 100).max(1)),
        partitions: cfg.crawl.partitions,
    };
    let seg = trawl_bench::benchgen::generate(&dir, &spec)?;
    println!("{}", seg.display());
    trawl::cli::summary(
        "benchgen",
        started,
        &format!(
            "{} urls over {} hosts, segment {}",
            spec.urls,
            spec.hosts,
            seg.display()
        ),
    );
    Ok(())
}
