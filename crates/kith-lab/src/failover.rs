//! Failover trials of the service on a cluster: three `kith serve` over a 3-node Cassandra
//! and a Redis Cluster (three masters with a replica each) on loopback, a mixed load from
//! clients that spread their requests over the servers (moving off one that fails), and
//! midway one fault: a Redis master killed, a kith server killed, or a Cassandra node and a
//! kith server killed together. Counted: requests, failed requests and the window they fell
//! in, how long Redis took to promote a replica, and every acknowledged write (posts,
//! friendships, follows), read back afterwards through a server that stayed up.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use hdrhistogram::Histogram;
use kith_workload::{Request, Servers, send};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::Serialize;
use serde_json::json;
use tokio::sync::Mutex;

use crate::processes::ChildProcess;
use crate::rig::{Rig, RigConfig};

/// The faults.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fault {
    /// kill -9 the Redis master of a slot the load uses.
    RedisMaster,
    /// kill -9 one kith server of three.
    KithServer,
    /// kill -9 a Cassandra node and a kith server at the same moment.
    CassandraAndKith,
}

impl std::str::FromStr for Fault {
    type Err = String;
    fn from_str(s: &str) -> Result<Fault, String> {
        match s {
            "redis-master" => Ok(Fault::RedisMaster),
            "kith-server" => Ok(Fault::KithServer),
            "cassandra-and-kith" => Ok(Fault::CassandraAndKith),
            _ => Err(format!(
                "unknown fault {s:?}: expected redis-master, kith-server or cassandra-and-kith"
            )),
        }
    }
}

/// How the trials run.
#[derive(Clone, Debug)]
pub struct FailoverConfig {
    /// Faults to try, each `runs` times.
    pub faults: Vec<Fault>,
    pub runs: usize,
    /// Seconds of load per trial; the fault comes at a third of it.
    pub load_s: f64,
    /// Concurrent clients.
    pub clients: usize,
    /// Users in the generated graph.
    pub users: usize,
    /// Where the clusters live (each on its own addresses from `base`).
    pub dir: PathBuf,
    /// The first Cassandra node's address; Redis's nodes use the same addresses.
    pub base: Ipv4Addr,
    /// The Redis Cluster's port.
    pub redis_port: u16,
    /// How long a Redis master may be unreachable before a replica replaces it.
    pub redis_node_timeout: Duration,
    /// Feed strategy and cache mode of the servers.
    pub feed: String,
    pub cache: String,
}

/// One trial.
#[derive(Clone, Debug, Serialize)]
pub struct Trial {
    pub fault: Fault,
    pub run: usize,
    /// What was killed.
    pub killed: String,
    /// Requests answered or failed during the load.
    pub requests: u64,
    /// Requests that failed on every server they were sent to.
    pub failed: u64,
    /// Failed requests by status (`transport`: no answer).
    pub failed_by: std::collections::BTreeMap<String, u64>,
    /// Requests sent again to another server.
    pub retries: u64,
    /// From the kill to the last failed request (0 when none failed).
    pub window_s: f64,
    /// Redis: from the kill until a replica served the killed master's slots.
    pub promoted_s: Option<f64>,
    /// Writes acknowledged (posts, friendships, follows) and checked afterwards.
    pub acknowledged: u64,
    /// Of those, how many a server that stayed up could not find.
    pub lost: u64,
    /// The first few lost, for the report.
    pub lost_examples: Vec<String>,
}

/// The clusters the trials run on (stopped when dropped), with the generated graph loaded.
#[derive(Debug)]
pub struct Stage {
    pub(crate) rig: Rig,
    keyspace: String,
    users: Vec<u64>,
}

/// What the load acknowledged.
#[derive(Default)]
struct Acked {
    posts: Vec<(u64, String)>,
    friendships: BTreeSet<(u64, u64)>,
    follows: BTreeSet<(u64, u64)>,
}

