//! Triangle counting on an undirected graph: each vertex keeps its neighbours of higher rank
//! (degree order, ties by id), and every triangle is found once as a merge intersection of
//! two such lists. Per-vertex counts credit all three corners.

use std::sync::atomic::{AtomicU64, Ordering};

use kith_graph::VertexId;

use crate::engine::InGraph;
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
