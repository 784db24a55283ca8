//! `inject`: adds seed URLs to the crawldb (creating the crawl directory on first
//! run) without touching URLs it already knows.
//!
//! Seed file format: one URL per line, optionally followed by whitespace-separated
//! `key=value` pairs (`score`, `fetch_interval`; other keys become metadata); `#`
//! comments and blank lines are skipped. Inputs are UTF-8 (a leading byte order mark is
//! skipped); a line that is not is rejected with its number and the rest is read. The
//! inputs are files, directories of files, or standard input (`-`).

use std::collections::BTreeSet;
use std::io::Read;
use std::path::PathBuf;
use std::sync::Mutex;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::config::{Config, MAX_INTERVAL_SECS};
use crate::crawldb::current_part;
use crate::crawldb::schedule::FIXED_INTERVAL_KEY;
use crate::crawldb::spill::{SortKey, Sorter};
use crate::crawldb::stream::DatumStream;
use crate::datum::{CrawlDatum, Millis, now_millis};
use crate::error::{Error, Result};
use crate::stage::{Guard, Partitioned, Report, StageCtx, Verify};
use crate::store::disk;
use crate::store::integrity;
use crate::store::jobs::{Job, PartitionSet};
use crate::store::layout::CrawlDir;
use crate::store::parquet::{self, PartWriter};
use crate::store::partition::Partitioner;
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
    /// Lines rejected (each was handed to the caller's `on_reject` as it was met).
    pub rejected: u64,
    /// Rows in the crawldb afterwards.
    pub rows: u64,
    /// Accepted and rejected lines of each input, in the order read.
    pub inputs: Vec<InputReport>,
    /// Sorted runs spilled to disk (0 when every seed fit in `inject.sort_buffer_rows`).
    pub runs: u64,
    /// Bytes of the spilled runs.
    pub spilled_bytes: u64,
}

/// The UTF-8 byte order mark some editors write at the start of a file.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A parsed seed line: what a new crawldb row is made of. Compact (no unused
/// crawldb fields), as it is what inject buffers and spills.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Seed {
    /// The normalized URL.
    pub url: String,
    /// Its host, lowercase.
    pub host: String,
    /// `score=`, else `inject.score`.
    pub score: f64,
    /// `fetch_interval=` (pinned), if given.
    pub fetch_interval: Option<i64>,
    /// The line's other `key=value` pairs, in line order (a repeated key: the last wins).
    pub metadata: Vec<(String, String)>,
}

impl SortKey for Seed {
    /// By URL.
    fn cmp_key(&self, other: &Self) -> std::cmp::Ordering {
        self.url.cmp(&other.url)
    }
}

impl Seed {
    /// The crawldb row of a new URL: `db_unfetched`, due `now`.
    pub fn into_datum(self, cfg: &Config, now: Millis) -> CrawlDatum {
        let interval = self.fetch_interval.unwrap_or(cfg.inject.fetch_interval);
        let mut d = CrawlDatum::unfetched(self.url, self.host, now, interval);
        d.score = self.score;
        d.metadata.extend(self.metadata);
        if self.fetch_interval.is_some() {
            d.metadata.insert(FIXED_INTERVAL_KEY.into(), "true".into());
        }
        d
    }
}

/// What one block of seed lines gave.
#[derive(Debug, Default)]
pub struct ParsedBlock {
    /// Accepted seeds, in line order, by partition.
    pub parts: Vec<Vec<Seed>>,
    /// Rejected lines, in line order.
    pub rejected: Vec<Rejected>,
    /// Seeds accepted.
    pub accepted: u64,
}

