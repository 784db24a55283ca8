//! The site map: the exact truth about a generated web, serializable as JSON, and the
//! helpers integration tests derive their expectations from.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::model::{Behavior, Kind, Web};
use super::robots::{CRAWLER_AGENT, RobotsGroup};
use super::spec::WebSpec;
use trawl::error::Result;
use trawl::store::parquet::{read_json, write_json};

/// Everything known about one URL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UrlEntry {
    /// Its role in the web.
    pub kind: Kind,
    /// HTTP status the server answers: 200, 301, 302 or 404.
    pub status: u16,
    /// `Content-Type` of the response.
    pub content_type: String,
    /// Body size in bytes.
    pub body_bytes: u64,
    /// BLAKE3 hash of the body (hex); equal for exact duplicates.
    pub body_blake3: String,
    /// Links of the page, resolved and normalized like `urls::UrlPolicy` (default config)
    /// does, in document order, deduplicated. Empty for non-pages.
    pub outlinks: Vec<String>,
    /// Raw `Location` header of a redirect.
    pub location: Option<String>,
    /// Normalized absolute redirect target.
    pub redirect: Option<String>,
    /// robots.txt of the URL's host forbids it to agent `trawl`.
    pub disallowed: bool,
    /// The page's `<title>`.
    pub title: Option<String>,
    /// The URL whose body this one repeats byte for byte.
    pub duplicate_of: Option<String>,
    /// The page has `<meta name="robots" content="nofollow">`: its links must not be followed.
    pub nofollow: bool,
    /// The page has `<meta name="robots" content="noindex">`.
    pub noindex: bool,
    /// Number of distinct pages of the web whose outlinks contain this URL.
    pub in_degree: u64,
    /// How many generations changed the page's content (0 in generation 0).
    #[serde(default)]
    pub revision: u32,
    /// How the response is delivered (delays, endless body, reset, conditional).
    #[serde(default)]
    pub behavior: Behavior,
    /// Extra response headers (`Retry-After`, `Content-Encoding`, `ETag`, ...).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// What a hostile resource tests.
    #[serde(default)]
    pub note: Option<String>,
}

/// Everything known about one host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostEntry {
    /// Status of `/robots.txt`: 200, 404 when the host has none, 500 when it fails.
    pub robots_status: u16,
    /// The robots.txt body, if any (served at `robots_moved_to` when that is set).
    pub robots_txt: Option<String>,
    /// `/robots.txt` answers 301 to this path, which serves `robots_txt`.
    #[serde(default)]
    pub robots_moved_to: Option<String>,
    /// Its groups.
    pub robots_groups: Vec<RobotsGroup>,
    /// Disallow prefixes in effect for agent `trawl`.
    pub disallowed_for_trawl: Vec<String>,
}

/// The site map of a generated web.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SiteMap {
    /// The spec that generated the web.
    pub spec: WebSpec,
    /// The seed URLs.
    pub seeds: Vec<String>,
    /// Hosts by name.
    pub hosts: BTreeMap<String, HostEntry>,
    /// Every URL the web serves or links to, by normalized absolute URL.
    pub urls: BTreeMap<String, UrlEntry>,
    /// The XML/text sitemap files the web publishes (`--sitemaps`), by URL.
    #[serde(default)]
    pub sitemaps: BTreeMap<String, super::xmlsitemaps::SitemapFile>,
}

impl Web {
    /// The site map of this web.
    pub fn site_map(&self) -> SiteMap {
        let mut in_degree: BTreeMap<&str, u64> = BTreeMap::new();
        for r in self.resources() {
            for o in &r.outlinks {
                *in_degree.entry(o.as_str()).or_default() += 1;
            }
        }
        let mut urls = BTreeMap::new();
        let mut hosts = BTreeMap::new();
        for h in &self.hosts {
            for r in h.resources.values() {
                urls.insert(
                    r.url.clone(),
                    UrlEntry {
                        kind: r.kind,
                        status: r.status,
                        content_type: r.content_type.to_string(),
                        body_bytes: r.body.len() as u64,
                        body_blake3: blake3::hash(&r.body).to_hex().to_string(),
                        outlinks: r.outlinks.clone(),
                        location: r.location.clone(),
                        redirect: r.redirect.clone(),
                        disallowed: !h.robots.allowed(CRAWLER_AGENT, &r.path),
                        title: r.title.clone(),
                        duplicate_of: r.duplicate_of.clone(),
                        nofollow: r.nofollow,
                        noindex: r.noindex,
                        in_degree: in_degree.get(r.url.as_str()).copied().unwrap_or(0),
                        revision: r.revision,
                        behavior: r.behavior,
                        headers: r.headers.iter().cloned().collect(),
                        note: r.note.clone(),
                    },
                );
            }
            let text = h.robots.text();
            hosts.insert(
                h.name.clone(),
                HostEntry {
                    robots_status: h.robots.status(),
                    robots_txt: text,
                    robots_moved_to: h.robots.moved_to.clone(),
                    robots_groups: h.robots.groups.clone().unwrap_or_default(),
                    disallowed_for_trawl: h.robots.disallowed_prefixes(CRAWLER_AGENT),
                },
            );
        }
        SiteMap {
            spec: self.spec.clone(),
            seeds: self.seeds.clone(),
            hosts,
            urls,
            sitemaps: self.sitemaps.clone(),
        }
    }
}

impl SiteMap {
    /// Reads a site map written by [`SiteMap::save`] (or `testweb sitemap`).
    pub fn load(path: &Path) -> Result<SiteMap> {
        read_json(path)
    }

    /// Writes the site map as pretty JSON, atomically.
    pub fn save(&self, path: &Path) -> Result<()> {
        write_json(path, self)
    }

