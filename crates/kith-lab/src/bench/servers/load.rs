//! What `kith bench servers` sends: the seed (every user follows its friends, then posts),
//! the warm-up reads, and the measured loads: cached reads of one kind, and writes of one
//! kind (new posts, profile writes, and follows and friendships switched on and off over
//! pairs of users that are not friends).

use std::collections::HashSet;
use std::time::Duration;

use anyhow::{Result, ensure};
use kith_workload::{Request, Source};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde_json::json;

/// The operations measured, each alone (a switch measures its two together).
pub(super) const LOADS: [&str; 7] =
    ["friends", "feed", "post", "publish", "profile", "follow-switch", "friend-switch"];

/// The HTTP method of an operation's requests (a switch's two differ by it).
pub(super) fn method_of(op: &str) -> &'static str {
    match op {
        "follow" | "befriend" | "publish" => "POST",
        "unfollow" | "unfriend" => "DELETE",
        "profile" => "PUT",
        _ => "GET",
    }
}

/// Pairs a switch takes in turn: round `r` over them switches every pair on (`r` even) or
/// off, so a pair's next request comes `PAIRS` requests after its last one (far more than
/// the clients have in flight), and a few seconds of load take several rounds.
const PAIRS: usize = 256;
/// Follows the seeding sends at once (posts: 32).
const FOLLOWS_IN_FLIGHT: usize = 4;

/// The source of one load over `users` (and `posts` for post reads); `salt` picks a
/// switch's pairs, so each case switches pairs of its own.
pub(super) fn source(
    load: &'static str,
    users: &[u64],
    posts: &[u64],
    friends: &HashSet<(u64, u64)>,
    salt: u64,
) -> Box<dyn Source> {
    match load {
        "follow-switch" => Box::new(Switch::new(["follow", "unfollow"], users, friends, salt)),
        "friend-switch" => Box::new(Switch::new(["befriend", "unfriend"], users, friends, salt)),
        op => Box::new(One { op, users: users.to_vec(), posts: posts.to_vec() }),
    }
}

/// Requests of one kind, for random users or posts.
struct One {
    op: &'static str,
    users: Vec<u64>,
    posts: Vec<u64>,
}

impl Source for One {
    fn next(&self, i: u64, rng: &mut Pcg64Mcg) -> Option<Request> {
        let u = self.users[rng.random_range(0..self.users.len())];
        let (method, path, body) = match self.op {
            "friends" => {
                ("GET", format!("/users/{u}/friends?consistency=eventual&limit=1000"), None)
            }
            "feed" => ("GET", format!("/users/{u}/feed?limit=20"), None),
            "post" => (
                "GET",
                format!("/posts/{}", self.posts[rng.random_range(0..self.posts.len())]),
                None,
            ),
            "publish" => (
                "POST",
                "/posts".into(),
                Some(json!({"author": u, "content": format!("bench {i}")})),
            ),
            _ => {
                ("PUT", format!("/users/{u}/profile"), Some(json!({"name": format!("bench {i}")})))
            }
        };
        Some(Request { op: self.op, method, path, body })
    }

    fn ops(&self) -> Vec<&'static str> {
        vec![self.op]
    }
}

/// A follow or friendship switched on and off over pairs of users that are not friends.
struct Switch {
    ops: [&'static str; 2],
    pairs: Vec<(u64, u64)>,
}

impl Switch {
    fn new(
        ops: [&'static str; 2],
        users: &[u64],
        friends: &HashSet<(u64, u64)>,
        salt: u64,
    ) -> Switch {
        let mut rng = Pcg64Mcg::seed_from_u64(salt ^ 0x5717_c4e5);
        let mut seen = HashSet::new();
        let mut pairs = Vec::with_capacity(PAIRS);
        while pairs.len() < PAIRS {
            let u = users[rng.random_range(0..users.len())];
            let v = users[rng.random_range(0..users.len())];
            let key = (u.min(v), u.max(v));
            if u != v && !friends.contains(&key) && seen.insert(key) {
                pairs.push((u, v));
            }
        }
        Switch { ops, pairs }
    }
}

impl Source for Switch {
    fn next(&self, i: u64, _: &mut Pcg64Mcg) -> Option<Request> {
        let (u, v) = self.pairs[i as usize % PAIRS];
        let on = (i as usize / PAIRS).is_multiple_of(2);
        let (op, method, path, body) = match (self.ops[0], on) {
            ("follow", true) => {
                (self.ops[0], "POST", format!("/users/{u}/follow"), Some(json!({"targets": [v]})))
            }
            ("follow", false) => (self.ops[1], "DELETE", format!("/users/{u}/follow/{v}"), None),
            (_, true) => (self.ops[0], "POST", format!("/users/{u}/friends/{v}"), None),
            (_, false) => (self.ops[1], "DELETE", format!("/users/{u}/friends/{v}"), None),
        };
        Some(Request { op, method, path, body })
    }

