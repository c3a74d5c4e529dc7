//! `kith cluster up|status|down|kill|start|add`: local Apache Cassandra clusters and Redis
//! Clusters on loopback addresses, for the distributed store's and the service's tests,
//! trials and demos.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::{Args, Subcommand};
use kith_cassandra::local::{CASSANDRA_VERSION, ClusterConfig, LocalCluster, default_home};
use kith_feed::redis_cluster::{LocalRedisCluster, RedisClusterConfig};

#[derive(Debug, Subcommand)]
pub(crate) enum ClusterCommand {
    /// Start N Cassandra nodes on 127.0.0.1, 127.0.0.2, … (Cassandra's jars are fetched with
    /// Maven the first time), wait until every node is up and knows the others, and create the
    /// keyspace with replication factor min(3, N); then a Redis Cluster of M masters with R
    /// replicas each on the same addresses (port 6390), made by `redis-cli --cluster create`.
    Up(UpArgs),
    /// Each node's state (up, starting, down), pid, token and data size; each Redis node's
    /// role, slots and keys.
    Status(StatusArgs),
    /// Stop every node, Cassandra's and Redis's (SIGTERM, then SIGKILL after the grace
    /// period).
    Down(DownArgs),
    /// Kill one node (Cassandra's with --node, Redis's with --redis-node) with SIGKILL, as a
    /// crash would.
    Kill(NodeArgs),
    /// Start a stopped or killed node again, with its data (a Redis master that was
    /// replaced rejoins as a replica).
    Start(NodeArgs),
    /// Add a node that joins the running cluster and streams its share of the data.
    Add(DirArgs),
}

#[derive(Debug, Args)]
pub(crate) struct DirArgs {
    /// The cluster's directory (its nodes' data, logs and `cluster.json`).
    #[arg(long, default_value = "kith-cluster")]
    dir: PathBuf,
    /// Print the outcome as one JSON document on stdout: what was done, and every node's
    /// status afterwards (progress stays on stderr).
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct UpArgs {
    #[command(flatten)]
    dir: DirArgs,
    /// Number of nodes (1 to 32).
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// The first node's loopback address; the others follow it.
    #[arg(long, default_value = "127.0.0.1")]
    base: Ipv4Addr,
    /// Each node's JVM heap in MiB (a node is about 1.5× this resident).
    #[arg(long, default_value_t = 768)]
    heap_mb: u32,
    /// The keyspace to create.
    #[arg(long, default_value = kith_cassandra::DEFAULT_KEYSPACE)]
    keyspace: String,
    /// Seconds to wait for every node.
    #[arg(long, default_value_t = 300)]
    timeout_s: u64,
    /// Where Cassandra's jars are kept (default: KITH_CASSANDRA_HOME, else the user's cache).
    #[arg(long)]
    cassandra_home: Option<PathBuf>,
    /// Redis Cluster masters (3 to 16; 0 starts no Redis).
    #[arg(long, default_value_t = 3)]
    redis_masters: usize,
    /// Replicas per Redis master (0 to 3).
    #[arg(long, default_value_t = 1)]
    redis_replicas: usize,
    /// The port of every Redis node (each has its own address; the cluster bus is port + 10000).
    #[arg(long, default_value_t = 6390)]
    redis_port: u16,
    /// How long a Redis master may be unreachable before a replica replaces it
    /// (`cluster-node-timeout`).
    #[arg(long, default_value_t = 2000)]
    redis_node_timeout_ms: u64,
    /// Start each Cassandra node under Debian's faketime with a clock file (`node<i>/clock`,
    /// an offset in seconds, re-read within seconds), so that `kith trial cluster --nemesis
    /// skew-cassandra` can skew it.
    #[arg(long)]
    skewable: bool,
    /// Put each Cassandra node on a tmpfs of this many MiB of its own (needs root; the data
    /// goes with `down`), so that `kith trial cluster --nemesis full-disk-cassandra` can fill
    /// one node's disk.
    #[arg(long)]
    disk_mb: Option<u64>,
    /// Put each Cassandra node in a network namespace of its own on a bridge, at 10.251.C.D
    /// for the loopback address 127.0.C.D it would have had (needs root and iproute2; `down`
    /// removes them), so that `kith trial cluster --nemesis partition-cassandra` can cut
    /// links between nodes. Redis stays on loopback.
    #[arg(long)]
    netns: bool,
}

#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    #[command(flatten)]
    dir: DirArgs,
}

