//! The HTTP server of the test web: HTTP/1.1 with keep-alive on a loopback address,
//! routing on the `Host` header (port stripped, case-insensitive).
//!
//! Every response is rendered once, up front ([`Site`]); answering a request is a
//! hash lookup and a cheap `Bytes` clone, so the server is never the bottleneck of a
//! fetch benchmark. Unknown hosts and paths answer 404; methods other than GET and
//! HEAD answer 405.
//!
//! With TLS ([`super::tls::TestCa`]), the same listener also serves HTTPS: the first
//! byte of every connection says whether it is a TLS handshake (then the connection
//! is TLS with a certificate issued for the client's SNI name) or plain HTTP.
//! Every request is logged with the number of its connection and whether it was TLS.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{
    CONTENT_LENGTH, CONTENT_TYPE, HOST, HeaderName, HeaderValue, IF_MODIFIED_SINCE, IF_NONE_MATCH,
    LOCATION,
};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;

use super::log::{FLUSH_INTERVAL, LogLine, RequestLog};
use super::model::{Behavior, HTML_TYPE, TEXT_TYPE, Web, not_found_body, redirect_body};
use super::statichost::{self, StaticAnswer, StaticHost};
use super::tls::{TestCa, is_tls_handshake};
use trawl::error::{Error, Result};

/// The response body type: a whole body, or a stream for slow and endless ones.
pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// One pre-rendered response.
#[derive(Debug, Clone)]
struct Prepared {
    status: StatusCode,
    content_type: HeaderValue,
    location: Option<HeaderValue>,
    headers: Vec<(HeaderName, HeaderValue)>,
    behavior: Behavior,
    body: Bytes,
}

/// Every response of a web, ready to serve, and the static hosts
/// ([`Site::with_static`]) whose files are read when requested.
#[derive(Debug)]
pub struct Site {
    hosts: HashMap<String, HashMap<String, Prepared>>,
    statics: HashMap<String, StaticHost>,
    not_found: Prepared,
}

fn bad(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Net(format!("cannot prepare {what}: {e}"))
}

fn prepared(
    status: u16,
    content_type: &'static str,
    location: Option<&str>,
    body: Vec<u8>,
) -> Result<Prepared> {
    Ok(Prepared {
        // Status 0 (reset) has no HTTP status; it is never sent.
        status: StatusCode::from_u16(status.max(200)).map_err(|e| bad("status", e))?,
        content_type: HeaderValue::from_static(content_type),
        location: location
            .map(HeaderValue::from_str)
            .transpose()
            .map_err(|e| bad("Location", e))?,
        headers: Vec::new(),
        behavior: Behavior::Normal,
        body: Bytes::from(body),
    })
}

impl Site {
    /// Renders every response of `web`.
    pub fn new(web: &Web) -> Result<Site> {
        let mut hosts = HashMap::new();
        for h in &web.hosts {
            let mut routes = HashMap::new();
            for r in h.resources.values() {
                let mut p = prepared(
                    r.status,
                    r.content_type,
                    r.location.as_deref(),
                    r.body.clone(),
                )?;
                p.behavior = r.behavior;
                for (k, v) in &r.headers {
                    p.headers.push((
                        HeaderName::from_bytes(k.as_bytes()).map_err(|e| bad(k, e))?,
                        HeaderValue::from_str(v).map_err(|e| bad(k, e))?,
                    ));
                }
                routes.insert(r.path.clone(), p);
            }
            if h.robots.unavailable {
                routes.insert(
                    "/robots.txt".to_string(),
                    prepared(500, TEXT_TYPE, None, b"robots.txt is failing\n".to_vec())?,
                );
            } else if let Some(text) = h.robots.text() {
                let body = prepared(200, TEXT_TYPE, None, text.into_bytes())?;
                match &h.robots.moved_to {
                    Some(to) => {
                        routes.insert(to.clone(), body);
                        routes.insert(
                            "/robots.txt".to_string(),
                            prepared(301, HTML_TYPE, Some(to), redirect_body(301))?,
                        );
                    }
                    None => {
                        routes.insert("/robots.txt".to_string(), body);
                    }
                }
            }
            hosts.insert(h.name.to_ascii_lowercase(), routes);
        }
        Ok(Site {
            hosts,
            statics: HashMap::new(),
            not_found: prepared(404, HTML_TYPE, None, not_found_body())?,
        })
    }

