//! Barabási–Albert preferential attachment (Science 286, 1999), in the linear-time form of
//! Batagelj & Brandes (Phys. Rev. E 71, 2005): a list holding every edge endpoint makes a
//! uniform pick from it a pick proportional to degree.

use rand::Rng;

use super::streams::rng_for;
use crate::csr::{MAX_VERTICES, VertexId};
use crate::error::{Error, Result};
use crate::graph::Graph;
use crate::progress::Stages;

/// Parameters of a Barabási–Albert graph.
#[derive(Clone, Debug)]
pub struct BaConfig {
    /// Number of vertices.
    pub nodes: usize,
    /// Mean degree; each new vertex attaches to `m = round(avg_degree / 2)` distinct existing
    /// ones (default 10, so m = 5).
    pub avg_degree: f64,
    pub seed: u64,
    pub progress: bool,
}

impl Default for BaConfig {
    fn default() -> Self {
        BaConfig { nodes: 10_000, avg_degree: 10.0, seed: 1, progress: false }
    }
}

/// Generates a Barabási–Albert graph. It starts from a clique of `m + 1` vertices; every later
/// vertex attaches to `m` distinct earlier ones chosen with probability proportional to degree.
///
/// # Errors
/// `m < 1` or fewer than `m + 2` vertices.
pub fn barabasi_albert(config: &BaConfig) -> Result<Graph> {
    let n = config.nodes;
    let m = (config.avg_degree / 2.0).round() as usize;
    if m < 1 || n < m + 2 || n > MAX_VERTICES {
        return Err(Error::InvalidArgument(format!(
            "Barabási–Albert needs --avg-degree >= 1 and more than avg-degree/2 + 1 nodes (at most {}), got {n} nodes and avg-degree {}",
            MAX_VERTICES, config.avg_degree
        )));
    }
    let progress = Stages::new(config.progress, "Barabási–Albert");
    progress.stage("attaching vertices");
    let mut rng = rng_for(config.seed, 0);
    let mut edges: Vec<(VertexId, VertexId)> = Vec::with_capacity(n * m);
    let mut endpoints: Vec<VertexId> = Vec::with_capacity(2 * n * m);
    for u in 0..=m as VertexId {
        for v in 0..u {
            edges.push((v, u));
            endpoints.extend([u, v]);
        }
    }
    let mut chosen: Vec<VertexId> = Vec::with_capacity(m);
    for u in (m + 1) as VertexId..n as VertexId {
        chosen.clear();
        while chosen.len() < m {
            let t = endpoints[rng.random_range(0..endpoints.len())];
            if !chosen.contains(&t) {
                chosen.push(t);
            }
        }
        for &t in &chosen {
            edges.push((t, u));
            endpoints.extend([t, u]);
        }
    }
    progress.stage("building the graph");
    let graph = Graph::from_edges((0..n as u64).collect(), false, edges);
    progress.finish();
    Ok(graph)
}
