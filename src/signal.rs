//! SIGINT and SIGTERM, the same for every long stage (the contract is in
//! docs/exit-codes.md, "Signals").
//!
//! A stage binary calls [`install`] once at its start. The first SIGINT or SIGTERM
//! only sets a process-wide flag: the stage looks at it at its safe points
//! ([`received`], [`check`]) and stops there. `fetch` stops sending requests, gives
//! the requests in flight [`grace`] to finish, writes what it fetched and exits
//! with [`crate::cli::exit::INTERRUPTED`]; the other stages stop at their next
//! check, install nothing (the previous version stays in place) and exit with the
//! same code. A second signal ends the process at once, from the handler itself,
//! with the shell's code for death by that signal: [`EXIT_SECOND_SIGINT`] (130) or
//! [`EXIT_SECOND_SIGTERM`] (143). Nothing half-written is ever installed (installs are
//! renames), and the temporary directories left behind are removed by the next run,
//! as after a `kill -9`.
//!
//! Without [`install`] (library use, unit tests) the flag is never set and every
//! check passes.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use signal_hook::consts::{SIGINT, SIGTERM};

use crate::error::{Error, Result};

/// Exit code after a second SIGINT (128 + 2, what a shell reports for death by SIGINT).
pub const EXIT_SECOND_SIGINT: i32 = 130;
/// Exit code after a second SIGTERM (128 + 15).
pub const EXIT_SECOND_SIGTERM: i32 = 143;
/// The longest time `fetch` gives requests in flight after the first signal
/// (shorter when `fetch.total_timeout` is shorter), see [`grace`].
pub const MAX_GRACE: Duration = Duration::from_secs(5);

struct Flags {
    /// Set by the first signal; arms the exit of the second.
    armed: Arc<AtomicBool>,
    /// The number of the last signal received (0 = none).
    which: Arc<AtomicUsize>,
}

static FLAGS: OnceLock<Flags> = OnceLock::new();

/// Installs the handlers of SIGINT and SIGTERM (once per process; later calls do
/// nothing). Only stages that look at [`received`] or call [`check`] install them:
/// in any other process the signals keep their default action (exit at once).
pub fn install() -> Result<()> {
    if FLAGS.get().is_some() {
        return Ok(());
    }
    let flags = Flags {
        armed: Arc::new(AtomicBool::new(false)),
        which: Arc::new(AtomicUsize::new(0)),
    };
    for (sig, code) in [(SIGINT, EXIT_SECOND_SIGINT), (SIGTERM, EXIT_SECOND_SIGTERM)] {
        // The actions of one signal run in the order registered: the exit (only when
        // already armed by an earlier signal) first, then recording and arming.
        let register = || -> std::io::Result<()> {
            signal_hook::flag::register_conditional_shutdown(sig, code, flags.armed.clone())?;
            signal_hook::flag::register_usize(sig, flags.which.clone(), sig as usize)?;
            signal_hook::flag::register(sig, flags.armed.clone())?;
            Ok(())
        };
        register().map_err(|e| Error::Net(format!("cannot install the signal handlers: {e}")))?;
    }
    let _ = FLAGS.set(flags);
    Ok(())
}

/// The name of the signal received (`"SIGINT"` or `"SIGTERM"`), if one was.
pub fn received() -> Option<&'static str> {
    let flags = FLAGS.get()?;
    if !flags.armed.load(Ordering::SeqCst) {
        return None;
    }
    Some(match flags.which.load(Ordering::SeqCst) {
        n if n == SIGINT as usize => "SIGINT",
        _ => "SIGTERM",
    })
}

/// `Err(Error::Interrupted)` once a signal was received; `what` says what the stage
/// leaves behind (e.g. "nothing installed, the crawldb is unchanged; rerun updatedb").
pub fn check(what: &str) -> Result<()> {
    match received() {
        Some(signal) => Err(Error::Interrupted {
            signal: signal.to_string(),
            message: what.to_string(),
        }),
        None => Ok(()),
    }
}

/// How long `fetch` lets requests in flight finish after the first signal before it
/// cuts them: `min(fetch.total_timeout, 5 s)`.
pub fn grace(total_timeout_secs: f64) -> Duration {
    Duration::try_from_secs_f64(total_timeout_secs.max(0.0))
        .unwrap_or(MAX_GRACE)
        .min(MAX_GRACE)
}

/// Waits (polling every 50 ms) until a signal arrives; returns its name. Never
/// returns without [`install`].
pub async fn wait() -> &'static str {
    loop {
        if let Some(s) = received() {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Sleeps `d`, waking early (within 20 ms) when a signal arrives.
pub fn sleep(d: Duration) {
    let end = Instant::now() + d;
    loop {
        let now = Instant::now();
        if now >= end || received().is_some() {
            return;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(20)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grace_is_bounded_by_the_total_timeout_and_five_seconds() {
        assert_eq!(grace(60.0), MAX_GRACE);
        assert_eq!(grace(2.0), Duration::from_secs(2));
        assert_eq!(grace(0.0), Duration::ZERO);
        assert_eq!(grace(f64::INFINITY), MAX_GRACE);
    }

    #[test]
    fn without_handlers_nothing_is_received() {
        assert_eq!(received(), None);
        assert!(check("x").is_ok());
    }
}
