//! The HTTP API, in process: structured requests (users, friendships, follows, posts, feeds,
//! traversals) and raw ones (any method, path, content type and body) sent through the
//! whole application router over a small RocksDB store, checked against a model.
//!
//! Properties: no request gets a 5xx; a raw request (which never carries the token) never
//! changes anything; every structured read agrees with the model of what the acknowledged
//! writes did (users, friend lists, follows, feeds by pull). The store and the model live for
//! the whole fuzzing process, so each input continues the state the previous ones left; uids
//! are kept to a few dozen so friendships and follows collide.

#![no_main]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, OnceLock};

use arbitrary::Arbitrary;
use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use kith_graph::Graph;
use kith_layout::Layout;
use kith_server::{Secret, ServerConfig};
use kith_store::{BuildOptions, DataSpec, LayoutMeta};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use tower::ServiceExt;

#[path = "common.rs"]
mod common;

const TOKEN: &str = "fuzz-token";
/// Users the store is built with (uids 0..BUILT); puts may add uids up to USERS.
const BUILT: u64 = 16;
const USERS: u64 = 24;
/// The newest posts per author the model keeps: more than any feed request shows.
const FEED_WINDOW: usize = 256;

#[derive(Arbitrary, Debug)]
enum Op {
    PutUser { uid: u8, name: String, friends: Vec<u8>, data: Option<Vec<u8>> },
    PutProfile { uid: u8, name: String, age: Option<u8> },
    AddFriend { uid: u8, fid: u8 },
    DeleteFriend { uid: u8, fid: u8 },
    GetUser { uid: u8 },
    GetFriends { uid: u8, offset: u8, limit: u8, eventual: bool },
    Path { from: u8, to: u8, max_hops: u8 },
    Neighborhood { uid: u8, hops: u8, limit: u8 },
    Follow { uid: u8, targets: Vec<u8> },
    Unfollow { uid: u8, target: u8 },
    Post { author: u8, content: String },
    Feed { uid: u8, limit: u8 },
    Raw { method: u8, path: String, content_type: u8, body: Vec<u8> },
}

/// What the acknowledged writes did.
#[derive(Default)]
struct Model {
    users: BTreeSet<u64>,
    friends: BTreeMap<u64, BTreeSet<u64>>,
    follows: BTreeMap<u64, BTreeSet<u64>>,
    /// Post ids by author, ascending.
    posts: BTreeMap<u64, Vec<u64>>,
}

impl Model {
    fn friends_of(&self, uid: u64) -> Vec<u64> {
        self.friends.get(&uid).map(|f| f.iter().copied().collect()).unwrap_or_default()
    }

    fn set_friendship(&mut self, a: u64, b: u64, on: bool) {
        for (x, y) in [(a, b), (b, a)] {
            let set = self.friends.entry(x).or_default();
            if on {
                set.insert(y);
            } else {
                set.remove(&y);
            }
        }
    }

    /// The newest `limit` post ids of the user's followees.
    fn feed(&self, uid: u64, limit: usize) -> Vec<u64> {
        let mut ids: Vec<u64> = self
            .follows
            .get(&uid)
            .into_iter()
            .flatten()
            .flat_map(|a| self.posts.get(a).into_iter().flatten().copied())
            .collect();
        ids.sort_unstable_by(|a, b| b.cmp(a));
        ids.truncate(limit);
        ids
    }
}

struct World {
    runtime: tokio::runtime::Runtime,
    app: Router,
    model: Mutex<Model>,
    _dir: tempfile::TempDir,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let dir = tempfile::tempdir_in(common::scratch()).expect("a scratch directory");
        let graph = Graph::from_edges((0..BUILT).collect(), false, Vec::new());
        let options = BuildOptions { data: DataSpec::Fixed(8), ..BuildOptions::default() };
        let layout = Layout::identity(BUILT as usize);
        let store = kith_store::build(
            &dir.path().join("store"),
            &graph,
            &layout,
            LayoutMeta::default(),
            &options,
        )
        .expect("building the store");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .max_blocking_threads(4)
            .enable_all()
            .build()
            .expect("a runtime");
        let config = ServerConfig { token: Some(Secret::new(TOKEN)), ..ServerConfig::default() };
        let journal = dir.path().join("journal");
        let (app, _feed) = runtime
            .block_on(kith_server::router(Arc::new(store), journal, &config))
            .expect("the application");
        let model = Model { users: (0..BUILT).collect(), ..Model::default() };
        World { runtime, app, model: Mutex::new(model), _dir: dir }
    })
}

