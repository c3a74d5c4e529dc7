//! The fused step's pieces against their definitions.

use super::*;
use kith_graph::Graph;

/// A symmetric graph of `n` vertices: a path through all of them, and `k · n` edges
/// between vertices drawn below `below`.
fn graph(n: u32, k: u32, below: u32) -> InGraph {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % u64::from(below)) as u32
    };
    let random = (0..k * n).map(|_| (next(), next()));
    let edges = (1..n).map(|v| (v - 1, v)).chain(random).filter(|(a, b)| a != b).collect();
    InGraph::new(&Graph::from_edges((0..u64::from(n)).collect(), false, edges))
}

/// [`chunk_bounds`] as a pass over the vertices: the definition.
fn chunk_bounds_by_pass(graph: &InGraph, pieces: usize, most: usize, align: usize) -> Vec<usize> {
    let n = graph.num_vertices();
    let per = (graph.num_in_links() / pieces).max(CHUNK_LINKS);
    let mut bounds = vec![0];
    let mut links = 0;
    for v in 0..n {
        links += graph.in_links(v as VertexId).len() + 1;
        let aligned = (v + 1) % align == 0;
        if aligned && (links >= per || v + 1 - bounds[bounds.len() - 1] == most) {
            bounds.push(v + 1);
            links = 0;
        }
    }
    if bounds.last() != Some(&n) {
        bounds.push(n);
    }
    bounds
}

#[cfg(target_arch = "x86_64")]
#[test]
fn gathered_sums_equal_loaded_ones_bit_for_bit() {
    if !std::arch::is_x86_feature_detected!("avx512f") {
        eprintln!("no AVX-512F on this CPU: gathers are never used, nothing to compare");
        return;
    }
    let mut next = crate::tests::xorshift(7);
    // Contributions over many magnitudes, so that the order of the additions shows.
    let held: Vec<f32> = (0..5000)
        .map(|_| (next() % 1_000_000) as f32 * 2f32.powi((next() % 40) as i32 - 30))
        .collect();
    let sources: Vec<VertexId> = (0..3000).map(|_| (next() % 5000) as VertexId).collect();
    let mut lists = vec![];
    for len in 0..70 {
        lists.push((0, len));
        lists.push((sources.len() - len, len));
        for cut in 1..4 {
            lists.push((sources.len() - len - cut.min(sources.len() - len), len));
        }
        lists.push(((next() % 2900) as usize, len));
    }
    lists.push((0, sources.len()));
    for (start, len) in lists {
        let list = start..start + len;
        let loaded = sum_lanes(&sources[list.clone()], |u| held[u as usize]);
        // SAFETY: the CPU has AVX-512F, the list lies in `sources`, every source indexes
        // `held`, which is small.
        let gathered = unsafe { gather16::sum(&held, &sources, list.clone()) };
        assert_eq!(gathered.to_bits(), loaded.to_bits(), "{list:?}");
    }
}

#[test]
fn chunks_are_cut_as_a_pass_would_cut_them() {
    for (n, k, below) in [(1, 0, 1), (300, 2, 300), (5000, 3, 5000), (70_000, 4, 2000)] {
        let g = graph(n, k, below);
        for (pieces, most, align) in
            [(256, usize::MAX, 1), (32, BLOCK, ALIGN), (3, 512, 256), (1000, 7, 7), (64, 2, 1)]
        {
            let cut = chunk_bounds(&g, pieces, most, align);
            assert_eq!(
                cut,
                chunk_bounds_by_pass(&g, pieces, most, align),
                "{n} {pieces} {most} {align}"
            );
        }
    }
}

#[test]
fn large_graphs_gather_through_tiles_unless_their_sources_are_hot() {
    let n = 4 * TILES_ABOVE as u32;
    // Links to anywhere: three in four sources lie beyond the first TILES_ABOVE vertices.
    let spread = graph(n, 4, n);
    assert!(!hot_sources(&spread));
    assert!(matches!(Gather::choose(&spread, None), Gather::Tiles(_)));
    // Most links between hubs among the first 20,000 vertices (a graph ordered by
    // degree): their contributions stay in cache, so pulling wins.
    let hubs = graph(n, 6, 20_000);
    assert!(hot_sources(&hubs));
    assert!(matches!(Gather::choose(&hubs, None), Gather::Pull(_)));
    // The offset counts what a pass over the links would.
    for g in [&spread, &hubs] {
        let (offsets, sources, _) = g.csr();
        let counted = sources.iter().filter(|&&u| (u as usize) < TILES_ABOVE).count();
        assert_eq!(offsets[TILES_ABOVE] as usize, counted);
    }
    // Asking overrides the choice; small graphs pull.
    assert!(matches!(Gather::choose(&hubs, Some(true)), Gather::Tiles(_)));
    assert!(matches!(Gather::choose(&graph(5000, 3, 5000), None), Gather::Pull(_)));
}
