//! `inject`: adds seed URLs to the crawldb (creating the crawl directory on first
//! run) without touching URLs it already knows.
//!
//! Seed file format: one URL per line, optionally followed by whitespace-separated
//! `key=value` pairs (`score`, `fetch_interval`; other keys become metadata); `#`
//! comments and blank lines are skipped. Inputs are UTF-8 (a leading byte order mark is
//! skipped); a line that is not is rejected with its number and the rest is read. The
//! inputs are files, directories of files, or standard input (`-`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::PathBuf;

use crate::config::{Config, MAX_INTERVAL_SECS};
use crate::crawldb::schedule::FIXED_INTERVAL_KEY;
use crate::crawldb::stream::DatumStream;
use crate::crawldb::{current_part, lock, write_version};
use crate::datum::{CrawlDatum, Millis, now_millis};
use crate::error::{Error, Result};
use crate::stage::{Report, StageCtx};
use crate::store::layout::CrawlDir;
use crate::store::parquet::{PartWriter, partition_for_host};
use crate::urls::UrlPolicy;

/// The longest piece of a rejected line echoed in messages, in characters; longer input
/// is cut and its full length noted.
pub const ECHO_CHARS: usize = 200;

/// `s` cut to [`ECHO_CHARS`] characters, with `… (N bytes)` when it was longer.
pub fn clip(s: &str) -> String {
    match s.char_indices().nth(ECHO_CHARS) {
        Some((i, _)) => format!("{}\u{2026} ({} bytes)", &s[..i], s.len()),
        None => s.to_string(),
    }
}

/// A raw (undecodable) line cut like [`clip`], without decoding more of it than is
/// shown; the note gives the line's length in bytes.
fn clip_raw(raw: &[u8]) -> String {
    let cut = raw.len().min(4 * ECHO_CHARS);
    let head = String::from_utf8_lossy(&raw[..cut]);
    let head = head.trim();
    match head.char_indices().nth(ECHO_CHARS) {
        Some((i, _)) => format!("{}\u{2026} ({} bytes)", &head[..i], raw.len()),
        None if cut < raw.len() => format!("{head}\u{2026} ({} bytes)", raw.len()),
        None => head.to_string(),
    }
}

/// A seed line that was not injected.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    /// `file:line`.
    pub place: String,
    /// The URL (or line) as written, cut to [`ECHO_CHARS`] characters, credentials
    /// (`user:password@`) masked.
    pub url: String,
    /// Why.
    pub reason: String,
}

impl std::fmt::Display for Rejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: rejected {}: {}", self.place, self.url, self.reason)
    }
}

/// One input of inject: a seed file, or standard input (`-`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SeedInput {
    /// A seed file.
    File(PathBuf),
    /// Standard input, read to its end.
    Stdin,
}

impl SeedInput {
    /// The name used in messages and `name:line` places (`-` for standard input).
    pub fn name(&self) -> String {
        match self {
            SeedInput::File(p) => p.display().to_string(),
            SeedInput::Stdin => "-".into(),
        }
    }

    /// Reads the whole input.
    pub fn read(&self) -> Result<Vec<u8>> {
        let read = match self {
            SeedInput::File(p) => std::fs::read(p),
            SeedInput::Stdin => {
                let mut buf = Vec::new();
                std::io::stdin().read_to_end(&mut buf).map(|_| buf)
            }
        };
        read.map_err(|e| {
            Error::input(
                self.name(),
                format!("cannot read the seed input ({e}); nothing was injected"),
            )
        })
    }
}

