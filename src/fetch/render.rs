//! JavaScript rendering (`[fetch.render]`): a fetched HTML page of a rendered host is
//! loaded into headless Chromium ([`crate::net::browser`]), its scripts run, and the
//! DOM they leave goes into the content row beside the response (`rendered`).
//!
//! The browser never reaches a server on its own. Every request it makes pauses
//! (`Fetch.requestPaused`) and is answered here:
//! - the page itself with the response already fetched (no second request);
//! - a resource type not in `fetch.render.resource_types`, a non-GET request, a host
//!   of `fetch.render.block_hosts`, or a URL robots.txt disallows: refused, nothing
//!   sent;
//! - anything else: fetched by the fetcher's own client through the politeness gate
//!   of its host's queue (the same queue the host's pages wait in: its delay, its
//!   Crawl-delay, the global connection cap), its robots.txt fetched first if this
//!   run has not yet, then handed to the browser.
//!
//! The DOM is taken once the load event fired and no request has been in flight for
//! `fetch.render.settle_time`, or when `fetch.render.timeout` is over (then it is
//! the DOM as it stood: `render_status` `time_budget`). At most
//! `fetch.render.max_pages` tabs are open; one Chromium serves the whole run and is
//! started again if it dies.

use std::collections::HashSet;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use base64::Engine as _;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::config::RenderConfig;
use crate::datum::now_millis;
use crate::error::{Error, Result};
use crate::fetch::origins::robots_for;
use crate::fetch::page::stored_headers;
use crate::fetch::state::Shared;
use crate::fetch::worker::{apply_signal, gated};
use crate::net::browser::{Browser, BrowserError, Page, chromium_path};
use crate::net::hostpattern::HostPatterns;
use crate::net::outcome::{HostSignal, classify_error, failure_signal, response_signal};
use crate::net::robots::Robots;
use crate::records::{ContentRecord, Header};

/// `render_status` of a page whose DOM was taken after its scripts settled.
pub const RENDERED: &str = "rendered";
/// `render_status` of a page whose DOM was taken at `fetch.render.timeout`.
pub const TIME_BUDGET: &str = "time_budget";
/// `render_status` of a page the browser could not render (no DOM; parse reads the
/// response).
pub const RENDER_FAILED: &str = "render_failed";

/// Times Chromium may be started in one run (the first start and restarts after it
/// died or hung) before rendering is given up.
const MAX_LAUNCHES: u32 = 3;
/// Longest wait for the DOM after the budget is over (a script stuck in a loop).
const DOM_GRACE: Duration = Duration::from_secs(5);
/// Time beyond the budget and the DOM's grace after which Chromium counts as hung.
const HUNG_MARGIN: Duration = Duration::from_secs(15);
/// Response headers not passed to the browser: the body is already decoded and whole.
const HOP_HEADERS: &[&str] = &[
    "content-encoding",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
];

/// What rendering did in one run, for the summary line.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RenderStats {
    /// Pages whose DOM was taken after their scripts settled.
    pub rendered: u64,
    /// Pages whose DOM was taken at the time budget.
    pub time_budget: u64,
    /// Pages the browser failed on.
    pub failed: u64,
    /// Requests the browser made that were fetched for it.
    pub requests: u64,
    /// Requests refused: blocked hosts, resource types, non-GET methods.
    pub blocked: u64,
    /// Requests refused because robots.txt disallows them.
    pub robots_denied: u64,
}

impl RenderStats {
    /// Adds another task's figures.
    pub fn add(&mut self, o: &RenderStats) {
        self.rendered += o.rendered;
        self.time_budget += o.time_budget;
        self.failed += o.failed;
        self.requests += o.requests;
        self.blocked += o.blocked;
        self.robots_denied += o.robots_denied;
    }

    /// Whether any page was rendered or tried.
    pub fn any(&self) -> bool {
        self.rendered + self.time_budget + self.failed > 0
    }

    /// The summary's part: `rendered 3 (time_budget 0, failed 0), browser requests 9 (blocked 2, robots_denied 1)`.
    pub fn line(&self) -> String {
        format!(
            "rendered {} (time_budget {}, failed {}), browser requests {} (blocked {}, robots_denied {})",
            self.rendered,
            self.time_budget,
            self.failed,
            self.requests,
            self.blocked,
            self.robots_denied
        )
    }
}

