//! Leases: a partition fetched by at most one task at a time, across machines.
//!
//! A lease is a lock file with an expiry (`fetch_state/<n>/p<i>/fetch.lease`, see
//! [`super::layout::CrawlDir::fetch_lease`]), created exclusively like a
//! [`super::lock::Lock`] (written under a temporary name, then hard-linked to its
//! name, which fails if it exists) and removed when the [`Lease`] is dropped:
//!
//! ```json
//! {
//!   "job": "r2-fetch-5f3a",
//!   "attempt": "fetch-3-0",
//!   "pid": 4242,
//!   "host": "worker-1",
//!   "since": "2026-11-24T05:30:00.123456789+00:00",
//!   "expires": 1764048600123,
//!   "start_time": 46012,
//!   "boot_id": "7ddcc42d-f1aa-49a9-a333-2dc3e3793511"
//! }
//! ```
//!
//! `expires` (ms UTC) is when the holder has certainly stopped sending requests: with
//! a heartbeat ([`Heartbeat`], `fetch.lease_ttl`), a time to live after its last
//! renewal (the holder sends nothing once it could not renew in time); without one,
//! the fetch time limit plus the longest a request in flight may take after it (fetch
//! enforces its time limit itself, so a zombie task stops by then whatever happens
//! to it). `null` means "until released" (a one-process run without a time limit).
//!
//! A task finding the lease taken judges it:
//! - **expired** (`expires` in the past): taken over (a warning names the holder);
//! - **its holder is gone** (same host, the pid gone or reused, or the host
//!   rebooted: [`super::lock::Holder::state`]): taken over;
//! - otherwise the lease is **live**: the task waits for it to expire when it expires
//!   within the task's wait (`fetch.lease_wait`: a retry that meets the lease of the
//!   attempt it replaces, frozen or cut off, takes it over seconds later instead of
//!   failing), reading it again after each wait (a holder that renews it keeps it);
//!   when it does not, the task fails with [`Error::Locked`] (exit code 6) naming the
//!   holder and when the lease expires, so the scheduler retries it later.
//!
//! So a zombie attempt and its retry never fetch the same partition's hosts at once.
//!
//! On an object-store crawl directory the lease is an object of the store
//! ([`LeaseStore`], implemented by [`super::object::Mirror`]): it is created with a
//! conditional create (`If-None-Match: *`), and a lease judged expired is taken over
//! with a conditional update naming the version (e-tag) that was read (`If-Match`),
//! so of two retries that judged the same expired lease only one takes it; it is
//! renewed the same way ([`LeaseStore::renew`]).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::lock::{Holder, HolderState, boot_id, hostname, process_start_time, sibling, take_over};
use crate::error::{Error, IoContext, Result};

/// What a lease file says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseHolder {
    /// The job the holding task belongs to.
    pub job: String,
    /// The holding attempt.
    pub attempt: String,
    /// The holder's process id.
    pub pid: u32,
    /// The host it runs on.
    pub host: String,
    /// When it took the lease (RFC 3339, UTC).
    pub since: String,
    /// When the lease expires (ms UTC); `None`: until released.
    pub expires: Option<i64>,
    /// The process's start time in clock ticks since boot, if known.
    #[serde(default)]
    pub start_time: Option<u64>,
    /// The boot id of the host when the lease was taken, if known.
    #[serde(default)]
    pub boot_id: Option<String>,
}

impl LeaseHolder {
    /// This process, taking a lease for `job`/`attempt` now, expiring at `expires`.
    pub fn me(job: &str, attempt: &str, expires: Option<i64>) -> Self {
        let pid = std::process::id();
        LeaseHolder {
            job: job.to_string(),
            attempt: attempt.to_string(),
            pid,
            host: hostname(),
            since: chrono::Utc::now().to_rfc3339(),
            expires,
            start_time: process_start_time(pid),
            boot_id: boot_id(),
        }
    }

