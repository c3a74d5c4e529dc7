//! Local Cassandra clusters on loopback: `kith cluster up|status|down`, and the nodes the
//! fault trials kill, restart and add. Node `i` of a cluster based at `127.0.0.B` listens
//! on `127.0.0.(B+i-1)` (storage 7000, CQL 9042) and takes JMX on `127.0.0.1:7100 +
//! 16·third octet + fourth octet`, so clusters on different loopback ranges do not collide.
//! The cluster's state (nodes, pids, tokens) is `cluster.json` in its directory, so a later
//! command finds it.

pub mod clock;
mod disk;
mod install;
mod net;
mod node;
mod ops;
mod ring;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use install::{CASSANDRA_VERSION, default_home, ensure_jars};
pub use node::{CQL_PORT, Node};

use crate::error::{Error, Result};
use node::Launch;
use ring::{addresses, bisecting_token, even_token, jmx_port};

/// What `LocalCluster::up` starts.
#[derive(Clone, Debug)]
pub struct ClusterConfig {
    /// Number of nodes (1 to 32).
    pub nodes: usize,
    /// The cluster's directory (one subdirectory per node).
    pub dir: PathBuf,
    /// The first node's address; the others follow it. Default 127.0.0.1.
    pub base: Ipv4Addr,
    /// Each node's JVM heap. Default 768 MiB (about 1.1 GB resident per node).
    pub heap_mb: u32,
    /// Where Cassandra's jars are, or go ([`default_home`]).
    pub home: PathBuf,
    /// The keyspace to create, with replication factor min(3, nodes). Default `kith`.
    pub keyspace: String,
    /// How long to wait for every node to come up. Default 300 s.
    pub timeout: Duration,
    /// Print progress on stderr.
    pub progress: bool,
    /// Every node reads its wall clock through a clock file, so that trials can skew it
    /// ([`LocalCluster::set_clock`]; needs Debian's faketime).
    pub skewable: bool,
    /// Each node on a tmpfs of this many MiB of its own, mounted on its directory (needs
    /// root; the data goes with `down`), so that trials can fill one node's disk.
    pub disk_mb: Option<u64>,
    /// Each node in a network namespace of its own on a bridge, at `10.251.C.D` for the
    /// loopback address `127.0.C.D` it would have had (needs root and iproute2), so that
    /// trials can cut links between nodes ([`LocalCluster::cut`]).
    pub netns: bool,
}

impl Default for ClusterConfig {
    fn default() -> ClusterConfig {
        ClusterConfig {
            nodes: 3,
            dir: PathBuf::from("kith-cluster"),
            base: Ipv4Addr::new(127, 0, 0, 1),
            heap_mb: 768,
            home: default_home(),
            keyspace: crate::DEFAULT_KEYSPACE.to_string(),
            timeout: Duration::from_secs(300),
            progress: false,
            skewable: false,
            disk_mb: None,
            netns: false,
        }
    }
}

/// A cluster of Cassandra nodes on this machine, as its `cluster.json` records it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LocalCluster {
    /// Cassandra's cluster name.
    pub name: String,
    /// The cluster's directory.
    pub dir: PathBuf,
    /// Each node's heap.
    pub heap_mb: u32,
    /// Cassandra's jars.
    pub lib: PathBuf,
    /// The nodes, in the order they were added.
    pub nodes: Vec<Node>,
    /// Whether the nodes' clocks can be skewed (`ClusterConfig::skewable`).
    #[serde(default)]
    pub skewable: bool,
    /// The size of each node's own tmpfs (`ClusterConfig::disk_mb`).
    #[serde(default)]
    pub disk_mb: Option<u64>,
    /// Whether each node has a network namespace of its own (`ClusterConfig::netns`).
    #[serde(default)]
    pub netns: bool,
    /// Whether progress is printed.
    #[serde(skip)]
    pub progress: bool,
    /// How long to wait for a node.
    #[serde(skip, default = "default_timeout")]
    pub timeout: Duration,
}

fn default_timeout() -> Duration {
    Duration::from_secs(300)
}

/// A node's state as `status` reports it.
#[derive(Clone, Debug, Serialize)]
pub struct NodeStatus {
    /// The node's index.
    pub index: usize,
    /// Its address.
    pub address: Ipv4Addr,
    /// Its JVM's process id, if it runs.
    pub pid: Option<u32>,
    /// `up` (accepting CQL), `starting` (running, not yet accepting CQL) or `down`.
    pub state: &'static str,
    /// Bytes under its data directory.
    pub data_bytes: u64,
    /// Its token.
    pub token: i64,
}

const CLUSTER_FILE: &str = "cluster.json";

