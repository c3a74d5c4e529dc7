//! One worker's part of the graph under hash partitioning: its own vertices' in-links only,
//! with every in-neighbour given a slot (its own vertices first, then replicas of remote
//! in-neighbours), and the subscribe lists that say which remote values it needs; and the
//! whole graph as a process's workers share it until each has built its part.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use kith_analytics::InGraph;
use kith_graph::VertexId;
use serde::{Deserialize, Serialize};

/// The worker that owns vertex `v` among `workers`: a multiplicative (Fibonacci) hash of
/// the dense id mapped onto `0..workers` by its high bits, so placement looks random and
/// does not follow id order (LFGraph's hash partitioning).
#[inline]
pub fn owner(v: VertexId, workers: usize) -> usize {
    owner_of_key(u64::from(v), workers)
}

/// The worker that owns a MapReduce key: the same hash, so a vertex's key lives with the
/// vertex.
#[inline]
pub(crate) fn owner_of_key(key: u64, workers: usize) -> usize {
    let h = key.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((u128::from(h) * workers as u128) >> 64) as usize
}

/// How values travel between workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ExchangeMode {
    /// LFGraph's: a changed value goes once to each worker that subscribed to it.
    FetchOnce,
    /// Pregel without combiners: a changed value goes once per cross-worker edge.
    PerEdge,
}

impl ExchangeMode {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            ExchangeMode::FetchOnce => "fetch-once",
            ExchangeMode::PerEdge => "per-edge",
        }
    }
}

/// A worker's vertices and their in-links, by slot.
#[derive(Debug)]
pub struct Part {
    /// Slots `0..locals` are this worker's vertices (ascending global id).
    locals: usize,
    /// The global dense id of every slot.
    globals: Vec<VertexId>,
    /// In-link offsets of the local slots.
    offsets: Vec<u64>,
    /// In-link sources, as slots, in the global graph's order (ascending global id).
    sources: Vec<u32>,
    weights: Option<Vec<f64>>,
    /// Out-degree in the whole graph of every slot's vertex.
    out_degree: Vec<u32>,
    num_global: usize,
}

/// What a worker needs from the others, by owning worker: the global ids it subscribes to,
/// in the order their values will arrive, and the slot each position fills.
#[derive(Debug, Default)]
pub(crate) struct Subscriptions {
    pub(crate) wanted: Vec<Vec<VertexId>>,
    pub(crate) slots: Vec<Vec<u32>>,
}

impl Part {
    /// Worker `me`'s part of `graph` among `workers`. Fetch-once subscribes to each remote
    /// in-neighbour once; per-edge once per cross-worker in-link.
    pub(crate) fn build(
        graph: &InGraph,
        me: usize,
        workers: usize,
        mode: ExchangeMode,
    ) -> (Part, Subscriptions) {
        let n = graph.num_vertices();
        let mut slot_of = vec![u32::MAX; n];
        let mut globals: Vec<VertexId> =
            (0..n as VertexId).filter(|&v| owner(v, workers) == me).collect();
        for (slot, &g) in globals.iter().enumerate() {
            slot_of[g as usize] = slot as u32;
        }
        let locals = globals.len();
        let mut subs =
            Subscriptions { wanted: vec![Vec::new(); workers], slots: vec![Vec::new(); workers] };
        let mut offsets = Vec::with_capacity(locals + 1);
        offsets.push(0u64);
        // Sized exactly: grown by doubling, the largest array of a part would briefly take
        // three times its size (the old and the new buffer), which set the peak.
        let links: usize = globals.iter().map(|&v| graph.in_links(v).len()).sum();
        let mut sources = Vec::with_capacity(links);
        let mut weights = graph.is_weighted().then(|| Vec::with_capacity(links));
        for i in 0..locals {
            let v = globals[i];
            for &u in graph.in_links(v) {
                let mut slot = slot_of[u as usize];
                let fresh = slot == u32::MAX;
                if fresh {
                    slot = globals.len() as u32;
                    slot_of[u as usize] = slot;
                    globals.push(u);
                }
                let from = owner(u, workers);
                if from != me && (fresh || mode == ExchangeMode::PerEdge) {
                    subs.wanted[from].push(u);
                    subs.slots[from].push(slot);
                }
                sources.push(slot);
            }
            if let (Some(all), Some(w)) = (&mut weights, graph.in_weights(v)) {
                all.extend_from_slice(w);
            }
            offsets.push(sources.len() as u64);
        }
        let out_degree = globals.iter().map(|&g| graph.out_degree(g)).collect();
        let part = Part { locals, globals, offsets, sources, weights, out_degree, num_global: n };
        (part, subs)
    }

    /// This worker's own vertices (slots `0..locals()`).
    #[inline]
    pub fn locals(&self) -> usize {
        self.locals
    }

    /// The slot of one of this worker's own vertices, by global id (own vertices are
    /// ascending, so a binary search finds it).
    pub fn local_slot(&self, global: VertexId) -> Option<u32> {
        self.globals[..self.locals].binary_search(&global).ok().map(|s| s as u32)
    }

    /// Slots: own vertices and replicas.
    #[inline]
    pub fn slots(&self) -> usize {
        self.globals.len()
    }

    /// The global dense id of a slot.
    #[inline]
    pub fn global(&self, slot: u32) -> VertexId {
        self.globals[slot as usize]
    }

    /// The in-links of a local slot, as slots, in ascending global id.
    #[inline]
    pub fn in_links(&self, slot: u32) -> &[u32] {
        &self.sources
            [self.offsets[slot as usize] as usize..self.offsets[slot as usize + 1] as usize]
    }

    /// The weights of a local slot's in-links (`None` when unweighted).
    #[inline]
    pub fn in_weights(&self, slot: u32) -> Option<&[f64]> {
        let range = self.offsets[slot as usize] as usize..self.offsets[slot as usize + 1] as usize;
        self.weights.as_ref().map(|w| &w[range])
    }

    /// In-links stored by this worker.
    pub fn num_in_links(&self) -> usize {
        self.sources.len()
    }

    /// The whole-graph out-degree of a slot's vertex.
    #[inline]
    pub fn out_degree(&self, slot: u32) -> u32 {
        self.out_degree[slot as usize]
    }

    /// Vertices in the whole graph.
    #[inline]
    pub fn num_global(&self) -> usize {
        self.num_global
    }
}

/// The loaded graph, shared by this process's workers until each has built its part.
pub(crate) struct Shared {
    graph: Mutex<Option<Arc<InGraph>>>,
    remaining: AtomicUsize,
}

impl Shared {
    /// `graph`, to be taken by each of `workers` workers once.
    pub(crate) fn new(graph: Arc<InGraph>, workers: usize) -> Shared {
        Shared { graph: Mutex::new(Some(graph)), remaining: AtomicUsize::new(workers) }
    }

    pub(crate) fn take(&self) -> Arc<InGraph> {
        let graph = self.graph.lock().expect("graph lock").clone();
        graph.expect("every worker takes the graph once")
    }

    /// Called by each worker once its part is built: the last one drops the process's copy.
    pub(crate) fn release(&self) {
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.graph.lock().expect("graph lock").take();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_balanced_and_in_range() {
        for workers in [1, 2, 3, 8, 256] {
            let mut counts = vec![0usize; workers];
            for v in 0..100_000 {
                counts[owner(v, workers)] += 1;
            }
            let mean = 100_000 / workers;
            for c in counts {
                assert!(c.abs_diff(mean) < mean / 10 + 50, "{workers} workers: {c} vs {mean}");
            }
        }
    }
}
