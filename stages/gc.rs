//! `gc`: removes the garbage of an object-store crawl directory.

use std::time::Duration;

use clap::Parser;
use trawl::stage::StageCtx;
use trawl::store::object::{self, CrawlUri};

#[derive(Debug, Parser)]
#[command(
    name = "gc",
    version,
    about = "Remove unreferenced objects from an object-store crawl directory",
    long_about = "Lists the object-store crawl directory (--crawl-dir s3://BUCKET/PREFIX, file:///PATH, ...) \
and removes every object that none of the last --keep-versions versions of any dataset or \
live segment references (left by replaced versions, by writers that lost a commit race, by stages \
killed during their upload), every older version manifest, and the versions and Delta logs of \
segments no longer in the catalog. Objects younger than --min-age are kept: a running stage may \
be about to commit them. First it writes the Delta log entries a writer killed after its commit \
left missing, and counts the datasets still in the layout before open tables; with --migrate it \
moves them to Delta tables (their Parquet parts copied into the table, a version naming them \
committed: run it while no stage writes). --dry-run only counts. Prints a one-line summary. See \
docs/object-store.md."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    /// Count what would be removed; delete nothing.
    #[arg(long)]
    dry_run: bool,
    /// Keep unreferenced objects younger than SECS seconds (uploads of running stages).
    #[arg(long, value_name = "SECS", default_value_t = 3600.0)]
    min_age: f64,
    /// Keep what the last N versions of every dataset need (N >= 2: current and old,
    /// from which a missing Delta log entry is written again). Older versions of a
    /// Delta table stay in its log, their files removed, as after a Delta VACUUM.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u64).range(2..))]
    keep_versions: u64,
    /// Move the datasets still in the layout before open tables (parts under
    /// `objects/`) to Delta tables. Commits a version of each: run it while no stage
    /// writes to the crawl directory.
    #[arg(long)]
    migrate: bool,
}

/// Runs the command with its arguments (`args[0]` is its name).
pub fn main(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    trawl::cli::finish(run(args))
}

fn run(args: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    let args = Args::parse_from(args);
    let (cfg, dir) = args.common.setup()?;
    let CrawlUri::Object(uri) = CrawlUri::parse(&dir)? else {
        anyhow::bail!(
            "{}: gc works on object-store crawl directories (s3://, gs://, az://, file://); a local crawl directory has no unreferenced objects (stages remove their own leftovers)",
            dir.display()
        );
    };
    if !(args.min_age.is_finite() && args.min_age >= 0.0) {
        anyhow::bail!("--min-age must be a number of seconds >= 0");
    }
    let ctx = StageCtx::new(&dir, cfg);
    let report = object::gc(
        &uri,
        &object::GcOptions {
            min_age: Duration::from_secs_f64(args.min_age),
            keep_versions: args.keep_versions as usize,
            migrate: args.migrate,
            dry_run: args.dry_run,
        },
    )?;
    ctx.finish(&report)?;
    Ok(())
}
