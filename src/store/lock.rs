//! Lock files: who may write a dataset or a segment right now.
//!
//! A lock is a small JSON file created atomically (written under a temporary name,
//! then hard-linked to the lock's name, which fails if the lock exists) and removed
//! when the [`Lock`] is dropped:
//!
//! ```json
//! {
//!   "pid": 4242,
//!   "host": "crawler-1",
//!   "stage": "fetch",
//!   "since": "2026-11-24T05:30:00.123456789+00:00",
//!   "start_time": 46012,
//!   "boot_id": "7ddcc42d-f1aa-49a9-a333-2dc3e3793511"
//! }
//! ```
//!
//! `start_time` is the holder's start time in clock ticks since boot (field 22 of
//! `/proc/<pid>/stat`) and `boot_id` the kernel's boot id
//! (`/proc/sys/kernel/random/boot_id`); both are `null` where `/proc` does not tell.
//! Together with the pid they name one process for good: a pid the kernel handed to
//! another process later has another start time, and a reboot changes the boot id.
//!
//! A stage finding the lock taken judges the holder ([`Holder::state`]):
//! - on another host: it cannot tell, so it refuses, naming the holder and the file to
//!   delete if no such process runs there;
//! - on this host, the holder is **stale** when the machine rebooted since (boot id),
//!   the pid is gone (or a zombie), or the pid now belongs to a process that started at
//!   another time (pid reuse): the stale lock is reported with a warning and taken over;
//! - otherwise the holder is **live** and the stage refuses with [`Error::Locked`]
//!   (exit code 6), naming its stage, pid, host and since when it holds the lock.
//!
//! Lock files written before this format (`pid=`, `host=`, `stage=`, `since=` lines)
//! are still understood and judged by pid and host alone, as they were.
//!
//! Taking over is safe against two stages doing it at once: the stale file is renamed
//! away (only one rename can succeed) and checked to be the one judged stale; a fresh
//! lock moved by mistake is put back.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, IoContext, Result};
use crate::store::layout::Segment;
use crate::store::names::{self, VersionedDb};

/// An exclusive lock on a dataset or a segment, held while a stage writes it;
/// released (the file removed) on drop.
#[derive(Debug)]
pub struct Lock {
    path: PathBuf,
    body: String,
}

/// What a lock file says about the process holding it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// The holder's process id.
    pub pid: u32,
    /// The host it runs on.
    pub host: String,
    /// The stage (or tool) holding the lock.
    pub stage: String,
    /// When it took the lock (RFC 3339, UTC).
    pub since: String,
    /// The process's start time in clock ticks since boot (`/proc/<pid>/stat` field
    /// 22), if known.
    #[serde(default)]
    pub start_time: Option<u64>,
    /// The boot id of the host when the lock was taken, if known.
    #[serde(default)]
    pub boot_id: Option<String>,
}

/// What a lock's holder is, seen from this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HolderState {
    /// A running process on this host: the lock is held.
    Live,
    /// The holder is gone; the reason says how we know.
    Stale(String),
    /// The holder runs on another host (or this system has no `/proc`): it cannot be
    /// checked from here.
    Unknown,
}

impl Holder {
    /// This process, taking a lock for `stage` now.
    pub fn me(stage: &str) -> Holder {
        let pid = std::process::id();
        Holder {
            pid,
            host: hostname(),
            stage: stage.to_string(),
            since: chrono::Utc::now().to_rfc3339(),
            start_time: process_start_time(pid),
            boot_id: boot_id(),
        }
    }

