//! `search --serve`: the search web page and its JSON API (docs/search.md, "Search web page").
//!
//! An HTTP/1.1 server (hyper on tokio) over one open [`Searcher`]:
//!
//! | route | answer |
//! |---|---|
//! | `GET /?q=QUERY&page=N` | the HTML page: a query box (a GET form), the results (title linked, URL, snippet with the matches in `<b>`, score, host), the total, pages of [`PAGE_SIZE`] |
//! | `GET /api/search?q=QUERY&top=K&page=N` | JSON: `query`, `total`, `relaxed`, `page`, `top`, `took_ms`, `hits[{rank, url, title, host, score, snippet, snippet_html}]` |
//!
//! An empty or malformed query, or a bad `page`/`top`, is the user's mistake: the page
//! shows the message (status 400), the API answers `400 {"error": "..."}`; only a
//! failing index is a 500. Results beyond the [`MAX_RESULT_WINDOW`]th are not served
//! (Elasticsearch's `index.max_result_window`). The page needs no JavaScript and loads
//! nothing from elsewhere (its Content-Security-Policy forbids it).
//!
//! It listens on loopback unless [`ServeOpts::public`] says otherwise. The first
//! SIGINT or SIGTERM ([`crate::signal`]) stops accepting, lets the requests in
//! flight finish (at most [`SHUTDOWN_GRACE`]) and returns; a second one ends the
//! process at once.

use std::convert::Infallible;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use serde_json::json;

use crate::error::{Error, Result};

use super::search::{Ranking, SearchRequest, SearchResults, Searcher, escape_into};

/// The address `search --serve` listens on when none is given.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8984";
/// Results per page of the HTML page (and the API's default `top`).
pub const PAGE_SIZE: usize = 10;
/// The API's largest `top`.
pub const MAX_TOP: usize = 100;
pub use super::search::MAX_RESULT_WINDOW;
/// How long requests in flight may take to finish after a stop signal.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// How long a client may take to send a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How to serve.
#[derive(Debug, Clone)]
pub struct ServeOpts {
    /// Where to listen (port 0: any free port; the bound address goes to `on_ready`).
    pub addr: SocketAddr,
    /// Allow an address other than loopback (every interface, a LAN address).
    pub public: bool,
    /// The ranking of every search.
    pub ranking: Ranking,
}

/// What a server did, once stopped.
#[derive(Debug, Clone)]
pub struct ServeReport {
    /// The address it listened on.
    pub addr: SocketAddr,
    /// Requests answered.
    pub requests: u64,
    /// The signal that stopped it.
    pub signal: &'static str,
}

impl std::fmt::Display for ServeReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "served {} requests on http://{}/, stopped by {}",
            self.requests, self.addr, self.signal
        )
    }
}

/// What every request handler shares.
struct State {
    searcher: Searcher,
    ranking: Ranking,
    requests: AtomicU64,
}

/// Serves the search page and API over `searcher` until SIGINT or SIGTERM (install
/// [`crate::signal::install`] first, or it runs until the process ends). Calls
/// `on_ready` with the bound address once it accepts connections.
pub fn serve(
    searcher: Searcher,
    opts: &ServeOpts,
    on_ready: impl FnOnce(SocketAddr),
) -> Result<ServeReport> {
    if !opts.addr.ip().is_loopback() && !opts.public {
        return Err(Error::Input {
            input: format!("--serve {}", opts.addr),
            message: "not a loopback address: the search page is served on 127.0.0.1 or ::1 \
                      unless --public says it may be reached from other machines"
                .into(),
        });
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::Net(format!("cannot start the server's runtime: {e}")))?;
    let state = Arc::new(State {
        searcher,
        ranking: opts.ranking,
        requests: AtomicU64::new(0),
    });
    let wanted = opts.addr;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(wanted).await.map_err(|e| {
            Error::Net(format!(
                "cannot listen on {wanted}: {e} (another server on that port? give another \
                 address, or port 0 for any free one)"
            ))
        })?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::Net(format!("the address bound for {wanted}: {e}")))?;
        on_ready(addr);
        let graceful = GracefulShutdown::new();
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        let signal = loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let stream = match accepted {
                        Ok((stream, _)) => stream,
                        Err(e) => {
                            // Out of file descriptors and the like: wait, go on.
                            tracing::warn!("accept on {addr}: {e}");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    let state = Arc::clone(&state);
                    let service = service_fn(move |req| {
                        let state = Arc::clone(&state);
                        async move { Ok::<_, Infallible>(handle(state, req).await) }
                    });
                    let conn = http1::Builder::new()
                        .timer(TokioTimer::new())
                        .header_read_timeout(HEADER_TIMEOUT)
                        .serve_connection(TokioIo::new(stream), service);
                    let conn = graceful.watch(conn);
                    tokio::spawn(async move {
                        if let Err(e) = conn.await {
                            tracing::debug!("connection: {e}");
                        }
                    });
                }
                _ = tick.tick() => {
                    if let Some(signal) = crate::signal::received() {
                        break signal;
                    }
                }
            }
        };
        drop(listener);
        tokio::select! {
            _ = graceful.shutdown() => {}
            _ = tokio::time::sleep(SHUTDOWN_GRACE) => {
                tracing::warn!("requests still in flight after {SHUTDOWN_GRACE:?}: dropped");
            }
        }
        Ok(ServeReport {
            addr,
            requests: state.requests.load(Ordering::Relaxed),
            signal,
        })
    })
}

