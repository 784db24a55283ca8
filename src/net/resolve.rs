//! Name resolution for the fetcher: `fetch.resolve` overrides (like curl's
//! `--connect-to`) and cached system DNS for everything else.
//!
//! reqwest keeps a non-zero port of a resolved address only when the URL has no
//! explicit port (an explicit URL port overrides it). So that a mapped host is
//! connected to the mapped port whatever the URL says, the client sends requests
//! for mapped hosts with the port removed from the request URL and the original
//! authority in the `Host` header (see [`ResolveMap::connect_url`]).

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::error::{Error, Result};
use crate::net::hostpattern::HostPatterns;
use crate::net::outcome::DnsError;

/// The `fetch.resolve` value that marks matching hosts as not resolving: a lookup of
/// such a host fails at once (counted and cached like a real failed lookup), and no
/// DNS query is sent. Tests use it to exercise DNS failures without a network.
pub const NXDOMAIN: &str = "nxdomain";

/// What a `fetch.resolve` rule maps a host to.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Target {
    Addr(SocketAddr),
    NoSuchHost,
}

/// The `fetch.resolve` table: host patterns mapped to socket addresses (or to
/// [`NXDOMAIN`]).
#[derive(Debug, Clone, Default)]
pub struct ResolveMap {
    rules: HostPatterns<Target>,
}

impl ResolveMap {
    /// Parses the config table; a value that is not `ip:port` is an error naming the key.
    pub fn new(table: &BTreeMap<String, String>) -> Result<Self> {
        let mut rules = Vec::new();
        for (pattern, addr) in table {
            if addr.trim().eq_ignore_ascii_case(NXDOMAIN) {
                rules.push((pattern.clone(), Target::NoSuchHost));
                continue;
            }
            let sock: SocketAddr = addr.trim().parse().map_err(|e| {
                Error::input(
                    format!("fetch.resolve.\"{pattern}\""),
                    format!("{addr:?} is not an ip:port socket address ({e}); write e.g. \"127.0.0.1:8080\", or \"{NXDOMAIN}\" for a host that does not resolve"),
                )
            })?;
            rules.push((pattern.clone(), Target::Addr(sock)));
        }
        Ok(ResolveMap {
            rules: HostPatterns::new(rules),
        })
    }

    fn rule(&self, host: &str) -> Option<Target> {
        self.rules.get(host).copied()
    }

