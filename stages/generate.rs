//! `generate`: selects due URLs into a new segment (fetch list).

use clap::{Parser, ValueEnum};
use trawl::crawldb::generate::{self, GenerateOpts, GeneratePass};
use trawl::stage::StageCtx;

#[derive(Debug, Parser)]
#[command(
    name = "generate",
    version,
    about = "Generate fetch lists (segments) of due URLs",
    long_about = "Selects the URLs due for fetching (fetch_time <= now, not db_duplicate, score >= \
generate.min_score, not held by a pending fetch list), at most --max-per-host per host (or per \
registrable domain with generate.count_mode = \"domain\"), the --top-n best by score, and writes \
them to a new segment. Prints each new segment's path on stdout, one per line. Exits with code 3 \
(and writes no segment) when no URL is due; see docs/exit-codes.md."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    #[command(flatten)]
    task: trawl::cli::TaskArgs,
    #[command(flatten)]
    pass: trawl::cli::PassArgs<Pass>,
    /// With --job: read the job's histograms, choose the fetch lists (the global
    /// top-N) and write the job's cut-off, between the two passes.
    #[arg(
        long,
        requires = "job",
        conflicts_with_all = ["partitions", "attempt", "commit", "pass"],
        help_heading = "Partition tasks"
    )]
    cutoff: bool,
    /// URLs per fetch list [default: generate.top_n].
    #[arg(long, value_name = "N")]
    top_n: Option<usize>,
    /// Maximum URLs per host or domain in one fetch list; 0 = no cap [default: generate.max_per_host].
    #[arg(long, value_name = "N")]
    max_per_host: Option<usize>,
    /// Cut this many fetch lists of --top-n URLs at once.
    #[arg(long, value_name = "K", default_value_t = 1)]
    max_segments: usize,
    /// Select URLs due up to DAYS days from now (Nutch's -adddays); fractions allowed.
    #[arg(long, value_name = "DAYS", default_value_t = 0.0, value_parser = days)]
    add_days: f64,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Pass {
    /// Pass 1: each partition's best candidates (the score histogram).
    Histogram,
    /// Pass 2: the partitions' rows of the fetch lists the cut-off chose.
    Select,
}

/// `--add-days`: a finite number of days >= 0 (else a usage error, exit code 2).
fn days(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(d) if d.is_finite() && d >= 0.0 => Ok(d),
        _ => Err("expected a number of days >= 0".into()),
    }
}

/// Runs the command with its arguments (`args[0]` is its name).
pub fn main(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    trawl::cli::finish(run(args))
}

fn run(args: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    let args = Args::parse_from(args);
    let mut ctx = if let (true, Some(job)) = (args.cutoff, &args.task.job) {
        StageCtx::from_job_args(&args.common, job)?
    } else if args.cutoff {
        StageCtx::from_args(&args.common)?
    } else {
        StageCtx::from_task_args(&args.common, &args.task)?
    };
    if let Some(n) = args.top_n {
        ctx.config_mut().generate.top_n = n;
    }
    if let Some(m) = args.max_per_host {
        ctx.config_mut().generate.max_per_host = m;
    }
    ctx.validate_flags()?;
    let mut opts = GenerateOpts::from_config(ctx.config());
    opts.segments = args.max_segments.max(1);
    opts.lookahead = (args.add_days * 86_400_000.0).round() as i64;
    opts.pass = args.pass.pass.map(|p| match p {
        Pass::Histogram => GeneratePass::Histogram,
        Pass::Select => GeneratePass::Select,
    });
    if let (true, Some(job)) = (args.cutoff, &args.task.job) {
        let report = generate::run_cutoff(&ctx, &opts, job)?;
        ctx.finish_line("generate --cutoff", &report.to_string())?;
        return Ok(());
    }
    let report = generate::run(&ctx, &opts)?;
    for s in &report.segments {
        println!("{}", s.display());
    }
    ctx.finish(&report)?;
    Ok(())
}
