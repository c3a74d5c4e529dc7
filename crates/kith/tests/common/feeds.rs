//! The scripted feed history the feed tests share: follows, posts, backfill and removal,
//! checked against a brute-force feed after every phase, on one server or several.

use std::collections::{BTreeMap, BTreeSet};

use reqwest::blocking::Client;
use serde_json::json;

use super::Server;
use super::service::body;

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
/// The server flags the scenario runs under: a strategy and a cache mode, with a short
/// timeline and a low celebrity bar, so floors, trimming and the pulled celebrity (user 0,
/// 11 followers) all take part.
pub fn scenario_args<'a>(feed: &'a str, cache: &'a str) -> Vec<&'a str> {
    vec!["--feed", feed, "--cache", cache, "--timeline-len", "7", "--celebrity-threshold", "5"]
}

pub fn read_feed(server: &Server, http: &Client, uid: u64, limit: usize) -> Vec<String> {
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
/// each phase. Returns every feed read, for comparison across configurations. With several
/// servers, each request goes to the next one in turn, so every read is served by another
/// server than the writes before it.
pub fn feed_scenario(servers: &[&Server], http: &Client) -> Vec<Vec<String>> {
    let turn = std::cell::Cell::new(0usize);
    let next = || {
        let s = servers[turn.get() % servers.len()];
        turn.set(turn.get() + 1);
        s
    };
    let users: Vec<u64> = (0..12).collect();
    let mut follows: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    let mut posts: Vec<(u64, String)> = Vec::new();
    let mut reads = Vec::new();
    let follow = |follows: &mut BTreeMap<u64, BTreeSet<u64>>, u: u64, targets: Vec<u64>| {
        let (s, r) = body(
            http.post(next().url(&format!("/users/{u}/follow")))
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
                http.post(next().url("/posts"))
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
        for s in servers {
            s.settle(http);
        }
        for &u in &users {
            for limit in [3, 50] {
                let got = read_feed(next(), http, u, limit);
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
    let (s, _) = body(http.delete(next().url("/users/2/follow/0")).send().unwrap());
    assert_eq!(s, 200);
    follows.get_mut(&2).unwrap().remove(&0);
    check(&follows, &posts, &mut reads);
    for &a in &users {
        post(&mut posts, a, 2);
    }
    check(&follows, &posts, &mut reads);
    reads
}
