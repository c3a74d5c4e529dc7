//! Failover trials of the service on a cluster: three `kith serve` over a 3-node Cassandra
//! and a Redis Cluster (three masters with a replica each) on loopback, a mixed load from
//! clients that spread their requests over the servers (moving off one that fails), and
//! midway one fault: a Redis master killed, a kith server killed, or a Cassandra node and a
//! kith server killed together. Counted: requests, failed requests and the window they fell
//! in, how long Redis took to promote a replica, and every acknowledged write (posts,
//! friendships, follows), read back afterwards through a server that stayed up.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use kith_cassandra::local::{ClusterConfig, LocalCluster};
use kith_cassandra::{BuildConfig, CassandraOptions};
use kith_feed::redis_cluster::{LocalRedisCluster, RedisClusterConfig};
use kith_workload::{Request, Servers, send};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::Serialize;
use serde_json::json;
use tokio::sync::Mutex;

use crate::processes::{ChildProcess, start_cassandra_server};

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

/// The clusters the trials run on, stopped when dropped.
#[derive(Debug)]
pub struct Rig {
    cassandra: LocalCluster,
    redis: LocalRedisCluster,
    keyspace: String,
    hosts: String,
    redis_urls: String,
    users: Vec<u64>,
    journal_dir: tempfile::TempDir,
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = self.redis.down(Duration::from_secs(5));
        let _ = self.cassandra.down(Duration::from_secs(10));
    }
}

/// What the load acknowledged.
#[derive(Default)]
struct Acked {
    posts: Vec<(u64, String)>,
    friendships: BTreeSet<(u64, u64)>,
    follows: BTreeSet<(u64, u64)>,
}

/// Starts the clusters and loads a generated graph under the `kith` layout.
pub fn rig(config: &FailoverConfig) -> Result<Rig> {
    let cassandra = LocalCluster::up(&ClusterConfig {
        nodes: 3,
        dir: config.dir.clone(),
        base: config.base,
        heap_mb: 512,
        progress: true,
        ..ClusterConfig::default()
    })?;
    let redis = match LocalRedisCluster::up(&RedisClusterConfig {
        dir: config.dir.clone(),
        base: config.base,
        port: config.redis_port,
        node_timeout: config.redis_node_timeout,
        progress: true,
        ..RedisClusterConfig::default()
    }) {
        Ok(r) => r,
        Err(e) => {
            let mut c = cassandra;
            let _ = c.down(Duration::from_secs(10));
            return Err(e.into());
        }
    };
    let mut rig = Rig {
        hosts: cassandra.hosts().join(","),
        redis_urls: redis.urls(),
        cassandra,
        redis,
        keyspace: "failover".into(),
        users: Vec::new(),
        journal_dir: tempfile::tempdir()?,
    };
    let lfr = kith_graph::generate::LfrConfig {
        nodes: config.users,
        seed: 11,
        ..kith_graph::generate::LfrConfig::default()
    };
    let graph = kith_graph::generate::lfr(&lfr)?.graph.to_undirected();
    let (layout, meta) = crate::bench::cassandra::layout_for(&graph, "kith", 64)?;
    let options = CassandraOptions::new(rig.cassandra.hosts(), &rig.keyspace);
    let _ = kith_cassandra::drop_store(&options);
    let build = BuildConfig {
        partition_users: 64,
        data: kith_store::DataSpec::Fixed(40),
        ..BuildConfig::default()
    };
    drop(kith_cassandra::build(&options, &graph, &layout, meta, &build)?);
    rig.users = (0..graph.num_nodes() as u32).map(|v| graph.original_id(v)).collect();
    Ok(rig)
}

