//! Reading a document in a process of its own: `parse` runs the `docparse` binary
//! (installed beside every stage binary) on each document, under a budget.
//!
//! - **Time**: the helper is killed after `max_millis` of wall time (and it limits its
//!   own CPU time to a second more, should `parse` die first).
//! - **Memory**: the helper limits its own address space to `max_memory_mb`; an
//!   allocation past it ends the helper, not `parse`.
//! - **Crashes**: a panic, a stack overflow or an abort in the PDF library ends the
//!   helper; `parse` reports the document as `parse_failed` with the reason.
//!
//! The helper reads the document on its standard input and writes one JSON object,
//! [`Outcome`], on its standard output.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::{Extracted, Format, Limits};

/// The helper's name, beside the running executable.
pub const HELPER: &str = "docparse";

/// Why a document gave nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DocumentError {
    /// The document could not be read (not a valid file, encrypted, no page readable,
    /// the library failed).
    #[error("{0}")]
    Failed(String),
    /// Over the time budget.
    #[error("reading it took more than parse.max_document_millis = {0} ms; the helper was stopped")]
    TimeBudget(u64),
    /// Over the memory budget.
    #[error(
        "reading it needed more than parse.max_document_memory_mb = {0} MiB; the helper was stopped"
    )]
    MemoryBudget(u64),
    /// The helper could not be run.
    #[error("{0}")]
    Helper(String),
}

impl DocumentError {
    /// `parse_data.reason` of the document.
    pub fn reason(&self) -> &'static str {
        match self {
            DocumentError::Failed(_) => "document_failed",
            DocumentError::TimeBudget(_) => "time_budget",
            DocumentError::MemoryBudget(_) => "memory_budget",
            DocumentError::Helper(_) => "document_helper",
        }
    }
}

/// What the helper writes.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The document's text, metadata and links.
    Ok(Extracted),
    /// Why it could not be read.
    Error(String),
}

/// How the helper is run: a program, and the command it is given first when the
/// program is trawl's executable (`trawl docparse ..`).
#[derive(Debug, Clone)]
pub struct Helper {
    program: PathBuf,
    command: Option<&'static str>,
}

impl Helper {
    /// The helper at `path` (a `docparse` link or a program of that interface).
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Helper {
            program: path.into(),
            command: None,
        }
    }
}

/// The helper: `TRAWL_DOCPARSE`, else the running executable as `trawl docparse` (one
/// executable serves every command).
pub fn helper() -> Result<Helper, DocumentError> {
    if let Some(p) = std::env::var_os("TRAWL_DOCPARSE") {
        return Ok(Helper::at(p));
    }
    let exe = std::env::current_exe()
        .map_err(|e| DocumentError::Helper(format!("cannot locate the running binary: {e}")))?;
    Ok(Helper {
        program: exe,
        command: Some(HELPER),
    })
}

/// Reads `bytes` as a `format` document in the helper ([`helper`]), within
/// `limits`.
pub fn extract(format: Format, bytes: &[u8], limits: &Limits) -> Result<Extracted, DocumentError> {
    extract_with(&helper()?, format, bytes, limits)
}

