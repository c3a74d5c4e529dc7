//! LFGraph's communication analysis (Hoque's thesis, §2.4–2.5): the expected number of
//! vertex values each system sends per vertex per iteration when `N` servers place the
//! graph at random, and how evenly hash placement spreads the computation.
//!
//! With `q = 1 - 1/N`, and for a vertex `v` with out-degree `o`, in-degree `i` and `k`
//! distinct neighbours, in or out (`k = |D_out ∪ D_in|`; for an undirected graph `o = i = k`,
//! its degree):
//!
//! - **Pregel** (messages along out-edges, no combiners): `o · (N - 1)/N`, the out-edges
//!   whose target is on another server.
//! - **GraphLab** (edge cut, a ghost of `v` on every server that holds a neighbour, synced
//!   after each update): `(N - 1)(1 - q^k)`, the expected number of other servers that hold
//!   at least one of `v`'s `k` neighbours.
//! - **PowerGraph** (random vertex cut: `v` replicated on the servers of its edges): `v`
//!   spans `A = N(1 - q^k)` servers on average, counting each neighbour once as the
//!   thesis's eq. 2.5 does (a reciprocal pair u→v, v→u is one neighbour, not two edges);
//!   gather sends one partial sum per mirror to the master and scatter sends the new value
//!   back, so `2 · max(A - 1, 0)`.
//! - **LFGraph** (hash placement, fetch-once): `(N - 1)(1 - q^o)`, the expected number of
//!   other servers that hold at least one of `v`'s out-neighbours: each gets the value once.
//!
//! Each is averaged over vertices. Computation balance is measured, not modelled: the
//! in-links of each server's vertices under [`owner`], the hash the engine uses.
//! The measured `messages` of a real fetch-once run, per vertex per step in which every
//! vertex changed, are this placement's realisation of the LFGraph line (and per-edge
//! runs of the Pregel line).

use kith_graph::{Graph, VertexId};
use serde::Serialize;

use crate::part::owner;

/// The model for one server count.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Overhead {
    /// Servers `N`.
    pub servers: usize,
    /// Pregel's values per vertex per iteration.
    pub pregel: f64,
    /// GraphLab's.
    pub graphlab: f64,
    /// PowerGraph's.
    pub powergraph: f64,
    /// LFGraph's.
    pub lfgraph: f64,
    /// In-links of the busiest server over the mean.
    pub compute_max_over_mean: f64,
    /// In-links of the least busy server over the mean.
    pub compute_min_over_mean: f64,
    /// In-links on the busiest server.
    pub compute_max_in_links: u64,
}

/// The degrees the model needs, by vertex.
#[derive(Clone, Debug)]
pub struct CommModel {
    out: Vec<u32>,
    incoming: Vec<u32>,
    neighbours: Vec<u32>,
}

impl CommModel {
    /// Degrees of `graph`'s vertices.
    pub fn new(graph: &Graph) -> CommModel {
        let n = graph.num_nodes() as VertexId;
        let out: Vec<u32> = (0..n).map(|v| graph.neighbors(v).len() as u32).collect();
        if !graph.is_directed() {
            return CommModel { incoming: out.clone(), neighbours: out.clone(), out };
        }
        let incoming = (0..n).map(|v| graph.in_neighbors(v).len() as u32).collect();
        let neighbours = (0..n)
            .map(|v| {
                let common =
                    kith_graph::intersection_size(graph.neighbors(v), graph.in_neighbors(v));
                (graph.neighbors(v).len() + graph.in_neighbors(v).len() - common) as u32
            })
            .collect();
        CommModel { out, incoming, neighbours }
    }
}

/// The model for `servers` servers.
///
/// # Panics
/// When `servers` is 0.
pub fn overhead(model: &CommModel, servers: usize) -> Overhead {
    assert!(servers > 0, "at least one server");
    let n = model.out.len();
    let nf = servers as f64;
    let q = 1.0 - 1.0 / nf;
    let spread = |k: f64| (nf - 1.0) * (1.0 - q.powf(k));
    let (mut pregel, mut graphlab, mut powergraph, mut lfgraph) = (0.0, 0.0, 0.0, 0.0);
    let mut load = vec![0u64; servers];
    for v in 0..n {
        let o = f64::from(model.out[v]);
        let k = f64::from(model.neighbours[v]);
        pregel += o * (nf - 1.0) / nf;
        graphlab += spread(k);
        powergraph += 2.0 * (nf * (1.0 - q.powf(k)) - 1.0).max(0.0);
        lfgraph += spread(o);
        load[owner(v as VertexId, servers)] += u64::from(model.incoming[v]);
    }
    let per = |x: f64| x / n.max(1) as f64;
    let mean = load.iter().sum::<u64>() as f64 / nf;
    let max = load.iter().copied().max().unwrap_or(0);
    let min = load.iter().copied().min().unwrap_or(0);
    Overhead {
        servers,
        pregel: per(pregel),
        graphlab: per(graphlab),
        powergraph: per(powergraph),
        lfgraph: per(lfgraph),
        compute_max_over_mean: if mean > 0.0 { max as f64 / mean } else { 1.0 },
        compute_min_over_mean: if mean > 0.0 { min as f64 / mean } else { 1.0 },
        compute_max_in_links: max,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_star_by_hand() {
        // A directed star: 0 -> 1..=4. With 2 servers (q = 1/2): Pregel sends 4 · 1/2 = 2
        // from the centre; LFGraph 1 · (1 - 1/16); leaves send nothing.
        let g = Graph::from_edges((0..5).collect(), true, (1..5).map(|v| (0, v)).collect());
        let m = CommModel::new(&g);
        let o = overhead(&m, 2);
        assert!((o.pregel - 2.0 / 5.0).abs() < 1e-12);
        assert!((o.lfgraph - (1.0 - 1.0 / 16.0) / 5.0).abs() < 1e-12);
        // GraphLab: the centre has 4 neighbours, each leaf 1: (15/16 + 4 · 1/2) / 5.
        assert!((o.graphlab - (15.0 / 16.0 + 2.0) / 5.0).abs() < 1e-12);
        // PowerGraph: centre A = 2(1 - 1/16), leaves A = 2 · 1/2 = 1 (no mirror).
        assert!((o.powergraph - 2.0 * (2.0 * 15.0 / 16.0 - 1.0) / 5.0).abs() < 1e-12);
        // One server: nothing is remote.
        let one = overhead(&m, 1);
        assert_eq!((one.pregel, one.graphlab, one.powergraph, one.lfgraph), (0.0, 0.0, 0.0, 0.0));
        assert_eq!(one.compute_max_over_mean, 1.0);
    }

    #[test]
    fn powergraph_counts_a_reciprocal_pair_as_one_neighbour() {
        // 0 <-> 1: two edges but one neighbour each (eq. 2.5's |D_out ∪ D_in| = 1). With 2
        // servers each vertex spans A = 2(1 - 1/2) = 1 server, so PowerGraph sends nothing;
        // counting in + out edges (e = 2) would give A = 1.5 and 1 value per vertex.
        let g = Graph::from_edges((0..2).collect(), true, vec![(0, 1), (1, 0)]);
        let o = overhead(&CommModel::new(&g), 2);
        assert_eq!(o.powergraph, 0.0);
        // The same pair undirected has the same model.
        let u = Graph::from_edges((0..2).collect(), false, vec![(0, 1)]);
        assert_eq!(overhead(&CommModel::new(&u), 2).powergraph, 0.0);
    }
}
