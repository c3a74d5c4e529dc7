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

use rand::Rng;
use rand::seq::SliceRandom;
use rand_pcg::Pcg64Mcg;
use rayon::prelude::*;
use rustc_hash::FxHashSet;

use super::powerlaw::PowerLaw;
use super::{Progress, rng_for};
use crate::{Error, Graph, Result, VertexId};

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
        super::fit_power_law_exponent(&degrees, law.min.ceil() as u64 + 1, law.max as u64)
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
    if !(4..=crate::MAX_VERTICES).contains(&n) {
        return bad(format!("LFR needs between 4 and {} nodes, got {n}", crate::MAX_VERTICES));
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
    let progress = Progress::new(config.progress, "LFR");
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

/// Community sizes drawn from the τ2 power law on `[smin, smax]` summing to exactly `n`.
fn community_sizes(
    n: usize,
    smin: usize,
    smax: usize,
    tau2: f64,
    rng: &mut Pcg64Mcg,
) -> Vec<usize> {
    let law = PowerLaw { exponent: tau2, min: smin as f64, max: smax as f64 };
    let mut sizes = Vec::new();
    let mut total = 0;
    while total < n {
        let s = law.sample(rng) as usize;
        let s = s.min(n - total);
        if s < smin && !sizes.is_empty() {
            // Too few vertices left for a community of its own: spread them over others.
            for _ in 0..s {
                let grow: Vec<usize> = (0..sizes.len()).filter(|&i| sizes[i] < smax).collect();
                let i = if grow.is_empty() {
                    rng.random_range(0..sizes.len())
                } else {
                    grow[rng.random_range(0..grow.len())]
                };
                sizes[i] += 1;
            }
        } else {
            sizes.push(s);
        }
        total += s;
    }
    sizes
}

/// Grows communities until every vertex can be placed in one larger than its internal degree.
///
/// With vertices sorted by descending internal degree `k_1 >= k_2 >= ...`, placement succeeds
/// exactly when, for every `j`, the communities larger than `k_j` hold at least `j` vertices.
/// Where that fails (small graphs with a few large hubs), the largest community that is too
/// small is grown to at least `k_j + 1` by absorbing the smallest communities.
fn make_room(sizes: &mut Vec<usize>, internal: &[u64]) {
    let mut demand: Vec<u64> = internal.to_vec();
    demand.sort_unstable_by(|a, b| b.cmp(a));
    'restart: loop {
        sizes.sort_unstable_by(|a, b| b.cmp(a));
        let (mut eligible, mut room) = (0, 0usize);
        for (j, &k) in demand.iter().enumerate() {
            while eligible < sizes.len() && sizes[eligible] as u64 > k {
                room += sizes[eligible];
                eligible += 1;
            }
            if room > j {
                continue;
            }
            // Grow the largest community that is too small by absorbing whole communities
            // from the small end (cutting one down would leave it too small for its own
            // members). The surplus stays in the grown community, which may so exceed the
            // requested maximum by less than the smallest community. When the small end cannot
            // reach the size needed, it joins the smallest eligible community instead.
            let grow = eligible;
            let target = k as usize + 1;
            let small_end: usize = sizes[grow..].iter().sum();
            if small_end < target && grow > 0 {
                sizes.truncate(grow);
                sizes[grow - 1] += small_end;
            } else {
                while sizes[grow] < target {
                    let absorbed = sizes.pop().expect("the small end holds at least `target`");
                    sizes[grow] += absorbed;
                }
            }
            continue 'restart;
        }
        return;
    }
}

/// Places every vertex in a community with room whose size exceeds its internal degree,
/// largest internal degree first, choosing among the eligible communities in proportion to
/// their remaining room (a Fenwick tree over communities sorted by size).
fn assign(internal: &[u64], sizes: &[usize], rng: &mut Pcg64Mcg) -> Result<Vec<u32>> {
    let mut by_size: Vec<usize> = (0..sizes.len()).collect();
    by_size.sort_by_key(|&c| std::cmp::Reverse(sizes[c]));
    let mut room = Fenwick::new(by_size.iter().map(|&c| sizes[c] as u64).collect());
    let mut order: Vec<usize> = (0..internal.len()).collect();
    order.sort_by_key(|&v| std::cmp::Reverse(internal[v]));
    let mut membership = vec![0u32; internal.len()];
    let mut eligible = 0;
    // Vertices come by descending internal degree, so the eligible prefix only grows.
    for &v in &order {
        while eligible < by_size.len() && sizes[by_size[eligible]] as u64 > internal[v] {
            eligible += 1;
        }
        let available = room.prefix_sum(eligible);
        if available == 0 {
            return Err(Error::InvalidArgument(format!(
                "no community with room is larger than internal degree {}; raise --max-community or lower --max-degree",
                internal[v]
            )));
        }
        let slot = room.find(rng.random_range(0..available));
        room.add(slot, -1);
        membership[v] = by_size[slot] as u32;
    }
    Ok(membership)
}

