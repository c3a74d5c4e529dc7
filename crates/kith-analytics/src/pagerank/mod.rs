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
    /// about 6e-8 per contribution and per addition. Where the CPU has AVX-512, a pulling
    /// run gathers by vector gathers when they prove faster in its first step, with the same
    /// sums.
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

    /// Each vertex of `run` pulled: `settle(sum, 1 / out, rank, share)` with the sum of its
    /// in-neighbours' contributions in `held` (as [`Held::sum`] adds it, by vector gathers
    /// when `gathers` and the type has them), its tallies added up in vertex order.
    #[inline]
    fn pull(held: &[Self], run: Pull<'_, Self>, settle: impl Settle<Self>, gathers: bool) -> Tally {
        let _ = gathers;
        run.each(|links| Self::sum(held, links), settle)
    }

    /// Whether [`Held::pull`] can gather `held` by vector gathers on this CPU.
    #[inline]
    fn can_gather(held: &[Self]) -> bool {
        let _ = held;
        false
    }
}

/// What a step adds up over its vertices: the L1 change of the ranks, the rank of vertices
/// without out-links (to spread), and how many ranks changed.
#[derive(Clone, Copy, Default)]
struct Tally {
    delta: f64,
    mass: f64,
    changed: usize,
}

impl std::ops::AddAssign for Tally {
    #[inline(always)]
    fn add_assign(&mut self, other: Tally) {
        self.delta += other.delta;
        self.mass += other.mass;
        self.changed += other.changed;
    }
}

/// One vertex's end of a step, `(sum, 1 / out, rank, share)`: its new rank and next share
/// written, its tallies returned. A function of its arguments, so that a run's tallies
/// stay in registers from vertex to vertex rather than in the memory of a closure's
/// captured counters (a store and a load in every vertex's chain).
trait Settle<C>: Fn(f64, f64, &mut f64, &mut C) -> Tally {}
impl<C, F: Fn(f64, f64, &mut f64, &mut C) -> Tally> Settle<C> for F {}

/// A run of consecutive vertices to pull: their in-link offsets (one more than vertices),
/// `1 / out` each, and their ranks and next contributions to write.
struct Pull<'a, C> {
    offsets: &'a [u64],
    sources: &'a [VertexId],
    outs: &'a [f64],
    ranks: &'a mut [f64],
    shares: &'a mut [C],
}

impl<C> Pull<'_, C> {
    /// `settle(sum(links), 1 / out, rank, share)` for each vertex in turn, the tallies added
    /// in vertex order: the offsets, the reciprocals, the ranks and the shares walked
    /// together, with no lookup per vertex.
    #[inline(always)]
    fn each(self, sum: impl Fn(&[VertexId]) -> f64, settle: impl Settle<C>) -> Tally {
        let Pull { offsets, sources, outs, ranks, shares } = self;
        let mut tally = Tally::default();
        for (((w, &out), r), s) in offsets.windows(2).zip(outs).zip(ranks).zip(shares) {
            tally += settle(sum(&sources[w[0] as usize..w[1] as usize]), out, r, s);
        }
        tally
    }
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

    /// Through [`gather16`] when `gathers` (the caller checked [`Held::can_gather`]), else
    /// link by link: the same sums either way.
    #[inline]
    fn pull(held: &[f32], run: Pull<'_, f32>, settle: impl Settle<f32>, gathers: bool) -> Tally {
        #[cfg(target_arch = "x86_64")]
        if gathers && gather16::usable(held) {
            // SAFETY: `usable` checked that the CPU has AVX-512F and that `held`'s length
            // fits a gather's i32 index; `InGraph` holds every source below `n`, which is
            // `held`'s length, so every link is a valid gather index.
            return unsafe { gather16::pull(held, run, settle) };
        }
        let _ = gathers;
        run.each(|links| Self::sum(held, links), settle)
    }

    #[inline]
    fn can_gather(held: &[f32]) -> bool {
        #[cfg(target_arch = "x86_64")]
        return gather16::usable(held);
        #[cfg(not(target_arch = "x86_64"))]
        return false;
    }
}

