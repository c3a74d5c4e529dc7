//! What the load driver sends: a SONETOR trace replayed, a LinkBench-like mix over Parker's
//! API, or Bondhu's friend-access workloads.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use kith_graph::{Graph, WeightModel, edge_weights};
use rand::Rng;
use rand_pcg::Pcg64Mcg;
use serde_json::json;

use crate::error::{Error, Result};
use crate::sonetor::{Activity, Event};

/// One HTTP request to send.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// The operation it counts under.
    pub op: &'static str,
    /// GET, POST, PUT or DELETE.
    pub method: &'static str,
    /// Path and query.
    pub path: String,
    /// JSON body.
    pub body: Option<serde_json::Value>,
}

impl Request {
    fn get(op: &'static str, path: String) -> Request {
        Request { op, method: "GET", path, body: None }
    }
}

/// A source of requests shared by all clients.
pub trait Source: Send + Sync {
    /// The `i`-th request (a trace ends with `None`; mixes never end).
    fn next(&self, i: u64, rng: &mut Pcg64Mcg) -> Option<Request>;
    /// The operations it can produce, for the report's order.
    fn ops(&self) -> Vec<&'static str>;
}

/// A trace replayed in order: Publish → `POST /posts`, Retrieve → `GET /users/{u}/feed`.
#[derive(Debug)]
pub struct TraceSource {
    events: Vec<Event>,
}

impl TraceSource {
    /// Replays these events.
    pub fn new(events: Vec<Event>) -> TraceSource {
        TraceSource { events }
    }

    /// How many events.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

impl Source for TraceSource {
    fn next(&self, i: u64, _: &mut Pcg64Mcg) -> Option<Request> {
        let e = self.events.get(usize::try_from(i).ok()?)?;
        Some(match e.activity {
            Activity::Publish => Request {
                op: "publish",
                method: "POST",
                path: "/posts".into(),
                body: Some(
                    json!({"author": e.user, "content": "x".repeat(e.attr.clamp(1, 65_536) as usize)}),
                ),
            },
            Activity::Retrieve => Request::get(
                "retrieve",
                format!("/users/{}/feed?limit={}", e.user, e.attr.clamp(1, 1000)),
            ),
        })
    }

    fn ops(&self) -> Vec<&'static str> {
        vec!["publish", "retrieve"]
    }
}

/// LinkBench's operation shares (percent) and kith's endpoint for each.
pub(crate) const LINKBENCH: [(&str, f64); 10] = [
    ("getlinklist", 50.7),
    ("getnode", 12.9),
    ("addlink", 9.0),
    ("updatelink", 8.0),
    ("updatenode", 7.4),
    ("countlink", 4.9),
    ("deletelink", 3.0),
    ("addnode", 2.6),
    ("deletenode", 1.0),
    ("getlink", 0.5),
];

/// New users made by `addnode` get ids from here up.
pub(crate) const NEW_NODE_BASE: u64 = 1 << 50;

/// The LinkBench-like mix over Parker's API (users drawn uniformly from `users`):
/// getlinklist `GET /users/u/friends?limit=100`, getnode `GET /users/u/profile`, addlink and
/// updatelink `POST /users/u/friends/v` (kith's links carry no payload, so an update is an
/// idempotent re-add), updatenode `PUT /users/u/profile`, countlink
/// `GET /users/u/friends?limit=1` (its `total`), deletelink `DELETE /users/u/friends/v`,
/// addnode `PUT /users/n` (a new user with one friend), deletenode `PUT /users/n` with no
/// friends (kith has no user deletion: the node is detached), getlink
/// `GET /paths/shortest?from=u&to=v&max_hops=1`.
#[derive(Debug)]
pub struct LinkBench {
    users: Vec<u64>,
    cumulative: Vec<f64>,
    next_node: AtomicU64,
    added: Mutex<Vec<u64>>,
}

