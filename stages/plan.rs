//! `plan`: what a cluster driver runs, as JSON (docs/cluster.md, "The plan").

use std::collections::BTreeMap;

use clap::{Parser, ValueEnum};
use trawl::driver::next::{Next, Progress};
use trawl::round::{self, RoundOpts, Step};

/// Prints the crawl round as JSON for a driver that schedules its tasks elsewhere.
#[derive(Debug, Parser)]
#[command(
    name = "plan",
    version,
    about = "Print the crawl round as JSON, for a cluster driver (trawl_spark.py)",
    long_about = "Prints, as one JSON document on stdout, what a round runs and how: every \
step in order with its units (partition tasks and their flags, driver-side steps, the commit, \
or the stage run whole as one task), the exit codes that are not failures and those that are \
outcomes of the round (3 nothing due, 5 no server reached), which steps hold fetch leases and \
which still run after fetch reached no server; and the crawl's partition count (of its crawldb, \
else crawl.partitions). \
`plan next` prints the one step to run now, read off the crawl directory and the round's \
progress (--segment, --done, --unreachable): the decision `crawl` follows between two steps, \
pending segments first; cluster/trawl_spark.py asks it before every step and runs what it \
says on Spark (with --tsv, as one plain line for a shell script: scripts/round.sh); with \
--progress FILE the progress is read from FILE, where `plan done` records each step's end \
(--done STAGE --exit CODE, --round-over). The format is docs/cluster.md's \"The plan\". \
`plan steps` prints the round's steps as plain lines, \
without reading the crawl directory."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    /// What to plan.
    #[arg(value_enum, value_name = "WHAT")]
    what: What,
    /// Leave dedup out of the round.
    #[arg(long)]
    no_dedup: bool,
    /// Leave the search index out of the round.
    #[arg(long)]
    no_index: bool,
    /// End the round with the segment's WARC export.
    #[arg(long)]
    warc: bool,
    /// With `next`: a segment of the round in progress (made by its generate, or one
    /// it ran a step on); repeat for each.
    #[arg(long = "segment", value_name = "NAME")]
    segments: Vec<String>,
    /// With `next`: a stage the round in progress has run; repeat for each.
    #[arg(long = "done", value_name = "STAGE")]
    done: Vec<String>,
    /// With `next`: fetch reached no server in the round in progress (exit code 5).
    #[arg(long)]
    unreachable: bool,
    /// With `next`: the round's progress kept in FILE (written by `plan done`) instead
    /// of --segment, --done and --unreachable; with `done`: the file to record into.
    #[arg(long, value_name = "FILE", conflicts_with = "unreachable")]
    progress: Option<std::path::PathBuf>,
    /// With `done`: the exit code the stage given by --done ended with.
    #[arg(long = "exit", value_name = "CODE", requires = "progress")]
    exit_code: Option<u8>,
    /// With `done`: the round is over (`plan next` answered none, or a step's outcome
    /// ended it): the progress file is removed, so the next round starts afresh.
    #[arg(long, requires = "progress", conflicts_with_all = ["exit_code", "done", "segments"])]
    round_over: bool,
    /// With `next`: print the step as one tab-separated line for a shell script (the
    /// columns of `plan steps`, then the segment's name or -), nothing when the round
    /// is over (scripts/round.sh).
    #[arg(long)]
    tsv: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum What {
    /// One crawl round (and the steps a driver runs as jobs of their own: inject, warc).
    Round,
    /// The round's steps for a script, one per line, tab-separated: stage, segment use
    /// (none, makes, takes), runs after no server was reached (yes, no), the exit codes
    /// of "nothing due" and "no server reached" (- for none), and of an interrupted run.
    /// Reads no crawl directory.
    Steps,
    /// The round's next step, from the crawl directory (the segments still to fetch,
    /// parse, apply or invert) and the round's progress (--progress FILE, or --segment,
    /// --done, --unreachable): the step `crawl` would run now, or none when the round
    /// is over.
    Next,
    /// Records in the progress file (--progress FILE) that a step ended: --done STAGE
    /// --exit CODE (--segment NAME: the segment it ran on, or those generate made);
    /// prints what the code means for the round (its outcome). --round-over removes
    /// the file.
    Done,
}

/// The document `plan done` prints.
#[derive(Debug, serde::Serialize)]
struct DonePlan {
    /// The format's version (docs/cluster.md).
    plan_version: u32,
    /// What the step's exit code means for the round: `nothing_due` (the round does
    /// not happen, the rounds end), `unreachable` (only the steps that record the
    /// failures follow, then the rounds end), or `null`.
    outcome: Option<round::Outcome>,
}

/// The document `plan next` prints.
#[derive(Debug, serde::Serialize)]
struct NextPlan {
    /// The format's version (docs/cluster.md).
    plan_version: u32,
    /// The crawl's partition count.
    partitions: usize,
    /// The crawl directory is on an object store.
    object_store: bool,
    /// The step to run now, `null` when the round is over.
    next: Option<NextStep>,
    /// Fetch reached no server in the round in progress (its progress says so): only
    /// the steps that record the failures run, then the rounds end.
    unreachable: bool,
}

/// A step `plan next` gives.
#[derive(Debug, serde::Serialize)]
struct NextStep {
    /// The step, as in `plan round`.
    step: Step,
    /// The segment's name, for a step that takes one.
    segment: Option<String>,
}

/// The document `plan round` prints.
#[derive(Debug, serde::Serialize)]
struct Plan {
    /// The format's version (docs/cluster.md).
    plan_version: u32,
    /// The crawl's partition count.
    partitions: usize,
    /// Whether the crawl has a crawldb yet (else `partitions` is the config's).
    crawldb: bool,
    /// The crawl directory is on an object store: every task and driver step needs a
    /// scratch `--work-dir` of its own.
    object_store: bool,
    /// The round's steps, in order.
    round: Vec<Step>,
    /// The steps a driver may run as jobs of their own, by stage.
    jobs: BTreeMap<&'static str, Step>,
}

