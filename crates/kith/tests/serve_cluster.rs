//! Several `kith serve` processes over one store on Cassandra, sharing a Redis Cluster: any
//! server answers any request with the same result. Writes go to one server and reads to
//! the others: friend lists (strong and eventual, with the others' caches warm before the
//! write), follow counts, posts by id, and feeds for every strategy with caching aside and
//! shared write-back, against a brute-force feed.

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::Server;
use common::feeds::{feed_scenario, scenario_args};
use common::service::{body, client};
use serde_json::{Value, json};

/// Three servers over `keyspace` with caches on the test Redis Cluster under `prefix`.
fn servers(keyspace: &str, dir: &Path, prefix: &str, extra: &[&str]) -> Vec<Server> {
    let urls = kith_feed::testing::test_redis_cluster().join(",");
    (0..3)
        .map(|i| {
            let journal = dir.join(format!("journal-{prefix}-{i}"));
            let mut args = vec!["--redis-cluster", &urls, "--redis-prefix", prefix];
            args.extend(extra);
            Server::start_cassandra(keyspace, &journal, &args)
        })
        .collect()
}

fn friends(server: &Server, uid: u64, consistency: &str) -> Vec<u64> {
    let http = client();
    let url = server.url(&format!("/users/{uid}/friends?limit=1000&consistency={consistency}"));
    let (s, r) = body(http.get(url).send().unwrap());
    assert_eq!(s, 200, "{r}");
    r["friends"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect()
}

#[test]
fn any_server_answers_like_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("g.kgraph");
    common::lfr_graph(&graph, "100", "8", "3");
    let keyspace = common::build_cassandra(&graph, "kith");
    let prefix = format!("c{}", std::process::id());
    let all = servers(&keyspace, dir.path(), &prefix, &["--cache", "aside"]);
    let [a, b, c] = [&all[0], &all[1], &all[2]];
    let http = client();

    // Friend lists: every server's cache warm, a change through one, both consistencies
    // on the others at once.
    let before = friends(a, 5, "strong");
    let newcomer = (0..100u64).find(|v| *v != 5 && !before.contains(v)).unwrap();
    for s in [a, b, c] {
        assert_eq!(friends(s, 5, "eventual"), before);
        assert!(!friends(s, newcomer, "eventual").contains(&5));
    }
    let (s, r) = body(http.post(a.url(&format!("/users/5/friends/{newcomer}"))).send().unwrap());
    assert_eq!((s, r["changed"].clone()), (200, json!(true)));
    for s in [b, c, a] {
        for consistency in ["eventual", "strong"] {
            assert!(friends(s, 5, consistency).contains(&newcomer), "{} {consistency}", s.base);
            assert!(friends(s, newcomer, consistency).contains(&5), "{} {consistency}", s.base);
        }
    }
    let (s, _) = body(http.delete(b.url(&format!("/users/5/friends/{newcomer}"))).send().unwrap());
    assert_eq!(s, 200);
    for s in [c, a, b] {
        assert_eq!(friends(s, 5, "eventual"), before, "{}", s.base);
        assert!(!friends(s, newcomer, "eventual").contains(&5), "{}", s.base);
    }

    // Follow counts and lists, and posts by id, from every server.
    let (s, r) =
        body(http.post(a.url("/users/7/follow")).json(&json!({"targets": [8, 9]})).send().unwrap());
    assert_eq!(s, 200, "{r}");
    // Keyed, it says what its guarantees cost: the key's claim, the fence's read of the key,
    // its finish, the edge's transaction, the intent and the index, within the store's time.
    let r = http
        .post(b.url("/users/10/follow"))
        .header("Idempotency-Key", "cluster-follow-10")
        .json(&json!({"targets": [8]}))
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let timing = r.headers()["server-timing"].to_str().unwrap().to_owned();
    let dur = |name: &str| -> f64 {
        let entry = timing.split(", ").find(|e| e.starts_with(&format!("{name};")));
        entry.map_or(0.0, |e| e.split("dur=").nth(1).unwrap().parse().unwrap())
    };
    let parts = ["key-claim", "key-read", "key-finish", "edge", "intent", "index"];
    assert!(parts.iter().all(|p| dur(p) > 0.0), "{timing}");
    assert!(parts.iter().map(|p| dur(p)).sum::<f64>() <= dur("store") + 0.01, "{timing}");
    for s in [a, b, c] {
        let (_, f) = body(http.get(s.url("/users/8/follows")).send().unwrap());
        assert_eq!(f["follower_count"], 2, "{}: {f}", s.base);
        let (_, f) = body(http.get(s.url("/users/7/follows")).send().unwrap());
        assert_eq!(f["followee_count"], 2, "{}: {f}", s.base);
    }
    let mut ids = BTreeSet::new();
    for (i, s) in all.iter().cycle().take(30).enumerate() {
        let content = format!("hello {i}");
        let (st, p) = body(
            http.post(s.url("/posts"))
                .json(&json!({"author": 8, "content": content}))
                .send()
                .unwrap(),
        );
        assert_eq!(st, 201, "{p}");
        let id = p["id"].as_u64().unwrap();
        assert!(ids.insert(id), "post id {id} handed out twice");
        let other = &all[(i + 1) % 3];
        let (st, got) = body(http.get(other.url(&format!("/posts/{id}"))).send().unwrap());
        assert_eq!((st, got["content"].clone()), (200, Value::from(content)));
    }
    drop(all);
    common::drop_cassandra(&keyspace);

    // Feeds: each request to the next server, against brute force, every strategy with
    // caching aside and shared write-back; all alike.
    let mut first: Option<Vec<Vec<String>>> = None;
    for feed in ["pull", "push", "hybrid"] {
        for cache in ["aside", "write-back"] {
            let keyspace = common::build_cassandra(&graph, "kith");
            let prefix = format!("c{}-{feed}-{cache}", std::process::id());
            // Write-back never flushes here: every post a feed shows comes from the queue
            // the servers share, not from the store.
            let mut args = scenario_args(feed, cache);
            args.extend(["--flush-interval-ms", "600000"]);
            let all = servers(&keyspace, dir.path(), &prefix, &args);
            let refs: Vec<&Server> = all.iter().collect();
            let reads = feed_scenario(&refs, &http);
            let (_, stats) = body(http.get(all[0].url("/stats")).send().unwrap());
            assert_eq!(stats["backend"], "redis-cluster");
            if cache == "write-back" {
                assert!(stats["writeback_waiting"].as_u64() > Some(50), "{stats}");
            }
            match &first {
                None => first = Some(reads),
                Some(f) => assert!(f == &reads, "{feed} {cache} differs"),
            }
            drop(all);
            common::drop_cassandra(&keyspace);
        }
    }
}

