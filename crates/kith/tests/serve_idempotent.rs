//! `kith serve` over real HTTP on loopback: idempotent writes (`Idempotency-Key`, Twibo's
//! client ids) that survive a SIGKILL of the server, and durable fan-out: a post
//! acknowledged just before a SIGKILL reaches its followers' Redis timelines after the
//! restart, although Redis refused writes until the kill (`CLIENT PAUSE … WRITE` on a
//! private Redis, so no other test is paused).

mod common;

use common::Server;
use common::service::{body, client, store};
use kith_feed::testing::RedisServer;
use reqwest::blocking::Client;
use serde_json::{Value, json};

fn post(server: &Server, http: &Client, key: Option<&str>, body_json: Value) -> (u16, Value, bool) {
    let mut req = http.post(server.url("/posts")).json(&body_json);
    if let Some(k) = key {
        req = req.header("Idempotency-Key", k);
    }
    let r = req.send().unwrap();
    let replayed = r.headers().get("idempotent-replayed").is_some();
    let (s, v) = body(r);
    (s, v, replayed)
}

fn feed_contents(server: &Server, http: &Client, uid: u64) -> Vec<String> {
    let (s, page) =
        body(http.get(server.url(&format!("/users/{uid}/feed?limit=100"))).send().unwrap());
    assert_eq!(s, 200, "{page}");
    page["posts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["content"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn retried_writes_apply_once_across_a_kill() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), "40");
    let http = client();
    let mut server = Server::start(&store, &[]);
    let (s, first, replayed) =
        post(&server, &http, Some("k1"), json!({"author": 1, "content": "hi"}));
    assert_eq!((s, replayed), (201, false), "{first}");
    let (s, again, replayed) =
        post(&server, &http, Some("k1"), json!({"author": 1, "content": "hi"}));
    assert_eq!((s, replayed, &again["id"]), (201, true, &first["id"]), "{again}");
    let (s, e, _) = post(&server, &http, Some("k1"), json!({"author": 1, "content": "other"}));
    assert_eq!((s, e["error"].as_str()), (422, Some("idempotency_key_reused")), "{e}");
    // Twibo's client ids: the same post again is the stored one; another post's id is 409.
    let mine =
        json!({"author": 2, "content": "mine", "id": 1u64 << 50, "ts_ms": 1_700_000_000_000u64});
    assert_eq!(post(&server, &http, None, mine.clone()).0, 201);
    let (s, v, replayed) = post(&server, &http, None, mine);
    assert_eq!((s, replayed, v["id"].as_u64()), (201, true, Some(1 << 50)), "{v}");
    let theirs = json!({"author": 2, "content": "theirs", "id": 1u64 << 50});
    let (s, e, _) = post(&server, &http, None, theirs);
    assert_eq!((s, e["error"].as_str()), (409, Some("post_id_taken")), "{e}");
    let friend = |key: &str, method: reqwest::Method| {
        let r = http
            .request(method, server.url("/users/3/friends/4"))
            .header("Idempotency-Key", key)
            .send()
            .unwrap();
        let replayed = r.headers().get("idempotent-replayed").is_some();
        let (s, v) = body(r);
        assert_eq!(s, 200, "{v}");
        (v["changed"].as_bool().unwrap(), replayed)
    };
    let added = friend("f1", reqwest::Method::POST);
    let deleted = friend("f2", reqwest::Method::DELETE);
    assert_eq!((added.1, deleted.1), (false, false));
    // A late retry of the add answers as the add did, and does not add the friendship back.
    assert_eq!(friend("f1", reqwest::Method::POST), (added.0, true));
    let (_, user) = body(http.get(server.url("/users/3/friends")).send().unwrap());
    assert!(!user["friends"].as_array().unwrap().contains(&json!(4)), "{user}");

    assert!(!server.signal("-KILL").success());
    let server = Server::start(&store, &[]);
    let (s, after, replayed) =
        post(&server, &http, Some("k1"), json!({"author": 1, "content": "hi"}));
    assert_eq!((s, replayed, &after["id"]), (201, true, &first["id"]), "{after}");
    let (s, follows) = body(
        http.post(server.url("/users/5/follow")).json(&json!({"targets": [1]})).send().unwrap(),
    );
    assert_eq!(s, 200, "{follows}");
    assert_eq!(feed_contents(&server, &http, 5), ["hi"], "one post, not two");
}

#[test]
fn a_post_acknowledged_before_a_kill_reaches_redis_timelines() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), "40");
    let redis = RedisServer::start();
    let http = client();
    let args =
        ["--feed", "push", "--cache", "none", "--redis", redis.url(), "--redis-prefix", "kill"];
    let mut server = Server::start(&store, &args);
    for f in [10, 11, 12] {
        let r = http.post(server.url(&format!("/users/{f}/follow"))).json(&json!({"targets": [1]}));
        assert_eq!(r.send().unwrap().status(), 200);
    }
    assert_eq!(post(&server, &http, None, json!({"author": 1, "content": "before"})).0, 201);
    server.settle(&http);
    for f in [10, 11, 12] {
        assert_eq!(feed_contents(&server, &http, f), ["before"]);
    }
    redis.command(&["CLIENT", "PAUSE", "30000", "WRITE"]);
    let (s, v, _) = post(&server, &http, None, json!({"author": 1, "content": "acknowledged"}));
    assert_eq!(s, 201, "{v}");
    assert!(!server.signal("-KILL").success());
    redis.command(&["CLIENT", "UNPAUSE"]);
    let server = Server::start(&store, &args);
    server.settle(&http);
    for f in [10, 11, 12] {
        assert_eq!(feed_contents(&server, &http, f), ["acknowledged", "before"], "follower {f}");
    }
}
