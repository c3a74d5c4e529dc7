//! The `kith` binary end to end: real processes, real files, real output.

mod common;

use common::{fails, json, kith, ok, p};

/// A command line split at spaces (test paths have none).
fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

#[test]
fn import_then_stats_agree_for_text_and_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("g.txt");
    std::fs::write(&text, "# test\n1 2\n2 3\n3 1\n3 3\n2 1\n10 11\n").unwrap();
    let snap = dir.path().join("g.kgraph");
    ok(&["graph", "import", p(&text), "-o", p(&snap)]);
    let again = dir.path().join("again.kgraph");
    let report = json(&ok(&["graph", "import", p(&text), "-o", p(&again), "--json"]));
    assert_eq!(
        (report["nodes"].as_u64(), report["self_loops_dropped"].as_u64()),
        (Some(5), Some(1))
    );
    let from_text = json(&ok(&["graph", "stats", p(&text), "--json"]));
    let from_snap = json(&ok(&["graph", "stats", p(&snap), "--json"]));
    assert_eq!(from_text, from_snap);
    let want = serde_json::json!({
        "nodes": 5, "edges": 4, "directed": false, "self_loops_dropped": 1, "duplicates_merged": 1,
        "degree": {"min": 1, "median": 2.0, "mean": 1.6, "p90": 2, "p99": 2, "max": 2},
        "components": 2, "largest_component": 3
    });
    assert_eq!(from_text, want);

    let directed = json(&ok(&["graph", "stats", p(&text), "--json", "--directed"]));
    assert_eq!(directed["edges"], 5);
    assert_eq!(directed["directed"], true);
    assert_eq!(directed["in_degree"]["max"], 2);
}

#[test]
fn stats_table_and_degree_file() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("g.txt");
    std::fs::write(&text, "5 6\n6 7\n").unwrap();
    let degrees = dir.path().join("d.csv");
    let table = ok(&["graph", "stats", p(&text), "--degrees-out", p(&degrees)]);
    assert!(table.contains("nodes               3\n"), "{table}");
    assert!(table.contains("components          1 (largest: 3 nodes)"), "{table}");
    assert_eq!(std::fs::read_to_string(&degrees).unwrap(), "id,degree\n5,1\n6,2\n7,1\n");
}

#[test]
fn generate_writes_graph_communities_and_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("lfr.txt.gz");
    let cmty = dir.path().join("lfr.cmty.txt");
    let lfr = format!("graph generate --model lfr --nodes 3000 --mu 0.3 --seed 4 -o {}", p(&out));
    let cmty_flag = format!("--communities-out {} --json", p(&cmty));
    let report = json(&ok(&words(&format!("{lfr} {cmty_flag}"))));
    assert_eq!(report["model"], "lfr");
    assert_eq!(report["nodes"], 3000);
    let realised = report["lfr"]["mu_realized"].as_f64().unwrap();
    assert!((realised - 0.3).abs() < 0.02, "{realised}");
    let stats = json(&ok(&["graph", "stats", p(&out), "--json"]));
    assert_eq!(stats["edges"], report["edges"]);
    let members: usize =
        std::fs::read_to_string(&cmty).unwrap().lines().map(|l| l.split('\t').count()).sum();
    assert_eq!(members, 3000);

    // The same seed gives the same bytes.
    let again = dir.path().join("again.txt.gz");
    ok(&words(&lfr.replace(p(&out), p(&again))));
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&again).unwrap());

    for model in ["rmat", "ba"] {
        let path = dir.path().join(format!("{model}.kgraph"));
        ok(&["graph", "generate", "--model", model, "--nodes", "2000", "-o", p(&path)]);
        assert_eq!(json(&ok(&["graph", "stats", p(&path), "--json"]))["nodes"], 2000);
    }
}

#[test]
fn bad_input_gets_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("wiki-Vote.txt");
    std::fs::write(&bad, "# c\n1 2\n3 4\n4 5\n5 6\n7 8\n12 abc\n").unwrap();
    assert!(
        fails(&["graph", "stats", p(&bad)])
            .ends_with(r#"wiki-Vote.txt:7: expected two integer ids, found "12 abc""#)
    );
    assert!(
        fails(&["graph", "stats", p(&dir.path().join("none.txt"))])
            .ends_with("none.txt: no such file")
    );
    assert!(
        fails(&["graph", "import", p(dir.path()), "-o", "x.kgraph"]).contains("is a directory")
    );
    let g = dir.path().join("g.txt");
    std::fs::write(&g, "1 2\n").unwrap();
    assert_eq!(
        fails(&[
            "graph",
            "generate",
            "--model",
            "rmat",
            "--nodes",
            "100",
            "--mu",
            "0.2",
            "-o",
            p(&g)
        ]),
        "kith: error: --mu applies to --model lfr only"
    );
    assert!(
        fails(&["graph", "generate", "--model", "lfr", "--nodes", "100", "--mu", "2", "-o", p(&g)])
            .contains("--mu must be within [0, 1]")
    );
    let unwritable = dir.path().join("no/such/dir/out.kgraph");
    assert!(fails(&["graph", "import", p(&g), "-o", p(&unwritable)]).contains("out.kgraph"));
    // Usage errors exit with 2, also on one line.
    for args in [
        &["graph", "stats", p(&g), "--format", "gml"][..],
        &["graph", "generate", "--nodes", "5", "-o", "x"],
    ] {
        let out = kith(args);
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{stderr:?}");
        assert!(stderr.starts_with("kith: error: "), "{stderr:?}");
    }
    assert!(
        String::from_utf8(kith(&["graph", "stats", p(&g), "--format", "gml"]).stderr)
            .unwrap()
            .contains("invalid value 'gml' for '--format <FORMAT>' [possible values: snap, konect")
    );
    // Help still works and succeeds.
    assert!(kith(&["graph", "generate", "--help"]).status.success());
}

#[test]
fn demo_runs_small() {
    let out = ok(&["demo", "--nodes", "5000", "--http-seconds", "1"]);
    assert!(out.contains("nodes               5000"), "{out}");
    assert!(out.contains("loaded and verified"), "{out}");
    // With --json: the walk-through on stderr, every figure in one document on stdout.
    let run = kith(&["demo", "--nodes", "3000", "--http-seconds", "1", "--json"]);
    let said = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success() && said.contains("loaded and verified"), "{said}");
    let doc = json(&String::from_utf8_lossy(&run.stdout));
    assert_eq!(doc["graph"]["nodes"], 3000, "{doc}");
    let methods: Vec<&str> =
        doc["layouts"].as_array().unwrap().iter().map(|l| l["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["default", "random", "parcom", "kith"]);
    assert_eq!(doc["verify"]["ok"], true);
    assert!(doc["http"]["total_rps"].as_f64().unwrap() > 0.0, "{doc}");
}
