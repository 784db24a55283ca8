//! `docparse`: reads one document (PDF) and prints its text, title, metadata and links
//! as JSON. `parse` runs it on every document, under a page, time and memory budget
//! (docs/parse.md); it also shows by hand what parse makes of a file.

use std::io::{Read, Write};
use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use trawl::parse::document::{self, Format, isolate};

#[derive(Debug, Parser)]
#[command(
    name = "docparse",
    version,
    about = "Extract a document's text, title, metadata and links (PDF, office) as JSON, as parse does",
    long_about = "Reads FILE (`-`: standard input) and prints one JSON object: \
{\"ok\": {\"text\", \"title\", \"metadata\", \"links\"}} or {\"error\": \"why\"}. parse runs this \
binary on every document it meets, with --max-memory-mb and --max-cpu-secs, and kills it after \
parse.max_document_millis. See docs/parse.md."
)]
struct Args {
    /// The document (`-`: standard input).
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// The format (default: recognized by the file's first bytes).
    #[arg(long, value_name = "FORMAT", value_parser = ["pdf", "docx", "xlsx", "pptx", "odt", "ods", "odp"])]
    format: Option<String>,
    /// Pages read at most.
    #[arg(long, default_value_t = document::Limits::default().max_pages, value_name = "N")]
    max_pages: usize,
    /// Bytes of text kept at most.
    #[arg(long, default_value_t = document::Limits::default().max_text_bytes, value_name = "N")]
    max_text_bytes: usize,
    /// Limit this process's address space (MiB).
    #[arg(long, value_name = "MIB")]
    max_memory_mb: Option<u64>,
    /// Limit this process's CPU time (seconds).
    #[arg(long, value_name = "SECS")]
    max_cpu_secs: Option<u64>,
}

/// Runs the command with its arguments (`args[0]` is its name).
pub fn main(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    trawl::cli::finish(run(args))
}

fn run(args: Vec<std::ffi::OsString>) -> anyhow::Result<()> {
    let args = Args::parse_from(args);
    let mut input: Box<dyn Read> = if args.file.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        let f = std::fs::File::open(&args.file)
            .with_context(|| format!("cannot open {}", args.file.display()))?;
        Box::new(std::io::BufReader::new(f))
    };
    let mut bytes = Vec::new();
    input
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let format = match args.format.as_deref() {
        Some(name) => Format::from_name(name),
        None => document::sniff(&bytes),
    }
    .with_context(|| {
        format!(
            "{}: not a document docparse reads (PDF, DOCX, XLSX, PPTX, ODT, ODS, ODP)",
            args.file.display()
        )
    })?;
    let mut out = std::io::stdout().lock();
    isolate::serve(
        format,
        args.max_pages,
        args.max_text_bytes,
        args.max_memory_mb,
        args.max_cpu_secs,
        &mut bytes.as_slice(),
        &mut out,
    )?;
    writeln!(out)?;
    Ok(())
}
