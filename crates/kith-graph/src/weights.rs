//! Edge-weight models of Bondhu §3.5: how strongly two friends should be placed together.
//!
//! - `uniform`: every friendship weighs 1.
//! - `preferential`: the mean weighted degree of the two endpoints, `(wd(i) + wd(j)) / 2`,
//!   with weighted degrees taken under uniform weights (so plain degrees): popular users pull
//!   their friends closer.
//! - `overlap`: common friends plus one, `|N(i) ∩ N(j)| + 1`: friends in the same circle stick
//!   together. Computed once per edge by intersecting the two sorted neighbour lists (merging,
//!   or binary search into a much longer list), with no hashing.

use std::fmt;
use std::str::FromStr;

use rayon::prelude::*;

use crate::{Error, Graph, Result, VertexId};

/// An edge-weight model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum WeightModel {
    /// Weight 1 for every edge (the default).
    #[default]
    Uniform,
    /// `(degree(i) + degree(j)) / 2`.
    Preferential,
    /// `common friends + 1`.
    Overlap,
}

impl WeightModel {
    /// Every model, in the order the paper lists them.
    pub const ALL: [WeightModel; 3] =
        [WeightModel::Uniform, WeightModel::Preferential, WeightModel::Overlap];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            WeightModel::Uniform => "uniform",
            WeightModel::Preferential => "preferential",
            WeightModel::Overlap => "overlap",
        }
    }
}

impl fmt::Display for WeightModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for WeightModel {
    type Err = Error;

    fn from_str(s: &str) -> Result<WeightModel> {
        WeightModel::ALL.into_iter().find(|m| m.name() == s).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "unknown weight model {s:?}; expected uniform, preferential or overlap"
            ))
        })
    }
}

/// The weight of every adjacency entry of an undirected graph, aligned with
/// `graph.out_csr().targets()`; both entries of an edge get the same weight.
///
/// # Errors
/// A directed graph: the models are defined on friendships. Use [`Graph::to_undirected`].
///
/// # Complexity
/// `O(E)` for uniform and preferential; for overlap, `O(Σ_(i,j) min(d_i + d_j, min(d_i, d_j)
/// log max(d_i, d_j)))`, on all cores.
///
/// # Example
/// ```
/// use kith_graph::{Graph, WeightModel, edge_weights};
/// // A triangle 0-1-2 with a pendant vertex 3 on 2.
/// let g = Graph::from_edges((0..4).collect(), false, vec![(0, 1), (1, 2), (2, 0), (2, 3)]);
/// let w = edge_weights(&g, WeightModel::Overlap)?;
/// assert_eq!(w[0], 2.0); // 0-1 share friend 2
/// # Ok::<(), kith_graph::Error>(())
/// ```
pub fn edge_weights(graph: &Graph, model: WeightModel) -> Result<Vec<f64>> {
    if graph.is_directed() {
        return Err(Error::InvalidArgument(
            "edge-weight models are defined on undirected graphs; symmetrise the graph first"
                .into(),
        ));
    }
    let n = graph.num_nodes() as VertexId;
    // Rayon's collect keeps the order of the vertices, so entries line up with the CSR.
    let per_entry = |weight: &(dyn Fn(VertexId, VertexId) -> f64 + Sync)| -> Vec<f64> {
        (0..n)
            .into_par_iter()
            .flat_map_iter(|u| graph.neighbors(u).iter().map(move |&v| weight(u, v)))
            .collect()
    };
    Ok(match model {
        WeightModel::Uniform => vec![1.0; graph.out_csr().num_entries()],
        WeightModel::Preferential => {
            per_entry(&|u, v| (graph.degree(u) + graph.degree(v)) as f64 / 2.0)
        }
        WeightModel::Overlap => {
            let mut weights = per_entry(&|u, v| {
                if u < v {
                    (intersection_size(graph.neighbors(u), graph.neighbors(v)) + 1) as f64
                } else {
                    0.0 // Filled from the twin entry below.
                }
            });
            mirror_upper_entries(graph, &mut weights);
            weights
        }
    })
}

