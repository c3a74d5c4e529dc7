//! LFGraph's vertex-program model: a vertex reads its in-neighbours' values and writes its
//! own. Only in-neighbours are stored. Every value has two versions: the real one, read
//! during a step, and a shadow one, written during it. So a step needs no locks: a compute
//! phase writes shadows and changed flags, sub-shard by sub-shard on worker threads, and a
//! separate exchange phase makes the changed shadows real. That separation is what lets a
//! distributed engine put its communication between the two phases.

use std::time::Instant;

use kith_graph::{Graph, VertexId};
use rayon::prelude::*;

/// Vertices per sub-shard (a unit of work for one worker thread).
pub const SUB_SHARD: usize = 4096;

/// The graph as vertex programs see it: in-neighbours and out-degrees only.
#[derive(Clone, Debug)]
pub struct InGraph {
    offsets: Vec<u64>,
    sources: Vec<VertexId>,
    out_degree: Vec<u32>,
    ids: Vec<u64>,
    /// Edge weights aligned with `sources`, when the graph is weighted.
    weights: Option<Vec<f64>>,
    /// Whether every in-link `u → v` has its reverse `v → u` (an undirected graph): the
    /// in-links are then the out-links too.
    symmetric: bool,
}

impl InGraph {
    /// In-links and out-degrees of `graph` (for an undirected graph both are its edges).
    pub fn new(graph: &Graph) -> InGraph {
        let inc = graph.in_csr();
        let out = graph.out_csr();
        InGraph {
            offsets: inc.offsets().to_vec(),
            sources: inc.targets().to_vec(),
            out_degree: (0..graph.num_nodes() as VertexId).map(|v| out.degree(v) as u32).collect(),
            ids: graph.original_ids().to_vec(),
            weights: None,
            symmetric: !graph.is_directed(),
        }
    }

    /// An in-link graph from its arrays: `offsets` (n + 1 entries from 0; vertex `v`'s
    /// in-links are `sources[offsets[v]..offsets[v + 1]]`, ascending), each vertex's
    /// out-degree and original id. A vertex may have no in-links stored although it has
    /// some in the graph: one process of a partitioned run holds only its own vertices'.
    ///
    /// # Panics
    /// When the lengths disagree.
    pub fn from_csr(
        offsets: Vec<u64>,
        sources: Vec<VertexId>,
        out_degree: Vec<u32>,
        ids: Vec<u64>,
        symmetric: bool,
    ) -> InGraph {
        let n = out_degree.len();
        assert_eq!(offsets.len(), n + 1, "one offset per vertex and one more");
        assert_eq!(offsets[n], sources.len() as u64, "the last offset ends the in-links");
        assert_eq!(ids.len(), n, "one original id per vertex");
        InGraph { offsets, sources, out_degree, ids, weights: None, symmetric }
    }

    /// The same graph with a weight on every in-link: `weights` is aligned with the in-link
    /// entries (vertex by vertex, in [`InGraph::in_links`] order).
    ///
    /// # Panics
    /// When `weights` has not one entry per in-link.
    pub fn with_weights(mut self, weights: Vec<f64>) -> InGraph {
        assert_eq!(weights.len(), self.sources.len(), "one weight per in-link");
        self.weights = Some(weights);
        self
    }

