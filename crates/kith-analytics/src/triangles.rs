//! Triangle counting on an undirected graph: each vertex keeps its neighbours of higher rank
//! (degree order, ties by id), and every triangle is found once as a merge intersection of
//! two such lists. Per-vertex counts credit all three corners.

use kith_graph::VertexId;

use crate::engine::{Context, InGraph, RunStats, VertexProgram, run};
use rayon::prelude::*;

/// Each vertex's neighbours of higher rank (degree, then id), as a CSR: every triangle has
/// exactly one lowest corner, and lists stay short on power-law graphs (at most √(2m)).
fn higher_neighbours(graph: &InGraph) -> (Vec<usize>, Vec<VertexId>) {
    let n = graph.num_vertices();
    let rank = |v: VertexId| (graph.in_links(v).len(), v);
    let counts: Vec<usize> = (0..n as VertexId)
        .into_par_iter()
        .map(|v| graph.in_links(v).iter().filter(|&&u| rank(u) > rank(v)).count())
        .collect();
    let mut offsets = Vec::with_capacity(n + 1);
    offsets.push(0);
    for c in &counts {
        offsets.push(offsets[offsets.len() - 1] + c);
    }
    let targets: Vec<VertexId> = (0..n as VertexId)
        .into_par_iter()
        .with_min_len(crate::engine::SUB_SHARD)
        .flat_map_iter(|v| graph.in_links(v).iter().copied().filter(move |&u| rank(u) > rank(v)))
        .collect();
    (offsets, targets)
}

/// Triangles through each vertex (by id) and in total, on an undirected graph (whose
/// in-links are its neighbours). For each vertex `v`, its higher neighbours are stamped in a
/// per-thread array, and each higher neighbour `u`'s own higher list is scanned for stamps:
/// every hit is a triangle `v < u < w`, credited to all three corners in per-thread counts
/// that are summed at the end.
pub fn triangles(graph: &InGraph) -> (Vec<u64>, u64) {
    let n = graph.num_vertices();
    let (offsets, targets) = higher_neighbours(graph);
    let higher = |v: usize| &targets[offsets[v]..offsets[v + 1]];
    struct Local {
        stamp: Vec<u32>,
        per: Vec<u64>,
        total: u64,
    }
    let result = (0..n)
        .into_par_iter()
        .with_min_len(crate::engine::SUB_SHARD)
        .fold(
            || Local { stamp: vec![u32::MAX; n], per: vec![0; n], total: 0 },
            |mut local, v| {
                let mine = higher(v);
                if mine.len() < 2 {
                    return local;
                }
                for &w in mine {
                    local.stamp[w as usize] = v as u32;
                }
                let mut at_v = 0u64;
                for &u in mine {
                    let mut at_u = 0u64;
                    for &w in higher(u as usize) {
                        if local.stamp[w as usize] == v as u32 {
                            local.per[w as usize] += 1;
                            at_u += 1;
                        }
                    }
                    local.per[u as usize] += at_u;
                    at_v += at_u;
                }
                local.per[v] += at_v;
                local.total += at_v;
                local
            },
        )
        .map(|local| (local.per, local.total))
        .reduce_with(|(mut a, ta), (b, tb)| {
            a.par_iter_mut().zip(b.par_iter()).for_each(|(x, y)| *x += y);
            (a, ta + tb)
        });
    result.unwrap_or_else(|| (vec![0; n], 0))
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