/// Makes every community's internal stub count even by moving one stub of one member between
/// its internal and external share.
fn balance_internal_parity(members: &[Vec<VertexId>], degree: &[u64], internal: &mut [u64]) {
    for vs in members {
        let sum: u64 = vs.iter().map(|&v| internal[v as usize]).sum();
        if sum.is_multiple_of(2) {
            continue;
        }
        let size = vs.len() as u64;
        let grow = vs.iter().find(|&&v| {
            internal[v as usize] + 1 < size && internal[v as usize] < degree[v as usize]
        });
        match grow {
            Some(&v) => internal[v as usize] += 1,
            None => {
                let &v = vs
                    .iter()
                    .find(|&&v| internal[v as usize] > 0)
                    .expect("odd sum has a positive term");
                internal[v as usize] -= 1;
            }
        }
    }
}

/// The configuration model on `stubs`: shuffle, pair neighbours, then rewire every pair that
/// is a self-loop, a duplicate or not `allowed` by swapping endpoints with a random accepted
/// edge. Returns the edges and the number of stubs that could not be placed.
fn wire(
    stubs: &mut [VertexId],
    rng: &mut Pcg64Mcg,
    allowed: impl Fn(VertexId, VertexId) -> bool,
) -> (Vec<(VertexId, VertexId)>, u64) {
    const ATTEMPTS: usize = 1024;
    let key = |a: VertexId, b: VertexId| (u64::from(a.min(b)) << 32) | u64::from(a.max(b));
    stubs.shuffle(rng);
    let mut edges = Vec::with_capacity(stubs.len() / 2);
    let mut present = FxHashSet::default();
    present.reserve(stubs.len() / 2);
    let mut pending = Vec::new();
    for pair in stubs.chunks_exact(2) {
        let (a, b) = (pair[0], pair[1]);
        if a != b && allowed(a, b) && present.insert(key(a, b)) {
            edges.push((a, b));
        } else {
            pending.push((a, b));
        }
    }
    let mut dropped = (stubs.len() % 2) as u64;
    for (a, b) in pending {
        let mut placed = false;
        for _ in 0..ATTEMPTS {
            if edges.is_empty() {
                break;
            }
            let j = rng.random_range(0..edges.len());
            let (c, d) = if rng.random() { edges[j] } else { (edges[j].1, edges[j].0) };
            let ok = a != c
                && b != d
                && key(a, c) != key(b, d)
                && allowed(a, c)
                && allowed(b, d)
                && !present.contains(&key(a, c))
                && !present.contains(&key(b, d));
            if ok {
                present.remove(&key(c, d));
                present.insert(key(a, c));
                present.insert(key(b, d));
                edges[j] = (a, c);
                edges.push((b, d));
                placed = true;
                break;
            }
        }
        if !placed {
            dropped += 2;
        }
    }
    (edges, dropped)
}

/// A Fenwick (binary indexed) tree of non-negative counts.
struct Fenwick {
    tree: Vec<i64>,
}

impl Fenwick {
    fn new(values: Vec<u64>) -> Fenwick {
        let mut f = Fenwick { tree: vec![0; values.len() + 1] };
        for (i, v) in values.into_iter().enumerate() {
            f.add(i, v as i64);
        }
        f
    }

    fn add(&mut self, index: usize, delta: i64) {
        let mut i = index + 1;
        while i < self.tree.len() {
            self.tree[i] += delta;
            i += i & i.wrapping_neg();
        }
    }

    /// The sum of the first `count` values.
    fn prefix_sum(&self, count: usize) -> u64 {
        let (mut i, mut sum) = (count, 0);
        while i > 0 {
            sum += self.tree[i];
            i -= i & i.wrapping_neg();
        }
        sum as u64
    }

    /// The smallest index whose prefix sum (inclusive) exceeds `target`.
    fn find(&self, mut target: u64) -> usize {
        let mut pos = 0;
        let mut step = (self.tree.len() - 1).next_power_of_two();
        while step > 0 {
            let next = pos + step;
            if next < self.tree.len() && (self.tree[next] as u64) <= target {
                target -= self.tree[next] as u64;
                pos = next;
            }
            step /= 2;
        }
        pos
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn fenwick_finds_by_cumulative_weight() {
        let f = Fenwick::new(vec![3, 0, 2, 5]);
        let found: Vec<usize> = (0..10).map(|t| f.find(t)).collect();
        assert_eq!(found, vec![0, 0, 0, 2, 2, 3, 3, 3, 3, 3]);
        assert_eq!(f.prefix_sum(3), 5);
    }

    #[test]
    fn sizes_cover_every_vertex() {
        let mut rng = Pcg64Mcg::seed_from_u64(3);
        let sizes = community_sizes(10_000, 10, 300, 1.5, &mut rng);
        assert_eq!(sizes.iter().sum::<usize>(), 10_000);
        assert!(sizes.iter().all(|&s| (10..=300).contains(&s)));
    }

    #[test]
    fn same_seed_same_graph() {
        let config = LfrConfig { nodes: 2_000, seed: 9, ..Default::default() };
        let a = lfr(&config).unwrap();
        let b = lfr(&config).unwrap();
        assert_eq!(a.graph, b.graph);
        assert_eq!(a.membership, b.membership);
    }
}
