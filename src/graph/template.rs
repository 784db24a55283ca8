//! Template links: the links a site's header, footer and sidebar put on every page
//! ("Index", "Modules", "Home", "Copyright"). They say nothing about their target,
//! so the index leaves them out of a page's anchors and inlinks and PageRank leaves
//! them out of its graph (`pagerank.ignore_template`); otherwise a site's index,
//! copyright and search pages collect every page's vote.
//!
//! A link is a template link when its target and anchor text (trimmed, lower-cased)
//! are linked from more than half of the pages of the target's host that link within
//! that host, on hosts with at least [`TEMPLATE_MIN_PAGES`] such pages. A majority,
//! not a tuned fraction: a link on most of a site's pages is its template by any
//! reading, and a link written in one page's text is on few.

use std::collections::{HashMap, HashSet};

use super::ids::url_host;

/// A host's pages that link within it fewer than this have no template links: on a
/// site of three pages every link is on most of them.
pub const TEMPLATE_MIN_PAGES: usize = 5;

/// Counts the links within hosts, to find the template links among them. Fed every
/// link of a set of hosts (all of each host's: one partition of a dataset
/// partitioned by host, where a page links a target with one anchor text once), then
/// [`TemplateCounter::finish`]ed. Holds 8-byte keys, not URLs: a host's pages that
/// link within it and its distinct (target, anchor) pairs, some 30 bytes each.
#[derive(Debug, Default)]
pub struct TemplateCounter {
    /// The hosts seen, by number.
    host_ids: HashMap<String, u32>,
    /// By host number: its pages that link within it (keys of their URLs).
    sources: Vec<HashSet<u64>>,
    /// Per (target, anchor) key: the target's host number and the links counted.
    pairs: HashMap<u64, (u32, u32)>,
}

impl TemplateCounter {
    /// Counts the link from `from` to `to` with anchor text `anchor` (links between
    /// hosts and a page's links to itself are not counted).
    pub fn add(&mut self, from: &str, to: &str, anchor: &str) {
        if from == to {
            return;
        }
        let host = url_host(to);
        if host.is_empty() || url_host(from) != host {
            return;
        }
        let id = match self.host_ids.get(host.as_ref()) {
            Some(&id) => id,
            None => {
                let id = self.sources.len() as u32;
                self.sources.push(HashSet::new());
                self.host_ids.insert(host.into_owned(), id);
                id
            }
        };
        self.sources[id as usize].insert(page_key(from));
        self.pairs.entry(pair_key(to, anchor)).or_insert((id, 0)).1 += 1;
    }

    /// The template links among the links counted.
    pub fn finish(self) -> TemplateLinks {
        let mut links = HashSet::new();
        for (pair, (host, n)) in self.pairs {
            let pages = self.sources.get(host as usize).map_or(0, HashSet::len);
            if pages >= TEMPLATE_MIN_PAGES && (n as usize) * 2 > pages {
                links.insert(pair);
            }
        }
        TemplateLinks { links }
    }
}

/// The template links of a set of hosts: the keys of their (target, anchor) pairs.
#[derive(Debug, Default)]
pub struct TemplateLinks {
    links: HashSet<u64>,
}

impl TemplateLinks {
    /// Whether the link from `from` to `to` with anchor text `anchor` is a template
    /// link: within a host (a link from elsewhere with the same text is a vote of
    /// its own), and its target and text those of the host's template (the nav's
    /// link to the page it is on included: a self-loop that only the template makes
    /// would keep the page's rank to itself).
    pub fn is_template(&self, from: &str, to: &str, anchor: &str) -> bool {
        !self.links.is_empty()
            && self.links.contains(&pair_key(to, anchor))
            && url_host(from) == url_host(to)
    }

    /// The number of (target, anchor) pairs found to be template links.
    pub fn len(&self) -> usize {
        self.links.len()
    }

    /// Whether no template link was found.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }
}

/// The 64-bit key of a link's target and anchor (blake3: the same on every machine).
fn pair_key(url: &str, anchor: &str) -> u64 {
    key(&[url.as_bytes(), b"\0", anchor_key(anchor).as_bytes()])
}

/// The 64-bit key a counter holds for a page (blake3).
pub fn page_key(url: &str) -> u64 {
    key(&[url.as_bytes()])
}

fn key(parts: &[&[u8]]) -> u64 {
    let mut h = blake3::Hasher::new();
    for p in parts {
        h.update(p);
    }
    let mut out = [0u8; 8];
    out.copy_from_slice(&h.finalize().as_bytes()[..8]);
    u64::from_le_bytes(out)
}

/// An anchor text as compared: trimmed, lower-cased.
pub fn anchor_key(anchor: &str) -> String {
    anchor.trim().to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(pages: usize) -> TemplateCounter {
        let mut c = TemplateCounter::default();
        for i in 0..pages {
            let from = format!("http://a.test/p{i}.html");
            c.add(&from, "http://a.test/genindex.html", "Index");
            c.add(&from, &from, "¶");
            c.add(&from, &format!("http://a.test/p{}.html", i + 1), "Next");
            c.add(&from, "http://b.test/", "Elsewhere");
        }
        // One page's own text links the index once more, with words of its own.
        c.add(
            "http://a.test/p0.html",
            "http://a.test/genindex.html",
            "the general index",
        );
        c
    }

    #[test]
    fn a_link_on_most_pages_of_a_host_is_its_template() {
        let t = site(6).finish();
        let (p2, index) = ("http://a.test/p2.html", "http://a.test/genindex.html");
        assert!(t.is_template(p2, index, " index "));
        assert!(t.is_template(p2, index, "INDEX"));
        assert!(!t.is_template(p2, index, "the general index"));
        // The same text from another host is a vote of its own.
        assert!(!t.is_template("http://b.test/", index, "Index"));
        // "Next" points somewhere else from every page: each target has one.
        assert!(!t.is_template(p2, "http://a.test/p3.html", "Next"));
        // Links to another host and to the page itself are not counted.
        assert!(!t.is_template(p2, "http://b.test/", "Elsewhere"));
        assert!(!t.is_template("http://a.test/p1.html", "http://a.test/p1.html", "¶"));
        // The template's link on the page it points to is the template's too.
        assert!(t.is_template(index, index, "Index"));
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn a_small_site_has_no_template() {
        assert!(site(TEMPLATE_MIN_PAGES - 1).finish().is_empty());
        assert!(!site(TEMPLATE_MIN_PAGES).finish().is_empty());
    }

    #[test]
    fn half_of_the_pages_is_not_most() {
        let mut c = TemplateCounter::default();
        for i in 0..6 {
            let from = format!("http://a.test/p{i}.html");
            c.add(&from, "http://a.test/x.html", "other");
            if i < 3 {
                c.add(&from, "http://a.test/half.html", "Half");
            }
        }
        let t = c.finish();
        assert!(!t.is_template("http://a.test/p0.html", "http://a.test/half.html", "half"));
    }
}
