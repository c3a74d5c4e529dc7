//! Edge-weight models of Bondhu §3.5: how strongly two friends should be placed together.
//!
//! - `uniform`: every friendship weighs 1.
//! - `preferential`: the mean weighted degree of the two endpoints, `(wd(i) + wd(j)) / 2`,
//!   with weighted degrees taken under uniform weights (so plain degrees): popular users pull
//!   their friends closer.
//! - `overlap`: common friends plus one, `|N(i) ∩ N(j)| + 1`: friends in the same circle stick
//!   together. Computed for all edges at once by sorted-list intersection over degree-ordered
//!   forward lists (each triangle found once and credited to its three edges), with no hashing.

use std::fmt;
use std::str::FromStr;

use rayon::prelude::*;

use std::sync::atomic::{AtomicU32, Ordering};

use crate::csr::{Csr, VertexId, prefix_sum};
use crate::error::{Error, Result};
use crate::graph::Graph;

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
/// `O(E)` for uniform and preferential; `O(E^1.5)` at worst for overlap (the forward triangle
/// algorithm), far less on power-law graphs; on all cores.
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
            let common = common_neighbours(graph);
            per_entry(&|u, v| f64::from(common.get(u, v)) + 1.0)
        }
    })
}

/// The number of common neighbours of the endpoints of every edge: the number of triangles
/// through it.
///
/// Found by the forward algorithm (Schank & Wagner, 2005): order vertices by degree, keep for
/// each vertex only its neighbours later in that order, and intersect the two short lists of
/// every edge. Each triangle is found once, at its first vertex, and credited to its three
/// edges. Forward lists hold at most `√(2E)` vertices, so hubs cost little, where intersecting
/// full neighbour lists would cost each hub edge the hub's whole degree.
struct CommonNeighbours {
    forward: Csr,
    counts: Vec<u32>,
    degree: Vec<u32>,
}

/// Whether `b` comes after `a` in the degree order (ties broken by id).
fn later(degree: &[u32], a: VertexId, b: VertexId) -> bool {
    (degree[a as usize], a) < (degree[b as usize], b)
}

impl CommonNeighbours {
    /// The common neighbours of the endpoints of edge `u`–`v`.
    fn get(&self, u: VertexId, v: VertexId) -> u32 {
        let (first, second) = if later(&self.degree, u, v) { (u, v) } else { (v, u) };
        let (start, _) = self.forward.range(first);
        let slot =
            self.forward.neighbors(first).binary_search(&second).expect("an edge of the graph");
        self.counts[start + slot]
    }
}

fn common_neighbours(graph: &Graph) -> CommonNeighbours {
    let n = graph.num_nodes() as VertexId;
    let degree: Vec<u32> = (0..n).map(|v| graph.degree(v) as u32).collect();
    let later = |a: VertexId, b: VertexId| later(&degree, a, b);
    let lengths: Vec<u64> = (0..n)
        .into_par_iter()
        .map(|u| graph.neighbors(u).iter().filter(|&&v| later(u, v)).count() as u64)
        .collect();
    let mut offsets = vec![0u64; lengths.len() + 1];
    offsets[1..].copy_from_slice(&lengths);
    prefix_sum(&mut offsets);
    let targets: Vec<VertexId> = (0..n)
        .into_par_iter()
        .flat_map_iter(|u| graph.neighbors(u).iter().copied().filter(move |&v| later(u, v)))
        .collect();
    let forward = Csr { offsets, targets };

    let counts: Vec<AtomicU32> = (0..forward.num_entries()).map(|_| AtomicU32::new(0)).collect();
    let bump = |slot: usize, by: u32| {
        counts[slot].fetch_add(by, Ordering::Relaxed);
    };
    (0..n).into_par_iter().for_each(|u| {
        let (us, _) = forward.range(u);
        let nu = forward.neighbors(u);
        for (i, &v) in nu.iter().enumerate() {
            let (vs, _) = forward.range(v);
            let nv = forward.neighbors(v);
            let mut found = 0;
            for_each_common(nu, nv, |a, b| {
                // Triangle u, v, w = nu[a]: credit u–w and v–w here, u–v below.
                bump(us + a, 1);
                bump(vs + b, 1);
                found += 1;
            });
            bump(us + i, found);
        }
    });
    let counts = counts.into_iter().map(AtomicU32::into_inner).collect();
    CommonNeighbours { forward, counts, degree }
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
    let mut common = 0;
    for_each_common(a, b, |_, _| common += 1);
    common
}

/// Merges two strictly ascending lists, calling `on_match(i, j)` for every `a[i] == b[j]`.
pub fn for_each_common(a: &[VertexId], b: &[VertexId], mut on_match: impl FnMut(usize, usize)) {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                on_match(i, j);
                i += 1;
                j += 1;
            }
        }
    }
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
    fn overlap_on_a_hub_heavy_graph_matches_pairwise_intersection() {
        let g = crate::generate::barabasi_albert(&crate::generate::BaConfig {
            nodes: 3_000,
            avg_degree: 12.0,
            seed: 5,
            progress: false,
        })
        .unwrap();
        let w = edge_weights(&g, WeightModel::Overlap).unwrap();
        for u in 0..3_000u32 {
            let (start, _) = g.out_csr().range(u);
            for (k, &v) in g.neighbors(u).iter().enumerate() {
                let want = intersection_size(g.neighbors(u), g.neighbors(v)) + 1;
                assert_eq!(w[start + k], want as f64);
            }
        }
    }

    #[test]
    fn directed_graphs_are_refused() {
        let g = Graph::from_edges(vec![0, 1], true, vec![(0, 1)]);
        assert!(edge_weights(&g, WeightModel::Uniform).is_err());
    }
}
