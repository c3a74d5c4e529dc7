//! `kith serve` over real HTTP on loopback: every endpoint, every feed × cache combination
//! on the in-process and Redis backends (checked against a brute-force feed), bad input,
//! tokens, metrics, OpenAPI, graceful shutdown, and kill -9 in write-back mode.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Server, p};
use reqwest::blocking::{Client, Response};
use serde_json::{Value, json};

fn client() -> Client {
    Client::builder().timeout(Duration::from_secs(30)).build().unwrap()
}

fn body(r: Response) -> (u16, Value) {
    let status = r.status().as_u16();
    let text = r.text().unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON ({status}): {text:?}")),
    )
}

/// A Redis for the tests: the one the test command started (`KITH_TEST_REDIS`), or a
/// private `redis-server` on a free port.
struct Redis {
    url: String,
    _child: Option<Child>,
}

impl Redis {
    fn get() -> Redis {
        if let Ok(url) = std::env::var("KITH_TEST_REDIS") {
            return Redis { url, _child: None };
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server not found: install it (apt-get install redis-server) or set KITH_TEST_REDIS");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Redis { url: format!("redis://127.0.0.1:{port}"), _child: Some(child) }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        if let Some(c) = &mut self._child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A store of `nodes` LFR users (ids 0..nodes), built once per test.
fn store(dir: &Path, nodes: &str) -> PathBuf {
    let graph = dir.join("g.kgraph");
    common::lfr_graph(&graph, nodes, "8", "3");
    let store = dir.join("store");
    common::build_store(&graph, &store, "kith");
    store
}

fn copy_dir(from: &Path, to: &Path) {
    let status = Command::new("cp").args(["-r", p(from), p(to)]).status().unwrap();
    assert!(status.success());
}

#[test]
fn parker_api_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let base = store(dir.path(), "300");
    let redis = Redis::get();
    for backend in ["in-process", "redis"] {
        let copy = dir.path().join(backend);
        copy_dir(&base, &copy);
        let prefix = format!("parker-{}", std::process::id());
        let args: Vec<&str> = match backend {
            "redis" => vec!["--redis", &redis.url, "--redis-prefix", &prefix],
            _ => vec![],
        };
        let server = Server::start(&copy, &args);
        parker_api(&server);
    }
}

fn parker_api(server: &Server) {
    let http = client();
    let get = |path: &str| body(http.get(server.url(path)).send().unwrap());

    let (s, u) = get("/users/5");
    assert_eq!(s, 200, "{u}");
    let friends: Vec<u64> = serde_json::from_value(u["friends"].clone()).unwrap();
    assert!(!friends.is_empty());
    let (s, prof) = get("/users/5/profile");
    assert_eq!((s, &prof), (200, &u["profile"]));

    // Friend pages, strong.
    let (_, page) = get("/users/5/friends?offset=1&limit=2");
    assert_eq!(page["friends"], json!(friends[1..3.min(friends.len())]));
    assert_eq!(page["total"], friends.len());

    // A friendship change is seen by strong reads at once, on both sides.
    let newcomer = (0..300u64).find(|v| *v != 5 && !friends.contains(v)).unwrap();
    let (_, eventual_before) = get("/users/5/friends?limit=1000&consistency=eventual");
    assert_eq!(eventual_before["friends"], json!(friends));
    let (s, r) =
        body(http.post(server.url(&format!("/users/5/friends/{newcomer}"))).send().unwrap());
    assert_eq!((s, r["changed"].clone()), (200, json!(true)));
    let (_, r) =
        body(http.post(server.url(&format!("/users/5/friends/{newcomer}"))).send().unwrap());
    assert_eq!(r["changed"], false, "idempotent");
    let (_, strong) = get("/users/5/friends?limit=1000&consistency=strong");
    assert!(strong["friends"].as_array().unwrap().contains(&json!(newcomer)));
    let (_, other) = get(&format!("/users/{newcomer}/friends?limit=1000"));
    assert!(other["friends"].as_array().unwrap().contains(&json!(5)));
    // The cache was invalidated by the write, so eventual sees it too.
    let (_, eventual) = get("/users/5/friends?limit=1000&consistency=eventual");
    assert_eq!(eventual["friends"], strong["friends"]);
    let (_, cached) = get("/users/5/friends?limit=1000&consistency=eventual");
    assert_eq!(cached["friends"], strong["friends"]);
    let (s, _) =
        body(http.delete(server.url(&format!("/users/5/friends/{newcomer}"))).send().unwrap());
    assert_eq!(s, 200);
    assert_eq!(get("/users/5/friends?limit=1000").1["friends"], json!(friends));

    // Profiles and whole users.
    let (s, p2) = body(
        http.put(server.url("/users/5/profile"))
            .json(&json!({"name": "Ada", "age": 36, "fields": {"city": "London"}}))
            .send()
            .unwrap(),
    );
    assert_eq!(s, 200, "{p2}");
    assert_eq!(
        get("/users/5/profile").1,
        json!({"name": "Ada", "age": 36, "fields": {"city": "London"}})
    );
    let (s, nu) = body(
        http.put(server.url("/users/100000"))
            .json(
                &json!({"profile": {"name": "New"}, "friends": [5, 7], "data_base64": "aGVsbG8="}),
            )
            .send()
            .unwrap(),
    );
    assert_eq!(s, 200, "{nu}");
    assert_eq!((nu["friends"].clone(), nu["data_bytes"].clone()), (json!([5, 7]), json!(5)));
    assert!(
        get("/users/7/friends?limit=1000").1["friends"]
            .as_array()
            .unwrap()
            .contains(&json!(100000))
    );

    // Listing every user by cursor: each exactly once.
    let mut seen = BTreeSet::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/users?limit=64&cursor={c}"),
            None => "/users?limit=64".to_string(),
        };
        let (s, page) = get(&path);
        assert_eq!(s, 200, "{page}");
        for u in page["users"].as_array().unwrap() {
            assert!(seen.insert(u["uid"].as_u64().unwrap()), "listed twice: {u}");
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    assert_eq!(seen.len(), 301);
    let (_, random) = get("/users/random?n=25");
    let picked: BTreeSet<u64> =
        random["users"].as_array().unwrap().iter().map(|u| u["uid"].as_u64().unwrap()).collect();
    assert_eq!(picked.len(), 25);

    // Paths and neighbourhoods against a BFS over the API's own friend lists.
    let adjacency: BTreeMap<u64, Vec<u64>> = seen
        .iter()
        .map(|&u| {
            let f = get(&format!("/users/{u}/friends?limit=1000")).1["friends"].clone();
            (u, serde_json::from_value(f).unwrap())
        })
        .collect();
    let bfs = |from: u64| {
        let mut d = BTreeMap::from([(from, 0u32)]);
        let mut q = std::collections::VecDeque::from([from]);
        while let Some(u) = q.pop_front() {
            for &v in &adjacency[&u] {
                if !d.contains_key(&v) {
                    d.insert(v, d[&u] + 1);
                    q.push_back(v);
                }
            }
        }
        d
    };
    for from in [0u64, 17, 100000] {
        let d = bfs(from);
        for to in [1u64, 42, 299] {
            for max in [1u32, 2, 6] {
                let (s, r) = get(&format!("/paths/shortest?from={from}&to={to}&max_hops={max}"));
                assert_eq!(s, 200, "{r}");
                match d.get(&to).filter(|&&h| h <= max) {
                    Some(&h) => {
                        assert_eq!(r["hops"], h, "{from}->{to} max {max}: {r}");
                        let path: Vec<u64> = serde_json::from_value(r["path"].clone()).unwrap();
                        assert!(path.windows(2).all(|w| adjacency[&w[0]].contains(&w[1])), "{r}");
                    }
                    None => assert!(r["path"].is_null(), "{from}->{to} max {max}: {r}"),
                }
            }
        }
        let (_, hood) = get(&format!("/users/{from}/neighborhood?hops=2"));
        let got: Vec<(u64, u32)> = hood["users"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| (n["uid"].as_u64().unwrap(), n["distance"].as_u64().unwrap() as u32))
            .collect();
        let mut want: Vec<(u64, u32)> =
            d.iter().filter(|&(&v, &h)| v != from && h <= 2).map(|(&v, &h)| (v, h)).collect();
        want.sort_by_key(|&(v, h)| (h, v));
        assert_eq!(got, want);
    }

    // OpenAPI lists every route; metrics count them.
    let (_, doc) = get("/openapi.json");
    for path in [
        "/users",
        "/users/random",
        "/users/{uid}",
        "/users/{uid}/profile",
        "/users/{uid}/friends",
        "/users/{uid}/friends/{fid}",
        "/paths/shortest",
        "/users/{uid}/neighborhood",
        "/users/{uid}/follow",
        "/users/{uid}/follow/{target}",
        "/users/{uid}/follows",
        "/posts",
        "/posts/{id}",
        "/users/{uid}/feed",
    ] {
        assert!(doc["paths"][path].is_object(), "openapi lacks {path}");
    }
    assert!(doc["paths"]["/users/{uid}"]["put"].is_object());
    let metrics = http.get(server.url("/metrics")).send().unwrap().text().unwrap();
    assert!(
        metrics.contains(
            r#"kith_http_requests_total{method="GET",route="/users/{uid}/friends",status="200"}"#
        ),
        "{metrics}"
    );
    assert!(metrics.contains("kith_http_request_duration_seconds_bucket"));
    assert!(metrics.contains("kith_fanout_queue_depth"));
    assert!(
        metrics.contains(r#"kith_cache_requests_total{kind="friends",result="hit"}"#),
        "{metrics}"
    );
}

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
    let redis = Redis::get();
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
                    args.extend(["--redis", &redis.url, "--redis-prefix", &prefix]);
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

#[test]
fn bad_input_gets_a_json_4xx_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), "50");
    let server = Server::start(&store, &["--token", "s3cret", "--body-limit", "2048"]);
    let http = client();
    let auth = |r: reqwest::blocking::RequestBuilder| r.header("Authorization", "Bearer s3cret");
    let snapshot = |http: &Client| {
        let get = |path: &str| body(http.get(server.url(path)).send().unwrap()).1;
        (
            get("/users/3"),
            get("/users/4"),
            get("/users/3/follows"),
            get("/users/4/follows"),
            get("/users/3/feed"),
        )
    };
    // Some state to protect.
    let (s, _) = body(
        auth(http.post(server.url("/users/3/follow")))
            .json(&json!({"targets": [4]}))
            .send()
            .unwrap(),
    );
    assert_eq!(s, 200);
    let (s, _) = body(
        auth(http.post(server.url("/posts")))
            .json(&json!({"author": 4, "content": "hi"}))
            .send()
            .unwrap(),
    );
    assert_eq!(s, 201);
    let before = snapshot(&http);