impl LinkBench {
    /// A mix over these users (at least two).
    pub fn new(users: Vec<u64>, seed: u64) -> Result<LinkBench> {
        if users.len() < 2 {
            return Err(Error::Config {
                origin: "linkbench".into(),
                reason: "needs at least two users".into(),
            });
        }
        let mut acc = 0.0;
        let cumulative = LINKBENCH
            .iter()
            .map(|(_, p)| {
                acc += p;
                acc
            })
            .collect();
        // Distinct new ids per run, so repeated runs against one server do not collide.
        let base = NEW_NODE_BASE + (seed % 1024) * (1 << 36);
        Ok(LinkBench {
            users,
            cumulative,
            next_node: AtomicU64::new(base),
            added: Mutex::new(Vec::new()),
        })
    }
}

impl Source for LinkBench {
    fn next(&self, _: u64, rng: &mut Pcg64Mcg) -> Option<Request> {
        let x = rng.random_range(0.0..*self.cumulative.last().expect("ten shares"));
        let k = self.cumulative.iter().position(|&c| x < c).unwrap_or(LINKBENCH.len() - 1);
        let op = LINKBENCH[k].0;
        let u = self.users[rng.random_range(0..self.users.len())];
        let mut v = self.users[rng.random_range(0..self.users.len())];
        if v == u {
            v = self.users
                [(self.users.iter().position(|&w| w == u).unwrap_or(0) + 1) % self.users.len()];
        }
        Some(match op {
            "getlinklist" => Request::get(op, format!("/users/{u}/friends?limit=100")),
            "getnode" => Request::get(op, format!("/users/{u}/profile")),
            "addlink" | "updatelink" => {
                Request { op, method: "POST", path: format!("/users/{u}/friends/{v}"), body: None }
            }
            "updatenode" => Request {
                op,
                method: "PUT",
                path: format!("/users/{u}/profile"),
                body: Some(
                    json!({"name": format!("user {u}"), "age": rng.random_range(13..90), "fields": {"v": rng.random::<u32>().to_string()}}),
                ),
            },
            "countlink" => Request::get(op, format!("/users/{u}/friends?limit=1")),
            "deletelink" => Request {
                op,
                method: "DELETE",
                path: format!("/users/{u}/friends/{v}"),
                body: None,
            },
            "addnode" => {
                let n = self.next_node.fetch_add(1, Ordering::Relaxed);
                self.added.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(n);
                Request {
                    op,
                    method: "PUT",
                    path: format!("/users/{n}"),
                    body: Some(json!({"profile": {"name": format!("new {n}")}, "friends": [u]})),
                }
            }
            "deletenode" => {
                let n = self.added.lock().unwrap_or_else(std::sync::PoisonError::into_inner).pop();
                // The newest node addnode made; before any, a fresh one (created detached).
                let n = n.unwrap_or_else(|| self.next_node.fetch_add(1, Ordering::Relaxed));
                Request {
                    op,
                    method: "PUT",
                    path: format!("/users/{n}"),
                    body: Some(
                        json!({"profile": {"name": format!("detached {n}")}, "friends": []}),
                    ),
                }
            }
            _ => Request::get("getlink", format!("/paths/shortest?from={u}&to={v}&max_hops=1")),
        })
    }

    fn ops(&self) -> Vec<&'static str> {
        LINKBENCH.iter().map(|(o, _)| *o).collect()
    }
}

/// Parker's API call by call (its Table 1), each call equally often, over users listed from
/// the server: `get_user`, `get_profile`, `get_friends_list` (100), `put_user` (a new user
/// with one friend), `put_profile`, `add_friend`, `delete_friend` (undoing an earlier
/// `add_friend` when there is one), `get_all_users` (a page of 100), `get_random_users`
/// (10), `shortest_path` (≤ 6 hops), `get_neighborhood` (2 hops, at most 1,000 users),
/// `exists`, `heart_beat` (`GET /health`) and `get_friends_data` (Bondhu's "list all
/// friends' data": the first 4 KiB of up to 100 friends' blocks).
#[derive(Debug)]
pub struct ParkerCalls {
    users: Vec<u64>,
    next_node: AtomicU64,
    added: Mutex<Vec<(u64, u64)>>,
}

