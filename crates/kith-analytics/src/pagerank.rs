//! PageRank as a vertex program, in LFGraph's formulation and the standard normalised one.

use std::time::Instant;

use kith_graph::VertexId;
use rayon::prelude::*;

use crate::engine::{Context, InGraph, RunStats, VertexProgram, run};
use crate::tiles::{ALIGN, BLOCK, Tiles};

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
    /// How each vertex's contribution `pr(u) / out(u)` is held between steps.
    pub precision: Precision,
}

/// How contributions are held between steps, and summed when pulling. Ranks are always
/// `f64`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Precision {
    /// Exact to the order of sums: the verifier's arithmetic.
    #[default]
    F64,
    /// Rounded to `f32`, and summed in `f32` when pulling (as GAPBS does): half the bytes in
    /// the random reads of a step and no conversion per in-link, for a relative error of
    /// about 6e-8 per contribution and per addition.
    F32,
}

impl Default for PageRankConfig {
    fn default() -> Self {
        PageRankConfig {
            formulation: Formulation::Normalized,
            damping: 0.85,
            iterations: 20,
            tolerance: 0.0,
            precision: Precision::F64,
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
        self.contrib.resize(values.len(), 0.0);
        self.contrib.par_iter_mut().zip(values.par_iter()).enumerate().for_each(|(v, (c, &pr))| {
            let out = graph.out_degree(v as VertexId);
            *c = contribution(pr, out);
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
    Rule::new(config, n, dangling).rank(sum)
}

/// What a vertex of rank `rank` and `out` out-links gives each: `rank · (1 / out)`, 0 without
/// out-links. A product with the reciprocal, so that a step can work the reciprocals out once
/// and multiply (every implementation computes it so, and they agree bit for bit).
#[inline]
pub fn contribution(rank: f64, out: u32) -> f64 {
    rank * reciprocal(out)
}

/// `1 / out`, 0 for 0.
#[inline]
fn reciprocal(out: u32) -> f64 {
    if out == 0 { 0.0 } else { 1.0 / f64::from(out) }
}

/// [`next_rank`] for one step, its constant part worked out once: `base + d · (sum +
/// spread)`, with `base` `1 − d` (LFGraph) or `(1 − d)/n` (normalised) and `spread` 0 or the
/// dangling mass over n. Adding a zero `spread` leaves a sum unchanged, so both formulations
/// round as their definitions do.
#[derive(Clone, Copy)]
struct Rule {
    base: f64,
    d: f64,
    spread: f64,
}

impl Rule {
    #[inline]
    fn new(config: &PageRankConfig, n: f64, dangling: f64) -> Rule {
        let d = config.damping;
        match config.formulation {
            Formulation::LfGraph => Rule { base: 1.0 - d, d, spread: 0.0 },
            Formulation::Normalized => Rule { base: (1.0 - d) / n, d, spread: dangling },
        }
    }

    #[inline]
    fn rank(&self, sum: f64) -> f64 {
        self.base + self.d * (sum + self.spread)
    }
}

/// `Σ contrib[u]` over `links`, in four interleaved sums, so that neither the loads of
/// neighbouring links (each likely a cache miss on a large graph) nor the additions (a
/// dependent chain of floating-point latency per sum) wait for one another: links `4k + i`
/// go to sum `i`, the one to three left over to sums 0, 1 and 2, and the sums are added as
/// `(s0 + s1) + (s2 + s3)`. The fused step adds in the same order, so the vertex program,
/// the distributed one and [`pagerank`] agree bit for bit where they pull.
#[inline]
pub fn sum_contributions(contrib: &[f64], links: &[VertexId]) -> f64 {
    sum_lanes(links, |u| contrib[u as usize])
}

/// The summation order of [`sum_contributions`], over `value(u)` for each link `u`, in the
/// arithmetic of `A`.
#[inline(always)]
fn sum_lanes<A>(links: &[VertexId], value: impl Fn(VertexId) -> A) -> A
where
    A: Copy + Default + std::ops::Add<Output = A> + std::ops::AddAssign,
{
    let mut s = [A::default(); 4];
    let mut quads = links.chunks_exact(4);
    for q in &mut quads {
        s[0] += value(q[0]);
        s[1] += value(q[1]);
        s[2] += value(q[2]);
        s[3] += value(q[3]);
    }
    for (lane, &u) in quads.remainder().iter().enumerate() {
        s[lane] += value(u);
    }
    (s[0] + s[1]) + (s[2] + s[3])
}

/// PageRank of every vertex (by dense id), with the run's statistics and the last step's L1
/// change: the vertex program fused into one pass per step. Each vertex sums its
/// in-neighbours' contributions, writes its rank and its own next contribution, and adds to
/// the step's L1 change and dangling mass (per chunk, summed at the end), so a step reads the
/// in-links once and touches each vertex's state once. Each vertex's sum is added in the
/// order of [`sum_contributions`] when pulling (as [`pagerank_vertex_program`] and the
/// distributed program do: equal to them bit for bit, but for the order of the global sums),
/// and in ascending order through tiles (as [`pagerank_sequential`] does); so the results
/// agree with both to rounding (and to `f32` rounding with [`Precision::F32`]). Each vertex's
/// `1 / out(v)` is worked out once, not once a step (see [`contribution`]).
pub fn pagerank(graph: &InGraph, config: PageRankConfig) -> (Vec<f64>, RunStats, f64) {
    pagerank_gathering(graph, config, None)
}

/// A contribution as held between steps.
trait Held: Copy + Default + Send + Sync + Into<f64> {
    fn hold(x: f64) -> Self;
    /// `Σ held[u]` over `links`, in the order of [`sum_contributions`], in this type's
    /// arithmetic.
    fn sum(held: &[Self], links: &[VertexId]) -> f64;
}

impl Held for f64 {
    #[inline]
    fn hold(x: f64) -> f64 {
        x
    }
    #[inline]
    fn sum(held: &[f64], links: &[VertexId]) -> f64 {
        sum_lanes(links, |u| read(held, u))
    }
}

impl Held for f32 {
    #[inline]
    fn hold(x: f64) -> f32 {
        x as f32
    }
    #[inline]
    fn sum(held: &[f32], links: &[VertexId]) -> f64 {
        f64::from(sum_lanes(links, |u| read(held, u)))
    }
}

/// `held[u]`, unchecked.
#[inline(always)]
fn read<C: Copy>(held: &[C], u: VertexId) -> C {
    // SAFETY: `held` has one entry per vertex (`iterate` allocates it so), and every in-link
    // source of an `InGraph` is a vertex (its invariant): the read is in bounds.
    unsafe { *held.get_unchecked(u as usize) }
}

/// In-links per unit of work in a fused step, at least: chunks are cut by in-links, not
/// vertices, so that a chunk of hubs is not one thread's whole step on a skewed graph.
const CHUNK_LINKS: usize = 1 << 15;

/// Chunks of consecutive vertices holding about a `pieces`th of the in-links each (at least
/// [`CHUNK_LINKS`]), and at most `most` vertices, cut only after multiples of `align`
/// vertices (which divides `most`); returns their first vertices and `n` at the end. The cut
/// does not depend on the thread count, and neither do the results.
fn chunk_bounds(graph: &InGraph, pieces: usize, most: usize, align: usize) -> Vec<usize> {
    let n = graph.num_vertices();
    let per = (graph.num_in_links() / pieces).max(CHUNK_LINKS);
    let mut bounds = vec![0];
    let mut links = 0;
    for v in 0..n {
        links += graph.in_links(v as VertexId).len() + 1;
        let aligned = (v + 1) % align == 0;
        if aligned && (links >= per || v + 1 - bounds[bounds.len() - 1] == most) {
            bounds.push(v + 1);
            links = 0;
        }
    }
    if bounds.last() != Some(&n) {
        bounds.push(n);
    }
    bounds
}

/// `values` cut at `bounds` (from [`chunk_bounds`]).
fn cut<'a, T>(mut values: &'a mut [T], bounds: &[usize]) -> Vec<&'a mut [T]> {
    let mut parts = Vec::with_capacity(bounds.len());
    for w in bounds.windows(2) {
        let (part, rest) = values.split_at_mut(w[1] - w[0]);
        parts.push(part);
        values = rest;
    }
    parts
}

/// Vertices above which a symmetric graph's step gathers through [`Tiles`]: below, the
/// contributions (at most 1 MiB in `f32`) stay in cache anyway, and pulling is cheaper.
const TILES_ABOVE: usize = 1 << 18;

/// The share of in-links whose source is among the first [`TILES_ABOVE`] vertices above
/// which pulling is chosen however large the graph: those sources' contributions stay in
/// cache, so pulling reads mostly cache hits (a graph ordered by degree, hubs first), where
/// tiles would add into the sums of a few hubs over and over.
const HOT_SHARE: f64 = 0.75;

/// Whether at least [`HOT_SHARE`] of `graph`'s in-links come from its first [`TILES_ABOVE`]
/// vertices.
fn hot_sources(graph: &InGraph) -> bool {
    let (_, sources, _) = graph.csr();
    let hot = sources.par_iter().filter(|&&u| (u as usize) < TILES_ABOVE).count();
    hot as f64 >= HOT_SHARE * sources.len() as f64
}

/// How a step sums each vertex's in-neighbours' contributions.
enum Gather {
    /// Vertex by vertex over its in-links, in chunks cut by in-links.
    Pull(Vec<usize>),
    /// Block by block through the tiles (symmetric graphs).
    Tiles(Tiles),
}

impl Gather {
    fn choose(graph: &InGraph, tiles: Option<bool>) -> Gather {
        let use_tiles = tiles.unwrap_or_else(|| {
            graph.is_symmetric() && graph.num_vertices() > TILES_ABOVE && !hot_sources(graph)
        }) && graph.is_symmetric();
        // Tiles: each part rereads every source block, so parts are few and large (a 32nd of
        // the in-links, at most a block); pulling: many small chunks.
        let bounds = if use_tiles {
            chunk_bounds(graph, 32, BLOCK, ALIGN)
        } else {
            chunk_bounds(graph, 256, usize::MAX, 1)
        };
        if use_tiles { Gather::Tiles(Tiles::new(graph, bounds)) } else { Gather::Pull(bounds) }
    }

    fn bounds(&self) -> Vec<usize> {
        match self {
            Gather::Pull(bounds) => bounds.clone(),
            Gather::Tiles(tiles) => tiles.bounds().to_vec(),
        }
    }
}

/// [`pagerank`], gathering through tiles when `tiles` says so (or by the graph's size when
/// `None`).
pub(crate) fn pagerank_gathering(
    graph: &InGraph,
    config: PageRankConfig,
    tiles: Option<bool>,
) -> (Vec<f64>, RunStats, f64) {
    match config.precision {
        Precision::F64 => iterate::<f64>(graph, config, tiles),
        Precision::F32 => iterate::<f32>(graph, config, tiles),
    }
}

fn iterate<C: Held>(
    graph: &InGraph,
    config: PageRankConfig,
    tiles: Option<bool>,
) -> (Vec<f64>, RunStats, f64) {
    let start = Instant::now();
    let n = graph.num_vertices();
    let nf = n.max(1) as f64;
    let init = match config.formulation {
        Formulation::LfGraph => 1.0,
        Formulation::Normalized => 1.0 / nf,
    };
    let share = |v: VertexId, rank: f64| C::hold(contribution(rank, graph.out_degree(v)));
    let mut rank = vec![init; n];
    let mut contrib: Vec<C> = (0..n as VertexId).into_par_iter().map(|v| share(v, init)).collect();
    let mut next = vec![C::default(); n];
    let dangling_count = (0..n as VertexId).into_par_iter().filter(|&v| graph.out_degree(v) == 0);
    let mut dangling = dangling_count.count() as f64 * init / nf;
    let gather = Gather::choose(graph, tiles);
    let bounds = gather.bounds();
    let (offsets, sources, out_degree) = graph.csr();
    // `1 / out(v)` (0 without out-links), so that a step multiplies where it would divide.
    let reciprocals: Vec<f64> = out_degree.par_iter().map(|&o| reciprocal(o)).collect();
    let longest = bounds.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    let mut stats = RunStats::default();
    let mut delta = f64::NAN;
    for _ in 0..config.iterations {
        let t = Instant::now();
        let (held, gather) = (&contrib, &gather);
        let rule = Rule::new(&config, nf, dangling);
        let (step_delta, mass, changed) = cut(&mut rank, &bounds)
            .into_par_iter()
            .zip(cut(&mut next, &bounds))
            .zip(bounds[..bounds.len() - 1].par_iter().enumerate())
            .map_init(Vec::new, |sums, ((ranks, shares), (part, &first))| {
                let (mut delta, mut mass, mut changed) = (0.0, 0.0, 0usize);
                let mut finish = |sum: f64, per_link: f64, r: &mut f64, s: &mut C| {
                    let new = rule.rank(sum);
                    delta += (new - *r).abs();
                    changed += usize::from(new != *r);
                    *r = new;
                    if per_link == 0.0 {
                        mass += new;
                    }
                    *s = C::hold(new * per_link);
                };
                let end = first + ranks.len();
                let outs = &reciprocals[first..end];
                match gather {
                    Gather::Pull(_) => {
                        // The chunk's offsets, out-degrees, ranks and shares walked together:
                        // no lookup per vertex.
                        let links = offsets[first..=end].windows(2);
                        for (((w, &out), r), s) in links.zip(outs).zip(ranks).zip(shares) {
                            let sum = C::sum(held, &sources[w[0] as usize..w[1] as usize]);
                            finish(sum, out, r, s);
                        }
                    }
                    Gather::Tiles(tiles) => {
                        sums.resize(longest, 0.0);
                        let sums = &mut sums[..ranks.len()];
                        tiles.sum_part(part, held, sums);
                        for (((r, s), &sum), &out) in
                            ranks.iter_mut().zip(shares).zip(&*sums).zip(outs)
                        {
                            finish(sum, out, r, s);
                        }
                    }
                }
                (delta, mass, changed)
            })
            .collect::<Vec<_>>()
            .into_iter()
            // Summed in part order: the same sums on any number of threads.
            .fold((0.0, 0.0, 0), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2));
        std::mem::swap(&mut contrib, &mut next);
        dangling = mass / nf;
        delta = step_delta;
        stats.compute_s += t.elapsed().as_secs_f64();
        stats.changed.push(changed);
        stats.steps += 1;
        if changed == 0 || (config.tolerance > 0.0 && step_delta < config.tolerance) {
            break;
        }
    }
    stats.steps_s = start.elapsed().as_secs_f64();
    (rank, stats, delta)
}

/// PageRank by LFGraph's vertex program on the engine (compute and exchange phases, changed
/// flags): what [`pagerank`] fuses, kept to measure what the fusion gains and as the shape
/// the distributed engine runs.
pub fn pagerank_vertex_program(
    graph: &InGraph,
    config: PageRankConfig,
) -> (Vec<f64>, RunStats, f64) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use kith_graph::Graph;

