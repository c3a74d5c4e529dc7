//! The in-memory graph: dense ids, the mapping back to original ids, and CSR adjacency.

use rayon::prelude::*;
use serde::Serialize;

use crate::csr::{Csr, VertexId, prefix_sum, unpack};

/// What was cleaned out of the input while building a graph.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Cleaning {
    /// Edges from a vertex to itself, which a simple graph cannot hold.
    pub self_loops_dropped: u64,
    /// Edges listed more than once. For an undirected graph `u v` and `v u` are the same
    /// edge, so a file that lists every edge in both directions merges half of its lines.
    pub duplicates_merged: u64,
}

/// An immutable simple graph with dense `u32` vertex ids.
///
/// **Invariant: `ids` is strictly ascending, so the dense id of a vertex is the rank of its
/// original id and "input order" means original-id order.** An undirected graph stores each
/// edge in both neighbour lists and has no separate in-adjacency; a directed graph stores
/// both out- and in-adjacency.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Graph {
    directed: bool,
    ids: Vec<u64>,
    out: Csr,
    inc: Option<Csr>,
    cleaning: Cleaning,
}

impl Graph {
    /// Builds a graph over `ids.len()` vertices from edges between dense ids.
    ///
    /// Self-loops are dropped and duplicates merged; both are counted in [`Graph::cleaning`].
    /// `ids` maps dense ids to original ids and must be strictly ascending.
    ///
    /// # Panics
    /// If an edge names a vertex `>= ids.len()` or `ids` is not strictly ascending; both are
    /// programming errors, since loaders and generators produce dense ids themselves.
    pub fn from_edges(ids: Vec<u64>, directed: bool, edges: Vec<(VertexId, VertexId)>) -> Graph {
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "original ids must be strictly ascending");
        let n = ids.len();
        let total = edges.len() as u64;
        let mut keys: Vec<u64> = edges
            .into_par_iter()
            .filter(|&(u, v)| u != v)
            .map(|(u, v)| {
                assert!(
                    (u as usize) < n && (v as usize) < n,
                    "edge ({u}, {v}) beyond {n} vertices"
                );
                let (a, b) = if directed || u < v { (u, v) } else { (v, u) };
                (u64::from(a) << 32) | u64::from(b) // see `unpack`
            })
            .collect();
        let self_loops_dropped = total - keys.len() as u64;
        keys.par_sort_unstable();
        let before = keys.len() as u64;
        keys.dedup();
        let cleaning =
            Cleaning { self_loops_dropped, duplicates_merged: before - keys.len() as u64 };
        if directed {
            let out = Csr::from_sorted_keys(n, &keys);
            let inc = out.transpose();
            Graph { directed, ids, out, inc: Some(inc), cleaning }
        } else {
            let out = symmetric_csr(n, &keys);
            Graph { directed, ids, out, inc: None, cleaning }
        }
    }

    /// Reassembles a graph from parts that the caller has validated (snapshot loading).
    pub(crate) fn from_parts(
        directed: bool,
        ids: Vec<u64>,
        out: Csr,
        inc: Option<Csr>,
        cleaning: Cleaning,
    ) -> Graph {
        Graph { directed, ids, out, inc, cleaning }
    }

    /// Whether edges have a direction.
    pub fn is_directed(&self) -> bool {
        self.directed
    }

    /// The number of vertices.
    pub fn num_nodes(&self) -> usize {
        self.ids.len()
    }

    /// The number of edges; an undirected edge is counted once.
    pub fn num_edges(&self) -> u64 {
        let entries = self.out.num_entries() as u64;
        if self.directed { entries } else { entries / 2 }
    }

    /// Out-neighbours of `v` (all neighbours for an undirected graph), sorted ascending.
    #[inline]
    pub fn neighbors(&self, v: VertexId) -> &[VertexId] {
        self.out.neighbors(v)
    }

    /// In-neighbours of `v` (all neighbours for an undirected graph), sorted ascending.
    #[inline]
    pub fn in_neighbors(&self, v: VertexId) -> &[VertexId] {
        self.inc.as_ref().unwrap_or(&self.out).neighbors(v)
    }

    /// The number of distinct neighbours of `v` for an undirected graph; out-degree plus
    /// in-degree for a directed one.
    #[inline]
    pub fn degree(&self, v: VertexId) -> usize {
        match &self.inc {
            Some(inc) => self.out.degree(v) + inc.degree(v),
            None => self.out.degree(v),
        }
    }

    /// The out-adjacency (all adjacency for an undirected graph).
    pub fn out_csr(&self) -> &Csr {
        &self.out
    }

    /// The in-adjacency; for an undirected graph the same as [`Graph::out_csr`].
    pub fn in_csr(&self) -> &Csr {
        self.inc.as_ref().unwrap_or(&self.out)
    }

    /// The original id of dense vertex `v`.
    #[inline]
    pub fn original_id(&self, v: VertexId) -> u64 {
        self.ids[v as usize]
    }

    /// The dense id of an original id, if the graph has that vertex.
    pub fn dense_id(&self, original: u64) -> Option<VertexId> {
        // Ids are strictly ascending: when the last is n - 1, they are exactly 0..n.
        let n = self.ids.len() as u64;
        if n > 0 && self.ids[self.ids.len() - 1] == n - 1 {
            return (original < n).then_some(original as VertexId);
        }
        self.ids.binary_search(&original).ok().map(|i| i as VertexId)
    }

    /// All original ids, indexed by dense id (strictly ascending).
    pub fn original_ids(&self) -> &[u64] {
        &self.ids
    }

    /// What was cleaned out of the input when the graph was built.
    pub fn cleaning(&self) -> Cleaning {
        self.cleaning
    }

    /// The undirected graph with an edge wherever this one has an edge in either direction.
    /// An undirected graph is returned as a clone.
    pub fn to_undirected(&self) -> Graph {
        let Some(inc) = &self.inc else { return self.clone() };
        let n = self.num_nodes();
        let lists: Vec<Vec<VertexId>> = (0..n as VertexId)
            .into_par_iter()
            .map(|v| merge_union(self.out.neighbors(v), inc.neighbors(v)))
            .collect();
        let mut offsets = vec![0u64; n + 1];
        for (v, list) in lists.iter().enumerate() {
            offsets[v + 1] = list.len() as u64;
        }
        prefix_sum(&mut offsets);
        let targets = lists.concat();
        let out = Csr { offsets, targets };
        Graph { directed: false, ids: self.ids.clone(), out, inc: None, cleaning: self.cleaning }
    }
}