    /// Adds hosts served from directories (see [`super::statichost`]); a name the
    /// generated web (or another static host) already has is refused.
    pub fn with_static(mut self, hosts: impl IntoIterator<Item = StaticHost>) -> Result<Site> {
        for h in hosts {
            if self.hosts.contains_key(&h.name) || self.statics.contains_key(&h.name) {
                return Err(Error::input(
                    h.name,
                    "this host is already served (by the generated web or another --static): pick another name",
                ));
            }
            self.statics.insert(h.name.clone(), h);
        }
        Ok(self)
    }

    fn lookup(&self, host: &str, path: &str) -> &Prepared {
        self.hosts
            .get(host)
            .and_then(|routes| routes.get(path))
            .unwrap_or(&self.not_found)
    }

    /// Answers one request: the response (an error closes the connection without a
    /// response) and the log line describing it.
    async fn respond<B>(&self, req: &Request<B>) -> (std::io::Result<Response<Body>>, LogLine) {
        let host = req
            .headers()
            .get(HOST)
            .and_then(|h| h.to_str().ok())
            .or_else(|| req.uri().host())
            .unwrap_or("");
        let host = strip_port(host).to_ascii_lowercase();
        let path = req.uri().path().to_string();
        let method = req.method().clone();
        let mut line = LogLine {
            time_ms: 0,
            method: method.to_string(),
            host,
            path,
            status: 0,
            bytes: 0,
            conn: 0,
            tls: false,
        };
        if method != Method::GET && method != Method::HEAD {
            let mut r = Response::new(Full::new(Bytes::new()).boxed_unsync());
            *r.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
            r.headers_mut()
                .insert("allow", HeaderValue::from_static("GET, HEAD"));
            line.time_ms = now_ms();
            line.status = 405;
            return (Ok(r), line);
        }
        let head_only = method == Method::HEAD;
        if let Some(h) = self.statics.get(&line.host) {
            let answer = h.resolve(&line.path);
            let resp = self.respond_static(answer, head_only, &mut line).await;
            line.time_ms = now_ms();
            return (Ok(resp), line);
        }
        let p = self.lookup(&line.host, &line.path);
        let mut b = Response::builder()
            .status(p.status)
            .header(CONTENT_TYPE, p.content_type.clone());
        if let Some(l) = &p.location {
            b = b.header(LOCATION, l.clone());
        }
        for (k, v) in &p.headers {
            b = b.header(k, v.clone());
        }
        let body: Body = match p.behavior {
            Behavior::Reset => {
                line.time_ms = now_ms();
                return (Err(std::io::Error::other("reset by design")), line);
            }
            Behavior::Conditional if not_modified(req, p) => {
                b = b.status(StatusCode::NOT_MODIFIED);
                Full::new(Bytes::new()).boxed_unsync()
            }
            Behavior::Endless { interval_ms } => {
                if head_only {
                    Full::new(Bytes::new()).boxed_unsync()
                } else {
                    endless(interval_ms)
                }
            }
            Behavior::Delay { ms } => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                b = b.header(CONTENT_LENGTH, p.body.len());
                whole(&p.body, head_only)
            }
            Behavior::SlowBody {
                chunks,
                interval_ms,
            } => {
                b = b.header(CONTENT_LENGTH, p.body.len());
                if head_only {
                    Full::new(Bytes::new()).boxed_unsync()
                } else {
                    slow(p.body.clone(), chunks, interval_ms)
                }
            }
            _ => {
                b = b.header(CONTENT_LENGTH, p.body.len());
                whole(&p.body, head_only)
            }
        };
        let resp = b.body(body).unwrap_or_else(|_| {
            let mut r = Response::new(Full::new(Bytes::new()).boxed_unsync());
            *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            r
        });
        line.time_ms = now_ms();
        line.status = resp.status().as_u16();
        line.bytes =
            if head_only || line.status == 304 || matches!(p.behavior, Behavior::Endless { .. }) {
                0
            } else {
                p.body.len() as u64
            };
        (Ok(resp), line)
    }
}

