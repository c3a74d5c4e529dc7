//! `kith layout` end to end: every method on Bondhu's 7-node example, evaluation output, and
//! the errors bad layout files and options get.

mod common;

use std::path::Path;

use common::{fails, json, ok, p};

/// Bondhu's worked example as a SNAP edge list.
fn paper_example(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("bondhu.txt");
    std::fs::write(&path, "1 2\n1 3\n1 5\n2 3\n2 4\n3 4\n3 5\n4 6\n4 7\n").unwrap();
    path
}

const METHODS: [&str; 10] = [
    "default",
    "random",
    "degree",
    "organ-pipe",
    "bfs",
    "rcm",
    "gorder",
    "parcom",
    "modcom",
    "kith",
];

#[test]
fn every_method_yields_a_permutation_of_the_paper_example() {
    let dir = tempfile::tempdir().unwrap();
    let graph = paper_example(dir.path());
    for method in METHODS {
        let out = dir.path().join(format!("{method}.layout"));
        let mut args = vec!["layout", "compute", p(&graph), "--method", method, "-o", p(&out)];
        args.extend(["--communities", "2", "--json"]);
        let report = json(&ok(&args));
        let mut ids: Vec<u64> =
            std::fs::read_to_string(&out).unwrap().lines().map(|l| l.parse().unwrap()).collect();
        ids.sort_unstable();
        assert_eq!(ids, (1..=7).collect::<Vec<_>>(), "{method}");
        let cost = report["cost"].as_u64().unwrap();
        assert!((13..=40).contains(&cost), "{method}: {cost}");
        if method == "default" {
            assert_eq!(cost, 18);
        }
    }
}

#[test]
fn kith_la_objective_reaches_the_optimum_13() {
    let dir = tempfile::tempdir().unwrap();
    let graph = paper_example(dir.path());
    let out = dir.path().join("la.layout");
    let args = ["layout", "compute", p(&graph), "--objective", "la", "-o", p(&out), "--json"];
    assert_eq!(json(&ok(&args))["cost"], 13);
    // The paper's own worked-example layout costs 20.
    let paper = dir.path().join("paper.layout");
    std::fs::write(&paper, "2\n1\n3\n5\n7\n6\n4\n").unwrap();
    let eval = json(&ok(&["layout", "eval", p(&graph), "--layout", p(&paper), "--json"]));
    assert_eq!(eval["cost"], 20);
    assert_eq!(eval["baseline"], "default");
    // 20 against the input order's 18: an 11 % loss.
    let total = eval["improvement"]["total"].as_f64().unwrap();
    assert!((total - (18.0 - 20.0) / 18.0).abs() < 1e-12, "{total}");
}

#[test]
fn eval_reports_every_field_the_issue_names() {
    let dir = tempfile::tempdir().unwrap();
    let graph = paper_example(dir.path());
    let out = dir.path().join("k.layout.gz");
    ok(&[
        "layout",
        "compute",
        p(&graph),
        "--method",
        "parcom",
        "--communities",
        "2",
        "-o",
        p(&out),
    ]);
    let args = ["layout", "eval", p(&graph), "--layout", p(&out), "--baseline-method", "random"];
    let e = json(&ok(&[&args[..], &["--model", "overlap", "--json"]].concat()));
    for key in ["cost", "weighted_cost", "log_gap_cost"] {
        assert!(e[key].is_number(), "{key}");
    }
    for key in ["median", "p90", "p99"] {
        assert!(e["per_user_cost"][key].is_number(), "{key}");
    }
    for key in ["total", "per_user_median"] {
        assert!(e["improvement"][key].is_number(), "{key}");
    }
    let pages = e["pages"].as_array().unwrap();
    let sizes: Vec<u64> = pages.iter().map(|p| p["record_bytes"].as_u64().unwrap()).collect();
    assert_eq!(sizes, [4, 40, 400, 4096, 40960, 409600]);
    // Seven 4-byte records fit in one page: every friend list reads exactly one.
    assert_eq!(pages[0]["mean"], 1.0);
    assert_eq!(pages[0]["floor_mean"], 1.0);
    // 4 KiB records: a user with d friends reads d + 1 pages; mean degree 18/7.
    let floor = pages[3]["floor_mean"].as_f64().unwrap();
    assert!((floor - (1.0 + 18.0 / 7.0)).abs() < 1e-12);
    assert_eq!(pages[3]["mean"], pages[3]["floor_mean"]);
    // Text output too.
    let text = ok(&args);
    assert!(text.contains("pages per friend list"), "{text}");
}

