//! The vertex programs against their sequential verifiers on seeded random graphs, and the
//! seeded generator other test modules share.

use kith_graph::Graph;

use super::*;

/// A seeded xorshift generator for test graphs.
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

fn random_graph(n: u32, m: usize, directed: bool, seed: u64) -> Graph {
    let mut next = xorshift(seed);
    let edges = (0..m)
        .map(|_| ((next() % u64::from(n)) as u32, (next() % u64::from(n)) as u32))
        .filter(|(a, b)| a != b)
        .collect();
    Graph::from_edges((0..u64::from(n)).collect(), directed, edges)
}

#[test]
fn programs_match_their_verifiers() {
    for (directed, seed) in [(false, 1), (true, 2), (false, 3), (true, 4)] {
        let g = random_graph(3000, 9000, directed, seed);
        let ig = InGraph::new(&g);
        for formulation in [Formulation::LfGraph, Formulation::Normalized] {
            let config = PageRankConfig { formulation, iterations: 15, ..Default::default() };
            let (pr, stats, _) = pagerank(&ig, config);
            let want = pagerank_sequential(&ig, config, stats.steps);
            let l1: f64 = pr.iter().zip(&want).map(|(a, b)| (a - b).abs()).sum();
            assert!(l1 < 1e-9, "{formulation:?} directed {directed}: {l1}");
            let (engine, engine_stats, _) = pagerank_vertex_program(&ig, config);
            assert_eq!(engine_stats.steps, stats.steps);
            let l1: f64 = pr.iter().zip(&engine).map(|(a, b)| (a - b).abs()).sum();
            assert!(l1 < 1e-12, "fused against the engine, {formulation:?}: {l1}");
            // f32 contributions: within their rounding of the exact ranks.
            let f32_config = PageRankConfig { precision: Precision::F32, ..config };
            let (pr32, _, _) = pagerank(&ig, f32_config);
            let l1: f64 = pr32.iter().zip(&want).map(|(a, b)| (a - b).abs()).sum();
            let scale: f64 = want.iter().sum();
            assert!(l1 > 0.0 && l1 < 1e-6 * scale, "f32, {formulation:?}: {l1} of {scale}");
            if formulation == Formulation::Normalized {
                assert!((pr.iter().sum::<f64>() - 1.0).abs() < 1e-9);
            }
        }
        let (dist, _) = sssp(&ig, 7);
        assert_eq!(dist, sssp_sequential(&ig, 7));
        // Unweighted, weighted distances are hop counts; with weights, Dijkstra's.
        let (hops, _) = sssp_weighted(&ig, 7).unwrap();
        let as_hops: Vec<u32> =
            hops.iter().map(|&d| if d.is_finite() { d as u32 } else { UNREACHABLE }).collect();
        assert_eq!(as_hops, dist);
        let w: Vec<f64> = (0..ig.num_in_links()).map(|i| ((i * 37) % 11) as f64 * 0.5).collect();
        let weighted = ig.clone().with_weights(w.clone());
        let (d, _) = sssp_weighted(&weighted, 7).unwrap();
        assert_eq!(d, sssp_weighted_sequential(&weighted, 7).unwrap());
        let mut negative = w;
        negative[5] = -1.0;
        let err = sssp_weighted(&ig.clone().with_weights(negative), 7).unwrap_err();
        assert!(err.to_string().contains("weights >= 0"), "{err}");
        if !directed {
            let (labels, _) = components_label_propagation(&ig);
            assert_eq!(labels, components_union_find(&ig));
            let (per, total) = triangles(&ig);
            assert_eq!(per, triangles_sequential(&ig));
            assert_eq!(triangle_count(&ig), total);
            assert_eq!(per, triangles_vertex_program(&ig).0);
            let (mf, _) = mutual_friends(&ig);
            assert_eq!(mf, mutual_friends_sequential(&ig));
            assert_eq!(mf.total(), 3 * total);
            for user in [0, 17, 2999] {
                assert_eq!(
                    people_you_may_know(&ig, user, 10),
                    people_you_may_know_sequential(&ig, user, 10)
                );
            }
            let (cores, _) = core_numbers(&ig);
            assert_eq!(cores, core_numbers_sequential(&ig));
            assert_eq!(per.iter().sum::<u64>(), 3 * total);
            // Relabelled by a permutation, every result is the same per original id.
            let order: Vec<u32> = (0..3000u32).map(|i| (i * 7919) % 3000).collect();
            let re = ig.relabel(&order);
            let (per_re, total_re) = triangles(&re);
            assert_eq!(total_re, total);
            for (p, &v) in order.iter().enumerate() {
                assert_eq!(per_re[p], per[v as usize]);
            }
            let wre = weighted.relabel(&order);
            let (d_re, _) =
                sssp_weighted(&wre, order.iter().position(|&v| v == 7).unwrap() as u32).unwrap();
            for (p, &v) in order.iter().enumerate() {
                assert_eq!(d_re[p], d[v as usize]);
            }
            let (pr_re, _, _) = pagerank(&re, PageRankConfig::default());
            let (pr, _, _) = pagerank(&ig, PageRankConfig::default());
            for (p, &v) in order.iter().enumerate() {
                assert!((pr_re[p] - pr[v as usize]).abs() < 1e-12);
            }
        }
    }
}