impl Site {
    /// The response of a static host: the file, a 301 to the directory's `/` path,
    /// or 404 (also when the file cannot be read). Sets the status and bytes of `line`.
    async fn respond_static(
        &self,
        answer: StaticAnswer,
        head_only: bool,
        line: &mut LogLine,
    ) -> Response<Body> {
        let (status, ctype, location, body) = match answer {
            StaticAnswer::File(path) => match tokio::fs::read(&path).await {
                Ok(bytes) => (
                    StatusCode::OK,
                    HeaderValue::from_static(statichost::content_type(&path)),
                    None,
                    Bytes::from(bytes),
                ),
                Err(e) => {
                    tracing::debug!("{}: {e}", path.display());
                    self.not_found_parts()
                }
            },
            StaticAnswer::Redirect(to) => match HeaderValue::from_str(&to) {
                Ok(loc) => (
                    StatusCode::MOVED_PERMANENTLY,
                    HeaderValue::from_static(HTML_TYPE),
                    Some(loc),
                    Bytes::from(redirect_body(301)),
                ),
                Err(_) => self.not_found_parts(),
            },
            StaticAnswer::NotFound => self.not_found_parts(),
        };
        let mut b = Response::builder()
            .status(status)
            .header(CONTENT_TYPE, ctype)
            .header(CONTENT_LENGTH, body.len());
        if let Some(l) = location {
            b = b.header(LOCATION, l);
        }
        line.status = status.as_u16();
        line.bytes = if head_only { 0 } else { body.len() as u64 };
        b.body(whole(&body, head_only)).unwrap_or_else(|_| {
            let mut r = Response::new(Full::new(Bytes::new()).boxed_unsync());
            *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            r
        })
    }

    fn not_found_parts(&self) -> (StatusCode, HeaderValue, Option<HeaderValue>, Bytes) {
        (
            StatusCode::NOT_FOUND,
            self.not_found.content_type.clone(),
            None,
            self.not_found.body.clone(),
        )
    }
}

fn whole(body: &Bytes, head_only: bool) -> Body {
    let b = if head_only {
        Bytes::new()
    } else {
        body.clone()
    };
    Full::new(b).boxed_unsync()
}

/// The body in `chunks` pieces, `interval_ms` apart (the first piece at once).
fn slow(body: Bytes, chunks: u32, interval_ms: u64) -> Body {
    let n = (chunks.max(1) as usize).min(body.len().max(1));
    let size = body.len().div_ceil(n).max(1);
    let pieces: Vec<Bytes> = (0..body.len())
        .step_by(size)
        .map(|i| body.slice(i..(i + size).min(body.len())))
        .collect();
    let stream =
        futures::stream::iter(pieces.into_iter().enumerate()).then(move |(i, piece)| async move {
            if i > 0 {
                tokio::time::sleep(Duration::from_millis(interval_ms)).await;
            }
            Ok::<_, Infallible>(Frame::data(piece))
        });
    StreamBody::new(stream).boxed_unsync()
}

/// A body that never ends: 16 bytes every `interval_ms`.
fn endless(interval_ms: u64) -> Body {
    let stream = futures::stream::unfold(0u64, move |n| async move {
        if n > 0 {
            tokio::time::sleep(Duration::from_millis(interval_ms)).await;
        }
        let data = if n == 0 {
            Bytes::from_static(b"<!DOCTYPE html>\n<html><body>\n")
        } else {
            Bytes::from_static(b"<p>tick tick</p>")
        };
        Some((Ok::<_, Infallible>(Frame::data(data)), n + 1))
    });
    StreamBody::new(stream).boxed_unsync()
}

/// Whether a conditional request matches the resource's ETag / Last-Modified.
fn not_modified<B>(req: &Request<B>, p: &Prepared) -> bool {
    let header = |name: &str| p.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    let (etag, lm) = (header("etag"), header("last-modified"));
    if let (Some(inm), Some(etag)) = (req.headers().get(IF_NONE_MATCH), etag) {
        return inm.as_bytes().split(|&c| c == b',').any(|t| {
            let t = t.trim_ascii();
            t == b"*" || t == etag.as_bytes() || t.strip_prefix(b"W/") == Some(etag.as_bytes())
        });
    }
    let date = |v: &HeaderValue| {
        v.to_str()
            .ok()
            .and_then(|s| chrono::DateTime::parse_from_rfc2822(s).ok())
    };
    match (
        req.headers().get(IF_MODIFIED_SINCE).and_then(date),
        lm.and_then(date),
    ) {
        (Some(since), Some(lm)) => since >= lm,
        _ => false,
    }
}

fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host
            .split_once(']')
            .map(|(h, _)| &host[..h.len() + 1])
            .unwrap_or(host);
    }
    host.rsplit_once(':').map(|(h, _)| h).unwrap_or(host)
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Refuses any address that is not loopback: the test web never listens elsewhere.
pub fn check_loopback(addr: &SocketAddr) -> Result<()> {
    if addr.ip().is_loopback() {
        Ok(())
    } else {
        Err(Error::input(
            addr.to_string(),
            "the test web only listens on loopback addresses (127.0.0.0/8 or ::1)",
        ))
    }
}

/// Serves `site` on `listener` until `shutdown` completes, then flushes the log.
/// Returns the number of requests answered.
pub async fn serve(
    listener: TcpListener,
    site: Arc<Site>,
    log: Option<Arc<RequestLog>>,
    shutdown: impl Future<Output = ()>,
) -> Result<u64> {
    serve_with_tls(listener, site, log, None, shutdown).await
}

/// What every connection of a server shares.
struct Shared {
    site: Arc<Site>,
    log: Option<Arc<RequestLog>>,
    count: AtomicU64,
}

/// Serves HTTP/1.1 with keep-alive on one connection (plain or TLS), logging each
/// request with the connection's number and kind.
async fn serve_connection<I>(io: I, conn: u64, tls: bool, shared: Arc<Shared>)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req: Request<Incoming>| {
        let shared = shared.clone();
        async move {
            let (resp, mut line) = shared.site.respond(&req).await;
            line.conn = conn;
            line.tls = tls;
            shared.count.fetch_add(1, Ordering::Relaxed);
            if let Some(log) = &shared.log {
                log.record(&line);
            }
            resp
        }
    });
    let served = http1::Builder::new()
        .keep_alive(true)
        .serve_connection(TokioIo::new(io), service);
    if let Err(e) = served.await {
        tracing::debug!("connection {conn}: {e}");
    }
}

/// Serves one accepted connection: plain HTTP without `tls`; with it, TLS when the
/// first byte starts a handshake, plain HTTP otherwise.
async fn accept_connection(
    stream: TcpStream,
    conn: u64,
    tls: Option<TlsAcceptor>,
    shared: Arc<Shared>,
) {
    let Some(acceptor) = tls else {
        return serve_connection(stream, conn, false, shared).await;
    };
    let mut first = [0u8; 1];
    match stream.peek(&mut first).await {
        Ok(1..) if is_tls_handshake(first[0]) => match acceptor.accept(stream).await {
            Ok(s) => serve_connection(s, conn, true, shared).await,
            Err(e) => tracing::debug!("connection {conn}: TLS handshake: {e}"),
        },
        Ok(1..) => serve_connection(stream, conn, false, shared).await,
        // Closed (or failed) before sending anything.
        Ok(_) | Err(_) => {}
    }
}

/// [`serve`], and with `tls` also HTTPS on the same listener: each connection whose
/// first byte starts a TLS handshake is served over TLS with `tls`, the others as
/// plain HTTP. Returns the number of requests answered.
pub async fn serve_with_tls(
    listener: TcpListener,
    site: Arc<Site>,
    log: Option<Arc<RequestLog>>,
    tls: Option<Arc<ServerConfig>>,
    shutdown: impl Future<Output = ()>,
) -> Result<u64> {
    let shared = Arc::new(Shared {
        site,
        log: log.clone(),
        count: AtomicU64::new(0),
    });
    let acceptor = tls.map(TlsAcceptor::from);
    let mut conns: u64 = 0;
    let flusher = log.clone().map(|log| {
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(FLUSH_INTERVAL);
            loop {
                tick.tick().await;
                if let Err(e) = log.flush() {
                    tracing::warn!("{e}");
                }
            }
        })
    });
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => {
                let (stream, _) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!("accept: {e}");
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                conns += 1;
                tokio::spawn(accept_connection(stream, conns, acceptor.clone(), shared.clone()));
            }
        }
    }
    if let Some(f) = flusher {
        f.abort();
    }
    if let Some(log) = &log {
        log.flush()?;
    }
    Ok(shared.count.load(Ordering::Relaxed))
}

