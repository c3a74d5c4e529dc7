//! `kith serve`: Twibo's feeds over real HTTP on loopback, for every feed strategy × cache
//! mode on the in-process and Redis backends, each checked against a brute-force feed
//! after every phase of one scripted history, and all equal to each other.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::Server;
use common::service::{body, client, copy_dir, store};
use kith_feed::testing::TestRedis;
use reqwest::blocking::Client;
use serde_json::json;

/// What a brute-force feed holds: every post by a current followee, newest first.
fn expected_feed(
    follows: &BTreeMap<u64, BTreeSet<u64>>,
    posts: &[(u64, String)],
    uid: u64,
) -> Vec<String> {
    let empty = BTreeSet::new();
    let f = follows.get(&uid).unwrap_or(&empty);
    posts.iter().rev().filter(|(a, _)| f.contains(a)).map(|(_, c)| c.clone()).collect()
}

/// Reads a whole feed, page by page.
fn read_feed(server: &Server, http: &Client, uid: u64, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut before: Option<String> = None;
    for _ in 0..1000 {
        let path = match &before {
            Some(c) => format!("/users/{uid}/feed?limit={limit}&before={c}"),
            None => format!("/users/{uid}/feed?limit={limit}"),
        };
        let (s, page) = body(http.get(server.url(&path)).send().unwrap());
        assert_eq!(s, 200, "{page}");
        for post in page["posts"].as_array().unwrap() {
            out.push(post["content"].as_str().unwrap().to_string());
        }
        match page["next_cursor"].as_str() {
            Some(c) => before = Some(c.to_string()),
            None => return out,
        }
    }
    panic!("feed of {uid} did not end");
}

/// One scripted history of follows, posts and unfollows, checked against brute force after
/// each phase. Returns every feed read, for comparison across configurations.
fn feed_scenario(server: &Server, http: &Client) -> Vec<Vec<String>> {
    let users: Vec<u64> = (0..12).collect();
    let mut follows: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    let mut posts: Vec<(u64, String)> = Vec::new();
    let mut reads = Vec::new();
    let follow = |follows: &mut BTreeMap<u64, BTreeSet<u64>>, u: u64, targets: Vec<u64>| {
        let (s, r) = body(
            http.post(server.url(&format!("/users/{u}/follow")))
                .json(&json!({"targets": targets}))
                .send()
                .unwrap(),
        );
        assert_eq!(s, 200, "{r}");
        follows.entry(u).or_default().extend(targets);
    };
    // User 0 is a celebrity (followed by everyone); the others follow a few.
    for &u in &users[1..] {
        let mut t = vec![0, (u % 11) + 1, ((u * 5) % 11) + 1];
        t.sort_unstable();
        t.dedup();
        t.retain(|&x| x != u);
        follow(&mut follows, u, t);
    }
    let post = |posts: &mut Vec<(u64, String)>, author: u64, n: usize| {
        for _ in 0..n {
            let content = format!("post {} by {author}", posts.len());
            let (s, r) = body(
                http.post(server.url("/posts"))
                    .json(&json!({"author": author, "content": content}))
                    .send()
                    .unwrap(),
            );
            assert_eq!(s, 201, "{r}");
            assert_eq!(r["author"], author);
            posts.push((author, content));
        }
    };
    let check = |follows: &BTreeMap<u64, BTreeSet<u64>>,
                 posts: &[(u64, String)],
                 reads: &mut Vec<Vec<String>>| {
        server.settle(http);
        for &u in &users {
            for limit in [3, 50] {
                let got = read_feed(server, http, u, limit);
                assert_eq!(got, expected_feed(follows, posts, u), "feed of {u}, pages of {limit}");
                reads.push(got);
            }
        }
    };
    for round in 0..3 {
        for &a in &users {
            post(&mut posts, a, 1 + (a as usize + round) % 3);
        }
        check(&follows, &posts, &mut reads);
    }
    // Follow after the posts (backfill) and unfollow (removal).
    follow(&mut follows, 1, vec![9, 10]);
    let (s, _) = body(http.delete(server.url("/users/2/follow/0")).send().unwrap());
    assert_eq!(s, 200);
    follows.get_mut(&2).unwrap().remove(&0);
    check(&follows, &posts, &mut reads);
    for &a in &users {
        post(&mut posts, a, 2);
    }
    check(&follows, &posts, &mut reads);
    reads
}

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
                // A short timeline and a low celebrity bar, so floors, trimming and the
                // pulled celebrity (user 0, 11 followers) all take part.
                let mut args = vec![
                    "--feed",
                    feed,
                    "--cache",
                    cache,
                    "--timeline-len",
                    "7",
                    "--celebrity-threshold",
                    "5",
                ];
                if backend == "redis" {
                    args.extend(["--redis", redis.url(), "--redis-prefix", &prefix]);
                }
                let server = Server::start(&copy, &args);
                let reads = feed_scenario(&server, &http);
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
        let args = [
            "--feed",
            feed,
            "--cache",
            "write-back",
            "--timeline-len",
            "7",
            "--celebrity-threshold",
            "5",
        ];
        let server = Server::start_cassandra(&keyspace, &journal, &args);
        let reads = feed_scenario(&server, &http);
        assert!(first.as_ref() == Some(&reads), "cassandra {feed} write-back differs");
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
    assert!(feed_scenario(&server, &http) == first.unwrap(), "evicting write-back differs");
    let (_, stats) = body(http.get(server.url("/stats")).send().unwrap());
    assert!(stats["hit_rate"]["post"]["misses"].as_u64().unwrap() > 100, "no eviction: {stats}");
}