/// The query-string parameters the routes read.
#[derive(Debug, Default, Clone)]
struct Params {
    q: Option<String>,
    page: Option<String>,
    top: Option<String>,
}

impl Params {
    fn parse(query: Option<&str>) -> Params {
        let mut p = Params::default();
        for (k, v) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            let slot = match k.as_ref() {
                "q" => &mut p.q,
                "page" => &mut p.page,
                "top" => &mut p.top,
                _ => continue,
            };
            // The first value of a repeated parameter wins.
            if slot.is_none() {
                *slot = Some(v.into_owned());
            }
        }
        p
    }
}

/// A number parameter: absent is `default`; otherwise an integer in `1..=max`.
fn number(
    name: &str,
    value: Option<&str>,
    default: usize,
    max: usize,
) -> std::result::Result<usize, String> {
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(default);
    };
    match v.parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!(
            "{name} must be a whole number from 1 to {max}, not {v:?}"
        )),
    }
}

/// A search the user asked for, checked: `(query, page, top)`.
fn checked(p: &Params, default_top: usize) -> std::result::Result<(String, usize, usize), String> {
    let q = p.q.clone().unwrap_or_default();
    let top = number("top", p.top.as_deref(), default_top, MAX_TOP)?;
    let page = number("page", p.page.as_deref(), 1, MAX_RESULT_WINDOW / top).map_err(|e| {
        format!("{e} (only the first {MAX_RESULT_WINDOW} results are served: narrow the query)")
    })?;
    Ok((q, page, top))
}

/// The outcome of one search: results, the user's mistake (400) or the index's
/// failure (500).
enum Outcome {
    Found(SearchResults, Duration),
    BadRequest(String),
    Failed(String),
}

async fn run_search(state: &Arc<State>, query: String, page: usize, top: usize) -> Outcome {
    let req = SearchRequest {
        query,
        top,
        offset: (page - 1) * top,
        ranking: state.ranking,
        facets: true,
    };
    let state = Arc::clone(state);
    let started = Instant::now();
    let done = tokio::task::spawn_blocking(move || state.searcher.search(&req)).await;
    match done {
        Ok(Ok(results)) => Outcome::Found(results, started.elapsed()),
        Ok(Err(Error::Query { message, .. })) => Outcome::BadRequest(message),
        Ok(Err(e)) => {
            tracing::error!("search failed: {e}");
            Outcome::Failed(format!("the index could not be searched: {e}"))
        }
        Err(e) => {
            tracing::error!("search task: {e}");
            Outcome::Failed(format!("the search stopped unexpectedly: {e}"))
        }
    }
}

async fn handle(state: Arc<State>, req: Request<Incoming>) -> Response<Full<Bytes>> {
    state.requests.fetch_add(1, Ordering::Relaxed);
    let started = Instant::now();
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let response = if method != Method::GET && method != Method::HEAD {
        let mut r = text(
            StatusCode::METHOD_NOT_ALLOWED,
            "only GET and HEAD are served\n",
        );
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        r
    } else {
        let params = Params::parse(req.uri().query());
        match path.as_str() {
            "/" => page(&state, &params).await,
            "/api/search" => api(&state, &params).await,
            _ => text(
                StatusCode::NOT_FOUND,
                "not found: the search page is at / and the API at /api/search?q=...\n",
            ),
        }
    };
    tracing::debug!(
        "{method} {path} {} in {:.1} ms",
        response.status().as_u16(),
        started.elapsed().as_secs_f64() * 1e3
    );
    response
}

