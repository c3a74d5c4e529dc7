//! Layout files (one original id per line, plain or gzip) read for a fixed small graph: any
//! input gets a permutation of the graph's vertices or an error.

#![no_main]

use std::sync::OnceLock;

use kith_graph::Graph;
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

/// A ring of 64 vertices with original ids 1, 3, 5, ..., 127 (odd, so even ids are unknown).
fn graph() -> &'static Graph {
    static G: OnceLock<Graph> = OnceLock::new();
    G.get_or_init(|| {
        let ids: Vec<u64> = (0..64).map(|i| 2 * i + 1).collect();
        let edges = (0..64u32).map(|v| (v, (v + 1) % 64)).collect();
        Graph::from_edges(ids, false, edges)
    })
}

fuzz_target!(|data: &[u8]| {
    let path = common::write("layout.txt", data);
    let g = graph();
    if let Ok(layout) = kith_layout::read_layout(&path, g) {
        assert_eq!(layout.len(), g.num_nodes());
        let mut seen = vec![false; g.num_nodes()];
        for &v in layout.order() {
            assert!(!std::mem::replace(&mut seen[v as usize], true), "vertex {v} twice");
        }
    }
});
