//! The HTTP server of the test web: HTTP/1.1 with keep-alive on a loopback address,
//! routing on the `Host` header (port stripped, case-insensitive).
//!
//! Every response is rendered once, up front ([`Site`]); answering a request is a
//! hash lookup and a cheap `Bytes` clone, so the server is never the bottleneck of a
//! fetch benchmark. Unknown hosts and paths answer 404; methods other than GET and
//! HEAD answer 405.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE, HOST, HeaderValue, LOCATION};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use super::log::{FLUSH_INTERVAL, LogLine, RequestLog};
use super::model::{HTML_TYPE, TEXT_TYPE, Web, not_found_body};
use crate::error::{Error, Result};

/// One pre-rendered response.
#[derive(Debug, Clone)]
struct Prepared {
    status: StatusCode,
    content_type: HeaderValue,
    location: Option<HeaderValue>,
    body: Bytes,
}

/// Every response of a web, ready to serve.
#[derive(Debug)]
pub struct Site {
    hosts: HashMap<String, HashMap<String, Prepared>>,
    not_found: Prepared,
}

fn prepared(
    status: u16,
    content_type: &'static str,
    location: Option<&str>,
    body: Vec<u8>,
) -> Result<Prepared> {
    Ok(Prepared {
        status: StatusCode::from_u16(status)
            .map_err(|e| Error::Net(format!("status {status}: {e}")))?,
        content_type: HeaderValue::from_static(content_type),
        location: location
            .map(HeaderValue::from_str)
            .transpose()
            .map_err(|e| Error::Net(format!("bad Location header: {e}")))?,
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
                routes.insert(
                    r.path.clone(),
                    prepared(
                        r.status,
                        r.content_type,
                        r.location.as_deref(),
                        r.body.clone(),
                    )?,
                );
            }
            if let Some(text) = h.robots.text() {
                routes.insert(
                    "/robots.txt".to_string(),
                    prepared(200, TEXT_TYPE, None, text.into_bytes())?,
                );
            }
            hosts.insert(h.name.to_ascii_lowercase(), routes);
        }
        Ok(Site {
            hosts,
            not_found: prepared(404, HTML_TYPE, None, not_found_body())?,
        })
    }

    fn lookup(&self, host: &str, path: &str) -> &Prepared {
        self.hosts
            .get(host)
            .and_then(|routes| routes.get(path))
            .unwrap_or(&self.not_found)
    }

    /// Answers one request; returns the response and the log line describing it.
    fn respond<B>(&self, req: &Request<B>) -> (Response<Full<Bytes>>, LogLine) {
        let host = req
            .headers()
            .get(HOST)
            .and_then(|h| h.to_str().ok())
            .or_else(|| req.uri().host())
            .unwrap_or("");
        let host = strip_port(host).to_ascii_lowercase();
        let path = req.uri().path().to_string();
        let method = req.method().clone();
        let (resp, bytes) = if method == Method::GET || method == Method::HEAD {
            let p = self.lookup(&host, &path);
            let mut b = Response::builder()
                .status(p.status)
                .header(CONTENT_TYPE, p.content_type.clone())
                .header(CONTENT_LENGTH, p.body.len());
            if let Some(l) = &p.location {
                b = b.header(LOCATION, l.clone());
            }
            let body = if method == Method::HEAD {
                Bytes::new()
            } else {
                p.body.clone()
            };
            let n = body.len() as u64;
            (b.body(Full::new(body)), n)
        } else {
            let r = Response::builder()
                .status(StatusCode::METHOD_NOT_ALLOWED)
                .header("allow", "GET, HEAD")
                .header(CONTENT_LENGTH, 0)
                .body(Full::new(Bytes::new()));
            (r, 0)
        };
        let resp = resp.unwrap_or_else(|_| {
            let mut r = Response::new(Full::new(Bytes::new()));
            *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            r
        });
        let line = LogLine {
            time_ms: now_ms(),
            method: method.to_string(),
            host,
            path,
            status: resp.status().as_u16(),
            bytes,
        };
        (resp, line)
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
    let count = Arc::new(AtomicU64::new(0));
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
                let site = site.clone();
                let log = log.clone();
                let count = count.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req: Request<Incoming>| {
                        let (resp, line) = site.respond(&req);
                        count.fetch_add(1, Ordering::Relaxed);
                        if let Some(log) = &log {
                            log.record(&line);
                        }
                        async move { Ok::<_, Infallible>(resp) }
                    });
                    let conn = http1::Builder::new()
                        .keep_alive(true)
                        .serve_connection(TokioIo::new(stream), service);
                    if let Err(e) = conn.await {
                        tracing::debug!("connection: {e}");
                    }
                });
            }
        }
    }
    if let Some(f) = flusher {
        f.abort();
    }
    if let Some(log) = &log {
        log.flush()?;
    }
    Ok(count.load(Ordering::Relaxed))
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
        check_loopback(&addr)?;
        let site = Arc::new(Site::new(web)?);
        let log = log.map(RequestLog::create).transpose()?.map(Arc::new);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| Error::Net(format!("cannot start a runtime: {e}")))?;
        let listener = rt
            .block_on(TcpListener::bind(addr))
            .map_err(|e| Error::Net(format!("cannot bind {addr}: {e}")))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::Net(format!("bound address: {e}")))?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let thread = std::thread::spawn(move || {
            rt.block_on(serve(listener, site, log, async {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_ports() {
        assert_eq!(strip_port("site1.web.test:8080"), "site1.web.test");
        assert_eq!(strip_port("site1.web.test"), "site1.web.test");
        assert_eq!(strip_port("[::1]:80"), "[::1]");
    }

    #[test]
    fn refuses_non_loopback() {
        assert!(check_loopback(&"0.0.0.0:0".parse().unwrap()).is_err());
        assert!(check_loopback(&"10.1.2.3:80".parse().unwrap()).is_err());
        assert!(check_loopback(&"127.0.0.1:0".parse().unwrap()).is_ok());
        assert!(check_loopback(&"[::1]:0".parse().unwrap()).is_ok());
    }
}
