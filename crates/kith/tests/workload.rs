//! `kith workload generate` end to end: a trace for a small graph, and bad configurations.

mod common;

use common::{fails, json, ok, p};

#[test]
fn generate_writes_a_sorted_trace_and_refuses_bad_configs() {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("g.kgraph");
    common::lfr_graph(&graph, "2000", "8", "4");
    let trace = dir.path().join("t.tsv");
    let summary = json(&ok(&[
        "workload",
        "generate",
        p(&graph),
        "-o",
        p(&trace),
        "--duration-s",
        "3600",
        "--json",
    ]));
    assert!(summary["activities"].as_u64().unwrap() > 1000, "{summary}");
    let text = std::fs::read_to_string(&trace).unwrap();
    assert_eq!(text.lines().count() as u64, summary["activities"].as_u64().unwrap());
    let times: Vec<f64> =
        text.lines().map(|l| l.split('\t').next().unwrap().parse().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]) && times.iter().all(|&t| t < 3600.0));

    // A configuration overriding one parameter; the rest keep SONETOR's defaults.
    let config = dir.path().join("c.toml");
    std::fs::write(&config, "retrieve_limit = 7\n[markov]\nretrieve_to_retrieve = 1.0\npublish_to_retrieve = 1.0\nstart_with_publish = false\n").unwrap();
    let s = json(&ok(&[
        "workload",
        "generate",
        p(&graph),
        "-o",
        p(&trace),
        "--config",
        p(&config),
        "--duration-s",
        "600",
        "--json",
    ]));
    assert_eq!(s["publishes"], 0, "{s}");
    assert!(std::fs::read_to_string(&trace).unwrap().lines().all(|l| l.ends_with("\t7")));

    for (text, want) in [
        ("[inter_session]\ns = -1.0\n", "c.toml: inter_session: need s > 0"),
        ("nonsense = 3\n", "unknown field `nonsense`"),
        ("[session_length]\na = 0.5\n", "c.toml: session_length: need a > 1"),
        ("time_limit_s = \"long\"\n", "invalid type"),
    ] {
        std::fs::write(&config, text).unwrap();
        let err =
            fails(&["workload", "generate", p(&graph), "-o", p(&trace), "--config", p(&config)]);
        assert!(err.contains(want), "{err}");
    }
    let err = fails(&["workload", "generate", p(&graph), "-o", p(&trace), "--duration-s=-5"]);
    assert!(err.contains("--duration-s must be positive"), "{err}");
}
