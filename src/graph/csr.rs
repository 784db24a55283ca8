//! Compressed sparse row adjacency over dense `u32` node ids.

use rayon::prelude::*;

/// A CSR adjacency: the neighbours of node `v` are `targets[offsets[v]..offsets[v + 1]]`,
/// ascending. Used both for out-links (node -> targets) and, transposed, for in-links
/// (node -> sources).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Csr {
    offsets: Vec<u64>,
    targets: Vec<u32>,
}

impl Csr {
    /// Builds the CSR of `n` nodes from edges sorted by (source, target) and
    /// deduplicated (see [`sort_dedup_edges`]). Every id must be below `n`.
    pub fn from_sorted_edges(n: usize, edges: &[(u32, u32)]) -> Csr {
        let mut offsets = vec![0u64; n + 1];
        for &(s, _) in edges {
            offsets[s as usize + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let targets = edges.iter().map(|&(_, t)| t).collect();
        Csr { offsets, targets }
    }

    /// A CSR from its arrays: `offsets` of length `n + 1`, non-decreasing, starting
    /// at 0 and ending at `targets.len()`; every list ascending, ids below `n`.
    pub(crate) fn from_parts(offsets: Vec<u64>, targets: Vec<u32>) -> Csr {
        debug_assert_eq!(offsets.first().copied(), Some(0));
        debug_assert_eq!(offsets.last().copied(), Some(targets.len() as u64));
        Csr { offsets, targets }
    }

    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Number of edges.
    pub fn edges(&self) -> usize {
        self.targets.len()
    }

    /// The neighbours of `v`, ascending.
    #[inline]
    pub fn neighbours(&self, v: usize) -> &[u32] {
        &self.targets[self.offsets[v] as usize..self.offsets[v + 1] as usize]
    }

    /// The number of neighbours of `v`.
    #[inline]
    pub fn degree(&self, v: usize) -> usize {
        (self.offsets[v + 1] - self.offsets[v]) as usize
    }

    /// The raw arrays (offsets of length `nodes + 1`, targets).
    pub fn parts(&self) -> (&[u64], &[u32]) {
        (&self.offsets, &self.targets)
    }

    /// The reverse graph: edge `u -> v` becomes `v -> u`. Neighbour lists of the
    /// result are ascending because sources are visited in order.
    pub fn transpose(&self) -> Csr {
        let n = self.nodes();
        let mut offsets = vec![0u64; n + 1];
        for &t in &self.targets {
            offsets[t as usize + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut next: Vec<u64> = offsets[..n].to_vec();
        let mut targets = vec![0u32; self.targets.len()];
        for u in 0..n {
            for &t in self.neighbours(u) {
                let slot = &mut next[t as usize];
                targets[*slot as usize] = u as u32;
                *slot += 1;
            }
        }
        Csr { offsets, targets }
    }

    /// Bytes held by the two arrays.
    pub fn heap_bytes(&self) -> usize {
        self.offsets.len() * 8 + self.targets.len() * 4
    }
}

/// Sorts edges by (source, target) in parallel and removes duplicates.
pub fn sort_dedup_edges(edges: &mut Vec<(u32, u32)>) {
    edges.par_sort_unstable();
    edges.dedup();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_and_transposes() {
        let mut e = vec![(0, 2), (0, 1), (2, 0), (0, 1), (1, 2)];
        sort_dedup_edges(&mut e);
        let g = Csr::from_sorted_edges(4, &e);
        assert_eq!(g.nodes(), 4);
        assert_eq!(g.edges(), 4);
        assert_eq!(g.neighbours(0), &[1, 2]);
        assert_eq!(g.neighbours(3), &[] as &[u32]);
        let t = g.transpose();
        assert_eq!(t.neighbours(0), &[2]);
        assert_eq!(t.neighbours(2), &[0, 1]);
        assert_eq!(t.degree(1), 1);
        assert_eq!(t.transpose(), g);
    }
}