#[derive(Default)]
struct Counters {
    rendered: AtomicU64,
    time_budget: AtomicU64,
    failed: AtomicU64,
    requests: AtomicU64,
    blocked: AtomicU64,
    robots_denied: AtomicU64,
}

/// The renderer of one fetch run.
pub struct Renderer {
    hosts: HostPatterns<()>,
    blocked: HostPatterns<()>,
    types: HashSet<String>,
    tabs: tokio::sync::Semaphore,
    timeout: Duration,
    settle: Duration,
    exe: PathBuf,
    browser: tokio::sync::Mutex<Option<Arc<Browser>>>,
    launches: AtomicU32,
    counters: Counters,
}

impl Renderer {
    /// The renderer of `cfg`; `None` when no host is rendered. Refuses to start when
    /// hosts are to be rendered and no Chromium is installed.
    pub fn new(cfg: &RenderConfig) -> Result<Option<Renderer>> {
        if cfg.hosts.is_empty() {
            return Ok(None);
        }
        let exe = chromium_path(&cfg.chromium)
            .ok_or_else(|| Error::input("fetch.render.hosts", BrowserError::Missing.to_string()))?;
        let patterns =
            |list: &[String]| HostPatterns::new(list.iter().map(|p| (p.to_string(), ())));
        Ok(Some(Renderer {
            hosts: patterns(&cfg.hosts),
            blocked: patterns(&cfg.block_hosts),
            types: cfg.resource_types.iter().cloned().collect(),
            tabs: tokio::sync::Semaphore::new(cfg.max_pages),
            timeout: Duration::from_secs_f64(cfg.timeout),
            settle: Duration::from_secs_f64(cfg.settle_time),
            exe,
            browser: tokio::sync::Mutex::new(None),
            launches: AtomicU32::new(0),
            counters: Counters::default(),
        }))
    }

    /// Whether the page of `content` is rendered: its host matches `fetch.render.hosts`
    /// and it is HTML: declared HTML (or undeclared and starting with `<`), and not a
    /// document or feed by its first bytes (a PDF served as `text/html` stays a PDF
    /// for parse).
    pub fn wants(&self, content: &ContentRecord) -> bool {
        let body = content
            .content
            .strip_prefix(b"\xEF\xBB\xBF")
            .unwrap_or(&content.content);
        let body = body.trim_ascii_start();
        let html = match content.content_type.as_deref() {
            Some(ct) => {
                let ct = ct.to_ascii_lowercase();
                ct.contains("text/html") || ct.contains("application/xhtml")
            }
            None => body.starts_with(b"<"),
        };
        let head = &body[..body.len().min(256)];
        let lower = String::from_utf8_lossy(head).to_ascii_lowercase();
        let not_html = body.starts_with(b"%PDF-")
            || body.starts_with(b"PK\x03\x04")
            || ["<rss", "<feed", "<rdf:rdf"]
                .iter()
                .any(|m| lower.starts_with(m) || (lower.starts_with("<?xml") && lower.contains(m)));
        html && !not_html && self.hosts.get(&content.host).is_some()
    }

    /// What rendering did so far.
    pub fn stats(&self) -> RenderStats {
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        RenderStats {
            rendered: get(&c.rendered),
            time_budget: get(&c.time_budget),
            failed: get(&c.failed),
            requests: get(&c.requests),
            blocked: get(&c.blocked),
            robots_denied: get(&c.robots_denied),
        }
    }

    /// Closes the browser (at the end of the run).
    pub async fn shutdown(&self) {
        let browser = self.browser.lock().await.take();
        drop(browser);
    }

    /// The running browser, started (again) when there is none or it died.
    async fn browser(&self) -> Option<Arc<Browser>> {
        let mut slot = self.browser.lock().await;
        if let Some(b) = slot.as_ref()
            && !b.is_closed()
        {
            return Some(b.clone());
        }
        *slot = None;
        let n = self.launches.fetch_add(1, Ordering::Relaxed) + 1;
        if n > MAX_LAUNCHES {
            if n == MAX_LAUNCHES + 1 {
                tracing::error!(
                    "rendering: Chromium stopped after {MAX_LAUNCHES} starts; the run's remaining pages are stored unrendered (render_status render_failed)"
                );
            }
            return None;
        }
        match Browser::launch(&self.exe).await {
            Ok(b) => {
                if n > 1 {
                    tracing::warn!("Chromium restarted (start {n} of at most {MAX_LAUNCHES})");
                }
                let b = Arc::new(b);
                *slot = Some(b.clone());
                Some(b)
            }
            Err(e) => {
                tracing::error!(
                    "rendering: {e}{}",
                    if n == MAX_LAUNCHES {
                        "; no more attempts: the run's remaining pages are stored unrendered (render_status render_failed)"
                    } else {
                        ""
                    }
                );
                None
            }
        }
    }

