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

#[test]
fn run_drives_a_server_closed_and_open_loop() {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("g.kgraph");
    common::lfr_graph(&graph, "1000", "8", "6");
    let store = dir.path().join("store");
    common::build_store(&graph, &store, "kith");
    let server = common::Server::start(&store, &["--feed", "push"]);
    let target = server.base.clone();

    // Closed loop, a sweep of two client counts, LinkBench's mix.
    let plots = dir.path().join("plots");
    let report = json(&ok(&[
        "workload",
        "run",
        "--mix",
        "linkbench",
        "--target",
        &target,
        "--clients",
        "2,4",
        "--duration-s",
        "1",
        "--warmup-s",
        "0.2",
        "--json",
        "--plot",
        p(&plots),
    ]));
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for (run, clients) in runs.iter().zip([2, 4]) {
        assert_eq!(
            (run["clients"].clone(), run["mode"].clone()),
            (clients.into(), "closed".into())
        );
        let ops: Vec<&str> =
            run["ops"].as_array().unwrap().iter().map(|o| o["op"].as_str().unwrap()).collect();
        assert!(ops.contains(&"getlinklist") && ops.contains(&"addnode"), "{ops:?}");
        for o in run["ops"].as_array().unwrap() {
            for f in
                ["ops", "errors", "throughput", "p50_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms"]
            {
                assert!(o[f].is_number(), "{f} missing in {o}");
            }
            assert!(
                o["p50_ms"].as_f64() <= o["p99_ms"].as_f64()
                    && o["p99_ms"].as_f64() <= o["max_ms"].as_f64()
            );
            assert_eq!(o["errors"], 0, "{o}");
        }
        assert!(run["total"]["throughput"].as_f64().unwrap() > 100.0, "{run}");
    }
    assert!(plots.join("throughput.png").is_file() && plots.join("latency-cdf.png").is_file());

    // Open loop at a fixed rate sends on schedule: about rate × seconds requests.
    let report = json(&ok(&[
        "workload",
        "run",
        "--mix",
        "bondhu-preferential",
        "--graph",
        p(&graph),
        "--target",
        &target,
        "--rate",
        "400",
        "--clients",
        "32",
        "--duration-s",
        "1.5",
        "--warmup-s",
        "0.25",
        "--json",
    ]));
    let run = &report["runs"][0];
    assert_eq!(run["mode"], "open");
    let sent = run["total"]["ops"].as_u64().unwrap();
    assert!((550..=650).contains(&sent), "open loop sent {sent} in 1.5 s at 400/s");

    // A trace whose users are partly unknown to the server: the 404s are counted, not hidden.
    let trace = dir.path().join("t.tsv");
    std::fs::write(&trace, "0.0\tPublish\t3\t10\n0.5\tRetrieve\t3\t20\n1.0\tRetrieve\t999999\t20\n1.5\tPublish\t999999\t5\n").unwrap();
    let report = json(&ok(&[
        "workload",
        "run",
        "--trace",
        p(&trace),
        "--target",
        &target,
        "--clients",
        "1",
        "--duration-s",
        "5",
        "--warmup-s",
        "0",
        "--json",
    ]));
    let total = &report["runs"][0]["total"];
    assert_eq!((total["ops"].as_u64(), total["errors"].as_u64()), (Some(4), Some(2)), "{total}");
    assert_eq!(total["errors_by_status"]["404"], 2);

    // Bad input: a malformed trace line names file and line; an unreachable target fails fast.
    std::fs::write(&trace, "0.0\tPublish\t3\t10\n0.5\tRead\t3\t20\n").unwrap();
    let err = fails(&["workload", "run", "--trace", p(&trace), "--target", &target]);
    assert!(err.contains("t.tsv:2: activity must be Publish or Retrieve"), "{err}");
    let start = std::time::Instant::now();
    let err = fails(&["workload", "run", "--mix", "linkbench", "--target", "http://127.0.0.1:9"]);
    assert!(err.contains("cannot reach the server"), "{err}");
    assert!(start.elapsed() < std::time::Duration::from_secs(10));
    let err = fails(&["workload", "run", "--mix", "bondhu-overlap", "--target", &target]);
    assert!(err.contains("needs --graph"), "{err}");
}

