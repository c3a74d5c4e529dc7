//! Bondhu's greedy linear arrangement (§3.3), in `O((V + E) log V)`.
//!
//! The paper places the vertex of highest weighted degree in the middle, merges it with the
//! placed set into one "merged node", and repeatedly takes the unplaced vertex with the
//! heaviest edge to the merged node, alternating its side: right, left, right, ... Ties go to
//! the higher weighted degree, then to a seeded random key. The weight of `v`'s edge to the
//! merged node is `Σ w(v, p)` over placed `p`, so instead of rebuilding merged graphs we keep
//! that sum per vertex and a max-heap of `(sum, weighted degree, key)` with lazy deletion: every
//! placement pushes one entry per edge to an unplaced vertex, and stale entries are skipped.
//! Vertices with no edge to the placed set (another component) come out of the heap with sum
//! 0, highest weighted degree first, exactly as a fresh start would pick them.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use rand::{Rng, SeedableRng};
use rayon::prelude::*;

/// A weighted undirected graph on local ids `0..n`: a whole graph, a community, or the graph
/// of communities. Every edge appears in both endpoints' lists.
#[derive(Clone, Debug, Default)]
pub(crate) struct WeightedGraph {
    offsets: Vec<usize>,
    targets: Vec<u32>,
    weights: Vec<f64>,
}

impl WeightedGraph {
    /// From adjacency lists given as `(offsets, targets, weights)`.
    pub(crate) fn new(offsets: Vec<usize>, targets: Vec<u32>, weights: Vec<f64>) -> Self {
        debug_assert_eq!(offsets.last().copied(), Some(targets.len()));
        debug_assert_eq!(targets.len(), weights.len());
        WeightedGraph { offsets, targets, weights }
    }

    /// From undirected weighted edges `(u, v, w)` on `0..n`, each listed once; parallel edges
    /// are summed and self-loops dropped.
    pub(crate) fn from_edges(n: usize, mut edges: Vec<(u32, u32, f64)>) -> Self {
        edges.retain(|e| e.0 != e.1);
        let both: Vec<(u32, u32, f64)> =
            edges.iter().flat_map(|&(u, v, w)| [(u, v, w), (v, u, w)]).collect();
        let mut both = both;
        both.par_sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        let mut offsets = vec![0usize; n + 1];
        let (mut targets, mut weights) = (Vec::new(), Vec::new());
        let mut last: Option<(u32, u32)> = None;
        for (u, v, w) in both {
            if last == Some((u, v)) {
                *weights.last_mut().expect("a previous entry") += w;
                continue;
            }
            last = Some((u, v));
            offsets[u as usize + 1] += 1;
            targets.push(v);
            weights.push(w);
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        WeightedGraph::new(offsets, targets, weights)
    }

    pub(crate) fn num_nodes(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    pub(crate) fn neighbors(&self, v: u32) -> impl Iterator<Item = (u32, f64)> + '_ {
        let (s, e) = (self.offsets[v as usize], self.offsets[v as usize + 1]);
        self.targets[s..e].iter().copied().zip(self.weights[s..e].iter().copied())
    }

    pub(crate) fn weighted_degree(&self, v: u32) -> f64 {
        let (s, e) = (self.offsets[v as usize], self.offsets[v as usize + 1]);
        self.weights[s..e].iter().sum()
    }
}

/// A heap entry: the heavier connection wins, then the heavier weighted degree, then the
/// larger random key, then the larger id (keys of 64 bits practically never tie).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Candidate {
    connection: f64,
    weighted_degree: f64,
    key: u64,
    vertex: u32,
}

impl Eq for Candidate {}

impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        self.connection
            .total_cmp(&other.connection)
            .then(self.weighted_degree.total_cmp(&other.weighted_degree))
            .then(self.key.cmp(&other.key))
            .then(self.vertex.cmp(&other.vertex))
    }
}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The seeded tie-breaking key of every vertex.
pub(crate) fn tie_keys(n: usize, seed: u64) -> Vec<u64> {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed ^ 0x6b69_7468_6772_6479);
    (0..n).map(|_| rng.random()).collect()
}

/// The order in which the greedy takes the vertices (before left/right placement).
pub(crate) fn greedy_sequence(g: &WeightedGraph, seed: u64) -> Vec<u32> {
    let n = g.num_nodes();
    let keys = tie_keys(n, seed);
    let wdeg: Vec<f64> = (0..n as u32).map(|v| g.weighted_degree(v)).collect();
    let mut connection = vec![0.0f64; n];
    let mut placed = vec![false; n];
    let candidate = |v: u32, c: f64| Candidate {
        connection: c,
        weighted_degree: wdeg[v as usize],
        key: keys[v as usize],
        vertex: v,
    };
    let mut heap: BinaryHeap<Candidate> = (0..n as u32).map(|v| candidate(v, 0.0)).collect();
    let mut sequence = Vec::with_capacity(n);
    while let Some(top) = heap.pop() {
        let v = top.vertex;
        if placed[v as usize] || top.connection != connection[v as usize] {
            continue;
        }
        placed[v as usize] = true;
        sequence.push(v);
        for (u, w) in g.neighbors(v) {
            if !placed[u as usize] {
                connection[u as usize] += w;
                heap.push(candidate(u, connection[u as usize]));
            }
        }
    }
    sequence
}

