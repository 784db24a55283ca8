//! The server's request log: one JSON object per line, per request.
//!
//! Lines are buffered; the server flushes the buffer at least every
//! [`FLUSH_INTERVAL`] and when it stops (SIGTERM/SIGINT for the binary, `stop()` for an
//! in-process server), so a test that waited for the server to stop, or for
//! `FLUSH_INTERVAL` after its last request, reads a complete log.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, IoContext, Result};

/// The longest a logged request stays in the buffer.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(50);

/// One request as logged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogLine {
    /// When the request was answered, milliseconds since the Unix epoch.
    pub time_ms: u64,
    /// The request method.
    pub method: String,
    /// The `Host` header, lower-cased, port removed.
    pub host: String,
    /// The request path (without query).
    pub path: String,
    /// The response status.
    pub status: u16,
    /// The response body size in bytes.
    pub bytes: u64,
}

/// A JSON-lines request log file.
#[derive(Debug)]
pub struct RequestLog {
    path: PathBuf,
    out: Mutex<BufWriter<File>>,
}

impl RequestLog {
    /// Creates (truncates) the log file at `path`.
    pub fn create(path: &Path) -> Result<RequestLog> {
        let f = File::create(path).at(path)?;
        Ok(RequestLog {
            path: path.to_path_buf(),
            out: Mutex::new(BufWriter::with_capacity(1 << 16, f)),
        })
    }

    /// Appends one line (buffered). A failed write is logged, never fatal to serving.
    pub fn record(&self, line: &LogLine) {
        let Ok(mut bytes) = serde_json::to_vec(line) else {
            return;
        };
        bytes.push(b'\n');
        let mut out = match self.out.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Err(e) = out.write_all(&bytes) {
            tracing::warn!("request log {}: {e}", self.path.display());
        }
    }

    /// Writes buffered lines to the file.
    pub fn flush(&self) -> Result<()> {
        let mut out = match self.out.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        out.flush().at(&self.path)
    }
}

/// Reads a request log; a partial last line (a write in progress) is ignored.
pub fn read_log(path: &Path) -> Result<Vec<LogLine>> {
    let f = File::open(path).at(path)?;
    let mut lines = Vec::new();
    let mut raw = BufReader::new(f).lines().enumerate().peekable();
    while let Some((n, line)) = raw.next() {
        let line = line.at(path)?;
        match serde_json::from_str(&line) {
            Ok(l) => lines.push(l),
            Err(_) if raw.peek().is_none() => break,
            Err(e) => {
                return Err(Error::input(
                    format!("{}:{}", path.display(), n + 1),
                    format!("not a request log line ({e})"),
                ));
            }
        }
    }
    Ok(lines)
}
