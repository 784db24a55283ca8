//! The HTTP client: one reqwest client (rustls, keep-alive pool, gzip/deflate/brotli,
//! no automatic redirects, no proxies) with trawl's timeouts, and a GET that streams
//! the decompressed body up to a cap.
//!
//! TLS: server certificates are verified against the system's roots plus those of
//! `fetch.ca_file` (read and checked when the client is built, before anything is
//! fetched), or not at all with `fetch.tls_verify = false`.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::header::{HOST, HeaderMap, HeaderName, HeaderValue};

use crate::config::FetchConfig;
use crate::error::{Error, Result};
use crate::net::resolve::{ResolveMap, Resolver};

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

/// The client's settings except certificate trust.
fn builder(cfg: &FetchConfig, resolver: &Resolver) -> reqwest::ClientBuilder {
    crate::tls::install_provider();
    reqwest::Client::builder()
        .user_agent(cfg.user_agent.clone())
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connect_timeout(secs(cfg.connect_timeout))
        .read_timeout(secs(cfg.read_timeout))
        // Long enough to reuse a host's connection across the politeness delay,
        // short enough to drop connections of hosts that are done.
        .pool_idle_timeout(secs(pool_idle_secs(cfg.delay)))
        .pool_max_idle_per_host(cfg.per_host_connections.max(1))
        .tcp_nodelay(true)
        .dns_resolver(Arc::new(resolver.clone()))
}

/// Seconds an idle keep-alive connection is kept: twice the delay plus one, between
/// 2 and 30 (a host's next request comes one delay after its last one ended, so a
/// host's connection outlives the delay and is reused).
pub fn pool_idle_secs(delay: f64) -> f64 {
    (delay * 2.0 + 1.0).clamp(2.0, 30.0)
}

/// An error and its sources, `: `-separated.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        let t = s.to_string();
        if !text.contains(&t) {
            text.push_str(": ");
            text.push_str(&t);
        }
        cur = s.source();
    }
    text
}

/// Reads the PEM certificates of `fetch.ca_file`: at least one, each a valid X.509
/// certificate usable as a trust anchor. Errors name the key and the file.
pub fn load_ca_file(path: &Path) -> Result<Vec<reqwest::Certificate>> {
    use tokio_rustls::rustls::RootCertStore;
    use tokio_rustls::rustls::pki_types::CertificateDer;
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    let bad = |why: String| {
        Error::input(
            format!("fetch.ca_file {}", path.display()),
            format!(
                "{why}; point fetch.ca_file at a PEM file of CA certificates, or set it to \"\""
            ),
        )
    };
    let pem = std::fs::read(path).map_err(|e| bad(format!("cannot read: {e}")))?;
    let mut certs = Vec::new();
    let mut store = RootCertStore::empty();
    for (i, der) in CertificateDer::pem_slice_iter(&pem).enumerate() {
        let n = i + 1;
        let der = der.map_err(|e| bad(format!("certificate {n}: bad PEM: {e}")))?;
        store
            .add(der.clone())
            .map_err(|e| bad(format!("certificate {n}: not a usable CA certificate: {e}")))?;
        certs.push(
            reqwest::Certificate::from_der(der.as_ref())
                .map_err(|e| bad(format!("certificate {n}: {e}")))?,
        );
    }
    if certs.is_empty() {
        return Err(bad(
            "no certificate in it (expected -----BEGIN CERTIFICATE----- blocks)".into(),
        ));
    }
    Ok(certs)
}

impl Http {
    /// Builds the client from `[fetch]`. A `fetch.ca_file` that cannot be read or
    /// holds no valid certificate is an error naming the key and the file.
    pub fn new(cfg: &FetchConfig) -> Result<Self> {
        let map = ResolveMap::new(&cfg.resolve)?;
        let resolver = Resolver::new(map.clone());
        let extra_roots = if cfg.ca_file.as_os_str().is_empty() {
            Vec::new()
        } else {
            load_ca_file(&cfg.ca_file)?
        };
        let build = |only_extra_roots: bool| {
            let mut b = builder(cfg, &resolver);
            if !cfg.tls_verify {
                b = b.tls_danger_accept_invalid_certs(true);
            } else if only_extra_roots {
                b = b.tls_certs_only(extra_roots.iter().cloned());
            } else if !extra_roots.is_empty() {
                b = b.tls_certs_merge(extra_roots.iter().cloned());
            }
            b.build()
        };
        let failed = |e: &reqwest::Error| {
            Error::Net(format!("cannot build the HTTP client: {}", error_chain(e)))
        };
        let client = match build(false) {
            Ok(c) => c,
            // The platform verifier refuses to start when the system has no root
            // certificates at all: then trust fetch.ca_file only (an https URL verifies
            // only against it) rather than fetch nothing, http:// included.
            Err(e) if cfg.tls_verify => match build(true) {
                Ok(c) => {
                    tracing::warn!(
                        "system root certificates unavailable ({}); https:// certificates \
                         are verified against fetch.ca_file only",
                        error_chain(&e)
                    );
                    c
                }
                Err(_) => return Err(failed(&e)),
            },
            Err(e) => return Err(failed(&e)),
        };
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
    fn ca_file_errors_name_the_key_and_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let e = load_ca_file(&missing).unwrap_err().to_string();
        assert!(
            e.contains("fetch.ca_file") && e.contains("missing.pem"),
            "{e}"
        );
        assert!(e.contains("cannot read"), "{e}");
        let text = dir.path().join("text.pem");
        std::fs::write(&text, "hello\n").unwrap();
        let e = load_ca_file(&text).unwrap_err().to_string();
        assert!(
            e.contains("no certificate") && e.contains("text.pem"),
            "{e}"
        );
        let junk = dir.path().join("junk.pem");
        std::fs::write(
            &junk,
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let e = load_ca_file(&junk).unwrap_err().to_string();
        assert!(e.contains("certificate 1") && e.contains("junk.pem"), "{e}");
    }

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