#[derive(Debug, Args)]
pub(crate) struct DownArgs {
    #[command(flatten)]
    dir: DirArgs,
    /// Seconds nodes get to stop cleanly before they are killed.
    #[arg(long, default_value_t = 30)]
    grace_s: u64,
}

#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("which").required(true).args(["node", "redis_node"]))]
pub(crate) struct NodeArgs {
    #[command(flatten)]
    dir: DirArgs,
    /// A Cassandra node's number (1, 2, …, as `status` lists them).
    #[arg(long)]
    node: Option<usize>,
    /// A Redis node's number (1, 2, …, as `status` lists them).
    #[arg(long)]
    redis_node: Option<usize>,
}

pub(crate) fn run(command: ClusterCommand) -> Result<()> {
    match command {
        ClusterCommand::Up(a) => up(a),
        ClusterCommand::Status(a) => status(a),
        ClusterCommand::Down(a) => {
            let grace = Duration::from_secs(a.grace_s);
            let mut redis_nodes = 0;
            if LocalRedisCluster::exists(&a.dir.dir) {
                let mut redis = LocalRedisCluster::open(&a.dir.dir)?;
                redis.down(grace)?;
                redis_nodes = redis.nodes.len();
            }
            let mut cluster = LocalCluster::open(&a.dir.dir)?;
            cluster.down(grace)?;
            let said = format!(
                "cluster in {} stopped ({} Cassandra nodes{})",
                cluster.dir.display(),
                cluster.nodes.len(),
                if redis_nodes > 0 {
                    format!(", {redis_nodes} Redis nodes")
                } else {
                    String::new()
                }
            );
            let what = serde_json::json!({
                "action": "down",
                "cassandra_nodes": cluster.nodes.len(),
                "redis_nodes": redis_nodes,
            });
            outcome(&a.dir, what, &said)
        }
        ClusterCommand::Kill(a) => {
            let said = match (a.node, a.redis_node) {
                (Some(node), _) => {
                    LocalCluster::open(&a.dir.dir)?.kill(node)?;
                    format!("Cassandra node {node} killed")
                }
                (None, Some(node)) => {
                    LocalRedisCluster::open(&a.dir.dir)?.kill(node)?;
                    format!("Redis node {node} killed")
                }
                (None, None) => unreachable!("clap requires one"),
            };
            let what =
                serde_json::json!({"action": "kill", "node": a.node, "redis_node": a.redis_node});
            outcome(&a.dir, what, &said)
        }
        ClusterCommand::Start(a) => {
            let said = match (a.node, a.redis_node) {
                (Some(node), _) => {
                    let mut cluster = LocalCluster::open(&a.dir.dir)?;
                    cluster.progress = true;
                    cluster.restart(node)?;
                    format!("Cassandra node {node} is up")
                }
                (None, Some(node)) => {
                    let mut redis = LocalRedisCluster::open(&a.dir.dir)?;
                    redis.restart(node, Duration::from_secs(60))?;
                    format!("Redis node {node} is up")
                }
                (None, None) => unreachable!("clap requires one"),
            };
            let what =
                serde_json::json!({"action": "start", "node": a.node, "redis_node": a.redis_node});
            outcome(&a.dir, what, &said)
        }
        ClusterCommand::Add(a) => {
            let mut cluster = LocalCluster::open(&a.dir)?;
            cluster.progress = true;
            let index = cluster.add_node()?;
            let said = format!("node {index} joined: hosts {}", cluster.hosts().join(","));
            let what =
                serde_json::json!({"action": "add", "node": index, "hosts": cluster.hosts()});
            outcome(&a, what, &said)
        }
    }
}

/// Every node's status, Cassandra's and Redis's (what `status --json` prints).
fn status_doc(dir: &std::path::Path) -> Result<serde_json::Value> {
    let cluster = LocalCluster::open(dir)?;
    let redis = match LocalRedisCluster::exists(dir) {
        true => LocalRedisCluster::open(dir)?.status(),
        false => Vec::new(),
    };
    Ok(serde_json::json!({ "cassandra": cluster.status(), "redis": redis }))
}

/// Prints what a command did: `said` as a line, or with `--json` one document of `what` and
/// the status afterwards.
fn outcome(dir: &DirArgs, mut what: serde_json::Value, said: &str) -> Result<()> {
    if dir.json {
        what["status"] = status_doc(&dir.dir)?;
        println!("{}", serde_json::to_string_pretty(&what)?);
    } else {
        println!("{said}");
    }
    Ok(())
}