/// Copies the weight of every entry `u -> v` with `u < v` to its twin `v -> u`. Each list
/// starts with its smaller neighbours in ascending order, and sources are visited ascending,
/// so a cursor per vertex finds every twin in O(1).
fn mirror_upper_entries(graph: &Graph, weights: &mut [f64]) {
    let csr = graph.out_csr();
    let mut cursor: Vec<u64> = csr.offsets()[..graph.num_nodes()].to_vec();
    for u in 0..graph.num_nodes() as VertexId {
        let (start, end) = csr.range(u);
        for e in start..end {
            let v = csr.targets()[e];
            if u < v {
                let twin = cursor[v as usize] as usize;
                debug_assert_eq!(csr.targets()[twin], u);
                weights[twin] = weights[e];
                cursor[v as usize] += 1;
            }
        }
    }
}

/// The number of common elements of two strictly ascending lists.
///
/// Lists of similar length are merged (`O(a + b)`). When one is much longer, as for an edge to
/// a hub, each element of the shorter is binary-searched in the rest of the longer
/// (`O(a log b)`), so hubs do not make the work quadratic in their degree.
pub fn intersection_size(a: &[VertexId], b: &[VertexId]) -> usize {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let log_long = (usize::BITS - long.len().leading_zeros()) as usize;
    if short.len() * log_long < long.len() {
        let (mut rest, mut common) = (long, 0);
        for x in short {
            match rest.binary_search(x) {
                Ok(i) => {
                    common += 1;
                    rest = &rest[i + 1..];
                }
                Err(i) => rest = &rest[i..],
            }
        }
        return common;
    }
    let (mut i, mut j, mut common) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    common
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn pseudo_random_graph(n: u32, m: usize, seed: u64) -> Graph {
        let mut x = seed;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % u64::from(n)) as u32
        };
        let edges = (0..m).map(|_| (next(), next())).collect();
        Graph::from_edges((0..u64::from(n)).collect(), false, edges)
    }

    #[test]
    fn every_model_matches_its_definition() {
        let g = pseudo_random_graph(60, 400, 7);
        let sets: Vec<HashSet<u32>> =
            (0..60).map(|v| g.neighbors(v).iter().copied().collect()).collect();
        for model in WeightModel::ALL {
            let w = edge_weights(&g, model).unwrap();
            for u in 0..60u32 {
                let (start, _) = g.out_csr().range(u);
                for (k, &v) in g.neighbors(u).iter().enumerate() {
                    let want = match model {
                        WeightModel::Uniform => 1.0,
                        WeightModel::Preferential => (g.degree(u) + g.degree(v)) as f64 / 2.0,
                        WeightModel::Overlap => {
                            (sets[u as usize].intersection(&sets[v as usize]).count() + 1) as f64
                        }
                    };
                    assert_eq!(w[start + k], want, "{model} weight of {u}-{v}");
                }
            }
        }
    }

    #[test]
    fn intersection_agrees_for_similar_and_skewed_lengths() {
        let long: Vec<u32> = (0..10_000).map(|x| x * 3).collect();
        for short in [
            vec![],
            vec![0, 1, 2, 3, 29_997, 29_998],
            (0..5_000).map(|x| x * 2).collect::<Vec<_>>(),
        ] {
            let naive = short.iter().filter(|x| long.contains(x)).count();
            assert_eq!(intersection_size(&short, &long), naive);
            assert_eq!(intersection_size(&long, &short), naive);
        }
    }

    #[test]
    fn directed_graphs_are_refused() {
        let g = Graph::from_edges(vec![0, 1], true, vec![(0, 1)]);
        assert!(edge_weights(&g, WeightModel::Uniform).is_err());
    }
}
