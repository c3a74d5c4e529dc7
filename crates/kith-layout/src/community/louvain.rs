//! `modcom`'s communities: the Louvain method (Blondel et al., 2008) for weighted modularity.
//!
//! Phase 1 visits the vertices in a seeded random order and moves each to the neighbouring
//! community with the largest modularity gain `w(i→c) − tot(c)·k(i) / 2m` (staying put unless
//! another community gains strictly more), sweeping until a sweep moves nothing or raises
//! modularity by less than 1e-7. Phase 2 contracts every community into one vertex (internal
//! weight kept as a self-loop) and repeats phase 1 on that graph. Each contraction is a level;
//! the levels stop when phase 1 moves nothing. Level `l`'s partition maps every original
//! vertex through the first `l + 1` contractions.

use kith_graph::Graph;
use rand::SeedableRng;
use rand::seq::SliceRandom;

use super::partition::Partition;

/// All levels of a Louvain run, finest first.
#[derive(Clone, Debug)]
pub(crate) struct Louvain {
    /// The partition of the original vertices at each level.
    pub levels: Vec<Partition>,
    /// The modularity at each level.
    pub modularity: Vec<f64>,
}

/// A weighted graph with self-loops, as Louvain's contractions produce.
struct Level {
    offsets: Vec<usize>,
    targets: Vec<u32>,
    weights: Vec<f64>,
    /// The weight of each vertex's self-loop (internal weight of a contracted community, each
    /// edge once).
    self_loop: Vec<f64>,
}

impl Level {
    fn num_nodes(&self) -> usize {
        self.self_loop.len()
    }

    /// Weighted degree: neighbours plus twice the self-loop.
    fn degree(&self, v: usize) -> f64 {
        self.weights[self.offsets[v]..self.offsets[v + 1]].iter().sum::<f64>()
            + 2.0 * self.self_loop[v]
    }
}

/// Runs Louvain on `graph` under `weights` (aligned with the CSR entries).
///
/// # Complexity
/// Each sweep is `O(V + E)`; sweeps per level are few on social graphs, and levels shrink fast.
pub(crate) fn louvain(graph: &Graph, weights: &[f64], seed: u64) -> Louvain {
    let mut level = Level {
        offsets: graph.out_csr().offsets().iter().map(|&o| o as usize).collect(),
        targets: graph.out_csr().targets().to_vec(),
        weights: weights.to_vec(),
        self_loop: vec![0.0; graph.num_nodes()],
    };
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed ^ 0x6c6f_7576_6169_6e00);
    // The current community of every original vertex, as a vertex of `level`.
    let mut original: Vec<u32> = (0..graph.num_nodes() as u32).collect();
    let mut result = Louvain { levels: Vec::new(), modularity: Vec::new() };
    loop {
        let (community, count, moved, q) = one_level(&level, &mut rng);
        if !moved && !result.levels.is_empty() {
            break;
        }
        for c in original.iter_mut() {
            *c = community[*c as usize];
        }
        result.levels.push(Partition::from_membership(&original));
        result.modularity.push(q);
        if !moved || count == level.num_nodes() {
            break;
        }
        level = contract(&level, &community, count);
    }
    result
}

/// Phase 1 on one level: the community of each vertex (dense `0..count`), whether any vertex
/// moved, and the resulting modularity.
fn one_level(g: &Level, rng: &mut rand_pcg::Pcg64Mcg) -> (Vec<u32>, usize, bool, f64) {
    let n = g.num_nodes();
    let degree: Vec<f64> = (0..n).map(|v| g.degree(v)).collect();
    let two_m: f64 = degree.iter().sum();
    let mut community: Vec<u32> = (0..n as u32).collect();
    if two_m == 0.0 {
        return (community, n, false, 0.0);
    }
    let mut tot = degree.clone();
    // Weight of the current vertex's edges into each community; `touched` lists the nonzero.
    let mut to = vec![0.0f64; n];
    let mut touched: Vec<u32> = Vec::new();
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.shuffle(rng);
    let mut moved_any = false;
    let mut q = modularity_of(g, &community, &tot, two_m);
    loop {
        let mut moves = 0usize;
        for &i in &order {
            let i = i as usize;
            let own = community[i];
            for (&j, &w) in g.targets[g.offsets[i]..g.offsets[i + 1]]
                .iter()
                .zip(&g.weights[g.offsets[i]..g.offsets[i + 1]])
            {
                let c = community[j as usize];
                if to[c as usize] == 0.0 {
                    touched.push(c);
                }
                to[c as usize] += w;
            }
            let k = degree[i];
            tot[own as usize] -= k;
            let mut best = own;
            let mut best_gain = to[own as usize] - tot[own as usize] * k / two_m;
            for &c in &touched {
                let gain = to[c as usize] - tot[c as usize] * k / two_m;
                if gain > best_gain {
                    best = c;
                    best_gain = gain;
                }
            }
            tot[best as usize] += k;
            if best != own {
                community[i] = best;
                moves += 1;
            }
            for &c in &touched {
                to[c as usize] = 0.0;
            }
            touched.clear();
        }
        if moves == 0 {
            break;
        }
        moved_any = true;
        let next = modularity_of(g, &community, &tot, two_m);
        let gain = next - q;
        q = next;
        if gain < 1e-7 {
            break;
        }
    }
    // Renumber densely.
    let mut relabel = vec![u32::MAX; n];
    let mut count = 0u32;
    for c in community.iter_mut() {
        if relabel[*c as usize] == u32::MAX {
            relabel[*c as usize] = count;
            count += 1;
        }
        *c = relabel[*c as usize];
    }
    (community, count as usize, moved_any, q)
}

