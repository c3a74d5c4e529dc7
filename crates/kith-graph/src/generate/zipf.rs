//! Directed graphs whose in-degrees follow a Zipf law, built as PowerGraph's evaluation built
//! its synthetic graphs (Gonzalez et al., OSDI 2012, §5) and the LFGraph thesis its computation
//! imbalance figure: every vertex draws its in-degree from Zipf(α) on `[1, n − 1]`, and the
//! sources of those in-links are dealt out in turn from a shuffled order of the vertices, so
//! that every out-degree is the mean, give or take one.

use rand::Rng;
use rand::seq::SliceRandom;
use rand_distr::{Distribution, Zipf};

use super::streams::rng_for;
use crate::csr::{MAX_VERTICES, VertexId};
use crate::error::{Error, Result};
use crate::graph::Graph;
use crate::progress::Stages;

/// Parameters of a Zipf in-degree graph.
#[derive(Clone, Debug)]
pub struct ZipfConfig {
    /// Number of vertices (at least 2).
    pub nodes: usize,
    /// The in-degree exponent α (> 1): `P(in-degree = d) ∝ d^-α`.
    pub alpha: f64,
    pub seed: u64,
    pub progress: bool,
}

impl Default for ZipfConfig {
    fn default() -> Self {
        ZipfConfig { nodes: 10_000, alpha: 2.0, seed: 1, progress: false }
    }
}

/// Generates the directed graph described in the module documentation.
///
/// # Errors
/// Fewer than 2 vertices, too many, or `α` not above 1.
pub fn zipf_in_degree(config: &ZipfConfig) -> Result<Graph> {
    let n = config.nodes;
    let alpha = config.alpha;
    if !((2..=MAX_VERTICES).contains(&n) && alpha > 1.0 && alpha <= 10.0) {
        return Err(Error::InvalidArgument(format!(
            "a Zipf in-degree graph needs 2 to {MAX_VERTICES} nodes and an exponent α in (1, 10], \
             got {n} nodes and α = {}",
            config.alpha
        )));
    }
    let progress = Stages::new(config.progress, "Zipf in-degrees");
    progress.stage("drawing in-degrees");
    let zipf = Zipf::new((n - 1) as f64, config.alpha)
        .map_err(|e| Error::InvalidArgument(format!("Zipf(α = {}): {e}", config.alpha)))?;
    let mut rng = rng_for(config.seed, 0);
    let in_degree: Vec<usize> = (0..n).map(|_| zipf.sample(&mut rng) as usize).collect();
    let total: usize = in_degree.iter().sum();
    progress.stage("dealing sources");
    let mut order: Vec<VertexId> = (0..n as VertexId).collect();
    order.shuffle(&mut rng);
    let mut edges: Vec<(VertexId, VertexId)> = Vec::with_capacity(total);
    // The next source in the shuffled order. A target takes at most n − 1 consecutive
    // sources after skipping itself, so its sources are distinct.
    let mut next = rng.random_range(0..n);
    for (v, &d) in in_degree.iter().enumerate() {
        let v = v as VertexId;
        let mut taken = 0;
        while taken < d {
            let u = order[next];
            next = if next + 1 == n { 0 } else { next + 1 };
            if u != v {
                edges.push((u, v));
                taken += 1;
            }
        }
    }
    progress.stage("building the graph");
    let graph = Graph::from_edges((0..n as u64).collect(), true, edges);
    progress.finish();
    Ok(graph)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::fit_power_law_exponent;

    #[test]
    fn in_degrees_follow_the_exponent_and_out_degrees_are_even() {
        for alpha in [1.8, 2.1] {
            let cfg = ZipfConfig { nodes: 50_000, alpha, seed: 7, progress: false };
            let g = zipf_in_degree(&cfg).unwrap();
            assert!(g.is_directed());
            assert_eq!(g.cleaning().duplicates_merged, 0);
            assert_eq!(g.cleaning().self_loops_dropped, 0);
            let n = g.num_nodes() as VertexId;
            let ins: Vec<u64> = (0..n).map(|v| g.in_neighbors(v).len() as u64).collect();
            assert!(ins.iter().all(|&d| d >= 1));
            let fitted = fit_power_law_exponent(&ins, 1, 1000);
            assert!((fitted - alpha).abs() < 0.05, "α {alpha}: fitted {fitted}");
            let mean = g.num_edges() as f64 / f64::from(n);
            for v in 0..n {
                let out = g.neighbors(v).len() as f64;
                // Every pass over the order gives each vertex one turn, less the turn skipped
                // when it comes up as its own source (at most twice).
                assert!((out - mean).abs() <= 3.0, "vertex {v}: out-degree {out}, mean {mean}");
            }
        }
    }

    #[test]
    fn the_seed_fixes_the_graph_and_bad_input_is_refused() {
        let cfg = ZipfConfig { nodes: 2_000, alpha: 1.9, seed: 3, progress: false };
        let a = zipf_in_degree(&cfg).unwrap();
        let b = zipf_in_degree(&cfg).unwrap();
        assert_eq!(a.num_edges(), b.num_edges());
        assert!((0..2_000).all(|v| a.neighbors(v) == b.neighbors(v)));
        for (nodes, alpha) in [(1, 2.0), (100, 1.0), (100, f64::NAN)] {
            let err = zipf_in_degree(&ZipfConfig { nodes, alpha, seed: 1, progress: false });
            assert!(err.unwrap_err().to_string().contains("Zipf"));
        }
    }
}
