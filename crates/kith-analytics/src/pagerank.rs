//! PageRank as a vertex program, in LFGraph's formulation and the standard normalised one.

use kith_graph::VertexId;

use crate::engine::{Context, InGraph, RunStats, VertexProgram, run};

/// Which PageRank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Formulation {
    /// LFGraph's: `pr(v) = (1 - d) + d · Σ pr(u) / out(u)`, starting from 1; ranks sum to
    /// about n, and rank leaking from vertices without out-links is lost.
    LfGraph,
    /// The standard one (networkx, igraph): `pr(v) = (1 - d)/n + d · (Σ pr(u)/out(u) +
    /// dangling/n)`, starting from 1/n, where `dangling` is the rank of vertices without
    /// out-links, spread evenly; ranks sum to 1.
    Normalized,
}

/// Settings.
#[derive(Clone, Copy, Debug)]
pub struct PageRankConfig {
    /// Which formulation.
    pub formulation: Formulation,
    /// Damping factor d.
    pub damping: f64,
    /// At most this many iterations.
    pub iterations: usize,
    /// Stop when the L1 change of a step is below this (0: run all iterations).
    pub tolerance: f64,
}

impl Default for PageRankConfig {
    fn default() -> Self {
        PageRankConfig {
            formulation: Formulation::Normalized,
            damping: 0.85,
            iterations: 20,
            tolerance: 0.0,
        }
    }
}

struct Program {
    config: PageRankConfig,
    n: f64,
    /// Normalised: the dangling mass of the current values, over n.
    dangling: f64,
    /// `pr(u) / out(u)` of the current values (0 for vertices without out-links): one read
    /// per in-link instead of a rank, a degree and a division.
    contrib: Vec<f64>,
    last_delta: f64,
}

impl VertexProgram for Program {
    type Value = f64;

    fn init(&self, _: VertexId, _: &InGraph) -> f64 {
        match self.config.formulation {
            Formulation::LfGraph => 1.0,
            Formulation::Normalized => 1.0 / self.n,
        }
    }

    fn before_step(&mut self, _: usize, graph: &InGraph, values: &[f64]) {
        use rayon::prelude::*;
        self.contrib.resize(values.len(), 0.0);
        self.contrib.par_iter_mut().zip(values.par_iter()).enumerate().for_each(|(v, (c, &pr))| {
            let out = graph.out_degree(v as VertexId);
            *c = if out == 0 { 0.0 } else { pr / f64::from(out) };
        });
        if self.config.formulation == Formulation::Normalized {
            let mass: f64 = (0..graph.num_vertices() as VertexId)
                .filter(|&v| graph.out_degree(v) == 0)
                .map(|v| values[v as usize])
                .sum();
            self.dangling = mass / self.n;
        }
    }

    fn compute(&self, ctx: &Context<'_, f64>) -> Option<f64> {
        let sum = sum_contributions(&self.contrib, ctx.in_links());
        let new = next_rank(&self.config, self.n, sum, self.dangling);
        (new != *ctx.own()).then_some(new)
    }

    fn after_step(&mut self, _: usize, values: &[f64], previous: &[f64], changed: &[bool]) -> bool {
        let delta: f64 = values
            .iter()
            .zip(previous)
            .zip(changed)
            .filter(|&(_, &c)| c)
            .map(|((a, b), _)| (a - b).abs())
            .sum();
        self.last_delta = delta;
        self.config.tolerance > 0.0 && delta < self.config.tolerance
    }
}

/// A vertex's new rank from `sum`, the contributions `pr(u)/out(u)` of its in-neighbours,
/// in a graph of `n` vertices whose dangling mass over `n` is `dangling` (normalised only).
#[inline]
pub fn next_rank(config: &PageRankConfig, n: f64, sum: f64, dangling: f64) -> f64 {
    let d = config.damping;
    match config.formulation {
        Formulation::LfGraph => (1.0 - d) + d * sum,
        Formulation::Normalized => (1.0 - d) / n + d * (sum + dangling),
    }
}

/// `Σ contrib[u]` over `links`, in four independent sums so that the loads of different
/// links overlap (each is likely a cache miss on a large graph).
#[inline]
pub fn sum_contributions(contrib: &[f64], links: &[VertexId]) -> f64 {
    let mut sums = [0.0f64; 4];
    let mut quads = links.chunks_exact(4);
    for q in &mut quads {
        for (sum, &u) in sums.iter_mut().zip(q) {
            *sum += contrib[u as usize];
        }
    }
    for &u in quads.remainder() {
        sums[0] += contrib[u as usize];
    }
    (sums[0] + sums[1]) + (sums[2] + sums[3])
}

/// PageRank of every vertex (by dense id), with the run's statistics and the last step's L1
/// change.
pub fn pagerank(graph: &InGraph, config: PageRankConfig) -> (Vec<f64>, RunStats, f64) {
    let mut program = Program {
        config,
        n: graph.num_vertices().max(1) as f64,
        dangling: 0.0,
        contrib: Vec::new(),
        last_delta: f64::NAN,
    };
    let (values, stats) = run(graph, &mut program, config.iterations);
    (values, stats, program.last_delta)
}

/// The same iterations done sequentially, straight from the definition (for verification).
pub fn pagerank_sequential(graph: &InGraph, config: PageRankConfig, steps: usize) -> Vec<f64> {
    let n = graph.num_vertices();
    let nf = n.max(1) as f64;
    let d = config.damping;
    let mut pr = vec![if config.formulation == Formulation::LfGraph { 1.0 } else { 1.0 / nf }; n];
    for _ in 0..steps {
        let dangling: f64 =
            (0..n).filter(|&v| graph.out_degree(v as VertexId) == 0).map(|v| pr[v]).sum::<f64>()
                / nf;
        let mut next = vec![0.0; n];
        for (v, slot) in next.iter_mut().enumerate() {
            let mut sum = 0.0;
            for &u in graph.in_links(v as VertexId) {
                sum += pr[u as usize] / f64::from(graph.out_degree(u));
            }
            *slot = match config.formulation {
                Formulation::LfGraph => (1.0 - d) + d * sum,
                Formulation::Normalized => (1.0 - d) / nf + d * (sum + dangling),
            };
        }
        pr = next;
    }
    pr
}
