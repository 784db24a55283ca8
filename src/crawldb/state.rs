//! The crawldb state machine (Nutch's CrawlDbReducer) as a pure function: given what
//! the crawldb knew about a URL and what one segment says about it, the new row.

use crate::config::UpdateDbConfig;
use crate::crawldb::schedule::{self, Schedule};
use crate::crawldb::scoring;
use crate::datum::{CrawlDatum, DbStatus, FetchStatus, Millis};
use crate::records::FetchRecord;

/// Fetch reason that means "never tried: the fetcher ran out of time".
pub const REASON_TIME_LIMIT: &str = "time_limit";
/// Reason of a URL not attempted because fetch stopped for low throughput
/// (`fetch.min_throughput`); updatedb treats it like [`REASON_TIME_LIMIT`].
pub const REASON_THROUGHPUT_LIMIT: &str = "throughput_limit";
/// Reason of a URL not attempted because fetch was stopped by SIGINT or SIGTERM
/// (or whose request was cut after the grace period); updatedb treats it like
/// [`REASON_TIME_LIMIT`].
pub const REASON_INTERRUPTED: &str = "interrupted";

/// Whether a fetch_retry `reason` means "never tried": the URL stays unchanged and
/// due now (no retry counted).
pub fn not_attempted(reason: &str) -> bool {
    [
        REASON_TIME_LIMIT,
        REASON_THROUGHPUT_LIMIT,
        REASON_INTERRUPTED,
    ]
    .contains(&reason)
}

/// Metadata key marking a row whose latest fetch outcome is merged without the
/// segment's parse results (`updatedb --no-parse`). Its value is
/// `SEGMENT PREV_STATUS PREV_INTERVAL`: the segment, and the row's status and fetch
/// interval before that fetch, which is what the later `updatedb` that merges the
/// segment's parse signature needs to settle the row exactly as one `updatedb` of the
/// parsed segment would have (see [`Settle`]). Removed when settled, or when a later
/// fetch outcome of the URL supersedes it.
pub const PARSE_PENDING_KEY: &str = "parse_pending";

/// `updatedb --no-parse`: a successful fetch merged without its parse results.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Unparsed<'a> {
    /// The segment the fetch is in.
    pub segment: &'a str,
    /// The fetch's time (identifies the fetch row among the URL's).
    pub fetch_time: Millis,
}

/// The parse results of a segment whose fetch outcomes were merged earlier without
/// them (a partially applied segment being completed).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settle<'a> {
    /// The segment.
    pub segment: &'a str,
    /// The URL's parse signature in it (`None`: fetched, but no signature).
    pub signature: Option<&'a str>,
}

/// One way a URL is reached in a segment: an outlink or a redirect.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Inlink {
    /// Score contribution (OPIC share; for a redirect, the source's score).
    pub score: f64,
    /// Depth of the URL through this inlink.
    pub depth: i32,
    /// Whether this is a redirect (no score is added to a known target).
    pub redirect: bool,
}

/// What one segment says about one URL.
#[derive(Debug, Clone, Copy, Default)]
pub struct Observed<'a> {
    /// Its `crawl_fetch` rows (normally at most one; applied in order).
    pub fetches: &'a [FetchRecord],
    /// The parse signature of the fetched content.
    pub signature: Option<&'a str>,
    /// Its link and redirect rows.
    pub inlinks: &'a [Inlink],
    /// `updatedb --no-parse`: its successful fetches merged without parse results.
    pub unparsed: &'a [Unparsed<'a>],
    /// Completing partially applied segments: what each says about the URL's content.
    pub settle: &'a [Settle<'a>],
}

/// Everything the state machine needs besides the rows.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// The time of this updatedb (ms).
    pub now: Millis,
    /// `[updatedb]`.
    pub cfg: UpdateDbConfig,
    /// The schedule named by `updatedb.schedule`.
    pub schedule: Schedule,
    /// Whether new URLs may be added (`--no-additions` clears it).
    pub additions: bool,
    /// `urls.max_depth` (0 = unlimited).
    pub max_depth: i32,
}

impl Ctx {
    /// A context from the config.
    pub fn new(cfg: &UpdateDbConfig, max_depth: i32, now: Millis) -> Self {
        Ctx {
            now,
            cfg: cfg.clone(),
            schedule: cfg.schedule,
            additions: cfg.additions_allowed,
            max_depth,
        }
    }
}