/// The inputs named on the command line: `-` is standard input (at most once); a
/// directory stands for every regular file in it, sorted by name (hidden files, those
/// starting with `.` or `_` as Nutch's inject skips them, and subdirectories are left
/// out); anything else is a seed file. Checked before anything is written.
pub fn expand_inputs(args: &[PathBuf]) -> Result<Vec<SeedInput>> {
    let mut out = Vec::new();
    let mut stdin = false;
    for arg in args {
        if arg.as_os_str() == "-" {
            if stdin {
                return Err(Error::input(
                    "-",
                    "standard input named twice; give `-` once",
                ));
            }
            stdin = true;
            out.push(SeedInput::Stdin);
            continue;
        }
        let meta = std::fs::metadata(arg).map_err(|e| {
            Error::input(
                arg.display().to_string(),
                format!("cannot read the seed file ({e}); nothing was injected"),
            )
        })?;
        if !meta.is_dir() {
            out.push(SeedInput::File(arg.clone()));
            continue;
        }
        let mut files = Vec::new();
        for entry in std::fs::read_dir(arg).map_err(|e| Error::io(arg, e))? {
            let entry = entry.map_err(|e| Error::io(arg, e))?;
            let name = entry.file_name();
            let hidden = name
                .to_str()
                .is_none_or(|n| n.starts_with('.') || n.starts_with('_'));
            let path = entry.path();
            // metadata() follows symbolic links: a link to a seed file counts.
            if !hidden && std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
                files.push(path);
            }
        }
        if files.is_empty() {
            return Err(Error::input(
                arg.display().to_string(),
                "the directory holds no seed file (hidden files and subdirectories are \
                 skipped); nothing was injected",
            ));
        }
        files.sort();
        out.extend(files.into_iter().map(SeedInput::File));
    }
    Ok(out)
}

/// What one input gave.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InputReport {
    /// The input's name (`-` for standard input).
    pub name: String,
    /// Seed lines accepted (normalized and filtered; known URLs included).
    pub accepted: u64,
    /// Lines rejected.
    pub rejected: u64,
}

/// What inject did.
#[derive(Debug, Clone, Default)]
pub struct InjectReport {
    /// New URLs added.
    pub injected: u64,
    /// Seeds already in the crawldb (kept as they were), or repeated in the inputs.
    pub known: u64,
    /// Lines rejected, with place and reason.
    pub rejected: Vec<Rejected>,
    /// Rows in the crawldb afterwards.
    pub rows: u64,
    /// Accepted and rejected lines of each input, in the order read.
    pub inputs: Vec<InputReport>,
}

/// The UTF-8 byte order mark some editors write at the start of a file.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Parses a seed input into datums (normalized, filtered); rejects are returned apart.
/// `name` names the input in `name:line` places. A leading byte order mark is skipped;
/// a line that is not UTF-8 is rejected with its number and the rest is read.
pub fn parse_seeds(
    name: &str,
    bytes: &[u8],
    cfg: &Config,
    now: Millis,
) -> Result<(Vec<CrawlDatum>, Vec<Rejected>)> {
    // Seeds define the scope, so they are not themselves subject to it.
    let mut ucfg = cfg.urls.clone();
    ucfg.scope = crate::config::UrlScope::Any;
    let policy = UrlPolicy::new(&ucfg, &[])?;
    let mut out = Vec::new();
    let mut rejected = Vec::new();
    let bytes = bytes.strip_prefix(BOM).unwrap_or(bytes);
    for (idx, raw_line) in bytes.split(|&b| b == b'\n').enumerate() {
        let place = format!("{name}:{}", idx + 1);
        let line = match std::str::from_utf8(raw_line) {
            Ok(line) => line,
            Err(e) => {
                let at = e.valid_up_to();
                let byte = raw_line.get(at).copied().unwrap_or_default();
                rejected.push(Rejected {
                    place,
                    url: clip_raw(raw_line),
                    reason: format!(
                        "not UTF-8 (byte 0x{byte:02X} at column {}); save the file as UTF-8",
                        at + 1
                    ),
                });
                continue;
            }
        };
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut tokens = line.split_whitespace();
        let Some(raw) = tokens.next() else { continue };
        let reject = |reason: String| Rejected {
            place: place.clone(),
            url: clip(&crate::urls::redact_userinfo(raw)),
            reason: clip(&reason),
        };
        let url = match policy.check_seed(raw) {
            Ok(u) => u,
            Err(e) => {
                rejected.push(reject(format!("{} ({})", e, e.code())));
                continue;
            }
        };
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        let mut d = CrawlDatum::unfetched(url.to_string(), host, now, cfg.inject.fetch_interval);
        d.score = cfg.inject.score;
        match apply_keys(&mut d, tokens) {
            Ok(()) => out.push(d),
            Err(why) => rejected.push(reject(why)),
        }
    }
    Ok((out, rejected))
}