/// `GET /`: the HTML page.
async fn page(state: &Arc<State>, p: &Params) -> Response<Full<Bytes>> {
    let mut view = PageView {
        query: p.q.clone().unwrap_or_default(),
        docs: state.searcher.num_docs(),
        ..PageView::default()
    };
    // The page always shows PAGE_SIZE results a page (its numbering and links assume
    // it); `top` is the API's.
    let paged = Params {
        top: None,
        ..p.clone()
    };
    let status = match (&p.q, checked(&paged, PAGE_SIZE)) {
        // No query yet: the empty search box.
        (None, _) => StatusCode::OK,
        (Some(_), Err(message)) => {
            view.error = Some(message);
            StatusCode::BAD_REQUEST
        }
        (Some(_), Ok((q, page, top))) => match run_search(state, q, page, top).await {
            Outcome::Found(results, took) => {
                view.page = page;
                view.took = took;
                view.results = Some(results);
                StatusCode::OK
            }
            Outcome::BadRequest(message) => {
                view.error = Some(message);
                StatusCode::BAD_REQUEST
            }
            Outcome::Failed(message) => {
                view.error = Some(message);
                StatusCode::INTERNAL_SERVER_ERROR
            }
        },
    };
    let mut r = Response::new(Full::new(Bytes::from(render_page(&view))));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    // Inline CSS, no scripts, nothing from elsewhere; forms go back to this server.
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'",
        ),
    );
    with_common_headers(r)
}

/// `GET /api/search`: the JSON API.
async fn api(state: &Arc<State>, p: &Params) -> Response<Full<Bytes>> {
    if p.q.is_none() {
        return json_response(
            StatusCode::BAD_REQUEST,
            &json!({"error": "the parameter q (the query) is missing: /api/search?q=words"}),
        );
    }
    let (q, page, top) = match checked(p, PAGE_SIZE) {
        Ok(c) => c,
        Err(message) => {
            return json_response(StatusCode::BAD_REQUEST, &json!({ "error": message }));
        }
    };
    match run_search(state, q.clone(), page, top).await {
        Outcome::Found(results, took) => {
            let offset = (page - 1) * top;
            let hits: Vec<_> = results
                .hits
                .iter()
                .enumerate()
                .map(|(i, h)| {
                    json!({
                        "rank": offset + i + 1,
                        "url": h.url,
                        "title": h.title,
                        "host": h.host,
                        "score": h.score,
                        "snippet": h.snippet.text,
                        "snippet_html": h.snippet.to_html(),
                        "section": h.section.as_ref().map(|s| json!({
                            "id": s.id,
                            "heading": s.heading,
                            "url": format!("{}#{}", h.url, fragment(&s.id)),
                        })),
                    })
                })
                .collect();
            json_response(
                StatusCode::OK,
                &json!({
                    "query": q,
                    "total": results.total,
                    "relaxed": results.relaxed,
                    "page": page,
                    "top": top,
                    "took_ms": took.as_secs_f64() * 1e3,
                    "hits": hits,
                    "facets": results.facets,
                }),
            )
        }
        Outcome::BadRequest(message) => {
            json_response(StatusCode::BAD_REQUEST, &json!({ "error": message }))
        }
        Outcome::Failed(message) => json_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            &json!({ "error": message }),
        ),
    }
}

fn json_response(status: StatusCode, body: &serde_json::Value) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    with_common_headers(r)
}

fn text(status: StatusCode, body: &'static str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    with_common_headers(r)
}

