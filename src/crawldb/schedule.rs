//! Fetch schedules: when a fetched URL is due again.
//!
//! - `default`: a fixed interval per URL (its `fetch_interval`), capped at
//!   `updatedb.max_interval`.
//! - `adaptive` (Nutch's AdaptiveFetchSchedule): the interval shrinks by 20% when the
//!   page changed and grows by 40% when it did not, clamped to [60 s, 1 year]; with
//!   the sync delta, a known Last-Modified time pulls the next fetch earlier by 30%
//!   of the age of the content and raises the interval to at least that age.
//!
//! A URL injected with `fetch_interval=` carries the metadata flag
//! [`FIXED_INTERVAL_KEY`]; every schedule keeps its interval as is.

use crate::datum::{CrawlDatum, Millis};

/// Metadata key marking a per-URL fixed interval (set by inject's `fetch_interval=`).
pub const FIXED_INTERVAL_KEY: &str = "fixed_interval";

/// Smallest adaptive interval (seconds).
pub const MIN_ADAPTIVE_INTERVAL: i64 = 60;
/// Largest adaptive interval (seconds): one year.
pub const MAX_ADAPTIVE_INTERVAL: i64 = 365 * 86400;
/// Adaptive: factor applied when the page changed.
pub const DEC_FACTOR: f64 = 0.8;
/// Adaptive: factor applied when the page did not change.
pub const INC_FACTOR: f64 = 1.4;
/// Adaptive: share of the content's age subtracted from the reference time.
pub const SYNC_DELTA_RATE: f64 = 0.3;

/// Which schedule to apply (`updatedb.schedule`).
pub use crate::config::Schedule;

/// Whether a datum's interval is pinned by inject metadata.
pub fn is_fixed(d: &CrawlDatum) -> bool {
    d.metadata
        .get(FIXED_INTERVAL_KEY)
        .is_some_and(|v| v == "true")
}

/// Sets `d.fetch_interval` and `d.fetch_time` after a fetch at `fetched` (ms).
/// `changed` is whether the content changed (`None` when unknown, e.g. unparsed);
/// `modified` the content's Last-Modified time (ms) when known.
pub fn reschedule(
    d: &mut CrawlDatum,
    schedule: Schedule,
    fetched: Millis,
    changed: Option<bool>,
    modified: Option<Millis>,
    default_interval: i64,
    max_interval: i64,
) {
    let mut interval = if d.fetch_interval > 0 {
        d.fetch_interval
    } else {
        default_interval
    };
    let mut reference = fetched;
    if is_fixed(d) {
        // Pinned by the user: no cap, no adaptation.
    } else if schedule == Schedule::Adaptive {
        let mut secs = interval as f64;
        match changed {
            Some(true) => secs *= DEC_FACTOR,
            Some(false) => secs *= INC_FACTOR,
            None => {}
        }
        if let Some(m) = modified.filter(|m| *m <= fetched) {
            let delta = (fetched - m) / 1000;
            if delta as f64 > secs {
                secs = delta as f64;
            }
            reference = fetched - (delta as f64 * SYNC_DELTA_RATE * 1000.0).round() as i64;
        }
        interval = (secs.round() as i64).clamp(MIN_ADAPTIVE_INTERVAL, MAX_ADAPTIVE_INTERVAL);
    } else {
        interval = interval.min(max_interval.max(1));
    }
    d.fetch_interval = interval;
    d.fetch_time = reference + interval * 1000;
}