impl LocalCluster {
    /// Starts a new cluster of `config.nodes` nodes (all at once: each has its own token and
    /// none streams), waits until every node accepts CQL and knows every other, and creates
    /// the keyspace. A directory whose cluster was stopped is started again with its data.
    pub fn up(config: &ClusterConfig) -> Result<LocalCluster> {
        if !(1..=32).contains(&config.nodes) {
            return Err(Error::Cluster(format!(
                "--nodes {}: a local cluster has 1 to 32 nodes",
                config.nodes
            )));
        }
        let dir = absolute(&config.dir)?;
        if dir.join(CLUSTER_FILE).exists() {
            let mut cluster = LocalCluster::open(&dir)?;
            cluster.progress = config.progress;
            cluster.timeout = config.timeout;
            if let Some(n) = cluster.nodes.iter().find(|n| n.alive()) {
                return Err(Error::Cluster(format!(
                    "{}: a cluster already runs here (node {} at {}, pid {}); `kith cluster down --dir {}` stops it",
                    dir.display(),
                    n.index,
                    n.address,
                    n.pid.unwrap_or(0),
                    dir.display()
                )));
            }
            if cluster.nodes.len() != config.nodes {
                return Err(Error::Cluster(format!(
                    "{}: holds a stopped cluster of {} nodes, not {}; start it with --nodes {} or use another directory",
                    dir.display(),
                    cluster.nodes.len(),
                    config.nodes,
                    cluster.nodes.len()
                )));
            }
            cluster.say(format!("starting the stopped cluster in {}", dir.display()));
            let all: Vec<usize> = (0..cluster.nodes.len()).collect();
            cluster.start_nodes(&all, false)?;
            cluster.wait_ready(&all)?;
            return Ok(cluster);
        }
        let lib = ensure_jars(&config.home)?;
        install::java_major()?;
        let mut addresses = addresses(config.base, config.nodes)?;
        if config.netns {
            addresses = addresses.into_iter().map(net::node_address).collect::<Result<_>>()?;
            // Before the check below: without the bridge's route, the machine's default route
            // would take these addresses.
            for &a in &addresses {
                net::ensure(a)?;
            }
        }
        for a in &addresses {
            let cql = std::net::SocketAddr::from((*a, CQL_PORT));
            if std::net::TcpStream::connect_timeout(&cql, Duration::from_millis(300)).is_ok() {
                return Err(Error::Cluster(format!(
                    "{cql} is already taken by another process; pick another --base address"
                )));
            }
        }
        std::fs::create_dir_all(&dir).map_err(Error::io(format!("creating {}", dir.display())))?;
        let nodes = addresses
            .iter()
            .enumerate()
            .map(|(i, &address)| Node {
                index: i + 1,
                address,
                jmx_port: jmx_port(address),
                token: even_token(i, config.nodes),
                dir: dir.join(format!("node{}", i + 1)),
                pid: None,
                netns: config.netns,
            })
            .collect();
        let mut cluster = LocalCluster {
            name: format!(
                "kith-{}",
                dir.file_name().map(|n| n.to_string_lossy()).unwrap_or_default()
            ),
            dir,
            heap_mb: config.heap_mb,
            lib,
            nodes,
            skewable: config.skewable,
            disk_mb: config.disk_mb,
            netns: config.netns,
            progress: config.progress,
            timeout: config.timeout,
        };
        let all: Vec<usize> = (0..cluster.nodes.len()).collect();
        cluster.say(format!(
            "starting {} Cassandra {CASSANDRA_VERSION} nodes on {}..{} (heap {} MiB each)",
            config.nodes,
            addresses[0],
            addresses[addresses.len() - 1],
            config.heap_mb
        ));
        cluster.start_nodes(&all, false)?;
        cluster.wait_ready(&all)?;
        let rf = config.nodes.min(3);
        crate::schema::create_keyspace(&cluster.hosts(), &config.keyspace, rf)?;
        cluster.say(format!("keyspace {} created (replication factor {rf})", config.keyspace));
        Ok(cluster)
    }