    /// Renders the page of `content` (fetched, HTML, of a rendered host): sets its
    /// `rendered` DOM and `render_status`.
    pub(super) async fn render(&self, shared: &Shared, content: &mut ContentRecord) {
        let _tab = self.tabs.acquire().await;
        let started = Instant::now();
        // Every step is bounded: a Chromium that stops answering is dropped (killed)
        // and started again for the next page.
        let limit = self.timeout + DOM_GRACE + HUNG_MARGIN;
        let result = match self.browser().await {
            Some(browser) => {
                let run = async {
                    let mut page = browser.new_page().await?;
                    // The tab closes when `page` drops, also when this is cut.
                    self.drive(shared, &mut page, content, started).await
                };
                match tokio::time::timeout(limit, run).await {
                    Ok(r) => r,
                    Err(_) => {
                        tracing::warn!(
                            "rendering {}: Chromium did not answer within {limit:?}; it is restarted",
                            content.url
                        );
                        let mut slot = self.browser.lock().await;
                        if slot.as_ref().is_some_and(|b| Arc::ptr_eq(b, &browser)) {
                            *slot = None;
                        }
                        Err(BrowserError::Closed)
                    }
                }
            }
            None => Err(BrowserError::Closed),
        };
        let c = &self.counters;
        match result {
            Ok((dom, status)) => {
                let cap = shared.cfg.max_content_bytes;
                content.rendered = Some(cut_to(dom, cap));
                content.render_status = Some(status.into());
                let n = if status == RENDERED {
                    &c.rendered
                } else {
                    &c.time_budget
                };
                n.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(
                    "{}: {status} in {} ms",
                    content.url,
                    started.elapsed().as_millis()
                );
            }
            Err(e) => {
                tracing::warn!(
                    "{}: not rendered ({e}); parse reads the response",
                    content.url
                );
                content.render_status = Some(RENDER_FAILED.into());
                c.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Records a render cut before it ended (the time limit, or a signal's grace
    /// period): no DOM, `render_failed`.
    pub(super) fn cut(&self, content: &mut ContentRecord) {
        tracing::debug!("{}: rendering cut (time limit or signal)", content.url);
        content.rendered = None;
        content.render_status = Some(RENDER_FAILED.into());
        self.counters.failed.fetch_add(1, Ordering::Relaxed);
    }

    /// Loads the page in `page`, answers its requests until it settles or the budget
    /// is over, and returns its DOM with the render status.
    async fn drive(
        &self,
        shared: &Shared,
        page: &mut Page,
        content: &ContentRecord,
        started: Instant,
    ) -> std::result::Result<(String, &'static str), BrowserError> {
        let deadline = started + self.timeout;
        page.call("Page.enable", json!({})).await?;
        page.call(
            "Fetch.enable",
            json!({"patterns": [{"urlPattern": "*", "requestStage": "Request"}]}),
        )
        .await?;
        let mut navigated = Some(page.send("Page.navigate", json!({"url": content.url})));
        let mut inflight: FuturesUnordered<Pending<'_>> = FuturesUnordered::new();
        // Requests paused and not answered yet (fetched in `inflight`).
        let mut waiting: HashSet<String> = HashSet::new();
        let mut loaded = false;
        let mut document_served = false;
        let mut quiet_since = Instant::now();
        let status = loop {
            let settled_at = (loaded && inflight.is_empty()).then(|| quiet_since + self.settle);
            let step = tokio::select! {
                ev = page.next_event() => Step::Event(ev),
                Some((id, answer)) = inflight.next(), if !inflight.is_empty() => Step::Answered(id, answer),
                r = async {
                    match navigated.as_mut() {
                        Some(rx) => rx.await,
                        None => std::future::pending().await,
                    }
                }, if navigated.is_some() => Step::Navigated(r.ok().and_then(Result::ok)),
                _ = tokio::time::sleep_until(deadline) => Step::Budget,
                _ = tokio::time::sleep_until(settled_at.unwrap_or(deadline)), if settled_at.is_some() => Step::Settled,
            };
            match step {
                Step::Event(None) => return Err(BrowserError::Closed),
                Step::Event(Some(ev)) => match ev.method.as_str() {
                    // The load of about:blank, or of an error page, does not count.
                    "Page.loadEventFired" if document_served => {
                        loaded = true;
                        quiet_since = Instant::now();
                    }
                    "Page.javascriptDialogOpening" => {
                        page.post("Page.handleJavaScriptDialog", json!({"accept": true}));
                    }
                    "Fetch.requestPaused" => {
                        let p = &ev.params;
                        let id = p["requestId"].as_str().unwrap_or_default().to_string();
                        let kind = p["resourceType"].as_str().unwrap_or("Other");
                        if kind == "Document" && !document_served {
                            document_served = true;
                            let status = u16::try_from(content.http_status).unwrap_or(200);
                            fulfill(page, &id, status, &content.headers, &content.content);
                            continue;
                        }
                        match self.decide(shared, p, kind) {
                            Ok(url) => {
                                waiting.insert(id.clone());
                                inflight.push(Box::pin(async move {
                                    let a = self.subrequest(shared, url).await;
                                    (id, a)
                                }));
                            }
                            Err(refusal) => send_answer(page, &id, refusal),
                        }
                    }
                    _ => {}
                },
                Step::Answered(id, answer) => {
                    waiting.remove(&id);
                    send_answer(page, &id, answer);
                    quiet_since = Instant::now();
                }
                Step::Navigated(answer) => {
                    navigated = None;
                    let error = answer
                        .as_ref()
                        .and_then(|v| v["errorText"].as_str())
                        .filter(|e| !e.is_empty());
                    if let Some(e) = error {
                        return Err(BrowserError::Command {
                            method: "Page.navigate".into(),
                            message: e.to_string(),
                        });
                    }
                }
                Step::Budget => break TIME_BUDGET,
                Step::Settled => break RENDERED,
            }
        };
        // Requests still waiting for their queue are dropped with `inflight` (their
        // queues keep their distance) and fail in the page, so that no script waits
        // on them while the DOM is read.
        drop(inflight);
        for id in waiting {
            send_answer(page, &id, Answer::Fail("Aborted"));
        }
        let grace = deadline
            .saturating_duration_since(Instant::now())
            .max(DOM_GRACE);
        let dom = self
            .read_dom(page, shared.cfg.max_content_bytes, grace)
            .await?;
        let url = dom["url"].as_str().unwrap_or_default();
        let html = dom["html"].as_str();
        match html {
            Some(html) if url != "about:blank" && !url.starts_with("chrome-error:") => {
                Ok((html.to_string(), status))
            }
            _ => Err(BrowserError::Command {
                method: "Runtime.evaluate".into(),
                message: format!("no DOM of the page (the tab shows {url:?})"),
            }),
        }
    }

    /// The tab's URL and DOM (cut to `cap` characters in the page), as
    /// `{"url", "html"}`; requests the page makes meanwhile are refused.
    async fn read_dom(
        &self,
        page: &mut Page,
        cap: usize,
        grace: Duration,
    ) -> std::result::Result<Value, BrowserError> {
        let expr = format!(
            "({{url: document.URL, html: ((document.doctype ? new XMLSerializer().serializeToString(document.doctype) + '\\n' : '') + (document.documentElement ? document.documentElement.outerHTML : '')).slice(0, {cap})}})"
        );
        let mut answer = page.send(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true}),
        );
        let until = Instant::now() + grace;
        loop {
            tokio::select! {
                r = &mut answer => {
                    let v = r.map_err(|_| BrowserError::Closed)??;
                    return match v.get("exceptionDetails") {
                        Some(e) => Err(BrowserError::Command {
                            method: "Runtime.evaluate".into(),
                            message: format!("the DOM could not be read: {e}"),
                        }),
                        None => Ok(v["result"]["value"].clone()),
                    };
                }
                ev = page.next_event() => match ev {
                    None => return Err(BrowserError::Closed),
                    Some(ev) if ev.method == "Fetch.requestPaused" => {
                        let id = ev.params["requestId"].as_str().unwrap_or_default();
                        send_answer(page, id, Answer::Fail("Aborted"));
                    }
                    Some(_) => {}
                },
                _ = tokio::time::sleep_until(until) => {
                    return Err(BrowserError::Command {
                        method: "Runtime.evaluate".into(),
                        message: format!("the page's scripts held it for {grace:?} past its budget"),
                    });
                }
            }
        }
    }

    /// Whether a paused request may be fetched (its URL) or is refused: a resource
    /// type not allowed, a method other than GET, a blocked host, or (a task of a
    /// partitioned fetch) a host of a partition another task fetches, whose
    /// politeness that task keeps.
    fn decide(
        &self,
        shared: &Shared,
        p: &Value,
        kind: &str,
    ) -> std::result::Result<url::Url, Answer> {
        let c = &self.counters;
        let refuse = |counter: &AtomicU64| {
            counter.fetch_add(1, Ordering::Relaxed);
            Answer::Fail("BlockedByClient")
        };
        let method = p["request"]["method"].as_str().unwrap_or("GET");
        let url = p["request"]["url"].as_str().unwrap_or_default();
        let parsed = url::Url::parse(url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some());
        let Some(parsed) = parsed else {
            return Err(refuse(&c.blocked));
        };
        let host = parsed.host_str().unwrap_or_default().to_ascii_lowercase();
        let foreign = shared
            .own
            .as_ref()
            .is_some_and(|(own, pt)| !own.contains(&pt.of_host(&host)));
        if !self.types.contains(kind)
            || !method.eq_ignore_ascii_case("GET")
            || self.blocked.get(&host).is_some()
            || foreign
        {
            tracing::debug!("rendering: refused {method} {url} ({kind})");
            return Err(refuse(&c.blocked));
        }
        Ok(parsed)
    }

    /// Fetches one request of the browser through its host's queue.
    async fn subrequest(&self, shared: &Shared, url: url::Url) -> Answer {
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        let queue = shared.queue_for(&host).await;
        if shared.cfg.respect_robots {
            let Some((robots, _)) = robots_for(shared, &queue, &url, &host).await else {
                return Answer::Fail("Aborted");
            };
            if matches!(*robots, Robots::Unavailable) {
                return Answer::Fail("Failed");
            }
            if !robots.allowed(url.as_str()) {
                tracing::debug!("rendering: {url} disallowed by robots.txt");
                self.counters.robots_denied.fetch_add(1, Ordering::Relaxed);
                return Answer::Fail("BlockedByClient");
            }
        }
        if queue.closed_for(&host).is_some() {
            return Answer::Fail("Aborted");
        }
        let cap = shared.cfg.max_content_bytes;
        let got = gated(shared, &queue, || async {
            // What the answer says about the host, as for a page: Retry-After waits,
            // failures count towards fetch.max_host_exceptions.
            let (got, signal) = match shared.http.get(&url, &[], cap).await {
                Ok(f) => {
                    let signal = response_signal(f.status, f.header("retry-after"), now_millis());
                    (Ok(f), signal)
                }
                Err(e) => {
                    let reason = classify_error(e.as_ref());
                    (Err((reason, e.to_string())), failure_signal(reason))
                }
            };
            let extra = match signal {
                HostSignal::RetryAfter(d) => Some(d),
                _ => None,
            };
            ((got, signal), extra)
        })
        .await;
        self.counters.requests.fetch_add(1, Ordering::Relaxed);
        let Some((got, signal)) = got else {
            return Answer::Fail("Aborted");
        };
        apply_signal(shared, &queue, &host, signal);
        match got {
            Err((reason, e)) => {
                tracing::debug!("rendering: {url}: {reason}: {e}");
                shared.record_contact(&url, &host, Some(reason));
                Answer::Fail(match reason {
                    "connection_refused" => "ConnectionRefused",
                    "timeout" => "TimedOut",
                    "dns_failure" => "NameNotResolved",
                    _ => "Failed",
                })
            }
            Ok(f) => {
                shared.record_contact(&url, &host, None);
                Answer::Fulfill {
                    status: f.status,
                    headers: stored_headers(&f.headers),
                    body: f.body,
                }
            }
        }
    }
}

/// A request of the browser being fetched: its id and its answer.
type Pending<'a> = Pin<Box<dyn Future<Output = (String, Answer)> + Send + 'a>>;

/// One turn of the render loop.
enum Step {
    Event(Option<crate::net::browser::Event>),
    Answered(String, Answer),
    /// `Page.navigate` answered (its result, `None` when it failed).
    Navigated(Option<Value>),
    Budget,
    Settled,
}

/// How a paused request is answered.
enum Answer {
    /// With this response.
    Fulfill {
        status: u16,
        headers: Vec<Header>,
        body: Vec<u8>,
    },
    /// As failed, with this network error (a DevTools `ErrorReason`).
    Fail(&'static str),
}

/// Sends the answer to paused request `id` (not awaited: the loop goes on).
fn send_answer(page: &Page, id: &str, answer: Answer) {
    match answer {
        Answer::Fail(reason) => page.post(
            "Fetch.failRequest",
            json!({"requestId": id, "errorReason": reason}),
        ),
        Answer::Fulfill {
            status,
            headers,
            body,
        } => fulfill(page, id, status, &headers, &body),
    }
}

/// Answers paused request `id` with a response (the page's own request with the
/// stored response, borrowed from its content row).
fn fulfill(page: &Page, id: &str, status: u16, headers: &[Header], body: &[u8]) {
    let headers: Vec<Value> = headers
        .iter()
        .filter(|h| !HOP_HEADERS.contains(&h.name.to_ascii_lowercase().as_str()))
        .map(|h| json!({"name": h.name, "value": h.value}))
        .collect();
    page.post(
        "Fetch.fulfillRequest",
        json!({
            "requestId": id,
            "responseCode": status,
            "responseHeaders": headers,
            "body": base64::engine::general_purpose::STANDARD.encode(body),
        }),
    );
}

/// `s` cut to at most `cap` bytes, at a character boundary.
fn cut_to(mut s: String, cap: usize) -> String {
    if s.len() > cap {
        let mut end = cap;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_keeps_whole_characters() {
        assert_eq!(cut_to("héllo".into(), 2), "h");
        assert_eq!(cut_to("héllo".into(), 3), "hé");
        assert_eq!(cut_to("abc".into(), 10), "abc");
    }

    #[test]
    fn only_html_of_rendered_hosts_is_rendered() {
        let cfg = RenderConfig {
            hosts: vec!["*.app.test".into()],
            chromium: PathBuf::from("/bin/sh"),
            ..RenderConfig::default()
        };
        let r = Renderer::new(&cfg).unwrap().unwrap();
        let row = |host: &str, ct: Option<&str>, body: &[u8]| ContentRecord {
            url: format!("http://{host}/"),
            host: host.into(),
            fetch_time: 0,
            http_status: 200,
            content_type: ct.map(str::to_string),
            headers: Vec::new(),
            content: body.to_vec(),
            truncated: false,
            ip_address: None,
            score: 1.0,
            depth: 0,
            rendered: None,
            render_status: None,
        };
        assert!(r.wants(&row("www.app.test", Some("text/html; charset=utf-8"), b"x")));
        assert!(r.wants(&row("www.app.test", None, b"  <!doctype html>")));
        assert!(!r.wants(&row("www.app.test", Some("application/pdf"), b"%PDF")));
        // Documents and feeds by their bytes, whatever the server calls them.
        assert!(!r.wants(&row("www.app.test", Some("text/html"), b"%PDF-1.4 ...")));
        assert!(!r.wants(&row("www.app.test", Some("text/html"), b"PK\x03\x04...")));
        let rss = b"<?xml version=\"1.0\"?>\n<rss version=\"2.0\"><channel>";
        assert!(!r.wants(&row("www.app.test", None, rss)));
        assert!(r.wants(&row("www.app.test", None, b"<?xml version=\"1.0\"?><html>")));
        assert!(!r.wants(&row("app.test", Some("text/html"), b"<p>")));
        assert!(Renderer::new(&RenderConfig::default()).unwrap().is_none());
        let missing = RenderConfig {
            chromium: PathBuf::from("/nonexistent/chromium"),
            ..cfg
        };
        let err = Renderer::new(&missing).err().unwrap().to_string();
        assert!(
            err.contains("fetch.render.hosts") && err.contains("chromium"),
            "{err}"
        );
    }
}
