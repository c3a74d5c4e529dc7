//! `kith serve --redis` (push feeds, cache-aside) under Redis faults, with mixed load from
//! client threads: Redis killed with SIGKILL and restarted empty, paused with SIGSTOP and
//! continued, refusing writes as the replica of a dead master (READONLY), refusing writes
//! for want of memory (`maxmemory` 1, `noeviction`). For each fault: requests tried, the
//! statuses the clients saw, the slowest answer, how long until `/health` says ok again;
//! and at the end, that nothing acknowledged is lost (every acknowledged post readable,
//! every acknowledged friendship change visible to strong and eventual reads, every
//! acknowledged post of a followee in the follower's feed).
//!
//! `KITH_FAULTS_JSON=<file>` also writes the counts as JSON; `KITH_FAULTS_BIN=<path>` runs
//! the trial against another `kith` binary (to see how an older build fares).

mod common;

use std::collections::{BTreeMap, HashMap};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::Server;
use common::service::store;
use kith_feed::testing::RedisServer;
use reqwest::blocking::Client;
use serde_json::{Value, json};

/// Starts `kith serve` (or `KITH_FAULTS_BIN`) over `dir` with `extra` flags.
fn serve(dir: &std::path::Path, extra: &[&str]) -> Server {
    let bin =
        std::env::var("KITH_FAULTS_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_kith").into());
    let mut command = Command::new(bin);
    command.args(["serve", "--dir", common::p(dir), "--addr", "127.0.0.1:0"]).args(extra);
    Server::spawn(command.stderr(Stdio::null()))
}

/// Authors whose posts the readers follow, the readers, and the users whose friendships
/// the clients change (each client its own pairs, so each knows what it acknowledged).
const AUTHORS: u64 = 8;
const READERS: std::ops::Range<u64> = 100..110;
const CLIENTS: u64 = 4;
const PAIRS: u64 = 8;

fn pair(client: u64, k: u64) -> (u64, u64) {
    let u = 120 + 20 * client + 2 * k;
    (u, u + 1)
}

/// What the clients saw, by phase, request kind and status (0: no answer).
#[derive(Default)]
struct Seen {
    counts: BTreeMap<(usize, &'static str, u16), u64>,
    slowest: BTreeMap<usize, Duration>,
    /// Reads that disagreed with a friendship change the client had acknowledged.
    stale: Vec<String>,
}

/// What one client acknowledged.
#[derive(Default)]
struct Acked {
    posts: Vec<(u64, u64, String)>,
    /// Per pair: present or not, when known (`None` after an unacknowledged change).
    friends: HashMap<(u64, u64), Option<bool>>,
}

fn friends_of(http: &Client, base: &str, uid: u64, consistency: &str) -> (u16, Vec<u64>) {
    let url = format!("{base}/users/{uid}/friends?limit=1000&consistency={consistency}");
    match http.get(url).send() {
        Ok(r) => {
            let s = r.status().as_u16();
            let v: Value = r.json().unwrap_or(Value::Null);
            let list =
                v["friends"].as_array().map(|a| a.iter().filter_map(Value::as_u64).collect());
            (s, list.unwrap_or_default())
        }
        Err(_) => (0, Vec::new()),
    }
}

/// One client: posts, reads of posts, feeds and friend lists, friendship changes.
fn client(
    id: u64,
    base: String,
    phase: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Seen>>,
) -> Acked {
    let http = Client::builder().timeout(Duration::from_secs(5)).build().unwrap();
    let mut acked = Acked::default();
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let t = Instant::now();
        let (kind, status) = match i % 6 {
            0 | 3 => {
                let (author, content) = ((id * 3 + i) % AUTHORS, format!("c{id} #{i}"));
                let r = http
                    .post(format!("{base}/posts"))
                    .json(&json!({"author": author, "content": content}))
                    .send();
                let s = r.map_or(0, |r| {
                    let s = r.status().as_u16();
                    if s == 201
                        && let Ok(v) = r.json::<Value>()
                    {
                        acked.posts.push((v["id"].as_u64().unwrap(), author, content));
                    }
                    s
                });
                ("POST /posts", s)
            }
            1 => {
                let Some((pid, _, _)) = acked.posts.last() else { continue };
                let s = http
                    .get(format!("{base}/posts/{pid}"))
                    .send()
                    .map_or(0, |r| r.status().as_u16());
                ("GET /posts/{id}", s)
            }
            2 => {
                let reader = READERS.start + i % (READERS.end - READERS.start);
                let s = http
                    .get(format!("{base}/users/{reader}/feed?limit=20"))
                    .send()
                    .map_or(0, |r| r.status().as_u16());
                ("GET feed", s)
            }
            4 => {
                let (u, v) = pair(id, (i / 6) % PAIRS);
                let add = acked.friends.get(&(u, v)).copied().flatten() != Some(true);
                let url = format!("{base}/users/{u}/friends/{v}");
                let r = if add { http.post(url).send() } else { http.delete(url).send() };
                let s = r.map_or(0, |r| r.status().as_u16());
                acked.friends.insert((u, v), (s == 200).then_some(add));
                (if add { "POST friend" } else { "DELETE friend" }, s)
            }
            _ => {
                let (u, v) = pair(id, (i / 6) % PAIRS);
                let consistency = if i % 12 == 5 { "strong" } else { "eventual" };
                let (s, list) = friends_of(&http, &base, u, consistency);
                if s == 200
                    && let Some(Some(want)) = acked.friends.get(&(u, v))
                    && list.contains(&v) != *want
                {
                    seen.lock().unwrap().stale.push(format!(
                        "{consistency} read of {u} says friend {v}: {}, acknowledged {want}",
                        !want
                    ));
                }
                (
                    if consistency == "strong" {
                        "GET friends strong"
                    } else {
                        "GET friends eventual"
                    },
                    s,
                )
            }
        };
        let took = t.elapsed();
        let p = phase.load(Ordering::Relaxed);
        let mut s = seen.lock().unwrap();
        *s.counts.entry((p, kind, status)).or_default() += 1;
        let slowest = s.slowest.entry(p).or_default();
        *slowest = (*slowest).max(took);
    }
    acked
}