    /// The cluster whose `cluster.json` is in `dir`.
    pub fn open(dir: &Path) -> Result<LocalCluster> {
        let dir = absolute(dir)?;
        let path = dir.join(CLUSTER_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            Error::Cluster(format!(
                "{}: no local cluster here ({e}); `kith cluster up --dir` makes one",
                dir.display()
            ))
        })?;
        let mut cluster: LocalCluster = serde_json::from_str(&text)
            .map_err(|e| Error::Cluster(format!("{}: not a cluster file: {e}", path.display())))?;
        cluster.timeout = default_timeout();
        Ok(cluster)
    }

    /// The nodes' CQL endpoints, `address:9042`.
    pub fn hosts(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.cql().to_string()).collect()
    }

    /// Each node's state.
    pub fn status(&self) -> Vec<NodeStatus> {
        self.nodes
            .iter()
            .map(|n| NodeStatus {
                index: n.index,
                address: n.address,
                pid: n.pid.filter(|_| n.alive()),
                state: match (n.alive(), n.listening()) {
                    (true, true) => "up",
                    (true, false) => "starting",
                    _ => "down",
                },
                data_bytes: dir_bytes(&n.dir.join("data")),
                token: n.token,
            })
            .collect()
    }

    /// Stops every node: SIGTERM (Cassandra flushes and stops), then SIGKILL for any still
    /// running after `grace`.
    pub fn down(&mut self, grace: Duration) -> Result<()> {
        for n in &self.nodes {
            n.signal(libc::SIGTERM);
        }
        let deadline = Instant::now() + grace;
        while self.nodes.iter().any(Node::alive) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        for n in &mut self.nodes {
            n.signal(libc::SIGKILL);
        }
        for n in &mut self.nodes {
            wait_gone(n);
            n.pid = None;
        }
        self.save()?;
        if self.netns {
            net::remove(&self.nodes.iter().map(|n| n.address).collect::<Vec<_>>());
        }
        self.unmount_disks()
    }

    /// Kills node `index` (1-based) with SIGKILL, as a crash would, and waits until it is gone.
    pub fn kill(&mut self, index: usize) -> Result<()> {
        let n = self.node_mut(index)?;
        n.signal(libc::SIGKILL);
        wait_gone(n);
        n.pid = None;
        self.save()
    }

    /// Starts node `index` again with its data, and waits until it accepts CQL and knows the
    /// others.
    pub fn restart(&mut self, index: usize) -> Result<()> {
        let i = self.position(index)?;
        if self.nodes[i].alive() {
            return Err(Error::Cluster(format!("node {index} is already running")));
        }
        self.start_nodes(&[i], false)?;
        self.wait_ready(&[i])
    }

    /// Adds a node that joins the running cluster (streaming its share of the data from the
    /// others, as a new server would) with a token that halves the largest range; waits until
    /// it has joined. Returns its index.
    pub fn add_node(&mut self) -> Result<usize> {
        let last =
            self.nodes.last().ok_or_else(|| Error::Cluster("the cluster has no nodes".into()))?;
        let octets = last.address.octets();
        if octets[3] == 255 {
            return Err(Error::Cluster("no loopback address left after the last node".into()));
        }
        let address = Ipv4Addr::new(octets[0], octets[1], octets[2], octets[3] + 1);
        if self.netns && octets[3] + 1 >= 254 {
            return Err(Error::Cluster(format!(
                "no address left after {} on the cluster's own network",
                last.address
            )));
        }
        let tokens: Vec<i64> = self.nodes.iter().map(|n| n.token).collect();
        let index = self.nodes.len() + 1;
        self.nodes.push(Node {
            index,
            address,
            jmx_port: jmx_port(address),
            token: bisecting_token(&tokens),
            dir: self.dir.join(format!("node{index}")),
            pid: None,
            netns: self.netns,
        });
        let i = self.nodes.len() - 1;
        self.say(format!("adding node {index} at {address} (bootstrap: streams its ranges)"));
        self.start_nodes(&[i], true)?;
        self.wait_ready(&[i])?;
        Ok(index)
    }

    fn position(&self, index: usize) -> Result<usize> {
        self.nodes.iter().position(|n| n.index == index).ok_or_else(|| {
            Error::Cluster(format!("no node {index} (the cluster has {})", self.nodes.len()))
        })
    }

    fn node_mut(&mut self, index: usize) -> Result<&mut Node> {
        let i = self.position(index)?;
        Ok(&mut self.nodes[i])
    }

    fn start_nodes(&mut self, which: &[usize], bootstrap: bool) -> Result<()> {
        // The first three nodes are the seeds; a cluster's nodes all start as seeds together.
        let seeds: Vec<Ipv4Addr> = self.nodes.iter().take(3).map(|n| n.address).collect();
        let lib = self.lib.clone();
        let name = self.name.clone();
        let launch = Launch {
            cluster_name: &name,
            seeds: &seeds,
            heap_mb: self.heap_mb,
            bootstrap,
            lib: &lib,
            skewable: self.skewable,
        };
        self.mount_disks(which)?;
        for &i in which {
            self.nodes[i].start(&launch)?;
        }
        self.save()
    }

    fn save(&self) -> Result<()> {
        let path = self.dir.join(CLUSTER_FILE);
        let text = serde_json::to_string_pretty(self).expect("cluster state serialises");
        kith_graph::durable::write_atomic(&kith_graph::durable::StdFs, &path, |w| {
            w.write_all(text.as_bytes())
        })
        .map_err(|e| Error::Cluster(format!("writing {}: {e}", path.display())))
    }

    fn say(&self, what: String) {
        if self.progress {
            eprintln!("kith cluster: {what}");
        }
    }
}

fn absolute(dir: &Path) -> Result<PathBuf> {
    std::path::absolute(dir).map_err(Error::io(format!("resolving {}", dir.display())))
}

fn wait_gone(n: &Node) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while n.alive() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Bytes of the files under `dir`.
fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_bytes(&e.path()),
            Ok(_) => e.metadata().map(|m| m.len()).unwrap_or(0),
            Err(_) => 0,
        })
        .sum()
}