    /// A symmetric graph of `n` vertices: a path through all of them, and `k · n` edges
    /// between vertices drawn below `below`.
    fn graph(n: u32, k: u32, below: u32) -> InGraph {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % u64::from(below)) as u32
        };
        let random = (0..k * n).map(|_| (next(), next()));
        let edges = (1..n).map(|v| (v - 1, v)).chain(random).filter(|(a, b)| a != b).collect();
        InGraph::new(&Graph::from_edges((0..u64::from(n)).collect(), false, edges))
    }

    #[test]
    fn large_graphs_gather_through_tiles_unless_their_sources_are_hot() {
        let n = 4 * TILES_ABOVE as u32;
        // Links to anywhere: three in four sources lie beyond the first TILES_ABOVE vertices.
        let spread = graph(n, 4, n);
        assert!(!hot_sources(&spread));
        assert!(matches!(Gather::choose(&spread, None), Gather::Tiles(_)));
        // Most links between hubs among the first 20,000 vertices (a graph ordered by
        // degree): their contributions stay in cache, so pulling wins.
        let hubs = graph(n, 6, 20_000);
        assert!(hot_sources(&hubs));
        assert!(matches!(Gather::choose(&hubs, None), Gather::Pull(_)));
        // Asking overrides the choice; small graphs pull.
        assert!(matches!(Gather::choose(&hubs, Some(true)), Gather::Tiles(_)));
        assert!(matches!(Gather::choose(&graph(5000, 3, 5000), None), Gather::Pull(_)));
    }
}