    fn ops(&self) -> Vec<&'static str> {
        self.ops.to_vec()
    }
}

/// Every user follows its friends; `posts` posts by random users; waits for fan-out.
/// Returns the posts' ids.
pub(super) async fn seed(
    base: &str,
    graph: &kith_graph::Graph,
    posts: usize,
    seed: u64,
) -> Result<Vec<u64>> {
    let http = reqwest::Client::builder().timeout(Duration::from_secs(60)).build()?;
    let ids = graph.original_ids();
    let mut jobs = Vec::new();
    for u in 0..graph.num_nodes() as u32 {
        let targets: Vec<u64> = graph.neighbors(u).iter().map(|&v| ids[v as usize]).collect();
        if !targets.is_empty() {
            jobs.push((
                format!("{base}/users/{}/follow", ids[u as usize]),
                json!({"targets": targets}),
            ));
        }
    }
    // Users with friends: an edge list's store has no others.
    let authors: Vec<u64> = (0..graph.num_nodes() as u32)
        .filter(|&u| !graph.neighbors(u).is_empty())
        .map(|u| ids[u as usize])
        .collect();
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    for i in 0..posts {
        let author = authors[rng.random_range(0..authors.len())];
        jobs.push((
            format!("{base}/posts"),
            json!({"author": author, "content": format!("post {i} of the benchmark")}),
        ));
    }
    let mut made = Vec::new();
    let mut in_flight = tokio::task::JoinSet::new();
    let follows = jobs.len() - posts;
    let mut jobs = jobs.into_iter().enumerate().peekable();
    loop {
        // A follow of all of a user's friends is many lightweight transactions: a few at
        // once, as 32 overloaded a cluster sharing 2 cores past the servers' timeout.
        let limit = |n: usize| if n < follows { FOLLOWS_IN_FLIGHT } else { 32 };
        while jobs.peek().is_some_and(|&(n, _)| in_flight.len() < limit(n)) {
            let Some((n, (url, body))) = jobs.next() else { break };
            let http = http.clone();
            in_flight.spawn(async move {
                // Under its own key, so that a write sent again after a 503 (too few replicas
                // answered in time: applied or not) is applied once.
                let key = format!("bench-seed-{seed}-{n}");
                let mut pause = Duration::from_millis(200);
                loop {
                    let r = http.post(&url).header("Idempotency-Key", &key).json(&body);
                    let r = r.send().await?;
                    let status = r.status();
                    let v: serde_json::Value = r.json().await.unwrap_or_default();
                    if status == reqwest::StatusCode::SERVICE_UNAVAILABLE && pause.as_secs() < 4 {
                        tokio::time::sleep(pause).await;
                        pause *= 2;
                        continue;
                    }
                    ensure!(status.is_success(), "seeding: {url}: {status}: {v}");
                    return anyhow::Ok(v["id"].as_u64());
                }
            });
        }
        let Some(done) = in_flight.join_next().await else { break };
        if let Some(id) = done?? {
            made.push(id);
        }
    }
    for _ in 0..6000 {
        let s: serde_json::Value = http.get(format!("{base}/stats")).send().await?.json().await?;
        if s["fanout_queue_depth"] == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    ensure!(made.len() == posts, "seeding: {} of {posts} posts came back with an id", made.len());
    Ok(made)
}

/// Reads every user's friend list and feed and every post once, spread over `urls`.
pub(super) async fn warm(urls: &[String], users: &[u64], posts: &[u64]) -> Result<()> {
    let http = reqwest::Client::builder().timeout(Duration::from_secs(60)).build()?;
    let mut paths = Vec::new();
    for u in users {
        paths.push(format!("/users/{u}/friends?consistency=eventual&limit=1000"));
        paths.push(format!("/users/{u}/feed?limit=20"));
    }
    paths.extend(posts.iter().map(|p| format!("/posts/{p}")));
    let mut in_flight = tokio::task::JoinSet::new();
    for (i, path) in paths.into_iter().enumerate() {
        if in_flight.len() >= 32 {
            in_flight.join_next().await.expect("non-empty")??;
        }
        let url = format!("{}{path}", urls[i % urls.len()]);
        let req = http.get(url);
        in_flight.spawn(async move {
            let r = req.send().await?;
            ensure!(r.status().is_success(), "warming: {}: {}", r.url(), r.status());
            anyhow::Ok(())
        });
    }
    while let Some(r) = in_flight.join_next().await {
        r??;
    }
    Ok(())
}