fn apply_keys<'a>(
    d: &mut CrawlDatum,
    tokens: impl Iterator<Item = &'a str>,
) -> std::result::Result<(), String> {
    for kv in tokens {
        let Some((k, v)) = kv.split_once('=') else {
            return Err(format!("malformed metadata {kv:?}: expected key=value"));
        };
        match k {
            "score" => match v.parse::<f64>() {
                Ok(s) if s.is_finite() => d.score = s,
                _ => return Err(format!("score={v:?} is not a finite number")),
            },
            "fetch_interval" => match v.parse::<i64>() {
                Ok(i) if (1..=MAX_INTERVAL_SECS).contains(&i) => {
                    d.fetch_interval = i;
                    d.metadata.insert(FIXED_INTERVAL_KEY.into(), "true".into());
                }
                _ => {
                    return Err(format!(
                        "fetch_interval={v:?} is not an integer from 1 to {MAX_INTERVAL_SECS} seconds"
                    ));
                }
            },
            "" => return Err(format!("malformed metadata {kv:?}: empty key")),
            _ => {
                d.metadata.insert(k.to_string(), v.to_string());
            }
        }
    }
    Ok(())
}

/// What to inject.
#[derive(Debug, Clone, Default)]
pub struct InjectOpts {
    /// The seed inputs, checked by [`expand_inputs`].
    pub inputs: Vec<SeedInput>,
}

impl InputReport {
    /// `NAME: A accepted, R rejected`.
    pub fn line(&self) -> String {
        format!(
            "{}: {} accepted, {} rejected",
            self.name, self.accepted, self.rejected
        )
    }
}

impl std::fmt::Display for InjectReport {
    /// `injected I, already known K, rejected R, crawldb N urls (INPUTS)`, INPUTS being
    /// the one input's [`InputReport::line`] or `M inputs`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "injected {}, already known {}, rejected {}, crawldb {} urls (",
            self.injected,
            self.known,
            self.rejected.len(),
            self.rows
        )?;
        match self.inputs.as_slice() {
            [one] => f.write_str(&one.line())?,
            many => write!(f, "{} inputs", many.len())?,
        }
        f.write_str(")")
    }
}

impl Report for InjectReport {
    const STAGE: &'static str = "inject";
}

/// Injects the seeds of `opts.inputs` into the crawl directory of `ctx` (created if
/// needed). Every input is read and parsed before the crawldb is touched; an unreadable
/// input injects nothing.
pub fn run(ctx: &StageCtx, opts: &InjectOpts) -> Result<InjectReport> {
    let cfg = ctx.config();
    let now = now_millis();
    let mut seeds = Vec::new();
    let mut rejected = Vec::new();
    let mut per_input = Vec::new();
    for input in &opts.inputs {
        let name = input.name();
        let bytes = input.read()?;
        let (ok, bad) = parse_seeds(&name, &bytes, cfg, now)?;
        per_input.push(InputReport {
            name,
            accepted: ok.len() as u64,
            rejected: bad.len() as u64,
        });
        seeds.extend(ok);
        rejected.extend(bad);
    }
    let dir = ctx.crawl_dir();
    std::fs::create_dir_all(dir.crawldb()).map_err(|e| Error::io(dir.crawldb(), e))?;
    let _lock = lock(&dir, "inject")?;
    super::verify_for_rewrite(&dir)?;
    let (exists, mut meta) = super::meta_or_new(&dir, cfg)?;
    let n = meta.partitions;
    let mut hosts: BTreeSet<String> = meta.seed_hosts.iter().cloned().collect();
    let mut parts: Vec<BTreeMap<String, CrawlDatum>> = (0..n).map(|_| BTreeMap::new()).collect();
    let mut dup = 0u64;
    for d in seeds {
        hosts.insert(d.host.clone());
        let p = partition_for_host(&d.host, n);
        if parts[p].contains_key(&d.url) {
            dup += 1;
        } else {
            parts[p].insert(d.url.clone(), d);
        }
    }
    meta.seed_hosts = hosts.into_iter().collect();
    let counts = write_version(&dir, &mut meta, "inject", |i, w| {
        run_partition(&dir, i, exists, &parts[i], w)
    })?;
    let mut report = InjectReport {
        known: dup,
        rejected,
        inputs: per_input,
        ..InjectReport::default()
    };
    for (i, k, r) in counts {
        report.injected += i;
        report.known += k;
        report.rows += r;
    }
    Ok(report)
}

