//! R-MAT graphs (Chakrabarti, Zhan & Faloutsos, SDM 2004) with the Graph500 parameters.
//!
//! Each edge picks one quadrant of the adjacency matrix per level with probabilities
//! `a, b, c, d` (Graph500: 0.57, 0.19, 0.19, 0.05) over `⌈log2 n⌉` levels; endpoints beyond
//! `n` are drawn again. As in Graph500, vertex labels are then permuted at random so that ids
//! carry no hint of degree. Edges are generated in fixed-size blocks, each with its own
//! seeded stream, so the graph does not depend on the number of threads.

use rand::Rng;
use rand::seq::SliceRandom;
use rayon::prelude::*;

use super::streams::rng_for;
use crate::csr::{MAX_VERTICES, VertexId};
use crate::error::{Error, Result};
use crate::graph::Graph;
use crate::progress::Stages;

/// Parameters of an R-MAT graph.
#[derive(Clone, Debug)]
pub struct RmatConfig {
    /// Number of vertices.
    pub nodes: usize,
    /// Mean degree; `nodes × avg_degree / 2` edges are drawn (default 32, Graph500's edge
    /// factor 16). Self-loops and repeats among them are dropped and counted.
    pub avg_degree: f64,
    /// Quadrant probabilities `[a, b, c, d]` (default Graph500's).
    pub probabilities: [f64; 4],
    /// Keep edge direction (default undirected).
    pub directed: bool,
    pub seed: u64,
    pub progress: bool,
}

impl Default for RmatConfig {
    fn default() -> Self {
        RmatConfig {
            nodes: 1 << 16,
            avg_degree: 32.0,
            probabilities: [0.57, 0.19, 0.19, 0.05],
            directed: false,
            seed: 1,
            progress: false,
        }
    }
}

const BLOCK: u64 = 1 << 16;

/// Generates an R-MAT graph.
///
/// # Errors
/// Fewer than 2 vertices, a non-positive mean degree, or probabilities that do not sum to 1.
pub fn rmat(config: &RmatConfig) -> Result<Graph> {
    let n = config.nodes;
    if !(2..=MAX_VERTICES).contains(&n) {
        return Err(Error::InvalidArgument(format!(
            "R-MAT needs between 2 and {} nodes, got {n}",
            MAX_VERTICES
        )));
    }
    let p = config.probabilities;
    if p.iter().any(|&x| x < 0.0) || (p.iter().sum::<f64>() - 1.0).abs() > 1e-9 {
        return Err(Error::InvalidArgument(format!(
            "R-MAT probabilities must be >= 0 and sum to 1, got {p:?}"
        )));
    }
    // Written so that NaN fails too; a simple graph has mean degree below n.
    if !(config.avg_degree > 0.0 && config.avg_degree < n as f64) {
        return Err(Error::InvalidArgument(format!(
            "--avg-degree must be positive and below the number of nodes, got {}",
            config.avg_degree
        )));
    }
    let progress = Stages::new(config.progress, "R-MAT");
    let scale = usize::BITS - (n - 1).leading_zeros();
    let edges = (n as f64 * config.avg_degree / 2.0).round() as u64;
    let blocks = edges.div_ceil(BLOCK);
    let (ab, abc) = (p[0] + p[1], p[0] + p[1] + p[2]);

    progress.stage("drawing edges");
    let mut pairs: Vec<(VertexId, VertexId)> = (0..blocks)
        .into_par_iter()
        .flat_map_iter(|b| {
            let mut rng = rng_for(config.seed, 1 + b);
            let count = BLOCK.min(edges - b * BLOCK);
            let mut out = Vec::with_capacity(count as usize);
            while (out.len() as u64) < count {
                let (mut u, mut v) = (0usize, 0usize);
                for _ in 0..scale {
                    let r: f64 = rng.random();
                    let (bu, bv) = if r < p[0] {
                        (0, 0)
                    } else if r < ab {
                        (0, 1)
                    } else if r < abc {
                        (1, 0)
                    } else {
                        (1, 1)
                    };
                    u = (u << 1) | bu;
                    v = (v << 1) | bv;
                }
                if u < n && v < n {
                    out.push((u as VertexId, v as VertexId));
                }
            }
            out
        })
        .collect();

    progress.stage("permuting labels");
    let mut label: Vec<VertexId> = (0..n as VertexId).collect();
    label.shuffle(&mut rng_for(config.seed, 0));
    pairs.par_iter_mut().for_each(|(u, v)| {
        *u = label[*u as usize];
        *v = label[*v as usize];
    });

    progress.stage("building the graph");
    let graph = Graph::from_edges((0..n as u64).collect(), config.directed, pairs);
    progress.finish();
    Ok(graph)
}