fn with_common_headers(mut r: Response<Full<Bytes>>) -> Response<Full<Bytes>> {
    let h = r.headers_mut();
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // Results change as the index is updated.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// What the HTML page shows.
#[derive(Default)]
struct PageView {
    /// The query as typed (shown back in the box).
    query: String,
    /// Documents in the index.
    docs: u64,
    /// The page of results shown (1-based).
    page: usize,
    /// The results, when a search ran.
    results: Option<SearchResults>,
    /// How long the search took.
    took: Duration,
    /// The message for the user, when the search could not run.
    error: Option<String>,
}

const STYLE: &str = "\
body{font:16px/1.45 system-ui,sans-serif;margin:0;color:#202124;background:#fff}\
header{padding:18px 24px;border-bottom:1px solid #e0e0e0;background:#fafafa}\
form{display:flex;gap:10px;align-items:center;max-width:760px}\
.logo{font-weight:700;font-size:22px;color:#1a5e20;text-decoration:none;margin-right:8px}\
input[type=search]{flex:1;font-size:17px;padding:8px 12px;border:1px solid #bbb;border-radius:20px}\
button{font-size:16px;padding:8px 18px;border:1px solid #1a5e20;border-radius:20px;background:#2e7d32;color:#fff;cursor:pointer}\
main{padding:8px 24px 32px;max-width:760px}\
.summary{color:#5f6368;font-size:14px}\
.error{color:#b00020;background:#fdecea;border:1px solid #f5c2c0;padding:10px 14px;border-radius:6px}\
.note{color:#6d4c00;font-size:14px}\
ol.results{list-style:none;padding:0;margin:0}\
li.result{margin:0 0 22px}\
a.title{font-size:19px;color:#1a0dab;text-decoration:none}\
a.title:hover{text-decoration:underline}\
.url{color:#1e6b30;font-size:14px;word-break:break-all}\
.snippet{margin:4px 0;color:#3c4043}\
.snippet b{background:#fff3b0;font-weight:700}\
.meta{color:#70757a;font-size:13px}\
a.section{display:block;font-size:14px;color:#1a0dab;text-decoration:none}\
aside.facets{margin:18px 0;padding:10px 14px;border:1px solid #e0e0e0;border-radius:6px;font-size:14px}\
aside.facets h2{font-size:14px;margin:6px 0 2px;color:#5f6368}\
aside.facets ul{list-style:none;padding:0;margin:0 0 6px;display:flex;flex-wrap:wrap;gap:4px 14px}\
aside.facets .count{color:#70757a}\
nav.pages{display:flex;gap:12px;align-items:center;margin-top:18px}\
nav.pages a,nav.pages span{padding:4px 8px}\
nav.pages .current{font-weight:700;border-bottom:2px solid #2e7d32}\
footer{color:#70757a;font-size:13px;padding:0 24px 24px}";

/// A link to page `page` of results for `query`.
fn page_href(query: &str, page: usize) -> String {
    let q: String = url::form_urlencoded::byte_serialize(query.as_bytes()).collect();
    if page <= 1 {
        format!("/?q={q}")
    } else {
        format!("/?q={q}&amp;page={page}")
    }
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    escape_into(&mut out, s);
    out
}

/// The HTML page for `view`.
fn render_page(view: &PageView) -> String {
    let mut h = String::with_capacity(16 * 1024);
    let title = if view.query.trim().is_empty() {
        "trawl search".to_string()
    } else {
        format!("{} - trawl search", escape(&view.query))
    };
    let _ = write!(
        h,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title}</title><style>{STYLE}</style></head><body>\n\
         <header><form id=\"search\" action=\"/\" method=\"get\" role=\"search\">\
         <a class=\"logo\" href=\"/\">trawl</a>\
         <input type=\"search\" id=\"q\" name=\"q\" value=\"{}\" placeholder=\"Search the crawl\" \
         aria-label=\"Search the crawl\" autofocus>\
         <button type=\"submit\" id=\"go\">Search</button></form></header>\n<main>\n",
        escape(&view.query)
    );
    if let Some(message) = &view.error {
        let _ = writeln!(
            h,
            "<p class=\"error\" id=\"error\" role=\"alert\">{}</p>",
            escape(message)
        );
    }
    if let Some(results) = &view.results {
        render_results(&mut h, view, results);
    } else if view.error.is_none() {
        let _ = writeln!(
            h,
            "<p class=\"summary\">Search {} pages crawled by trawl: words (all must match), \
             \"a phrase\", AND / OR / NOT, -word, site:host, lang:en, title:word.</p>",
            view.docs
        );
    }
    let _ = write!(
        h,
        "</main>\n<footer>{} pages in the index</footer>\n</body></html>\n",
        view.docs
    );
    h
}

