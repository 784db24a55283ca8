//! The PageRank kernel: pull-based power iteration over the in-link CSR, in `f64`,
//! parallel with rayon.
//!
//! ```text
//! rank'[v] = (1 - d) * t[v] + d * ( sum_{u -> v} rank[u] / outdeg[u]  +  D / N )
//! ```
//!
//! where `D` is the total rank of dangling pages (no out-links), spread uniformly over
//! all `N` pages, and `t` the teleport vector (uniform `1/N`, or uniform over a seed
//! set). Self-loops are ordinary edges. Iteration starts from `t` and stops when the
//! L1 change of one iteration drops below the tolerance, or after `max_iterations`.
//! Scores sum to 1.

use rayon::prelude::*;

use super::csr::Csr;

/// Nodes per parallel work item.
const CHUNK: usize = 8192;

/// Parameters of a PageRank run.
#[derive(Debug, Clone)]
pub struct PageRankParams {
    /// Damping factor `d` (probability of following a link), in [0, 1).
    pub damping: f64,
    /// Stop when the L1 change of one iteration is below this.
    pub tolerance: f64,
    /// Stop after this many iterations at most.
    pub max_iterations: usize,
}

/// The defaults are those of `[pagerank]` (see docs/graph.md): after `k` iterations
/// the L1 change is at most `2 d^k` (the Google matrix contracts zero-sum vectors by
/// `d` in L1), so tolerance 1e-6 is reached within 90 iterations at d = 0.85,
/// whatever the graph; measured: 61 on cnr-2000, 67 on the demo crawl.
impl Default for PageRankParams {
    fn default() -> Self {
        PageRankParams {
            damping: 0.85,
            tolerance: 1e-6,
            max_iterations: 100,
        }
    }
}

/// The outcome of a PageRank run.
#[derive(Debug, Clone)]
pub struct PageRankResult {
    /// One score per node; they sum to 1.
    pub scores: Vec<f64>,
    /// Iterations run.
    pub iterations: usize,
    /// L1 change of the last iteration.
    pub delta: f64,
}

/// Runs PageRank. `inlinks` is the in-link CSR (node -> sources), `outdeg[u]` the
/// out-degree of `u` in the same graph; `teleport`, when given, is a probability
/// vector of length `N` (default uniform).
pub fn pagerank(
    inlinks: &Csr,
    outdeg: &[u32],
    teleport: Option<&[f64]>,
    params: &PageRankParams,
) -> PageRankResult {
    let n = inlinks.nodes();
    if n == 0 {
        return PageRankResult {
            scores: Vec::new(),
            iterations: 0,
            delta: 0.0,
        };
    }
    let d = params.damping;
    let uniform = 1.0 / n as f64;
    let tele = |v: usize| teleport.map_or(uniform, |t| t[v]);
    let mut rank: Vec<f64> = (0..n).map(tele).collect();
    let mut next = vec![0.0f64; n];
    let mut contrib = vec![0.0f64; n];
    let (offsets, sources) = inlinks.parts();
    let mut iterations = 0;
    let mut delta = f64::INFINITY;
    while iterations < params.max_iterations {
        // contrib[u] = rank[u] / outdeg[u]; dangling mass summed on the way.
        let dangling: f64 = contrib
            .par_chunks_mut(CHUNK)
            .zip(rank.par_chunks(CHUNK))
            .zip(outdeg.par_chunks(CHUNK))
            .map(|((c, r), o)| {
                let mut dang = 0.0;
                for i in 0..c.len() {
                    if o[i] == 0 {
                        dang += r[i];
                        c[i] = 0.0;
                    } else {
                        c[i] = r[i] / o[i] as f64;
                    }
                }
                dang
            })
            .sum();
        let spread = d * dangling / n as f64;
        let contrib_ref = &contrib;
        delta = next
            .par_chunks_mut(CHUNK)
            .zip(rank.par_chunks(CHUNK))
            .enumerate()
            .map(|(ci, (out, old))| {
                let base = ci * CHUNK;
                let mut diff = 0.0;
                for i in 0..out.len() {
                    let v = base + i;
                    let lo = offsets[v] as usize;
                    let hi = offsets[v + 1] as usize;
                    let mut s = 0.0;
                    for &u in &sources[lo..hi] {
                        s += contrib_ref[u as usize];
                    }
                    let x = (1.0 - d) * tele(v) + spread + d * s;
                    diff += (x - old[i]).abs();
                    out[i] = x;
                }
                diff
            })
            .sum();
        std::mem::swap(&mut rank, &mut next);
        iterations += 1;
        if delta < params.tolerance {
            break;
        }
    }
    // Remove floating-point drift so that the scores sum to 1 exactly enough.
    let total: f64 = rank.par_iter().sum();
    if total > 0.0 {
        rank.par_iter_mut().for_each(|x| *x /= total);
    }
    PageRankResult {
        scores: rank,
        iterations,
        delta,
    }
}