#[test]
fn service_experiments_write_their_tables() {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("g.kgraph");
    common::lfr_graph(&graph, "600", "6", "8");
    let out = dir.path().join("out");
    let short = ["--duration-s", "0.4", "--warmup-s", "0.1", "--seed", "2"];
    let mut args = vec!["experiment", "parker-latency", "--graph", p(&graph), "--out", p(&out)];
    args.extend(short);
    let text = ok(&args);
    assert!(text.contains("shortest_path"), "{text}");
    let csv = std::fs::read_to_string(out.join("parker-latency.csv")).unwrap();
    assert_eq!(csv.lines().count(), 15, "{csv}");
    // The server's own figures (Server-Timing) beside the client's: a read of the engine
    // spends some of its handler time there.
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let row: Vec<&str> =
        csv.lines().find(|l| l.contains(",get_user,")).unwrap().split(',').collect();
    let (client, server, store) =
        (row[col("p50_ms")], row[col("server_p50_ms")], row[col("store_p50_ms")]);
    let f = |x: &str| x.parse::<f64>().unwrap();
    assert!(f(store) > 0.0 && f(store) <= f(server) && f(server) <= f(client), "{csv}");
    assert!(csv.lines().skip(1).all(|l| l.split(',').nth(9) == Some("0")), "errors in {csv}");
    let mut args = vec![
        "experiment",
        "twibo",
        "--graph",
        p(&graph),
        "--out",
        p(&out),
        "--clients",
        "2",
        "--preload",
        "300",
        "--backends",
        "in-process",
    ];
    args.extend(short);
    ok(&args);
    let csv = std::fs::read_to_string(out.join("twibo.csv")).unwrap();
    assert_eq!(csv.lines().count(), 6, "{csv}");
    let columns: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let at = |name: &str| columns.iter().position(|c| *c == name).unwrap();
    let rows_ok = |csv: &str, servers: &str| {
        for line in csv.lines().skip(1) {
            let f: Vec<&str> = line.split(',').collect();
            assert!(f[at("throughput")].parse::<f64>().unwrap() > 0.0, "{line}");
            assert_eq!((f[at("errors")], f[at("servers")]), ("0", servers), "{line}");
        }
    };
    rows_ok(&csv, "1");
    assert!(out.join("twibo-in-process.png").is_file() && out.join("twibo-peaks.csv").is_file());
    // The cluster backend, with two servers sharing each run's keyspace and Redis Cluster,
    // on the test command's cluster.
    if let Ok(cluster) = std::env::var("KITH_TEST_CLUSTER_DIR") {
        let cluster_out = dir.path().join("cluster-out");
        let mut args = vec![
            "experiment",
            "twibo",
            "--graph",
            p(&graph),
            "--out",
            p(&cluster_out),
            "--clients",
            "4",
            "--preload",
            "100",
            "--backends",
            "cluster",
            "--servers",
            "2",
            "--cluster-dir",
            &cluster,
        ];
        args.extend(short);
        ok(&args);
        let csv = std::fs::read_to_string(cluster_out.join("twibo.csv")).unwrap();
        assert_eq!(csv.lines().count(), 6, "{csv}");
        rows_ok(&csv, "2");
        assert!(cluster_out.join("twibo-cluster-2.png").is_file());
    }
    let mut args = vec![
        "experiment",
        "twibo-cache",
        "--graph",
        p(&graph),
        "--out",
        p(&out),
        "--cache-clients",
        "4",
        "--preload",
        "300",
        "--cache-mb",
        "1,8",
    ];
    args.extend(short);
    ok(&args);
    // Twibo's Table 5: push + cache-aside and push + write-back at each size, beside Twibo's.
    let csv = std::fs::read_to_string(out.join("twibo-cache.csv")).unwrap();
    assert_eq!(csv.lines().count(), 5, "{csv}");
    assert!(csv.lines().any(|l| l.starts_with("in-process,push+write-back,8,4,")), "{csv}");
    assert!(csv.lines().all(|l| !l.starts_with("in-process,push+aside,1,") || l.ends_with(",,")));
}