    /// The entry of `url`, if the web knows it.
    pub fn get(&self, url: &str) -> Option<&UrlEntry> {
        self.urls.get(url)
    }

    /// URLs of the given kind.
    pub fn urls_of_kind(&self, kind: Kind) -> Vec<&str> {
        self.urls
            .iter()
            .filter(|(_, e)| e.kind == kind)
            .map(|(u, _)| u.as_str())
            .collect()
    }

    /// Breadth-first search from `seeds` up to `max_depth` links (seeds are depth 0;
    /// `None` = unlimited): every URL reached, with its smallest depth.
    ///
    /// A reached URL is expanded when it is a 200 page that robots.txt allows to
    /// `trawl` and that is not `nofollow` (its outlinks get depth + 1), or a redirect
    /// (its target gets depth + 1). Robots-disallowed URLs are reached (known) but
    /// never expanded, as a crawler never fetches them. Seeds unknown to the site map
    /// are reported at depth 0 and not expanded.
    pub fn reachable(&self, seeds: &[String], max_depth: Option<u32>) -> BTreeMap<String, u32> {
        let mut depth: BTreeMap<String, u32> = BTreeMap::new();
        let mut queue = VecDeque::new();
        for s in seeds {
            if !depth.contains_key(s) {
                depth.insert(s.clone(), 0);
                queue.push_back(s.clone());
            }
        }
        while let Some(url) = queue.pop_front() {
            let d = depth[&url];
            if max_depth.is_some_and(|m| d >= m) {
                continue;
            }
            let Some(e) = self.urls.get(&url) else {
                continue;
            };
            if e.disallowed {
                continue;
            }
            let next: Vec<&String> = match (e.status, &e.redirect) {
                (200, _) if !e.nofollow => e.outlinks.iter().collect(),
                (301 | 302, Some(t)) => vec![t],
                _ => Vec::new(),
            };
            for n in next {
                if !depth.contains_key(n) {
                    depth.insert(n.clone(), d + 1);
                    queue.push_back(n.clone());
                }
            }
        }
        depth
    }

    /// The URLs of [`SiteMap::reachable`] a polite crawler actually requests: the
    /// reached ones robots.txt allows.
    pub fn fetchable(&self, seeds: &[String], max_depth: Option<u32>) -> BTreeMap<String, u32> {
        self.reachable(seeds, max_depth)
            .into_iter()
            .filter(|(u, _)| self.urls.get(u).is_none_or(|e| !e.disallowed))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate;

    fn map() -> SiteMap {
        generate(&WebSpec::default()).unwrap().site_map()
    }

    #[test]
    fn json_round_trip() {
        let m = map();
        let json = serde_json::to_string(&m).unwrap();
        let back: SiteMap = serde_json::from_str(&json).unwrap();
        assert_eq!(m, back);
    }

    #[test]
    fn hubs_have_high_in_degree() {
        let m = map();
        let mut degrees: Vec<u64> = m.urls.values().map(|e| e.in_degree).collect();
        degrees.sort_unstable();
        let max = *degrees.last().unwrap();
        let median = degrees[degrees.len() / 2];
        assert!(max >= 5 * median.max(1), "max {max} median {median}");
    }

    #[test]
    fn robots_flags_follow_each_hosts_rules() {
        let m = map();
        assert!(
            m.get("http://site0.web.test/private/s1.html")
                .unwrap()
                .disallowed
        );
        assert!(
            !m.get("http://site0.web.test/other/o1.html")
                .unwrap()
                .disallowed
        );
        assert!(
            m.get("http://site1.web.test/private/s1.html")
                .unwrap()
                .disallowed
        );
        assert!(
            !m.get("http://site1.web.test/other/o1.html")
                .unwrap()
                .disallowed
        );
        assert!(
            !m.get("http://site2.web.test/private/s1.html")
                .unwrap()
                .disallowed
        );
        assert!(
            !m.get("http://site3.web.test/private/s1.html")
                .unwrap()
                .disallowed
        );
        assert_eq!(m.hosts["site2.web.test"].robots_status, 404);
        assert_eq!(
            m.hosts["site0.web.test"].disallowed_for_trawl,
            vec!["/private/"]
        );
    }

    #[test]
    fn reachable_stops_at_disallowed_and_nofollow_pages() {
        let m = map();
        let seeds = m.seeds.clone();
        let all = m.reachable(&seeds, None);
        assert_eq!(all[&seeds[0]], 0);
        // Disallowed private pages are known but their links are not followed.
        assert!(all.contains_key("http://site0.web.test/private/s1.html"));
        assert!(!all.contains_key("http://site0.web.test/hidden1.html"));
        // On a host without robots.txt the hidden page is reached through private pages.
        assert!(all.contains_key("http://site2.web.test/hidden1.html"));
        let fetchable = m.fetchable(&seeds, None);
        assert!(!fetchable.contains_key("http://site0.web.test/private/s1.html"));
        // Depth limits.
        let d1 = m.reachable(&seeds, Some(1));
        assert!(d1.values().all(|&d| d <= 1));
        for o in &m.get(&seeds[0]).unwrap().outlinks {
            assert!(d1.contains_key(o));
        }
        assert!(d1.len() < all.len());
        // Nofollow: a page reached only through a nofollow page is not reached.
        for (url, e) in &m.urls {
            if e.nofollow && all.contains_key(url) {
                for o in &e.outlinks {
                    let via_other = m.urls.iter().any(|(u, x)| {
                        u != url
                            && all.contains_key(u)
                            && !x.nofollow
                            && !x.disallowed
                            && (x.outlinks.contains(o) || x.redirect.as_ref() == Some(o))
                    });
                    assert_eq!(all.contains_key(o), via_other || seeds.contains(o), "{o}");
                }
            }
        }
    }
}
