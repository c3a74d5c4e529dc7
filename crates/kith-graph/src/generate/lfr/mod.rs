//! LFR benchmark graphs (Lancichinetti, Fortunato & Radicchi, "Benchmark graphs for testing
//! community detection algorithms", Phys. Rev. E 78, 2008).
//!
//! Degrees follow a power law with exponent τ1, community sizes one with exponent τ2, and each
//! vertex keeps a fraction `1 − μ` of its edges inside its community. The steps:
//! 1. sample degrees (the minimum degree solved for so the mean is the requested one);
//! 2. sample community sizes until they cover every vertex;
//! 3. place vertices, largest internal degree first, into a community with room that is big
//!    enough to hold their internal edges, chosen with probability proportional to its room;
//! 4. wire internal stubs inside each community (in parallel) and external stubs across
//!    communities with the configuration model, then rewire self-loops, duplicates and (for
//!    external edges) same-community pairs by swapping endpoints with random good edges.
//!
//! This file holds the configuration, the result and the pipeline; steps 2 and 3 are in
//! `communities.rs`, the configuration model of step 4 in `wiring.rs`.

mod communities;
mod wiring;

use rand::Rng;
use rayon::prelude::*;

use super::powerlaw::{PowerLaw, fit_power_law_exponent};
use super::streams::rng_for;
use crate::csr::{MAX_VERTICES, VertexId};
use crate::error::{Error, Result};
use crate::graph::Graph;
use crate::progress::Stages;
use communities::{assign, balance_internal_parity, community_sizes, make_room};
use wiring::wire;

/// Parameters of an LFR graph. See [`LfrConfig::default`] for the defaults.
#[derive(Clone, Debug)]
pub struct LfrConfig {
    /// Number of vertices.
    pub nodes: usize,
    /// Mean degree (default 20).
    pub avg_degree: f64,
    /// Largest degree; `None` (default) means `min(50 × avg_degree, nodes / 10)`, at least
    /// twice the mean.
    pub max_degree: Option<usize>,
    /// Mixing parameter: the fraction of each vertex's edges that leave its community
    /// (default 0.2).
    pub mu: f64,
    /// Degree exponent τ1 (default 2.5, within the range measured on social networks).
    pub tau1: f64,
    /// Community-size exponent τ2 (default 1.5).
    pub tau2: f64,
    /// Smallest community; `None` (default) means one more than the minimum degree, at least 3.
    pub min_community: Option<usize>,
    /// Largest community; `None` (default) means the maximum degree.
    pub max_community: Option<usize>,
    /// Random seed; the graph is a function of the configuration alone.
    pub seed: u64,
    /// Show a progress spinner on stderr.
    pub progress: bool,
}

impl Default for LfrConfig {
    fn default() -> Self {
        LfrConfig {
            nodes: 10_000,
            avg_degree: 20.0,
            max_degree: None,
            mu: 0.2,
            tau1: 2.5,
            tau2: 1.5,
            min_community: None,
            max_community: None,
            seed: 1,
            progress: false,
        }
    }
}

/// An LFR graph with its planted communities.
#[derive(Clone, Debug)]
pub struct Lfr {
    pub graph: Graph,
    /// The community of every vertex.
    pub membership: Vec<u32>,
    /// The power law the degrees were drawn from (its `min` was solved for).
    pub degree_law: PowerLaw,
    /// Stubs that no rewiring could place (each unplaced edge loses two stubs).
    pub stubs_dropped: u64,
}

impl Lfr {
    /// The number of communities.
    pub fn num_communities(&self) -> usize {
        self.membership.iter().map(|&c| c as usize + 1).max().unwrap_or(0)
    }

    /// The members of each community, as original ids.
    pub fn communities(&self) -> Vec<Vec<u64>> {
        let mut out = vec![Vec::new(); self.num_communities()];
        for (v, &c) in self.membership.iter().enumerate() {
            out[c as usize].push(self.graph.original_id(v as VertexId));
        }
        out
    }

    /// The maximum-likelihood exponent of the realised degrees, over the range the degrees were
    /// drawn from (less the partly covered lowest integer).
    pub fn fitted_degree_exponent(&self) -> f64 {
        let g = &self.graph;
        let degrees: Vec<u64> =
            (0..g.num_nodes() as VertexId).map(|v| g.degree(v) as u64).collect();
        let law = self.degree_law;
        fit_power_law_exponent(&degrees, law.min.ceil() as u64 + 1, law.max as u64)
    }

    /// The realised mixing parameter: the share of edge endpoints whose edge leaves the
    /// endpoint's community.
    pub fn realized_mu(&self) -> f64 {
        mixing(&self.graph, &self.membership)
    }
}

/// The share of edge endpoints whose edge joins two different communities.
pub fn mixing(graph: &Graph, membership: &[u32]) -> f64 {
    let (external, total) = (0..graph.num_nodes() as VertexId)
        .into_par_iter()
        .map(|u| {
            let ext = graph
                .neighbors(u)
                .iter()
                .filter(|&&v| membership[v as usize] != membership[u as usize])
                .count();
            (ext as u64, graph.neighbors(u).len() as u64)
        })
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    external as f64 / total.max(1) as f64
}