/// Runs every trial on `rig`.
pub fn run(config: &FailoverConfig, rig: &mut Rig) -> Result<Vec<Trial>> {
    let mut out = Vec::new();
    for &fault in &config.faults {
        for run in 0..config.runs {
            eprintln!("failover: {fault:?}, run {}", run + 1);
            let trial = one(config, rig, fault, run)?;
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

fn one(config: &FailoverConfig, rig: &mut Rig, fault: Fault, run: usize) -> Result<Trial> {
    let prefix = format!("fo{run}{}", fault_tag(fault));
    let args: Vec<String> = [
        "--redis-cluster",
        &rig.redis_urls,
        "--redis-prefix",
        &prefix,
        "--feed",
        &config.feed,
        "--cache",
        &config.cache,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut servers: Vec<Option<ChildProcess>> = Vec::new();
    let mut urls = Vec::new();
    for i in 0..3 {
        let journal = rig.journal_dir.path().join(format!("{prefix}-{i}"));
        let (child, url) = start_cassandra_server(&rig.hosts, &rig.keyspace, &journal, &args)?;
        servers.push(Some(child));
        urls.push(url);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let load = Duration::from_secs_f64(config.load_s);
    let kill_at = load / 3;
    let acked = Arc::new(Mutex::new(Acked::default()));
    let stats = Arc::new(Mutex::new(Stats::default()));
    let start = Instant::now();
    let driver = {
        let (urls, users, acked, stats) =
            (urls.clone(), rig.users.clone(), acked.clone(), stats.clone());
        let clients = config.clients;
        runtime.spawn(drive(urls, users, clients, start + load, run as u64, acked, stats))
    };
    std::thread::sleep(kill_at.saturating_sub(start.elapsed()));
    let killed_at = Instant::now();
    // The victim's slot: the timeline of a user the load reads.
    let victim_key = format!("{prefix}:t:{{{}}}", rig.users[0]);
    let mut promoted_s = None;
    let killed = match fault {
        Fault::RedisMaster => {
            let victim = rig.redis.master_of_key(&victim_key)?;
            rig.redis.kill(victim)?;
            let t = Instant::now();
            while rig.redis.master_of_key(&victim_key).map_or(true, |m| m == victim) {
                if t.elapsed() > Duration::from_secs(30) {
                    bail!("no replica took over Redis node {victim}'s slots in 30 s");
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            promoted_s = Some(killed_at.elapsed().as_secs_f64());
            format!("redis node {victim} (master)")
        }
        Fault::KithServer => {
            kill9(servers[2].take());
            "kith server 3".to_string()
        }
        Fault::CassandraAndKith => {
            rig.cassandra.kill(3)?;
            kill9(servers[2].take());
            "cassandra node 3 and kith server 3".to_string()
        }
    };
    runtime.block_on(driver).context("the load")??;
    // Let fan-out and write-back settle, then read everything back through server 1.
    std::thread::sleep(Duration::from_secs(2));
    let acked = std::mem::take(&mut *runtime.block_on(acked.lock()));
    let stats = std::mem::take(&mut *runtime.block_on(stats.lock()));
    let (checked, lost) = runtime.block_on(check(&urls[0], &acked))?;
    // Restore: the killed node back; the servers stopped (the next trial starts its own).
    match fault {
        Fault::RedisMaster => {
            let down: Vec<usize> =
                (1..=rig.redis.nodes.len()).filter(|&i| !rig.redis.nodes[i - 1].alive()).collect();
            for i in down {
                rig.redis.restart(i, Duration::from_secs(60))?;
            }
        }
        Fault::CassandraAndKith => rig.cassandra.restart(3)?,
        Fault::KithServer => {}
    }
    drop(servers);
    let window_s = stats
        .failures
        .iter()
        .map(|&t| t.saturating_sub(killed_at.duration_since(start)).as_secs_f64())
        .fold(0.0, f64::max);
    Ok(Trial {
        fault,
        run,
        killed,
        requests: stats.requests,
        failed: stats.failures.len() as u64,
        failed_by: stats.failed_by,
        retries: stats.retries,
        window_s,
        promoted_s,
        acknowledged: checked,
        lost: lost.len() as u64,
        lost_examples: lost.into_iter().take(10).collect(),
    })
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

#[derive(Default)]
struct Stats {
    requests: u64,
    retries: u64,
    /// When each failed request was sent, from the start.
    failures: Vec<Duration>,
    failed_by: std::collections::BTreeMap<String, u64>,
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
    stats: Arc<Mutex<Stats>>,
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
                let mut s = stats.lock().await;
                s.requests += 1;
                s.retries += sent.retries;
                match (&sent.error, kind) {
                    // A follow that exists already is an answer, not a failure.
                    (Some(e), Kind::Follow(..)) if e == "409" => {}
                    (Some(e), _) => {
                        s.failures.push(sent_at);
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