/// Polls `/health` until it says ok; how long that took.
fn until_healthy(http: &Client, server: &Server, limit: Duration) -> Duration {
    let t = Instant::now();
    loop {
        let ok = http.get(server.url("/health")).send().ok().and_then(|r| r.json::<Value>().ok());
        if ok.is_some_and(|v| v["status"] == "ok") {
            return t.elapsed();
        }
        assert!(t.elapsed() < limit, "not healthy {limit:?} after the fault ended");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn redis_faults_under_load_lose_nothing_and_heal_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), "200");
    let mut redis = RedisServer::start();
    let url = redis.url().to_string();
    let flags = ["--feed", "push", "--cache", "aside", "--redis", &url, "--friends-ttl-s", "600"];
    let server = serve(&store, &flags);
    let http = Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    let authors: Vec<u64> = (0..AUTHORS).collect();
    for r in READERS {
        let resp = http
            .post(server.url(&format!("/users/{r}/follow")))
            .json(&json!({"targets": authors}))
            .send()
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200, "follow");
    }
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    type Step = Box<dyn Fn(&mut RedisServer)>;
    let faults: Vec<(&str, Step, Step)> = vec![
        ("kill -9, restart empty", Box::new(|r| r.kill()), Box::new(|r| r.restart())),
        ("SIGSTOP, SIGCONT", Box::new(|r| r.pause()), Box::new(|r| r.resume())),
        (
            "READONLY (replica of a dead master)",
            Box::new(move |r| assert_eq!(r.command(&["REPLICAOF", "127.0.0.1", &dead]), "OK")),
            Box::new(|r| assert_eq!(r.command(&["REPLICAOF", "NO", "ONE"]), "OK")),
        ),
        (
            "OOM (maxmemory 1, noeviction)",
            Box::new(|r| {
                assert_eq!(r.command(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]), "OK");
                assert_eq!(r.command(&["CONFIG", "SET", "maxmemory", "1"]), "OK");
            }),
            Box::new(|r| assert_eq!(r.command(&["CONFIG", "SET", "maxmemory", "0"]), "OK")),
        ),
    ];
    let phase = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(Seen::default()));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let (base, phase, stop, seen) =
                (server.base.clone(), phase.clone(), stop.clone(), seen.clone());
            std::thread::spawn(move || client(c, base, phase, stop, seen))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(800));
    let mut recovered = Vec::new();
    for (f, (_, break_it, mend_it)) in faults.iter().enumerate() {
        phase.store(3 * f + 1, Ordering::Relaxed);
        break_it(&mut redis);
        std::thread::sleep(Duration::from_millis(1200));
        phase.store(3 * f + 2, Ordering::Relaxed);
        mend_it(&mut redis);
        recovered.push(until_healthy(&http, &server, Duration::from_secs(10)));
        phase.store(3 * f + 3, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(700));
    }
    stop.store(true, Ordering::Relaxed);
    let acked: Vec<Acked> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    server.settle(&http);

    // Nothing acknowledged is lost.
    let mut lost = Vec::new();
    let posts: Vec<&(u64, u64, String)> = acked.iter().flat_map(|a| &a.posts).collect();
    for (id, _, content) in &posts {
        let r = http.get(server.url(&format!("/posts/{id}"))).send().unwrap();
        let (s, v) = (r.status().as_u16(), r.json::<Value>().unwrap_or(Value::Null));
        if s != 200 || v["content"] != content.as_str() {
            lost.push(format!("post {id}: {s} {v}"));
        }
    }
    let mut friendships = 0;
    for a in &acked {
        for (&(u, v), &want) in &a.friends {
            let Some(want) = want else { continue };
            friendships += 1;
            for consistency in ["strong", "eventual"] {
                let (s, list) = friends_of(&http, &server.base, u, consistency);
                if s != 200 || list.contains(&v) != want {
                    lost.push(format!("friendship {u}–{v} ({consistency}): {s}, want {want}"));
                }
            }
        }
    }
    let mut newest: Vec<u64> = posts.iter().map(|p| p.0).collect();
    newest.sort_unstable_by(|a, b| b.cmp(a));
    for r in READERS {
        let r2 = http.get(server.url(&format!("/users/{r}/feed?limit=1000"))).send().unwrap();
        let (status, v) = (r2.status().as_u16(), r2.json::<Value>().unwrap_or(Value::Null));
        let Some(page) = v["posts"].as_array() else {
            lost.push(format!("reader {r}'s feed: {status} {v}"));
            continue;
        };
        let ids: Vec<u64> = page.iter().filter_map(|p| p["id"].as_u64()).collect();
        let floor = if ids.len() == 1000 { *ids.last().unwrap() } else { 0 };
        let missing = newest.iter().filter(|&&id| id >= floor && !ids.contains(&id)).count();
        if missing > 0 {
            lost.push(format!("reader {r}'s feed misses {missing} acknowledged posts"));
        }
    }

    // The table.
    let seen = seen.lock().unwrap();
    let mut rows = Vec::new();
    for (f, (name, _, _)) in faults.iter().enumerate() {
        let mut statuses: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
        let mut tried = 0;
        for (&(p, kind, status), &n) in &seen.counts {
            if p == 3 * f + 1 || p == 3 * f + 2 {
                tried += n;
                *statuses
                    .entry(kind.to_string())
                    .or_default()
                    .entry(status.to_string())
                    .or_default() += n;
            }
        }
        let slowest = seen.slowest.get(&(3 * f + 1)).copied().unwrap_or_default();
        rows.push(json!({
            "fault": name,
            "requests_during_fault": tried,
            "statuses": statuses,
            "slowest_ms_during_fault": slowest.as_millis() as u64,
            "healthy_ms_after_fault_ended": recovered[f].as_millis() as u64,
        }));
    }
    let summary = json!({
        "faults": rows,
        "acknowledged_posts": posts.len(),
        "acknowledged_friendship_changes_checked": friendships,
        "acknowledged_lost": lost.len(),
        "stale_reads_during_load": seen.stale.len(),
    });
    eprintln!("{}", serde_json::to_string_pretty(&summary).unwrap());
    if let Ok(path) = std::env::var("KITH_FAULTS_JSON") {
        let commit = Command::new("git").args(["rev-parse", "HEAD"]).output().ok();
        let commit = commit.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        let uname = Command::new("uname").arg("-srm").output().ok();
        let machine = uname.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        let date = Command::new("date").args(["-u", "+%Y-%m-%dT%H:%M:%SZ"]).output().ok();
        let date = date.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
        let mut out = json!({"date": date, "commit": commit, "machine": machine, "cpus": cpus,
            "setup": "kith serve --feed push --cache aside --redis; 4 client threads; 1.2 s per fault; default Redis timeouts (250 ms response, 1 s connect, 1 s probe)"});
        out.as_object_mut().unwrap().extend(summary.as_object().unwrap().clone());
        std::fs::write(&path, serde_json::to_string_pretty(&out).unwrap() + "\n").unwrap();
    }

    assert!(posts.len() > 50 && friendships > 0, "too little acknowledged: {summary}");
    assert!(lost.is_empty(), "acknowledged writes lost: {lost:#?}");
    assert!(seen.stale.is_empty(), "stale friend lists served: {:#?}", seen.stale);
    for (&(p, kind, status), &n) in &seen.counts {
        // Every request is answered from the store, posts included (a cache failure after
        // the commit is a warning in the answer, not an error).
        assert!(status < 500 && status != 0, "phase {p}: {n} × {kind} answered {status}");
    }
    for (f, took) in recovered.iter().enumerate() {
        assert!(*took < Duration::from_secs(5), "{}: healthy only after {took:?}", faults[f].0);
    }
    let slow = seen.slowest.values().max().copied().unwrap_or_default();
    assert!(slow < Duration::from_secs(3), "a request took {slow:?}");
}
