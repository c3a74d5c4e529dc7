//! `kith serve`: bad input (malformed JSON, unknown users, oversized bodies, missing or
//! wrong tokens, ...) gets a JSON 4xx with an error code and changes nothing; tokens guard
//! writes, and reads with `--token-reads`.

mod common;

use common::Server;
use common::service::{body, client, store};
use reqwest::blocking::Client;
use serde_json::{Value, json};

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

/// `n` bytes of 0x07 in base64 (standard alphabet): "BwcH" per three bytes.
fn sevens_base64(n: usize) -> String {
    let tail = ["", "Bw==", "Bwc="][n % 3];
    format!("{}{tail}", "BwcH".repeat(n / 3))
}

#[test]
fn a_data_block_of_the_documented_size_fits_and_one_larger_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), "50");
    let server = Server::start(&store, &[]);
    let http = client();
    let max = 4usize << 20; // kith_store::MAX_DATA_BYTES, the documented limit
    let put = |bytes: usize| {
        let data = sevens_base64(bytes);
        body(
            http.put(server.url("/users/3"))
                .json(&json!({"profile": {"name": "big"}, "data_base64": data}))
                .send()
                .unwrap(),
        )
    };
    let (s, r) = put(max);
    assert_eq!(s, 200, "{r}");
    assert_eq!(r["data_bytes"], max as u64);
    let (s, r) = put(max + 1);
    assert_eq!((s, r["error"].as_str()), (413, Some("too_large")), "{r}");
    // Over a route's byte limit the server answers 413 from the length header without
    // reading the body and closes the connection, so a client still sending may see the
    // connection reset instead of the answer; either way nothing changes. Each of these
    // gets a client of its own, so no request reuses a connection the server closed.
    let refused = |path: &str, json: Value| {
        if let Ok(resp) = client().put(server.url(path)).json(&json).send() {
            let (s, r) = body(resp);
            assert_eq!((s, r["error"].as_str()), (413, Some("too_large")), "{path}: {r}");
        }
    };
    let data = sevens_base64(max + max / 2);
    refused("/users/3", json!({"profile": {"name": "bigger"}, "data_base64": data}));
    // Routes without a data block keep the small limit.
    refused("/users/3/profile", json!({"name": "x".repeat(2 << 20)}));
    let (s, r) = body(client().get(server.url("/users/3")).send().unwrap());
    assert_eq!((s, &r["profile"]["name"], &r["data_bytes"]), (200, &json!("big"), &json!(max)));
}

#[test]
fn a_user_lists_its_first_friends_and_the_total() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), "300");
    let server = Server::start(&store, &[]);
    let http = client();
    let friends: Vec<u64> = (1..=250).collect();
    let (s, put) = body(
        http.put(server.url("/users/0"))
            .json(&json!({"profile": {"name": "popular"}, "friends": friends}))
            .send()
            .unwrap(),
    );
    assert_eq!(s, 200, "{put}");
    let (s, user) = body(http.get(server.url("/users/0")).send().unwrap());
    assert_eq!(s, 200);
    for u in [&put, &user] {
        assert_eq!(u["friends_total"], 250, "{u}");
        let first: Vec<u64> =
            u["friends"].as_array().unwrap().iter().map(|f| f.as_u64().unwrap()).collect();
        assert_eq!(first, (1..=100).collect::<Vec<u64>>());
    }
    let (_, rest) =
        body(http.get(server.url("/users/0/friends?offset=100&limit=1000")).send().unwrap());
    assert_eq!(rest["friends"].as_array().unwrap().len(), 150);
    let (_, doc) = body(http.get(server.url("/openapi.json")).send().unwrap());
    let user_schema = &doc["components"]["schemas"]["UserJson"]["properties"];
    assert!(user_schema.get("friends_total").is_some(), "{user_schema}");
}