/// The new row of one URL. `old` is its crawldb row (if known), `seen` what the
/// segment says about it, and `admissible` whether a
/// new URL passes the URL policy (asked only for new, unfetched URLs).
/// Returns `None` when the URL is not (or no longer) in the crawldb.
pub fn reduce(
    url: &str,
    host: &str,
    old: Option<CrawlDatum>,
    seen: Observed<'_>,
    ctx: &Ctx,
    admissible: impl FnOnce() -> bool,
) -> Option<CrawlDatum> {
    let Observed {
        fetches,
        signature,
        inlinks,
        unparsed,
        settle,
    } = seen;
    let mut datum = match (old, fetches.first()) {
        (Some(d), _) => {
            let mut d = d;
            // A partially applied segment's parse results come before any later fetch.
            settle_pending(&mut d, settle, ctx);
            let shares = inlinks.iter().filter(|l| !l.redirect).map(|l| l.score);
            d.score = scoring::known_url_score(d.score, shares);
            d
        }
        // Fetched but unknown to the crawldb: a redirect target followed inline, or a
        // URL purged since generate. Under --no-additions only known URLs are updated
        // (Nutch's rule: no old row and no additions, no row).
        (None, Some(_)) if !ctx.additions => return None,
        // Otherwise rebuilt from the fetch row.
        (None, Some(f)) => {
            let mut d = CrawlDatum::unfetched(
                f.url.clone(),
                f.host.clone(),
                ctx.now,
                ctx.cfg.default_interval,
            );
            d.score = f.score;
            d.depth = f.depth;
            d
        }
        (None, None) => return new_url(url, host, inlinks, ctx, admissible),
    };
    for (i, f) in fetches.iter().enumerate() {
        let last = i + 1 == fetches.len();
        let sig = if last { signature } else { None };
        let before = (datum.status, datum.fetch_interval);
        apply_fetch(&mut datum, f, sig, ctx);
        // Merged without its parse results: remember what settling them needs.
        if last
            && sig.is_none()
            && f.status == FetchStatus::FetchSuccess
            && let Some(u) = unparsed.iter().find(|u| u.fetch_time == f.fetch_time)
        {
            datum.metadata.insert(
                PARSE_PENDING_KEY.to_string(),
                format!("{} {} {}", u.segment, before.0.as_str(), before.1),
            );
        }
    }
    if ctx.cfg.purge_gone && datum.status == DbStatus::DbGone {
        return None;
    }
    Some(datum)
}

/// A URL first seen in this segment through `inlinks`.
fn new_url(
    url: &str,
    host: &str,
    inlinks: &[Inlink],
    ctx: &Ctx,
    admissible: impl FnOnce() -> bool,
) -> Option<CrawlDatum> {
    let first = inlinks.first()?;
    if !ctx.additions {
        return None;
    }
    let depth = inlinks.iter().map(|l| l.depth).min().unwrap_or(first.depth);
    if ctx.max_depth > 0 && depth > ctx.max_depth {
        return None;
    }
    if !admissible() {
        return None;
    }
    let mut d = CrawlDatum::unfetched(
        url.to_string(),
        host.to_string(),
        ctx.now,
        ctx.cfg.default_interval,
    );
    d.depth = depth;
    d.score = scoring::new_url_score(inlinks.iter().map(|l| l.score));
    Some(d)
}

/// Applies one fetch outcome to `d`.
pub fn apply_fetch(d: &mut CrawlDatum, f: &FetchRecord, signature: Option<&str>, ctx: &Ctx) {
    let cfg = &ctx.cfg;
    if f.status == FetchStatus::FetchRetry && not_attempted(&f.reason) {
        // Never tried: unchanged, due now.
        d.fetch_time = d.fetch_time.min(ctx.now);
        return;
    }
    // A new outcome supersedes a fetch still waiting for its parse results.
    d.metadata.remove(PARSE_PENDING_KEY);
    let fetched = f.fetch_time;
    match f.status {
        FetchStatus::FetchSuccess | FetchStatus::FetchNotmodified => {
            let prev = d.status;
            record_response(d, f);
            let changed = if f.status == FetchStatus::FetchNotmodified {
                d.status = DbStatus::DbNotmodified;
                Some(false)
            } else {
                content_outcome(d, prev, signature, fetched)
            };
            if d.modified_time.is_none() {
                d.modified_time = Some(fetched);
            }
            d.redirect_target = None;
            reschedule_fetched(d, fetched, changed, ctx);
        }
        FetchStatus::FetchRedirTemp | FetchStatus::FetchRedirPerm => {
            record_response(d, f);
            d.status = if f.status == FetchStatus::FetchRedirTemp {
                DbStatus::DbRedirTemp
            } else {
                DbStatus::DbRedirPerm
            };
            d.redirect_target = f.redirect_target.clone();
            schedule::reschedule(
                d,
                Schedule::Default,
                fetched,
                None,
                None,
                cfg.default_interval,
                cfg.max_interval,
            );
        }
        FetchStatus::FetchRetry => {
            d.retries += 1;
            d.reason = Some(f.reason.clone());
            d.http_status = f.http_status.or(d.http_status);
            if d.retries >= cfg.max_retries.max(1) {
                make_gone(d, fetched, cfg);
            } else {
                d.fetch_time = fetched + cfg.retry_interval * 1000;
            }
        }
        FetchStatus::FetchGone => {
            record_response(d, f);
            make_gone(d, fetched, cfg);
        }
    }
}

