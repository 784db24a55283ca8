//! `status.json`: what the crawl is doing now, in the crawl directory, for operators
//! and their scripts: every stage writes its final line there when it ends, and
//! fetch rewrites it every second while it runs (counts, rates, busiest and slowest
//! hosts, errors by reason). With `--metrics-addr` (fetch, crawl) the same figures
//! are served as Prometheus text on a loopback address. Writes are atomic (a reader
//! never sees half a file) and best effort: a status that cannot be written is
//! logged, never a reason to fail the crawl.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Map, Value, json};

use crate::error::{Error, Result};

static ROUND: AtomicUsize = AtomicUsize::new(0);
static METRICS: OnceLock<Arc<Mutex<String>>> = OnceLock::new();
static LIVE: OnceLock<std::path::PathBuf> = OnceLock::new();
/// Serializes this process's writes (one temporary file name per process) and
/// counts the stage-level ones: a progress thread writes only while the count is
/// the one it started under, so it never overwrites a newer status.
static WRITES: Mutex<u64> = Mutex::new(0);
/// Whether this process wrote the status (only then may it record a failure).
static WROTE: AtomicBool = AtomicBool::new(false);

/// Sets the `status.json` this process keeps current (a stage that changes a local
/// crawl directory sets it once); progress bars then report into it.
pub fn set_live(path: std::path::PathBuf) {
    let _ = LIVE.set(path);
}

/// The `status.json` this process keeps current, if any.
pub fn live() -> Option<&'static Path> {
    LIVE.get().map(|p| p.as_path())
}

/// Marks `stage` running in the live `status.json` (when there is one).
pub fn running(stage: &str) {
    if let Some(path) = live() {
        let mut f = Map::new();
        f.insert(
            "started".into(),
            json!(crate::datum::format_millis(crate::datum::now_millis())),
        );
        write(path, &status(stage, "running", f));
    }
}

/// Marks `stage` failed with `error` in the live `status.json`, when this process
/// wrote the status before (a stage refused before it began leaves it alone).
pub fn failed(stage: &str, error: &str) {
    let Some(path) = live() else { return };
    if !WROTE.load(Ordering::Relaxed) {
        return;
    }
    let mut f = Map::new();
    f.insert("error".into(), json!(error));
    write(path, &status(stage, "failed", f));
}

/// While `pb` lives and is not finished, writes its position, length and rate into
/// the live `status.json` every second as `stage`'s progress (`what` says what is
/// counted). Does nothing without a live status.
pub fn follow(pb: &indicatif::ProgressBar, stage: &str, what: &str) {
    let Some(path) = live() else { return };
    let weak = pb.downgrade();
    let (stage, what) = (stage.to_string(), what.to_string());
    let started = std::time::Instant::now();
    let generation = WRITES.lock().map(|n| *n).unwrap_or(0);
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
            let Some(pb) = weak.upgrade() else { return };
            if pb.is_finished() {
                return;
            }
            let Ok(n) = WRITES.lock() else { return };
            if *n != generation {
                // A newer status (this stage done, or another stage) was written.
                return;
            }
            let done = pb.position();
            let secs = started.elapsed().as_secs_f64().max(1e-3);
            let mut f = Map::new();
            f.insert("progress".into(), json!(what));
            f.insert("done".into(), json!(done));
            f.insert("total".into(), json!(pb.length()));
            f.insert("elapsed_secs".into(), json!(secs));
            f.insert("per_sec".into(), json!(done as f64 / secs));
            write_locked(path, &status(&stage, "running", f));
            drop(n);
        }
    });
}

/// The crawl driver's round in progress (shown in every status), `None` outside one.
pub fn set_round(round: Option<usize>) {
    ROUND.store(round.unwrap_or(0), Ordering::Relaxed);
}

fn round() -> Option<usize> {
    match ROUND.load(Ordering::Relaxed) {
        0 => None,
        n => Some(n),
    }
}

/// A status object: `stage`, `state` (`running` or `done`), the round, the time, and
/// `fields` (counts, rates, host lists).
pub fn status(stage: &str, state: &str, fields: Map<String, Value>) -> Value {
    let mut m = Map::new();
    m.insert("stage".into(), json!(stage));
    m.insert("state".into(), json!(state));
    m.insert("round".into(), json!(round()));
    m.insert(
        "updated".into(),
        json!(crate::datum::format_millis(crate::datum::now_millis())),
    );
    m.extend(fields);
    Value::Object(m)
}

/// Writes `value` to `path` (the crawl directory's `status.json`) atomically, and
/// refreshes the metrics page when one is served. Failures are logged.
pub fn write(path: &Path, value: &Value) {
    let Ok(mut n) = WRITES.lock() else { return };
    *n += 1;
    write_locked(path, value);
}

