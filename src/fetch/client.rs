//! The HTTP client: one reqwest client (rustls, keep-alive pool, gzip/deflate/brotli,
//! no automatic redirects, no proxies) with trawl's timeouts, and a GET that streams
//! the decompressed body up to a cap.

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::header::{HOST, HeaderMap, HeaderName, HeaderValue};

use crate::config::FetchConfig;
use crate::error::{Error, Result};
use crate::fetch::resolve::{ResolveMap, Resolver};

/// An error of one request (network, timeout, protocol).
pub type RequestError = Box<dyn std::error::Error + Send + Sync>;

/// A response with its body read (up to the cap).
#[derive(Debug)]
pub struct Fetched {
    /// HTTP status code.
    pub status: u16,
    /// Response headers.
    pub headers: HeaderMap,
    /// The body, decompressed, at most the cap.
    pub body: Vec<u8>,
    /// Whether the body was cut at the cap.
    pub truncated: bool,
    /// The peer address.
    pub remote_addr: Option<std::net::SocketAddr>,
    /// Time from sending the request to the end of the body.
    pub elapsed: Duration,
}

impl Fetched {
    /// A header's value as a string (first occurrence), if valid UTF-8.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// The shared HTTP client.
#[derive(Clone)]
pub struct Http {
    client: reqwest::Client,
    resolve: Arc<ResolveMap>,
    resolver: Resolver,
    total_timeout: Duration,
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s.max(0.001))
}

impl Http {
    /// Builds the client from `[fetch]`.
    pub fn new(cfg: &FetchConfig) -> Result<Self> {
        let map = ResolveMap::new(&cfg.resolve)?;
        let resolver = Resolver::new(map.clone());
        let client = reqwest::Client::builder()
            .user_agent(cfg.user_agent.clone())
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .connect_timeout(secs(cfg.connect_timeout))
            .read_timeout(secs(cfg.read_timeout))
            // Long enough to reuse a host's connection across the politeness delay,
            // short enough to drop connections of hosts that are done.
            .pool_idle_timeout(secs((cfg.delay * 2.0 + 1.0).clamp(2.0, 30.0)))
            .pool_max_idle_per_host(cfg.per_host_connections.max(1))
            .tcp_nodelay(true)
            .dns_resolver(Arc::new(resolver.clone()))
            .build()
            .map_err(|e| Error::Net(format!("cannot build the HTTP client: {e}")))?;
        Ok(Http {
            client,
            resolve: Arc::new(map),
            resolver,
            total_timeout: secs(cfg.total_timeout),
        })
    }

    /// The client's name resolver (shared cache and lookup counts).
    pub fn resolver(&self) -> &Resolver {
        &self.resolver
    }

    /// GETs `url` with extra headers, reading at most `cap` body bytes (0 = no cap),
    /// within the total deadline.
    pub async fn get(
        &self,
        url: &url::Url,
        headers: &[(HeaderName, String)],
        cap: usize,
    ) -> std::result::Result<Fetched, RequestError> {
        match tokio::time::timeout(self.total_timeout, self.get_inner(url, headers, cap)).await {
            Ok(r) => r,
            Err(_) => Err(Box::new(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no complete response within {:?}", self.total_timeout),
            ))),
        }
    }

    async fn get_inner(
        &self,
        url: &url::Url,
        headers: &[(HeaderName, String)],
        cap: usize,
    ) -> std::result::Result<Fetched, RequestError> {
        let started = Instant::now();
        let mut req = match self.resolve.connect_url(url) {
            Some((send, host)) => self
                .client
                .get(send.as_str())
                .header(HOST, HeaderValue::from_str(&host)?),
            None => self.client.get(url.as_str()),
        };
        for (name, value) in headers {
            req = req.header(name.clone(), HeaderValue::from_str(value)?);
        }
        let mut resp = req.send().await?;
        let status = resp.status().as_u16();
        let remote_addr = resp.remote_addr();
        let mut body = Vec::with_capacity(initial_capacity(resp.content_length(), cap));
        let mut truncated = false;
        while let Some(chunk) = resp.chunk().await? {
            if cap > 0 && body.len() + chunk.len() > cap {
                let take = cap - body.len();
                body.extend_from_slice(&chunk[..take]);
                truncated = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        // The headers are not needed while reading: move them out instead of cloning.
        let resp_headers = std::mem::take(resp.headers_mut());
        Ok(Fetched {
            status,
            headers: resp_headers,
            body,
            truncated,
            remote_addr,
            elapsed: started.elapsed(),
        })
    }
}

/// Largest body buffer reserved up front from a Content-Length (a lying header
/// must not make fetch reserve the whole cap for every page).
const MAX_RESERVE: u64 = 256 * 1024;

/// Bytes to reserve for a body: the announced length (decompressed bodies may be
/// longer; they grow), at most the cap and [`MAX_RESERVE`].
fn initial_capacity(content_length: Option<u64>, cap: usize) -> usize {
    let mut n = content_length.unwrap_or(0).min(MAX_RESERVE);
    if cap > 0 {
        n = n.min(cap as u64);
    }
    usize::try_from(n).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initial_capacity_is_bounded_by_cap_and_reserve_limit() {
        assert_eq!(initial_capacity(None, 1000), 0);
        assert_eq!(initial_capacity(Some(4096), 0), 4096);
        assert_eq!(initial_capacity(Some(4096), 1000), 1000);
        assert_eq!(initial_capacity(Some(u64::MAX), 0), MAX_RESERVE as usize);
        assert_eq!(
            initial_capacity(Some(1 << 40), 2 << 20),
            MAX_RESERVE as usize
        );
    }
}
