//! Connected components: label propagation as a vertex program (each vertex takes the
//! smallest label among itself and its in-neighbours, until nothing changes), and a
//! union-find fast path.

use kith_graph::VertexId;

use crate::engine::{Context, InGraph, RunStats, VertexProgram, run};

struct MinLabel;

impl VertexProgram for MinLabel {
    type Value = u32;

    fn init(&self, v: VertexId, _: &InGraph) -> u32 {
        v
    }

    fn compute(&self, ctx: &Context<'_, u32>) -> Option<u32> {
        let own = *ctx.own();
        let best = ctx.changed_in_links().map(|u| *ctx.value(u)).min().unwrap_or(own);
        (best < own).then_some(best)
    }
}

/// Component labels by label propagation: the smallest dense id in the component. On a
/// directed graph, labels follow edge direction; give the undirected graph for weakly
/// connected components.
pub fn components_label_propagation(graph: &InGraph) -> (Vec<u32>, RunStats) {
    run(graph, &mut MinLabel, usize::MAX)
}

/// Component labels by union-find over an undirected graph's edges (the fast path and the
/// verifier): the smallest dense id in the component.
pub fn components_union_find(graph: &InGraph) -> Vec<u32> {
    let n = graph.num_vertices();
    let mut parent: Vec<u32> = (0..n as u32).collect();
    fn find(parent: &mut [u32], mut x: u32) -> u32 {
        while parent[x as usize] != x {
            parent[x as usize] = parent[parent[x as usize] as usize];
            x = parent[x as usize];
        }
        x
    }
    for v in 0..n as VertexId {
        for &u in graph.in_links(v) {
            let (a, b) = (find(&mut parent, u), find(&mut parent, v));
            if a != b {
                // The smaller root wins, so roots are component minima.
                let (lo, hi) = if a < b { (a, b) } else { (b, a) };
                parent[hi as usize] = lo;
            }
        }
    }
    (0..n as u32).map(|v| find(&mut parent, v)).collect()
}

/// Components and the size of the largest.
pub fn summarize(labels: &[u32]) -> (usize, usize) {
    let mut sizes = std::collections::HashMap::new();
    for &l in labels {
        *sizes.entry(l).or_insert(0usize) += 1;
    }
    (sizes.len(), sizes.values().copied().max().unwrap_or(0))
}
