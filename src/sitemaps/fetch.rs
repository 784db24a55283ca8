//! Fetching sitemaps politely with the project's HTTP client: robots.txt obeyed,
//! one request at a time per origin with `fetch.delay` (or a higher Crawl-delay)
//! between them, the size cap and timeouts of `[fetch]`/`[sitemaps]`, conditional
//! requests (ETag, Last-Modified), same-origin redirects; sitemap indexes are
//! followed down to `sitemaps.max_depth`, their children fetched in the same run.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use reqwest::header::{HeaderName, IF_MODIFIED_SINCE, IF_NONE_MATCH};
use url::Url;

use super::parse::{self, Context, Limits, Parsed, Problem, SitemapUrl};
use super::record::SitemapRecord;
use super::{Job, Source};
use crate::config::Config;
use crate::datum::{Millis, now_millis};
use crate::error::{Error, Result};
use crate::net::client::{Fetched, Http, RequestError};
use crate::net::outcome::classify_error;
use crate::net::politeness::Politeness;
use crate::net::robots::{Robots, fetch_robots, origin_of};
use crate::net::runtime;
use crate::store::lease::Fence;
use crate::urls::UrlPolicy;

/// At most this many redirects are followed for one sitemap (same origin only).
pub const MAX_REDIRECTS: usize = 5;

/// What became of one sitemap.
#[derive(Debug, Clone)]
pub struct FetchResult {
    /// Its new sitemapdb row.
    pub record: SitemapRecord,
    /// The URLs it listed (accepted ones).
    pub urls: Vec<SitemapUrl>,
    /// Its problems (the first ones).
    pub problems: Vec<Problem>,
}

struct Shared {
    http: Http,
    cfg: Config,
    policy: Arc<UrlPolicy>,
    known: BTreeMap<String, SitemapRecord>,
    now: Millis,
    /// Per-host delays and the distance to the last run (`fetch.last_end`).
    politeness: Politeness,
    not_due: AtomicU64,
    /// Fetch index children due or not (`--force`).
    force: bool,
    /// Sitemaps this run may still fetch beyond the planned jobs (index children).
    budget: std::sync::atomic::AtomicI64,
    /// The check of the task's leases before each request ([`Bounds::fence`]).
    fence: Option<Fence>,
}

/// What bounds a partition task's requests: its leases.
#[derive(Debug, Clone, Default)]
pub struct Bounds {
    /// Leases without a heartbeat expire after the task's time limit: the run stops
    /// there and fails.
    pub time_limit: Option<Duration>,
    /// Leases with a heartbeat: checked before each request; once it does not hold,
    /// no request starts (the caller fails the run).
    pub fence: Option<Fence>,
}

/// Fetches every job (grouped by origin, origins in parallel, in origin order) and
/// the children of the indexes among them, keeping `politeness` (the distance to
/// the last run of the partitions fetched, whose `fetch.last_end` it records),
/// within `bounds`. Returns one result per sitemap processed, and the number of
/// index children skipped because they were not due.
#[allow(clippy::too_many_arguments)]
pub fn fetch_all(
    cfg: &Config,
    politeness: Politeness,
    jobs: Vec<Job>,
    known: &BTreeMap<String, SitemapRecord>,
    policy: &UrlPolicy,
    now: Millis,
    force: bool,
    bounds: Bounds,
) -> Result<(Vec<FetchResult>, u64)> {
    let Bounds { time_limit, fence } = bounds;
    if jobs.is_empty() {
        return Ok((Vec::new(), 0));
    }
    let shared = Arc::new(Shared {
        http: Http::new(&cfg.fetch)?,
        cfg: cfg.clone(),
        policy: Arc::new(policy.clone()),
        known: known.clone(),
        now,
        politeness,
        not_due: AtomicU64::new(0),
        force,
        budget: std::sync::atomic::AtomicI64::new(
            cfg.sitemaps.max_sitemaps as i64 - jobs.len() as i64,
        ),
        fence,
    });
    let mut by_origin: BTreeMap<String, VecDeque<Job>> = BTreeMap::new();
    for j in jobs {
        by_origin.entry(origin_of(&j.url)).or_default().push_back(j);
    }
    let rt = runtime::build(2)?;
    let max_parallel = cfg.fetch.max_connections.max(1);
    let limit = async {
        match time_limit {
            Some(t) => tokio::time::sleep(t).await,
            None => std::future::pending().await,
        }
    };
    let results = rt.block_on(async {
        tokio::select! {
            out = fetch_jobs(&shared, by_origin, max_parallel) => Ok(out),
            () = limit => Err(Error::input(
                "fetch.time_limit",
                format!(
                    "the sitemap task reached its time limit ({:.0} s; its partitions' leases expire after it): requests cut, nothing recorded; rerun the task, with a higher fetch.time_limit if it keeps happening",
                    cfg.fetch.time_limit
                ),
            )),
            signal = crate::signal::wait() => Err(Error::Interrupted {
                signal: signal.to_string(),
                message: "sitemap stopped: requests cut, nothing installed; the crawldb and the sitemapdb are unchanged; rerun sitemap".into(),
            }),
        }
    });
    drop(rt);
    // Requests were made either way: the next run keeps its distance from now.
    shared.politeness.record_end()?;
    let results = results?;
    Ok((results, shared.not_due.load(Ordering::Relaxed)))
}