/// The calls of [`ParkerCalls`].
pub(crate) const PARKER_CALLS: [&str; 14] = [
    "get_user",
    "get_profile",
    "exists",
    "heart_beat",
    "get_friends_data",
    "get_friends_list",
    "put_user",
    "put_profile",
    "add_friend",
    "delete_friend",
    "get_all_users",
    "get_random_users",
    "shortest_path",
    "get_neighborhood",
];

impl ParkerCalls {
    /// Calls over these users (at least two).
    pub fn new(users: Vec<u64>, seed: u64) -> Result<ParkerCalls> {
        if users.len() < 2 {
            return Err(Error::Config {
                origin: "parker".into(),
                reason: "needs at least two users".into(),
            });
        }
        let base = NEW_NODE_BASE + 512 * (1 << 36) + (seed % 512) * (1 << 36);
        Ok(ParkerCalls { users, next_node: AtomicU64::new(base), added: Mutex::new(Vec::new()) })
    }
}

impl Source for ParkerCalls {
    fn next(&self, _: u64, rng: &mut Pcg64Mcg) -> Option<Request> {
        let op = PARKER_CALLS[rng.random_range(0..PARKER_CALLS.len())];
        let u = self.users[rng.random_range(0..self.users.len())];
        let mut v = self.users[rng.random_range(0..self.users.len())];
        if v == u {
            v = self.users[(rng.random_range(1..self.users.len())
                + self.users.iter().position(|&w| w == u).unwrap_or(0))
                % self.users.len()];
        }
        let added = || self.added.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Some(match op {
            "get_user" => Request::get(op, format!("/users/{u}")),
            "get_profile" => Request::get(op, format!("/users/{u}/profile")),
            "exists" => Request::get(op, format!("/users/{u}/exists")),
            "heart_beat" => Request::get(op, "/health".into()),
            "get_friends_data" => {
                Request::get(op, format!("/users/{u}/friends/data?fetch_bytes=4096&limit=100"))
            }
            "get_friends_list" => Request::get(op, format!("/users/{u}/friends?limit=100")),
            "put_user" => {
                let n = self.next_node.fetch_add(1, Ordering::Relaxed);
                Request {
                    op,
                    method: "PUT",
                    path: format!("/users/{n}"),
                    body: Some(json!({"profile": {"name": format!("new {n}")}, "friends": [u]})),
                }
            }
            "put_profile" => Request {
                op,
                method: "PUT",
                path: format!("/users/{u}/profile"),
                body: Some(json!({"name": format!("user {u}"), "age": rng.random_range(13..90)})),
            },
            "add_friend" => {
                added().push((u, v));
                Request { op, method: "POST", path: format!("/users/{u}/friends/{v}"), body: None }
            }
            "delete_friend" => {
                let (a, b) = added().pop().unwrap_or((u, v));
                Request {
                    op,
                    method: "DELETE",
                    path: format!("/users/{a}/friends/{b}"),
                    body: None,
                }
            }
            "get_all_users" => Request::get(op, "/users?limit=100".into()),
            "get_random_users" => Request::get(op, "/users/random?n=10".into()),
            "shortest_path" => {
                Request::get(op, format!("/paths/shortest?from={u}&to={v}&max_hops=6"))
            }
            _ => Request::get(
                "get_neighborhood",
                format!("/users/{u}/neighborhood?hops=2&limit=1000"),
            ),
        })
    }

    fn ops(&self) -> Vec<&'static str> {
        PARKER_CALLS.to_vec()
    }
}