    /// The address a host is mapped to, if any (`None` also for [`NXDOMAIN`] hosts).
    pub fn lookup(&self, host: &str) -> Option<SocketAddr> {
        match self.rule(host)? {
            Target::Addr(a) => Some(a),
            Target::NoSuchHost => None,
        }
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// For a mapped host whose URL carries an explicit port: the URL to send (port
    /// removed, so the mapped port wins) and the `Host` header value to keep.
    pub fn connect_url(&self, url: &url::Url) -> Option<(url::Url, String)> {
        let host = url.host_str()?;
        let port = url.port()?;
        self.lookup(host)?;
        let mut u = url.clone();
        u.set_port(None).ok()?;
        Some((u, format!("{host}:{port}")))
    }
}

type Lookup = std::result::Result<Vec<SocketAddr>, String>;
type DnsCache = HashMap<String, Arc<tokio::sync::OnceCell<Lookup>>>;

/// The resolver given to reqwest: overrides first, then system DNS, cached per host
/// for the run (failures too, so a dead host fails fast for all its URLs). Concurrent
/// lookups of one host share a single query.
#[derive(Clone)]
pub struct Resolver {
    map: Arc<ResolveMap>,
    cache: Arc<Mutex<DnsCache>>,
    lookups: Arc<AtomicU64>,
    failures: Arc<AtomicU64>,
}

impl Resolver {
    /// A resolver with the given overrides.
    pub fn new(map: ResolveMap) -> Self {
        Resolver {
            map: Arc::new(map),
            cache: Arc::new(Mutex::new(HashMap::new())),
            lookups: Arc::new(AtomicU64::new(0)),
            failures: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Name lookups made so far (at most one per host not mapped to an address),
    /// and how many of them failed.
    pub fn lookups(&self) -> (u64, u64) {
        (
            self.lookups.load(Ordering::Relaxed),
            self.failures.load(Ordering::Relaxed),
        )
    }

    /// The addresses of `host`: its `fetch.resolve` address, else the (cached)
    /// system lookup. The error names the host.
    pub async fn addresses(&self, host: &str) -> Lookup {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let rule = self.map.rule(&host);
        if let Some(Target::Addr(a)) = rule {
            return Ok(vec![a]);
        }
        let cell = match self.cache.lock() {
            Ok(mut c) => c.entry(host.clone()).or_default().clone(),
            Err(_) => Arc::new(tokio::sync::OnceCell::new()),
        };
        cell.get_or_init(|| async {
            self.lookups.fetch_add(1, Ordering::Relaxed);
            let r = if rule == Some(Target::NoSuchHost) {
                Err(format!(
                    "{host}: no such host (fetch.resolve = \"{NXDOMAIN}\")"
                ))
            } else {
                match tokio::net::lookup_host((host.as_str(), 0)).await {
                    Ok(it) => {
                        let v: Vec<SocketAddr> = it.collect();
                        if v.is_empty() {
                            Err(format!("{host}: no addresses"))
                        } else {
                            Ok(v)
                        }
                    }
                    Err(e) => Err(format!("{host}: {e}")),
                }
            };
            if r.is_err() {
                self.failures.fetch_add(1, Ordering::Relaxed);
            }
            r
        })
        .await
        .clone()
    }
}

impl Resolve for Resolver {
    fn resolve(&self, name: Name) -> Resolving {
        let this = self.clone();
        Box::pin(async move {
            match this.addresses(name.as_str()).await {
                Ok(v) => Ok(Box::new(v.into_iter()) as Addrs),
                Err(e) => Err(Box::new(DnsError(e)) as Box<dyn std::error::Error + Send + Sync>),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> ResolveMap {
        let t: BTreeMap<String, String> = pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        ResolveMap::new(&t).unwrap()
    }

    #[test]
    fn patterns_match_exact_suffix_and_any() {
        let m = map(&[
            ("*.web.test", "127.0.0.1:1000"),
            ("exact.web.test", "127.0.0.1:2000"),
            ("other.org", "10.0.0.1:80"),
        ]);
        assert_eq!(m.lookup("a.web.test").unwrap().port(), 1000);
        assert_eq!(m.lookup("A.b.Web.Test.").unwrap().port(), 1000);
        assert_eq!(m.lookup("exact.web.test").unwrap().port(), 2000);
        assert!(
            m.lookup("web.test").is_none(),
            "*.x matches subdomains only"
        );
        assert!(m.lookup("xweb.test").is_none());
        assert_eq!(m.lookup("other.org").unwrap().port(), 80);
        assert!(m.lookup("www.other.org").is_none());
        let any = map(&[("*", "127.0.0.1:9")]);
        assert_eq!(any.lookup("anything.example").unwrap().port(), 9);
    }

    #[tokio::test]
    async fn nxdomain_hosts_fail_once_without_a_query() {
        let m = map(&[
            ("*.web.test", "127.0.0.1:1000"),
            ("dead.web.test", "NXDOMAIN"),
        ]);
        assert!(m.lookup("dead.web.test").is_none());
        let r = Resolver::new(m);
        for _ in 0..5 {
            let e = r.addresses("dead.web.test").await.unwrap_err();
            assert!(e.contains("dead.web.test"), "{e}");
        }
        let ok = r.addresses("a.web.test").await.unwrap();
        assert_eq!(ok[0].port(), 1000);
        assert_eq!(
            r.lookups(),
            (1, 1),
            "one lookup, cached; mapped hosts need none"
        );
    }

    #[test]
    fn bad_address_is_an_error_naming_the_key() {
        let t: BTreeMap<String, String> = [("*.x.test".to_string(), "localhost".to_string())]
            .into_iter()
            .collect();
        let err = ResolveMap::new(&t).unwrap_err().to_string();
        assert!(err.contains("fetch.resolve"), "{err}");
        assert!(err.contains("*.x.test"), "{err}");
    }

    #[test]
    fn explicit_ports_are_moved_to_the_host_header() {
        let m = map(&[("*.web.test", "127.0.0.1:1000")]);
        let u = url::Url::parse("http://a.web.test:8080/x?y").unwrap();
        let (send, host) = m.connect_url(&u).unwrap();
        assert_eq!(send.as_str(), "http://a.web.test/x?y");
        assert_eq!(host, "a.web.test:8080");
        let plain = url::Url::parse("http://a.web.test/x").unwrap();
        assert!(m.connect_url(&plain).is_none());
        let unmapped = url::Url::parse("http://b.org:8080/x").unwrap();
        assert!(m.connect_url(&unmapped).is_none());
    }

    /// A loopback server answering every request with `tag`.
    async fn tagged_server(tag: &'static str) -> SocketAddr {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = s.read(&mut buf).await;
                    let resp = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{tag}",
                        tag.len()
                    );
                    let _ = s.write_all(resp.as_bytes()).await;
                });
            }
        });
        addr
    }

    /// How reqwest treats the port of resolved addresses: kept when the URL has no
    /// port, overridden by an explicit URL port (hence [`ResolveMap::connect_url`]).
    #[tokio::test]
    async fn reqwest_port_semantics_of_resolved_addresses() {
        let mapped = tagged_server("mapped").await;
        let other = tagged_server("other").await;
        let m = map(&[("*.port.test", &mapped.to_string())]);
        crate::tls::install_provider();
        let client = reqwest::Client::builder()
            .no_proxy()
            .dns_resolver(Arc::new(Resolver::new(m.clone())))
            .build()
            .unwrap();
        let get = |u: String| {
            let c = client.clone();
            async move { c.get(u).send().await.unwrap().text().await.unwrap() }
        };
        assert_eq!(get("http://a.port.test/".into()).await, "mapped");
        let explicit = format!("http://a.port.test:{}/", other.port());
        assert_eq!(get(explicit.clone()).await, "other", "URL port overrides");
        let (send, host) = m.connect_url(&url::Url::parse(&explicit).unwrap()).unwrap();
        let body = client
            .get(send.as_str())
            .header(reqwest::header::HOST, host)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(body, "mapped", "port removed: the mapping wins");
    }
}