    /// The same graph with vertex `order[i]` renamed `i` (graph reordering for locality:
    /// with a layout that places friends together, in-neighbours' values sit together too).
    /// `order` must be a permutation of the vertices.
    pub fn relabel(&self, order: &[VertexId]) -> InGraph {
        let n = self.num_vertices();
        assert_eq!(order.len(), n, "relabel needs a permutation of all vertices");
        let mut position = vec![0 as VertexId; n];
        for (p, &v) in order.iter().enumerate() {
            position[v as usize] = p as VertexId;
        }
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0u64);
        for &v in order {
            offsets.push(offsets[offsets.len() - 1] + self.in_links(v).len() as u64);
        }
        // Blocks of new ids fill their stretch of the arrays on worker threads; each list is
        // renamed and sorted again (weights follow their links).
        let blocks: Vec<(Vec<VertexId>, Vec<f64>)> = order
            .par_chunks(SUB_SHARD)
            .map(|block| {
                let mut sources = Vec::new();
                let mut weights = Vec::new();
                let mut pairs: Vec<(VertexId, f64)> = Vec::new();
                for &v in block {
                    let start = sources.len();
                    sources.extend(self.in_links(v).iter().map(|&u| position[u as usize]));
                    match self.in_weights(v) {
                        None => sources[start..].sort_unstable(),
                        Some(w) => {
                            pairs.clear();
                            pairs.extend(sources[start..].iter().copied().zip(w.iter().copied()));
                            pairs.sort_unstable_by_key(|p| p.0);
                            for (slot, &(u, _)) in sources[start..].iter_mut().zip(&pairs) {
                                *slot = u;
                            }
                            weights.extend(pairs.iter().map(|p| p.1));
                        }
                    }
                }
                (sources, weights)
            })
            .collect();
        let mut sources = Vec::with_capacity(self.sources.len());
        let mut weights = self.weights.as_ref().map(|_| Vec::with_capacity(self.sources.len()));
        for (s, w) in blocks {
            sources.extend_from_slice(&s);
            if let Some(all) = &mut weights {
                all.extend_from_slice(&w);
            }
        }
        InGraph {
            offsets,
            sources,
            out_degree: order.iter().map(|&v| self.out_degree[v as usize]).collect(),
            ids: order.iter().map(|&v| self.ids[v as usize]).collect(),
            weights,
            symmetric: self.symmetric,
        }
    }

    /// The vertices by in-degree, highest first (ties by id): as an order for
    /// [`InGraph::relabel`], it packs the values most read into the fewest cache lines (on an
    /// undirected graph; on a directed one a vertex's value is read once per out-link).
    pub fn degree_order(&self) -> Vec<VertexId> {
        let mut order: Vec<VertexId> = (0..self.num_vertices() as VertexId).collect();
        order.par_sort_unstable_by_key(|&v| (std::cmp::Reverse(self.in_links(v).len()), v));
        order
    }

    /// Vertices.
    pub fn num_vertices(&self) -> usize {
        self.out_degree.len()
    }

    /// In-links (stored entries).
    pub fn num_in_links(&self) -> usize {
        self.sources.len()
    }

    /// The sources of `v`'s in-links, ascending.
    #[inline]
    pub fn in_links(&self, v: VertexId) -> &[VertexId] {
        &self.sources[self.offsets[v as usize] as usize..self.offsets[v as usize + 1] as usize]
    }

    /// The weights of `v`'s in-links, aligned with [`InGraph::in_links`] (`None` when the
    /// graph is unweighted).
    #[inline]
    pub fn in_weights(&self, v: VertexId) -> Option<&[f64]> {
        let range = self.offsets[v as usize] as usize..self.offsets[v as usize + 1] as usize;
        self.weights.as_ref().map(|w| &w[range])
    }

    /// Whether the in-links are the out-links too (an undirected graph).
    pub fn is_symmetric(&self) -> bool {
        self.symmetric
    }

    /// Whether the in-links carry weights.
    pub fn is_weighted(&self) -> bool {
        self.weights.is_some()
    }

    /// `v`'s out-degree.
    #[inline]
    pub fn out_degree(&self, v: VertexId) -> u32 {
        self.out_degree[v as usize]
    }

    /// The in-link CSR and the out-degrees, whole: `offsets` (n + 1 entries), `sources`
    /// (vertex `v`'s in-links are `sources[offsets[v]..offsets[v + 1]]`), `out_degree`. For
    /// kernels that walk runs of vertices without a lookup per vertex.
    pub(crate) fn csr(&self) -> (&[u64], &[VertexId], &[u32]) {
        (&self.offsets, &self.sources, &self.out_degree)
    }

    /// Original ids by dense id.
    pub fn original_ids(&self) -> &[u64] {
        &self.ids
    }
}

/// What a vertex sees during a step: LFGraph's Table 2.
#[derive(Debug)]
pub struct Context<'a, V> {
    vertex: VertexId,
    step: usize,
    graph: &'a InGraph,
    real: &'a [V],
    changed: &'a [bool],
}

impl<'a, V> Context<'a, V> {
    /// This vertex.
    #[inline]
    pub fn vertex(&self) -> VertexId {
        self.vertex
    }

    /// The step number, from 0.
    #[inline]
    pub fn step(&self) -> usize {
        self.step
    }

    /// The sources of this vertex's in-links.
    #[inline]
    pub fn in_links(&self) -> &'a [VertexId] {
        self.graph.in_links(self.vertex)
    }

    /// The in-links whose source changed in the previous step (all of them in step 0).
    #[inline]
    pub fn changed_in_links(&self) -> impl Iterator<Item = VertexId> + 'a {
        let changed = self.changed;
        self.in_links().iter().copied().filter(move |&u| changed[u as usize])
    }

    /// The in-links whose source changed in the previous step, with their weights (1 on an
    /// unweighted graph).
    #[inline]
    pub fn changed_weighted_in_links(&self) -> impl Iterator<Item = (VertexId, f64)> + 'a {
        let changed = self.changed;
        let weights = self.graph.in_weights(self.vertex);
        self.in_links()
            .iter()
            .enumerate()
            .filter(move |&(_, &u)| changed[u as usize])
            .map(move |(i, &u)| (u, weights.map_or(1.0, |w| w[i])))
    }

    /// The (real) value of a vertex.
    #[inline]
    pub fn value(&self, u: VertexId) -> &'a V {
        &self.real[u as usize]
    }

    /// This vertex's own value.
    #[inline]
    pub fn own(&self) -> &'a V {
        &self.real[self.vertex as usize]
    }
}

