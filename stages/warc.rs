//! `warc`: export a segment's fetched content as WARC/1.1 files.

use std::path::PathBuf;

use clap::Parser;
use trawl::stage::StageCtx;
use trawl::warc::WarcOpts;

#[derive(Debug, Parser)]
#[command(
    name = "warc",
    version,
    about = "Export a segment's content as gzipped WARC/1.1 files",
    long_about = "Reads the segment's content dataset (and crawl_generate, for the conditional \
headers fetch sent) and writes <prefix>-<segment>-<NNNNN>.warc.gz files: each starts with a \
warcinfo record, then for every fetched page a request record (the GET trawl sent) and a response \
record (status line, stored headers, payload), with SHA-1 block and payload digests, one gzip \
member per record. Files rotate at --max-file-bytes; they are written under temporary names and \
renamed when the export is complete, replacing the files of an earlier export of the same \
segment. Prints the paths of the files written on stdout. Runs as partition tasks with \
--job/--partitions/--attempt (each task writes the files of its content parts, named \
<prefix>-<segment>-<partition set>-<NNNNN>.warc.gz, into its attempt) and --job --commit \
(installs the chosen attempts' files); see docs/warc.md."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
    #[command(flatten)]
    task: trawl::cli::TaskArgs,
    /// The segment (a name under <crawl-dir>/segments or a path) [default: the newest].
    #[arg(value_name = "SEGMENT")]
    segment: Option<PathBuf>,
    /// The output directory [default: <crawl-dir>/warc].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// File name prefix.
    #[arg(long, value_name = "P", default_value = "trawl", value_parser = file_name_part)]
    prefix: String,
    /// Start a new file once one reaches this many (compressed) bytes.
    #[arg(long, value_name = "N", default_value_t = 1_000_000_000)]
    max_file_bytes: u64,
}

/// `--prefix`: a non-empty file name part (a bad one is a usage error, exit code 2).
fn file_name_part(s: &str) -> Result<String, String> {
    if s.is_empty() || s.contains('/') {
        Err("must be a non-empty file name part (no '/')".into())
    } else {
        Ok(s.to_string())
    }
}

/// Runs the command with its arguments (`args[0]` is its name).
pub fn main(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    trawl::cli::finish(run(args))
}

fn run(args: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    let args = Args::parse_from(args);
    let ctx = StageCtx::from_task_args(&args.common, &args.task)?;
    let opts = WarcOpts {
        segment: args.segment,
        out_dir: args.out,
        prefix: args.prefix,
        max_file_bytes: args.max_file_bytes,
    };
    let report = trawl::warc::run(&ctx, &opts)?;
    for f in &report.stats.files {
        println!("{}", f.display());
    }
    ctx.finish(&report)?;
    Ok(())
}
