//! The distributed programs against `kith-analytics` on seeded random graphs, with several
//! worker threads in one process (the multi-process runs are tested through the CLI).

use std::sync::Arc;
use std::time::Duration;

use kith_analytics::{Formulation, InGraph, PageRankConfig};
use kith_graph::Graph;

use crate::part::owner;
use crate::*;

fn random_graph(n: u32, m: usize, directed: bool, seed: u64) -> Graph {
    let mut x = seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let edges = (0..m)
        .map(|_| ((next() % u64::from(n)) as u32, (next() % u64::from(n)) as u32))
        .filter(|(a, b)| a != b)
        .collect();
    Graph::from_edges((0..u64::from(n)).collect(), directed, edges)
}

fn cluster(threads: usize, mode: ExchangeMode) -> Cluster {
    Cluster {
        threads,
        process: 0,
        addresses: vec!["127.0.0.1:0".into()],
        mode,
        connect_timeout: Duration::from_secs(10),
        wait_timeout: Duration::from_secs(60),
    }
}

fn go<P: Program + Clone + Sync>(g: &Arc<InGraph>, p: P, c: &Cluster) -> Output<P::Value> {
    run(Arc::clone(g), p, c).unwrap().expect("process 0 gets the output")
}

#[test]
fn programs_equal_the_single_machine_engine() {
    for (directed, seed) in [(false, 1), (true, 2)] {
        let g = random_graph(2000, 7000, directed, seed);
        let ig = Arc::new(InGraph::new(&g));
        for (threads, mode) in
            [(1, ExchangeMode::FetchOnce), (3, ExchangeMode::FetchOnce), (4, ExchangeMode::PerEdge)]
        {
            let c = cluster(threads, mode);
            for formulation in [Formulation::LfGraph, Formulation::Normalized] {
                let config = PageRankConfig { formulation, iterations: 12, ..Default::default() };
                let (want, stats, _) = kith_analytics::pagerank(&ig, config);
                let got = go(&ig, PageRank::new(config, ig.num_vertices()), &c);
                assert_eq!(got.report.steps, stats.steps);
                let worst = got
                    .values
                    .iter()
                    .zip(&want)
                    .map(|(a, b)| (a - b).abs() / b)
                    .fold(0.0, f64::max);
                assert!(worst < 1e-12, "{formulation:?} {threads} threads: relative error {worst}");
                if formulation == Formulation::LfGraph {
                    // No global sums: the same additions in the same order.
                    assert_eq!(got.values, want);
                }
            }
            let (hops, stats) = kith_analytics::sssp(&ig, 5);
            let got = go(&ig, Hops { source: 5 }, &c);
            assert_eq!(got.values, hops);
            assert_eq!(got.report.steps, stats.steps);
            let w: Vec<f64> =
                (0..ig.num_in_links()).map(|i| ((i * 37) % 11) as f64 * 0.5).collect();
            let weighted = Arc::new((*ig).clone().with_weights(w));
            let (dist, _) = kith_analytics::sssp_weighted(&weighted, 5).unwrap();
            assert_eq!(go(&weighted, Distances { source: 5 }, &c).values, dist);
            if !directed {
                let (labels, _) = kith_analytics::components_label_propagation(&ig);
                assert_eq!(go(&ig, MinLabel, &c).values, labels);
                let (per, _) = kith_analytics::triangles(&ig);
                assert_eq!(triangle_counts(&go(&ig, TriangleLists, &c).values), per);
                let (mf, _) = kith_analytics::mutual_friends(&ig);
                assert_eq!(mutual_friends(&go(&ig, MutualLists, &c).values), mf);
            }
        }
    }
}

#[test]
fn fetch_once_sends_each_value_once_per_subscribing_worker() {
    let g = random_graph(3000, 30000, true, 7);
    let ig = Arc::new(InGraph::new(&g));
    let workers = 4;
    // Count by brute force: (u, worker) pairs with u remote and some out-neighbour there;
    // and cross-worker edges.
    let (mut pairs, mut edges) = (std::collections::HashSet::new(), 0u64);
    for v in 0..ig.num_vertices() as u32 {
        for &u in ig.in_links(v) {
            if owner(u, workers) != owner(v, workers) {
                pairs.insert((u, owner(v, workers)));
                edges += 1;
            }
        }
    }
    let config =
        PageRankConfig { formulation: Formulation::LfGraph, iterations: 2, ..Default::default() };
    let once = go(
        &ig,
        PageRank::new(config, ig.num_vertices()),
        &cluster(workers, ExchangeMode::FetchOnce),
    );
    let each =
        go(&ig, PageRank::new(config, ig.num_vertices()), &cluster(workers, ExchangeMode::PerEdge));
    // The initial exchange and step 0 send every value; after the last step (1) nobody
    // reads the values, so only the totals travel.
    assert_eq!(once.report.exchange.messages, 2 * pairs.len() as u64);
    assert_eq!(each.report.exchange.messages, 2 * edges);
    assert!(each.report.exchange.bytes > once.report.exchange.bytes);
    let step = &once.report.per_step[1];
    assert_eq!(step.messages.mean * workers as f64, pairs.len() as f64);
    assert!(step.messages.max >= step.messages.mean);
    assert_eq!(once.report.per_step[2].messages.max, 0.0);
}

#[test]
fn mapreduce_jobs_on_workers_equal_the_vertex_programs() {
    let g = random_graph(1500, 6000, false, 11);
    let ig = Arc::new(InGraph::new(&g));
    for threads in [1, 3] {
        let c = cluster(threads, ExchangeMode::FetchOnce);
        let (out, report) = run_mr(Arc::clone(&ig), MrJob::Triangles, &c).unwrap().unwrap();
        let MrOutput::Triangles(per, total) = out else { panic!("triangles") };
        assert_eq!((per, total), kith_analytics::triangles(&ig));
        assert_eq!(report.rounds.len(), 3);
        assert_eq!(report.workers, threads);
        let first = &report.rounds[0];
        assert_eq!(first.input_records, 1500);
        assert_eq!(first.map_output_records, 2 * g.num_edges());
        assert_eq!(threads == 1, first.shuffled_bytes == 0, "{first:?}");
        let (out, report) = run_mr(Arc::clone(&ig), MrJob::Components, &c).unwrap().unwrap();
        let MrOutput::Components(labels) = out else { panic!("components") };
        assert_eq!(labels, kith_analytics::components_union_find(&ig));
        assert!(report.rounds.len() > 2);
        let (out, _) = run_mr(Arc::clone(&ig), MrJob::MutualFriends, &c).unwrap().unwrap();
        let MrOutput::MutualFriends(mf) = out else { panic!("mutual friends") };
        assert_eq!(mf, kith_analytics::mutual_friends(&ig).0);
    }
}
