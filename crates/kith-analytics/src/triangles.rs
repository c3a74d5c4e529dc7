//! Triangle counting on an undirected graph. Vertices are renamed by rank (degree, then id)
//! and each keeps only its neighbours of higher rank: every triangle has exactly one lowest
//! corner, and on a power-law graph the lists stay short (at most √(2m)). For each vertex, its
//! list is marked in a per-thread bitmap (n bits: it stays in the core's cache where an array
//! of stamps would not), and every higher neighbour's own list is scanned for marks. Renaming
//! by rank also packs the hubs, which every list names, into the same few cache lines.

use std::sync::{Mutex, PoisonError};

use kith_graph::VertexId;

use crate::engine::{Context, InGraph, RunStats, VertexProgram, run};
use rayon::prelude::*;

/// A worker thread's bitmap and state in [`Oriented::for_each_triangle`], made on first use.
type Slot<S> = Mutex<Option<(Vec<u64>, S)>>;

/// The higher-rank neighbour lists, in rank names: `rank[v]` is `v`'s new name, and
/// `targets[offsets[r]..offsets[r + 1]]` are the (renamed) higher neighbours of the vertex
/// ranked `r`, unsorted.
struct Oriented {
    rank: Vec<VertexId>,
    offsets: Vec<usize>,
    targets: Vec<VertexId>,
}

impl Oriented {
    fn new(graph: &InGraph) -> Oriented {
        let n = graph.num_vertices();
        let mut by_rank: Vec<VertexId> = (0..n as VertexId).collect();
        by_rank.par_sort_unstable_by_key(|&v| (graph.in_links(v).len(), v));
        let mut rank = vec![0 as VertexId; n];
        for (r, &v) in by_rank.iter().enumerate() {
            rank[v as usize] = r as VertexId;
        }
        let counts: Vec<usize> = by_rank
            .par_iter()
            .enumerate()
            .map(|(r, &v)| {
                graph.in_links(v).iter().filter(|&&u| rank[u as usize] > r as VertexId).count()
            })
            .collect();
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0);
        for c in &counts {
            offsets.push(offsets[offsets.len() - 1] + c);
        }
        let rank_ref = &rank;
        let targets: Vec<VertexId> = by_rank
            .par_iter()
            .enumerate()
            .with_min_len(crate::engine::SUB_SHARD)
            .flat_map_iter(|(r, &v)| {
                graph
                    .in_links(v)
                    .iter()
                    .map(move |&u| rank_ref[u as usize])
                    .filter(move |&ru| ru > r as VertexId)
            })
            .collect();
        Oriented { rank, offsets, targets }
    }

    fn num_vertices(&self) -> usize {
        self.rank.len()
    }

    #[inline]
    fn higher(&self, r: usize) -> &[VertexId] {
        &self.targets[self.offsets[r]..self.offsets[r + 1]]
    }

    /// Runs `visit(r, u, w)` for every triangle `r < u < w` (rank names), vertex `r` by
    /// vertex on worker threads. Each worker thread has one `state` (from `init`) and one
    /// bitmap, made when it first gets work and taken by every piece of work it runs (pieces
    /// run one after another on a thread: a piece never yields to rayon), so a state is made
    /// once per thread rather than once per piece; the states are merged by `merge` at the
    /// end.
    fn for_each_triangle<S: Send>(
        &self,
        init: impl Fn() -> S + Sync + Send,
        visit: impl Fn(&mut S, usize, VertexId, VertexId) + Sync + Send,
        merge: impl Fn(S, S) -> S + Sync + Send,
    ) -> S {
        let n = self.num_vertices();
        let words = n.div_ceil(64);
        // One slot per worker, and a last one for work run outside the pool.
        let workers = rayon::current_num_threads();
        let slots: Vec<Slot<S>> = (0..=workers).map(|_| Mutex::new(None)).collect();
        (0..n).into_par_iter().with_min_len(256).for_each_init(
            || {
                let i = rayon::current_thread_index().filter(|&i| i < workers).unwrap_or(workers);
                slots[i].lock().unwrap_or_else(PoisonError::into_inner)
            },
            |slot, r| {
                let mine = self.higher(r);
                if mine.len() < 2 {
                    return;
                }
                let (marks, state) = slot.get_or_insert_with(|| (vec![0u64; words], init()));
                for &w in mine {
                    marks[w as usize / 64] |= 1 << (w % 64);
                }
                for &u in mine {
                    for &w in self.higher(u as usize) {
                        if marks[w as usize / 64] & (1 << (w % 64)) != 0 {
                            visit(state, r, u, w);
                        }
                    }
                }
                for &w in mine {
                    marks[w as usize / 64] = 0;
                }
            },
        );
        slots
            .into_iter()
            .filter_map(|slot| {
                slot.into_inner().unwrap_or_else(PoisonError::into_inner).map(|(_, s)| s)
            })
            .reduce(merge)
            .unwrap_or_else(init)
    }
}

