//! `kith demo cluster`, small: its own Cassandra, Redis Cluster and three servers (on
//! 127.0.9.x), a Redis master, a kith server and a Cassandra node killed in turn under load,
//! every acknowledged write read back, and everything stopped afterwards.

mod common;

use std::net::TcpStream;
use std::time::Duration;

#[test]
fn the_cluster_demo_kills_one_of_each_and_loses_nothing() {
    // With --json: the walk-through on stderr, the figures as one document on stdout.
    let run = common::kith(&[
        "demo",
        "cluster",
        "--users",
        "400",
        "--load-s",
        "10",
        "--clients",
        "6",
        "--base",
        "127.0.9.1",
        "--redis-port",
        "6393",
        "--json",
    ]);
    let out = String::from_utf8_lossy(&run.stderr).into_owned();
    assert!(run.status.success(), "{out}");
    let doc = common::json(&String::from_utf8_lossy(&run.stdout));
    assert_eq!(doc["lost"], serde_json::json!([]), "{doc}");
    assert_eq!(doc["killed"].as_array().unwrap().len(), 3, "{doc}");
    let acked = &doc["acknowledged"];
    let sum: u64 =
        ["posts", "friendships", "follows"].iter().map(|k| acked[k].as_u64().unwrap()).sum();
    assert_eq!(doc["checked"].as_u64().unwrap(), sum, "{doc}");
    for line in [
        "killed redis node",
        "killed kith server 3",
        "killed cassandra node 3",
        "0 acknowledged writes lost",
        "stopping everything",
    ] {
        assert!(out.contains(line), "no {line:?} in:\n{out}");
    }
    // Some writes were acknowledged and read back.
    let acked: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("acknowledged writes: "))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no acknowledged writes in:\n{out}"));
    assert!(acked > 30, "{acked} acknowledged writes:\n{out}");
    // Every operation has its latencies.
    for op in ["post", "friend", "follow", "friends", "feed"] {
        assert!(
            out.lines().any(|l| l.starts_with(op) && l.split_whitespace().count() == 6),
            "{op}:\n{out}"
        );
    }
    // Nothing is left listening: Cassandra's CQL port and the Redis nodes.
    let open = |addr: &str| {
        TcpStream::connect_timeout(&addr.parse().unwrap(), Duration::from_millis(300)).is_ok()
    };
    for n in 1..=3 {
        assert!(!open(&format!("127.0.9.{n}:9042")), "cassandra node {n} still up");
    }
    for n in 1..=6 {
        assert!(!open(&format!("127.0.9.{n}:6393")), "redis node {n} still up");
    }
}
