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

    // Parker's exists, 200 either way.
    assert_eq!(get("/users/5/exists"), (200, json!({"uid": 5, "exists": true})));
    assert_eq!(get("/users/999999/exists"), (200, json!({"uid": 999999, "exists": false})));

    // A data block as raw bytes: written, read whole and by byte range.
    let block: Vec<u8> = (0u8..10).collect();
    let put = |bytes: Vec<u8>, ct: &str| {
        http.put(server.url("/users/5/data")).header("content-type", ct).body(bytes).send().unwrap()
    };
    assert_eq!(
        body(put(block.clone(), "application/octet-stream")),
        (200, json!({"uid": 5, "data_bytes": 10}))
    );
    let read = |range: Option<&str>| {
        let mut req = http.get(server.url("/users/5/data"));
        if let Some(r) = range {
            req = req.header("range", r);
        }
        let r = req.send().unwrap();
        let content_range =
            r.headers().get("content-range").map(|v| v.to_str().unwrap().to_owned());
        (r.status().as_u16(), content_range, r.bytes().unwrap().to_vec())
    };
    assert_eq!(read(None), (200, None, block.clone()));
    assert_eq!(read(Some("bytes=2-4")), (206, Some("bytes 2-4/10".into()), vec![2, 3, 4]));
    assert_eq!(read(Some("bytes=-3")), (206, Some("bytes 7-9/10".into()), vec![7, 8, 9]));
    assert_eq!(read(Some("bytes=8-99")), (206, Some("bytes 8-9/10".into()), vec![8, 9]));
    let (status, range, text) = read(Some("bytes=10-"));
    assert_eq!((status, range.as_deref()), (416, Some("bytes */10")), "{text:?}");
    assert_eq!(read(Some("bytes=5-2")).0, 416);
    // Bad writes: another content type, a block over 4 MiB, an unknown user.
    let (s, e) = body(put(vec![1], "application/json"));
    assert_eq!((s, e["error"].as_str()), (415, Some("bad_content_type")), "{e}");
    let (s, e) = body(put(vec![0; (4 << 20) + 1], "application/octet-stream"));
    assert_eq!((s, e["error"].as_str()), (413, Some("too_large")), "{e}");
    assert_eq!(read(None), (200, None, block.clone()), "a refused write changes nothing");
    let (s, _) = body(http.put(server.url("/users/999999/data")).body(vec![1]).send().unwrap());
    assert_eq!(s, 404);

    // Bondhu's "list all friends' data": every friend once, each with its block's start.
    let (s, page) = get("/users/5/friends/data?fetch_bytes=3&limit=1000");
    assert_eq!(s, 200, "{page}");
    assert_eq!(page["total"], friends.len());
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut listed = Vec::new();
    for f in page["friends"].as_array().unwrap() {
        let uid = f["uid"].as_u64().unwrap();
        let bytes = base64::Engine::decode(&b64, f["data_base64"].as_str().unwrap()).unwrap();
        let r = http.get(server.url(&format!("/users/{uid}/data"))).send().unwrap();
        let whole = r.bytes().unwrap().to_vec();
        assert_eq!(bytes, whole[..whole.len().min(3)], "friend {uid}");
        listed.push(uid);
    }
    listed.sort_unstable();
    assert_eq!(listed, friends);
    let (_, one) = get("/users/5/friends/data?fetch_bytes=3&limit=1&offset=1");
    assert_eq!(one["friends"].as_array().unwrap().len(), 1.min(friends.len() - 1));
    let (s, e) = get("/users/5/friends/data?fetch_bytes=4194305");
    assert_eq!((s, e["error"].as_str()), (400, Some("bad_parameter")), "{e}");
    let (s, e) = get("/users/5/friends/data?fetch_bytes=4194304&limit=1000");
    assert_eq!((s, e["error"].as_str()), (422, Some("too_expensive")), "{e}");

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
    // Eventual reads (one copy answers; on Cassandra at ONE) see the acknowledged write with
    // every replica up; a level the API does not know is refused.
    assert_eq!(get("/users/5/profile?consistency=eventual").1, get("/users/5/profile").1);
    assert_eq!(get("/users/5?consistency=eventual").1, get("/users/5?consistency=strong").1);
    let (s, e) = get("/users/5?consistency=quorum");
    assert_eq!(s, 400, "{e}");
    assert!(e["message"].as_str().unwrap().contains("consistency"), "{e}");
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
