//! Triangle counting on an undirected graph. Vertices are renamed by rank (degree, then id)
//! and each keeps only its neighbours of higher rank: every triangle has exactly one lowest
//! corner, and on a power-law graph the lists stay short (at most √(2m)). For each vertex, its
//! list is marked in a per-thread bitmap (n bits: it stays in the core's cache where an array
//! of stamps would not), and every higher neighbour's own list is scanned for marks. Renaming
//! by rank also packs the hubs, which every list names, into the same few cache lines.
//!
//! The scans are branch-free where the branch would be a coin toss (whether a neighbour
//! ranks higher, whether a scanned entry is marked), and fetch the lists they will scan a few
//! neighbours ahead.

use std::sync::{Mutex, PoisonError};

use kith_graph::VertexId;
use kith_graph::hint::prefetch;

use crate::engine::{Context, InGraph, RunStats, SUB_SHARD, VertexProgram, run};
use rayon::prelude::*;

/// A worker thread's bitmap and state in [`Oriented::for_each_triangle`], made on first use.
type Slot<S> = Mutex<Option<(Vec<u64>, S)>>;

/// How many neighbours ahead [`Oriented::for_each_triangle`] fetches a list's offsets (the
/// list itself half as far ahead, once its offsets are in).
const AHEAD: usize = 4;

/// The higher-rank neighbour lists, in rank names: `rank[v]` is `v`'s new name, and
/// `targets[offsets[r]..offsets[r + 1]]` are the (renamed) higher neighbours of the vertex
/// ranked `r`, unsorted. Every target is a rank, so less than the number of vertices.
struct Oriented {
    rank: Vec<VertexId>,
    offsets: Vec<usize>,
    targets: Vec<VertexId>,
}

impl Oriented {
    fn new(graph: &InGraph) -> Oriented {
        let n = graph.num_vertices();
        // Ranks by a counting sort on degree: stable, so ties keep id order.
        let degree = |v: usize| graph.in_links(v as VertexId).len();
        let max_degree = (0..n).map(degree).max().unwrap_or(0);
        let mut start = vec![0usize; max_degree + 2];
        for v in 0..n {
            start[degree(v) + 1] += 1;
        }
        for d in 1..start.len() {
            start[d] += start[d - 1];
        }
        let mut by_rank = vec![0 as VertexId; n];
        let mut rank = vec![0 as VertexId; n];
        for v in 0..n {
            let slot = &mut start[degree(v)];
            by_rank[*slot] = v as VertexId;
            rank[v] = *slot as VertexId;
            *slot += 1;
        }
        // Each block of consecutive ranks gathers its vertices' higher neighbours in one
        // pass (their lengths, and the lists end to end); the blocks are then laid end to end.
        let blocks: Vec<(Vec<u32>, Vec<VertexId>)> = (0..n.div_ceil(SUB_SHARD))
            .into_par_iter()
            .map(|b| {
                let ranks = b * SUB_SHARD..((b + 1) * SUB_SHARD).min(n);
                let mut lengths = Vec::with_capacity(ranks.len());
                let mut lists = Vec::new();
                for r in ranks {
                    // Every neighbour is written and only the higher ones kept.
                    let links = graph.in_links(by_rank[r]);
                    let start = lists.len();
                    lists.resize(start + links.len(), 0);
                    let out = &mut lists[start..];
                    let mut kept = 0;
                    for &u in links {
                        let ru = rank[u as usize];
                        out[kept] = ru;
                        kept += usize::from(ru as usize > r);
                    }
                    lists.truncate(start + kept);
                    lengths.push(kept as u32);
                }
                (lengths, lists)
            })
            .collect();
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0);
        let mut targets = Vec::with_capacity(blocks.iter().map(|(_, lists)| lists.len()).sum());
        for (lengths, lists) in &blocks {
            for &len in lengths {
                offsets.push(offsets[offsets.len() - 1] + len as usize);
            }
            targets.extend_from_slice(lists);
        }
        Oriented { rank, offsets, targets }
    }

    fn num_vertices(&self) -> usize {
        self.rank.len()
    }

    #[inline]
    fn higher(&self, r: usize) -> &[VertexId] {
        &self.targets[self.offsets[r]..self.offsets[r + 1]]
    }

    /// Finds every triangle `r < u < w` (rank names), vertex `r` by vertex on worker threads:
    /// for each `u` in `r`'s list, `third(state, w, hit)` runs for every `w` in `u`'s list
    /// (`hit` is 1 where `r`, `u`, `w` close a triangle, else 0: no branch on it), then
    /// `pair(state, r, u, found)` with the triangles found through the edge `r`–`u`, if any.
    ///
    /// Each worker thread has one `state` (from `init`) and one bitmap, made when it first
    /// gets work and taken by every piece of work it runs (pieces run one after another on a
    /// thread: a piece never yields to rayon), so a state is made once per thread rather than
    /// once per piece; the states are merged by `merge` at the end.
    fn for_each_triangle<S: Send>(
        &self,
        init: impl Fn() -> S + Sync + Send,
        third: impl Fn(&mut S, VertexId, u64) + Sync + Send,
        pair: impl Fn(&mut S, usize, VertexId, u64) + Sync + Send,
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
                for (i, &u) in mine.iter().enumerate() {
                    if let Some(&ahead) = mine.get(i + AHEAD) {
                        prefetch(self.offsets.get(ahead as usize));
                    }
                    if let Some(&near) = mine.get(i + AHEAD / 2) {
                        prefetch(self.targets.get(self.offsets[near as usize]));
                    }
                    let mut found = 0;
                    for &w in self.higher(u as usize) {
                        // SAFETY: `w` is a target, so a rank, less than `n`; `marks` has
                        // `n.div_ceil(64)` words.
                        let word = unsafe { *marks.get_unchecked(w as usize / 64) };
                        let hit = (word >> (w % 64)) & 1;
                        third(state, w, hit);
                        found += hit;
                    }
                    if found != 0 {
                        pair(state, r, u, found);
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
    oriented.for_each_triangle(
        || 0u64,
        |_, _, _| {},
        |total, _, _, found| *total += found,
        |a, b| a + b,
    )
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
        |(per, _), w, hit| per[w as usize] += hit,
        |(per, total), r, u, found| {
            per[r] += found;
            per[u as usize] += found;
            *total += found;
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
