//! `kith cluster up|status|down|kill|start|add`: local Apache Cassandra clusters on loopback
//! addresses, for the distributed store's tests, trials and demos.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::{Args, Subcommand};
use kith_cassandra::local::{CASSANDRA_VERSION, ClusterConfig, LocalCluster, default_home};

#[derive(Debug, Subcommand)]
pub(crate) enum ClusterCommand {
    /// Start N Cassandra nodes on 127.0.0.1, 127.0.0.2, … (Cassandra's jars are fetched with
    /// Maven the first time), wait until every node is up and knows the others, and create the
    /// keyspace with replication factor min(3, N).
    Up(UpArgs),
    /// Each node's state (up, starting, down), pid, token and data size.
    Status(StatusArgs),
    /// Stop every node (SIGTERM, then SIGKILL after the grace period).
    Down(DownArgs),
    /// Kill one node with SIGKILL, as a crash would.
    Kill(NodeArgs),
    /// Start a stopped or killed node again, with its data.
    Start(NodeArgs),
    /// Add a node that joins the running cluster and streams its share of the data.
    Add(DirArgs),
}

#[derive(Debug, Args)]
pub(crate) struct DirArgs {
    /// The cluster's directory (its nodes' data, logs and `cluster.json`).
    #[arg(long, default_value = "kith-cluster")]
    dir: PathBuf,
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
}

#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    #[command(flatten)]
    dir: DirArgs,
    /// Print JSON.
    #[arg(long)]
    json: bool,
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
pub(crate) struct NodeArgs {
    #[command(flatten)]
    dir: DirArgs,
    /// The node's number (1, 2, …, as `status` lists them).
    #[arg(long)]
    node: usize,
}

pub(crate) fn run(command: ClusterCommand) -> Result<()> {
    match command {
        ClusterCommand::Up(a) => up(a),
        ClusterCommand::Status(a) => status(a),
        ClusterCommand::Down(a) => {
            let mut cluster = LocalCluster::open(&a.dir.dir)?;
            cluster.down(Duration::from_secs(a.grace_s))?;
            println!(
                "cluster in {} stopped ({} nodes)",
                cluster.dir.display(),
                cluster.nodes.len()
            );
            Ok(())
        }
        ClusterCommand::Kill(a) => {
            let mut cluster = LocalCluster::open(&a.dir.dir)?;
            cluster.kill(a.node)?;
            println!("node {} killed", a.node);
            Ok(())
        }
        ClusterCommand::Start(a) => {
            let mut cluster = LocalCluster::open(&a.dir.dir)?;
            cluster.progress = true;
            cluster.restart(a.node)?;
            println!("node {} is up", a.node);
            Ok(())
        }
        ClusterCommand::Add(a) => {
            let mut cluster = LocalCluster::open(&a.dir)?;
            cluster.progress = true;
            let index = cluster.add_node()?;
            println!("node {index} joined: hosts {}", cluster.hosts().join(","));
            Ok(())
        }
    }
}

fn up(a: UpArgs) -> Result<()> {
    let config = ClusterConfig {
        nodes: a.nodes,
        dir: a.dir.dir,
        base: a.base,
        heap_mb: a.heap_mb,
        home: a.cassandra_home.unwrap_or_else(default_home),
        keyspace: a.keyspace.clone(),
        timeout: Duration::from_secs(a.timeout_s),
        progress: true,
    };
    let t = std::time::Instant::now();
    let cluster = LocalCluster::up(&config)?;
    println!(
        "cluster up: {} Cassandra {CASSANDRA_VERSION} nodes in {:.0} s, keyspace {}; hosts {}",
        cluster.nodes.len(),
        t.elapsed().as_secs_f64(),
        a.keyspace,
        cluster.hosts().join(",")
    );
    println!(
        "  kith store build <graph> --cassandra {} --keyspace {}",
        cluster.hosts().join(","),
        a.keyspace
    );
    println!("  kith cluster down --dir {}", cluster.dir.display());
    Ok(())
}

fn status(a: StatusArgs) -> Result<()> {
    let cluster = LocalCluster::open(&a.dir.dir)?;
    let nodes = cluster.status();
    if a.json {
        println!("{}", serde_json::to_string_pretty(&nodes)?);
        return Ok(());
    }
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
    Ok(())
}