/// Parses seed lines `bytes` (whole lines; the first is line `first_line` of input
/// `name`) into seeds split by host partition (of `parts`), normalized and filtered
/// with `policy`. A line that is not UTF-8 is rejected with its number.
pub fn parse_block(
    name: &str,
    first_line: u64,
    bytes: &[u8],
    policy: &UrlPolicy,
    cfg: &Config,
    parts: Partitioner,
) -> ParsedBlock {
    let mut out = ParsedBlock {
        parts: (0..parts.n()).map(|_| Vec::new()).collect(),
        ..ParsedBlock::default()
    };
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    if bytes.is_empty() {
        return out;
    }
    for (idx, raw_line) in bytes.split(|&b| b == b'\n').enumerate() {
        let place = || format!("{name}:{}", first_line + idx as u64);
        let line = match std::str::from_utf8(raw_line) {
            Ok(line) => line,
            Err(e) => {
                let at = e.valid_up_to();
                let byte = raw_line.get(at).copied().unwrap_or_default();
                out.rejected.push(Rejected {
                    place: place(),
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
            place: place(),
            url: clip(&crate::urls::redact_userinfo(raw)),
            reason: clip(&reason),
        };
        let url = match policy.check_seed(raw) {
            Ok(u) => u,
            Err(e) => {
                out.rejected.push(reject(format!("{} ({})", e, e.code())));
                continue;
            }
        };
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        let mut seed = Seed {
            url: String::from(url),
            host,
            score: cfg.inject.score,
            fetch_interval: None,
            metadata: Vec::new(),
        };
        match apply_keys(&mut seed, tokens) {
            Ok(()) => {
                out.accepted += 1;
                let p = parts.of_host(&seed.host);
                out.parts[p].push(seed);
            }
            Err(why) => out.rejected.push(reject(why)),
        }
    }
    out
}

/// The URL policy of inject: `[urls]`, except that seeds define the scope and are
/// not themselves subject to it.
pub fn seed_policy(cfg: &Config) -> Result<UrlPolicy> {
    let mut ucfg = cfg.urls.clone();
    ucfg.scope = crate::config::UrlScope::Any;
    UrlPolicy::new(&ucfg, &[])
}

/// Parses a whole seed input into datums (normalized, filtered), in line order;
/// rejects are returned apart. `name` names the input in `name:line` places. A
/// leading byte order mark is skipped; a line that is not UTF-8 is rejected with
/// its number and the rest is read. (inject itself streams: see [`run`].)
pub fn parse_seeds(
    name: &str,
    bytes: &[u8],
    cfg: &Config,
    now: Millis,
) -> Result<(Vec<CrawlDatum>, Vec<Rejected>)> {
    let policy = seed_policy(cfg)?;
    let bytes = bytes.strip_prefix(BOM).unwrap_or(bytes);
    let block = parse_block(name, 1, bytes, &policy, cfg, Partitioner::by_host(1));
    let rows = block
        .parts
        .into_iter()
        .flatten()
        .map(|s| s.into_datum(cfg, now))
        .collect();
    Ok((rows, block.rejected))
}

fn apply_keys<'a>(
    seed: &mut Seed,
    tokens: impl Iterator<Item = &'a str>,
) -> std::result::Result<(), String> {
    for kv in tokens {
        let Some((k, v)) = kv.split_once('=') else {
            return Err(format!("malformed metadata {kv:?}: expected key=value"));
        };
        match k {
            "score" => match v.parse::<f64>() {
                Ok(s) if s.is_finite() => seed.score = s,
                _ => return Err(format!("score={v:?} is not a finite number")),
            },
            "fetch_interval" => match v.parse::<i64>() {
                Ok(i) if (1..=MAX_INTERVAL_SECS).contains(&i) => seed.fetch_interval = Some(i),
                _ => {
                    return Err(format!(
                        "fetch_interval={v:?} is not an integer from 1 to {MAX_INTERVAL_SECS} seconds"
                    ));
                }
            },
            "" => return Err(format!("malformed metadata {kv:?}: empty key")),
            _ => seed.metadata.push((k.to_string(), v.to_string())),
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
            self.injected, self.known, self.rejected, self.rows
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

/// Bytes of seed input read at a time (cut at the last line end in it).
const BLOCK_BYTES: usize = 4 << 20;

/// Reads an input as blocks of whole lines, numbering them.
struct LineBlocks {
    input: Box<dyn Read>,
    name: String,
    /// Bytes read after the last line end so far (the start of the next block).
    carry: Vec<u8>,
    /// The number of the next block's first line.
    next_line: u64,
    started: bool,
    done: bool,
    /// Bytes read at a time ([`BLOCK_BYTES`]).
    block: usize,
}

impl LineBlocks {
    fn open(input: &SeedInput) -> Result<Self> {
        let name = input.name();
        let reader: Box<dyn Read> = match input {
            SeedInput::File(p) => Box::new(std::fs::File::open(p).map_err(|e| {
                Error::input(
                    &name,
                    format!("cannot read the seed input ({e}); nothing was injected"),
                )
            })?),
            SeedInput::Stdin => Box::new(std::io::stdin()),
        };
        Ok(LineBlocks {
            input: reader,
            name,
            carry: Vec::new(),
            next_line: 1,
            started: false,
            done: false,
            block: BLOCK_BYTES,
        })
    }

    /// The next block of whole lines and its first line's number; `None` at the end.
    fn next_block(&mut self) -> Result<Option<(u64, Vec<u8>)>> {
        if self.done {
            return Ok(None);
        }
        let mut buf = std::mem::take(&mut self.carry);
        let mut searched = 0;
        loop {
            let have = buf.len();
            buf.resize(have + self.block, 0);
            let n = read_full(&mut self.input, &mut buf[have..]).map_err(|e| {
                Error::input(
                    &self.name,
                    format!("cannot read the seed input ({e}); nothing was injected"),
                )
            })?;
            buf.truncate(have + n);
            if !self.started {
                self.started = true;
                if buf.starts_with(BOM) {
                    buf.drain(..BOM.len());
                }
            }
            if n == 0 {
                self.done = true;
                break;
            }
            // Cut after the last line end; a block without one (a line longer than a
            // block) reads on.
            if let Some(end) = buf[searched..].iter().rposition(|&b| b == b'\n') {
                self.carry = buf.split_off(searched + end + 1);
                break;
            }
            searched = buf.len();
        }
        if buf.is_empty() {
            return Ok(None);
        }
        let first = self.next_line;
        self.next_line += buf.iter().filter(|&&b| b == b'\n').count() as u64;
        Ok(Some((first, buf)))
    }
}

/// Reads until `buf` is full or the input ends; the bytes read.
fn read_full(input: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match input.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Phase 1 of inject: every input parsed in parallel blocks, seeds sorted by URL per
/// partition in sorters bounded by `inject.sort_buffer_rows` (spilling sorted runs
/// into `spill_dir`). Rejects go to `on_reject` in input order.
struct SeedSort {
    sorters: Vec<Sorter<Seed>>,
    /// The crawl's partitioning.
    pt: Partitioner,
    /// The partitions kept (a task's); the others' seeds are dropped.
    keep: Vec<bool>,
    /// Whether rejected lines are counted and reported (by one task of a job only).
    rejects: bool,
    budget: usize,
    buffered: usize,
}

impl SeedSort {
    fn new(spill_dir: &std::path::Path, pt: Partitioner, keep: &[usize], budget: usize) -> Self {
        let parts = pt.n();
        let mut mask = vec![false; parts];
        for &i in keep {
            if let Some(m) = mask.get_mut(i) {
                *m = true;
            }
        }
        SeedSort {
            sorters: (0..parts)
                .map(|i| Sorter::new(spill_dir, &format!("inject-{i:05}")))
                .collect(),
            pt,
            rejects: mask.first().copied().unwrap_or(true),
            keep: mask,
            budget: budget.max(1),
            buffered: 0,
        }
    }

    fn push(&mut self, block: ParsedBlock) -> Result<()> {
        for ((sorter, seeds), keep) in self.sorters.iter_mut().zip(block.parts).zip(&self.keep) {
            if !keep {
                continue;
            }
            self.buffered += seeds.len();
            for seed in seeds {
                sorter.push(seed);
            }
        }
        if self.buffered >= self.budget {
            self.sorters.par_iter_mut().try_for_each(|s| s.spill())?;
            self.buffered = 0;
        }
        Ok(())
    }

    /// Reads every input; returns the per-input reports.
    fn read_all(
        &mut self,
        inputs: &[SeedInput],
        cfg: &Config,
        on_reject: &mut dyn FnMut(&Rejected),
    ) -> Result<(Vec<InputReport>, u64)> {
        let policy = seed_policy(cfg)?;
        let parts = self.pt;
        // Blocks parsed at once: enough to keep every thread busy.
        let group = 2 * rayon::current_num_threads().max(1);
        let mut reports = Vec::new();
        let mut rejected_all = 0;
        for input in inputs {
            let mut blocks = LineBlocks::open(input)?;
            let name = input.name();
            let mut report = InputReport {
                name: name.clone(),
                ..InputReport::default()
            };
            loop {
                super::interrupted("inject")?;
                let mut batch = Vec::with_capacity(group);
                while batch.len() < group {
                    match blocks.next_block()? {
                        Some(b) => batch.push(b),
                        None => break,
                    }
                }
                if batch.is_empty() {
                    break;
                }
                let parsed: Vec<ParsedBlock> = batch
                    .par_iter()
                    .map(|(first, bytes)| parse_block(&name, *first, bytes, &policy, cfg, parts))
                    .collect();
                for block in parsed {
                    report.accepted += block
                        .parts
                        .iter()
                        .zip(&self.keep)
                        .filter(|(_, k)| **k)
                        .map(|(p, _)| p.len() as u64)
                        .sum::<u64>();
                    if self.rejects {
                        report.rejected += block.rejected.len() as u64;
                        block.rejected.iter().for_each(&mut *on_reject);
                    }
                    self.push(block)?;
                }
            }
            rejected_all += report.rejected;
            reports.push(report);
        }
        Ok((reports, rejected_all))
    }
}

/// Injects the seeds of `opts.inputs` into the crawl directory of `ctx` (created if
/// needed), streaming: the inputs are read in blocks parsed in parallel, the seeds
/// sorted per host partition within `inject.sort_buffer_rows` (sorted runs spill to
/// the staged crawldb version) and merged with the crawldb part by part. Each
/// rejected line is handed to `on_reject` as it is met. Nothing is installed until
/// every input was read: an unreadable input injects nothing. Runs as
/// [`crate::stage::execute`] splits it: one process (one task over every partition, then
/// its commit, under the crawldb lock held throughout), a task of a job (no lock,
/// output in its attempt) or a job's commit.
pub fn run(
    ctx: &StageCtx,
    opts: &InjectOpts,
    on_reject: &mut dyn FnMut(&Rejected),
) -> Result<InjectReport> {
    let dir = ctx.crawl_dir();
    std::fs::create_dir_all(dir.crawldb()).map_err(|e| Error::io(dir.crawldb(), e))?;
    crate::stage::execute(ctx, Guard::CrawlDb(Verify::Whole), || {
        Ok(Inject {
            ctx,
            opts,
            on_reject,
            dir: &dir,
            n: super::meta_or_new(&dir, ctx.config())?.1.partitions,
        })
    })
}

/// The inject stage as the executor runs it ([`crate::stage::execute`]).
struct Inject<'a, 'r> {
    ctx: &'a StageCtx,
    opts: &'a InjectOpts,
    on_reject: &'a mut (dyn FnMut(&Rejected) + 'r),
    dir: &'a CrawlDir,
    n: usize,
}

impl Partitioned for Inject<'_, '_> {
    type Out = InjectReport;
    const NAME: &'static str = "inject";

    fn partitions(&self) -> usize {
        self.n
    }

    fn task(
        &mut self,
        job: &Job,
        partitions: &PartitionSet,
        attempt: &str,
    ) -> Result<InjectReport> {
        let dir = self.dir;
        if self.ctx.is_whole() {
            check_space(
                dir,
                &self.opts.inputs,
                self.ctx.config().inject.sort_buffer_rows,
            )?;
        } else if parquet::dataset_complete(&dir.crawldb_current()) {
            // Only this task's parts are read: their checksums (every size).
            dir.refuse_unmarked_crawldb()?;
            let mine = |name: &str| {
                partitions
                    .iter()
                    .any(|i| parquet::is_partition_file(name, i))
            };
            integrity::verify_parts(&dir.crawldb_current(), integrity::Check::Checksums, &mine)?;
        }
        let w = job.attempt_writer(partitions, attempt)?;
        let out = w.dataset(super::TASK_DATASET)?;
        let parts: Vec<usize> = partitions.iter().collect();
        let task = run_task(self.ctx, self.opts, &parts, &out, &mut *self.on_reject)?;
        super::finish_attempt(w, &task)?;
        Ok(task.summary())
    }

    fn commit(&mut self, job: &Job) -> Result<InjectReport> {
        commit(
            self.dir,
            self.ctx.config(),
            &super::chosen_parts(job, self.n)?,
        )
    }
}

/// What one inject task did (its attempt's report): its partitions' counts, their
/// seed hosts, and the crawldb version it merged the seeds into.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InjectTaskReport {
    /// The crawldb version read ([`crate::crawldb::version_id`]; empty: none yet).
    pub crawldb_version: String,
    /// Its partitions.
    pub partitions: Vec<usize>,
    /// The hosts of its seeds, sorted.
    pub seed_hosts: Vec<String>,
    /// New URLs.
    pub injected: u64,
    /// Seeds already known or repeated.
    pub known: u64,
    /// Rows of its parts.
    pub rows: u64,
    /// Rejected lines (counted by the task holding partition 0 only).
    pub rejected: u64,
    /// Per input: its partitions' accepted seeds (and the rejects, see above).
    pub inputs: Vec<(String, u64, u64)>,
    /// Sorted runs spilled.
    pub runs: u64,
    /// Bytes spilled.
    pub spilled_bytes: u64,
}

impl InjectTaskReport {
    /// The stage's report of this task alone.
    pub fn summary(&self) -> InjectReport {
        InjectReport {
            injected: self.injected,
            known: self.known,
            rejected: self.rejected,
            rows: self.rows,
            inputs: self
                .inputs
                .iter()
                .map(|(name, accepted, rejected)| InputReport {
                    name: name.clone(),
                    accepted: *accepted,
                    rejected: *rejected,
                })
                .collect(),
            runs: self.runs,
            spilled_bytes: self.spilled_bytes,
        }
    }
}

/// An inject task: reads every input, keeps the seeds of the partitions `parts`
/// and merges them into those crawldb parts, written into `out`. Rejected lines are
/// handed to `on_reject` (and counted) only by the task holding partition 0, so a
/// job reports each once. Takes no lock and installs nothing.
fn run_task(
    ctx: &StageCtx,
    opts: &InjectOpts,
    parts: &[usize],
    out: &std::path::Path,
    on_reject: &mut dyn FnMut(&Rejected),
) -> Result<InjectTaskReport> {
    let cfg = ctx.config();
    let now = now_millis();
    let dir = ctx.crawl_dir();
    let (exists, meta) = super::meta_or_new(&dir, cfg)?;
    let n = meta.partitions;
    if let Some(bad) = parts.iter().find(|&&i| i >= n) {
        return Err(Error::crawl_dir(
            dir.crawldb(),
            format!("partition {bad} does not exist: the crawldb has {n} partitions"),
        ));
    }
    let version = super::version_id(&dir)?;
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let mut sort = SeedSort::new(out, meta.partitioner(), parts, cfg.inject.sort_buffer_rows);
    let (inputs, rejected) = sort.read_all(&opts.inputs, cfg, on_reject)?;
    let runs = sort.sorters.iter().map(|s| s.runs() as u64).sum();
    let spilled_bytes = sort.sorters.iter().map(|s| s.spilled_bytes()).sum();
    if runs > 0 {
        tracing::info!(
            "seeds beyond inject.sort_buffer_rows = {}: merging {runs} sorted runs ({spilled_bytes} bytes) spilled to {}",
            sort.budget,
            out.display()
        );
    }
    // Each partition's sorter is taken by the thread that writes the partition.
    let sorters: Vec<Mutex<Option<Sorter<Seed>>>> = sort
        .sorters
        .into_iter()
        .map(|s| Mutex::new(Some(s)))
        .collect();
    let pb = crate::cli::progress_bar(parts.len() as u64, "inject");
    let counts = parts
        .par_iter()
        .map(|&i| {
            super::interrupted("inject")?;
            let sorter = sorters[i].lock().ok().and_then(|mut s| s.take());
            let seeds = sorter
                .ok_or_else(|| {
                    Error::crawl_dir(dir.crawldb(), "internal: a partition written twice")
                })?
                .finish()?;
            let mut w = PartWriter::<CrawlDatum>::create(&out.join(parquet::part_name(i)))?;
            let c = run_partition(&dir, i, exists, seeds, &mut w, cfg, now)?;
            w.finish()?;
            pb.inc(1);
            Ok(c)
        })
        .collect::<Result<Vec<PartCounts>>>()?;
    pb.finish_and_clear();
    let mut hosts = BTreeSet::new();
    let mut task = InjectTaskReport {
        crawldb_version: version,
        partitions: parts.to_vec(),
        rejected,
        inputs: inputs
            .into_iter()
            .map(|i| (i.name, i.accepted, i.rejected))
            .collect(),
        runs,
        spilled_bytes,
        ..InjectTaskReport::default()
    };
    for c in counts {
        task.injected += c.injected;
        task.known += c.known;
        task.rows += c.rows;
        hosts.extend(c.hosts);
    }
    task.seed_hosts = hosts.into_iter().collect();
    Ok(task)
}

/// The commit of an inject job, under the crawldb lock: checks every task merged
/// into the version current now, links their parts (`(dir holding
/// part-NNNNN.parquet, report)`, every partition once) into a new version whose seed
/// hosts are the union of the old ones and the tasks', installs it and returns the
/// summed report.
fn commit(
    dir: &CrawlDir,
    cfg: &Config,
    tasks: &[(PathBuf, InjectTaskReport)],
) -> Result<InjectReport> {
    let (_, mut meta) = super::meta_or_new(dir, cfg)?;
    let version = super::version_id(dir)?;
    let mut report = InjectReport::default();
    let mut hosts: BTreeSet<String> = meta.seed_hosts.drain(..).collect();
    for (path, t) in tasks {
        super::check_version(dir, path, &t.crawldb_version, &version)?;
        hosts.extend(t.seed_hosts.iter().cloned());
        let s = t.summary();
        report.injected += s.injected;
        report.known += s.known;
        report.rejected += s.rejected;
        report.rows += s.rows;
        report.runs += s.runs;
        report.spilled_bytes += s.spilled_bytes;
        for (k, input) in s.inputs.into_iter().enumerate() {
            match report.inputs.get_mut(k) {
                Some(r) => {
                    r.accepted += input.accepted;
                    r.rejected += input.rejected;
                }
                None => report.inputs.push(input),
            }
        }
    }
    meta.seed_hosts = hosts.into_iter().collect();
    let parts: Vec<(&std::path::Path, &[usize])> = tasks
        .iter()
        .map(|(p, t)| (p.as_path(), t.partitions.as_slice()))
        .collect();
    super::install_parts(dir, &parts, &mut meta, "inject")?;
    Ok(report)
}

/// The average length of a seed line, in bytes, for estimates.
const SEED_LINE_BYTES: u64 = 40;

/// Refuses to start when the disk holding the crawldb cannot take the new version
/// and the sort spill: the spill is about 1.8 times the seed text when the seeds
/// exceed `buffer_rows` (counted as twice it, for a merge pass over more than
/// [`spill::MAX_FAN_IN`](crate::crawldb::spill::MAX_FAN_IN) runs), the new version
/// the current one plus half the seed text (URLs compress well in Parquet).
/// Standard input's size is not known beforehand: it counts as nothing.
fn check_space(dir: &CrawlDir, inputs: &[SeedInput], buffer_rows: usize) -> Result<()> {
    let text: u64 = inputs
        .iter()
        .map(|i| match i {
            SeedInput::File(p) => std::fs::metadata(p).map_or(0, |m| m.len()),
            SeedInput::Stdin => 0,
        })
        .sum();
    let version = disk::dataset_bytes(&dir.crawldb_current())? + text / 2;
    let spill = if text / SEED_LINE_BYTES > buffer_rows as u64 {
        2 * text
    } else {
        0
    };
    disk::ensure_crawldb_space(dir, "inject", version, spill, "the seeds")
}

/// What one partition of inject did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartCounts {
    /// The hosts of its seeds (known ones included), sorted.
    pub hosts: Vec<String>,
    /// New URLs written.
    pub injected: u64,
    /// Seeds already in the crawldb part or repeated in the inputs.
    pub known: u64,
    /// Rows of the new part.
    pub rows: u64,
}

/// Merges the sorted seeds of partition `i` (the first of equal URLs wins, the
/// others count as known) into crawldb part `i` (when the crawldb `exists`),
/// writing the new part to `w`; URLs already known keep their row.
pub fn run_partition(
    dir: &CrawlDir,
    i: usize,
    exists: bool,
    seeds: impl Iterator<Item = Result<Seed>>,
    w: &mut PartWriter<CrawlDatum>,
    cfg: &Config,
    now: Millis,
) -> Result<PartCounts> {
    let mut db = if exists {
        DatumStream::open(&current_part(dir, i))?
    } else {
        DatumStream::empty()
    };
    let mut c = PartCounts::default();
    // The previous seed's URL (a reused buffer); equal URLs are adjacent.
    let mut last = String::new();
    let mut first = true;
    for seed in seeds {
        let seed = seed?;
        if c.hosts.last() != Some(&seed.host) {
            c.hosts.push(seed.host.clone());
        }
        if !first && last == seed.url {
            c.known += 1;
            continue;
        }
        first = false;
        last.clear();
        last.push_str(&seed.url);
        while db.peek_url().is_some_and(|u| u < seed.url.as_str()) {
            if let Some(row) = db.next_row()? {
                c.rows += 1;
                w.push(row)?;
            }
        }
        if db.peek_url() == Some(seed.url.as_str()) {
            c.known += 1;
        } else {
            c.injected += 1;
            c.rows += 1;
            w.push(seed.into_datum(cfg, now))?;
        }
    }
    while let Some(row) = db.next_row()? {
        c.rows += 1;
        w.push(row)?;
    }
    // Hosts come in runs of URLs (one per scheme and port).
    c.hosts.sort_unstable();
    c.hosts.dedup();
    Ok(c)
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

    fn blocks(bytes: &'static [u8], block: usize) -> Vec<(u64, String)> {
        let mut b = LineBlocks {
            input: Box::new(bytes),
            name: "in".into(),
            carry: Vec::new(),
            next_line: 1,
            started: false,
            done: false,
            block,
        };
        let mut out = Vec::new();
        while let Some((line, bytes)) = b.next_block().unwrap() {
            out.push((line, String::from_utf8(bytes).unwrap()));
        }
        out
    }

    #[test]
    fn blocks_are_whole_numbered_lines() {
        let text = b"\xEF\xBB\xBFa\nbb\nccccccccc\nd\n\ne";
        // The BOM is dropped; blocks end at a line end (a line longer than a block
        // is read whole); each carries its first line's number.
        let want = [(1, "a\nbb\n"), (3, "ccccccccc\nd\n"), (5, "\n"), (6, "e")];
        let want: Vec<(u64, String)> = want.iter().map(|(l, s)| (*l, s.to_string())).collect();
        assert_eq!(blocks(text, 4), want);
        assert_eq!(blocks(b"a\nb\n", 1 << 20), vec![(1, "a\nb\n".to_string())]);
        assert_eq!(blocks(b"", 4), Vec::<(u64, String)>::new());
        assert_eq!(blocks(b"\xEF\xBB\xBF", 4), Vec::<(u64, String)>::new());
    }

    /// Injects `text` cut into inputs of `lines` lines each (`NNN.seeds`).
    fn inject_into(
        dir: &std::path::Path,
        cfg: &Config,
        text: &str,
        lines: usize,
    ) -> (InjectReport, Vec<String>) {
        let seeds = dir.with_extension("seeds");
        std::fs::create_dir_all(&seeds).unwrap();
        let all: Vec<&str> = text.lines().collect();
        let mut inputs = Vec::new();
        for (i, chunk) in all.chunks(lines).enumerate() {
            let path = seeds.join(format!("{i:03}.seeds"));
            std::fs::write(&path, chunk.join("\n")).unwrap();
            inputs.push(SeedInput::File(path));
        }
        let ctx = StageCtx::new(dir, cfg.clone());
        let opts = InjectOpts { inputs };
        let mut rejected = Vec::new();
        let report = run(&ctx, &opts, &mut |r| rejected.push(r.to_string())).unwrap();
        (report, rejected)
    }

    fn crawldb_rows(dir: &std::path::Path) -> Vec<CrawlDatum> {
        let crawl = CrawlDir::new(dir);
        let mut rows = Vec::new();
        for p in crate::store::parquet::part_files(&crawl.crawldb_current()).unwrap() {
            rows.extend(crate::store::parquet::read_part_all::<CrawlDatum>(&p).unwrap());
        }
        rows
    }

    #[test]
    fn spilled_runs_give_the_crawldb_of_one_sort() {
        let tmp = tempfile::tempdir().unwrap();
        let mut text = String::new();
        for i in 0..3000 {
            // Repeats with another score: the first line of a URL wins.
            let j = i % 2500;
            text.push_str(&format!("http://h{}.test/p{j} score={i}\n", j % 37));
        }
        text.push_str("not a url\n");
        let mut big = Config::default();
        big.crawl.partitions = 5;
        let mut small = big.clone();
        small.inject.sort_buffer_rows = 7;
        // Every input is at least one block: 60 inputs spill 60 times.
        let (a, rej_a) = inject_into(&tmp.path().join("a"), &big, &text, 50);
        let (b, rej_b) = inject_into(&tmp.path().join("b"), &small, &text, 50);
        assert_eq!(a.runs, 0);
        assert!(b.runs > 100, "{} runs: more than one merge pass", b.runs);
        assert_eq!(
            (a.injected, a.known, a.rejected, a.rows),
            (2500, 500, 1, 2500)
        );
        assert_eq!(
            (b.injected, b.known, b.rejected, b.rows),
            (2500, 500, 1, 2500)
        );
        assert_eq!(rej_a.len(), 1);
        assert!(
            rej_a[0].contains("a.seeds/060.seeds:1: rejected not: "),
            "{rej_a:?}"
        );
        assert_eq!(rej_a[0].replace("a.seeds", "b.seeds"), rej_b[0]);
        let strip = |rows: Vec<CrawlDatum>| -> Vec<(String, f64, String)> {
            rows.into_iter().map(|d| (d.url, d.score, d.host)).collect()
        };
        let (ra, rb) = (
            strip(crawldb_rows(&tmp.path().join("a"))),
            strip(crawldb_rows(&tmp.path().join("b"))),
        );
        assert_eq!(ra, rb);
        assert!(
            ra.iter()
                .any(|(u, s, _)| u == "http://h3.test/p3" && *s == 3.0),
            "first line wins"
        );
        // No spill file is left in the installed version.
        let names: Vec<String> =
            std::fs::read_dir(CrawlDir::new(tmp.path().join("b")).crawldb_current())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
        assert!(names.iter().all(|n| !n.ends_with(".spill")), "{names:?}");
        // Known URLs keep their record; the seed hosts are remembered.
        let (again, _) = inject_into(
            &tmp.path().join("b"),
            &small,
            "http://h3.test/p3 score=9\nhttp://new.test/\n",
            10,
        );
        assert_eq!((again.injected, again.known, again.rows), (1, 1, 2501));
        let rows = crawldb_rows(&tmp.path().join("b"));
        assert!(
            rows.iter()
                .any(|d| d.url == "http://h3.test/p3" && d.score == 3.0)
        );
        let meta = CrawlDir::new(tmp.path().join("b")).crawldb_meta().unwrap();
        assert_eq!(meta.seed_hosts.len(), 38);
        assert!(meta.seed_hosts.windows(2).all(|w| w[0] < w[1]));
    }
}
