//! Triangle counting on an undirected graph: each vertex keeps its neighbours of higher rank
//! (degree order, ties by id), and every triangle is found once as a merge intersection of
//! two such lists. Per-vertex counts credit all three corners.

use std::sync::atomic::{AtomicU64, Ordering};

use kith_graph::VertexId;

use crate::engine::{Context, InGraph, RunStats, VertexProgram, run};
use rayon::prelude::*;

/// Triangles through each vertex (by id) and in total, on an undirected graph (whose
/// in-links are its neighbours).
pub fn triangles(graph: &InGraph) -> (Vec<u64>, u64) {
    let n = graph.num_vertices();
    let rank = |v: VertexId| (graph.in_links(v).len(), v);
    let higher: Vec<Vec<VertexId>> = (0..n as VertexId)
        .into_par_iter()
        .map(|v| graph.in_links(v).iter().copied().filter(|&u| rank(u) > rank(v)).collect())
        .collect();
    let per: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(0)).collect();
    let total: u64 = (0..n)
        .into_par_iter()
        .map(|v| {
            let mut found = 0u64;
            for &u in &higher[v] {
                // Both lists ascend by id: merge.
                let a = &higher[v];
                kith_graph::for_each_common(a, &higher[u as usize], |i, _| {
                    for w in [v as u32, u, a[i]] {
                        per[w as usize].fetch_add(1, Ordering::Relaxed);
                    }
                    found += 1;
                });
            }
            found
        })
        .sum();
    (per.into_iter().map(AtomicU64::into_inner).collect(), total)
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