/// Status, signature and `modified_time` after a successful fetch at `fetched` whose
/// content has `signature` (`None`: not parsed), the row's status before the fetch
/// being `prev`. Returns whether the content changed (`None`: unknown).
fn content_outcome(
    d: &mut CrawlDatum,
    prev: DbStatus,
    signature: Option<&str>,
    fetched: Millis,
) -> Option<bool> {
    match signature {
        Some(sig)
            if d.signature.as_deref() == Some(sig)
                && matches!(prev, DbStatus::DbFetched | DbStatus::DbNotmodified) =>
        {
            d.status = DbStatus::DbNotmodified;
            Some(false)
        }
        Some(sig) => {
            d.status = DbStatus::DbFetched;
            d.signature = Some(sig.to_string());
            d.modified_time = Some(fetched);
            Some(true)
        }
        None => {
            d.status = DbStatus::DbFetched;
            if d.modified_time.is_none() {
                d.modified_time = Some(fetched);
            }
            None
        }
    }
}

/// The schedule after an answered fetch at `fetched` (`changed`: see [`content_outcome`]).
fn reschedule_fetched(d: &mut CrawlDatum, fetched: Millis, changed: Option<bool>, ctx: &Ctx) {
    let modified = d
        .metadata
        .get("last_modified")
        .and_then(|s| schedule::parse_http_date(s));
    schedule::reschedule(
        d,
        ctx.schedule,
        fetched,
        changed,
        modified,
        ctx.cfg.default_interval,
        ctx.cfg.max_interval,
    );
}

/// Settles a row marked [`PARSE_PENDING_KEY`] by one of the segments in `settle`: its
/// fetch was merged without a signature (status `db_fetched`, change unknown); with
/// the signature now known, status, signature, `modified_time` and the schedule become
/// what merging fetch and parse together would have given. The fetch itself (retry
/// counter, fetch time, response fields) is not applied again.
fn settle_pending(d: &mut CrawlDatum, settle: &[Settle<'_>], ctx: &Ctx) {
    let Some(mark) = d.metadata.get(PARSE_PENDING_KEY) else {
        return;
    };
    let mut fields = mark.split(' ');
    let (Some(segment), prev, interval) = (
        fields.next(),
        fields.next().and_then(DbStatus::parse),
        fields.next().and_then(|v| v.parse::<i64>().ok()),
    ) else {
        return;
    };
    let Some(s) = settle.iter().find(|s| s.segment == segment) else {
        return;
    };
    let signature = s.signature;
    d.metadata.remove(PARSE_PENDING_KEY);
    // Without a signature the statuses-only outcome already is the whole one.
    let (Some(sig), Some(prev), Some(interval), Some(fetched)) =
        (signature, prev, interval, d.fetched_time)
    else {
        return;
    };
    let changed = content_outcome(d, prev, Some(sig), fetched);
    d.fetch_interval = interval;
    reschedule_fetched(d, fetched, changed, ctx);
}

/// What every answered fetch records.
fn record_response(d: &mut CrawlDatum, f: &FetchRecord) {
    d.fetched_time = Some(f.fetch_time);
    d.http_status = f.http_status;
    if f.content_type.is_some() {
        d.content_type = f.content_type.clone();
    }
    d.reason = Some(f.reason.clone());
    d.retries = 0;
    for (key, v) in [("etag", &f.etag), ("last_modified", &f.last_modified)] {
        match v {
            Some(v) => {
                d.metadata.insert(key.to_string(), v.clone());
            }
            None => {
                d.metadata.remove(key);
            }
        }
    }
}

/// `db_gone`, re-checked rarely: interval x 1.5, capped at 0.9 x max_interval.
fn make_gone(d: &mut CrawlDatum, fetched: Millis, cfg: &UpdateDbConfig) {
    d.status = DbStatus::DbGone;
    let base = if d.fetch_interval > 0 {
        d.fetch_interval
    } else {
        cfg.default_interval
    };
    let cap = (cfg.max_interval as f64 * 0.9) as i64;
    d.fetch_interval = ((base as f64 * 1.5) as i64).min(cap).max(1);
    d.fetch_time = fetched + d.fetch_interval * 1000;
}

#[cfg(test)]
mod tests;