/// Merges the new seeds of partition `i` (by URL) into crawldb part `i` (when the
/// crawldb `exists`), writing the new part to `w`; URLs already known keep their row.
/// Returns (injected, known, rows).
fn run_partition(
    dir: &CrawlDir,
    i: usize,
    exists: bool,
    seeds: &BTreeMap<String, CrawlDatum>,
    w: &mut PartWriter<CrawlDatum>,
) -> Result<(u64, u64, u64)> {
    let mut db = if exists {
        DatumStream::open(&current_part(dir, i))?
    } else {
        DatumStream::empty()
    };
    let mut new = seeds.values().cloned().peekable();
    let (mut injected, mut known, mut rows) = (0u64, 0u64, 0u64);
    loop {
        let take_db = match (db.peek_url(), new.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(a), Some(b)) => {
                if a == b.url {
                    known += 1;
                    new.next();
                    true
                } else {
                    a < b.url.as_str()
                }
            }
        };
        let row = if take_db {
            db.next_row()?
        } else {
            injected += 1;
            new.next()
        };
        if let Some(r) = row {
            rows += 1;
            w.push(r)?;
        }
    }
    Ok((injected, known, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_seed_lines() {
        let text = "# comment\n\nhttp://A.test/x#frag\tscore=2.5\tfetch_interval=3600\tlang=en\nftp://b.test/\nhttp://c.test/ score=abc\nhttp://d.test/ novalue\n";
        let (ok, rej) = parse_seeds("seeds.txt", text.as_bytes(), &Config::default(), 5).unwrap();
        assert_eq!(ok.len(), 1);
        let d = &ok[0];
        assert_eq!(d.url, "http://a.test/x");
        assert_eq!(d.host, "a.test");
        assert_eq!(d.score, 2.5);
        assert_eq!(d.fetch_interval, 3600);
        assert_eq!(d.fetch_time, 5);
        assert_eq!(d.metadata.get("lang").map(String::as_str), Some("en"));
        assert_eq!(
            d.metadata.get(FIXED_INTERVAL_KEY).map(String::as_str),
            Some("true")
        );
        let places: Vec<&str> = rej.iter().map(|r| r.place.as_str()).collect();
        assert_eq!(places, ["seeds.txt:4", "seeds.txt:5", "seeds.txt:6"]);
        assert!(rej[0].reason.contains("scheme"), "{}", rej[0].reason);
        assert!(rej[1].reason.contains("score"), "{}", rej[1].reason);
    }

    #[test]
    fn bom_skipped_and_undecodable_lines_rejected_by_number() {
        let bytes =
            b"\xEF\xBB\xBFhttp://a.test/\r\nhttp://b.test/caf\xE9 score=2\nhttp://c.test/\n";
        let (ok, rej) = parse_seeds("in", bytes, &Config::default(), 0).unwrap();
        let urls: Vec<&str> = ok.iter().map(|d| d.url.as_str()).collect();
        assert_eq!(urls, ["http://a.test/", "http://c.test/"]);
        assert_eq!(rej.len(), 1);
        assert_eq!(rej[0].place, "in:2");
        assert_eq!(rej[0].url, "http://b.test/caf\u{fffd} score=2");
        assert_eq!(
            rej[0].reason,
            "not UTF-8 (byte 0xE9 at column 18); save the file as UTF-8"
        );
    }

    #[test]
    fn echoed_input_is_cut() {
        assert_eq!(clip("short"), "short");
        let long = "é".repeat(300);
        assert_eq!(
            clip(&long),
            format!("{}\u{2026} (600 bytes)", "é".repeat(ECHO_CHARS))
        );
        let raw = vec![0xE9u8; 5000];
        assert_eq!(
            clip_raw(&raw),
            format!("{}\u{2026} (5000 bytes)", "\u{fffd}".repeat(ECHO_CHARS))
        );
        // Metadata and reasons that quote the line are cut too.
        let line = format!("http://a.test/ {}", "k".repeat(10_000));
        let (_, rej) = parse_seeds("in", line.as_bytes(), &Config::default(), 0).unwrap();
        assert!(rej[0].reason.len() < 4 * ECHO_CHARS, "{}", rej[0].reason);
    }

    #[test]
    fn defaults_from_config() {
        let mut cfg = Config::default();
        cfg.inject.score = 0.5;
        cfg.inject.fetch_interval = 77;
        let (ok, _) = parse_seeds("s", b"http://a.test/", &cfg, 0).unwrap();
        assert_eq!(ok[0].score, 0.5);
        assert_eq!(ok[0].fetch_interval, 77);
        assert!(ok[0].metadata.is_empty());
        assert_eq!(ok[0].depth, 0);
    }
}