fn render_results(h: &mut String, view: &PageView, results: &SearchResults) {
    let first = (view.page - 1) * PAGE_SIZE + 1;
    let shown = results.hits.len();
    if shown == 0 {
        let _ = writeln!(
            h,
            "<p class=\"summary\" id=\"summary\">No results for <b>{}</b> (page {} of {} \
             results).</p>",
            escape(&view.query),
            view.page,
            results.total
        );
    } else {
        let _ = writeln!(
            h,
            "<p class=\"summary\" id=\"summary\">Results <span id=\"first\">{first}</span>&ndash;\
             <span id=\"last\">{}</span> of <span id=\"total\">{}</span> \
             ({:.1} ms)</p>",
            first + shown - 1,
            results.total,
            view.took.as_secs_f64() * 1e3
        );
    }
    if results.relaxed {
        let _ = writeln!(
            h,
            "<p class=\"note\" id=\"relaxed\">No page has every word: these pages have some \
             of them.</p>"
        );
    }
    let _ = writeln!(h, "<ol class=\"results\" id=\"results\" start=\"{first}\">");
    for hit in &results.hits {
        let url = escape(&hit.url);
        let title = escape(
            hit.title
                .as_deref()
                .filter(|t| !t.trim().is_empty())
                .unwrap_or(&hit.url),
        );
        // Only web URLs become links (never javascript: or data: from a page).
        let lower = hit.url.to_ascii_lowercase();
        let link = if lower.starts_with("http://") || lower.starts_with("https://") {
            format!("<a class=\"title\" href=\"{url}\">{title}</a>")
        } else {
            format!("<span class=\"title\">{title}</span>")
        };
        // The section whose heading matches the query: a link to it, under the title.
        let section = match &hit.section {
            Some(sec) if link.starts_with("<a") => format!(
                "<a class=\"section\" href=\"{url}#{}\">&sect; {}</a>",
                escape(&fragment(&sec.id)),
                escape(&sec.heading)
            ),
            _ => String::new(),
        };
        let _ = writeln!(
            h,
            "<li class=\"result\" data-url=\"{url}\">{link}{section}<div class=\"url\">{url}</div>\
             <p class=\"snippet\">{}</p><div class=\"meta\">score <span class=\"score\">{:.3}\
             </span> &middot; {}</div></li>",
            hit.snippet.to_html(),
            hit.score,
            escape(&hit.host)
        );
    }
    h.push_str("</ol>\n");
    render_facets(h, view, results);
    render_pagination(h, view, results.total);
}

/// A section id as a URL fragment: what is not safe in one percent-encoded.
fn fragment(id: &str) -> String {
    url::form_urlencoded::byte_serialize(id.as_bytes())
        .collect::<String>()
        .replace('+', "%20")
}

/// The facet counts: each value a link that narrows the query to it (`site:x`,
/// `lang:x`, `type:x` added to the query).
fn render_facets(h: &mut String, view: &PageView, results: &SearchResults) {
    let Some(f) = &results.facets else { return };
    let groups = [
        ("site", "Sites", &f.site),
        ("lang", "Languages", &f.lang),
        ("type", "Types", &f.content_type),
    ];
    if groups.iter().all(|(_, _, c)| c.is_empty()) {
        return;
    }
    h.push_str("<aside class=\"facets\" id=\"facets\" aria-label=\"Narrow the results\">");
    for (field, label, counts) in groups {
        if counts.is_empty() {
            continue;
        }
        let _ = write!(h, "<section data-facet=\"{field}\"><h2>{label}</h2><ul>");
        for (value, n) in counts {
            let q = format!("{} {field}:{value}", view.query.trim());
            let _ = write!(
                h,
                "<li><a href=\"{}\">{}</a> <span class=\"count\">{n}</span></li>",
                page_href(&q, 1),
                escape(value)
            );
        }
        h.push_str("</ul></section>");
    }
    h.push_str("</aside>\n");
}