/// A uid: mostly one the model may know, sometimes one nobody has.
fn uid(x: u8) -> u64 {
    if x == 255 { 1 << 50 } else { u64::from(x) % USERS }
}

struct Reply {
    status: StatusCode,
    body: Value,
}

impl World {
    fn send(&self, method: Method, uri: &str, body: Option<Value>) -> Reply {
        let mut req = Request::builder()
            .method(method)
            .uri(uri)
            .header("host", "localhost")
            .header("authorization", format!("Bearer {TOKEN}"));
        let body = match body {
            Some(v) => {
                req = req.header("content-type", "application/json");
                Body::from(v.to_string())
            }
            None => Body::empty(),
        };
        self.call(req.body(body).expect("a request"))
    }

    fn call(&self, req: Request<Body>) -> Reply {
        let what = format!("{} {}", req.method(), req.uri());
        let (status, bytes) = self.runtime.block_on(async {
            let resp = self.app.clone().oneshot(req).await.expect("infallible");
            let status = resp.status();
            let bytes = resp.into_body().collect().await.expect("a body").to_bytes();
            (status, bytes)
        });
        assert!(
            !status.is_server_error(),
            "{what}: {status} {}",
            String::from_utf8_lossy(&bytes)
        );
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Reply { status, body }
    }
}

fn ids(v: &Value) -> Vec<u64> {
    v.as_array().map(|a| a.iter().filter_map(Value::as_u64).collect()).unwrap_or_default()
}

