//! `kith analyze` end to end: JSON fields, verification, and bad input.

mod common;

use common::{fails, json, ok, p};

#[test]
fn analyze_reports_and_refuses_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("g.kgraph");
    common::lfr_graph(&graph, "3000", "10", "2");
    let pr = json(&ok(&["analyze", "pagerank", p(&graph), "--verify", "--json", "--threads", "2"]));
    assert_eq!(
        (pr["algorithm"].clone(), pr["verified"].clone(), pr["threads"].clone()),
        ("pagerank".into(), true.into(), 2.into())
    );
    assert_eq!(pr["top"].as_array().unwrap().len(), 10);
    assert!(pr["seconds"].as_f64().unwrap() >= 0.0);
    let t = json(&ok(&["analyze", "triangles", p(&graph), "--verify", "--json"]));
    assert!(t["triangles"].as_u64().unwrap() > 0 && t["verified"] == true, "{t}");
    let cc = json(&ok(&["analyze", "cc", p(&graph), "--verify", "--json"]));
    assert!(
        cc["components"].as_u64().unwrap() >= 1 && cc["largest"].as_u64().unwrap() <= 3000,
        "{cc}"
    );
    let cc_uf = json(&ok(&["analyze", "cc", p(&graph), "--method", "union-find", "--json"]));
    assert_eq!(
        (cc["components"].clone(), cc["largest"].clone()),
        (cc_uf["components"].clone(), cc_uf["largest"].clone())
    );
    let c = json(&ok(&["analyze", "clustering", p(&graph), "--verify", "--json"]));
    assert!(c["average_clustering"].as_f64().unwrap() > 0.0 && c["verified"] == true, "{c}");
    let k = json(&ok(&["analyze", "kcore", p(&graph), "--verify", "--json"]));
    assert!(k["max_core"].as_u64().unwrap() > 1 && k["verified"] == true, "{k}");
    let d = json(&ok(&["analyze", "sssp", p(&graph), "--source", "0", "--verify", "--json"]));
    assert!(d["reachable"].as_u64().unwrap() > 1 && d["max_distance"].as_u64().unwrap() > 0, "{d}");
    let out = dir.path().join("pr.csv");
    ok(&["analyze", "pagerank", p(&graph), "--out", p(&out)]);
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.lines().count(), 3001);
    let total: f64 =
        text.lines().skip(1).map(|l| l.split(',').nth(1).unwrap().parse::<f64>().unwrap()).sum();
    assert!((total - 1.0).abs() < 1e-9, "{total}");

    // Relabelled by a layout, every per-user result is the same.
    let layout = dir.path().join("g.layout");
    ok(&["layout", "compute", p(&graph), "--method", "kith", "-o", p(&layout)]);
    for algorithm in ["pagerank", "triangles", "cc"] {
        let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
        ok(&["analyze", algorithm, p(&graph), "--out", p(&a)]);
        let r = json(&ok(&[
            "analyze",
            algorithm,
            p(&graph),
            "--order",
            p(&layout),
            "--out",
            p(&b),
            "--verify",
            "--json",
        ]));
        assert_eq!(r["verified"], true);
        let sorted = |path: &std::path::Path| {
            let mut rows: Vec<(u64, String)> = std::fs::read_to_string(path)
                .unwrap()
                .lines()
                .skip(1)
                .map(|l| {
                    let (u, v) = l.split_once(',').unwrap();
                    (u.parse().unwrap(), v.to_string())
                })
                .collect();
            rows.sort_by_key(|r| r.0);
            rows
        };
        let (ra, rb) = (sorted(&a), sorted(&b));
        assert_eq!(ra.len(), rb.len());
        for ((ua, va), (ub, vb)) in ra.iter().zip(&rb) {
            assert_eq!(ua, ub);
            if algorithm == "pagerank" {
                assert!(
                    (va.parse::<f64>().unwrap() - vb.parse::<f64>().unwrap()).abs() < 1e-12,
                    "{ua}: {va} {vb}"
                );
            } else if algorithm == "triangles" {
                assert_eq!(va, vb);
            }
        }
    }
    let d1 = json(&ok(&["analyze", "sssp", p(&graph), "--source", "5", "--json"]));
    let d2 = json(&ok(&[
        "analyze",
        "sssp",
        p(&graph),
        "--source",
        "5",
        "--order",
        p(&layout),
        "--json",
    ]));
    assert_eq!(
        (d1["reachable"].clone(), d1["max_distance"].clone()),
        (d2["reachable"].clone(), d2["max_distance"].clone())
    );

    let err = fails(&["analyze", "sssp", p(&graph), "--source", "123456789"]);
    assert!(err.contains("--source 123456789 is not a user of the graph"), "{err}");
    let err = fails(&["analyze", "cc", p(&graph), "--threads", "0"]);
    assert!(err.contains("--threads must be at least 1"), "{err}");
    let err = fails(&["analyze", "pagerank", p(&graph), "--damping", "1.5"]);
    assert!(err.contains("--damping"), "{err}");

    let err = fails(&["analyze", "mutual-friends", p(&graph), "--user", "987654321"]);
    assert!(err.contains("--user 987654321 is not a user of the graph"), "{err}");

    // Weighted distances; a negative weight is refused with its file and line.
    let weights = dir.path().join("w.tsv");
    std::fs::write(&weights, "# a b w\n0 1 2.5\n").unwrap();
    let edges = dir.path().join("e.tsv");
    ok(&["graph", "import", p(&graph), "-o", p(&edges)]);
    let first = std::fs::read_to_string(&edges).unwrap();
    let (a, b) = first
        .lines()
        .find(|l| !l.starts_with('#'))
        .map(|l| {
            let mut it = l.split_whitespace();
            (it.next().unwrap().to_string(), it.next().unwrap().to_string())
        })
        .unwrap();
    std::fs::write(&weights, format!("# a b w\n{a} {b} 0.25\n")).unwrap();
    let w = json(&ok(&[
        "analyze",
        "sssp",
        p(&graph),
        "--source",
        &a,
        "--weights",
        p(&weights),
        "--verify",
        "--json",
    ]));
    assert_eq!((w["weighted"].clone(), w["verified"].clone()), (true.into(), true.into()), "{w}");
    assert_eq!(w["links_weighted"], 2, "{w}"); // both directions of the friendship
    std::fs::write(&weights, format!("{a} {b} 1\n{a} {b} -3\n")).unwrap();
    let err = fails(&["analyze", "sssp", p(&graph), "--source", &a, "--weights", p(&weights)]);
    assert!(err.contains("w.tsv:2") && err.contains("negative weight -3"), "{err}");
    std::fs::write(&weights, "1 2\n").unwrap();
    let err = fails(&["analyze", "sssp", p(&graph), "--source", &a, "--weights", p(&weights)]);
    assert!(err.contains("w.tsv:1") && err.contains("source target weight"), "{err}");
}

