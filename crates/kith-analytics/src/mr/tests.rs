//! The study's jobs on the local engine, in memory and spilled, against the vertex programs.

use kith_graph::Graph;

use super::jobs::{mr_components, mr_mutual_friends, mr_mutual_friends_3, mr_triangles};
use super::local::MrConfig;
use crate::cc::components_union_find;
use crate::engine::InGraph;
use crate::mutual::mutual_friends;
use crate::triangles::triangles;

fn graph(n: u32, m: usize, seed: u64) -> InGraph {
    let mut next = crate::tests::xorshift(seed);
    // A few dense clusters (triangles) and sparse links between them (several components).
    let edges = (0..m)
        .map(|_| {
            let a = (next() % u64::from(n)) as u32;
            let b = if next().is_multiple_of(4) {
                (next() % u64::from(n)) as u32
            } else {
                (a / 20) * 20 + (next() % 20) as u32
            };
            (a, b.min(n - 1))
        })
        .filter(|(a, b)| a != b)
        .collect();
    InGraph::new(&Graph::from_edges((0..u64::from(n)).collect(), false, edges))
}

#[test]
fn jobs_equal_the_vertex_programs_in_memory_and_spilled() {
    let dir = tempfile::tempdir().unwrap();
    let g = graph(600, 1500, 5);
    for memory_bytes in [1 << 30, 4096] {
        let config = MrConfig {
            memory_bytes,
            spill_dir: dir.path().into(),
            input_bytes: 1000,
            ..MrConfig::default()
        };
        let (mf, report) = mr_mutual_friends(&g, &config).unwrap();
        assert_eq!(mf, mutual_friends(&g).0);
        let (mf3, three) = mr_mutual_friends_3(&g, &config).unwrap();
        assert_eq!(mf3, mf);
        let names: Vec<&str> = three.rounds.iter().map(|r| r.name).collect();
        assert_eq!(names, ["adjacency lists", "friend-pair triples", "common-friend lists"]);
        // The triples round shuffles one record per (pair, common friend) and per friendship;
        // the one-round job one list per friendship end.
        assert!(three.rounds[1].map_output_records > report.rounds[0].map_output_records);
        let (labels, cc) = mr_components(&g, &config).unwrap();
        assert_eq!(labels, components_union_find(&g));
        assert!(cc.rounds.len() > 2, "{} rounds", cc.rounds.len());
        let (per, total, tri) = mr_triangles(&g, &config).unwrap();
        let (want, want_total) = triangles(&g);
        assert!(want_total > 50, "{want_total}");
        assert_eq!((per, total), (want, want_total));
        assert_eq!(tri.rounds.len(), 3);
        let runs: u64 = report.rounds.iter().map(|r| r.spill_runs).sum();
        let io = report.io;
        assert!(io.read_bytes >= 1000 && io.written_bytes > 0);
        assert!(io.sequential_bytes <= io.read_bytes + io.written_bytes);
        if memory_bytes == 4096 {
            assert!(runs > config.sort_factor as u64, "{runs} runs");
            assert!(report.rounds[0].merge_passes > 0);
            assert!(io.sequential_fraction() < 0.9, "{io:?}");
            assert!(report.recommendation().starts_with("SSD"), "{}", report.recommendation());
        } else {
            assert_eq!(runs, 0);
            assert!(report.recommendation().starts_with("memory"));
        }
        let p = report.phases;
        assert!(p.map_s >= 0.0 && p.shuffle_s >= 0.0 && p.merge_s >= 0.0 && p.reduce_s > 0.0);
    }
    // Nothing is left behind in the spill directory.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn an_unwritable_spill_directory_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-directory");
    std::fs::write(&file, b"x").unwrap();
    let config = MrConfig { spill_dir: file.clone(), ..MrConfig::default() };
    let err = mr_triangles(&graph(50, 100, 1), &config).unwrap_err().to_string();
    assert!(err.contains("spill directory") && err.contains("not-a-directory"), "{err}");
}

#[test]
fn hadoops_knobs_change_the_runs_and_passes_not_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let g = graph(600, 1500, 9);
    let want = mutual_friends(&g).0;
    let base = MrConfig { memory_bytes: 4096, spill_dir: dir.path().into(), ..MrConfig::default() };
    let run = |config: MrConfig| {
        let (mf, report) = mr_mutual_friends(&g, &config).unwrap();
        assert_eq!(mf, want, "{config:?}");
        (report.rounds[0].spill_runs, report.rounds[0].merge_passes)
    };
    // A lower spill share: more, smaller runs.
    let (runs_full, _) = run(MrConfig { spill_percent: 1.0, ..base.clone() });
    let (runs_half, _) = run(MrConfig { spill_percent: 0.5, ..base.clone() });
    assert!(runs_half > runs_full, "{runs_half} runs at 0.5, {runs_full} at 1.0");
    // A higher sort factor: fewer merge passes.
    let (_, passes_2) = run(MrConfig { sort_factor: 2, ..base.clone() });
    let (_, passes_100) = run(MrConfig { sort_factor: 100, ..base.clone() });
    assert!(passes_2 > passes_100, "{passes_2} passes at factor 2, {passes_100} at 100");
    // Runs read ahead by their own threads or by the merging thread: the same records.
    for parallel_copies in [0, 1, 5, 1000] {
        run(MrConfig { parallel_copies, ..base.clone() });
    }
    // The budget the report advises spills nothing.
    let (_, report) = mr_mutual_friends(&g, &base).unwrap();
    let advised = report.budget_without_spills();
    let (_, again) =
        mr_mutual_friends(&g, &MrConfig { memory_bytes: advised, ..base.clone() }).unwrap();
    assert_eq!(again.rounds[0].spill_runs, 0, "{advised} bytes advised");
    // Synced and evicted files read back the same; the time in I/O calls is counted.
    let (mf, report) = mr_mutual_friends(&g, &MrConfig { uncached: true, ..base.clone() }).unwrap();
    assert_eq!(mf, want);
    assert!(report.io.io_ns > 0 && report.io.io_seconds() < 60.0, "{:?}", report.io);
    for bad in [
        MrConfig { spill_percent: 0.0, ..base.clone() },
        MrConfig { spill_percent: 1.5, ..base.clone() },
        MrConfig { sort_factor: 1, ..base.clone() },
        MrConfig { memory_bytes: 0, ..base.clone() },
    ] {
        let err = mr_mutual_friends(&g, &bad).unwrap_err().to_string();
        assert!(
            err.contains("spill") || err.contains("sort factor") || err.contains("buffer"),
            "{err}"
        );
    }
}
