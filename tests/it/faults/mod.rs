//! The fault campaign (issue 13, "no silent loss"): every path that used to lose or
//! corrupt stored data without a word, driven through the real binaries against the
//! local test web. Each test asserts the exact outcome: the refusal text, the exit
//! code, row counts before and after, and from the server's log that nothing was
//! fetched twice.

mod applied;
mod config_seeds;
mod integrity;
mod locks;
mod scores;
mod signals;
mod urls;