/// Lays a sequence out from the middle: the first element in the centre, then alternately to
/// its right and its left.
pub(crate) fn alternate_sides(sequence: &[u32]) -> Vec<u32> {
    let mut line = VecDeque::with_capacity(sequence.len());
    for (i, &v) in sequence.iter().enumerate() {
        if i % 2 == 1 { line.push_back(v) } else { line.push_front(v) }
    }
    line.into()
}

/// Bondhu's greedy arrangement of `g`: position order of its local ids.
pub(crate) fn greedy_arrangement(g: &WeightedGraph, seed: u64) -> Vec<u32> {
    alternate_sides(&greedy_sequence(g, seed))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// The paper's procedure taken literally: contract the placed set into one merged node,
    /// rebuilding its edge weights by summing parallel edges, and pick the heaviest neighbour
    /// of the merged node. `O(V · E)`.
    fn literal_sequence(g: &WeightedGraph, seed: u64) -> Vec<u32> {
        let n = g.num_nodes();
        let keys = tie_keys(n, seed);
        // Adjacency maps of the current (merged) graph; `n` is the merged node's id.
        let mut adj: Vec<BTreeMap<u32, f64>> = vec![BTreeMap::new(); n + 1];
        for v in 0..n as u32 {
            for (u, w) in g.neighbors(v) {
                *adj[v as usize].entry(u).or_default() += w;
            }
        }
        let wdeg = |adj: &Vec<BTreeMap<u32, f64>>, v: u32| adj[v as usize].values().sum::<f64>();
        let merged = n as u32;
        let mut alive: Vec<u32> = (0..n as u32).collect();
        let mut sequence = Vec::new();
        while !alive.is_empty() {
            let best = *alive
                .iter()
                .max_by(|&&a, &&b| {
                    let ca = adj[merged as usize].get(&a).copied().unwrap_or(0.0);
                    let cb = adj[merged as usize].get(&b).copied().unwrap_or(0.0);
                    ca.total_cmp(&cb)
                        .then(wdeg(&adj, a).total_cmp(&wdeg(&adj, b)))
                        .then(keys[a as usize].cmp(&keys[b as usize]))
                        .then(a.cmp(&b))
                })
                .expect("alive is not empty");
            // Contract `best` into the merged node.
            let edges: Vec<(u32, f64)> =
                std::mem::take(&mut adj[best as usize]).into_iter().collect();
            for (u, w) in edges {
                adj[u as usize].remove(&best);
                if u != merged {
                    *adj[merged as usize].entry(u).or_default() += w;
                    *adj[u as usize].entry(merged).or_default() += w;
                }
            }
            adj[merged as usize].remove(&best);
            alive.retain(|&v| v != best);
            sequence.push(best);
        }
        sequence
    }

    fn random_weighted(n: u32, m: usize, seed: u64, integer: bool) -> WeightedGraph {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
        let edges = (0..m)
            .map(|_| {
                let w = if integer { f64::from(rng.random_range(1..4u8)) } else { 1.0 };
                (rng.random_range(0..n), rng.random_range(0..n), w)
            })
            .collect();
        WeightedGraph::from_edges(n as usize, edges)
    }

    #[test]
    fn priority_queue_greedy_equals_the_literal_merge() {
        for seed in 0..60 {
            let n = 5 + (seed % 25) as u32;
            let g = random_weighted(n, (n as usize * 3) / 2, seed, seed % 2 == 0);
            assert_eq!(greedy_sequence(&g, seed), literal_sequence(&g, seed), "seed {seed}");
        }
    }

    #[test]
    fn alternates_right_then_left() {
        assert_eq!(alternate_sides(&[1, 2, 3, 4, 5]), vec![5, 3, 1, 2, 4]);
        assert_eq!(alternate_sides(&[]), Vec::<u32>::new());
    }

    #[test]
    fn starts_from_the_heaviest_vertex_and_covers_every_component() {
        // A star on 0 with three leaves, and a separate edge 4-5.
        let g =
            WeightedGraph::from_edges(6, vec![(0, 1, 1.0), (0, 2, 1.0), (0, 3, 1.0), (4, 5, 1.0)]);
        let seq = greedy_sequence(&g, 1);
        assert_eq!(seq[0], 0);
        assert_eq!(
            &seq[4..].iter().copied().collect::<std::collections::BTreeSet<_>>(),
            &[4, 5].into()
        );
    }
}
