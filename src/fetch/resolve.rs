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
use std::sync::{Arc, Mutex};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::error::{Error, Result};
use crate::fetch::outcome::DnsError;

/// One host pattern: an exact name, `*.suffix` (any subdomain of `suffix`), or `*`.
#[derive(Debug, Clone, PartialEq)]
enum Pattern {
    Any,
    Exact(String),
    Suffix(String),
}

impl Pattern {
    fn parse(p: &str) -> Pattern {
        let p = p.trim().trim_end_matches('.').to_ascii_lowercase();
        if p == "*" {
            Pattern::Any
        } else if let Some(rest) = p.strip_prefix("*.") {
            Pattern::Suffix(format!(".{rest}"))
        } else {
            Pattern::Exact(p)
        }
    }

    fn matches(&self, host: &str) -> bool {
        match self {
            Pattern::Any => true,
            Pattern::Exact(h) => h == host,
            Pattern::Suffix(s) => host.len() > s.len() && host.ends_with(s.as_str()),
        }
    }

    /// More specific patterns first: exact names, then longer suffixes, then `*`.
    fn rank(&self) -> (u8, usize) {
        match self {
            Pattern::Exact(h) => (0, usize::MAX - h.len()),
            Pattern::Suffix(s) => (1, usize::MAX - s.len()),
            Pattern::Any => (2, 0),
        }
    }
}

/// The `fetch.resolve` table: host patterns mapped to socket addresses.
#[derive(Debug, Clone, Default)]
pub struct ResolveMap {
    rules: Vec<(Pattern, SocketAddr)>,
}

impl ResolveMap {
    /// Parses the config table; a value that is not `ip:port` is an error naming the key.
    pub fn new(table: &BTreeMap<String, String>) -> Result<Self> {
        let mut rules = Vec::new();
        for (pattern, addr) in table {
            let sock: SocketAddr = addr.trim().parse().map_err(|e| {
                Error::input(
                    format!("fetch.resolve.\"{pattern}\""),
                    format!("{addr:?} is not an ip:port socket address ({e}); write e.g. \"127.0.0.1:8080\""),
                )
            })?;
            rules.push((Pattern::parse(pattern), sock));
        }
        rules.sort_by_key(|(p, _)| p.rank());
        Ok(ResolveMap { rules })
    }

    /// The address a host is mapped to, if any.
    pub fn lookup(&self, host: &str) -> Option<SocketAddr> {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.rules
            .iter()
            .find(|(p, _)| p.matches(&host))
            .map(|(_, a)| *a)
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

type DnsCache = HashMap<String, std::result::Result<Vec<SocketAddr>, String>>;

/// The resolver given to reqwest: overrides first, then system DNS, cached per host
/// (failures too, so a dead host fails fast for all its URLs).
#[derive(Clone)]
pub struct Resolver {
    map: Arc<ResolveMap>,
    cache: Arc<Mutex<DnsCache>>,
}

impl Resolver {
    /// A resolver with the given overrides.
    pub fn new(map: ResolveMap) -> Self {
        Resolver {
            map: Arc::new(map),
            cache: Arc::new(Mutex::new(HashMap::new())),
        }
    }
}

impl Resolve for Resolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_ascii_lowercase();
        if let Some(addr) = self.map.lookup(&host) {
            let addrs: Addrs = Box::new(std::iter::once(addr));
            return Box::pin(async move { Ok(addrs) });
        }
        let cache = self.cache.clone();
        Box::pin(async move {
            let cached = cache.lock().ok().and_then(|c| c.get(&host).cloned());
            let result = match cached {
                Some(r) => r,
                None => {
                    let r = match tokio::net::lookup_host((host.as_str(), 0)).await {
                        Ok(it) => {
                            let v: Vec<SocketAddr> = it.collect();
                            if v.is_empty() {
                                Err(format!("{host}: no addresses"))
                            } else {
                                Ok(v)
                            }
                        }
                        Err(e) => Err(format!("{host}: {e}")),
                    };
                    if let Ok(mut c) = cache.lock() {
                        c.insert(host.clone(), r.clone());
                    }
                    r
                }
            };
            match result {
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
