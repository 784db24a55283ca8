//! `check`: the single-URL tools a crawl operator reaches for (Nutch's parsechecker,
//! robots and normalizer/filter checkers): one URL fetched politely and parsed
//! ([`url`]), a robots.txt file against URLs ([`robots`]), URLs through
//! normalization and the `[urls]` filters ([`normalize`]). Each returns a report
//! that prints as text or as JSON; none writes to a crawl directory.

pub mod normalize;
pub mod robots;
pub mod url;

use std::io::Write;

use crate::error::{Error, Result};

/// Writes `value` as one JSON line.
pub fn write_json<T: serde::Serialize>(out: &mut dyn Write, value: &T) -> Result<()> {
    let line = serde_json::to_string(value)
        .map_err(|e| Error::input("--json", format!("cannot encode the report: {e}")))?;
    writeln!(out, "{line}").map_err(stdout_err)
}

/// An error writing to standard output.
pub(crate) fn stdout_err(e: std::io::Error) -> Error {
    Error::input("standard output", format!("cannot write: {e}"))
}

/// `s` cut to at most `chars` characters, with `…` when cut.
pub(crate) fn excerpt(s: &str, chars: usize) -> String {
    let mut it = s.char_indices();
    match it.nth(chars) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}