/// Bondhu's friend-access workloads: a user drawn uniformly, then one of their friends with
/// probability proportional to the edge weight of the model (uniform: every friend alike;
/// preferential: by the friends' degrees; overlap: by common friends), and that friend's
/// profile read: `GET /users/f/profile`.
#[derive(Debug)]
pub struct FriendAccess {
    ids: Vec<u64>,
    offsets: Vec<u64>,
    targets: Vec<u32>,
    /// Prefix sums of the weights, aligned with the adjacency entries.
    cumulative: Vec<f64>,
    with_friends: Vec<u32>,
}

impl FriendAccess {
    /// The workload of `model` over an undirected graph (the store's friendships).
    pub fn new(graph: &Graph, model: WeightModel) -> Result<FriendAccess> {
        let weights = edge_weights(graph, model).map_err(|e| Error::Config {
            origin: "bondhu workload".into(),
            reason: e.to_string(),
        })?;
        let csr = graph.out_csr();
        let offsets = csr.offsets().to_vec();
        let mut targets = Vec::with_capacity(csr.num_entries());
        let mut with_friends = Vec::new();
        for u in 0..graph.num_nodes() as u32 {
            targets.extend_from_slice(graph.neighbors(u));
            if !graph.neighbors(u).is_empty() {
                with_friends.push(u);
            }
        }
        if with_friends.is_empty() {
            return Err(Error::Config {
                origin: "bondhu workload".into(),
                reason: "the graph has no edges".into(),
            });
        }
        let mut acc = 0.0;
        let cumulative = weights
            .iter()
            .map(|w| {
                acc += w;
                acc
            })
            .collect();
        Ok(FriendAccess {
            ids: graph.original_ids().to_vec(),
            offsets,
            targets,
            cumulative,
            with_friends,
        })
    }

    /// Draws (user, friend), original ids.
    pub fn draw(&self, rng: &mut Pcg64Mcg) -> (u64, u64) {
        let u = self.with_friends[rng.random_range(0..self.with_friends.len())] as usize;
        let (lo, hi) = (self.offsets[u] as usize, self.offsets[u + 1] as usize);
        let base = if lo == 0 { 0.0 } else { self.cumulative[lo - 1] };
        let x = base + rng.random_range(0.0..(self.cumulative[hi - 1] - base));
        let k = lo + self.cumulative[lo..hi].partition_point(|&c| c <= x).min(hi - lo - 1);
        (self.ids[u], self.ids[self.targets[k] as usize])
    }

    /// Draws a user uniformly and up to `k` of their friends without replacement, each next
    /// one with probability proportional to its weight among those left (Efraimidis and
    /// Spirakis's keys `r^(1/w)`; friends of weight 0 come last). Original ids; the friends
    /// in the order drawn.
    pub fn draw_friends(&self, rng: &mut Pcg64Mcg, k: usize) -> (u64, Vec<u64>) {
        let u = self.with_friends[rng.random_range(0..self.with_friends.len())] as usize;
        let (lo, hi) = (self.offsets[u] as usize, self.offsets[u + 1] as usize);
        let mut keyed: Vec<(f64, u32)> = (lo..hi)
            .map(|i| {
                let w = self.cumulative[i] - if i == 0 { 0.0 } else { self.cumulative[i - 1] };
                let r: f64 = rng.random();
                let key = if w > 0.0 { r.powf(1.0 / w) } else { r - 2.0 };
                (key, self.targets[i])
            })
            .collect();
        keyed.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
        let friends = keyed.iter().take(k).map(|&(_, t)| self.ids[t as usize]).collect();
        (self.ids[u], friends)
    }
}

impl Source for FriendAccess {
    fn next(&self, _: u64, rng: &mut Pcg64Mcg) -> Option<Request> {
        let (_, f) = self.draw(rng);
        Some(Request::get("friend_access", format!("/users/{f}/profile")))
    }