/// Parses an HTTP date (`Last-Modified`) into ms, if well formed.
pub fn parse_http_date(s: &str) -> Option<Millis> {
    chrono::DateTime::parse_from_rfc2822(s.trim())
        .ok()
        .map(|t| t.timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn datum(interval: i64) -> CrawlDatum {
        CrawlDatum::unfetched("http://a.test/".into(), "a.test".into(), 0, interval)
    }

    const DAY: i64 = 86400;
    const T: Millis = 1_700_000_000_000;

    // One long table on purpose: each schedule's cases are rows side by side, read
    // against docs/crawldb.md; splitting it would scatter the rows.
    #[test]
    fn schedules_table() {
        // (schedule, interval, fixed, changed, modified-age secs, expected interval, expected fetch_time)
        #[allow(clippy::type_complexity)]
        let cases: Vec<(Schedule, i64, bool, Option<bool>, Option<i64>, i64, Millis)> = vec![
            (
                Schedule::Default,
                10 * DAY,
                false,
                Some(true),
                None,
                10 * DAY,
                T + 10 * DAY * 1000,
            ),
            (
                Schedule::Default,
                10 * DAY,
                false,
                Some(false),
                None,
                10 * DAY,
                T + 10 * DAY * 1000,
            ),
            // capped at max_interval (90 days)
            (
                Schedule::Default,
                200 * DAY,
                false,
                None,
                None,
                90 * DAY,
                T + 90 * DAY * 1000,
            ),
            // a fixed interval is never capped
            (
                Schedule::Default,
                200 * DAY,
                true,
                None,
                None,
                200 * DAY,
                T + 200 * DAY * 1000,
            ),
            (
                Schedule::Adaptive,
                10 * DAY,
                false,
                Some(true),
                None,
                8 * DAY,
                T + 8 * DAY * 1000,
            ),
            (
                Schedule::Adaptive,
                10 * DAY,
                false,
                Some(false),
                None,
                14 * DAY,
                T + 14 * DAY * 1000,
            ),
            (
                Schedule::Adaptive,
                10 * DAY,
                false,
                None,
                None,
                10 * DAY,
                T + 10 * DAY * 1000,
            ),
            (
                Schedule::Adaptive,
                10 * DAY,
                true,
                Some(true),
                None,
                10 * DAY,
                T + 10 * DAY * 1000,
            ),
            // clamped below at 60 s and above at one year
            (
                Schedule::Adaptive,
                70,
                false,
                Some(true),
                None,
                60,
                T + 60_000,
            ),
            (
                Schedule::Adaptive,
                300 * DAY,
                false,
                Some(false),
                None,
                365 * DAY,
                T + 365 * DAY * 1000,
            ),
            // sync delta: content 20 days old, interval 8 days after change -> 20 days,
            // reference pulled back by 6 days
            (
                Schedule::Adaptive,
                10 * DAY,
                false,
                Some(true),
                Some(20 * DAY),
                20 * DAY,
                T - 6 * DAY * 1000 + 20 * DAY * 1000,
            ),
            // sync delta with young content: interval stays, reference moves back 30% of 1 day
            (
                Schedule::Adaptive,
                10 * DAY,
                false,
                Some(true),
                Some(DAY),
                8 * DAY,
                T - (DAY * 300) + 8 * DAY * 1000,
            ),
        ];
        for (i, (s, interval, fixed, changed, age, want_i, want_t)) in cases.into_iter().enumerate()
        {
            let mut d = datum(interval);
            if fixed {
                d.metadata.insert(FIXED_INTERVAL_KEY.into(), "true".into());
            }
            let modified = age.map(|a| T - a * 1000);
            reschedule(&mut d, s, T, changed, modified, 30 * DAY, 90 * DAY);
            assert_eq!(d.fetch_interval, want_i, "case {i}: interval");
            assert_eq!(d.fetch_time, want_t, "case {i}: fetch_time");
        }
    }

    #[test]
    fn zero_interval_takes_default() {
        let mut d = datum(0);
        reschedule(&mut d, Schedule::Default, T, None, None, 30 * DAY, 90 * DAY);
        assert_eq!(d.fetch_interval, 30 * DAY);
    }

    #[test]
    fn http_dates() {
        assert_eq!(
            parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(1_445_412_480_000)
        );
        assert_eq!(parse_http_date("yesterday"), None);
    }
}