fn modularity_of(g: &Level, community: &[u32], tot: &[f64], two_m: f64) -> f64 {
    let mut inside = 0.0;
    for i in 0..g.num_nodes() {
        inside += 2.0 * g.self_loop[i];
        let ci = community[i];
        for (&j, &w) in g.targets[g.offsets[i]..g.offsets[i + 1]]
            .iter()
            .zip(&g.weights[g.offsets[i]..g.offsets[i + 1]])
        {
            if community[j as usize] == ci {
                inside += w;
            }
        }
    }
    inside / two_m - tot.iter().map(|t| (t / two_m) * (t / two_m)).sum::<f64>()
}

/// Phase 2: one vertex per community, edge weights summed, internal weight as a self-loop.
fn contract(g: &Level, community: &[u32], count: usize) -> Level {
    // Group vertices by community (counting sort), then sum each community's edges into a
    // dense scratch row.
    let mut start = vec![0usize; count + 1];
    for &c in community {
        start[c as usize + 1] += 1;
    }
    for c in 0..count {
        start[c + 1] += start[c];
    }
    let mut fill = start.clone();
    let mut members = vec![0u32; community.len()];
    for (v, &c) in community.iter().enumerate() {
        members[fill[c as usize]] = v as u32;
        fill[c as usize] += 1;
    }
    let mut row = vec![0.0f64; count];
    let mut touched: Vec<u32> = Vec::new();
    let mut offsets = Vec::with_capacity(count + 1);
    offsets.push(0);
    let (mut targets, mut weights) = (Vec::new(), Vec::new());
    let mut self_loop = vec![0.0; count];
    for c in 0..count {
        for &v in &members[start[c]..start[c + 1]] {
            let v = v as usize;
            self_loop[c] += g.self_loop[v];
            for (&j, &w) in g.targets[g.offsets[v]..g.offsets[v + 1]]
                .iter()
                .zip(&g.weights[g.offsets[v]..g.offsets[v + 1]])
            {
                let d = community[j as usize];
                if d as usize == c {
                    // Both directions of an internal edge pass here: half each.
                    self_loop[c] += w / 2.0;
                } else {
                    if row[d as usize] == 0.0 {
                        touched.push(d);
                    }
                    row[d as usize] += w;
                }
            }
        }
        touched.sort_unstable();
        for &d in &touched {
            targets.push(d);
            weights.push(row[d as usize]);
            row[d as usize] = 0.0;
        }
        touched.clear();
        offsets.push(targets.len());
    }
    Level { offsets, targets, weights, self_loop }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::community::partition::modularity;

    /// `k` cliques of size `s` in a ring, neighbouring cliques joined by one edge.
    fn ring_of_cliques(k: u32, s: u32) -> Graph {
        let mut edges = Vec::new();
        for c in 0..k {
            for a in 0..s {
                for b in a + 1..s {
                    edges.push((c * s + a, c * s + b));
                }
            }
            edges.push((c * s, ((c + 1) % k) * s + 1));
        }
        Graph::from_edges((0..u64::from(k * s)).collect(), false, edges)
    }

    #[test]
    fn finds_the_cliques_of_a_ring() {
        let g = ring_of_cliques(12, 6);
        let w = vec![1.0; g.out_csr().num_entries()];
        let result = louvain(&g, &w, 3);
        let first = &result.levels[0];
        // Level 0 may already merge pairs of cliques; every clique stays whole at every level.
        for level in &result.levels {
            let m = level.membership();
            for c in 0..12 {
                assert!((0..6).all(|a| m[(c * 6 + a) as usize] == m[(c * 6) as usize]));
            }
        }
        assert!(first.count() <= 12);
        for (p, q) in result.levels.iter().zip(&result.modularity) {
            assert!((modularity(&g, &w, p) - q).abs() < 1e-9);
        }
        // Modularity never drops from level to level.
        assert!(result.modularity.windows(2).all(|w| w[1] >= w[0] - 1e-12));
        assert!(*result.modularity.last().unwrap() > 0.8);
    }

    #[test]
    fn graph_without_edges_has_one_level_of_singletons() {
        let g = Graph::from_edges((0..4).collect(), false, vec![]);
        let result = louvain(&g, &[], 1);
        assert_eq!(result.levels.len(), 1);
        assert_eq!(result.levels[0].count(), 4);
        assert_eq!(result.modularity[0], 0.0);
    }
}