    let cases: Vec<(&str, reqwest::blocking::RequestBuilder, u16, &str)> = vec![
        ("no token", http.post(server.url("/users/3/friends/4")), 401, "unauthorized"),
        (
            "wrong token",
            http.post(server.url("/users/3/friends/4")).header("Authorization", "Bearer nope"),
            401,
            "unauthorized",
        ),
        (
            "garbage JSON",
            auth(http.post(server.url("/posts")))
                .header("content-type", "application/json")
                .body("{author: 3,"),
            400,
            "bad_json",
        ),
        (
            "wrong type",
            auth(http.post(server.url("/posts"))).json(&json!({"author": "three", "content": "x"})),
            400,
            "bad_body",
        ),
        (
            "negative author",
            auth(http.post(server.url("/posts"))).json(&json!({"author": -3, "content": "x"})),
            400,
            "bad_body",
        ),
        (
            "unknown field",
            auth(http.put(server.url("/users/3/profile"))).json(&json!({"name": "x", "nmae": "y"})),
            400,
            "bad_body",
        ),
        (
            "no content type",
            auth(http.post(server.url("/posts"))).body(r#"{"author":3,"content":"x"}"#),
            415,
            "bad_content_type",
        ),
        (
            "oversized body",
            auth(http.post(server.url("/posts")))
                .json(&json!({"author": 3, "content": "x".repeat(5000)})),
            413,
            "too_large",
        ),
        (
            "empty post",
            auth(http.post(server.url("/posts"))).json(&json!({"author": 3, "content": ""})),
            422,
            "invalid",
        ),
        (
            "unknown author",
            auth(http.post(server.url("/posts"))).json(&json!({"author": 999, "content": "x"})),
            404,
            "unknown_user",
        ),
        (
            "self-follow",
            auth(http.post(server.url("/users/3/follow"))).json(&json!({"targets": [3]})),
            422,
            "self_follow",
        ),
        (
            "duplicate follow",
            auth(http.post(server.url("/users/3/follow"))).json(&json!({"targets": [5, 4]})),
            409,
            "already_following",
        ),
        (
            "follow unknown",
            auth(http.post(server.url("/users/3/follow"))).json(&json!({"targets": [5, 999]})),
            404,
            "unknown_user",
        ),
        (
            "no targets",
            auth(http.post(server.url("/users/3/follow"))).json(&json!({"targets": []})),
            400,
            "bad_body",
        ),
        (
            "unfollow not followed",
            auth(http.delete(server.url("/users/3/follow/5"))),
            404,
            "not_following",
        ),
        ("self-friend", auth(http.post(server.url("/users/3/friends/3"))), 422, "self_friendship"),
        (
            "friend unknown",
            auth(http.post(server.url("/users/3/friends/999"))),
            404,
            "unknown_user",
        ),
        (
            "put user unknown friend",
            auth(http.put(server.url("/users/3")))
                .json(&json!({"profile": {"name": "x"}, "friends": [999]})),
            404,
            "unknown_user",
        ),
        (
            "bad base64",
            auth(http.put(server.url("/users/3")))
                .json(&json!({"profile": {"name": "x"}, "data_base64": "@@"})),
            400,
            "bad_body",
        ),
        ("unknown user", http.get(server.url("/users/999")), 404, "unknown_user"),
        ("non-numeric uid", http.get(server.url("/users/abc")), 400, "bad_parameter"),
        ("negative uid", http.get(server.url("/users/-1/profile")), 400, "bad_parameter"),
        ("huge uid", http.get(server.url("/users/99999999999999999999999")), 400, "bad_parameter"),
        (
            "limit too big",
            http.get(server.url("/users/3/friends?limit=1001")),
            400,
            "bad_parameter",
        ),
        ("limit zero", http.get(server.url("/users/3/feed?limit=0")), 400, "bad_parameter"),
        (
            "negative offset",
            http.get(server.url("/users/3/friends?offset=-1")),
            400,
            "bad_parameter",
        ),
        (
            "bad consistency",
            http.get(server.url("/users/3/friends?consistency=maybe")),
            400,
            "bad_parameter",
        ),
        (
            "hops too many",
            http.get(server.url("/users/3/neighborhood?hops=4")),
            400,
            "bad_parameter",
        ),
        ("hops missing", http.get(server.url("/users/3/neighborhood")), 400, "bad_parameter"),
        (
            "max_hops too many",
            http.get(server.url("/paths/shortest?from=1&to=2&max_hops=7")),
            400,
            "bad_parameter",
        ),
        (
            "path unknown user",
            http.get(server.url("/paths/shortest?from=1&to=999")),
            404,
            "unknown_user",
        ),
        ("bad cursor", http.get(server.url("/users/3/feed?before=zz")), 400, "bad_parameter"),
        ("bad users cursor", http.get(server.url("/users?cursor=nope")), 400, "bad_parameter"),
        ("unknown post", http.get(server.url("/posts/12345")), 404, "unknown_post"),
        ("unknown route", http.get(server.url("/nope")), 404, "not_found"),
        ("wrong method", auth(http.patch(server.url("/users/3"))), 405, "method_not_allowed"),
    ];
    for (what, req, status, code) in cases {
        let (s, r) = body(req.send().unwrap());
        assert_eq!((s, r["error"].as_str().unwrap_or("")), (status, code), "{what}: {r}");
        assert!(r["message"].as_str().is_some_and(|m| !m.is_empty()), "{what}: {r}");
    }
    assert_eq!(snapshot(&http), before, "bad requests changed data");
    // Reads stay open without a token; --token-reads closes them.
    drop(server);
    let server = Server::start(&store, &["--token", "s3cret", "--token-reads"]);
    assert_eq!(body(http.get(server.url("/users/3")).send().unwrap()).0, 401);
    let (s, _) = body(
        http.get(server.url("/users/3")).header("Authorization", "Bearer s3cret").send().unwrap(),
    );
    assert_eq!(s, 200);
}

#[test]
fn write_back_loses_no_acknowledged_post_on_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), "50");
    let mut acked: Vec<(u64, String)> = Vec::new();
    // kill -9 rounds, then one SIGTERM; KITH_CRASH_ROUNDS runs a longer test.
    let kills: u64 =
        std::env::var("KITH_CRASH_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(3);
    for round in 0..=kills {
        // A long flush interval keeps most acknowledged posts only in the journal.
        let mut server =
            Server::start(&store, &["--cache", "write-back", "--flush-interval-ms", "700"]);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writers: Vec<_> = (0..4u64)
            .map(|w| {
                let (url, stop) = (server.url("/posts"), stop.clone());
                std::thread::spawn(move || {
                    let http = Client::builder().timeout(Duration::from_secs(5)).build().unwrap();
                    let mut mine = Vec::new();
                    let mut i = 0;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let content = format!("r{round} w{w} #{i}");
                        i += 1;
                        let Ok(r) =
                            http.post(&url).json(&json!({"author": w, "content": content})).send()
                        else {
                            break;
                        };
                        if r.status().as_u16() != 201 {
                            break;
                        }
                        let Ok(v) = r.json::<Value>() else { break };
                        mine.push((v["id"].as_u64().unwrap(), content));
                    }
                    mine
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(400 + 150 * (round % 5)));
        let last = round == kills;
        // kill -9 in the middle of the stream; the last round stops with SIGTERM instead,
        // which must flush the journal and exit cleanly.
        let status = server.signal(if last { "-TERM" } else { "-KILL" });
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for w in writers {
            acked.extend(w.join().unwrap());
        }
        if last {
            assert!(status.success(), "SIGTERM exit: {status}");
            let left: Vec<_> = std::fs::read_dir(store.join("feed-journal")).unwrap().collect();
            assert_eq!(left.len(), 1, "a clean shutdown leaves only the fresh, empty segment");
        }
    }
    assert!(acked.len() > 100, "only {} posts acknowledged", acked.len());
    let server = Server::start(&store, &["--cache", "none"]);
    let http = client();
    for (id, content) in &acked {
        let (s, r) = body(http.get(server.url(&format!("/posts/{id}"))).send().unwrap());
        assert_eq!((s, r["content"].as_str().unwrap_or("")), (200, content.as_str()), "post {id}");
    }
    eprintln!(
        "{} acknowledged posts, all readable after {kills} kill -9 and a SIGTERM",
        acked.len()
    );
}