    fn ops(&self) -> Vec<&'static str> {
        vec!["friend_access"]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn linkbench_shares() {
        let lb = LinkBench::new((0..100).collect(), 1).unwrap();
        let mut rng = Pcg64Mcg::seed_from_u64(2);
        let n = 200_000;
        let mut counts = std::collections::HashMap::new();
        for i in 0..n {
            *counts.entry(lb.next(i, &mut rng).unwrap().op).or_insert(0u64) += 1;
        }
        for (op, share) in LINKBENCH {
            let got = 100.0 * counts[op] as f64 / n as f64;
            assert!((got - share).abs() < 0.35, "{op}: {got} vs {share}");
        }
    }

    #[test]
    fn friend_access_follows_the_weights() {
        // A star 0-{1,2,3} plus an edge 1-2: from 0, overlap weights are 2, 2, 1.
        let g = Graph::from_edges(vec![0, 1, 2, 3], false, vec![(0, 1), (0, 2), (0, 3), (1, 2)]);
        let fa = FriendAccess::new(&g, WeightModel::Overlap).unwrap();
        let mut rng = Pcg64Mcg::seed_from_u64(5);
        let mut from0 = [0u64; 4];
        for _ in 0..200_000 {
            let (u, f) = fa.draw(&mut rng);
            assert!(g.neighbors(u as u32).contains(&(f as u32)));
            if u == 0 {
                from0[f as usize] += 1;
            }
        }
        let total = (from0[1] + from0[2] + from0[3]) as f64;
        assert!((from0[3] as f64 / total - 0.2).abs() < 0.01, "{from0:?}");
        let uni = FriendAccess::new(&g, WeightModel::Uniform).unwrap();
        let mut c = [0u64; 4];
        for _ in 0..100_000 {
            let (u, f) = uni.draw(&mut rng);
            if u == 0 {
                c[f as usize] += 1;
            }
        }
        let t = (c[1] + c[2] + c[3]) as f64;
        assert!((c[3] as f64 / t - 1.0 / 3.0).abs() < 0.015, "{c:?}");
    }

    #[test]
    fn drawing_several_friends_follows_the_weights_without_repeats() {
        let g = Graph::from_edges(vec![0, 1, 2, 3], false, vec![(0, 1), (0, 2), (0, 3), (1, 2)]);
        let fa = FriendAccess::new(&g, WeightModel::Overlap).unwrap();
        let mut rng = Pcg64Mcg::seed_from_u64(9);
        let (mut first3, mut from0) = (0u64, 0u64);
        for _ in 0..100_000 {
            let (u, one) = fa.draw_friends(&mut rng, 1);
            if u == 0 {
                from0 += 1;
                first3 += u64::from(one == [3]);
            }
            let (u, two) = fa.draw_friends(&mut rng, 2);
            assert_eq!(two.len(), g.neighbors(u as u32).len().min(2));
            assert!(two.iter().all(|f| g.neighbors(u as u32).contains(&(*f as u32))));
            assert!(two.len() < 2 || two[0] != two[1]);
            let (u, all) = fa.draw_friends(&mut rng, 10);
            let mut all: Vec<u32> = all.iter().map(|&f| f as u32).collect();
            all.sort_unstable();
            assert_eq!(all, g.neighbors(u as u32));
        }
        // The first friend drawn from 0 is 3 with probability 1 / (2 + 2 + 1).
        assert!((first3 as f64 / from0 as f64 - 0.2).abs() < 0.01, "{first3} of {from0}");
    }

    #[test]
    fn trace_maps_to_posts_and_feeds() {
        let t = TraceSource::new(vec![
            Event { ts: 0.0, activity: Activity::Publish, user: 4, attr: 3 },
            Event { ts: 1.0, activity: Activity::Retrieve, user: 5, attr: 20 },
        ]);
        let mut rng = Pcg64Mcg::seed_from_u64(0);
        let p = t.next(0, &mut rng).unwrap();
        assert_eq!((p.method, p.path.as_str()), ("POST", "/posts"));
        assert_eq!(p.body.unwrap()["content"], "xxx");
        assert_eq!(t.next(1, &mut rng).unwrap().path, "/users/5/feed?limit=20");
        assert!(t.next(2, &mut rng).is_none());
    }
}