/// Serves `site` (a web and its static hosts) on `addr` (loopback only) until
/// SIGTERM or SIGINT, as `testweb serve` does: installs the signal handlers, binds, writes the bound `ip:port` to `addr_file`
/// atomically (the server accepts connections from then on), calls `on_bound`, serves,
/// and on the signal flushes the log. With `tls`, HTTPS is served on the same address
/// too (certificates issued by that CA). Returns the number of requests answered.
pub fn serve_until_signal(
    site: Site,
    addr: SocketAddr,
    log: Option<&Path>,
    addr_file: Option<&Path>,
    tls: Option<Arc<TestCa>>,
    on_bound: impl FnOnce(SocketAddr),
) -> Result<u64> {
    use tokio::signal::unix::{SignalKind, signal};
    check_loopback(&addr)?;
    let site = Arc::new(site);
    let tls = tls.map(|ca| ca.server_config()).transpose()?;
    let log = log.map(RequestLog::create).transpose()?.map(Arc::new);
    let rt = tokio::runtime::Runtime::new()
        .map_err(|e| Error::Net(format!("cannot start a runtime: {e}")))?;
    let served = rt.block_on(async {
        let sig = |kind, name| {
            signal(kind).map_err(|e| Error::Net(format!("cannot install the {name} handler: {e}")))
        };
        let mut term = sig(SignalKind::terminate(), "SIGTERM")?;
        let mut int = sig(SignalKind::interrupt(), "SIGINT")?;
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|e| bind_error(addr, e))?;
        let bound = listener
            .local_addr()
            .map_err(|e| Error::Net(format!("bound address: {e}")))?;
        check_loopback(&bound)?;
        if let Some(f) = addr_file {
            trawl::store::parquet::write_atomic(f, format!("{bound}\n").as_bytes())?;
        }
        on_bound(bound);
        let stop = async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        };
        serve_with_tls(listener, site, log, tls, stop).await
    });
    rt.shutdown_background();
    served
}

/// A test web server running on its own thread and runtime, for in-process tests.
/// Stopping it (or dropping it) flushes the request log.
#[derive(Debug)]
pub struct RunningServer {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<u64>>>,
}

impl RunningServer {
    /// Binds `addr` (loopback only; port 0 picks one), and serves `web` from a
    /// background thread, logging requests to `log` if given.
    pub fn start(web: &Web, addr: SocketAddr, log: Option<&Path>) -> Result<RunningServer> {
        RunningServer::start_with_tls(web, addr, log, None)
    }

    /// [`RunningServer::start`], also serving HTTPS on the same address with
    /// certificates issued by `tls` when given.
    pub fn start_with_tls(
        web: &Web,
        addr: SocketAddr,
        log: Option<&Path>,
        tls: Option<Arc<TestCa>>,
    ) -> Result<RunningServer> {
        RunningServer::start_site(Site::new(web)?, addr, log, tls)
    }

