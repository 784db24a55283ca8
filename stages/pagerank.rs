//! `pagerank`: PageRank (and optionally HITS, HostRank) over the crawl's link graph.

use clap::{Parser, ValueEnum};
use trawl::graph::stage::{self, PageRankOpts, PageRankPass};
use trawl::stage::StageCtx;

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Source {
    /// Outlinks of every parsed segment (all links, internal ones included).
    Crawl,
    /// The linkdb (drops internal links by default).
    Linkdb,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Pass {
    /// The graph, the iteration and the new pagerank/ (one task over every partition).
    Scores,
    /// Crawldb parts rewritten with the scores of the job's scores pass.
    Rewrite,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Teleport {
    /// Jump to any page.
    Uniform,
    /// Jump to seed pages only (depth-0 crawldb URLs, seed hosts' home pages).
    Seeds,
}

/// Computes PageRank over the link graph, writes pagerank/ and the crawldb scores.
#[derive(Debug, Parser)]
#[command(
    name = "pagerank",
    version,
    about = "Compute PageRank over the link graph; write pagerank/ and crawldb scores",
    long_about = "Builds the page graph (every crawldb URL and every URL that is a link \
source or target; distinct links; self-links kept), runs PageRank by power iteration \
(dangling pages' rank spread uniformly, scores sum to 1) and writes pagerank/ (url, score, \
in_degree, out_degree; partitioned by host like the crawldb). Unless disabled, writes each \
page's PageRank times the number of pages into the crawldb's score column, so crawldb scores \
average 1.0 (the injected score's scale) and their order is PageRank's. Optionally HITS \
(pagerank/hits/) and HostRank (pagerank/hosts/)."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    #[command(flatten)]
    task: trawl::cli::TaskArgs,
    #[command(flatten)]
    pass: trawl::cli::PassArgs<Pass>,
    /// Damping factor (overrides pagerank.damping, default 0.85).
    #[arg(long, value_name = "D")]
    damping: Option<f64>,
    /// Stop when the L1 change of an iteration is below this (pagerank.tolerance, default 1e-6).
    #[arg(long, value_name = "T")]
    tolerance: Option<f64>,
    /// Stop after this many iterations (pagerank.max_iterations, default 100).
    #[arg(long, value_name = "N")]
    max_iterations: Option<usize>,
    /// Graph source (pagerank.source, default crawl).
    #[arg(long, value_enum)]
    source: Option<Source>,
    /// Also compute HITS hub/authority scores into pagerank/hits/.
    #[arg(long)]
    hits: bool,
    /// Also compute HostRank into pagerank/hosts/.
    #[arg(long)]
    hostrank: bool,
    /// Teleport target (pagerank.teleport, default uniform).
    #[arg(long, value_enum)]
    teleport: Option<Teleport>,
    /// Leave links between pages of the same host out of the graph (sets
    /// pagerank.ignore_internal = true).
    #[arg(long)]
    ignore_internal: bool,
    /// Do not write scores into the crawldb (sets pagerank.update_crawldb = false).
    #[arg(long)]
    no_update_crawldb: bool,
}

/// Runs the command with its arguments (`args[0]` is its name).
pub fn main(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    trawl::cli::finish(run(args))
}

fn run(args: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    let args = Args::parse_from(args);
    trawl::signal::install()?;
    let mut ctx = StageCtx::from_task_args(&args.common, &args.task)?;
    let pc = &mut ctx.config_mut().pagerank;
    if let Some(d) = args.damping {
        pc.damping = d;
    }
    if let Some(t) = args.tolerance {
        pc.tolerance = t;
    }
    if let Some(n) = args.max_iterations {
        pc.max_iterations = n;
    }
    if let Some(s) = args.source {
        pc.source = match s {
            Source::Crawl => trawl::config::GraphSource::Crawl,
            Source::Linkdb => trawl::config::GraphSource::Linkdb,
        };
    }
    if let Some(t) = args.teleport {
        pc.teleport = match t {
            Teleport::Uniform => trawl::config::Teleport::Uniform,
            Teleport::Seeds => trawl::config::Teleport::Seeds,
        };
    }
    pc.hits |= args.hits;
    pc.hostrank |= args.hostrank;
    pc.ignore_internal |= args.ignore_internal;
    if args.no_update_crawldb {
        pc.update_crawldb = false;
    }
    ctx.validate_flags()?;
    let opts = PageRankOpts {
        pass: args.pass.pass.map(|p| match p {
            Pass::Scores => PageRankPass::Scores,
            Pass::Rewrite => PageRankPass::Rewrite,
        }),
    };
    let report = stage::run(&ctx, &opts)?;
    ctx.finish(&report)?;
    Ok(())
}
