//! `kith bench failover` once per fault, short: three servers over Cassandra and a Redis
//! Cluster of their own (on 127.0.5.x), mixed load, and midway a Redis master, a kith
//! server, or a Cassandra node with a kith server killed. No acknowledged write may be
//! lost; clients move off a killed kith server without a failed request; failures after a
//! Cassandra node dies end within seconds; a replica takes over a killed Redis master.

mod common;

#[test]
fn one_trial_of_each_fault_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("failover.json");
    common::ok(&[
        "bench",
        "failover",
        "--runs",
        "1",
        "--load-s",
        "9",
        "--users",
        "500",
        "--clients",
        "6",
        "--base",
        "127.0.5.1",
        "--redis-port",
        "6392",
        "--out",
        common::p(&out),
    ]);
    let report = common::json(&std::fs::read_to_string(&out).unwrap());
    let trials = report["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 3, "{report}");
    for t in trials {
        assert_eq!(t["lost"], 0, "{t}");
        assert!(t["acknowledged"].as_u64().unwrap() > 50, "{t}");
        match t["fault"].as_str().unwrap() {
            "kith-server" => assert_eq!(t["failed"], 0, "{t}"),
            // A request a dying node was coordinating may time out once.
            "cassandra-and-kith" => assert!(t["window_s"].as_f64().unwrap() < 5.0, "{t}"),
            "redis-master" => {
                let promoted = t["promoted_s"].as_f64().unwrap();
                assert!(promoted < 10.0, "{t}");
            }
            other => panic!("unknown fault {other}"),
        }
    }
}