#[test]
fn bad_layout_files_are_named_with_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let graph = paper_example(dir.path());
    let layout = dir.path().join("bad.layout");
    let eval = |text: &str| {
        std::fs::write(&layout, text).unwrap();
        fails(&["layout", "eval", p(&graph), "--layout", p(&layout)])
    };
    let e = eval("1\n2\n3\n4\n5\n6\n");
    assert!(
        e.ends_with("bad.layout: the layout misses 1 of the graph's 7 node ids (first: 7)"),
        "{e}"
    );
    let e = eval("1\n2\n3\n3\n4\n5\n6\n7\n");
    assert!(e.ends_with("bad.layout:4: node id 3 repeats (first on line 3)"), "{e}");
    let e = eval("1\n2\n3\n4\n5\n6\n7\n8\n");
    assert!(e.ends_with("bad.layout:8: node id 8 is not in the graph"), "{e}");
    let e = eval("1\n2\nthree\n");
    assert!(e.ends_with("bad.layout:3: expected one node id, found \"three\""), "{e}");
}

#[test]
fn bad_options_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let graph = paper_example(dir.path());
    let out = dir.path().join("x.layout");
    let compute = |extra: &[&str]| {
        let mut args = vec!["layout", "compute", p(&graph), "-o", p(&out)];
        args.extend(extra);
        fails(&args)
    };
    for k in ["0", "8"] {
        let e = compute(&["--method", "parcom", "--communities", k]);
        assert!(e.contains("--communities must be between 1 and the number of nodes (7)"), "{e}");
    }
    let e = compute(&["--method", "modcom", "--level", "9"]);
    assert!(e.contains("--level 9 does not exist"), "{e}");
    let e = compute(&["--method", "louvain"]);
    assert!(e.contains("invalid value 'louvain'"), "{e}");
    let e = compute(&["--record-bytes", "0"]);
    assert!(e.contains("--record-bytes must be at least 1"), "{e}");
    assert!(!out.exists(), "a failed computation wrote a layout");
}

#[test]
fn experiments_write_a_csv_and_a_png_each() {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("lfr.kgraph");
    common::lfr_graph(&graph, "1500", "10", "3");
    let out = dir.path().join("out");
    let expected = [
        ("bondhu-communities", "k,cost,improvement_total,", 10),
        ("bondhu-models", "built_under,evaluated_under,", 9),
        ("bondhu-evolution", "removed,fraction,cost,fresh_cost,degradation,", 10),
    ];
    for (name, header, rows) in expected {
        ok(&["experiment", name, "--graph", p(&graph), "--out", p(&out)]);
        let csv = std::fs::read_to_string(out.join(format!("{name}.csv"))).unwrap();
        assert!(csv.starts_with(header), "{name}: {csv}");
        assert_eq!(csv.lines().count(), rows + 1, "{name}: {csv}");
        let png = std::fs::read(out.join(format!("{name}.png"))).unwrap();
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{name}: not a PNG");
    }
    // On an LFR graph (ids in random order) parcom beats input order at every K.
    let csv = std::fs::read_to_string(out.join("bondhu-communities.csv")).unwrap();
    for line in csv.lines().skip(1) {
        let total: f64 = line.split(',').nth(2).unwrap().parse().unwrap();
        assert!(total > 0.3, "{line}");
    }
}

#[test]
fn an_experiment_with_json_prints_what_it_wrote_as_one_document() {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("lfr.kgraph");
    common::lfr_graph(&graph, "800", "8", "5");
    let out = dir.path().join("out");
    let stdout =
        ok(&["experiment", "--json", "bondhu-models", "--graph", p(&graph), "--out", p(&out)]);
    let doc = common::json(&stdout);
    assert_eq!(doc["experiment"], "bondhu-models");
    let rows = doc["tables"]["bondhu-models.csv"].as_array().unwrap();
    let csv = std::fs::read_to_string(out.join("bondhu-models.csv")).unwrap();
    assert_eq!(rows.len(), csv.lines().count() - 1);
    // The same figures as the file, numbers as numbers.
    let first: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    for (k, v) in header.iter().zip(first) {
        match v.parse::<f64>() {
            Ok(x) => assert!((rows[0][*k].as_f64().unwrap() - x).abs() < 1e-9, "{k}"),
            Err(_) => assert_eq!(rows[0][*k], v, "{k}"),
        }
    }
    assert_eq!(doc["figures"], serde_json::json!(["bondhu-models.png"]));
}