/// Triangles in total, on an undirected graph (whose in-links are its neighbours): the
/// count alone, without [`triangles`]' per-vertex credits.
pub fn triangle_count(graph: &InGraph) -> u64 {
    let oriented = Oriented::new(graph);
    oriented.for_each_triangle(|| 0u64, |total, _, _, _| *total += 1, |a, b| a + b)
}

/// Triangles through each vertex (by id) and in total, on an undirected graph (whose
/// in-links are its neighbours). Every triangle `r < u < w` found is credited to all three
/// corners in per-thread counts (in rank names, one array per worker thread) that are summed
/// at the end.
pub fn triangles(graph: &InGraph) -> (Vec<u64>, u64) {
    let n = graph.num_vertices();
    let oriented = Oriented::new(graph);
    let (by_rank, total) = oriented.for_each_triangle(
        || (vec![0u64; n], 0u64),
        |(per, total), r, u, w| {
            per[r] += 1;
            per[u as usize] += 1;
            per[w as usize] += 1;
            *total += 1;
        },
        |(mut a, ta), (b, tb)| {
            a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
            (a, ta + tb)
        },
    );
    let per = oriented.rank.par_iter().map(|&r| by_rank[r as usize]).collect();
    (per, total)
}

/// Brute force over every pair of neighbours (the verifier; small graphs).
pub fn triangles_sequential(graph: &InGraph) -> Vec<u64> {
    let n = graph.num_vertices();
    let mut per = vec![0u64; n];
    for v in 0..n as VertexId {
        let nb = graph.in_links(v);
        for (i, &a) in nb.iter().enumerate() {
            for &b in &nb[i + 1..] {
                if graph.in_links(a).binary_search(&b).is_ok() {
                    per[v as usize] += 1;
                }
            }
        }
    }
    per
}

/// A vertex's value in the list-valued triangle program: its friend list, published before
/// step 0, then its count.
#[derive(Clone, Debug)]
enum TriangleValue {
    Friends(Vec<VertexId>),
    Count(u64),
}

struct ListProgram;

impl VertexProgram for ListProgram {
    type Value = TriangleValue;

    fn init(&self, v: VertexId, graph: &InGraph) -> TriangleValue {
        TriangleValue::Friends(graph.in_links(v).to_vec())
    }

    fn compute(&self, ctx: &Context<'_, TriangleValue>) -> Option<TriangleValue> {
        let TriangleValue::Friends(own) = ctx.own() else { return None };
        // Each triangle through v is seen from both of its other corners.
        let twice: usize = ctx
            .in_links()
            .iter()
            .map(|&u| match ctx.value(u) {
                TriangleValue::Friends(theirs) => kith_graph::intersection_size(own, theirs),
                TriangleValue::Count(_) => 0,
            })
            .sum();
        Some(TriangleValue::Count(twice as u64 / 2))
    }

    fn after_step(
        &mut self,
        _: usize,
        _: &[TriangleValue],
        _: &[TriangleValue],
        _: &[bool],
    ) -> bool {
        true
    }
}

/// Triangles through each vertex by LFGraph's list-valued vertex program: every vertex
/// publishes its friend list, then counts `½ Σ |N(v) ∩ N(u)|` over its friends `u`. Twice the
/// intersections of [`triangles`], but only a vertex's own value is written, so it runs
/// distributed unchanged.
pub fn triangles_vertex_program(graph: &InGraph) -> (Vec<u64>, RunStats) {
    let (values, stats) = run(graph, &mut ListProgram, 1);
    let counts = values
        .into_iter()
        .map(|value| match value {
            TriangleValue::Count(c) => c,
            TriangleValue::Friends(_) => 0,
        })
        .collect();
    (counts, stats)
}
