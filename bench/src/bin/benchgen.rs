//! `benchgen`: writes a synthetic crawldb and fetched segment for benchmarks.

use std::time::Instant;

use clap::Parser;

#[derive(Debug, Parser)]
#[command(
    about = "Write a synthetic crawldb and segment for benchmarks",
    long_about = "Writes a crawldb of --urls URLs over --hosts hosts (default urls/100) and one \
segment in which 10% of the URLs were fetched (crawl_fetch) and parsed with 5 outlinks each \
(crawl_parse), for measuring updatedb and generate with `bench`. The crawl directory should be \
new or disposable: its crawldb is replaced. With --seeds N --out FILE it writes a seed file \
instead: N URLs over --hosts hosts (default N/100), `http://h{i % hosts}.example.com/p/{i / \
hosts}.html`, for measuring inject."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    /// URLs in the crawldb.
    #[arg(long, default_value_t = 1_000_000)]
    urls: u64,
    /// Hosts [default: urls / 100, or seeds / 100].
    #[arg(long)]
    hosts: Option<u64>,
    /// Write a seed file of this many URLs (to --out) instead of a crawl.
    #[arg(long, requires = "out")]
    seeds: Option<u64>,
    /// The seed file written with --seeds.
    #[arg(long, requires = "seeds")]
    out: Option<std::path::PathBuf>,
}

trawl::global_allocator!();

fn main() -> std::process::ExitCode {
    trawl::cli::finish(run())
}

fn run() -> anyhow::Result<()> {
    let args = Args::parse();
    let started = Instant::now();
    if let (Some(n), Some(out)) = (args.seeds, &args.out) {
        trawl::cli::init_logging();
        let hosts = args.hosts.unwrap_or((n / 100).max(1));
        let bytes = trawl_bench::benchgen::write_seeds(out, n, hosts)?;
        trawl::cli::summary(
            "benchgen",
            started,
            &format!(
                "{n} seed URLs over {hosts} hosts, {bytes} bytes, {}",
                out.display()
            ),
        );
        return Ok(());
    }
    let (cfg, dir) = args.common.setup()?;
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