#[test]
fn mutual_friends_and_mapreduce_jobs_agree_with_the_vertex_programs() {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("g.kgraph");
    common::lfr_graph(&graph, "2000", "12", "3");
    let mf = json(&ok(&[
        "analyze",
        "mutual-friends",
        p(&graph),
        "--user",
        "7",
        "--top",
        "5",
        "--verify",
        "--json",
    ]));
    assert_eq!(mf["verified"], true, "{mf}");
    let suggestions = mf["people_you_may_know"].as_array().unwrap();
    assert!(!suggestions.is_empty() && suggestions.len() <= 5, "{mf}");
    let counts: Vec<u64> = suggestions.iter().map(|s| s["common"].as_u64().unwrap()).collect();
    assert!(counts.windows(2).all(|w| w[0] >= w[1]), "{counts:?}");
    let t = json(&ok(&["analyze", "triangles", p(&graph), "--json"]));
    assert_eq!(mf["total_common"].as_u64().unwrap(), 3 * t["triangles"].as_u64().unwrap());
    let lists = json(&ok(&["analyze", "triangles", p(&graph), "--method", "lists", "--json"]));
    assert_eq!(lists["triangles"], t["triangles"]);

    let spill = dir.path().join("spill");
    for job in ["mutual-friends", "cc", "triangles"] {
        for memory in ["1", "64"] {
            let r = json(&ok(&[
                "analyze",
                "mr",
                job,
                p(&graph),
                "--memory-mb",
                memory,
                "--spill-dir",
                p(&spill),
                "--verify",
                "--json",
            ]));
            assert_eq!(r["verified"], true, "{job}: {r}");
            for phase in ["map_s", "shuffle_s", "merge_s", "reduce_s"] {
                assert!(r["phases"][phase].as_f64().unwrap() >= 0.0, "{r}");
            }
            let io = &r["io"];
            assert!(io["read_bytes"].as_u64().unwrap() > 0, "{r}");
            assert!(io["written_bytes"].as_u64().unwrap() > 0, "{r}");
            let f = io["sequential_fraction"].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&f), "{r}");
            assert!(!r["recommendation"].as_str().unwrap().is_empty());
        }
    }
    // Spill runs and outputs are removed.
    assert_eq!(std::fs::read_dir(&spill).unwrap().count(), 0);
    let t_mr = json(&ok(&["analyze", "mr", "triangles", p(&graph), "--json"]));
    assert_eq!(t_mr["triangles"], t["triangles"]);

    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "x").unwrap();
    let err = fails(&["analyze", "mr", "cc", p(&graph), "--spill-dir", p(&blocker)]);
    assert!(err.contains("spill directory") && err.contains("cannot be written"), "{err}");
    let err = fails(&["analyze", "mr", "cc", p(&graph), "--memory-mb", "0"]);
    assert!(err.contains("--memory-mb must be at least 1"), "{err}");
}

