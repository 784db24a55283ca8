//! The server's request log: one JSON object per line, per request.
//!
//! Lines are buffered; the server flushes the buffer at least every
//! [`FLUSH_INTERVAL`] and when it stops (SIGTERM/SIGINT for the binary, `stop()` for an
//! in-process server), so a test that waited for the server to stop, or for
//! `FLUSH_INTERVAL` after its last request, reads a complete log.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use trawl::error::{Error, IoContext, Result};

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
    /// The connection the request came on: numbered from 1 per server run in accept
    /// order, so requests with the same number shared one (keep-alive) connection.
    /// 0 in logs written before the field existed.
    #[serde(default)]
    pub conn: u64,
    /// Whether the connection was TLS (`https://`).
    #[serde(default)]
    pub tls: bool,
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

/// The smallest gap in milliseconds between two consecutive requests to the same host,
/// per host with at least two requests (`/robots.txt` included): what a politeness test
/// compares with `fetch.delay` / Crawl-delay.
pub fn min_gap_per_host(lines: &[LogLine]) -> BTreeMap<String, u64> {
    let mut last: BTreeMap<&str, u64> = BTreeMap::new();
    let mut gaps: BTreeMap<String, u64> = BTreeMap::new();
    for l in lines {
        if let Some(prev) = last.insert(&l.host, l.time_ms) {
            let gap = l.time_ms.saturating_sub(prev);
            let g = gaps.entry(l.host.clone()).or_insert(gap);
            *g = (*g).min(gap);
        }
    }
    gaps
}

/// The URLs requested (`http://host/path`, `https://` for requests over TLS), with how
/// often each was requested.
pub fn requested_urls(lines: &[LogLine]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for l in lines {
        let scheme = if l.tls { "https" } else { "http" };
        *out.entry(format!("{scheme}://{}{}", l.host, l.path))
            .or_insert(0) += 1;
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    fn line(t: u64, host: &str, path: &str) -> LogLine {
        LogLine {
            time_ms: t,
            method: "GET".into(),
            host: host.into(),
            path: path.into(),
            status: 200,
            bytes: 1,
            conn: 1,
            tls: false,
        }
    }

    #[test]
    fn gaps_and_counts() {
        let lines = vec![
            line(1000, "a", "/robots.txt"),
            line(1500, "b", "/"),
            line(2100, "a", "/"),
            line(2600, "a", "/p1.html"),
            line(2600, "c", "/"),
            line(9000, "a", "/"),
        ];
        let gaps = min_gap_per_host(&lines);
        assert_eq!(gaps.get("a"), Some(&500));
        assert!(!gaps.contains_key("b"));
        let urls = requested_urls(&lines);
        assert_eq!(urls["http://a/"], 2);
        assert_eq!(urls.len(), 5);
        let tls = LogLine {
            tls: true,
            ..line(9500, "a", "/")
        };
        assert_eq!(requested_urls(&[tls])["https://a/"], 1);
    }

    #[test]
    fn log_round_trip_ignores_a_partial_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log.jsonl");
        let log = RequestLog::create(&p).unwrap();
        log.record(&line(1, "a", "/"));
        log.record(&line(2, "a", "/x"));
        log.flush().unwrap();
        assert_eq!(read_log(&p).unwrap().len(), 2);
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"time_ms\":3,\"hos").unwrap();
        assert_eq!(read_log(&p).unwrap().len(), 2);
    }

    #[test]
    fn old_lines_without_conn_and_tls_still_read() {
        let old = r#"{"time_ms":1,"method":"GET","host":"a","path":"/","status":200,"bytes":5}"#;
        let l: LogLine = serde_json::from_str(old).unwrap();
        assert_eq!((l.conn, l.tls), (0, false));
        let new = serde_json::to_string(&LogLine {
            conn: 7,
            tls: true,
            ..l
        })
        .unwrap();
        assert!(new.ends_with(r#""conn":7,"tls":true}"#), "{new}");
    }
}
