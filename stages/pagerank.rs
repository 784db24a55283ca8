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
    /// Each link of the task's partitions routed to its source's partition (a shuffle).
    Links,
    /// Each partition's nodes and edges.
    Graph,
    /// One iteration (--iteration K, from 0 until --check stops it).
    Iterate,
    /// The graph, the iteration and the new pagerank/ in one task over every
    /// partition (with HITS, HostRank).
    Scores,
    /// pagerank/ and crawldb parts with the scores: of the last iteration
    /// (--iteration K), else of the scores pass.
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
source or target; distinct links; self-links kept, a site's template links left out: \
pagerank.ignore_template), runs PageRank by power iteration \
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
    /// The iteration of an iterate task (0 for the first), of the --check after it,
    /// or the last one for the rewrite tasks.
    #[arg(long, value_name = "K", help_heading = "Partition tasks")]
    iteration: Option<usize>,
    /// With --job and --iteration K: after iteration K's tasks, print whether to run
    /// another as one JSON line ({"iteration": K, "delta": ..., "again": true|false}).
    #[arg(
        long,
        requires_all = ["job", "iteration"],
        conflicts_with_all = ["partitions", "attempt", "commit", "pass"],
        help_heading = "Partition tasks"
    )]
    check: bool,
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
    /// Keep a site's template links (header, footer, sidebar) in the graph (sets
    /// pagerank.ignore_template = false).
    #[arg(long)]
    keep_template_links: bool,
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
    let pass = args.pass.pass.map(|p| match p {
        Pass::Links => PageRankPass::Links,
        Pass::Graph => PageRankPass::Graph,
        Pass::Iterate => PageRankPass::Iterate,
        Pass::Scores => PageRankPass::Scores,
        Pass::Rewrite => PageRankPass::Rewrite,
    });
    let mut ctx = match (&args.task.job, args.check) {
        (Some(job), true) => StageCtx::from_job_args(&args.common, job)?,
        _ => StageCtx::from_pass_task_args(
            &args.common,
            &args.task,
            pass.map(|p| p.scope_name(args.iteration)),
        )?,
    };
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
    if args.keep_template_links {
        pc.ignore_template = false;
    }
    if args.no_update_crawldb {
        pc.update_crawldb = false;
    }
    ctx.validate_flags()?;
    if let (Some(job), true, Some(k)) = (&args.task.job, args.check, args.iteration) {
        let o = stage::run_check(&ctx, job, k)?;
        println!("{}", serde_json::to_string(&o)?);
        let what = if o.again {
            format!("run iteration {}", k + 1)
        } else {
            format!("stopped: run the rewrite tasks with --iteration {k}")
        };
        ctx.finish_line(
            "pagerank --check",
            &format!("iteration {k}, L1 change {:.3e}: {what}", o.delta),
        )?;
        return Ok(());
    }
    let opts = PageRankOpts {
        pass,
        iteration: args.iteration,
    };
    let report = stage::run(&ctx, &opts)?;
    ctx.finish(&report)?;
    Ok(())
}
