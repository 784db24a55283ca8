//! `prunesegs`: delete what applied segments no longer need.

use std::io::Write;
use std::path::PathBuf;

use clap::Parser;
use trawl::stage::StageCtx;
use trawl::tools::prunesegs::{self, PruneSegsOpts};

#[derive(Debug, Parser)]
#[command(
    name = "prunesegs",
    version,
    about = "Free disk: delete the content and parse_text of segments already applied",
    long_about = "Deletes the heavy datasets (content, parse_text) of segments whose data already \
reached the crawldb and the linkdb (fetched, parsed, updatedb and linkdb ran on them), keeping \
crawl_generate, crawl_fetch, parse_data and crawl_parse, so readseg --list, linkdb --all and \
pagerank (source = \"crawl\") give the same results. --whole deletes entire segments (refused \
while [pagerank] source = \"crawl\"). Segments not yet applied are never touched. Prints one \
line per segment: what is deleted (or kept, and why) and the bytes freed; --dry-run changes \
nothing. Safe to interrupt: rerun it."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    /// Only these segments (names under <crawl-dir>/segments or paths) [default: every segment].
    #[arg(value_name = "SEGMENT")]
    segments: Vec<PathBuf>,
    /// Only segments generated at least DAYS days ago (fractions allowed).
    #[arg(long, value_name = "DAYS")]
    older_than: Option<f64>,
    /// Never touch the newest K segments.
    #[arg(long, value_name = "K", default_value_t = 0)]
    keep_newest: usize,
    /// Delete whole segments, not only content and parse_text (needs [pagerank] source = "linkdb").
    #[arg(long)]
    whole: bool,
    /// List what would be deleted and the bytes it would free; change nothing.
    #[arg(long)]
    dry_run: bool,
    /// JSON lines instead of a table.
    #[arg(long)]
    json: bool,
}

/// Runs the command with its arguments (`args[0]` is its name).
pub fn main(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    trawl::cli::finish(run(args))
}

fn run(args: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    let args = Args::parse_from(args);
    let ctx = StageCtx::from_args(&args.common)?;
    let opts = PruneSegsOpts {
        segments: args.segments,
        older_than_days: args.older_than,
        keep_newest: args.keep_newest,
        whole: args.whole,
        dry_run: args.dry_run,
        now: trawl::datum::now_millis(),
    };
    let r = prunesegs::run(&ctx, &opts)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if args.json {
        for e in &r.entries {
            serde_json::to_writer(&mut out, e)?;
            writeln!(out)?;
        }
    } else {
        writeln!(
            out,
            "{:<14}  {:<15}  {:>12}  datasets / reason",
            "segment", "action", "bytes"
        )?;
        for e in &r.entries {
            let what = match &e.reason {
                Some(why) => why.clone(),
                None => e.datasets.join(","),
            };
            writeln!(
                out,
                "{:<14}  {:<15}  {:>12}  {}",
                e.segment, e.action, e.bytes, what
            )?;
        }
    }
    out.flush()?;
    ctx.finish(&r)?;
    Ok(())
}
