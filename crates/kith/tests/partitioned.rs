//! `kith graph partition` and `kith analyze <algorithm> DIR --processes P`: each process
//! reads only its own workers' parts, and the results equal the whole graph's, on every
//! process count; what a partition cannot give is refused clearly.

mod common;

use std::collections::HashMap;
use std::path::Path;

use common::{fails, json, ok, p};

/// The `--out` CSV of a run, by its key columns (everything but the value).
fn csv(path: &Path) -> HashMap<String, String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    lines.next();
    lines
        .map(|l| match l.split_once(',') {
            // mutual-friends: a,b,count,common; the others: uid,value.
            Some((k, rest)) if rest.matches(',').count() >= 2 => {
                let (b, rest) = rest.split_once(',').unwrap();
                (format!("{k},{b}"), rest.to_owned())
            }
            Some((k, v)) => (k.to_owned(), v.to_owned()),
            None => panic!("bad line {l}"),
        })
        .collect()
}

fn same(algorithm: &str, got: &HashMap<String, String>, want: &HashMap<String, String>) {
    assert_eq!(got.len(), want.len(), "{algorithm}: rows");
    for (k, w) in want {
        let g = got.get(k).unwrap_or_else(|| panic!("{algorithm}: no row {k}"));
        if algorithm == "pagerank" {
            let (g, w): (f64, f64) = (g.parse().unwrap(), w.parse().unwrap());
            // Equal up to the order of the global sums.
            assert!((g - w).abs() <= 1e-12 * w.abs(), "{algorithm} {k}: {g} vs {w}");
        } else {
            assert_eq!(g, w, "{algorithm} {k}");
        }
    }
}

/// A directed Zipf in-degree graph (PowerGraph's) of `nodes` users.
fn zipf_graph(path: &Path, nodes: &str, seed: &str) {
    ok(&["graph", "generate", "--model", "zipf", "--nodes", nodes, "--seed", seed, "-o", p(path)]);
}

fn partition(graph: &Path, parts: usize, dir: &Path) -> serde_json::Value {
    let parts = parts.to_string();
    json(&ok(&["graph", "partition", p(graph), "--parts", &parts, "-o", p(dir), "--json"]))
}

#[test]
fn partitioned_runs_equal_the_whole_graph_on_every_process_count() {
    let dir = tempfile::tempdir().unwrap();
    let friends = dir.path().join("friends.kgraph");
    common::lfr_graph(&friends, "2000", "10", "5");
    let follows = dir.path().join("follows.kgraph");
    zipf_graph(&follows, "2000", "3");
    let undirected: &[&[&str]] =
        &[&["pagerank"], &["sssp", "--source", "7"], &["cc"], &["triangles"], &["mutual-friends"]];
    let directed: &[&[&str]] = &[&["pagerank"], &["sssp", "--source", "7"]];
    for (graph, algorithms) in [(&friends, undirected), (&follows, directed)] {
        let whole: Vec<_> = algorithms
            .iter()
            .map(|a| {
                let out = dir.path().join("whole.csv");
                let mut args = a.to_vec();
                args.splice(0..0, ["analyze"]);
                args.extend([p(graph), "--out", p(&out)]);
                ok(&args);
                csv(&out)
            })
            .collect();
        for (processes, threads) in [(1, 1), (2, 1), (3, 1), (2, 2)] {
            let parts_dir = dir.path().join(format!("parts-{processes}x{threads}"));
            let made = partition(graph, processes * threads, &parts_dir);
            assert_eq!(made["parts"], processes * threads);
            let total = made["in_links"].as_u64().unwrap();
            let (pr, th) = (processes.to_string(), threads.to_string());
            for (a, want) in algorithms.iter().zip(&whole) {
                let out = dir.path().join("parts.csv");
                let mut args = a.to_vec();
                args.splice(0..0, ["analyze"]);
                args.extend([p(&parts_dir), "--processes", &pr, "--threads", &th]);
                args.extend(["--out", p(&out), "--json"]);
                let r = json(&ok(&args));
                same(a[0], &csv(&out), want);
                assert_eq!(r["workers"], processes * threads, "{r}");
                // Process 0 read its own parts only.
                let read = r["partition"]["in_links_read"].as_u64().unwrap();
                if processes > 1 {
                    assert!(read < total, "{a:?}: read {read} of {total}");
                } else {
                    assert_eq!(read, total);
                }
            }
        }
        // On one machine a partition is the whole graph again, and verifies.
        let parts_dir = dir.path().join("parts-2x2");
        let r = json(&ok(&["analyze", "pagerank", p(&parts_dir), "--verify", "--json"]));
        assert_eq!(r["verified"], true, "{r}");
    }
}

#[test]
fn what_a_partition_cannot_give_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("g.kgraph");
    common::lfr_graph(&graph, "600", "8", "2");
    let parts = dir.path().join("parts");
    partition(&graph, 2, &parts);
    let parts = p(&parts);
    let e = fails(&["analyze", "pagerank", parts, "--processes", "3"]);
    assert!(e.contains("has 2 parts but the cluster has 3 workers"), "{e}");
    let e = fails(&["analyze", "pagerank", parts, "--processes", "2", "--verify"]);
    assert!(e.contains("--verify") && e.contains("one machine"), "{e}");
    let e = fails(&["analyze", "pagerank", parts, "--order", "degree"]);
    assert!(e.contains("--order"), "{e}");
    let e = fails(&[
        "analyze",
        "sssp",
        parts,
        "--source",
        "1",
        "--weights",
        p(&graph),
        "--processes",
        "2",
    ]);
    assert!(e.contains("--weights"), "{e}");
    let e = fails(&["analyze", "mutual-friends", parts, "--user", "1", "--processes", "2"]);
    assert!(e.contains("--user"), "{e}");
    let e = fails(&["analyze", "pagerank", parts, "--directed"]);
    assert!(e.contains("without --directed"), "{e}");
    // A directed partition is no input for an algorithm on friendships.
    let directed = dir.path().join("directed");
    let follows = dir.path().join("follows.kgraph");
    zipf_graph(&follows, "500", "1");
    ok(&["graph", "partition", p(&follows), "--parts", "2", "-o", p(&directed)]);
    let e = fails(&["analyze", "cc", p(&directed), "--processes", "2"]);
    assert!(e.contains("runs on friendships"), "{e}");
    // A damaged part is named, on the process that reads it (the bit flipped is in the
    // checksum, so every value still passes its own checks).
    let part = Path::new(parts).join("part-1.kpart");
    let mut bytes = std::fs::read(&part).unwrap();
    let at = bytes.len() - 1;
    bytes[at] ^= 0x40;
    std::fs::write(&part, bytes).unwrap();
    let out = common::kith(&["analyze", "pagerank", parts, "--processes", "2"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("part-1.kpart: checksum mismatch"), "{stderr}");
    // A directory that is not a partition, and one that would be overwritten.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let e = fails(&["analyze", "pagerank", p(&empty)]);
    assert!(e.contains("kith graph partition"), "{e}");
    std::fs::write(empty.join("mine.txt"), "keep").unwrap();
    let e = fails(&["graph", "partition", p(&graph), "--parts", "2", "-o", p(&empty)]);
    assert!(e.contains("refusing"), "{e}");
    let e = fails(&["graph", "partition", p(&graph), "--parts", "0", "-o", p(&empty)]);
    assert!(e.contains("--parts"), "{e}");
}