    /// Why the lease may be taken over at `now` (ms), if it may.
    pub fn takeover_reason(&self, now: i64) -> Option<String> {
        if let Some(exp) = self.expires
            && exp <= now
        {
            return Some(format!(
                "it expired {:.1} s ago",
                (now - exp) as f64 / 1000.0
            ));
        }
        let as_lock = Holder {
            pid: self.pid,
            host: self.host.clone(),
            stage: "fetch".into(),
            since: self.since.clone(),
            start_time: self.start_time,
            boot_id: self.boot_id.clone(),
        };
        match as_lock.state() {
            HolderState::Stale(why) => Some(why),
            HolderState::Live | HolderState::Unknown => None,
        }
    }

    /// `attempt A of job J (pid P on host H, since S, expires E)`.
    pub fn describe(&self) -> String {
        let expires = match self.expires {
            Some(ms) => chrono::DateTime::from_timestamp_millis(ms)
                .map(|d| d.to_rfc3339())
                .unwrap_or_else(|| ms.to_string()),
            None => "when released".into(),
        };
        format!(
            "attempt {} of job {} (pid {} on host {}, since {}, expires {expires})",
            self.attempt, self.job, self.pid, self.host, self.since
        )
    }
}

/// What a lease is taken for and on which terms.
#[derive(Debug, Clone, Copy)]
pub struct Terms<'a> {
    /// What the lease guards, in messages (`partition 3 of segment 2026...`).
    pub what: &'a str,
    /// The job of the attempt taking it.
    pub job: &'a str,
    /// The attempt taking it.
    pub attempt: &'a str,
    /// How long it lasts from when it is taken (the holder's time limit, or its
    /// heartbeat's time to live); `None`: until released.
    pub lasts: Option<std::time::Duration>,
    /// How long at most to wait for a live lease held by another attempt to expire
    /// (zero: refuse at once).
    pub wait: std::time::Duration,
}

/// Leases kept as objects of an object store (see the module doc).
pub trait LeaseStore: std::fmt::Debug + Send + Sync {
    /// Creates the lease `rel` (a `/`-separated path in the crawl directory) with
    /// `body` unless it exists; when it exists, returns its body and version tag.
    fn create(&self, rel: &str, body: &str) -> Result<Option<(String, String)>>;
    /// Replaces the lease `rel` with `body` only if its version tag is still `tag`;
    /// `false` when another writer changed it first.
    fn replace(&self, rel: &str, body: &str, tag: &str) -> Result<bool>;
    /// Removes the lease `rel` if it still holds `body` (best effort).
    fn release(&self, rel: &str, body: &str);
    /// Replaces the lease `rel` with `new` only if it still holds `old` (read, then
    /// a conditional update of the version read); `false` when it holds something
    /// else or changed meanwhile: the lease was taken over.
    fn renew(&self, rel: &str, old: &str, new: &str) -> Result<bool>;
    /// Whether leases can be renewed (and so have a heartbeat) on this store.
    fn renews(&self) -> bool {
        true
    }
}

/// A lease held by this process; released (its file or object removed) on drop.
#[derive(Debug)]
pub struct Lease {
    path: PathBuf,
    body: String,
    taken_over: bool,
    remote: Option<(std::sync::Arc<dyn LeaseStore>, String)>,
}

