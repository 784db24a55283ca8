//! `warc`: export a segment's fetched content as WARC/1.1 files.

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use trawl::store::layout::CrawlDir;
use trawl::warc::{ExportOptions, export::default_out_dir, export_segment};

#[derive(Debug, Parser)]
#[command(
    about = "Export a segment's content as gzipped WARC/1.1 files",
    long_about = "Reads the segment's content dataset (and crawl_generate, for the conditional \
headers fetch sent) and writes <prefix>-<segment>-<NNNNN>.warc.gz files: each starts with a \
warcinfo record, then for every fetched page a request record (the GET trawl sent) and a response \
record (status line, stored headers, payload), with SHA-1 block and payload digests, one gzip \
member per record. Files rotate at --max-file-bytes; they are written under temporary names and \
renamed when the export is complete, replacing the files of an earlier export of the same \
segment. Prints the paths of the files written on stdout."
)]
struct Args {
    #[command(flatten)]
    common: trawl::cli::CommonArgs,
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

fn main() -> std::process::ExitCode {
    trawl::cli::finish(run())
}

fn run() -> anyhow::Result<()> {
    let args = Args::parse();
    let (cfg, root) = args.common.setup()?;
    let started = Instant::now();
    let dir = CrawlDir::open_for_segments(&root)?;
    let segment = match &args.segment {
        Some(s) => dir.segment(s)?,
        None => dir.latest_segment()?.ok_or_else(|| {
            anyhow::anyhow!(
                "{}: no segments: run `generate` and `fetch` first, or pass the right --crawl-dir",
                root.display()
            )
        })?,
    };
    let opts = ExportOptions {
        out_dir: args.out.clone().unwrap_or_else(|| default_out_dir(&root)),
        prefix: args.prefix.clone(),
        max_file_bytes: args.max_file_bytes.max(1),
        user_agent: cfg.fetch.user_agent.clone(),
    };
    let stats = export_segment(&segment, &opts)?;
    for f in &stats.files {
        println!("{}", f.display());
    }
    trawl::cli::summary(
        "warc",
        started,
        &format!(
            "segment {}: {} pages, {} records, {} skipped, {} files, {} bytes",
            segment.name(),
            stats.pages,
            stats.records,
            stats.skipped,
            stats.files.len(),
            stats.bytes
        ),
    );
    Ok(())
}
