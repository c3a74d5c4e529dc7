//! Single-source shortest paths as vertex programs: in hops (a vertex's distance is one
//! more than the smallest distance among its changed in-neighbours) and weighted (the
//! smallest distance plus link weight).

use std::collections::VecDeque;

use kith_graph::VertexId;

use crate::engine::{Context, InGraph, RunStats, VertexProgram, run};
use crate::error::{Error, Result};

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
        next_hops(*ctx.own(), ctx.changed_in_links().map(|u| *ctx.value(u)))
    }
}

/// A vertex's new hop distance from its own and its changed in-neighbours' distances:
/// `Some` when one more than the nearest is shorter than its own.
#[inline]
pub fn next_hops(own: u32, changed: impl Iterator<Item = u32>) -> Option<u32> {
    let best = changed.filter(|&d| d != UNREACHABLE).min().map_or(UNREACHABLE, |d| d + 1);
    (best < own).then_some(best)
}

/// A vertex's new weighted distance from its own and its changed in-neighbours'
/// `(distance, link weight)`: `Some` when shorter.
#[inline]
pub fn next_distance(own: f64, changed: impl Iterator<Item = (f64, f64)>) -> Option<f64> {
    let best = changed.map(|(d, w)| d + w).fold(f64::INFINITY, f64::min);
    (best < own).then_some(best)
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

struct Distances {
    source: VertexId,
}

impl VertexProgram for Distances {
    type Value = f64;

    fn init(&self, v: VertexId, _: &InGraph) -> f64 {
        if v == self.source { 0.0 } else { f64::INFINITY }
    }

    fn compute(&self, ctx: &Context<'_, f64>) -> Option<f64> {
        next_distance(*ctx.own(), ctx.changed_weighted_in_links().map(|(u, w)| (*ctx.value(u), w)))
    }
}

/// Weighted distances from `source` along edge direction (`f64::INFINITY` when
/// unreachable): a vertex takes the smallest `distance(u) + weight(u, v)` over its changed
/// in-neighbours, until nothing changes (Bellman–Ford, a step per relaxation round). An
/// unweighted graph gives hop counts.
///
/// # Errors
/// A negative weight (the fixed point would not be a shortest path).
pub fn sssp_weighted(graph: &InGraph, source: VertexId) -> Result<(Vec<f64>, RunStats)> {
    check_weights(graph)?;
    Ok(run(graph, &mut Distances { source }, usize::MAX))
}

fn check_weights(graph: &InGraph) -> Result<()> {
    for v in 0..graph.num_vertices() as VertexId {
        let Some(weights) = graph.in_weights(v) else { return Ok(()) };
        if let Some((i, w)) = weights.iter().enumerate().find(|(_, w)| w.is_nan() || **w < 0.0) {
            let ids = graph.original_ids();
            return Err(Error::InvalidArgument(format!(
                "weight {w} on edge {} -> {}: shortest paths need weights >= 0",
                ids[graph.in_links(v)[i] as usize],
                ids[v as usize]
            )));
        }
    }
    Ok(())
}

/// Dijkstra's algorithm over out-links rebuilt from the weighted in-links (the verifier).
///
/// # Errors
/// A negative weight.
pub fn sssp_weighted_sequential(graph: &InGraph, source: VertexId) -> Result<Vec<f64>> {
    check_weights(graph)?;
    let n = graph.num_vertices();
    let mut out: Vec<Vec<(VertexId, f64)>> = vec![Vec::new(); n];
    for v in 0..n as VertexId {
        let weights = graph.in_weights(v);
        for (i, &u) in graph.in_links(v).iter().enumerate() {
            out[u as usize].push((v, weights.map_or(1.0, |w| w[i])));
        }
    }
    #[derive(PartialEq)]
    struct Entry(f64, VertexId);
    impl Eq for Entry {}
    impl PartialOrd for Entry {
        fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
            Some(self.cmp(other))
        }
    }
    impl Ord for Entry {
        fn cmp(&self, other: &Self) -> std::cmp::Ordering {
            // A min-heap on distance.
            other.0.total_cmp(&self.0).then(other.1.cmp(&self.1))
        }
    }
    let mut dist = vec![f64::INFINITY; n];
    dist[source as usize] = 0.0;
    let mut heap = std::collections::BinaryHeap::from([Entry(0.0, source)]);
    while let Some(Entry(d, u)) = heap.pop() {
        if d > dist[u as usize] {
            continue;
        }
        for &(v, w) in &out[u as usize] {
            let nd = d + w;
            if nd < dist[v as usize] {
                dist[v as usize] = nd;
                heap.push(Entry(nd, v));
            }
        }
    }
    Ok(dist)
}