/// Starts the clusters and loads a generated graph under the `kith` layout.
pub fn rig(config: &FailoverConfig) -> Result<Stage> {
    let rig = Rig::up(&RigConfig {
        dir: config.dir.clone(),
        base: config.base,
        redis_port: config.redis_port,
        redis_node_timeout: config.redis_node_timeout,
        heap_mb: 512,
        trial: false,
    })?;
    let lfr = kith_graph::generate::LfrConfig {
        nodes: config.users,
        seed: 11,
        ..kith_graph::generate::LfrConfig::default()
    };
    let graph = kith_graph::generate::lfr(&lfr)?.graph.to_undirected();
    let keyspace = "failover".to_string();
    rig.load(&graph, &keyspace)?;
    let users = (0..graph.num_nodes() as u32).map(|v| graph.original_id(v)).collect();
    Ok(Stage { rig, keyspace, users })
}

/// Runs every trial on `rig`.
pub fn run(config: &FailoverConfig, stage: &mut Stage) -> Result<Vec<Trial>> {
    let mut out = Vec::new();
    for &fault in &config.faults {
        for run in 0..config.runs {
            eprintln!("failover: {fault:?}, run {}", run + 1);
            let trial = one(config, stage, fault, run)?;
            eprintln!(
                "failover: {fault:?}: {} requests, {} failed (window {:.2} s), {} acknowledged, \
                 {} lost{}",
                trial.requests,
                trial.failed,
                trial.window_s,
                trial.acknowledged,
                trial.lost,
                trial.promoted_s.map_or(String::new(), |p| format!(", promoted in {p:.2} s"))
            );
            out.push(trial);
        }
    }
    Ok(out)
}

fn one(config: &FailoverConfig, stage: &mut Stage, fault: Fault, run: usize) -> Result<Trial> {
    let prefix = format!("fo{run}{}", fault_tag(fault));
    let at = Duration::from_secs_f64(config.load_s) / 3;
    let schedule: Vec<(Duration, Kill)> = match fault {
        Fault::RedisMaster => vec![(at, Kill::RedisMaster)],
        Fault::KithServer => vec![(at, Kill::KithServer(3))],
        Fault::CassandraAndKith => vec![(at, Kill::CassandraNode(3)), (at, Kill::KithServer(3))],
    };
    let outcome = load_with_kills(config, stage, &prefix, run as u64, &schedule, None)?;
    restore(&mut stage.rig)?;
    let killed_at = outcome.killed.first().map_or(0.0, |k| k.at_s);
    let window_s = outcome
        .tally
        .failures
        .iter()
        .map(|t| (t.as_secs_f64() - killed_at).max(0.0))
        .fold(0.0, f64::max);
    Ok(Trial {
        fault,
        run,
        killed: outcome.killed.iter().map(|k| k.what.as_str()).collect::<Vec<_>>().join(" and "),
        requests: outcome.tally.requests,
        failed: outcome.tally.failures.len() as u64,
        failed_by: outcome.tally.failed_by,
        retries: outcome.tally.retries,
        window_s,
        promoted_s: outcome.killed.iter().find_map(|k| k.promoted_s),
        acknowledged: outcome.checked,
        lost: outcome.lost.len() as u64,
        lost_examples: outcome.lost.into_iter().take(10).collect(),
    })
}

/// One kill of a schedule.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kill {
    /// The Redis master serving the timeline of the graph's first user (a slot the load
    /// uses); the run goes on once a replica serves its slots.
    RedisMaster,
    /// kith server `n` (1-based; never 1, which reads everything back afterwards).
    KithServer(usize),
    /// Cassandra node `n` (1-based).
    CassandraNode(usize),
}

/// A kill, as it happened.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Killed {
    /// Seconds into the load.
    pub at_s: f64,
    pub what: String,
    /// Redis: seconds from the kill until a replica served the killed master's slots.
    pub promoted_s: Option<f64>,
}

/// What the load saw.
#[derive(Default)]
pub(crate) struct Tally {
    pub requests: u64,
    pub retries: u64,
    /// When each failed request was sent, from the start.
    pub failures: Vec<Duration>,
    pub failed_by: BTreeMap<String, u64>,
    /// Per operation, the latency of every request (µs), retries included.
    pub latency: BTreeMap<&'static str, Histogram<u64>>,
    /// Per second of the load: requests sent in it, and how many of them failed.
    pub seconds: Vec<(u64, u64)>,
}

