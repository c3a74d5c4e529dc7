//! Edge-weight models of Bondhu §3.5: how strongly two friends should be placed together.
//!
//! - `uniform`: every friendship weighs 1.
//! - `preferential`: the mean weighted degree of the two endpoints, `(wd(i) + wd(j)) / 2`,
//!   with weighted degrees taken under uniform weights (so plain degrees): popular users pull
//!   their friends closer.
//! - `overlap`: common friends plus one, `|N(i) ∩ N(j)| + 1`: friends in the same circle stick
//!   together. Computed by merging the two sorted neighbour lists, once per edge, so the work is
//!   `Σ_(i,j) (d_i + d_j)` with no hashing.

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
/// `O(E)` for uniform and preferential; `O(Σ_(i,j) (d_i + d_j))` for overlap, on all cores.
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
    let csr = graph.out_csr();
    let offsets = csr.offsets();
    let targets = csr.targets();
    let source_of = |e: usize| (offsets.partition_point(|&o| o as usize <= e) - 1) as VertexId;
    Ok(match model {
        WeightModel::Uniform => vec![1.0; targets.len()],
        WeightModel::Preferential => (0..targets.len())
            .into_par_iter()
            .map(|e| (graph.degree(source_of(e)) + graph.degree(targets[e])) as f64 / 2.0)
            .collect(),
        WeightModel::Overlap => {
            let mut weights = vec![0.0; targets.len()];
            weights.par_iter_mut().enumerate().for_each(|(e, w)| {
                let (u, v) = (source_of(e), targets[e]);
                if u < v {
                    *w = (intersection_size(graph.neighbors(u), graph.neighbors(v)) + 1) as f64;
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

/// The number of common elements of two strictly ascending lists, by merging.
pub fn intersection_size(a: &[VertexId], b: &[VertexId]) -> usize {
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
    fn directed_graphs_are_refused() {
        let g = Graph::from_edges(vec![0, 1], true, vec![(0, 1)]);
        assert!(edge_weights(&g, WeightModel::Uniform).is_err());
    }
}