#[cfg(target_arch = "x86_64")]
mod gather16;

/// `held[u]`, unchecked.
#[inline(always)]
fn read<C: Copy>(held: &[C], u: VertexId) -> C {
    // SAFETY: `held` has one entry per vertex (`iterate` allocates it so), and every in-link
    // source of an `InGraph` is a vertex (its invariant): the read is in bounds.
    unsafe { *held.get_unchecked(u as usize) }
}

/// In-links per unit of work in a fused step, at least: chunks are cut by in-links, not
/// vertices, so that a chunk of hubs is not one thread's whole step on a skewed graph.
const CHUNK_LINKS: usize = 1 << 13;

/// Chunks of consecutive vertices holding about a `pieces`th of the in-links each (at least
/// [`CHUNK_LINKS`]), and at most `most` vertices, cut only after multiples of `align`
/// vertices (which divides `most`); returns their first vertices and `n` at the end. A
/// vertex weighs its in-links and one, and each chunk ends at the first aligned vertex at
/// which its weight reaches the share (or at `most` vertices): found by bisecting the
/// offsets, not by a pass over the vertices. The cut does not depend on the thread count,
/// and neither do the results.
fn chunk_bounds(graph: &InGraph, pieces: usize, most: usize, align: usize) -> Vec<usize> {
    let n = graph.num_vertices();
    let (offsets, _, _) = graph.csr();
    // The weight of the vertices before `x`.
    let weight = |x: usize| offsets[x] as usize + x;
    let per = (graph.num_in_links() / pieces).max(CHUNK_LINKS);
    let mut bounds = vec![0];
    let mut first = 0;
    loop {
        // The chunk ends at `first + k · align` for the least k ≥ 1 at which it weighs
        // `per`, or at `most` vertices; none ends past `n`.
        let (candidates, reach) = ((n - first) / align, weight(first) + per);
        let (mut light, mut heavy) = (0, candidates + 1);
        while heavy - light > 1 {
            let k = light + (heavy - light) / 2;
            if weight(first + k * align) < reach { light = k } else { heavy = k }
        }
        let k = heavy.min(most / align);
        if k > candidates {
            break;
        }
        first += k * align;
        bounds.push(first);
        if first == n {
            break;
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

/// Whether at least [`HOT_SHARE`] of a symmetric `graph`'s in-links come from its first
/// [`TILES_ABOVE`] vertices. On a symmetric graph those are the out-links of the first
/// vertices, which are their in-links too: the offset at which the first vertex past them
/// starts, with no pass over the links.
fn hot_sources(graph: &InGraph) -> bool {
    debug_assert!(graph.is_symmetric());
    let (offsets, sources, _) = graph.csr();
    let hot = offsets[TILES_ABOVE.min(graph.num_vertices())];
    hot as f64 >= HOT_SHARE * sources.len() as f64
}

/// Whether a pulling run's steps gather by vector gathers or load link by link (the same
/// sums either way). The first step tries both, on alternate chunks (so both ways see every
/// stretch of the vertices), and the way with the lower time per in-link and vertex does
/// the rest; a run that cannot gather loads throughout.
struct Way {
    can: bool,
    chosen: bool,
    /// The first step's seconds and weights (in-links and vertices) by way: loads, gathers.
    trial: [(f64, usize); 2],
}

impl Way {
    fn new(can: bool) -> Way {
        Way { can, chosen: false, trial: [(0.0, 0); 2] }
    }

    /// Whether `step` times its chunks.
    fn trying(&self, step: usize) -> bool {
        self.can && step == 0
    }

    /// Whether chunk `part` of `step` gathers.
    fn gathers(&self, step: usize, part: usize) -> bool {
        if self.trying(step) { part % 2 == 1 } else { self.chosen }
    }

    /// A chunk of the first step timed.
    fn timed(&mut self, gathers: bool, seconds: f64, weight: usize) {
        let (s, w) = &mut self.trial[usize::from(gathers)];
        *s += seconds;
        *w += weight;
    }

    /// Picks the way after the first step: gathers when they took less time per unit of
    /// weight (and both were tried).
    fn choose(&mut self) {
        let [(loads_s, loads_w), (gathers_s, gathers_w)] = self.trial;
        self.chosen = loads_w > 0
            && gathers_w > 0
            && gathers_s * (loads_w as f64) < loads_s * (gathers_w as f64);
    }
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
    let (offsets, sources, out_degree) = graph.csr();
    let mut rank = vec![init; n];
    // `1 / out(v)` (0 without out-links), so that a step multiplies where it would divide,
    // and the first contributions `init · (1 / out(v))`, as `contribution` works them out.
    let (reciprocals, mut contrib): (Vec<f64>, Vec<C>) =
        out_degree.par_iter().map(|&o| (reciprocal(o), C::hold(contribution(init, o)))).unzip();
    let mut next = vec![C::default(); n];
    let mut dangling = out_degree.iter().filter(|&&o| o == 0).count() as f64 * init / nf;
    let gather = Gather::choose(graph, tiles);
    let bounds = gather.bounds();
    let longest = bounds.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    let mut stats = RunStats::default();
    let mut delta = f64::NAN;
    let mut way = Way::new(matches!(gather, Gather::Pull(_)) && C::can_gather(&contrib));
    for step in 0..config.iterations {
        let t = Instant::now();
        let (held, gather, way_now) = (&contrib, &gather, &way);
        let rule = Rule::new(&config, nf, dangling);
        let tally = cut(&mut rank, &bounds)
            .into_par_iter()
            .zip(cut(&mut next, &bounds))
            .zip(bounds[..bounds.len() - 1].par_iter().enumerate())
            .map_init(Vec::new, |sums, ((ranks, shares), (part, &first))| {
                let gathers = way_now.gathers(step, part);
                let clock = way_now.trying(step).then(Instant::now);
                let settle = |sum: f64, per_link: f64, r: &mut f64, s: &mut C| {
                    let new = rule.rank(sum);
                    let tally = Tally {
                        delta: (new - *r).abs(),
                        mass: if per_link == 0.0 { new } else { 0.0 },
                        changed: usize::from(new != *r),
                    };
                    *r = new;
                    *s = C::hold(new * per_link);
                    tally
                };
                let end = first + ranks.len();
                let outs = &reciprocals[first..end];
                let tally = match gather {
                    Gather::Pull(_) => {
                        let offsets = &offsets[first..=end];
                        let run = Pull { offsets, sources, outs, ranks, shares };
                        C::pull(held, run, settle, gathers)
                    }
                    Gather::Tiles(tiles) => {
                        sums.resize(longest, 0.0);
                        let sums = &mut sums[..ranks.len()];
                        tiles.sum_part(part, held, sums);
                        let mut tally = Tally::default();
                        for (((r, s), &sum), &out) in
                            ranks.iter_mut().zip(shares).zip(&*sums).zip(outs)
                        {
                            tally += settle(sum, out, r, s);
                        }
                        tally
                    }
                };
                let weight = (offsets[end] - offsets[first]) as usize + (end - first);
                (tally, clock.map(|c| (gathers, c.elapsed().as_secs_f64(), weight)))
            })
            .collect::<Vec<_>>()
            .into_iter()
            // Summed in part order: the same sums on any number of threads.
            .fold(Tally::default(), |mut a, (b, timed)| {
                if let Some((gathers, seconds, weight)) = timed {
                    way.timed(gathers, seconds, weight);
                }
                a += b;
                a
            });
        if way.trying(step) {
            way.choose();
        }
        let Tally { delta: step_delta, mass, changed } = tally;
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
mod tests;