/// Generates an LFR graph.
///
/// # Errors
/// Parameters that admit no graph: fewer than 4 vertices, a mean degree out of reach of the
/// degree range, μ outside [0, 1], or communities too small for the vertices' internal degrees.
///
/// # Complexity
/// `O(V + E)` expected, internal wiring on all cores.
pub fn lfr(config: &LfrConfig) -> Result<Lfr> {
    let n = config.nodes;
    let bad = |m: String| Err(Error::InvalidArgument(m));
    if !(4..=MAX_VERTICES).contains(&n) {
        return bad(format!("LFR needs between 4 and {} nodes, got {n}", MAX_VERTICES));
    }
    if !(0.0..=1.0).contains(&config.mu) {
        return bad(format!("--mu must be within [0, 1], got {}", config.mu));
    }
    // Written so that NaN fails too.
    if !(config.tau1 > 1.0 && config.tau2 >= 1.0 && config.tau1 < 10.0 && config.tau2 < 10.0) {
        return bad(format!(
            "need 1 < tau1 < 10 and 1 <= tau2 < 10, got {} and {}",
            config.tau1, config.tau2
        ));
    }
    if let (Some(lo), hi) = (config.min_community, config.max_community)
        && (lo < 2 || hi.is_some_and(|hi| hi < lo))
    {
        return bad(format!(
            "--min-community must be at least 2 and at most --max-community, got {lo} and {hi:?}"
        ));
    }
    let default_max =
        ((50.0 * config.avg_degree) as usize).min(n / 10).max((2.0 * config.avg_degree) as usize);
    let kmax = config.max_degree.unwrap_or(default_max).min(n - 1);
    if !(config.avg_degree >= 1.0 && config.avg_degree < kmax as f64) {
        return bad(format!(
            "--avg-degree must be at least 1 and below the maximum degree {kmax}, got {}",
            config.avg_degree
        ));
    }
    let Some(law) = PowerLaw::with_mean(config.tau1, config.avg_degree, kmax as f64) else {
        return bad(format!(
            "no power law with exponent {} on [1, {kmax}] has mean {}",
            config.tau1, config.avg_degree
        ));
    };
    let progress = Stages::new(config.progress, "LFR");
    let mut rng = rng_for(config.seed, 0);

    progress.stage("sampling degrees");
    let mut degree: Vec<u64> = (0..n).map(|_| law.sample(&mut rng)).collect();
    if !degree.iter().sum::<u64>().is_multiple_of(2) {
        let v = degree.iter().position(|&d| d < kmax as u64).expect("not every degree is maximal");
        degree[v] += 1;
    }
    // Randomised rounding keeps the expected internal share exactly 1 − μ.
    let mut internal: Vec<u64> = degree
        .iter()
        .map(|&k| ((1.0 - config.mu) * k as f64 + rng.random::<f64>()).floor() as u64)
        .collect();

    progress.stage("sampling community sizes");
    let smin = config.min_community.unwrap_or((law.min.ceil() as usize + 1).max(3));
    let smax = config.max_community.unwrap_or(kmax).max(smin).min(n);
    let needed = internal.iter().max().copied().unwrap_or(0) as usize + 1;
    if smax < needed {
        return bad(format!(
            "the largest community ({smax}) cannot hold a vertex with {} internal edges; raise --max-community",
            needed - 1
        ));
    }
    let mut sizes = community_sizes(n, smin, smax, config.tau2, &mut rng);
    make_room(&mut sizes, &internal);

    progress.stage("assigning vertices to communities");
    let membership = assign(&internal, &sizes, &mut rng)?;
    let mut members: Vec<Vec<VertexId>> = vec![Vec::new(); sizes.len()];
    for (v, &c) in membership.iter().enumerate() {
        members[c as usize].push(v as VertexId);
    }
    balance_internal_parity(&members, &degree, &mut internal);

    progress.stage("wiring internal edges");
    let internal_edges: Vec<(Vec<(VertexId, VertexId)>, u64)> = members
        .par_iter()
        .enumerate()
        .map(|(c, vs)| {
            let mut rng = rng_for(config.seed, 1 + c as u64);
            let mut stubs: Vec<VertexId> = vs
                .iter()
                .flat_map(|&v| std::iter::repeat_n(v, internal[v as usize] as usize))
                .collect();
            wire(&mut stubs, &mut rng, |_, _| true)
        })
        .collect();

    progress.stage("wiring external edges");
    let mut stubs: Vec<VertexId> = (0..n)
        .flat_map(|v| std::iter::repeat_n(v as VertexId, (degree[v] - internal[v]) as usize))
        .collect();
    let (external, mut dropped) =
        wire(&mut stubs, &mut rng, |a, b| membership[a as usize] != membership[b as usize]);

    progress.stage("building the graph");
    let mut edges = external;
    for (list, lost) in internal_edges {
        edges.extend(list);
        dropped += lost;
    }
    let graph = Graph::from_edges((0..n as u64).collect(), false, edges);
    progress.finish();
    Ok(Lfr { graph, membership, degree_law: law, stubs_dropped: dropped })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_graph() {
        let config = LfrConfig { nodes: 2_000, seed: 9, ..Default::default() };
        let a = lfr(&config).unwrap();
        let b = lfr(&config).unwrap();
        assert_eq!(a.graph, b.graph);
        assert_eq!(a.membership, b.membership);
    }
}
