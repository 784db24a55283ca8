//! `readhostdb`: read the host database.

use std::io::Write;

use clap::Parser;
use trawl::stage::StageCtx;

#[derive(Debug, Parser)]
#[command(
    name = "readhostdb",
    version,
    about = "Read the host database: one host, the failing hosts, or a dump",
    long_about = "Prints hostdb/current rows as JSON lines on stdout: --host H (one host; exit 1 \
when unknown), --failing (hosts with consecutive failures, most first), or --dump (every host, \
by host name). The dataset is Parquet: query it in place with DuckDB \
(SELECT * FROM 'crawl/hostdb/current/*.parquet'; docs/hostdb.md)."
)]
#[command(group(clap::ArgGroup::new("mode").required(true).args(["host", "failing", "dump"])))]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    /// One host's row.
    #[arg(long, value_name = "HOST")]
    host: Option<String>,
    /// Hosts with at least one consecutive failure, most first.
    #[arg(long)]
    failing: bool,
    /// Every host.
    #[arg(long)]
    dump: bool,
}

/// Runs the command with its arguments (`args[0]` is its name).
pub fn main(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    trawl::cli::finish(run(args))
}

fn run(args: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    let args = Args::parse_from(args);
    let ctx = StageCtx::from_args(&args.common)?;
    let dir = ctx.open_existing()?;
    if trawl::hostdb::read_meta(&dir)?.is_none() {
        anyhow::bail!(
            "{}: no hostdb yet: run `hostdb` (or `crawl`, which runs it every round)",
            dir.root().display()
        );
    }
    let mut rows = trawl::hosts::read_all(&dir)?;
    rows.sort_by(|a, b| a.host.cmp(&b.host));
    if let Some(h) = &args.host {
        rows.retain(|r| &r.host == h);
        if rows.is_empty() {
            anyhow::bail!("host {h} is not in the hostdb of {}", dir.root().display());
        }
    } else if args.failing {
        rows.retain(|r| r.consecutive_failures > 0);
        rows.sort_by(|a, b| {
            b.consecutive_failures
                .cmp(&a.consecutive_failures)
                .then(a.host.cmp(&b.host))
        });
    }
    let mut out = std::io::stdout().lock();
    for r in &rows {
        serde_json::to_writer(&mut out, r)?;
        out.write_all(b"\n")?;
    }
    let what = format!("{} hosts", rows.len());
    trawl::cli::summary("readhostdb", ctx.started(), &what);
    Ok(())
}
