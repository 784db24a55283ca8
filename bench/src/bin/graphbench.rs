//! `graphbench`: times graph build and PageRank on a synthetic web graph.

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use trawl::graph::ids::build_graph;
use trawl::graph::mem::peak_rss_bytes;
use trawl::graph::pagerank::{PageRankParams, out_degrees, pagerank};
use trawl::graph::source::{EdgeKind, EdgeSource};
use trawl_bench::graph::write_synthetic;

/// Generates a synthetic graph, writes it as Parquet, and times graph build,
/// PageRank iterations and peak memory.
#[derive(Debug, Parser)]
#[command(
    about = "Benchmark graph build and PageRank on a synthetic web graph",
    long_about = "Writes a synthetic web graph (skewed in-degree) as linkdb-like Parquet rows, \
then times building the graph from Parquet (URL ids, CSR), the PageRank iterations, and \
reports peak RSS (VmHWM). Prints figures on stdout. Build with --release for real numbers."
)]
struct Args {
    /// Pages in the synthetic graph.
    #[arg(long, default_value_t = 1_000_000)]
    pages: u64,
    /// Links (approximately) in the synthetic graph.
    #[arg(long, default_value_t = 10_000_000)]
    links: u64,
    /// Where to write the Parquet files [default: a temporary directory, removed after].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Reuse the Parquet files already in --dir instead of generating them.
    #[arg(long, requires = "dir")]
    reuse: bool,
    /// Parquet files (and host partitions) to use.
    #[arg(long, default_value_t = 8)]
    files: usize,
    /// PageRank tolerance (L1 change).
    #[arg(long, default_value_t = 1e-9)]
    tolerance: f64,
    /// PageRank maximum iterations.
    #[arg(long, default_value_t = 100)]
    max_iterations: usize,
}

fn mib(b: u64) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

trawl::global_allocator!();

fn main() -> std::process::ExitCode {
    trawl::cli::finish(run())
}

fn run() -> anyhow::Result<()> {
    let args = Args::parse();
    trawl::cli::init_logging();
    let started = Instant::now();
    let tmp;
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => {
            tmp = std::env::temp_dir().join(format!("graphbench-{}", std::process::id()));
            tmp.clone()
        }
    };
    let files = if args.reuse {
        trawl::store::parquet::part_files(&dir)?
    } else {
        let t = Instant::now();
        let (files, rows) = write_synthetic(&dir, args.pages, args.links, args.files)?;
        println!(
            "generate: {} pages, {rows} link rows, {} files in {:.2}s",
            args.pages,
            files.len(),
            t.elapsed().as_secs_f64()
        );
        files
    };
    let rss0 = peak_rss_bytes().unwrap_or(0);
    let t = Instant::now();
    let source = EdgeSource::new(EdgeKind::LinkDb, files);
    let graph = build_graph(
        &source,
        trawl::store::partition::Partitioner::by_host(args.files),
    )?;
    let t_ids = t.elapsed();
    let inl = graph.out.transpose();
    let outdeg = out_degrees(&graph.out);
    let t_build = t.elapsed();
    let rss1 = peak_rss_bytes().unwrap_or(0);
    println!(
        "build: {} nodes, {} edges in {:.2}s (scan + ids + out-CSR {:.2}s); CSR out+in {:.1} MiB, URL table + out-CSR {:.1} MiB; peak RSS {:.1} MiB",
        graph.nodes(),
        graph.out.edges(),
        t_build.as_secs_f64(),
        t_ids.as_secs_f64(),
        mib((graph.out.heap_bytes() + inl.heap_bytes()) as u64),
        mib(graph.heap_bytes() as u64),
        mib(rss1)
    );
    let params = PageRankParams {
        damping: 0.85,
        tolerance: args.tolerance,
        max_iterations: args.max_iterations,
    };
    let t = Instant::now();
    let r = pagerank(&inl, &outdeg, None, &params);
    let t_rank = t.elapsed();
    let rss2 = peak_rss_bytes().unwrap_or(0);
    println!(
        "pagerank: {} iterations in {:.3}s ({:.1} ms/iteration), final delta {:.3e}, {} threads; peak RSS {:.1} MiB (before build {:.1} MiB)",
        r.iterations,
        t_rank.as_secs_f64(),
        1000.0 * t_rank.as_secs_f64() / r.iterations.max(1) as f64,
        r.delta,
        rayon::current_num_threads(),
        mib(rss2),
        mib(rss0)
    );
    if args.dir.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    trawl::cli::summary(
        "graphbench",
        started,
        &format!(
            "{} nodes, {} edges, {} iterations",
            graph.nodes(),
            graph.out.edges(),
            r.iterations
        ),
    );
    Ok(())
}
