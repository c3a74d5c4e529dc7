//! k-core decomposition: each vertex's core number, as a vertex program (the h-index
//! iteration: a vertex's estimate becomes the largest h such that h of its neighbours have
//! estimates of at least h, starting from its degree, until nothing changes) and by
//! Batagelj–Zaversnik peeling (the verifier). Undirected graphs.

use kith_graph::VertexId;

use crate::engine::{Context, InGraph, RunStats, VertexProgram, run};

struct HIndex;

impl VertexProgram for HIndex {
    type Value = u32;

    fn init(&self, v: VertexId, graph: &InGraph) -> u32 {
        graph.in_links(v).len() as u32
    }

    fn compute(&self, ctx: &Context<'_, u32>) -> Option<u32> {
        let own = *ctx.own();
        if ctx.step() > 0 && ctx.changed_in_links().next().is_none() {
            return None;
        }
        // Counts of neighbour estimates, capped at our own (which can only go down).
        let mut count = vec![0u32; own as usize + 1];
        for &u in ctx.in_links() {
            count[(*ctx.value(u)).min(own) as usize] += 1;
        }
        let mut at_least = 0u32;
        let mut h = own;
        while h > 0 {
            at_least += count[h as usize];
            if at_least >= h {
                break;
            }
            h -= 1;
        }
        (h < own).then_some(h)
    }
}

/// Core numbers by the h-index vertex program.
pub fn core_numbers(graph: &InGraph) -> (Vec<u32>, RunStats) {
    run(graph, &mut HIndex, usize::MAX)
}

/// Core numbers by peeling vertices in order of current degree (bucket queue).
pub fn core_numbers_sequential(graph: &InGraph) -> Vec<u32> {
    let n = graph.num_vertices();
    let mut degree: Vec<u32> = (0..n as VertexId).map(|v| graph.in_links(v).len() as u32).collect();
    let max = degree.iter().copied().max().unwrap_or(0) as usize;
    let mut buckets: Vec<Vec<VertexId>> = vec![Vec::new(); max + 1];
    for v in 0..n as VertexId {
        buckets[degree[v as usize] as usize].push(v);
    }
    let mut done = vec![false; n];
    let mut core = vec![0u32; n];
    let mut k = 0usize;
    while k <= max {
        let Some(v) = buckets[k].pop() else {
            k += 1;
            continue;
        };
        if done[v as usize] || degree[v as usize] as usize != k {
            continue;
        }
        done[v as usize] = true;
        core[v as usize] = k as u32;
        for &u in graph.in_links(v) {
            let d = &mut degree[u as usize];
            if !done[u as usize] && *d as usize > k {
                *d -= 1;
                buckets[*d as usize].push(u);
            }
        }
        // A neighbour may have dropped to k: look at bucket k again.
    }
    core
}