/// `deploy/haproxy.cfg`, with the three servers' real ports and a free one to listen on,
/// in front of three servers: requests through it keep being answered while one server is
/// killed.
#[test]
fn haproxy_in_front_moves_clients_off_a_killed_server() {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("g.kgraph");
    common::lfr_graph(&graph, "100", "8", "3");
    let keyspace = common::build_cassandra(&graph, "kith");
    let prefix = format!("h{}", std::process::id());
    let mut all = servers(&keyspace, dir.path(), &prefix, &["--cache", "aside"]);
    let front = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let template = std::fs::read_to_string(
        std::path::Path::new(
            &std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or(env!("CARGO_MANIFEST_DIR").into()),
        )
        .join("../../deploy/haproxy.cfg"),
    )
    .unwrap();
    let mut config = template.replace("127.0.0.1:7070", &format!("127.0.0.1:{front}"));
    for (i, s) in all.iter().enumerate() {
        let addr = s.base.trim_start_matches("http://");
        config = config.replace(&format!("127.0.0.1:{}", 7071 + i), addr);
    }
    let cfg = dir.path().join("haproxy.cfg");
    std::fs::write(&cfg, config).unwrap();
    let _haproxy = KillOnDrop(
        std::process::Command::new("haproxy")
            .args(["-db", "-f", common::p(&cfg)])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("haproxy (apt-get install haproxy; the test command installs it)"),
    );
    let http = client();
    let url = |path: &str| format!("http://127.0.0.1:{front}{path}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while http.get(url("/health")).send().map_or(true, |r| !r.status().is_success()) {
        assert!(std::time::Instant::now() < deadline, "haproxy did not come up");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let mut posted = Vec::new();
    for i in 0..300 {
        if i == 100 {
            // kill -9 one server; its connections fail and the health check drops it.
            let mut victim = all.remove(1);
            victim.child.kill().unwrap();
            victim.child.wait().unwrap();
        }
        let (s, r) = body(http.get(url(&format!("/users/{}/friends", i % 100))).send().unwrap());
        assert_eq!(s, 200, "read {i}: {r}");
        if i % 10 == 0 {
            let key = format!("haproxy-{prefix}-{i}");
            let (s, p) = body(
                http.post(url("/posts"))
                    .header("Idempotency-Key", key)
                    .json(&json!({"author": i % 100, "content": format!("via haproxy {i}")}))
                    .send()
                    .unwrap(),
            );
            assert_eq!(s, 201, "post {i}: {p}");
            posted.push(p["id"].as_u64().unwrap());
        }
    }
    for id in posted {
        let (s, _) = body(http.get(all[0].url(&format!("/posts/{id}"))).send().unwrap());
        assert_eq!(s, 200, "post {id} through a server directly");
    }
    drop(all);
    common::drop_cassandra(&keyspace);
}

/// A child process killed (and waited for) when dropped.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
