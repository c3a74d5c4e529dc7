//! `kith serve`: Parker's API over real HTTP on loopback, on the in-process and the Redis
//! backends and on the store on a 3-node Cassandra cluster: users, profiles, friend pages,
//! friendship changes under strong and eventual reads, paths, neighbourhoods, metrics.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::Server;
use common::service::{body, client, copy_dir, store};
use kith_feed::testing::TestRedis;
use serde_json::json;

#[test]
fn parker_api_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let base = store(dir.path(), "300");
    let redis = TestRedis::get();
    for backend in ["in-process", "redis"] {
        let copy = dir.path().join(backend);
        copy_dir(&base, &copy);
        let prefix = format!("parker-{}", std::process::id());
        let args: Vec<&str> = match backend {
            "redis" => vec!["--redis", redis.url(), "--redis-prefix", &prefix],
            _ => vec![],
        };
        let server = Server::start(&copy, &args);
        parker_api(&server);
    }
    // The same graph on Cassandra, laid out the same way.
    let keyspace = common::build_cassandra(&dir.path().join("g.kgraph"), "kith");
    let server = Server::start_cassandra(&keyspace, &dir.path().join("journal"), &[]);
    parker_api(&server);
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

    // Every answer says where its time went (Server-Timing, ms): an engine read is store
    // time within the total; an unknown user's 404 carries it too.
    for (path, status) in
        [("/users/5", 200), ("/users/5/friends?limit=3", 200), ("/users/999999", 404)]
    {
        let r = http.get(server.url(path)).send().unwrap();
        assert_eq!(r.status().as_u16(), status, "{path}");
        let header = r.headers()["server-timing"].to_str().unwrap().to_owned();
        let dur = |name: &str| -> f64 {
            let entry = header.split(", ").find(|e| e.starts_with(&format!("{name};"))).unwrap();
            entry.split("dur=").nth(1).unwrap().parse().unwrap()
        };
        let (total, store, cache) = (dur("total"), dur("store"), dur("cache"));
        assert!(store > 0.0 && store <= total && cache >= 0.0, "{path}: {header}");
    }

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