/// Runs the command with its arguments (`args[0]` is its name).
pub fn main(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    trawl::cli::finish(run(args))
}

fn run(args: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    let args = Args::parse_from(args);
    let started = std::time::Instant::now();
    let mut opts = RoundOpts {
        dedup: !args.no_dedup,
        index: !args.no_index,
        warc: args.warc,
        pagerank_whole_graph: false,
    };
    if let What::Steps = args.what {
        let steps = round::steps(opts);
        for s in &steps {
            println!("{}", s.line());
        }
        trawl::cli::summary("plan", started, &format!("round of {} steps", steps.len()));
        return Ok(());
    }
    if let What::Done = args.what {
        return done(&args, started);
    }
    // On an object store only the crawl's small files are pulled (no part data).
    let ctx = trawl::stage::StageCtx::from_meta_args(&args.common)?;
    let object_store = ctx.is_remote();
    // HITS and HostRank need the whole graph in one task.
    let pc = &ctx.config().pagerank;
    opts.pagerank_whole_graph = pc.hits || pc.hostrank;
    let (crawldb, meta) = trawl::crawldb::meta_or_new(&ctx.crawl_dir(), ctx.config())?;
    if let What::Next = args.what {
        let progress = match &args.progress {
            Some(file) => {
                if !args.segments.is_empty() || !args.done.is_empty() {
                    anyhow::bail!(
                        "--progress {}: the round's progress is read from the file; leave out --segment and --done",
                        file.display()
                    );
                }
                Progress::load(file, &ctx.crawl_dir())?
            }
            None => Progress {
                segments: args.segments,
                done: args.done,
                unreachable: args.unreachable,
            },
        };
        let unreachable = progress.unreachable;
        let next = match trawl::driver::next::next(&ctx.crawl_dir(), opts, &progress)? {
            Next::Run { step, segment } => Some(NextStep { step, segment }),
            Next::RoundDone => None,
        };
        let line = match &next {
            Some(n) => format!(
                "next: {}{}",
                n.step.stage,
                n.segment
                    .as_ref()
                    .map_or(String::new(), |s| format!(" on {s}"))
            ),
            None => "next: the round is over".to_string(),
        };
        if args.tsv {
            if let Some(n) = &next {
                println!("{}\t{}", n.step.line(), n.segment.as_deref().unwrap_or("-"));
            }
        } else {
            let plan = NextPlan {
                plan_version: 1,
                partitions: meta.partitions,
                object_store,
                next,
                unreachable,
            };
            println!("{}", serde_json::to_string_pretty(&plan)?);
        }
        trawl::cli::summary("plan", started, &line);
        return Ok(());
    }
    let steps = round::steps(opts);
    let jobs = ["inject", "warc"]
        .into_iter()
        .filter_map(|n| round::step(n).map(|s| (n, s)))
        .collect();
    let plan = Plan {
        plan_version: 1,
        partitions: meta.partitions,
        crawldb,
        object_store,
        round: steps,
        jobs,
    };
    println!("{}", serde_json::to_string_pretty(&plan)?);
    let line = format!(
        "round of {} steps over {} partitions{}",
        plan.round.len(),
        plan.partitions,
        if plan.crawldb {
            ""
        } else {
            " (no crawldb yet: crawl.partitions)"
        }
    );
    trawl::cli::summary("plan", started, &line);
    Ok(())
}

/// `plan done`: records a step's end in the progress file, or removes the file when
/// the round is over. Reads no crawl directory beyond the step's segments.
fn done(args: &Args, started: std::time::Instant) -> anyhow::Result<()> {
    let Some(file) = &args.progress else {
        anyhow::bail!("plan done: give the progress file (--progress FILE) it records into");
    };
    if args.round_over {
        remove_progress(file)?;
        println!(
            "{}",
            serde_json::to_string(&DonePlan {
                plan_version: 1,
                outcome: None
            })?
        );
        trawl::cli::summary("plan", started, "done: the round is over");
        return Ok(());
    }
    let (Some(code), [stage]) = (args.exit_code, args.done.as_slice()) else {
        anyhow::bail!(
            "plan done --progress {}: give the step that ended as --done STAGE --exit CODE (one stage)",
            file.display()
        );
    };
    let Some(step) = round::step(stage) else {
        anyhow::bail!("--done {stage}: not a step of the round (trawl plan steps lists them)");
    };
    let ctx = trawl::stage::StageCtx::from_meta_args(&args.common)?;
    let mut progress = Progress::load(file, &ctx.crawl_dir())?;
    let outcome = progress.record(&step, &args.segments, code)?;
    if outcome == Some(round::Outcome::NothingDue) {
        // The round does not happen: nothing is left to resume.
        remove_progress(file)?;
    } else {
        progress.save(file)?;
    }
    println!(
        "{}",
        serde_json::to_string(&DonePlan {
            plan_version: 1,
            outcome
        })?
    );
    let line = format!(
        "done: {stage} (exit code {code}){}",
        outcome.map_or(String::new(), |o| format!(", outcome {o:?}"))
    );
    trawl::cli::summary("plan", started, &line);
    Ok(())
}

/// Removes the progress file (absent is fine).
fn remove_progress(file: &std::path::Path) -> anyhow::Result<()> {
    match std::fs::remove_file(file) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => anyhow::bail!(
            "{}: cannot remove the round's progress: {e}",
            file.display()
        ),
    }
}
