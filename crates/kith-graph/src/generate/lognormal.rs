//! Directed graphs with log-normal out-degrees and uniformly random targets: the graphs of
//! Pregel's SSSP scaling experiment (Malewicz et al., SIGMOD 2010, §5: out-degrees from
//! LN(μ = 4, σ = 1.3), mean 127.1), which the LFGraph thesis's SSSP figure follows.

use rand::Rng;
use rand::seq::SliceRandom;
use rand_distr::{Distribution, LogNormal};
use rayon::prelude::*;

use super::streams::rng_for;
use crate::csr::{MAX_VERTICES, VertexId};
use crate::error::{Error, Result};
use crate::graph::Graph;
use crate::progress::Stages;

/// Parameters of a log-normal out-degree graph.
#[derive(Clone, Debug)]
pub struct LogNormalConfig {
    /// Number of vertices (at least 2).
    pub nodes: usize,
    /// The mean of the out-degree's logarithm (Pregel: 4).
    pub mu: f64,
    /// The standard deviation of the out-degree's logarithm (Pregel: 1.3).
    pub sigma: f64,
    pub seed: u64,
    pub progress: bool,
}

impl Default for LogNormalConfig {
    fn default() -> Self {
        LogNormalConfig { nodes: 10_000, mu: 4.0, sigma: 1.3, seed: 1, progress: false }
    }
}

impl LogNormalConfig {
    /// The expected out-degree before rounding and capping, `exp(μ + σ²/2)`.
    pub fn mean_degree(&self) -> f64 {
        (self.mu + self.sigma * self.sigma / 2.0).exp()
    }
}

/// Vertices per block of the parallel generation; each block has its own random stream, so
/// the graph does not depend on the number of threads.
const BLOCK: usize = 1 << 14;

/// Generates the graph: vertex `v` draws its out-degree `round(LN(μ, σ))`, capped at `n − 1`,
/// and that many distinct targets other than itself, uniformly.
///
/// # Errors
/// Fewer than 2 vertices, too many, or `σ` not positive and finite.
pub fn lognormal(config: &LogNormalConfig) -> Result<Graph> {
    let n = config.nodes;
    let (mu, sigma) = (config.mu, config.sigma);
    let valid =
        (2..=MAX_VERTICES).contains(&n) && mu.is_finite() && sigma > 0.0 && sigma.is_finite();
    if !valid {
        return Err(Error::InvalidArgument(format!(
            "a log-normal graph needs 2 to {MAX_VERTICES} nodes, a finite μ and σ > 0, got {n} \
             nodes, μ = {mu}, σ = {sigma}"
        )));
    }
    let law = LogNormal::new(mu, sigma)
        .map_err(|e| Error::InvalidArgument(format!("LN(μ = {mu}, σ = {sigma}): {e}")))?;
    let progress = Stages::new(config.progress, "log-normal out-degrees");
    progress.stage("drawing edges");
    let blocks = n.div_ceil(BLOCK);
    let edges: Vec<(VertexId, VertexId)> = (0..blocks)
        .into_par_iter()
        .flat_map_iter(|b| {
            let mut rng = rng_for(config.seed, b as u64);
            let mut out = Vec::new();
            let mut targets: Vec<VertexId> = Vec::new();
            for v in b * BLOCK..((b + 1) * BLOCK).min(n) {
                let d = (law.sample(&mut rng).round() as usize).min(n - 1);
                distinct_targets(&mut rng, n, v as VertexId, d, &mut targets);
                out.extend(targets.iter().map(|&t| (v as VertexId, t)));
            }
            out
        })
        .collect();
    progress.stage("building the graph");
    let graph = Graph::from_edges((0..n as u64).collect(), true, edges);
    progress.finish();
    Ok(graph)
}

/// Fills `targets` with `d` distinct vertices of `0..n` other than `v` (`d < n`).
fn distinct_targets<R: Rng>(
    rng: &mut R,
    n: usize,
    v: VertexId,
    d: usize,
    targets: &mut Vec<VertexId>,
) {
    targets.clear();
    if 2 * d > n {
        // Dense: pick the ones to leave out instead.
        let mut all: Vec<VertexId> = (0..n as VertexId).filter(|&t| t != v).collect();
        let (picked, _) = all.partial_shuffle(rng, d);
        targets.extend_from_slice(picked);
        return;
    }
    while targets.len() < d {
        let missing = d - targets.len();
        targets
            .extend((0..missing).map(|_| rng.random_range(0..n as VertexId)).filter(|&t| t != v));
        targets.sort_unstable();
        targets.dedup();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_degrees_are_log_normal_with_pregels_mean() {
        let cfg = LogNormalConfig { nodes: 40_000, seed: 5, ..LogNormalConfig::default() };
        let g = lognormal(&cfg).unwrap();
        assert_eq!(g.cleaning().duplicates_merged, 0);
        assert_eq!(g.cleaning().self_loops_dropped, 0);
        let n = g.num_nodes() as VertexId;
        let logs: Vec<f64> = (0..n)
            .map(|v| g.neighbors(v).len())
            .filter(|&d| d > 0)
            .map(|d| (d as f64).ln())
            .collect();
        let mean = logs.iter().sum::<f64>() / logs.len() as f64;
        let sd = (logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / logs.len() as f64).sqrt();
        // Rounding to integers shifts the small degrees a little.
        assert!((mean - 4.0).abs() < 0.05, "mean of ln(out-degree) {mean}");
        assert!((sd - 1.3).abs() < 0.05, "sd of ln(out-degree) {sd}");
        let avg = g.num_edges() as f64 / f64::from(n);
        assert!((avg / cfg.mean_degree() - 1.0).abs() < 0.05, "mean out-degree {avg}");
    }

    #[test]
    fn dense_rows_small_graphs_and_bad_input() {
        // n = 5 with a huge μ: every vertex points to all 4 others.
        let cfg = LogNormalConfig { nodes: 5, mu: 20.0, sigma: 0.1, seed: 1, progress: false };
        let g = lognormal(&cfg).unwrap();
        assert_eq!(g.num_edges(), 20);
        let a = lognormal(&LogNormalConfig { nodes: 3000, ..LogNormalConfig::default() }).unwrap();
        let b = lognormal(&LogNormalConfig { nodes: 3000, ..LogNormalConfig::default() }).unwrap();
        assert!((0..3000).all(|v| a.neighbors(v) == b.neighbors(v)));
        for (nodes, sigma) in [(1, 1.0), (10, 0.0), (10, f64::INFINITY)] {
            let cfg = LogNormalConfig { nodes, sigma, ..LogNormalConfig::default() };
            assert!(lognormal(&cfg).unwrap_err().to_string().contains("log-normal"));
        }
    }
}