/// Builds the symmetric CSR of an undirected graph from its edges `(u, v)`, `u < v`, packed by
/// [`unpack`]'s convention, sorted and unique. Two passes keep every list sorted without a sort: the first writes each vertex's
/// smaller neighbours (in ascending order, because pairs are sorted by `u`), the second its
/// larger ones (ascending, because pairs with equal `u` are sorted by `v`).
fn symmetric_csr(n: usize, keys: &[u64]) -> Csr {
    let mut offsets = vec![0u64; n + 1];
    for (u, v) in keys.iter().map(|&k| unpack(k)) {
        offsets[u as usize + 1] += 1;
        offsets[v as usize + 1] += 1;
    }
    prefix_sum(&mut offsets);
    let mut cursor: Vec<u64> = offsets[..n].to_vec();
    let mut targets = vec![0 as VertexId; keys.len() * 2];
    for (u, v) in keys.iter().map(|&k| unpack(k)) {
        let slot = &mut cursor[v as usize];
        targets[*slot as usize] = u;
        *slot += 1;
    }
    for (u, v) in keys.iter().map(|&k| unpack(k)) {
        let slot = &mut cursor[u as usize];
        targets[*slot as usize] = v;
        *slot += 1;
    }
    Csr { offsets, targets }
}

fn merge_union(a: &[VertexId], b: &[VertexId]) -> Vec<VertexId> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_neighbors(n: usize, edges: &[(u32, u32)], directed: bool) -> Vec<Vec<u32>> {
        let mut adj = vec![std::collections::BTreeSet::new(); n];
        for &(u, v) in edges {
            if u == v {
                continue;
            }
            adj[u as usize].insert(v);
            if !directed {
                adj[v as usize].insert(u);
            }
        }
        adj.into_iter().map(|s| s.into_iter().collect()).collect()
    }

    #[test]
    fn undirected_build_matches_naive_adjacency() {
        let edges = vec![(0, 1), (1, 0), (2, 2), (3, 1), (1, 3), (0, 3), (0, 1)];
        let g = Graph::from_edges((0..4).collect(), false, edges.clone());
        let want = naive_neighbors(4, &edges, false);
        for v in 0..4u32 {
            assert_eq!(g.neighbors(v), want[v as usize].as_slice());
        }
        assert_eq!(g.num_edges(), 3);
        assert_eq!(g.cleaning(), Cleaning { self_loops_dropped: 1, duplicates_merged: 3 });
        g.out_csr().validate().unwrap();
    }

    #[test]
    fn directed_build_keeps_direction_and_in_lists() {
        let edges = vec![(0, 1), (1, 0), (2, 1), (0, 1), (3, 3)];
        let g = Graph::from_edges(vec![10, 20, 30, 40], true, edges.clone());
        assert_eq!(g.num_edges(), 3);
        assert_eq!(g.neighbors(0), &[1]);
        assert_eq!(g.in_neighbors(1), &[0, 2]);
        assert_eq!(g.degree(1), 3);
        assert_eq!(g.dense_id(30), Some(2));
        assert_eq!(g.dense_id(35), None);
        let u = g.to_undirected();
        assert_eq!(u.neighbors(1), &[0, 2]);
        assert_eq!(u.num_edges(), 2);
    }
}