/// Previous, up to ten page numbers around the current one, next.
fn render_pagination(h: &mut String, view: &PageView, total: usize) {
    let pages = total.div_ceil(PAGE_SIZE).min(MAX_RESULT_WINDOW / PAGE_SIZE);
    if pages <= 1 {
        return;
    }
    let current = view.page;
    h.push_str("<nav class=\"pages\" aria-label=\"Result pages\">");
    if current > 1 {
        let _ = write!(
            h,
            "<a rel=\"prev\" href=\"{}\">&larr; Previous</a>",
            page_href(&view.query, current - 1)
        );
    }
    let from = current.saturating_sub(5).max(1);
    let to = (from + 9).min(pages);
    for n in from..=to {
        if n == current {
            let _ = write!(
                h,
                "<span class=\"current\" aria-current=\"page\">{n}</span>"
            );
        } else {
            let _ = write!(h, "<a href=\"{}\">{n}</a>", page_href(&view.query, n));
        }
    }
    if current < pages {
        let _ = write!(
            h,
            "<a rel=\"next\" href=\"{}\">Next &rarr;</a>",
            page_href(&view.query, current + 1)
        );
    }
    h.push_str("</nav>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::search::{Hit, Snippet};

    fn hit(url: &str, title: Option<&str>) -> Hit {
        Hit {
            url: url.into(),
            title: title.map(str::to_string),
            host: "h.web.test".into(),
            score: 1.5,
            pagerank: 1.0,
            snippet: Snippet {
                text: "a <tag> & rust & go".into(),
                highlights: vec![10..14, 17..19],
            },
            section: None,
        }
    }

    fn view(hits: Vec<Hit>, total: usize, page: usize) -> PageView {
        PageView {
            query: "rust \"<x>\"".into(),
            docs: 42,
            page,
            results: Some(SearchResults {
                total,
                relaxed: false,
                hits,
                facets: None,
            }),
            ..PageView::default()
        }
    }

    #[test]
    fn the_page_escapes_what_it_shows() {
        let v = view(
            vec![
                hit(
                    "http://h.web.test/a?x=1&y=<2>",
                    Some("<script>alert(1)</script>"),
                ),
                hit("javascript:alert(1)", None),
            ],
            2,
            1,
        );
        let html = render_page(&v);
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(html.contains("href=\"http://h.web.test/a?x=1&amp;y=&lt;2&gt;\""));
        assert!(!html.contains("href=\"javascript:"), "{html}");
        assert!(html.contains("value=\"rust &quot;&lt;x&gt;&quot;\""));
        assert!(html.contains("a &lt;tag&gt; &amp; <b>rust</b> &amp; <b>go</b>"));
        assert!(html.contains("<span id=\"total\">2</span>"));
        // A section and the facets, escaped; facet links narrow the query.
        let mut with = hit("http://h.web.test/s", Some("S"));
        with.section = Some(crate::index::search::Section {
            id: "a b\"<".into(),
            heading: "<Setup>".into(),
        });
        let mut v2 = view(vec![with], 1, 1);
        if let Some(r) = v2.results.as_mut() {
            r.facets = Some(crate::index::search::Facets {
                site: vec![("h.web.test".into(), 1)],
                lang: vec![("<en>".into(), 1)],
                content_type: vec![],
            });
        }
        let html2 = render_page(&v2);
        assert!(
            html2.contains("href=\"http://h.web.test/s#a%20b%22%3C\">&sect; &lt;Setup&gt;</a>"),
            "{html2}"
        );
        assert!(
            html2.contains("id=\"facets\"") && html2.contains("&lt;en&gt;</a>"),
            "{html2}"
        );
        assert!(html2.contains("site%3Ah.web.test"), "{html2}");
        assert!(!html2.contains("Types"), "no empty facet: {html2}");
        assert!(
            !html.contains("rel=\"next\""),
            "one page needs no pagination"
        );
    }

    #[test]
    fn pagination_links_carry_the_query() {
        let hits = (0..10)
            .map(|i| hit(&format!("http://h/{i}"), None))
            .collect();
        let html = render_page(&view(hits, 35, 2));
        assert!(
            html.contains("rel=\"prev\" href=\"/?q=rust+%22%3Cx%3E%22\""),
            "{html}"
        );
        assert!(html.contains("rel=\"next\" href=\"/?q=rust+%22%3Cx%3E%22&amp;page=3\""));
        assert!(html.contains("<span class=\"current\" aria-current=\"page\">2</span>"));
        assert!(html.contains("&amp;page=4\">4</a>") && !html.contains("page=5"));
        assert!(html.contains("start=\"11\""));
    }

    #[test]
    fn numbers_and_pages_are_checked() {
        let p = |q: &str| Params::parse(Some(q));
        assert_eq!(checked(&p("q=a"), 10), Ok(("a".into(), 1, 10)));
        assert_eq!(
            checked(&p("q=a+b&page=3&top=20"), 10),
            Ok(("a b".into(), 3, 20))
        );
        assert!(checked(&p("q=a&page=0"), 10).unwrap_err().contains("page"));
        assert!(checked(&p("q=a&page=x"), 10).unwrap_err().contains("page"));
        assert!(checked(&p("q=a&top=101"), 10).unwrap_err().contains("top"));
        assert!(
            checked(&p("q=a&page=1001"), 10)
                .unwrap_err()
                .contains("10000")
        );
        assert_eq!(checked(&p("q=a&page=1000"), 10), Ok(("a".into(), 1000, 10)));
        assert_eq!(p("q=first&q=second").q.as_deref(), Some("first"));
    }
}