    /// Reads a lock file's text: the JSON format, or the older `key=value` lines
    /// (which have no start time and no boot id). `None` when it is neither.
    pub fn parse(text: &str) -> Option<Holder> {
        if text.trim_start().starts_with('{') {
            return serde_json::from_str(text).ok();
        }
        let field = |k: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(k).and_then(|r| r.strip_prefix('=')))
                .map(|v| v.trim().to_string())
        };
        Some(Holder {
            pid: field("pid")?.parse().ok()?,
            host: field("host")?,
            stage: field("stage").unwrap_or_else(|| "?".into()),
            since: field("since").unwrap_or_else(|| "?".into()),
            start_time: None,
            boot_id: None,
        })
    }

    /// Judges whether the holder still runs (see the module doc).
    pub fn state(&self) -> HolderState {
        if self.host != hostname() {
            return HolderState::Unknown;
        }
        if let (Some(theirs), Some(ours)) = (&self.boot_id, boot_id())
            && *theirs != ours
        {
            return HolderState::Stale(format!(
                "the host has rebooted since (boot id {theirs}, now {ours})"
            ));
        }
        match process_state(self.pid) {
            ProcState::NoProc => HolderState::Unknown,
            ProcState::Gone => HolderState::Stale(format!("pid {} no longer exists", self.pid)),
            ProcState::Zombie => HolderState::Stale(format!(
                "pid {} has exited (a zombie waiting for its parent)",
                self.pid
            )),
            ProcState::Running(now) => match (self.start_time, now) {
                (Some(then), Some(now)) if then != now => HolderState::Stale(format!(
                    "pid {} is now another process (started at tick {now} since boot, the holder at tick {then}): the pid was reused",
                    self.pid
                )),
                _ => HolderState::Live,
            },
        }
    }

    /// `fetch (pid 4242 on host h, since 2026-...)`.
    pub fn describe(&self) -> String {
        format!(
            "{} (pid {} on host {}, since {})",
            self.stage, self.pid, self.host, self.since
        )
    }
}