impl Lease {
    /// Takes the lease at `path` on `terms`. See the module doc for how a lease
    /// found taken is judged, waited for or refused.
    pub fn acquire(path: &Path, terms: &Terms) -> Result<Lease> {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).at(parent)?;
        }
        let mut wait = Waiting::new(terms);
        loop {
            // Its expiry counts from now: after a wait, from the end of it.
            let body = body(path, terms)?;
            let new = sibling(path, &format!("new-{}", std::process::id()));
            let mut f = fs::File::create(&new).at(&new)?;
            f.write_all(body.as_bytes()).at(&new)?;
            f.sync_all().at(&new)?;
            drop(f);
            let taken = take(path, &new, &body, terms.what);
            let _ = fs::remove_file(&new);
            match taken? {
                Taken::Held(lease) => return Ok(lease),
                Taken::Live(holder) => wait.wait_for(path, &holder)?,
            }
        }
    }

    /// [`Lease::acquire`] on an object store: the lease is the object `rel` of
    /// `store`, created once and taken over only through a conditional update of
    /// the version judged expired (or gone).
    pub fn acquire_remote(
        store: std::sync::Arc<dyn LeaseStore>,
        rel: &str,
        terms: &Terms,
    ) -> Result<Lease> {
        let path = PathBuf::from(rel);
        let mut wait = Waiting::new(terms);
        let mut races = 0;
        while races < 5 {
            let body = body(&path, terms)?;
            let Some((text, tag)) = store.create(rel, &body)? else {
                return Ok(Lease {
                    path,
                    body,
                    taken_over: false,
                    remote: Some((store, rel.to_string())),
                });
            };
            if text.is_empty() {
                // Released between the create and the read: create again.
                races += 1;
                continue;
            }
            let why = match judge(&path, &text, terms.what)? {
                Judged::TakeOver(why) => why,
                Judged::Live(holder) => {
                    wait.wait_for(&path, &holder)?;
                    continue;
                }
            };
            if store.replace(rel, &body, &tag)? {
                tracing::warn!(
                    "{}: lease {rel} held by {} is taken over: {why}",
                    terms.what,
                    describe(&text)
                );
                return Ok(Lease {
                    path,
                    body,
                    taken_over: true,
                    remote: Some((store, rel.to_string())),
                });
            }
            // Another attempt changed it first: judge its lease anew.
            races += 1;
        }
        Err(Error::Locked {
            path,
            message: format!(
                "{}: could not take the lease (other attempts keep taking it)",
                terms.what
            ),
        })
    }

    /// The lease file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether it was taken over from a holder that did not release it (gone or
    /// expired): that holder may have sent requests until a moment ago.
    pub fn taken_over(&self) -> bool {
        self.taken_over
    }

    /// Extends the lease to `expires` (ms UTC): its file is replaced atomically by
    /// the same holder with the new expiry. `false` (nothing written) when the file
    /// no longer holds this lease: it was taken over, so this holder must stop.
    /// Call it well before the current expiry (a heartbeat): a lease is taken over
    /// only once expired. On an object store the object is replaced by a
    /// conditional update of the version that still holds this lease.
    pub fn renew(&mut self, expires: i64) -> Result<bool> {
        let mut holder: LeaseHolder = serde_json::from_str(&self.body)
            .map_err(|e| Error::io(&self.path, std::io::Error::other(e)))?;
        holder.expires = Some(expires);
        let body = serde_json::to_string_pretty(&holder)
            .map_err(|e| Error::io(&self.path, std::io::Error::other(e)))?
            + "\n";
        if let Some((store, rel)) = &self.remote {
            let renewed = store.renew(rel, &self.body, &body)?;
            if renewed {
                self.body = body;
            }
            return Ok(renewed);
        }
        match fs::read_to_string(&self.path) {
            Ok(t) if t == self.body => {}
            _ => return Ok(false),
        }
        let tmp = sibling(&self.path, &format!("renew-{}", holder.pid));
        let mut f = fs::File::create(&tmp).at(&tmp)?;
        f.write_all(body.as_bytes()).at(&tmp)?;
        f.sync_all().at(&tmp)?;
        drop(f);
        fs::rename(&tmp, &self.path).at(&self.path)?;
        self.body = body;
        Ok(true)
    }

    /// Reads the lease file at `path`, if there is one (and it is readable).
    pub fn read(path: &Path) -> Option<LeaseHolder> {
        fs::read_to_string(path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some((store, rel)) = &self.remote {
            store.release(rel, &self.body);
            return;
        }
        // Only our own lease: one taken over meanwhile belongs to another attempt.
        if fs::read_to_string(&self.path).is_ok_and(|t| t == self.body) {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Leases held by a task and renewed by a thread of their own (a heartbeat) every
/// third of their time to live, so that a lease lasts seconds after its holder
/// stopped (its process frozen, its machine cut off) instead of the task's whole
/// time limit. The holder asks its [`Heartbeat::fence`] before each request: past
/// it, the lease may be about to expire and be taken over, so the holder sends
/// nothing more (fencing) and fails. Leases are added as they are taken
/// ([`Heartbeat::add`]), so those held are renewed while the task waits for the
/// next. Dropping the heartbeat stops the thread and releases the leases still held.
#[derive(Debug)]
pub struct Heartbeat {
    leases: std::sync::Arc<std::sync::Mutex<Vec<Lease>>>,
    until: std::sync::Arc<std::sync::atomic::AtomicI64>,
    stop: std::sync::Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Heartbeat {
    /// Starts renewing the leases it will be given (each taken to last `ttl_ms`) to
    /// `ttl_ms` from each renewal.
    pub fn start(ttl_ms: i64) -> Heartbeat {
        use std::sync::atomic::Ordering::SeqCst;
        let ttl_ms = ttl_ms.max(3);
        let leases: std::sync::Arc<std::sync::Mutex<Vec<Lease>>> = Default::default();
        // A lease added from now on expires after this.
        let until = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(
            crate::datum::now_millis() + ttl_ms - ttl_ms / 3,
        ));
        let stop = std::sync::Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
        let (t_leases, t_until, t_stop) = (leases.clone(), until.clone(), stop.clone());
        let period = std::time::Duration::from_millis((ttl_ms / 3) as u64);
        let thread = std::thread::spawn(move || {
            loop {
                let (m, cv) = &*t_stop;
                let g = m.lock().unwrap_or_else(|e| e.into_inner());
                let (g, _) = cv
                    .wait_timeout_while(g, period, |stopped| !*stopped)
                    .unwrap_or_else(|e| e.into_inner());
                if *g {
                    break;
                }
                drop(g);
                let now = crate::datum::now_millis();
                // Past the safe point the lease may be expiring (this process was
                // stopped): it is not renewed, it is given up.
                let mut ok = now < t_until.load(SeqCst);
                if !ok {
                    tracing::warn!(
                        "the leases of this task were not renewed in time (the process was held up {:.1} s): it sends no more requests and fails; a retry takes them over",
                        (now - t_until.load(SeqCst)) as f64 / 1000.0 + (ttl_ms / 3) as f64 / 1000.0
                    );
                }
                // When the leases expire unless renewed (the last renewal's expiry).
                let expiry = t_until.load(SeqCst).saturating_add(ttl_ms / 3);
                let expires = now + ttl_ms;
                let mut leases = t_leases.lock().unwrap_or_else(|e| e.into_inner());
                for l in leases.iter_mut() {
                    if !ok {
                        break;
                    }
                    match l.renew(expires) {
                        Ok(true) => {}
                        Ok(false) => {
                            tracing::warn!(
                                "lease {} was taken over: this task sends no more requests and fails",
                                l.path().display()
                            );
                            ok = false;
                        }
                        Err(e) => {
                            tracing::warn!(
                                "lease {} could not be renewed: {e}",
                                l.path().display()
                            );
                            ok = false;
                        }
                    }
                }
                drop(leases);
                if ok && crate::datum::now_millis() >= expiry {
                    // Held up while renewing (a local renewal reads, then replaces):
                    // the leases may have been taken over before the replace. They
                    // are given up; a taker that was overwritten finds out at its
                    // next renewal.
                    tracing::warn!(
                        "the leases of this task were renewed too late: it sends no more requests and fails"
                    );
                    ok = false;
                }
                if !ok {
                    t_until.store(i64::MIN, SeqCst);
                    break;
                }
                t_until.store(expires - ttl_ms / 3, SeqCst);
            }
        });
        Heartbeat {
            leases,
            until,
            stop,
            thread: Some(thread),
        }
    }

    /// Renews `lease` (just taken, to last the heartbeat's time to live) from now on.
    pub fn add(&self, lease: Lease) {
        self.leases
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(lease);
    }

    /// What the holder checks before each request: until when the leases let it
    /// start one (advanced by the heartbeat's thread).
    pub fn fence(&self) -> Fence {
        Fence {
            until: self.until.clone(),
            tripped: Default::default(),
        }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        let (m, cv) = &*self.stop;
        *m.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // The leases still held are released.
        self.leases
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }
}

/// A lease holder's check before each request (fencing): past the safe point of its
/// leases' last renewal ([`Heartbeat::fence`]) another attempt may take them over,
/// so no request may start, and the run must fail instead of finishing its attempt.
/// Clones share the verdict.
#[derive(Debug, Clone)]
pub struct Fence {
    until: std::sync::Arc<std::sync::atomic::AtomicI64>,
    tripped: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Fence {
    /// Whether a request may start now; `false` also trips the fence.
    pub fn holds(&self) -> bool {
        use std::sync::atomic::Ordering::SeqCst;
        let ok = crate::datum::now_millis() < self.until.load(SeqCst);
        if !ok {
            self.tripped.store(true, SeqCst);
        }
        ok
    }

    /// Whether a request was refused ([`Fence::holds`] said no) or the leases were
    /// lost: the run must fail.
    pub fn tripped(&self) -> bool {
        use std::sync::atomic::Ordering::SeqCst;
        self.tripped.load(SeqCst) || self.until.load(SeqCst) == i64::MIN
    }
}

/// The leases a task holds (released on drop): renewed by a heartbeat, or lasting
/// the length they were taken for.
#[derive(Debug, Default)]
pub struct Held {
    /// Their heartbeat, if they have one (it holds them).
    pub heartbeat: Option<Heartbeat>,
    /// The leases without a heartbeat.
    pub leases: Vec<Lease>,
    /// Whether one was taken over from a holder that did not release it.
    pub taken_over: bool,
}

impl Held {
    /// Holds `lease` (renewed by the heartbeat if there is one).
    pub fn add(&mut self, lease: Lease) {
        self.taken_over |= lease.taken_over();
        match &self.heartbeat {
            Some(h) => h.add(lease),
            None => self.leases.push(lease),
        }
    }

    /// Extends every lease without a heartbeat to last `length` from now; an error
    /// when one was taken over meanwhile.
    pub fn extend_all(&mut self, length: std::time::Duration) -> Result<()> {
        let expires = crate::datum::now_millis()
            .saturating_add(i64::try_from(length.as_millis()).unwrap_or(i64::MAX));
        for lease in &mut self.leases {
            if !lease.renew(expires)? {
                return Err(Error::Locked {
                    path: lease.path().to_path_buf(),
                    message: "the lease was taken over while this task waited for its other leases; retry the task".into(),
                });
            }
        }
        Ok(())
    }

    /// What the holder checks before each request; `None` without a heartbeat.
    pub fn fence(&self) -> Option<Fence> {
        self.heartbeat.as_ref().map(Heartbeat::fence)
    }
}

/// [`LeaseHolder::describe`] of a lease's text.
fn describe(text: &str) -> String {
    serde_json::from_str::<LeaseHolder>(text)
        .map(|h| h.describe())
        .unwrap_or_default()
}

/// What a lease found taken allows.
enum Judged {
    /// It may be taken over, for this reason.
    TakeOver(String),
    /// It is live: its holder may still be sending requests.
    Live(LeaseHolder),
}

/// Judges the lease text found at `path`: may it be taken over, or is it live; an
/// error when it is not readable as a lease.
fn judge(path: &Path, text: &str, what: &str) -> Result<Judged> {
    let Ok(holder) = serde_json::from_str::<LeaseHolder>(text) else {
        return Err(Error::Locked {
            path: path.to_path_buf(),
            message: format!(
                "{what}: the lease is not readable as a lease; if no fetch task of this crawl is running, delete {} and retry",
                path.display()
            ),
        });
    };
    Ok(match holder.takeover_reason(crate::datum::now_millis()) {
        Some(why) => Judged::TakeOver(why),
        None => Judged::Live(holder),
    })
}

/// A taker's wait for live leases: until `terms.wait` after it began.
struct Waiting<'a> {
    terms: &'a Terms<'a>,
    started: std::time::Instant,
    deadline: i64,
}

impl<'a> Waiting<'a> {
    fn new(terms: &'a Terms<'a>) -> Self {
        let wait_ms = i64::try_from(terms.wait.as_millis()).unwrap_or(i64::MAX);
        Waiting {
            terms,
            started: std::time::Instant::now(),
            deadline: crate::datum::now_millis().saturating_add(wait_ms),
        }
    }

    /// Waits until just after the live lease of `holder` (at `path`) expires when
    /// that is within the wait (the caller then reads it again); otherwise, or when
    /// a signal arrives, the error refusing it.
    fn wait_for(&mut self, path: &Path, holder: &LeaseHolder) -> Result<()> {
        let what = self.terms.what;
        let waited = self.started.elapsed().as_secs_f64();
        let refuse = || Error::Locked {
            path: path.to_path_buf(),
            message: format!(
                "{what} is leased by {}{}: another attempt may still be fetching its hosts; retry after the lease expires (or once that process is gone)",
                holder.describe(),
                if waited >= 0.1 {
                    format!(" (waited {waited:.1} s for it, fetch.lease_wait)")
                } else {
                    String::new()
                }
            ),
        };
        let Some(expires) = holder.expires.filter(|e| *e <= self.deadline) else {
            return Err(refuse());
        };
        let now = crate::datum::now_millis();
        tracing::warn!(
            "{what}: leased by {}; waiting {:.1} s for it to expire",
            holder.describe(),
            (expires - now).max(0) as f64 / 1000.0
        );
        // A margin past the expiry: clocks of the same machine, or NTP-synced ones.
        let until = (expires + 100 - now).max(10) as u64;
        crate::signal::sleep(std::time::Duration::from_millis(until));
        if let Some(signal) = crate::signal::received() {
            return Err(Error::Interrupted {
                signal: signal.to_string(),
                message: format!(
                    "{what}: stopped while waiting for its lease; nothing was fetched"
                ),
            });
        }
        Ok(())
    }
}

/// What one try to take a lease found.
enum Taken {
    /// The lease, now held.
    Held(Lease),
    /// A live lease of another holder.
    Live(LeaseHolder),
}

/// The text of a lease taken now on `terms` (at `path`, for errors).
fn body(path: &Path, terms: &Terms) -> Result<String> {
    let expires = terms.lasts.map(|d| {
        crate::datum::now_millis().saturating_add(i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    });
    let me = LeaseHolder::me(terms.job, terms.attempt, expires);
    Ok(
        serde_json::to_string_pretty(&me).map_err(|e| Error::io(path, std::io::Error::other(e)))?
            + "\n",
    )
}

/// Tries to take the lease at `path` by hard-linking `new` (holding `body`) to it,
/// taking over a lease that may be taken over.
fn take(path: &Path, new: &Path, body: &str, what: &str) -> Result<Taken> {
    let mut taken_over = false;
    for _ in 0..5 {
        match fs::hard_link(new, path) {
            Ok(()) => {
                return Ok(Taken::Held(Lease {
                    path: path.to_path_buf(),
                    body: body.to_string(),
                    taken_over,
                    remote: None,
                }));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(Error::io(path, e)),
        }
        let text = match fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io(path, e)),
        };
        let why = match judge(path, &text, what)? {
            Judged::TakeOver(why) => why,
            Judged::Live(holder) => return Ok(Taken::Live(holder)),
        };
        tracing::warn!(
            "{what}: lease {} held by {} is taken over: {why}",
            path.display(),
            describe(&text)
        );
        take_over(path, &text)?;
        taken_over = true;
    }
    Err(Error::Locked {
        path: path.to_path_buf(),
        message: format!("{what}: could not take the lease (other attempts keep taking it)"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Terms of attempt `attempt` of job j on partition 3, refused at once by a live lease.
    fn terms(attempt: &str, expires: Option<i64>) -> Terms<'_> {
        // An expiry in the past: a lease that lasted 0 ms, written that long ago.
        let lasts = expires.map(|e| {
            std::time::Duration::from_millis((e - crate::datum::now_millis()).max(0) as u64)
        });
        Terms {
            what: "partition 3",
            job: "j",
            attempt,
            lasts,
            wait: std::time::Duration::ZERO,
        }
    }

    #[test]
    fn live_refused_expired_taken_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("p00003").join("fetch.lease");
        let now = crate::datum::now_millis();
        let a = Lease::acquire(&p, &terms("a0", Some(now + 60_000))).unwrap();
        let err = Lease::acquire(&p, &terms("a1", Some(now + 60_000))).unwrap_err();
        assert!(
            matches!(err, Error::Locked { .. }) && err.to_string().contains("attempt a0"),
            "{err}"
        );
        drop(a);
        assert!(!p.exists(), "released on drop");
        // An expired lease of a live process is taken over.
        let old = Lease::acquire(&p, &terms("a0", Some(now - 1))).unwrap();
        let b = Lease::acquire(&p, &terms("a1", Some(now + 60_000))).unwrap();
        assert_eq!(Lease::read(&p).unwrap().attempt, "a1");
        drop(old); // not ours any more: left alone
        assert_eq!(Lease::read(&p).unwrap().attempt, "a1");
        drop(b);
        // A lease of a pid that no longer exists is taken over.
        let mut gone = LeaseHolder::me("j", "z", None);
        gone.pid = u32::MAX - 7;
        gone.start_time = None;
        std::fs::write(&p, serde_json::to_string(&gone).unwrap()).unwrap();
        let c = Lease::acquire(&p, &terms("a2", None)).unwrap();
        drop(c);
        // A renewed lease is live again; one taken over is not renewed.
        let now = crate::datum::now_millis();
        let mut d = Lease::acquire(&p, &terms("a3", Some(now - 1))).unwrap();
        assert!(d.renew(now + 60_000).unwrap());
        assert_eq!(Lease::read(&p).unwrap().expires, Some(now + 60_000));
        assert!(Lease::acquire(&p, &terms("a4", Some(now + 60_000))).is_err());
        assert!(d.renew(now - 1).unwrap());
        let e = Lease::acquire(&p, &terms("a5", Some(now + 60_000))).unwrap();
        assert!(e.taken_over());
        assert!(!d.renew(now + 60_000).unwrap(), "lost: not renewed");
        assert_eq!(Lease::read(&p).unwrap().attempt, "a5");
        drop(d);
        assert!(p.exists(), "dropping a lost lease leaves the new holder's");
        drop(e);
        assert!(!p.exists());
    }

    /// A live lease that expires within the wait is waited for, then taken over; one
    /// that expires later, or never, is refused without waiting.
    #[test]
    fn a_live_lease_is_waited_for_within_the_wait() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("p00001").join("fetch.lease");
        let now = crate::datum::now_millis();
        let held = Lease::acquire(&p, &terms("a0", Some(now + 400))).unwrap();
        let waiting = Terms {
            wait: std::time::Duration::from_secs(5),
            ..terms("a1", Some(now + 60_000))
        };
        let started = std::time::Instant::now();
        let taken = Lease::acquire(&p, &waiting).unwrap();
        assert!(taken.taken_over());
        assert!(started.elapsed() >= std::time::Duration::from_millis(300));
        assert_eq!(Lease::read(&p).unwrap().attempt, "a1");
        drop(held);
        // Expiring after the wait: refused at once, saying so.
        let started = std::time::Instant::now();
        let short = Terms {
            wait: std::time::Duration::from_millis(200),
            ..terms("a2", Some(now + 60_000))
        };
        let err = Lease::acquire(&p, &short).unwrap_err();
        assert!(err.to_string().contains("leased by attempt a1"), "{err}");
        assert!(started.elapsed() < std::time::Duration::from_millis(150));
        drop(taken);
        let forever = Lease::acquire(&p, &terms("a3", None)).unwrap();
        assert!(
            Lease::acquire(&p, &short).is_err(),
            "until released: never waited for"
        );
        drop(forever);
    }
}