    /// [`RunningServer::start_with_tls`] for a prepared [`Site`] (a web with static
    /// hosts, say).
    pub fn start_site(
        site: Site,
        addr: SocketAddr,
        log: Option<&Path>,
        tls: Option<Arc<TestCa>>,
    ) -> Result<RunningServer> {
        check_loopback(&addr)?;
        let site = Arc::new(site);
        let tls = tls.map(|ca| ca.server_config()).transpose()?;
        let log = log.map(RequestLog::create).transpose()?.map(Arc::new);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| Error::Net(format!("cannot start a runtime: {e}")))?;
        let listener = rt
            .block_on(TcpListener::bind(addr))
            .map_err(|e| bind_error(addr, e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::Net(format!("bound address: {e}")))?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let thread = std::thread::spawn(move || {
            rt.block_on(serve_with_tls(listener, site, log, tls, async {
                let _ = rx.await;
            }))
        });
        Ok(RunningServer {
            addr,
            stop: Some(tx),
            thread: Some(thread),
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops serving, flushes the log, and returns the number of requests answered.
    pub fn stop(mut self) -> Result<u64> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<u64> {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| Error::Net("test web server thread panicked".into()))?,
            None => Ok(0),
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// The error of a failed bind, saying what to do when the address is taken.
fn bind_error(addr: SocketAddr, e: std::io::Error) -> Error {
    let hint = if e.kind() == std::io::ErrorKind::AddrInUse {
        ": another process listens there (an earlier `testweb serve`, `make web` or \
         `make demo`?): stop it, or serve on another address with --addr (make web \
         WEB_ADDR=IP:PORT; the crawl then needs that address in fetch.resolve)"
    } else {
        ""
    };
    Error::Net(format!("cannot bind {addr}: {e}{hint}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_ports() {
        assert_eq!(strip_port("site1.web.test:8080"), "site1.web.test");
        assert_eq!(strip_port("site1.web.test"), "site1.web.test");
        assert_eq!(strip_port("[::1]:80"), "[::1]");
    }

    /// A web of two hosts of three pages.
    fn two_host_web() -> Web {
        crate::generate(&crate::WebSpec {
            hosts: 2,
            pages_per_host: 3,
            ..Default::default()
        })
        .unwrap()
    }

    #[test]
    fn in_process_server_answers_and_logs() {
        use std::io::{Read, Write};
        let web = two_host_web();
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log.jsonl");
        let server =
            RunningServer::start(&web, "127.0.0.1:0".parse().unwrap(), Some(&log)).unwrap();
        let mut s = std::net::TcpStream::connect(server.addr()).unwrap();
        s.write_all(b"HEAD /p1.html HTTP/1.1\r\nHost: site1.web.test\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        assert!(out.starts_with("HTTP/1.1 200"), "{out}");
        let len = web
            .resource("http://site1.web.test/p1.html")
            .unwrap()
            .body
            .len();
        assert!(
            out.to_ascii_lowercase()
                .contains(&format!("content-length: {len}")),
            "{out}"
        );
        let mut s = std::net::TcpStream::connect(server.addr()).unwrap();
        s.write_all(b"POST / HTTP/1.1\r\nHost: site1.web.test\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        assert!(out.starts_with("HTTP/1.1 405"), "{out}");
        assert_eq!(server.stop().unwrap(), 2);
        let lines = crate::read_log(&log).unwrap();
        assert_eq!(lines.len(), 2);
        assert_eq!(
            (lines[0].method.as_str(), lines[0].status, lines[0].bytes),
            ("HEAD", 200, 0)
        );
        assert_eq!((lines[1].method.as_str(), lines[1].status), ("POST", 405));
    }

    /// With TLS, one address serves https (certificates per SNI name, trusted through
    /// the published CA) and plain http; the log numbers connections and flags TLS.
    #[test]
    fn tls_and_plain_http_on_one_address() {
        let web = two_host_web();
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log.jsonl");
        let ca = Arc::new(TestCa::generate().unwrap());
        let server = RunningServer::start_with_tls(
            &web,
            "127.0.0.1:0".parse().unwrap(),
            Some(&log),
            Some(ca.clone()),
        )
        .unwrap();
        let addr = server.addr();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = |trust: bool| {
            trawl::tls::install_provider();
            let mut b = reqwest::Client::builder()
                .no_proxy()
                .resolve("site0.web.test", addr)
                .resolve("site1.web.test", addr)
                .resolve(super::super::tls::UNTRUSTED_HOST, addr);
            if trust {
                b = b.tls_certs_only([
                    reqwest::Certificate::from_pem(ca.ca_pem().as_bytes()).unwrap()
                ]);
            }
            b.build().unwrap()
        };
        let port = addr.port();
        rt.block_on(async {
            let c = client(true);
            for (url, want) in [
                (format!("https://site0.web.test:{port}/"), 200),
                (format!("https://site0.web.test:{port}/p1.html"), 200),
                (format!("https://site1.web.test:{port}/nothing"), 404),
                (format!("http://site1.web.test:{port}/p1.html"), 200),
            ] {
                let r = c.get(&url).send().await.unwrap();
                assert_eq!(r.status().as_u16(), want, "{url}");
                let body = r.bytes().await.unwrap();
                if want == 200 {
                    let plain = url
                        .replace("https://", "http://")
                        .replace(&format!(":{port}"), "");
                    assert_eq!(body, web.resource(&plain).unwrap().body, "{url}");
                }
            }
            let e = c
                .get(format!("https://untrusted.web.test:{port}/"))
                .send()
                .await
                .unwrap_err();
            assert_eq!(
                trawl::net::outcome::classify_error(&e),
                "tls_error",
                "{e:?}"
            );
            // Without the CA, no site verifies.
            let e = client(false)
                .get(format!("https://site0.web.test:{port}/"))
                .send()
                .await
                .unwrap_err();
            assert_eq!(
                trawl::net::outcome::classify_error(&e),
                "tls_error",
                "{e:?}"
            );
        });
        assert_eq!(server.stop().unwrap(), 4);
        let lines = crate::read_log(&log).unwrap();
        let got: Vec<(&str, &str, bool)> = lines
            .iter()
            .map(|l| (l.host.as_str(), l.path.as_str(), l.tls))
            .collect();
        assert_eq!(
            got,
            [
                ("site0.web.test", "/", true),
                ("site0.web.test", "/p1.html", true),
                ("site1.web.test", "/nothing", true),
                ("site1.web.test", "/p1.html", false),
            ]
        );
        // Keep-alive: both site0 requests on one connection; a connection per origin.
        assert_eq!(lines[0].conn, lines[1].conn);
        assert!(lines[0].conn >= 1);
        assert_ne!(lines[2].conn, lines[0].conn);
        assert_ne!(lines[3].conn, lines[2].conn);
        assert!(ca.cached() >= 3, "site0, site1 and the untrusted host");
    }

    /// A static host answers its files, a directory's index.html, a 301 for a
    /// directory without its slash, 404 otherwise, and every request is logged.
    #[test]
    fn static_host_serves_a_directory() {
        use std::io::{Read, Write};
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("book");
        std::fs::create_dir_all(root.join("ch1")).unwrap();
        std::fs::write(root.join("index.html"), "<title>Book</title>").unwrap();
        std::fs::write(root.join("ch1/index.html"), "<title>One</title>").unwrap();
        std::fs::write(root.join("style.css"), "body{}").unwrap();
        let host = StaticHost::new("book.web.test", &root).unwrap();
        let clash = StaticHost::new("site0.web.test", &root).unwrap();
        assert!(
            Site::new(&two_host_web())
                .unwrap()
                .with_static([clash])
                .is_err()
        );
        let site = Site::new(&two_host_web())
            .unwrap()
            .with_static([host])
            .unwrap();
        let log = dir.path().join("log.jsonl");
        let server =
            RunningServer::start_site(site, "127.0.0.1:0".parse().unwrap(), Some(&log), None)
                .unwrap();
        let get = |method: &str, host: &str, path: &str| {
            let mut s = std::net::TcpStream::connect(server.addr()).unwrap();
            write!(
                s,
                "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
            )
            .unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).unwrap();
            out
        };
        let r = get("GET", "BOOK.web.test:8080", "/");
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        assert!(r.contains("content-type: text/html; charset=utf-8"), "{r}");
        assert!(r.ends_with("<title>Book</title>"), "{r}");
        let r = get("GET", "book.web.test", "/style.css?v=2");
        assert!(r.contains("content-type: text/css"), "{r}");
        assert!(r.ends_with("body{}"), "{r}");
        let r = get("GET", "book.web.test", "/ch1");
        assert!(r.starts_with("HTTP/1.1 301"), "{r}");
        assert!(r.contains("location: /ch1/"), "{r}");
        let r = get("GET", "book.web.test", "/ch1/");
        assert!(r.ends_with("<title>One</title>"), "{r}");
        let r = get("HEAD", "book.web.test", "/ch1/index.html");
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        assert!(r.contains("content-length: 18"), "{r}");
        assert!(get("GET", "book.web.test", "/nope.html").starts_with("HTTP/1.1 404"));
        assert!(get("GET", "book.web.test", "/../x").starts_with("HTTP/1.1 404"));
        // The generated web is still served beside it.
        assert!(get("GET", "site1.web.test", "/p1.html").starts_with("HTTP/1.1 200"));
        assert_eq!(server.stop().unwrap(), 8);
        let lines = crate::read_log(&log).unwrap();
        let got: Vec<(&str, &str, u16, u64)> = lines
            .iter()
            .map(|l| (l.host.as_str(), l.path.as_str(), l.status, l.bytes))
            .collect();
        assert_eq!(got[0], ("book.web.test", "/", 200, 19));
        assert_eq!(got[1], ("book.web.test", "/style.css", 200, 6));
        assert_eq!(got[2].2, 301);
        assert_eq!(got[4], ("book.web.test", "/ch1/index.html", 200, 0));
        assert_eq!(got[5].2, 404);
    }

    #[test]
    fn refuses_non_loopback() {
        assert!(check_loopback(&"0.0.0.0:0".parse().unwrap()).is_err());
        assert!(check_loopback(&"10.1.2.3:80".parse().unwrap()).is_err());
        assert!(check_loopback(&"127.0.0.1:0".parse().unwrap()).is_ok());
        assert!(check_loopback(&"[::1]:0".parse().unwrap()).is_ok());
    }
}
