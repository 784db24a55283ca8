//! HITS (Kleinberg): authority `a[v] = sum_{u -> v} h[u]`, hub `h[u] = sum_{u -> v} a[v]`,
//! each vector normalized to sum 1 (L1) after every step, starting from uniform hubs.
//! Stops when the summed L1 change of both vectors drops below the tolerance or
//! after `max_iterations`. Pages without links score 0 on the side they lack.

use rayon::prelude::*;

use super::csr::Csr;

const CHUNK: usize = 8192;

/// HITS scores.
#[derive(Debug, Clone)]
pub struct HitsResult {
    /// Hub score per node (sums to 1 unless the graph has no edges).
    pub hub: Vec<f64>,
    /// Authority score per node (sums to 1 unless the graph has no edges).
    pub authority: Vec<f64>,
    /// Iterations run.
    pub iterations: usize,
    /// Summed L1 change of the last iteration.
    pub delta: f64,
}

/// Runs HITS on the graph given by its out-link and in-link CSRs.
pub fn hits(out: &Csr, inl: &Csr, tolerance: f64, max_iterations: usize) -> HitsResult {
    let n = out.nodes();
    let mut hub = vec![if n > 0 { 1.0 / n as f64 } else { 0.0 }; n];
    let mut auth = vec![0.0; n];
    let mut new = vec![0.0; n];
    let mut iterations = 0;
    let mut delta = f64::INFINITY;
    while iterations < max_iterations && n > 0 {
        let da = propagate(inl, &hub, &mut new, &mut auth);
        let dh = propagate(out, &auth, &mut new, &mut hub);
        iterations += 1;
        delta = da + dh;
        if delta < tolerance {
            break;
        }
    }
    HitsResult {
        hub,
        authority: auth,
        iterations,
        delta,
    }
}

/// `cur[v] <- normalize(sum_{u in adj(v)} x[u])`, using `scratch`; returns the L1 change.
fn propagate(adj: &Csr, x: &[f64], scratch: &mut [f64], cur: &mut [f64]) -> f64 {
    let (offsets, nb) = adj.parts();
    let total: f64 = scratch
        .par_chunks_mut(CHUNK)
        .enumerate()
        .map(|(ci, o)| {
            let mut t = 0.0;
            for (i, slot) in o.iter_mut().enumerate() {
                let v = ci * CHUNK + i;
                let mut s = 0.0;
                for &u in &nb[offsets[v] as usize..offsets[v + 1] as usize] {
                    s += x[u as usize];
                }
                *slot = s;
                t += s;
            }
            t
        })
        .sum();
    let scale = if total > 0.0 { 1.0 / total } else { 0.0 };
    cur.par_chunks_mut(CHUNK)
        .zip(scratch.par_chunks(CHUNK))
        .map(|(c, s)| {
            let mut d = 0.0;
            for i in 0..c.len() {
                let v = s[i] * scale;
                d += (v - c[i]).abs();
                c[i] = v;
            }
            d
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hub_and_authority_of_a_star() {
        // 0 and 1 both link to 2 and 3; 3 links to 2.
        let e = vec![(0, 2), (0, 3), (1, 2), (1, 3), (3, 2)];
        let out = Csr::from_sorted_edges(4, &e);
        let r = hits(&out, &out.transpose(), 1e-12, 1000);
        assert!((r.hub.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!((r.authority.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!(r.authority[2] > r.authority[3] && r.authority[3] > 0.0);
        assert_eq!(r.authority[0], 0.0);
        assert!(r.hub[0] > r.hub[3] && r.hub[0] == r.hub[1]);
        assert_eq!(r.hub[2], 0.0);
        // Dense check: authority is the principal eigenvector of A^T A.
        let mut a = [0.25f64; 4];
        for _ in 0..2000 {
            let mut h = [0.0; 4];
            for &(s, t) in &e {
                h[s as usize] += a[t as usize];
            }
            let mut na = [0.0; 4];
            for &(s, t) in &e {
                na[t as usize] += h[s as usize];
            }
            let sum: f64 = na.iter().sum();
            a = na.map(|x| x / sum);
        }
        for (want, got) in a.iter().zip(&r.authority) {
            assert!((want - got).abs() < 1e-9);
        }
    }
}