/// A vertex program.
pub trait VertexProgram: Sync {
    /// The value of a vertex (fixed-size like `f64` and `u32`, or variable like `Vec<u32>`).
    type Value: Clone + Send + Sync;

    /// The value before step 0.
    fn init(&self, v: VertexId, graph: &InGraph) -> Self::Value;

    /// This step's value of `ctx.vertex()`: `Some` to put a new value (the vertex changed),
    /// `None` to keep the old one.
    fn compute(&self, ctx: &Context<'_, Self::Value>) -> Option<Self::Value>;

    /// Before each step: global aggregates (e.g. PageRank's dangling mass).
    fn before_step(&mut self, _step: usize, _graph: &InGraph, _values: &[Self::Value]) {}

    /// After each step's exchange: `previous[v]` is `v`'s value before the step where
    /// `changed[v]`. Returns whether to stop (e.g. converged within a tolerance).
    fn after_step(
        &mut self,
        _step: usize,
        _values: &[Self::Value],
        _previous: &[Self::Value],
        _changed: &[bool],
    ) -> bool {
        false
    }
}

/// What a run did.
#[derive(Clone, Debug, Default)]
pub struct RunStats {
    /// Steps run.
    pub steps: usize,
    /// Vertices that changed in each step.
    pub changed: Vec<usize>,
    /// Seconds in compute phases.
    pub compute_s: f64,
    /// Seconds in exchange phases.
    pub exchange_s: f64,
    /// Wall seconds of all steps: compute and exchange phases and the program's hooks
    /// (global aggregates, convergence tests).
    pub steps_s: f64,
}

/// Runs `program` for at most `max_steps` steps, or until no value changes (or the program
/// says stop), on the current rayon pool. Returns the values by dense id.
pub fn run<P: VertexProgram>(
    graph: &InGraph,
    program: &mut P,
    max_steps: usize,
) -> (Vec<P::Value>, RunStats) {
    let n = graph.num_vertices();
    let mut real: Vec<P::Value> =
        (0..n as VertexId).into_par_iter().map(|v| program.init(v, graph)).collect();
    let mut shadow = real.clone();
    let mut changed = vec![true; n];
    let mut next = vec![false; n];
    let mut stats = RunStats::default();
    let start = Instant::now();
    for step in 0..max_steps {
        program.before_step(step, graph, &real);
        let t = Instant::now();
        {
            let (program, real_ref, changed_ref) = (&*program, &real, &changed);
            shadow
                .par_chunks_mut(SUB_SHARD)
                .zip(next.par_chunks_mut(SUB_SHARD))
                .enumerate()
                .for_each(|(shard, (shadow, next))| {
                    for (j, (slot, flag)) in shadow.iter_mut().zip(next.iter_mut()).enumerate() {
                        let vertex = (shard * SUB_SHARD + j) as VertexId;
                        let ctx =
                            Context { vertex, step, graph, real: real_ref, changed: changed_ref };
                        match program.compute(&ctx) {
                            Some(value) => {
                                *slot = value;
                                *flag = true;
                            }
                            None => *flag = false,
                        }
                    }
                });
        }
        stats.compute_s += t.elapsed().as_secs_f64();
        let t = Instant::now();
        // Exchange: changed shadows become real; the old values stay in the shadows.
        real.par_chunks_mut(SUB_SHARD)
            .zip(shadow.par_chunks_mut(SUB_SHARD))
            .zip(next.par_chunks(SUB_SHARD))
            .for_each(|((real, shadow), next)| {
                for ((r, s), &c) in real.iter_mut().zip(shadow.iter_mut()).zip(next) {
                    if c {
                        std::mem::swap(r, s);
                    }
                }
            });
        std::mem::swap(&mut changed, &mut next);
        stats.exchange_s += t.elapsed().as_secs_f64();
        let count = changed.par_iter().filter(|&&c| c).count();
        stats.changed.push(count);
        stats.steps = step + 1;
        let stop = program.after_step(step, &real, &shadow, &changed);
        if stop || count == 0 {
            break;
        }
    }
    stats.steps_s = start.elapsed().as_secs_f64();
    (real, stats)
}
