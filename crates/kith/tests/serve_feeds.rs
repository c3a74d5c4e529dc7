//! `kith serve`: Twibo's feeds over real HTTP on loopback, for every feed strategy × cache
//! mode on the in-process and Redis backends, each checked against a brute-force feed
//! after every phase of one scripted history, and all equal to each other.

mod common;

use common::Server;
use common::feeds::{feed_scenario, scenario_args};
use common::service::{body, client, copy_dir, store};
use kith_feed::testing::TestRedis;

#[test]
fn feeds_agree_for_every_strategy_cache_and_backend() {
    let dir = tempfile::tempdir().unwrap();
    let base = store(dir.path(), "100");
    let redis = TestRedis::get();
    let http = client();
    let mut first: Option<Vec<Vec<String>>> = None;
    let mut n = 0;
    for backend in ["in-process", "redis"] {
        for feed in ["pull", "push", "hybrid"] {
            for cache in ["none", "aside", "write-back"] {
                n += 1;
                let copy = dir.path().join(format!("s{n}"));
                copy_dir(&base, &copy);
                let prefix = format!("t{}-{n}", std::process::id());
                let mut args = scenario_args(feed, cache);
                if backend == "redis" {
                    args.extend(["--redis", redis.url(), "--redis-prefix", &prefix]);
                }
                let server = Server::start(&copy, &args);
                let reads = feed_scenario(&[&server], &http);
                let (_, stats) = body(http.get(server.url("/stats")).send().unwrap());
                assert_eq!(stats["backend"], backend, "{stats}");
                if cache != "none" {
                    assert!(
                        stats["hit_rate"]["post"]["hits"].as_u64().unwrap() > 0,
                        "{backend} {feed} {cache}: {stats}"
                    );
                }
                match &first {
                    None => first = Some(reads),
                    Some(f) => assert!(f == &reads, "{backend} {feed} {cache} differs"),
                }
            }
        }
    }
    // On the store on Cassandra: every strategy, with journaled write-back.
    for feed in ["pull", "push", "hybrid"] {
        let keyspace = common::build_cassandra(&dir.path().join("g.kgraph"), "kith");
        let journal = dir.path().join(format!("journal-{feed}"));
        let args = scenario_args(feed, "write-back");
        let server = Server::start_cassandra(&keyspace, &journal, &args);
        let reads = feed_scenario(&[&server], &http);
        assert!(first.as_ref() == Some(&reads), "cassandra {feed} write-back differs");
        drop(server);
        common::drop_cassandra(&keyspace);
    }
    // Write-back with a cache too small to hold anything for long and a slow flush: posts
    // evicted from the cache before they reach the store are still read (pending set).
    let copy = dir.path().join("evicting");
    copy_dir(&base, &copy);
    let server = Server::start(
        &copy,
        &[
            "--feed",
            "push",
            "--cache",
            "write-back",
            "--cache-bytes",
            "600",
            "--flush-interval-ms",
            "400",
        ],
    );
    assert!(feed_scenario(&[&server], &http) == first.unwrap(), "evicting write-back differs");
    let (_, stats) = body(http.get(server.url("/stats")).send().unwrap());
    assert!(stats["hit_rate"]["post"]["misses"].as_u64().unwrap() > 100, "no eviction: {stats}");
}