/// Out-degrees of an out-link CSR, as the kernel wants them.
pub fn out_degrees(outlinks: &Csr) -> Vec<u32> {
    (0..outlinks.nodes())
        .map(|v| outlinks.degree(v) as u32)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::csr::sort_dedup_edges;
    use super::*;

    fn run(n: usize, edges: &[(u32, u32)], d: f64) -> PageRankResult {
        let mut e = edges.to_vec();
        sort_dedup_edges(&mut e);
        let out = Csr::from_sorted_edges(n, &e);
        let params = PageRankParams {
            damping: d,
            tolerance: 1e-14,
            max_iterations: 10_000,
        };
        pagerank(&out.transpose(), &out_degrees(&out), None, &params)
    }

    /// Dense reference: x' = M x with M built explicitly (column-stochastic Google matrix).
    fn dense(n: usize, edges: &[(u32, u32)], d: f64, teleport: &[f64]) -> Vec<f64> {
        let mut e = edges.to_vec();
        e.sort_unstable();
        e.dedup();
        let mut outdeg = vec![0usize; n];
        for &(s, _) in &e {
            outdeg[s as usize] += 1;
        }
        // g[v][u] = probability of moving from u to v.
        let mut g = vec![vec![0.0f64; n]; n];
        for u in 0..n {
            for v in 0..n {
                g[v][u] = (1.0 - d) * teleport[v];
                if outdeg[u] == 0 {
                    g[v][u] += d / n as f64;
                }
            }
        }
        for &(s, t) in &e {
            g[t as usize][s as usize] += d / outdeg[s as usize] as f64;
        }
        let mut x = teleport.to_vec();
        for _ in 0..5000 {
            let y: Vec<f64> = (0..n)
                .map(|v| (0..n).map(|u| g[v][u] * x[u]).sum())
                .collect();
            let diff: f64 = y.iter().zip(&x).map(|(a, b)| (a - b).abs()).sum();
            x = y;
            if diff < 1e-15 {
                break;
            }
        }
        x
    }

    fn l1(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum()
    }

    #[test]
    fn classic_four_page_graph() {
        // 1 -> {2,3,4}, 2 -> 3, 3 -> 1, 4 -> 3 (ids shifted to 0-based).
        let r = run(4, &[(0, 1), (0, 2), (0, 3), (1, 2), (2, 0), (3, 2)], 0.85);
        let want = [0.353288, 0.137598, 0.371515, 0.137598];
        for (got, want) in r.scores.iter().zip(want) {
            assert!((got - want).abs() < 5e-7, "{got} vs {want}");
        }
        assert!((r.scores.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn triangle_abc() {
        // A -> B, A -> C, B -> C, C -> A.
        let edges = [(0, 1), (0, 2), (1, 2), (2, 0)];
        let r = run(3, &edges, 0.85);
        let want = dense(3, &edges, 0.85, &[1.0 / 3.0; 3]);
        assert!(l1(&r.scores, &want) < 1e-9);
        // Known closed form values.
        assert!((r.scores[0] - 0.387_789_5).abs() < 1e-6, "{:?}", r.scores);
        assert!((r.scores[2] - 0.397_399_7).abs() < 1e-6, "{:?}", r.scores);
    }

    #[test]
    fn dangling_pages_and_rank_sinks() {
        // 0 -> 1 -> 2 (dangling); 3 <-> 4 is a sink pair; 5 -> 3; 6 isolated.
        let edges = [(0, 1), (1, 2), (3, 4), (4, 3), (5, 3), (2, 2)];
        let r = run(7, &edges[..5], 0.85);
        let want = dense(7, &edges[..5], 0.85, &[1.0 / 7.0; 7]);
        assert!(l1(&r.scores, &want) < 1e-9, "{:?} vs {want:?}", r.scores);
        assert!((r.scores.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        // A self-loop is an ordinary edge: node 2 keeps its rank instead of dangling.
        let r2 = run(7, &edges, 0.85);
        let want2 = dense(7, &edges, 0.85, &[1.0 / 7.0; 7]);
        assert!(l1(&r2.scores, &want2) < 1e-9);
        assert!(r2.scores[2] > r.scores[2]);
    }

    #[test]
    fn random_graphs_match_dense_reference() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for trial in 0..20 {
            let n = 5 + (rnd() % 60) as usize;
            let m = (rnd() % (4 * n as u64)) as usize;
            let edges: Vec<(u32, u32)> = (0..m)
                .map(|_| ((rnd() % n as u64) as u32, (rnd() % n as u64) as u32))
                .collect();
            let d = [0.85, 0.5, 0.99][trial % 3];
            let r = run(n, &edges, d);
            let want = dense(n, &edges, d, &vec![1.0 / n as f64; n]);
            let err = l1(&r.scores, &want);
            assert!(err <= 1e-9, "trial {trial}: n={n} m={m} d={d} L1={err}");
        }
    }

    #[test]
    fn teleport_to_seeds() {
        let edges = [(0, 1), (1, 2), (2, 0), (3, 0), (2, 4)];
        let mut e = edges.to_vec();
        sort_dedup_edges(&mut e);
        let out = Csr::from_sorted_edges(5, &e);
        let t = [0.0, 0.0, 0.0, 1.0, 0.0];
        let params = PageRankParams {
            tolerance: 1e-14,
            max_iterations: 10_000,
            ..Default::default()
        };
        let r = pagerank(&out.transpose(), &out_degrees(&out), Some(&t), &params);
        let want = dense(5, &edges, 0.85, &t);
        assert!(l1(&r.scores, &want) < 1e-9, "{:?} vs {want:?}", r.scores);
    }

    #[test]
    fn stops_at_max_iterations() {
        let r = {
            let e = vec![(0u32, 1u32), (1, 0)];
            let out = Csr::from_sorted_edges(2, &e);
            let params = PageRankParams {
                max_iterations: 3,
                tolerance: 0.0,
                ..Default::default()
            };
            pagerank(&out.transpose(), &out_degrees(&out), None, &params)
        };
        assert_eq!(r.iterations, 3);
    }
}