/// [`write`] with the write lock held.
fn write_locked(path: &Path, value: &Value) {
    WROTE.store(true, Ordering::Relaxed);
    if let Some(m) = METRICS.get()
        && let Ok(mut text) = m.lock()
    {
        *text = prometheus(value);
    }
    let Some(dir) = path.parent() else { return };
    if !dir.is_dir() {
        return;
    }
    let bytes = match serde_json::to_vec_pretty(value) {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!("{}: cannot encode the status: {e}", path.display());
            return;
        }
    };
    if let Err(e) = crate::store::parquet::write_atomic(path, &bytes) {
        tracing::warn!("cannot write the status file: {e}");
    }
}

/// Prometheus text of a status: every top-level number as `trawl_<name>`, labelled
/// with the stage; `errors_by_reason` as `trawl_errors{reason=..}`; the host lists as
/// `trawl_host_<field>{host=..,list=..}`.
pub fn prometheus(v: &Value) -> String {
    let stage = v.get("stage").and_then(Value::as_str).unwrap_or("");
    let esc = |s: &str| {
        s.replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n")
    };
    let mut out = String::new();
    let Some(obj) = v.as_object() else {
        return out;
    };
    let running = obj.get("state").and_then(Value::as_str) == Some("running");
    out.push_str(&format!(
        "# HELP trawl_running Whether a stage is running (1) or the last one ended (0).\n# TYPE trawl_running gauge\ntrawl_running{{stage=\"{}\"}} {}\n",
        esc(stage),
        u8::from(running)
    ));
    for (k, val) in obj {
        if let Some(n) = val.as_f64() {
            out.push_str(&format!(
                "# TYPE trawl_{k} gauge\ntrawl_{k}{{stage=\"{}\"}} {n}\n",
                esc(stage)
            ));
        }
    }
    if let Some(reasons) = obj.get("errors_by_reason").and_then(Value::as_object) {
        out.push_str("# TYPE trawl_errors gauge\n");
        for (r, n) in reasons {
            if let Some(n) = n.as_f64() {
                out.push_str(&format!(
                    "trawl_errors{{stage=\"{}\",reason=\"{}\"}} {n}\n",
                    esc(stage),
                    esc(r)
                ));
            }
        }
    }
    for list in ["busiest_hosts", "slowest_hosts"] {
        let Some(rows) = obj.get(list).and_then(Value::as_array) else {
            continue;
        };
        for row in rows {
            let Some(r) = row.as_object() else { continue };
            let host = r.get("host").and_then(Value::as_str).unwrap_or("");
            for (k, n) in r {
                if let Some(n) = n.as_f64() {
                    out.push_str(&format!(
                        "trawl_host_{k}{{stage=\"{}\",list=\"{list}\",host=\"{}\"}} {n}\n",
                        esc(stage),
                        esc(host)
                    ));
                }
            }
        }
    }
    out
}

/// Serves the latest status as Prometheus text at `http://ADDR/metrics` (any path)
/// from a background thread, for the rest of the process. Only loopback addresses
/// are accepted. Returns the address bound (port 0 picks one).
pub fn serve_metrics(addr: SocketAddr) -> Result<SocketAddr> {
    if !addr.ip().is_loopback() {
        return Err(Error::input(
            "--metrics-addr",
            format!(
                "{addr} is not a loopback address: the metrics are served on 127.0.0.1 or ::1 only (scrape through a local agent or a proxy)"
            ),
        ));
    }
    let listener = TcpListener::bind(addr)
        .map_err(|e| Error::input("--metrics-addr", format!("cannot listen on {addr}: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| Error::input("--metrics-addr", format!("{addr}: {e}")))?;
    let text = METRICS
        .get_or_init(|| Arc::new(Mutex::new(String::new())))
        .clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            // A client that sends nothing must not hold the next scrape up.
            let _ = conn.set_read_timeout(Some(std::time::Duration::from_secs(2)));
            // Read the request head; the answer is the same for every path.
            let mut reader = BufReader::new(match conn.try_clone() {
                Ok(c) => c,
                Err(_) => continue,
            });
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let body = text.lock().map(|t| t.clone()).unwrap_or_default();
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    tracing::info!("metrics: serving http://{bound}/metrics");
    Ok(bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_text_names_numbers_reasons_and_hosts() {
        let mut f = Map::new();
        f.insert("done".into(), json!(12));
        f.insert("pages_per_sec".into(), json!(3.5));
        f.insert("errors_by_reason".into(), json!({"timeout": 2}));
        f.insert(
            "slowest_hosts".into(),
            json!([{"host": "a.test", "avg_response_ms": 900.0}]),
        );
        let t = prometheus(&status("fetch", "running", f));
        assert!(t.contains("trawl_running{stage=\"fetch\"} 1\n"), "{t}");
        assert!(t.contains("trawl_done{stage=\"fetch\"} 12\n"), "{t}");
        assert!(
            t.contains("trawl_pages_per_sec{stage=\"fetch\"} 3.5\n"),
            "{t}"
        );
        assert!(
            t.contains("trawl_errors{stage=\"fetch\",reason=\"timeout\"} 2\n"),
            "{t}"
        );
        assert!(
            t.contains("trawl_host_avg_response_ms{stage=\"fetch\",list=\"slowest_hosts\",host=\"a.test\"} 900\n"),
            "{t}"
        );
    }
}