/// [`extract`] with the helper `helper`.
pub fn extract_with(
    helper: &Helper,
    format: Format,
    bytes: &[u8],
    limits: &Limits,
) -> Result<Extracted, DocumentError> {
    let started = Instant::now();
    let cpu_secs = limits.max_millis.div_ceil(1000) + 1;
    let path = &helper.program;
    let mut child = Command::new(path)
        .args(helper.command)
        .args(["--format", format.name()])
        .args(["--max-pages", &limits.max_pages.to_string()])
        .args(["--max-text-bytes", &limits.max_text_bytes.to_string()])
        .args(["--max-memory-mb", &limits.max_memory_mb.to_string()])
        .args(["--max-cpu-secs", &cpu_secs.to_string()])
        .arg("-")
        // mimalloc reserves 1 GiB of address space up front by default: under an
        // address-space limit it must reserve what it uses.
        .env("MIMALLOC_ARENA_RESERVE", "16MiB")
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            DocumentError::Helper(format!(
                "cannot run the document helper {}: {e}; it is trawl's own \
                 executable (`trawl docparse`), or set TRAWL_DOCPARSE",
                path.display()
            ))
        })?;
    // The pipes are drained on threads of their own, so that neither side blocks on a
    // full pipe while the clock runs.
    let input = bytes.to_vec();
    let mut stdin = child.stdin.take();
    let writer = std::thread::spawn(move || {
        if let Some(s) = stdin.as_mut() {
            // The helper may stop reading (a limit hit): a broken pipe is its story.
            let _ = s.write_all(&input);
        }
    });
    let stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        if let Some(mut s) = stdout {
            let _ = s.read_to_end(&mut out);
        }
        out
    });
    let stderr = child.stderr.take();
    let errors = std::thread::spawn(move || {
        let mut out = Vec::new();
        if let Some(s) = stderr {
            let _ = s.take(64 * 1024).read_to_end(&mut out);
        }
        out
    });
    let budget = Duration::from_millis(limits.max_millis);
    let mut pause = Duration::from_millis(1);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() >= budget => {
                let _ = child.kill();
                let _ = child.wait();
                let _ = (writer.join(), reader.join(), errors.join());
                return Err(DocumentError::TimeBudget(limits.max_millis));
            }
            Ok(None) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            Err(e) => {
                let _ = child.kill();
                return Err(DocumentError::Helper(format!(
                    "cannot wait for the document helper: {e}"
                )));
            }
        }
    };
    let _ = writer.join();
    let out = reader.join().unwrap_or_default();
    let err = errors.join().unwrap_or_default();
    let err = String::from_utf8_lossy(&err);
    if status.success() {
        return match serde_json::from_slice::<Outcome>(&out) {
            Ok(Outcome::Ok(x)) => Ok(x),
            Ok(Outcome::Error(e)) => Err(DocumentError::Failed(e)),
            Err(e) => Err(DocumentError::Helper(format!(
                "the document helper's answer is not readable: {e}"
            ))),
        };
    }
    if err.contains("memory allocation of") || err.contains("out of memory") {
        return Err(DocumentError::MemoryBudget(limits.max_memory_mb));
    }
    use std::os::unix::process::ExitStatusExt;
    // SIGXCPU: the helper's own CPU limit.
    if status.signal() == Some(24) {
        return Err(DocumentError::TimeBudget(limits.max_millis));
    }
    let last = err
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    Err(DocumentError::Failed(format!(
        "the document helper ended with {status}{}{}",
        if last.is_empty() { "" } else { ": " },
        last.trim()
    )))
}

/// The helper's side: limits this process, reads the document from `input`, and
/// writes the [`Outcome`] as JSON to `output`.
#[allow(clippy::too_many_arguments)]
pub fn serve(
    format: Format,
    max_pages: usize,
    max_text: usize,
    max_memory_mb: Option<u64>,
    max_cpu_secs: Option<u64>,
    input: &mut dyn Read,
    output: &mut dyn Write,
) -> std::io::Result<()> {
    use rustix::process::{Resource, Rlimit, setrlimit};
    if let Some(mb) = max_memory_mb {
        let bytes = mb.saturating_mul(1024 * 1024);
        setrlimit(
            Resource::As,
            Rlimit {
                current: Some(bytes),
                maximum: Some(bytes),
            },
        )
        .map_err(std::io::Error::from)?;
    }
    if let Some(secs) = max_cpu_secs {
        setrlimit(
            Resource::Cpu,
            Rlimit {
                current: Some(secs),
                maximum: Some(secs + 1),
            },
        )
        .map_err(std::io::Error::from)?;
    }
    let mut bytes = Vec::new();
    input.read_to_end(&mut bytes)?;
    // The PDF library's panics are caught page by page; the default hook would print
    // each one.
    std::panic::set_hook(Box::new(|_| {}));
    let outcome =
        match std::panic::catch_unwind(|| super::extract_here(format, &bytes, max_pages, max_text))
        {
            Ok(Ok(x)) => Outcome::Ok(x),
            Ok(Err(e)) => Outcome::Error(e),
            Err(p) => Outcome::Error(super::pdf::panic_message(p.as_ref())),
        };
    serde_json::to_writer(&mut *output, &outcome).map_err(std::io::Error::other)?;
    output.flush()
}