fn up(a: UpArgs) -> Result<()> {
    let config = ClusterConfig {
        nodes: a.nodes,
        dir: a.dir.dir.clone(),
        base: a.base,
        heap_mb: a.heap_mb,
        home: a.cassandra_home.unwrap_or_else(default_home),
        keyspace: a.keyspace.clone(),
        timeout: Duration::from_secs(a.timeout_s),
        progress: true,
        skewable: a.skewable,
        disk_mb: a.disk_mb,
        netns: a.netns,
    };
    let t = std::time::Instant::now();
    let cluster = LocalCluster::up(&config)?;
    let cassandra_s = t.elapsed().as_secs_f64();
    let mut lines = Vec::new();
    let mut redis_urls = None;
    lines.push(format!(
        "cluster up: {} Cassandra {CASSANDRA_VERSION} nodes in {:.0} s, keyspace {}; hosts {}",
        cluster.nodes.len(),
        cassandra_s,
        a.keyspace,
        cluster.hosts().join(",")
    ));
    lines.push(format!(
        "  kith store build <graph> --cassandra {} --keyspace {}",
        cluster.hosts().join(","),
        a.keyspace
    ));
    if a.redis_masters > 0 {
        let t = std::time::Instant::now();
        let redis = LocalRedisCluster::up(&RedisClusterConfig {
            masters: a.redis_masters,
            replicas: a.redis_replicas,
            dir: a.dir.dir.clone(),
            base: a.base,
            port: a.redis_port,
            node_timeout: Duration::from_millis(a.redis_node_timeout_ms),
            timeout: Duration::from_secs(a.timeout_s),
            progress: true,
        })?;
        lines.push(format!(
            "redis cluster up: {} masters with {} replicas each in {:.0} s; nodes {}",
            redis.masters,
            redis.replicas,
            t.elapsed().as_secs_f64(),
            redis.urls()
        ));
        lines.push(format!(
            "  kith serve --cassandra {} --keyspace {} --redis-cluster {}",
            cluster.hosts().join(","),
            a.keyspace,
            redis.urls()
        ));
        redis_urls = Some(redis.urls());
    }
    lines.push(format!("  kith cluster down --dir {}", cluster.dir.display()));
    let what = serde_json::json!({
        "action": "up",
        "cassandra_version": CASSANDRA_VERSION,
        "cassandra_seconds": cassandra_s,
        "keyspace": a.keyspace,
        "hosts": cluster.hosts(),
        "redis_cluster": redis_urls,
    });
    outcome(&a.dir, what, &lines.join("\n"))
}

fn status(a: StatusArgs) -> Result<()> {
    if a.dir.json {
        println!("{}", serde_json::to_string_pretty(&status_doc(&a.dir.dir)?)?);
        return Ok(());
    }
    let cluster = LocalCluster::open(&a.dir.dir)?;
    let nodes = cluster.status();
    let redis = match LocalRedisCluster::exists(&a.dir.dir) {
        true => LocalRedisCluster::open(&a.dir.dir)?.status(),
        false => Vec::new(),
    };
    println!("cluster {} ({})", cluster.name, cluster.dir.display());
    println!(
        "{:>4}  {:<15} {:<9} {:>8} {:>12} {:>21}",
        "node", "address", "state", "pid", "data MB", "token"
    );
    for n in nodes {
        println!(
            "{:>4}  {:<15} {:<9} {:>8} {:>12.1} {:>21}",
            n.index,
            n.address,
            n.state,
            n.pid.map_or("-".to_string(), |p| p.to_string()),
            n.data_bytes as f64 / 1e6,
            n.token
        );
    }
    if !redis.is_empty() {
        println!("redis cluster");
        println!(
            "{:>4}  {:<21} {:<6} {:<8} {:>8} {:>6} {:>10}",
            "node", "endpoint", "state", "role", "pid", "slots", "keys"
        );
        for n in redis {
            println!(
                "{:>4}  {:<21} {:<6} {:<8} {:>8} {:>6} {:>10}",
                n.index,
                n.endpoint,
                n.state,
                n.role,
                n.pid.map_or("-".to_string(), |p| p.to_string()),
                n.slots,
                n.keys
            );
        }
    }
    Ok(())
}
