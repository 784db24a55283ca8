//! `fetchbench`: measures the fetcher against an in-process loopback server.

use std::path::PathBuf;

use clap::Parser;
use trawl_bench::fetch::{BenchSpec, run_bench};

/// Benchmark the fetcher.
#[derive(Debug, Parser)]
#[command(
    name = "fetchbench",
    about = "Benchmark fetch: throughput (delay 0) and politeness (delay d) on loopback",
    long_about = "Starts an in-process HTTP server on 127.0.0.1 serving H hosts x P pages \
(mapped with fetch.resolve), writes a fetch list, and runs the real fetcher. The throughput \
run (delay 0, one connection per host) prints pages/s, MB/s and peak RSS; the politeness run \
(delay d) prints the achieved pages/s as a fraction of the ideal H/d. Targets: >= 10,000 \
pages/s and >= 95%."
)]
struct Args {
    /// Hosts in the throughput run.
    #[arg(long, default_value_t = 200)]
    hosts: usize,
    /// Pages per host in the throughput run.
    #[arg(long, default_value_t = 100)]
    pages: usize,
    /// Body bytes per page.
    #[arg(long, default_value_t = 4096)]
    page_bytes: usize,
    /// Maximum connections (fetch.max_connections).
    #[arg(long, default_value_t = 256)]
    max_connections: usize,
    /// Hosts in the politeness run (0 skips it).
    #[arg(long, default_value_t = 50)]
    polite_hosts: usize,
    /// Pages per host in the politeness run.
    #[arg(long, default_value_t = 20)]
    polite_pages: usize,
    /// Delay (seconds) of the politeness run.
    #[arg(long, default_value_t = 0.5)]
    delay: f64,
    /// Also run the throughput scenario over HTTPS (TLS with keep-alive, certificates
    /// from a throw-away CA trusted through fetch.ca_file).
    #[arg(long)]
    https: bool,
    /// fetch.checkpoint_interval (seconds; 0 = no checkpoints): what checkpoints cost.
    #[arg(long, default_value_t = trawl::config::Config::default().fetch.checkpoint_interval)]
    checkpoint_interval: f64,
    /// Where to create the temporary crawl directories.
    #[arg(long, default_value = "target/fetchbench")]
    work_dir: PathBuf,
}

trawl::global_allocator!();

fn main() -> std::process::ExitCode {
    trawl::cli::finish(run())
}

fn run() -> anyhow::Result<()> {
    let args = Args::parse();
    trawl::cli::init_logging();
    std::fs::create_dir_all(&args.work_dir)?;
    let throughput = BenchSpec {
        hosts: args.hosts,
        pages: args.pages,
        page_bytes: args.page_bytes,
        delay: 0.0,
        max_connections: args.max_connections,
        https: false,
        checkpoint_interval: args.checkpoint_interval,
    };
    let r = run_bench(&throughput, &args.work_dir)?;
    println!(
        "throughput: {} hosts x {} pages of {} B: {} pages in {:.2}s = {:.0} pages/s, {:.1} MB/s, peak RSS {} MB",
        r.spec.hosts,
        r.spec.pages,
        r.spec.page_bytes,
        r.pages,
        r.secs,
        r.pages_per_sec(),
        r.mb_per_sec(),
        r.peak_rss_kb
            .map_or("?".into(), |k| format!("{:.0}", k as f64 / 1024.0))
    );
    let cpu = r.cpu;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "cpu: fetcher {:.2}s + writer {:.2}s + server {:.2}s = {:.2}s over {:.2}s wall ({:.0}% of {} cores, load average {}); fetcher+writer {:.0} pages per CPU-second",
        cpu.fetcher,
        cpu.writer,
        cpu.server,
        cpu.total(),
        r.secs,
        100.0 * cpu.total() / r.secs.max(1e-9) / cores as f64,
        cores,
        r.load_avg.map_or("?".into(), |l| format!("{l:.1}")),
        r.pages as f64 / (cpu.fetcher + cpu.writer).max(1e-9)
    );
    if args.https {
        let spec = BenchSpec {
            https: true,
            ..throughput.clone()
        };
        let r = run_bench(&spec, &args.work_dir)?;
        let cpu = r.cpu;
        println!(
            "throughput https: {} hosts x {} pages of {} B over TLS: {} pages in {:.2}s = {:.0} pages/s, {:.1} MB/s, {} TLS connections; cpu {:.2}s ({:.0}% of {} cores, load average {})",
            r.spec.hosts,
            r.spec.pages,
            r.spec.page_bytes,
            r.pages,
            r.secs,
            r.pages_per_sec(),
            r.mb_per_sec(),
            r.connections,
            cpu.total(),
            100.0 * cpu.total() / r.secs.max(1e-9) / cores as f64,
            cores,
            r.load_avg.map_or("?".into(), |l| format!("{l:.1}")),
        );
    }
    if args.polite_hosts > 0 && args.delay > 0.0 {
        let polite = BenchSpec {
            hosts: args.polite_hosts,
            pages: args.polite_pages,
            page_bytes: args.page_bytes,
            delay: args.delay,
            max_connections: args.max_connections,
            https: false,
            checkpoint_interval: args.checkpoint_interval,
        };
        let r = run_bench(&polite, &args.work_dir)?;
        println!(
            "politeness: {} hosts x {} pages, delay {}s: {:.1} pages/s of ideal {:.1} = {:.1}%",
            r.spec.hosts,
            r.spec.pages,
            r.spec.delay,
            r.pages_per_sec(),
            r.spec.hosts as f64 / r.spec.delay,
            100.0 * r.politeness_fraction().unwrap_or(0.0)
        );
    }
    Ok(())
}
