//! `kith trial cluster`, one short run per nemesis: three servers over the test command's
//! Cassandra cluster and Redis Cluster (`KITH_TEST_CLUSTER_DIR`; without it, clusters of its
//! own on 127.0.5.x), a mixed load of every write and read kind on hot users, and a kith
//! server, a Cassandra node or a Redis node killed or paused during it, or a kith server's or
//! a Cassandra node's clock skewed and stepped, or a Cassandra node's disk filled, or its
//! network links cut (from the other nodes, or from them and the clients). The checker must
//! find no anomaly of any kind (docs/service.md, "Several servers").

mod common;

#[test]
fn every_nemesis_once_finds_no_anomaly_kith_guarantees() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("trial.json");
    let cluster = std::env::var("KITH_TEST_CLUSTER_DIR").ok();
    let mut args = vec![
        "trial",
        "cluster",
        "--runs",
        "1",
        "--load-s",
        "8",
        "--users",
        "300",
        "--clients",
        "8",
        "--settle-s",
        "2",
        // Every feed strategy and both caches, in turn over the nemeses (each combination
        // twice over the thirteen).
        "--feed",
        "pull,push,hybrid",
        "--cache",
        "aside,write-back",
        "--out",
        common::p(&out),
    ];
    match &cluster {
        Some(c) => args.extend(["--cluster-dir", c.as_str()]),
        None => args.extend(["--base", "127.0.5.1", "--redis-port", "6392"]),
    }
    common::ok(&args);
    let report = common::json(&std::fs::read_to_string(&out).unwrap());
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 13, "one run per nemesis");
    for r in runs {
        let nemesis = r["nemesis"].as_str().unwrap();
        for (kind, n) in r["anomalies"]["counts"].as_object().unwrap() {
            assert_eq!(n, 0, "{nemesis}: {kind}: {}", r["anomalies"]["examples"]);
        }
        let acked: u64 =
            r["ops"].as_object().unwrap().values().map(|c| c["ok"].as_u64().unwrap()).sum();
        // An 8 s run on 2 shared cores acknowledges hundreds; a paused node slows it a lot.
        assert!(acked > 30, "{nemesis}: only {acked} operations acknowledged");
        assert!(r["unknown_share"].as_f64().unwrap() < 0.05, "{nemesis}: {}", r["unknown_share"]);
        let faults = r["faults"].as_array().unwrap();
        assert_eq!(faults.is_empty(), nemesis == "none", "{nemesis}: {faults:?}");
    }
}
