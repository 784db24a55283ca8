//! URL -> dense id assignment and the page graph built from an [`EdgeSource`].
//!
//! One scan of the source: each file (in parallel) interns its URLs into local ids
//! and collects local edges; the files' tables are merged into one table. Then the
//! distinct URLs are sorted by (host partition, URL), which makes every partition a
//! contiguous id range in URL order (the order the crawldb and `pagerank/` parts
//! use), and the edges are renumbered, sorted and deduplicated into a CSR.

use std::borrow::Cow;
use std::ops::Range;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::csr::{Csr, sort_dedup_edges};
use super::source::EdgeSource;
use crate::error::{Error, Result};
use crate::storage::partition_for_host;
use crate::urls::host_of;

/// The page graph: URLs by id, partition boundaries, and the out-link CSR.
#[derive(Debug)]
pub struct PageGraph {
    urls: Vec<String>,
    part_offsets: Vec<usize>,
    /// Out-links (node -> distinct targets, ascending).
    pub out: Csr,
}

impl PageGraph {
    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.urls.len()
    }

    /// The URL of node `id`.
    pub fn url(&self, id: usize) -> &str {
        &self.urls[id]
    }

    /// Number of host partitions.
    pub fn partitions(&self) -> usize {
        self.part_offsets.len() - 1
    }

    /// The ids of partition `p`, whose URLs are ascending.
    pub fn partition(&self, p: usize) -> Range<usize> {
        self.part_offsets[p]..self.part_offsets[p + 1]
    }

    /// The id of `url`, by binary search in its host's partition.
    pub fn id_of(&self, url: &str) -> Option<usize> {
        let p = partition_for_host(&url_host(url), self.partitions());
        let r = self.partition(p);
        self.urls[r.clone()]
            .binary_search_by(|u| u.as_str().cmp(url))
            .ok()
            .map(|i| r.start + i)
    }

    /// Builds a graph from explicit URL and edge lists (tests, benchmarks): every
    /// URL of `edges` must be in `urls`.
    pub fn from_edges(edges: &[(&str, &str)], partitions: usize) -> Result<PageGraph> {
        let mut t = Interner::default();
        for (s, d) in edges {
            t.edge(s, d);
        }
        finish(t, partitions)
    }

    /// Bytes held by the URL table and the CSR (an estimate of the graph's memory).
    pub fn heap_bytes(&self) -> usize {
        self.out.heap_bytes()
            + self
                .urls
                .iter()
                .map(|u| u.capacity() + std::mem::size_of::<String>())
                .sum::<usize>()
    }
}

/// The host of a URL, cheaply: normalized URLs have a lowercase host between `://`
/// and the first `/`, `?` or `#`; anything unusual (user info, IPv6, uppercase)
/// goes through the full parser ([`host_of`]).
pub fn url_host(url: &str) -> Cow<'_, str> {
    if let Some(i) = url.find("://") {
        let rest = &url[i + 3..];
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let auth = &rest[..end];
        if !auth.is_empty()
            && auth
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-.:_".contains(&b))
        {
            let host = auth.split(':').next().unwrap_or(auth);
            return Cow::Borrowed(host);
        }
    }
    Cow::Owned(host_of(url))
}

/// URL interning of one scan: URL -> local id, and edges in local ids.
#[derive(Default)]
struct Interner {
    ids: FxHashMap<String, u32>,
    edges: Vec<(u32, u32)>,
}

impl Interner {
    fn id(&mut self, url: &str) -> u32 {
        if let Some(&i) = self.ids.get(url) {
            return i;
        }
        let i = self.ids.len() as u32;
        self.ids.insert(url.to_string(), i);
        i
    }

    fn edge(&mut self, src: &str, dst: &str) {
        let s = self.id(src);
        let d = self.id(dst);
        self.edges.push((s, d));
    }

    /// Moves `other`'s URLs and edges into `self`.
    fn absorb(&mut self, other: Interner) {
        let mut map = vec![0u32; other.ids.len()];
        for (url, local) in other.ids {
            let n = self.ids.len() as u32;
            let id = *self.ids.entry(url).or_insert(n);
            map[local as usize] = id;
        }
        self.edges.extend(
            other
                .edges
                .into_iter()
                .map(|(s, d)| (map[s as usize], map[d as usize])),
        );
    }
}

/// Builds the page graph of `source`, partitioning URLs by host into `partitions`.
pub fn build_graph(source: &EdgeSource, partitions: usize) -> Result<PageGraph> {
    let mut all = Interner::default();
    let batch = rayon::current_num_threads().max(1) * 2;
    for files in source.files().chunks(batch) {
        let locals: Vec<Result<Interner>> = files
            .par_iter()
            .map(|path| {
                let mut t = Interner::default();
                source.scan_file(path, &mut |s, d| t.edge(s, d))?;
                Ok(t)
            })
            .collect();
        for t in locals {
            all.absorb(t?);
            if all.ids.len() >= u32::MAX as usize - 1 {
                return Err(Error::input(
                    "graph",
                    "more than 4 billion distinct URLs: beyond u32 ids",
                ));
            }
        }
    }
    finish(all, partitions)
}

fn finish(t: Interner, partitions: usize) -> Result<PageGraph> {
    let partitions = partitions.max(1);
    let n = t.ids.len();
    let mut entries: Vec<(usize, String, u32)> = t
        .ids
        .into_par_iter()
        .map(|(url, id)| (partition_for_host(&url_host(&url), partitions), url, id))
        .collect();
    entries.par_sort_unstable_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    let mut perm = vec![0u32; n];
    let mut part_offsets = vec![0usize; partitions + 1];
    for (new, (p, _, old)) in entries.iter().enumerate() {
        perm[*old as usize] = new as u32;
        part_offsets[p + 1] += 1;
    }
    for p in 0..partitions {
        part_offsets[p + 1] += part_offsets[p];
    }
    let urls: Vec<String> = entries.into_iter().map(|(_, u, _)| u).collect();
    let mut edges = t.edges;
    edges
        .par_iter_mut()
        .for_each(|e| *e = (perm[e.0 as usize], perm[e.1 as usize]));
    drop(perm);
    sort_dedup_edges(&mut edges);
    let out = Csr::from_sorted_edges(n, &edges);
    Ok(PageGraph {
        urls,
        part_offsets,
        out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts() {
        assert_eq!(url_host("http://a.test/x"), "a.test");
        assert_eq!(url_host("https://a.test:8080?q"), "a.test");
        assert_eq!(url_host("http://u@B.test/"), "b.test");
    }

    #[test]
    fn ids_follow_partition_then_url_order() {
        let g = PageGraph::from_edges(
            &[
                ("http://a.test/1", "http://b.test/"),
                ("http://a.test/1", "http://b.test/"),
                ("http://b.test/", "http://a.test/0"),
                ("http://c.test/", "http://c.test/"),
            ],
            3,
        )
        .unwrap();
        assert_eq!(g.nodes(), 4);
        assert_eq!(g.out.edges(), 3);
        for p in 0..3 {
            let r = g.partition(p);
            for id in r.clone() {
                assert_eq!(partition_for_host(&url_host(g.url(id)), 3), p);
                if id > r.start {
                    assert!(g.url(id - 1) < g.url(id));
                }
            }
        }
        let a1 = g.id_of("http://a.test/1").unwrap();
        let b = g.id_of("http://b.test/").unwrap();
        let c = g.id_of("http://c.test/").unwrap();
        assert_eq!(g.out.neighbours(a1), &[b as u32]);
        assert_eq!(g.out.neighbours(c), &[c as u32]);
        assert_eq!(g.id_of("http://nope.test/"), None);
    }
}
