//! Single-source shortest paths in hops, as a vertex program: a vertex's distance is one
//! more than the smallest distance among its changed in-neighbours.

use std::collections::VecDeque;

use kith_graph::VertexId;

use crate::engine::{Context, InGraph, RunStats, VertexProgram, run};

/// The distance of an unreachable vertex.
pub const UNREACHABLE: u32 = u32::MAX;

struct Hops {
    source: VertexId,
}

impl VertexProgram for Hops {
    type Value = u32;

    fn init(&self, v: VertexId, _: &InGraph) -> u32 {
        if v == self.source { 0 } else { UNREACHABLE }
    }

    fn compute(&self, ctx: &Context<'_, u32>) -> Option<u32> {
        let own = *ctx.own();
        let best = ctx
            .changed_in_links()
            .map(|u| *ctx.value(u))
            .filter(|&d| d != UNREACHABLE)
            .min()
            .map_or(UNREACHABLE, |d| d + 1);
        (best < own).then_some(best)
    }
}

/// Hop distances from `source` along edge direction.
pub fn sssp(graph: &InGraph, source: VertexId) -> (Vec<u32>, RunStats) {
    run(graph, &mut Hops { source }, usize::MAX)
}

/// Breadth-first search over out-links rebuilt from the in-links (the verifier).
pub fn sssp_sequential(graph: &InGraph, source: VertexId) -> Vec<u32> {
    let n = graph.num_vertices();
    let mut out: Vec<Vec<VertexId>> = vec![Vec::new(); n];
    for v in 0..n as VertexId {
        for &u in graph.in_links(v) {
            out[u as usize].push(v);
        }
    }
    let mut dist = vec![UNREACHABLE; n];
    dist[source as usize] = 0;
    let mut queue = VecDeque::from([source]);
    while let Some(u) = queue.pop_front() {
        for &v in &out[u as usize] {
            if dist[v as usize] == UNREACHABLE {
                dist[v as usize] = dist[u as usize] + 1;
                queue.push_back(v);
            }
        }
    }
    dist
}