/// Fetches every origin's sitemaps, `max_parallel` origins at a time.
async fn fetch_jobs(
    shared: &Arc<Shared>,
    by_origin: BTreeMap<String, VecDeque<Job>>,
    max_parallel: usize,
) -> Vec<FetchResult> {
    let tasks = by_origin
        .into_iter()
        .map(|(origin, queue)| origin_task(shared.clone(), origin, queue));
    runtime::run_bounded(max_parallel, tasks, "a sitemap worker")
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// A record for `job` with no parse result yet.
fn base_record(shared: &Shared, job: &Job, status: &str, reason: &str) -> SitemapRecord {
    let prev = shared.known.get(job.url.as_str());
    SitemapRecord {
        url: job.url.to_string(),
        host: job.url.host_str().unwrap_or_default().to_ascii_lowercase(),
        source: job.source.as_str().to_string(),
        referrer: job.referrer.clone(),
        scope: SitemapRecord::scope_strings(&job.scope),
        depth: job.depth as i32,
        status: status.to_string(),
        reason: reason.to_string(),
        http_status: None,
        format: None,
        gzipped: false,
        bytes: 0,
        urls_found: 0,
        urls_rejected: 0,
        urls_cut: 0,
        urls_added: 0,
        problems: 0,
        first_problem: None,
        etag: prev.and_then(|p| p.etag.clone()),
        last_modified: prev.and_then(|p| p.last_modified.clone()),
        fetched_time: prev.and_then(|p| p.fetched_time),
        next_fetch_time: shared.now + shared.cfg.sitemaps.refetch_interval * 1000,
    }
}

fn failed(shared: &Shared, job: &Job, status: &str, reason: &str) -> FetchResult {
    tracing::warn!("sitemap {}: {status} ({reason})", job.url);
    FetchResult {
        record: base_record(shared, job, status, reason),
        urls: Vec::new(),
        problems: Vec::new(),
    }
}

async fn origin_task(
    shared: Arc<Shared>,
    origin: String,
    mut queue: VecDeque<Job>,
) -> Vec<FetchResult> {
    let mut out = Vec::new();
    let host = queue
        .front()
        .and_then(|j| j.url.host_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let mut seen: HashSet<String> = queue.iter().map(|j| j.url.to_string()).collect();
    let fcfg = &shared.cfg.fetch;
    let base = shared.politeness.delay_secs(&host);
    tokio::time::sleep(shared.politeness.first_wait(base)).await;
    let mut delay = Duration::try_from_secs_f64(base.max(0.0)).unwrap_or_default();
    if shared.fence.as_ref().is_some_and(|f| !f.holds()) {
        // Fencing: not even robots.txt is requested; the run fails.
        return queue
            .iter()
            .map(|j| failed(&shared, j, "failed", "lease_lost"))
            .collect();
    }
    let robots = if fcfg.respect_robots {
        let (r, _, _) = fetch_robots(&shared.http, &origin, &host, &fcfg.robots_agent).await;
        r
    } else {
        Robots::AllowAll
    };
    let mut last = tokio::time::Instant::now();
    if let Some(cd) = robots.crawl_delay_secs() {
        if cd > fcfg.max_crawl_delay {
            return queue
                .iter()
                .map(|j| failed(&shared, j, "failed", "crawl_delay"))
                .collect();
        }
        delay = delay.max(Duration::from_secs_f64(cd));
    }
    if matches!(robots, Robots::Unavailable) {
        return queue
            .iter()
            .map(|j| failed(&shared, j, "failed", "robots_unavailable"))
            .collect();
    }
    while let Some(job) = queue.pop_front() {
        if job.depth > shared.cfg.sitemaps.max_depth {
            out.push(failed(&shared, &job, "too_deep", "max_depth"));
            continue;
        }
        if !robots.allowed(job.url.as_str()) {
            out.push(failed(&shared, &job, "robots_denied", "robots_denied"));
            continue;
        }
        let (rec, parsed) = fetch_one(&shared, &job, &mut last, delay).await;
        for child in &parsed.sitemaps {
            if !seen.insert(child.url.clone()) {
                continue;
            }
            let Ok(url) = Url::parse(&child.url) else {
                continue;
            };
            let prev = shared.known.get(&child.url);
            let changed = match (child.lastmod, prev.and_then(|p| p.fetched_time)) {
                (Some(l), Some(f)) => l > f,
                _ => false,
            };
            if !shared.force && prev.is_some_and(|p| p.next_fetch_time > shared.now) && !changed {
                shared.not_due.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let child_job = Job {
                url,
                scope: job.scope.clone(),
                depth: job.depth + 1,
                source: Source::Index,
                referrer: Some(job.url.to_string()),
            };
            if shared.budget.fetch_sub(1, Ordering::Relaxed) <= 0 {
                // Over sitemaps.max_sitemaps: remembered, due at once, fetched next run.
                let mut r = failed(&shared, &child_job, "deferred", "max_sitemaps");
                r.record.next_fetch_time = shared.now;
                out.push(r);
                continue;
            }
            queue.push_back(child_job);
        }
        out.push(FetchResult {
            record: rec,
            urls: parsed.urls,
            problems: parsed.problems,
        });
    }
    out
}

/// Waits for the politeness delay since `last`, then sends one GET.
async fn polite_get(
    shared: &Shared,
    url: &Url,
    headers: &[(HeaderName, String)],
    last: &mut tokio::time::Instant,
    delay: Duration,
) -> std::result::Result<Fetched, RequestError> {
    tokio::time::sleep_until(*last + delay).await;
    if shared.fence.as_ref().is_some_and(|f| !f.holds()) {
        // Fencing: the leases may be taken over by now; the run fails.
        return Err("not sent: this task's leases were not renewed in time".into());
    }
    let cap = usize::try_from(shared.cfg.sitemaps.max_bytes).unwrap_or(usize::MAX);
    let r = shared.http.get(url, headers, cap).await;
    *last = tokio::time::Instant::now();
    r
}

/// Fetches and parses one sitemap: its new record and what it listed (nothing when
/// the fetch failed or answered 304).
async fn fetch_one(
    shared: &Arc<Shared>,
    job: &Job,
    last: &mut tokio::time::Instant,
    delay: Duration,
) -> (SitemapRecord, Parsed) {
    let mut rec = base_record(shared, job, "failed", "");
    let mut headers = Vec::new();
    if let Some(e) = rec.etag.clone() {
        headers.push((IF_NONE_MATCH, e));
    }
    if let Some(m) = rec.last_modified.clone() {
        headers.push((IF_MODIFIED_SINCE, m));
    }
    let mut url = job.url.clone();
    let empty = || Parsed::empty();
    for _ in 0..=MAX_REDIRECTS {
        let resp = match polite_get(shared, &url, &headers, last, delay).await {
            Ok(r) => r,
            Err(e) => {
                rec.reason = classify_error(e.as_ref()).to_string();
                tracing::warn!("sitemap {}: failed ({}: {e})", job.url, rec.reason);
                return (rec, empty());
            }
        };
        rec.http_status = Some(i32::from(resp.status));
        rec.fetched_time = Some(now_millis());
        match resp.status {
            200..=299 => return parse_ok(shared, job, rec, resp).await,
            304 => return (not_modified(shared, job, rec), empty()),
            300..=399 => {
                let target = resp.header("location").and_then(|l| url.join(l).ok());
                match target {
                    Some(t) if t.origin() == url.origin() => url = t,
                    Some(_) => {
                        rec.reason = "redirect_other_host".into();
                        return (rec, empty());
                    }
                    None => {
                        rec.reason = "bad_redirect".into();
                        return (rec, empty());
                    }
                }
            }
            code => {
                rec.reason = format!("http_{code}");
                tracing::warn!("sitemap {}: failed (HTTP {code})", job.url);
                return (rec, empty());
            }
        }
    }
    rec.reason = "too_many_redirects".into();
    (rec, Parsed::empty())
}

/// The record and URLs of a sitemap that answered 2xx: its body parsed (off the
/// async workers) within `[sitemaps]`'s limits.
async fn parse_ok(
    shared: &Shared,
    job: &Job,
    mut rec: SitemapRecord,
    resp: Fetched,
) -> (SitemapRecord, Parsed) {
    rec.etag = resp.header("etag").map(str::to_string);
    rec.last_modified = resp.header("last-modified").map(str::to_string);
    let truncated = resp.truncated;
    let body = resp.body;
    let policy = shared.policy.clone();
    let scope = job.scope.clone();
    let sm_url = job.url.clone();
    let limits = Limits {
        max_urls: shared.cfg.sitemaps.max_urls,
        max_bytes: shared.cfg.sitemaps.max_bytes,
    };
    let parsed = tokio::task::spawn_blocking(move || {
        let ctx = Context {
            sitemap: &sm_url,
            scope: &scope,
            policy: &policy,
            limits,
        };
        let mut p = parse::parse(&body, &ctx);
        if truncated && !p.too_large {
            p.too_large = true;
            p.note_download_cut(limits.max_bytes);
        }
        p
    })
    .await;
    let parsed = match parsed {
        Ok(p) => p,
        Err(e) => {
            rec.reason = format!("parser_failed: {e}");
            return (rec, Parsed::empty());
        }
    };
    rec.status = "ok".into();
    rec.reason = if parsed.problem_count > 0 {
        "malformed".into()
    } else {
        "ok".into()
    };
    rec.format = Some(parsed.format.as_str().to_string());
    rec.gzipped = parsed.gzipped;
    rec.bytes = parsed.bytes as i64;
    rec.urls_found = (parsed.urls.len() + parsed.sitemaps.len()) as i64;
    rec.urls_rejected = parsed.rejected as i64;
    rec.urls_cut = parsed.cut as i64;
    rec.problems = parsed.problem_count as i64;
    rec.first_problem = parsed.problems.first().map(|p| p.to_string());
    for p in &parsed.problems {
        tracing::debug!("sitemap {}: {p}", job.url);
    }
    (rec, parsed)
}

/// The record of a sitemap that answered 304: unchanged, it keeps what the last
/// fetch found.
fn not_modified(shared: &Shared, job: &Job, mut rec: SitemapRecord) -> SitemapRecord {
    if let Some(prev) = shared.known.get(job.url.as_str()) {
        rec.format = prev.format.clone();
        rec.gzipped = prev.gzipped;
        rec.bytes = prev.bytes;
        rec.problems = prev.problems;
        rec.first_problem = prev.first_problem.clone();
    }
    rec.status = "not_modified".into();
    rec.reason = "http_304".into();
    rec
}