#[test]
fn bench_analytics_runs_small_and_agrees_with_igraph() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("a.json");
    let printed = ok(&[
        "bench",
        "analytics",
        "--json",
        "--lfr-nodes",
        "3000",
        "--rmat-nodes",
        "4096",
        "--threads",
        "1,2",
        "--graphs",
        "slashdot,rmat,lfr",
        "--baselines",
        "igraph,gapbs",
        "--trials",
        "2",
        "--mr-datasets",
        "email-Eu-core.txt.gz",
        "--out",
        p(&out),
    ]);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    // With --json, stdout is the document written, and nothing else.
    assert_eq!(serde_json::from_str::<serde_json::Value>(&printed).unwrap(), report);
    let graphs = report["graphs"].as_array().unwrap();
    assert_eq!(graphs.len(), 3);
    for g in graphs {
        assert_eq!(g["kith"].as_array().unwrap().len(), 2, "{g}");
        let igraph = &g["baselines"][0];
        assert_eq!(igraph["library"], "igraph", "{g}");
        assert_eq!(igraph["agrees"]["triangles"], true, "{g}");
        assert_eq!(igraph["agrees"]["components"], true, "{g}");
        assert!(igraph["kith_speedup"]["pagerank"].as_f64().unwrap() > 0.0, "{g}");
        // GAPBS's reference build on the same graph: its triangle count and its PageRank
        // (run to convergence) agree with kith's.
        let gapbs = &g["gapbs"];
        assert_eq!(gapbs["triangles"]["counts_agree"], true, "{g}");
        assert_eq!(gapbs["triangles"]["gapbs_count"], g["kith"][0]["triangles"], "{g}");
        assert_eq!(gapbs["pagerank"]["agreement"]["agrees"], true, "{g}");
        for order in ["input", "degree"] {
            let o = &gapbs["pagerank"]["orders"][order];
            assert!(o["speedup_f32"].as_f64().unwrap() > 0.0, "{g}");
            assert!(o["f32_l1_error"].as_f64().unwrap() < 1e-6, "{g}");
        }
    }
    // Generated graphs get the --order comparison; Slashdot's PageRank is directed.
    assert!(graphs[0]["orders"].is_null());
    let orders: Vec<&str> = graphs[2]["orders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["order"].as_str().unwrap())
        .collect();
    assert_eq!(orders, ["default", "random", "kith"]);
    let mr = report["mapreduce"].as_array().unwrap();
    let jobs: Vec<&str> = mr.iter().map(|r| r["job"].as_str().unwrap()).collect();
    assert_eq!(jobs, ["mutual-friends", "mutual-friends-3", "cc", "triangles"]);
    assert!(mr.iter().all(|r| r["equal_to_vertex_program"] == true));
}
