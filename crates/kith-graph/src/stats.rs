//! Summary statistics of a graph: sizes, cleaning counts, degree distribution, components.

use serde::Serialize;

use crate::csr::VertexId;
use crate::graph::Graph;

/// What `kith graph stats` reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GraphStats {
    pub nodes: u64,
    /// Undirected edges are counted once.
    pub edges: u64,
    pub directed: bool,
    pub self_loops_dropped: u64,
    pub duplicates_merged: u64,
    /// Distinct neighbours for an undirected graph; in-degree plus out-degree for a directed one.
    pub degree: DegreeSummary,
    /// Directed graphs only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out_degree: Option<DegreeSummary>,
    /// Directed graphs only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_degree: Option<DegreeSummary>,
    /// Connected components; weakly connected ones for a directed graph.
    pub components: u64,
    /// Vertices in the largest component.
    pub largest_component: u64,
}

/// A degree distribution in six numbers.
///
/// `median` is the middle value (the mean of the two middle values for an even count);
/// `p90` and `p99` are nearest-rank percentiles: the smallest degree with at least that share
/// of vertices at or below it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct DegreeSummary {
    pub min: u64,
    pub median: f64,
    pub mean: f64,
    pub p90: u64,
    pub p99: u64,
    pub max: u64,
}

impl DegreeSummary {
    /// Summarises a degree sequence (in any order).
    pub fn of(mut degrees: Vec<u64>) -> DegreeSummary {
        if degrees.is_empty() {
            return DegreeSummary::default();
        }
        degrees.sort_unstable();
        let n = degrees.len();
        let rank = |p: f64| degrees[((p * n as f64).ceil() as usize).clamp(1, n) - 1];
        let median = if n % 2 == 1 {
            degrees[n / 2] as f64
        } else {
            (degrees[n / 2 - 1] + degrees[n / 2]) as f64 / 2.0
        };
        DegreeSummary {
            min: degrees[0],
            median,
            mean: degrees.iter().sum::<u64>() as f64 / n as f64,
            p90: rank(0.90),
            p99: rank(0.99),
            max: degrees[n - 1],
        }
    }
}

/// Computes [`GraphStats`] in `O(V log V + E)`.
pub fn stats(graph: &Graph) -> GraphStats {
    let n = graph.num_nodes() as VertexId;
    let degree = DegreeSummary::of((0..n).map(|v| graph.degree(v) as u64).collect());
    let (out_degree, in_degree) = if graph.is_directed() {
        let out = DegreeSummary::of((0..n).map(|v| graph.neighbors(v).len() as u64).collect());
        let inc = DegreeSummary::of((0..n).map(|v| graph.in_neighbors(v).len() as u64).collect());
        (Some(out), Some(inc))
    } else {
        (None, None)
    };
    let sizes = component_sizes(graph);
    let cleaning = graph.cleaning();
    GraphStats {
        nodes: graph.num_nodes() as u64,
        edges: graph.num_edges(),
        directed: graph.is_directed(),
        self_loops_dropped: cleaning.self_loops_dropped,
        duplicates_merged: cleaning.duplicates_merged,
        degree,
        out_degree,
        in_degree,
        components: sizes.len() as u64,
        largest_component: sizes.iter().copied().max().unwrap_or(0),
    }
}

/// The size of every (weakly) connected component, in no particular order.
pub(crate) fn component_sizes(graph: &Graph) -> Vec<u64> {
    let labels = component_labels(graph);
    let mut sizes = vec![0u64; labels.len()];
    for &root in &labels {
        sizes[root as usize] += 1;
    }
    sizes.retain(|&s| s > 0);
    sizes
}

/// For every vertex, a representative of its (weakly) connected component: union-find with
/// union by size and path halving over the out-adjacency, which holds every edge once in some
/// direction.
pub(crate) fn component_labels(graph: &Graph) -> Vec<VertexId> {
    let n = graph.num_nodes();
    let mut parent: Vec<VertexId> = (0..n as VertexId).collect();
    let mut size = vec![1u32; n];
    fn find(parent: &mut [VertexId], mut v: VertexId) -> VertexId {
        while parent[v as usize] != v {
            let grand = parent[parent[v as usize] as usize];
            parent[v as usize] = grand;
            v = grand;
        }
        v
    }
    for u in 0..n as VertexId {
        for &v in graph.neighbors(u) {
            let (a, b) = (find(&mut parent, u), find(&mut parent, v));
            if a != b {
                let (big, small) =
                    if size[a as usize] >= size[b as usize] { (a, b) } else { (b, a) };
                parent[small as usize] = big;
                size[big as usize] += size[small as usize];
            }
        }
    }
    (0..n as VertexId).map(|v| find(&mut parent, v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_matches_hand_computation() {
        let s = DegreeSummary::of(vec![5, 1, 3, 2, 4, 10, 1, 1, 2, 2]);
        assert_eq!((s.min, s.max), (1, 10));
        assert_eq!(s.median, 2.0);
        assert!((s.mean - 3.1).abs() < 1e-12);
        assert_eq!(s.p90, 5);
        assert_eq!(s.p99, 10);
    }

    #[test]
    fn components_of_a_forest() {
        // 0-1-2, 3-4, 5 alone (via a self-loop that is dropped)
        let g = Graph::from_edges((0..6).collect(), true, vec![(1, 0), (2, 1), (3, 4), (5, 5)]);
        let s = stats(&g);
        assert_eq!((s.components, s.largest_component), (3, 3));
        assert_eq!(s.edges, 3);
        assert_eq!(s.self_loops_dropped, 1);
        assert_eq!(s.out_degree.unwrap().max, 1);
    }
}