fn run(w: &World, m: &mut Model, op: Op) {
    match op {
        Op::PutUser { uid: u, name, friends, data } => {
            let u = uid(u);
            let friends: Vec<u64> = friends.into_iter().take(8).map(uid).collect();
            let mut body = json!({"profile": {"name": name}, "friends": friends});
            if let Some(d) = data {
                use base64::Engine as _;
                body["data_base64"] = base64::engine::general_purpose::STANDARD.encode(d).into();
            }
            let r = w.send(Method::PUT, &format!("/users/{u}"), Some(body));
            let valid = friends.iter().all(|f| m.users.contains(f) && *f != u);
            if r.status.is_success() {
                assert!(valid, "PUT /users/{u} with friends {friends:?} succeeded");
                m.users.insert(u);
                for old in m.friends_of(u) {
                    m.set_friendship(u, old, false);
                }
                for &f in &friends {
                    m.set_friendship(u, f, true);
                }
            } else if !valid {
                assert!(r.status.is_client_error());
            }
        }
        Op::PutProfile { uid: u, name, age } => {
            let u = uid(u);
            let r = w.send(
                Method::PUT,
                &format!("/users/{u}/profile"),
                Some(json!({"name": name, "age": age})),
            );
            if !m.users.contains(&u) {
                assert!(r.status.is_client_error(), "profile of unknown user {u}: {}", r.status);
            }
        }
        Op::AddFriend { uid: u, fid: f } | Op::DeleteFriend { uid: u, fid: f } => {
            let add = matches!(op, Op::AddFriend { .. });
            let (u, f) = (uid(u), uid(f));
            let method = if add { Method::POST } else { Method::DELETE };
            let r = w.send(method, &format!("/users/{u}/friends/{f}"), None);
            let known = m.users.contains(&u) && m.users.contains(&f);
            if known && u != f {
                assert!(r.status.is_success(), "friendship {u}-{f}: {}", r.status);
                let was = m.friends.get(&u).is_some_and(|s| s.contains(&f));
                if let Some(changed) = r.body.get("changed").and_then(Value::as_bool) {
                    assert_eq!(changed, was != add, "friendship {u}-{f} changed flag");
                }
                m.set_friendship(u, f, add);
            } else {
                assert!(r.status.is_client_error(), "friendship {u}-{f}: {}", r.status);
            }
        }
        Op::GetUser { uid: u } => {
            let u = uid(u);
            let r = w.send(Method::GET, &format!("/users/{u}"), None);
            assert_eq!(r.status.is_success(), m.users.contains(&u), "GET /users/{u}");
        }
        Op::GetFriends { uid: u, offset, limit, eventual } => {
            let u = uid(u);
            let c = if eventual { "eventual" } else { "strong" };
            let uri = format!("/users/{u}/friends?offset={offset}&limit={limit}&consistency={c}");
            let r = w.send(Method::GET, &uri, None);
            if !m.users.contains(&u) {
                // 404, or 400 when a parameter is refused before the user is looked up.
                assert!(r.status.is_client_error(), "{uri}: {}", r.status);
            } else if limit > 0 && r.status.is_success() {
                let want: Vec<u64> = m
                    .friends_of(u)
                    .into_iter()
                    .skip(offset as usize)
                    .take(limit as usize)
                    .collect();
                // This process is the only writer and invalidates on write, so even an
                // eventual read must be current.
                assert_eq!(ids(&r.body["friends"]), want, "{uri}");
            }
        }
        Op::Path { from, to, max_hops } => {
            let uri = format!("/paths/shortest?from={}&to={}&max_hops={max_hops}", uid(from), uid(to));
            w.send(Method::GET, &uri, None);
        }
        Op::Neighborhood { uid: u, hops, limit } => {
            let uri = format!("/users/{}/neighborhood?hops={hops}&limit={limit}", uid(u));
            w.send(Method::GET, &uri, None);
        }
        Op::Follow { uid: u, targets } => {
            let u = uid(u);
            let targets: Vec<u64> = targets.into_iter().take(4).map(uid).collect();
            let r = w.send(
                Method::POST,
                &format!("/users/{u}/follow"),
                Some(json!({"targets": targets})),
            );
            if r.status.is_success() {
                let distinct: BTreeSet<u64> = targets.iter().copied().collect();
                let mine = m.follows.get(&u).cloned().unwrap_or_default();
                assert!(
                    !targets.is_empty()
                        && m.users.contains(&u)
                        && distinct.iter().all(|t| m.users.contains(t))
                        && distinct.len() == targets.len()
                        && !distinct.contains(&u)
                        && distinct.iter().all(|t| !mine.contains(t)),
                    "follow {u} -> {targets:?} succeeded"
                );
                m.follows.entry(u).or_default().extend(distinct);
            }
        }
        Op::Unfollow { uid: u, target } => {
            let (u, t) = (uid(u), uid(target));
            let r = w.send(Method::DELETE, &format!("/users/{u}/follow/{t}"), None);
            let following = m.follows.get(&u).is_some_and(|s| s.contains(&t));
            assert_eq!(r.status.is_success(), following, "unfollow {u} -> {t}");
            if following {
                m.follows.entry(u).or_default().remove(&t);
            }
        }
        Op::Post { author, content } => {
            let a = uid(author);
            let r = w.send(Method::POST, "/posts", Some(json!({"author": a, "content": content})));
            if r.status.is_success() {
                assert!(m.users.contains(&a), "post by unknown user {a}");
                let id = r.body["id"].as_u64().expect("a post id");
                let posts = m.posts.entry(a).or_default();
                posts.push(id);
                // A feed shows at most 255 posts (`limit` is a u8), so older ones can go:
                // the model's feeds then cost the same however long the fuzzer runs.
                if posts.len() > 2 * FEED_WINDOW {
                    posts.drain(..posts.len() - FEED_WINDOW);
                }
            }
        }
        Op::Feed { uid: u, limit } => {
            let u = uid(u);
            let r = w.send(Method::GET, &format!("/users/{u}/feed?limit={limit}"), None);
            if r.status.is_success() {
                let got: Vec<u64> = r.body["posts"]
                    .as_array()
                    .map(|a| a.iter().filter_map(|p| p["id"].as_u64()).collect())
                    .unwrap_or_default();
                assert_eq!(got, m.feed(u, limit as usize), "feed of {u}");
            } else if !m.users.contains(&u) {
                assert!(r.status.is_client_error(), "feed of unknown {u}: {}", r.status);
            }
        }
        Op::Raw { method, path, content_type, body } => {
            let methods: [&[u8]; 9] =
                [b"GET", b"POST", b"PUT", b"DELETE", b"PATCH", b"HEAD", b"OPTIONS", b"TRACE", b"BREW"];
            let Ok(method) = Method::from_bytes(methods[method as usize % methods.len()]) else {
                return;
            };
            let path = if path.starts_with('/') { path } else { format!("/{path}") };
            let Ok(mut req) = Request::builder().method(method.clone()).uri(path.as_str()).body(Body::from(body)) else {
                return;
            };
            let types = ["application/json", "text/plain", "application/x-www-form-urlencoded", ""];
            let ct = types[content_type as usize % types.len()];
            if !ct.is_empty() {
                req.headers_mut().insert("content-type", ct.parse().expect("a header value"));
            }
            req.headers_mut().insert("host", "localhost".parse().expect("a header value"));
            let r = w.call(req);
            let writes = [Method::POST, Method::PUT, Method::DELETE, Method::PATCH];
            assert!(
                !(writes.contains(&method) && r.status.is_success()),
                "{method} {path} without the token succeeded"
            );
        }
    }
}

fuzz_target!(|ops: Vec<Op>| {
    let w = world();
    let mut m = w.model.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    for op in ops.into_iter().take(32) {
        run(w, &mut m, op);
    }
});