#[test]
fn tolerance_stops_early_and_threads_agree() {
    let g = random_graph(2000, 8000, false, 9);
    let ig = InGraph::new(&g);
    let config = PageRankConfig { iterations: 1000, tolerance: 1e-10, ..Default::default() };
    let (a, stats, delta) = pagerank(&ig, config);
    assert!(stats.steps < 1000 && delta < 1e-10, "{} steps, delta {delta}", stats.steps);
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let (b, _, _) = one.install(|| pagerank(&ig, config));
    assert_eq!(a, b);
    // A graph of many chunks: the same ranks, bit for bit, on 1 and 3 threads.
    let ig = InGraph::new(&random_graph(40_000, 400_000, true, 10));
    let config = PageRankConfig::default();
    let three = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
    let (a, _, _) = one.install(|| pagerank(&ig, config));
    let (b, _, _) = three.install(|| pagerank(&ig, config));
    assert_eq!(a, b);
    // Ten blocks of ranks gathered apart and laid end to end: the verifier's counts.
    let ig = InGraph::new(&random_graph(40_000, 400_000, false, 11));
    let (per, total) = three.install(|| triangles(&ig));
    assert_eq!(per, triangles_sequential(&ig));
    assert_eq!(three.install(|| triangle_count(&ig)), total);
}

#[test]
fn tiled_gathers_equal_pulled_ones_and_the_verifier() {
    // Three source blocks, the last one short; a hub, so that parts are cut by in-links.
    let n = 2 * crate::tiles::BLOCK as u32 + 3000;
    let base = random_graph(n, 600_000, false, 12);
    let hub = (1..n).step_by(3).map(|v| (0, v));
    let edges = (0..n)
        .flat_map(|v| base.neighbors(v).iter().map(move |&u| (v, u)))
        .filter(|(a, b)| a < b)
        .chain(hub)
        .collect();
    let ig = InGraph::new(&Graph::from_edges((0..u64::from(n)).collect(), false, edges));
    assert!(ig.is_symmetric());
    for formulation in [Formulation::LfGraph, Formulation::Normalized] {
        for precision in [Precision::F64, Precision::F32] {
            let config =
                PageRankConfig { formulation, precision, iterations: 8, ..Default::default() };
            let (tiled, stats, _) = crate::pagerank::pagerank_gathering(&ig, config, Some(true));
            let (pulled, _, _) = crate::pagerank::pagerank_gathering(&ig, config, Some(false));
            let want = pagerank_sequential(&ig, config, stats.steps);
            let scale: f64 = want.iter().sum();
            let bound = if precision == Precision::F64 { 1e-12 } else { 1e-6 };
            for got in [&tiled, &pulled] {
                let l1: f64 = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).sum();
                assert!(l1 < bound * scale, "{formulation:?} {precision:?}: {l1} of {scale}");
            }
        }
    }
    // On any thread count: the same ranks, bit for bit.
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let three = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
    let config = PageRankConfig::default();
    let a = one.install(|| crate::pagerank::pagerank_gathering(&ig, config, Some(true)).0);
    let b = three.install(|| crate::pagerank::pagerank_gathering(&ig, config, Some(true)).0);
    assert_eq!(a, b);
}