impl Lock {
    /// Takes the lock at `path` for `stage`. A lock held by a live process is an
    /// [`Error::Locked`] that names it; a stale lock (its holder is gone, or its pid
    /// now belongs to another process) is reported and taken over. See the module doc.
    pub fn acquire(path: &Path, stage: &str) -> Result<Lock> {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).at(parent)?;
        }
        let me = Holder::me(stage);
        let body = serde_json::to_string_pretty(&me)
            .map_err(|e| Error::io(path, std::io::Error::other(e)))?
            + "\n";
        let new = sibling(path, &format!("new-{}", me.pid));
        write_file(&new, &body)?;
        let taken = Lock::take(path, &new, &body);
        let _ = fs::remove_file(&new);
        taken
    }

    fn take(path: &Path, new: &Path, body: &str) -> Result<Lock> {
        for _ in 0..5 {
            match link_or_create(new, path, body) {
                Ok(()) => {
                    return Ok(Lock {
                        path: path.to_path_buf(),
                        body: body.to_string(),
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(Error::io(path, e)),
            }
            let Some(text) = read_settled(path)? else {
                continue; // released meanwhile
            };
            let Some(holder) = Holder::parse(&text) else {
                return Err(Error::Locked {
                    path: path.to_path_buf(),
                    message: format!(
                        "the lock file is not readable as a lock ({:?}); if no trawl stage is running, delete {} and rerun",
                        cut(&text, 120),
                        path.display()
                    ),
                });
            };
            match holder.state() {
                HolderState::Stale(why) => {
                    tracing::warn!(
                        "stale lock {}: {} did not release it and {why}; taking it over",
                        path.display(),
                        holder.describe()
                    );
                    take_over(path, &text)?;
                }
                HolderState::Live => return Err(held(path, &holder)),
                HolderState::Unknown => return Err(held_elsewhere(path, &holder)),
            }
        }
        Err(Error::Locked {
            path: path.to_path_buf(),
            message: format!(
                "could not take the lock (other processes keep taking it); if no trawl stage is running, delete {} and rerun",
                path.display()
            ),
        })
    }

    /// Fails with [`Error::Locked`] when a live process holds the lock at `path`, for
    /// a stage (`reader`) that only reads what the lock protects: it must not read
    /// data being written. A stale lock is left alone (its next taker reports it).
    pub fn check(path: &Path, reader: &str) -> Result<()> {
        let Some(text) = read_settled(path)? else {
            return Ok(());
        };
        let Some(holder) = Holder::parse(&text) else {
            return Err(Error::Locked {
                path: path.to_path_buf(),
                message: format!(
                    "{reader} cannot tell who holds it (the lock file is not readable as a lock: {:?}); if no trawl stage is running, delete {} and rerun",
                    cut(&text, 120),
                    path.display()
                ),
            });
        };
        match holder.state() {
            HolderState::Stale(why) => {
                tracing::info!(
                    "stale lock {} ({} did not release it and {why}): reading anyway",
                    path.display(),
                    holder.describe()
                );
                Ok(())
            }
            HolderState::Live => Err(held(path, &holder)),
            HolderState::Unknown => Err(held_elsewhere(path, &holder)),
        }
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        // Only our own lock: if it was taken over meanwhile, the file is another's.
        if fs::read_to_string(&self.path).is_ok_and(|t| t == self.body) {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Removes the lock file at `path` if its holder is gone (see [`Holder::state`]),
/// and a lock's temporary file (`<lock>.new-<pid>`, `<lock>.stale-<pid>`) whose
/// process no longer exists; returns whether it removed something. For clean-ups of
/// what killed runs left (a lock nobody will take again, such as that of a segment
/// since deleted).
pub fn remove_if_stale(path: &Path) -> Result<bool> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Some((_, pid)) = name
        .rsplit_once(".lock.new-")
        .or_else(|| name.rsplit_once(".lock.stale-"))
    {
        let gone = pid
            .parse::<u32>()
            .is_ok_and(|p| matches!(process_state(p), ProcState::Gone | ProcState::Zombie));
        if gone {
            fs::remove_file(path).at(path)?;
        }
        return Ok(gone);
    }
    let Ok(text) = fs::read_to_string(path) else {
        return Ok(false);
    };
    match Holder::parse(&text).map(|h| h.state()) {
        Some(HolderState::Stale(why)) => {
            tracing::info!("removing stale lock {} ({why})", path.display());
            take_over(path, &text)?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// A lock file a command takes, as its registry entry declares it
/// ([`crate::cli::Command::locks`]): the executor refuses a guard its command does
/// not declare, and docs/architecture.md's table of locks is generated from the
/// declarations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockOn {
    /// The crawl driver's `crawl.lock`.
    Driver,
    /// A versioned dataset's `<dataset>/.lock`.
    Db(VersionedDb),
    /// The search index's `index/.lock` (or `.lock` in the directory `--index-dir` names).
    Index,
    /// A segment's `segments/<name>.lock`.
    Segment,
}

impl LockOn {
    /// Every lock, in the order a run that takes several takes them (the crawldb
    /// before the linkdb before a segment), so that two runs never wait for each other.
    pub const ALL: [LockOn; 7] = [
        LockOn::Driver,
        LockOn::Db(VersionedDb::CrawlDb),
        LockOn::Db(VersionedDb::LinkDb),
        LockOn::Db(VersionedDb::SitemapDb),
        LockOn::Db(VersionedDb::HostDb),
        LockOn::Index,
        LockOn::Segment,
    ];

    /// The lock file, relative to the crawl directory.
    pub fn file(self) -> String {
        match self {
            LockOn::Driver => names::CRAWL_LOCK.to_string(),
            LockOn::Db(db) => format!("{db}/{}", names::LOCK),
            LockOn::Index => format!("{}/{}", names::INDEX, names::LOCK),
            LockOn::Segment => format!("{}/<name>.{}", names::SEGMENTS, names::LOCK_EXT),
        }
    }

    /// What holding it guards against.
    pub fn purpose(self) -> &'static str {
        match self {
            LockOn::Driver => {
                "one crawl driver per crawl directory (its journal, STOP file and status)"
            }
            LockOn::Db(VersionedDb::CrawlDb) => {
                "rewriting the crawldb, or reading what must not change meanwhile (generate: so that two generates never hand out the same URLs; the segment tools: what is applied)"
            }
            LockOn::Db(VersionedDb::LinkDb) => "rewriting the linkdb or its `_meta.json`",
            LockOn::Db(VersionedDb::SitemapDb) => "rewriting the sitemapdb",
            LockOn::Db(VersionedDb::HostDb) => "rewriting the hostdb",
            LockOn::Index => "updating the search index (tantivy's own writer lock is taken too)",
            LockOn::Segment => {
                "writing into a segment, deleting from it, or reading it while nothing may change it (warc)"
            }
        }
    }

    /// Its place in [`LockOn::ALL`], the order locks are taken in.
    pub fn rank(self) -> usize {
        LockOn::ALL
            .iter()
            .position(|l| *l == self)
            .unwrap_or(LockOn::ALL.len())
    }
}

/// The lock of the segment at `segment_dir`: `<name>.lock` beside the segment's
/// directory (`segments/<name>.lock`), outside every dataset and present whether
/// or not the segment's directory exists yet.
pub fn segment_lock_path(segment_dir: &Path) -> PathBuf {
    let name = segment_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    segment_dir.with_file_name(format!("{name}.lock"))
}

impl Segment {
    /// The segment's lock file, `segments/<name>.lock` (see [`segment_lock_path`]).
    pub fn lock_path(&self) -> PathBuf {
        segment_lock_path(self.path())
    }

    /// Takes the segment's lock for `stage` (a stage that writes into it or deletes
    /// from it). Take it before removing anything a killed run left in the segment:
    /// only then is nobody else writing there.
    pub fn lock(&self, stage: &str) -> Result<Lock> {
        Lock::acquire(&self.lock_path(), stage).map_err(|e| with_segment(e, self.name()))
    }

    /// Fails with [`Error::Locked`] when a live stage holds the segment's lock: for
    /// `reader`, a stage that only reads the segment (see [`Lock::check`]).
    pub fn check_unlocked(&self, reader: &str) -> Result<()> {
        Lock::check(&self.lock_path(), reader).map_err(|e| with_segment(e, self.name()))
    }
}

fn with_segment(e: Error, name: &str) -> Error {
    match e {
        Error::Locked { path, message } => Error::Locked {
            path,
            message: format!("segment {name}: {message}"),
        },
        other => other,
    }
}

fn held(path: &Path, holder: &Holder) -> Error {
    Error::Locked {
        path: path.to_path_buf(),
        message: format!(
            "held by {}; wait for it to finish (or stop it), then rerun",
            holder.describe()
        ),
    }
}

fn held_elsewhere(path: &Path, holder: &Holder) -> Error {
    Error::Locked {
        path: path.to_path_buf(),
        message: format!(
            "held by {}, which cannot be checked from host {}; if no such process runs there, delete {} and rerun",
            holder.describe(),
            hostname(),
            path.display()
        ),
    }
}

/// `<path>.<suffix>` (the lock's temporary and stale names).
pub(super) fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!("{name}.{suffix}"))
}

fn write_file(path: &Path, body: &str) -> Result<()> {
    let mut f = fs::File::create(path).at(path)?;
    f.write_all(body.as_bytes()).at(path)?;
    f.sync_all().at(path)?;
    Ok(())
}

/// Creates `path` with the content of `new` atomically (a hard link, which fails
/// if `path` exists); where hard links are not supported, creates it exclusively
/// and writes `body`.
fn link_or_create(new: &Path, path: &Path, body: &str) -> std::io::Result<()> {
    match fs::hard_link(new, path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(e),
        Err(_) => {
            let mut f = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)?;
            f.write_all(body.as_bytes())?;
            f.sync_all()
        }
    }
}

/// The lock file's text, `None` when there is none. An empty or unparsable file is
/// re-read for up to a second: a writer without hard links may be filling it in.
fn read_settled(path: &Path) -> Result<Option<String>> {
    let mut tries = 0;
    loop {
        match fs::read_to_string(path) {
            Ok(t) => {
                if Holder::parse(&t).is_some() || tries >= 10 {
                    return Ok(Some(t));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(path, e)),
        }
        tries += 1;
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Removes the stale lock at `path` whose text was `judged`: renamed away first (of
/// two processes taking it over, only one rename succeeds), then checked; a lock
/// that is not the one judged stale (a fresh one, taken meanwhile) is put back.
pub(super) fn take_over(path: &Path, judged: &str) -> Result<()> {
    let stale = sibling(path, &format!("stale-{}", std::process::id()));
    match fs::rename(path, &stale) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(path, e)),
    }
    let moved = fs::read_to_string(&stale).unwrap_or_default();
    if moved != judged {
        // Not ours to remove: put it back unless yet another lock appeared.
        let _ = fs::hard_link(&stale, path);
    }
    fs::remove_file(&stale).at(&stale)?;
    Ok(())
}

fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

/// This host's name.
pub fn hostname() -> String {
    fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| fs::read_to_string("/etc/hostname"))
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// The kernel's boot id (changes at every boot), where `/proc` has it.
pub fn boot_id() -> Option<String> {
    fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The start time of process `pid` in clock ticks since boot (`/proc/<pid>/stat`
/// field 22), where `/proc` has it.
pub fn process_start_time(pid: u32) -> Option<u64> {
    match process_state(pid) {
        ProcState::Running(t) => t,
        _ => None,
    }
}

enum ProcState {
    /// This system has no `/proc`: liveness cannot be told.
    NoProc,
    /// No such process.
    Gone,
    /// Exited, not yet reaped.
    Zombie,
    /// Running (or sleeping, stopped...), with its start time if readable.
    Running(Option<u64>),
}

fn process_state(pid: u32) -> ProcState {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let (state, start) = parse_stat(&stat);
            if matches!(state, Some('Z' | 'X')) {
                ProcState::Zombie
            } else {
                ProcState::Running(start)
            }
        }
        Err(_) if Path::new("/proc/self/stat").is_file() => ProcState::Gone,
        Err(_) => ProcState::NoProc,
    }
}

/// The state letter (field 3) and start time (field 22) of a `/proc/<pid>/stat`
/// line. Field 2, the command name in parentheses, may hold spaces and
/// parentheses itself, so fields are counted after its last `)`.
fn parse_stat(stat: &str) -> (Option<char>, Option<u64>) {
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
        return (None, None);
    };
    let mut fields = rest.split_whitespace();
    let state = fields.next().and_then(|s| s.chars().next());
    // Fields 4..=21 come between the state (3) and the start time (22).
    let start = fields.nth(18).and_then(|s| s.parse().ok());
    (state, start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let line = "14040 (a) b) c) R 14037 14037 6900 0 -1 4194304 118 0 0 0 0 0 0 0 20 0 1 0 46012 3133440 358";
        assert_eq!(parse_stat(line), (Some('R'), Some(46012)));
        assert_eq!(parse_stat("garbage"), (None, None));
    }

    #[test]
    fn own_start_time_is_read() {
        let me = Holder::me("test");
        assert!(me.start_time.is_some());
        assert_eq!(me.state(), HolderState::Live);
        let other = Holder {
            start_time: me.start_time.map(|t| t + 1),
            ..me.clone()
        };
        assert!(matches!(other.state(), HolderState::Stale(w) if w.contains("reused")));
        let rebooted = Holder {
            boot_id: Some("not-this-boot".into()),
            ..me
        };
        assert!(matches!(rebooted.state(), HolderState::Stale(w) if w.contains("rebooted")));
    }

    #[test]
    fn old_format_is_read() {
        let h = Holder::parse("pid=12\nhost=h\nstage=updatedb\nsince=2020-01-01T00:00:00Z\n");
        assert_eq!(
            h,
            Some(Holder {
                pid: 12,
                host: "h".into(),
                stage: "updatedb".into(),
                since: "2020-01-01T00:00:00Z".into(),
                start_time: None,
                boot_id: None,
            })
        );
        assert_eq!(Holder::parse(""), None);
        assert_eq!(Holder::parse("{ not json"), None);
    }

    #[test]
    fn second_acquire_is_refused_and_drop_releases() {
        let dir = std::env::temp_dir().join(format!("trawl-lock-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let path = dir.join(".lock");
        let first = Lock::acquire(&path, "one");
        assert!(first.is_ok());
        let second = Lock::acquire(&path, "two");
        assert!(
            matches!(&second, Err(Error::Locked { message, .. }) if message.contains("held by one (pid"))
        );
        assert!(matches!(
            Lock::check(&path, "reader"),
            Err(Error::Locked { .. })
        ));
        drop(first);
        assert!(!path.exists());
        assert!(Lock::check(&path, "reader").is_ok());
        let third = Lock::acquire(&path, "three");
        assert!(third.is_ok());
        drop(third);
        let leftovers: Vec<_> = fs::read_dir(&dir)
            .map(|r| r.filter_map(|e| e.ok()).map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(leftovers.is_empty(), "left behind: {leftovers:?}");
        let _ = fs::remove_dir_all(&dir);
    }
}
