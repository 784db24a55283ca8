//! HostRank: the page graph collapsed to hosts (an edge between two hosts when any
//! page of one links to any page of the other; links within a host are dropped),
//! then PageRank over it. Every host of a page in the graph is a node.

use std::ops::Range;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::csr::{Csr, sort_dedup_edges};
use super::ids::{PageGraph, url_host};
use super::pagerank::{PageRankParams, PageRankResult, out_degrees, pagerank};

/// The host graph and its PageRank.
#[derive(Debug)]
pub struct HostRank {
    /// Hosts by id, sorted by (partition, host).
    pub hosts: Vec<String>,
    /// Partition boundaries of `hosts`.
    pub part_offsets: Vec<usize>,
    /// Out-links between hosts.
    pub out: Csr,
    /// In-degree per host.
    pub in_degree: Vec<u32>,
    /// The PageRank of the host graph.
    pub rank: PageRankResult,
}

impl HostRank {
    /// The host ids of partition `p`.
    pub fn partition(&self, p: usize) -> Range<usize> {
        self.part_offsets[p]..self.part_offsets[p + 1]
    }
}

/// Collapses `graph` to hosts and ranks them (uniform teleport).
pub fn hostrank(graph: &PageGraph, params: &PageRankParams) -> HostRank {
    let pt = graph.partitioner();
    let parts = pt.n();
    let page_host: Vec<String> = (0..graph.nodes())
        .into_par_iter()
        .map(|v| url_host(graph.url(v)).into_owned())
        .collect();
    let mut hosts: Vec<(usize, &str)> = {
        let mut seen: FxHashMap<&str, ()> = FxHashMap::default();
        for h in &page_host {
            seen.insert(h.as_str(), ());
        }
        seen.into_keys().map(|h| (pt.of_host(h), h)).collect()
    };
    hosts.par_sort_unstable();
    let mut part_offsets = vec![0usize; parts + 1];
    for (p, _) in &hosts {
        part_offsets[p + 1] += 1;
    }
    for p in 0..parts {
        part_offsets[p + 1] += part_offsets[p];
    }
    let index: FxHashMap<&str, u32> = hosts
        .iter()
        .enumerate()
        .map(|(i, (_, h))| (*h, i as u32))
        .collect();
    let host_of_page: Vec<u32> = page_host.iter().map(|h| index[h.as_str()]).collect();
    let mut edges: Vec<(u32, u32)> = (0..graph.nodes())
        .into_par_iter()
        .flat_map_iter(|u| {
            let hu = host_of_page[u];
            let hp = &host_of_page;
            graph
                .out
                .neighbours(u)
                .iter()
                .map(move |&v| (hu, hp[v as usize]))
                .filter(|(a, b)| a != b)
        })
        .collect();
    sort_dedup_edges(&mut edges);
    let n = hosts.len();
    let out = Csr::from_sorted_edges(n, &edges);
    drop(edges);
    let inl = out.transpose();
    let rank = pagerank(&inl, &out_degrees(&out), None, params);
    let in_degree = out_degrees(&inl);
    HostRank {
        hosts: hosts.into_iter().map(|(_, h)| h.to_string()).collect(),
        part_offsets,
        out,
        in_degree,
        rank,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapses_pages_to_hosts() {
        let g = PageGraph::from_edges(
            &[
                ("http://a.test/1", "http://a.test/2"),
                ("http://a.test/1", "http://b.test/"),
                ("http://a.test/2", "http://b.test/x"),
                ("http://c.test/", "http://b.test/"),
                ("http://b.test/", "http://a.test/1"),
            ],
            4,
        )
        .unwrap();
        let params = PageRankParams {
            tolerance: 1e-14,
            max_iterations: 1000,
            ..Default::default()
        };
        let h = hostrank(&g, &params);
        assert_eq!(h.hosts.len(), 3);
        assert_eq!(h.out.edges(), 3); // a->b, b->a, c->b
        let id = |name: &str| h.hosts.iter().position(|x| x == name).unwrap();
        assert_eq!(h.in_degree[id("b.test")], 2);
        assert_eq!(h.out.degree(id("c.test")), 1);
        let s = &h.rank.scores;
        assert!((s.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!(s[id("b.test")] > s[id("a.test")] && s[id("a.test")] > s[id("c.test")]);
    }
}