/// One load with its kills, and the acknowledged writes read back afterwards.
pub(crate) struct Outcome {
    pub tally: Tally,
    pub killed: Vec<Killed>,
    /// Acknowledged writes checked, and a description of each one lost.
    pub checked: u64,
    pub lost: Vec<String>,
    /// Posts, friendships and follows acknowledged.
    pub acked: (usize, usize, usize),
}

/// Starts three servers over `rig` (keys under `prefix`; their standard error to
/// `logs/server-N.log` when `logs` is given), drives the mixed load for `config.load_s`
/// seconds with the kills at their times (printing a line per second and per kill when
/// `logs` is given, as the demo does), then reads every acknowledged write back through
/// server 1 and stops the servers.
pub(crate) fn load_with_kills(
    config: &FailoverConfig,
    stage: &mut Stage,
    prefix: &str,
    seed: u64,
    schedule: &[(Duration, Kill)],
    logs: Option<&Path>,
) -> Result<Outcome> {
    let args: Vec<String> =
        ["--feed", &config.feed, "--cache", &config.cache].iter().map(|s| s.to_string()).collect();
    let (mut servers, urls) = stage.rig.servers(&stage.keyspace, 3, prefix, &args, logs)?;
    let progress = logs.is_some();
    if progress {
        for (i, u) in urls.iter().enumerate() {
            crate::say!("  kith server {} at {u}", i + 1);
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let load = Duration::from_secs_f64(config.load_s);
    let acked = Arc::new(Mutex::new(Acked::default()));
    let tally = Arc::new(Mutex::new(Tally::default()));
    let start = Instant::now();
    let driver = {
        let (urls, users, acked, tally) =
            (urls.clone(), stage.users.clone(), acked.clone(), tally.clone());
        let clients = config.clients;
        runtime.spawn(drive(urls, users, clients, start + load, seed, acked, tally))
    };
    let mut schedule = schedule.to_vec();
    schedule.sort_by_key(|&(at, _)| at);
    let mut killed = Vec::new();
    let mut pending = schedule.into_iter().peekable();
    // The demo's lines: each second once its requests are back (a second after it ends),
    // then the kills that fell in it.
    let mut shown = 0usize;
    let show = |upto: usize, shown: &mut usize, killed: &[Killed], t: &Tally| {
        while *shown < upto {
            let (n, failed) = t.seconds.get(*shown).copied().unwrap_or_default();
            crate::say!("  {:>5} s  {n:>5} requests  {failed:>4} failed", *shown);
            for k in killed.iter().filter(|k| k.at_s as usize == *shown) {
                crate::say!(
                    "  {:>5.1} s  killed {}{}",
                    k.at_s,
                    k.what,
                    k.promoted_s
                        .map_or(String::new(), |p| format!("; a replica took over in {p:.1} s"))
                );
            }
            *shown += 1;
        }
    };
    while start.elapsed() < load {
        let tick = Duration::from_secs(start.elapsed().as_secs() + 1);
        let next = pending.peek().map_or(tick, |&(at, _)| at.min(tick)).min(load);
        std::thread::sleep(next.saturating_sub(start.elapsed()));
        while let Some(&(at, kill)) = pending.peek() {
            if at > start.elapsed() {
                break;
            }
            pending.next();
            killed.push(kill_one(stage, &mut servers, prefix, kill, start)?);
        }
        if progress {
            let done = (start.elapsed().as_secs() as usize).saturating_sub(1);
            show(done, &mut shown, &killed, &runtime.block_on(tally.lock()));
        }
    }
    runtime.block_on(driver).context("the load")??;
    // Let fan-out and write-back settle, then read everything back through server 1.
    std::thread::sleep(Duration::from_secs(2));
    let acked = std::mem::take(&mut *runtime.block_on(acked.lock()));
    let tally = std::mem::take(&mut *runtime.block_on(tally.lock()));
    if progress {
        show(tally.seconds.len(), &mut shown, &killed, &tally);
    }
    let (checked, lost) = runtime.block_on(check(&urls[0], &acked))?;
    drop(servers);
    Ok(Outcome {
        tally,
        killed,
        checked,
        lost,
        acked: (acked.posts.len(), acked.friendships.len(), acked.follows.len()),
    })
}

fn kill_one(
    stage: &mut Stage,
    servers: &mut [Option<ChildProcess>],
    prefix: &str,
    kill: Kill,
    start: Instant,
) -> Result<Killed> {
    let at_s = start.elapsed().as_secs_f64();
    let killed_at = Instant::now();
    let (what, promoted_s) = match kill {
        Kill::RedisMaster => {
            // The victim's slot: the timeline of a user the load reads.
            let key = format!("{prefix}:t:{{{}}}", stage.users[0]);
            let victim = stage.rig.redis.master_of_key(&key)?;
            let endpoint = stage.rig.redis.nodes[victim - 1].endpoint();
            stage.rig.redis.kill(victim)?;
            while stage.rig.redis.master_of_key(&key).map_or(true, |m| m == victim) {
                if killed_at.elapsed() > Duration::from_secs(30) {
                    bail!("no replica took over Redis node {victim}'s slots in 30 s");
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let promoted = killed_at.elapsed().as_secs_f64();
            (format!("redis node {victim} (master, {endpoint})"), Some(promoted))
        }
        Kill::KithServer(n) => {
            ensure!(n >= 2 && n <= servers.len(), "no kith server {n} to kill");
            kill9(servers[n - 1].take());
            (format!("kith server {n}"), None)
        }
        Kill::CassandraNode(n) => {
            stage.rig.cassandra.kill(n)?;
            (format!("cassandra node {n} ({})", stage.rig.cassandra.nodes[n - 1].address), None)
        }
    };
    Ok(Killed { at_s, what, promoted_s })
}

/// Brings every killed node back, for the next trial.
fn restore(rig: &mut Rig) -> Result<()> {
    let down: Vec<usize> =
        (1..=rig.redis.nodes.len()).filter(|&i| !rig.redis.nodes[i - 1].alive()).collect();
    for i in down {
        rig.redis.restart(i, Duration::from_secs(60))?;
    }
    let down: Vec<usize> =
        rig.cassandra.nodes.iter().filter(|n| !n.alive()).map(|n| n.index).collect();
    for i in down {
        rig.cassandra.restart(i)?;
    }
    Ok(())
}

fn fault_tag(f: Fault) -> &'static str {
    match f {
        Fault::RedisMaster => "r",
        Fault::KithServer => "k",
        Fault::CassandraAndKith => "ck",
    }
}

fn kill9(server: Option<ChildProcess>) {
    if let Some(s) = server {
        s.kill9();
    }
}

/// The load: each client sends posts, friendships, follows, friend-list and feed reads,
/// spread over the servers, until `until`; acknowledged writes are recorded.
async fn drive(
    urls: Vec<String>,
    users: Vec<u64>,
    clients: usize,
    until: Instant,
    seed: u64,
    acked: Arc<Mutex<Acked>>,
    stats: Arc<Mutex<Tally>>,
) -> Result<()> {
    let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).build()?;
    let servers = Arc::new(Servers::new(&urls));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let (http, servers, users, acked, stats) =
            (http.clone(), servers.clone(), users.clone(), acked.clone(), stats.clone());
        tasks.push(tokio::spawn(async move {
            let mut rng = Pcg64Mcg::seed_from_u64(seed * 1000 + c as u64);
            let n = users.len();
            let mut i = 0u64;
            while Instant::now() < until {
                i += 1;
                let u = users[rng.random_range(0..n)];
                let v = users[rng.random_range(0..n)];
                let pick = rng.random_range(0..100);
                let (req, kind) = match pick {
                    0..35 => {
                        let content = format!("s{seed}c{c}n{i}");
                        let body = json!({"author": u, "content": content});
                        (post("post", "/posts".into(), body), Kind::Post(content))
                    }
                    35..45 if u != v => (
                        Request {
                            op: "friend",
                            method: "POST",
                            path: format!("/users/{u}/friends/{v}"),
                            body: None,
                        },
                        Kind::Friend(u, v),
                    ),
                    45..55 if u != v => {
                        let body = json!({"targets": [v]});
                        (post("follow", format!("/users/{u}/follow"), body), Kind::Follow(u, v))
                    }
                    55..80 => (
                        get("friends", format!("/users/{u}/friends?consistency=eventual")),
                        Kind::Read,
                    ),
                    _ => (get("feed", format!("/users/{u}/feed?limit=20")), Kind::Read),
                };
                let sent_at = start.elapsed();
                let key = format!("fo{seed}-{c}-{i}");
                let sent = send(&http, &servers, c % urls_len(&servers), &req, Some(&key)).await;
                let micros = (start.elapsed() - sent_at).as_micros() as u64;
                let mut s = stats.lock().await;
                s.requests += 1;
                s.retries += sent.retries;
                s.latency
                    .entry(req.op)
                    .or_insert_with(|| Histogram::new(3).expect("valid precision"))
                    .record(micros.max(1))
                    .expect("auto-resizing histogram");
                let second = sent_at.as_secs() as usize;
                if s.seconds.len() <= second {
                    s.seconds.resize(second + 1, (0, 0));
                }
                s.seconds[second].0 += 1;
                match (&sent.error, kind) {
                    // A follow that exists already is an answer, not a failure.
                    (Some(e), Kind::Follow(..)) if e == "409" => {}
                    (Some(e), _) => {
                        s.failures.push(sent_at);
                        s.seconds[second].1 += 1;
                        *s.failed_by.entry(e.clone()).or_insert(0) += 1;
                    }
                    (None, Kind::Post(content)) => {
                        let id = sent
                            .body
                            .as_deref()
                            .and_then(|b| serde_json::from_slice::<serde_json::Value>(b).ok())
                            .and_then(|v| v["id"].as_u64());
                        if let Some(id) = id {
                            acked.lock().await.posts.push((id, content));
                        }
                    }
                    (None, Kind::Friend(a, b)) => {
                        acked.lock().await.friendships.insert((a, b));
                    }
                    (None, Kind::Follow(a, b)) => {
                        acked.lock().await.follows.insert((a, b));
                    }
                    (None, Kind::Read) => {}
                }
            }
        }));
    }
    for t in tasks {
        t.await?;
    }
    Ok(())
}

fn urls_len(servers: &Servers) -> usize {
    servers.len().max(1)
}

enum Kind {
    Post(String),
    Friend(u64, u64),
    Follow(u64, u64),
    Read,
}

fn post(op: &'static str, path: String, body: serde_json::Value) -> Request {
    Request { op, method: "POST", path, body: Some(body) }
}

fn get(op: &'static str, path: String) -> Request {
    Request { op, method: "GET", path, body: None }
}

/// Reads every acknowledged write back through `base` (strong reads): returns how many were
/// checked and a description of each one missing.
async fn check(base: &str, acked: &Acked) -> Result<(u64, Vec<String>)> {
    let http = reqwest::Client::builder().timeout(Duration::from_secs(30)).build()?;
    let mut lost = Vec::new();
    let get_json = |path: String| {
        let http = http.clone();
        let url = format!("{base}{path}");
        async move {
            let r = http.get(&url).send().await?;
            let status = r.status().as_u16();
            let v: serde_json::Value = r.json().await.unwrap_or_default();
            anyhow::Ok((status, v))
        }
    };
    for (id, content) in &acked.posts {
        let (s, v) = get_json(format!("/posts/{id}")).await?;
        if s != 200 || v["content"].as_str() != Some(content) {
            lost.push(format!("post {id} ({s})"));
        }
    }
    for &(u, v) in &acked.friendships {
        let (s, r) = get_json(format!("/users/{u}/friends?limit=1000&consistency=strong")).await?;
        let has = r["friends"].as_array().is_some_and(|f| f.iter().any(|x| x.as_u64() == Some(v)));
        // A friendship may since have been replaced by nothing else here: only adds run.
        if s != 200 || !has {
            lost.push(format!("friendship {u}-{v} ({s})"));
        }
    }
    for &(u, t) in &acked.follows {
        let (s, r) = get_json(format!("/users/{u}/follows?limit=1000")).await?;
        let has =
            r["followees"].as_array().is_some_and(|f| f.iter().any(|x| x.as_u64() == Some(t)));
        if s != 200 || !has {
            lost.push(format!("follow {u}->{t} ({s})"));
        }
    }
    let checked = (acked.posts.len() + acked.friendships.len() + acked.follows.len()) as u64;
    Ok((checked, lost))
}
