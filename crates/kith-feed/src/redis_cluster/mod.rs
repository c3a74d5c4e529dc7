//! Local Redis Clusters on loopback: what `kith cluster up` starts beside Cassandra, and
//! what the failover trials kill and restart.
//!
//! Node `i` (from 1) of a cluster based at `127.0.0.B` listens on `127.0.0.(B+i-1)`, port
//! [`RedisClusterConfig::port`] (cluster bus on port + 10000), with its configuration,
//! append-only file, `nodes.conf` and log in `<dir>/redis/node-<i>`. The cluster is made
//! by `redis-cli --cluster create` (Redis's own slot assignment and replica placement);
//! failover is Redis's own: a master unreachable for the node timeout is replaced by one of
//! its replicas. The state (addresses, pids) is `<dir>/redis-cluster.json`, so a later
//! command finds it; a stopped cluster starts again from its nodes' `nodes.conf`.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use node::{
    cluster_ok, command, known_nodes, last_lines, pid_alive, ping, role_of, slots_of, synced,
    wait_for,
};

mod node;

/// The cluster's state file, in the cluster's directory.
const STATE_FILE: &str = "redis-cluster.json";

/// What [`LocalRedisCluster::up`] starts.
#[derive(Clone, Debug)]
pub struct RedisClusterConfig {
    /// Masters (3 to 16: Redis Cluster needs three to elect a replacement).
    pub masters: usize,
    /// Replicas per master (0 to 3).
    pub replicas: usize,
    /// The directory (shared with the Cassandra nodes; Redis's go under `redis/`).
    pub dir: PathBuf,
    /// The first node's address; the others follow it.
    pub base: Ipv4Addr,
    /// Every node's port (each node has its own address).
    pub port: u16,
    /// How long a master may be unreachable before its replica takes over.
    pub node_timeout: Duration,
    /// How long to wait for the cluster to form.
    pub timeout: Duration,
    /// Print progress on stderr.
    pub progress: bool,
}

impl Default for RedisClusterConfig {
    fn default() -> RedisClusterConfig {
        RedisClusterConfig {
            masters: 3,
            replicas: 1,
            dir: PathBuf::from("kith-cluster"),
            base: Ipv4Addr::new(127, 0, 0, 1),
            port: 6390,
            node_timeout: Duration::from_millis(2000),
            timeout: Duration::from_secs(60),
            progress: false,
        }
    }
}

/// One `redis-server` of a local cluster.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RedisNode {
    /// From 1, in the order they were started.
    pub index: usize,
    pub address: Ipv4Addr,
    pub port: u16,
    /// Its process while it runs.
    pub pid: Option<u32>,
    /// Its configuration, data and log.
    pub dir: PathBuf,
}

/// A node as [`LocalRedisCluster::status`] reports it.
#[derive(Clone, Debug, Serialize)]
pub struct RedisNodeStatus {
    pub index: usize,
    /// `address:port`.
    pub endpoint: String,
    pub pid: Option<u32>,
    /// `up` or `down`.
    pub state: &'static str,
    /// `master`, `replica`, or `-` while down.
    pub role: String,
    /// Hash slots it serves (masters).
    pub slots: u32,
    /// Keys it holds.
    pub keys: u64,
}

/// A Redis Cluster on this machine, as its state file records it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LocalRedisCluster {
    pub dir: PathBuf,
    pub masters: usize,
    pub replicas: usize,
    pub node_timeout_ms: u64,
    pub nodes: Vec<RedisNode>,
    #[serde(skip)]
    pub progress: bool,
}

/// A failure to start, reach or stop a local Redis Cluster, with what was being done.
#[derive(Debug, thiserror::Error)]
#[error("redis cluster: {0}")]
pub struct ClusterError(String);

type Result<T> = std::result::Result<T, ClusterError>;

fn fail<T>(msg: impl Into<String>) -> Result<T> {
    Err(ClusterError(msg.into()))
}

impl LocalRedisCluster {
    /// Starts `masters × (1 + replicas)` nodes, makes them one cluster with
    /// `redis-cli --cluster create`, and waits until every node reports `cluster_state:ok`
    /// and knows every other. A directory whose cluster was stopped is started again.
    pub fn up(config: &RedisClusterConfig) -> Result<LocalRedisCluster> {
        if !(3..=16).contains(&config.masters) {
            return fail(format!(
                "--redis-masters {}: a Redis Cluster that fails over needs 3 to 16 masters",
                config.masters
            ));
        }
        if config.replicas > 3 {
            return fail(format!("--redis-replicas {}: at most 3 per master", config.replicas));
        }
        let dir = std::path::absolute(&config.dir)
            .map_err(|e| ClusterError(format!("{}: {e}", config.dir.display())))?;
        if dir.join(STATE_FILE).exists() {
            let mut cluster = LocalRedisCluster::open(&dir)?;
            cluster.progress = config.progress;
            cluster.start_stopped(config.timeout)?;
            return Ok(cluster);
        }
        let count = config.masters * (1 + config.replicas);
        let first = u64::from(u32::from(config.base));
        let last = first + count as u64 - 1;
        if (last >> 8) != (first >> 8) || (last & 0xff) == 255 {
            return fail(format!(
                "{count} nodes from {} would leave the base address's /24",
                config.base
            ));
        }
        let nodes = (0..count)
            .map(|i| RedisNode {
                index: i + 1,
                address: Ipv4Addr::from(u32::from(config.base) + i as u32),
                port: config.port,
                pid: None,
                dir: dir.join("redis").join(format!("node-{}", i + 1)),
            })
            .collect();
        let mut cluster = LocalRedisCluster {
            dir,
            masters: config.masters,
            replicas: config.replicas,
            node_timeout_ms: config.node_timeout.as_millis() as u64,
            nodes,
            progress: config.progress,
        };
        // From the first launch on, a failure stops whatever was started.
        match cluster.form(config) {
            Ok(()) => Ok(cluster),
            Err(e) => {
                let _ = cluster.down(Duration::ZERO);
                Err(e)
            }
        }
    }

    /// Starts every node of a new cluster and makes them one.
    fn form(&mut self, config: &RedisClusterConfig) -> Result<()> {
        let cluster = self;
        for i in 0..cluster.nodes.len() {
            cluster.launch(i)?;
        }
        cluster.save()?;
        let deadline = Instant::now() + config.timeout;
        for n in &cluster.nodes {
            wait_for(
                deadline,
                || ping(n).is_ok(),
                || format!("{} did not answer PING", n.endpoint()),
            )?;
        }
        cluster.note(&format!(
            "creating the cluster: {} masters, {} replicas each",
            cluster.masters, cluster.replicas
        ));
        let endpoints: Vec<String> = cluster.nodes.iter().map(RedisNode::endpoint).collect();
        // redis-cli waits for the nodes to meet; bounded by the deadline like the rest. Its
        // output goes to a file (a pipe nobody reads while it runs could fill and stall it).
        let log_path = cluster.dir.join("redis").join("create.log");
        let log = std::fs::File::create(&log_path)
            .map_err(|e| ClusterError(format!("creating {}: {e}", log_path.display())))?;
        let log_err =
            log.try_clone().map_err(|e| ClusterError(format!("{}: {e}", log_path.display())))?;
        let mut child = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&endpoints)
            .arg("--cluster-replicas")
            .arg(cluster.replicas.to_string())
            .arg("--cluster-yes")
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(|e| ClusterError(format!("running redis-cli --cluster create: {e}")))?;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                _ => {
                    let _ = child.kill();
                    break None;
                }
            }
        };
        let out = child
            .wait_with_output()
            .map_err(|e| ClusterError(format!("reading redis-cli's output: {e}")))?;
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        match status {
            Some(s) if s.success() => {}
            Some(s) => {
                return fail(format!(
                    "redis-cli --cluster create failed ({s}): {}",
                    last_lines(&text, 4)
                ));
            }
            None => {
                return fail(format!(
                    "redis-cli --cluster create did not finish within {:?}: {}",
                    config.timeout,
                    last_lines(&text, 4)
                ));
            }
        }
        cluster.wait_formed(deadline)
    }

    /// The cluster recorded in `dir`.
    pub fn open(dir: &Path) -> Result<LocalRedisCluster> {
        let path = dir.join(STATE_FILE);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| ClusterError(format!("reading {}: {e}", path.display())))?;
        serde_json::from_str(&text).map_err(|e| ClusterError(format!("{}: {e}", path.display())))
    }

    /// Whether `dir` holds a Redis Cluster.
    pub fn exists(dir: &Path) -> bool {
        dir.join(STATE_FILE).exists()
    }

    /// `redis://address:port` of every node, comma-separated: what `kith serve
    /// --redis-cluster` takes (any reachable node is enough to find the others).
    pub fn urls(&self) -> String {
        self.nodes.iter().map(|n| format!("redis://{}", n.endpoint())).collect::<Vec<_>>().join(",")
    }

    /// Every node's state, role, slots and keys, as the live nodes see the cluster.
    pub fn status(&self) -> Vec<RedisNodeStatus> {
        // `CLUSTER NODES` from the first live node: id, endpoint, flags and slot ranges.
        let view = self
            .nodes
            .iter()
            .filter(|n| n.alive())
            .find_map(|n| command(n, &["CLUSTER", "NODES"]).ok())
            .unwrap_or_default();
        self.nodes
            .iter()
            .map(|n| {
                let up = n.alive() && ping(n).is_ok();
                let line = view.lines().find(|l| {
                    l.split(' ')
                        .nth(1)
                        .is_some_and(|a| a.split('@').next() == Some(n.endpoint().as_str()))
                });
                let (role, slots) = match (up, line) {
                    (true, Some(l)) => (role_of(l).to_string(), slots_of(l)),
                    _ => ("-".to_string(), 0),
                };
                let keys = if up {
                    command(n, &["DBSIZE"]).ok().and_then(|s| s.parse().ok()).unwrap_or(0)
                } else {
                    0
                };
                RedisNodeStatus {
                    index: n.index,
                    endpoint: n.endpoint(),
                    pid: n.pid.filter(|&p| pid_alive(p)),
                    state: if up { "up" } else { "down" },
                    role,
                    slots,
                    keys,
                }
            })
            .collect()
    }

    /// The index (from 1) of the node that serves `key`'s slot as master now, as a live
    /// node sees the cluster.
    pub fn master_of_key(&self, key: &str) -> Result<usize> {
        let slot = self.any_live()?.query(&["CLUSTER", "KEYSLOT", key])?;
        let slot: u32 =
            slot.parse().map_err(|_| ClusterError(format!("CLUSTER KEYSLOT answered {slot:?}")))?;
        self.masters_by_slot()?
            .into_iter()
            .find(|(lo, hi, _)| (*lo..=*hi).contains(&slot))
            .map(|(_, _, i)| i)
            .ok_or_else(|| ClusterError(format!("no master serves slot {slot}")))
    }

    /// Indexes (from 1) of the nodes that serve as masters now.
    pub fn master_indexes(&self) -> Result<Vec<usize>> {
        let mut out: Vec<usize> = self.masters_by_slot()?.into_iter().map(|(_, _, i)| i).collect();
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    /// (first slot, last slot, node index) of every master's ranges.
    fn masters_by_slot(&self) -> Result<Vec<(u32, u32, usize)>> {
        let view = self.any_live()?.query(&["CLUSTER", "NODES"])?;
        let mut out = Vec::new();
        for line in view.lines().filter(|l| role_of(l) == "master" && !l.contains("fail")) {
            let endpoint = line.split(' ').nth(1).and_then(|a| a.split('@').next()).unwrap_or("");
            let Some(node) = self.nodes.iter().find(|n| n.endpoint() == endpoint) else { continue };
            for range in line.split(' ').skip(8) {
                let (lo, hi) = range.split_once('-').unwrap_or((range, range));
                if let (Ok(lo), Ok(hi)) = (lo.parse(), hi.parse()) {
                    out.push((lo, hi, node.index));
                }
            }
        }
        Ok(out)
    }

    fn any_live(&self) -> Result<&RedisNode> {
        self.nodes.iter().find(|n| n.alive() && ping(n).is_ok()).ok_or_else(|| {
            ClusterError(format!("no node of the cluster in {} answers", self.dir.display()))
        })
    }

    /// Kills node `index` with SIGKILL, as a crash would.
    pub fn kill(&mut self, index: usize) -> Result<()> {
        let n = self.node(index)?;
        n.signal(libc::SIGKILL);
        let deadline = Instant::now() + Duration::from_secs(10);
        wait_for(deadline, || !n.alive(), || format!("{} outlived SIGKILL", n.endpoint()))?;
        self.nodes[index - 1].pid = None;
        self.save()
    }

    /// Starts node `index` again with its data and `nodes.conf` (a former master rejoins as
    /// a replica of the node that replaced it), and waits until it reports the cluster ok.
    pub fn restart(&mut self, index: usize, timeout: Duration) -> Result<()> {
        let n = self.node(index)?;
        if n.alive() {
            return Ok(());
        }
        self.launch(index - 1)?;
        self.save()?;
        let deadline = Instant::now() + timeout;
        let n = &self.nodes[index - 1];
        wait_for(
            deadline,
            || cluster_ok(n) && synced(n),
            || format!("{} did not rejoin the cluster", n.endpoint()),
        )
    }

    /// Stops every node (SIGTERM: each writes its append-only file and exits), killing any
    /// still running after `grace`.
    pub fn down(&mut self, grace: Duration) -> Result<()> {
        for n in &self.nodes {
            n.signal(libc::SIGTERM);
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline && self.nodes.iter().any(RedisNode::alive) {
            std::thread::sleep(Duration::from_millis(50));
        }
        for n in &mut self.nodes {
            n.signal(libc::SIGKILL);
            n.pid = None;
        }
        self.save()
    }

    fn node(&self, index: usize) -> Result<&RedisNode> {
        match self.nodes.get(index.wrapping_sub(1)) {
            Some(n) => Ok(n),
            None => fail(format!(
                "no Redis node {index}: the cluster has nodes 1 to {}",
                self.nodes.len()
            )),
        }
    }

    fn start_stopped(&mut self, timeout: Duration) -> Result<()> {
        for i in 0..self.nodes.len() {
            if !self.nodes[i].alive() {
                self.launch(i)?;
            }
        }
        self.save()?;
        self.wait_formed(Instant::now() + timeout)
    }

    /// Every node up, reporting `cluster_state:ok` and knowing all the others, and every
    /// replica in sync with its master (a replica that never synced cannot take over).
    fn wait_formed(&self, deadline: Instant) -> Result<()> {
        let count = self.nodes.len();
        for n in &self.nodes {
            wait_for(
                deadline,
                || cluster_ok(n) && known_nodes(n) == Some(count) && synced(n),
                || {
                    format!(
                        "{} did not see the whole cluster ({count} nodes) in time",
                        n.endpoint()
                    )
                },
            )?;
        }
        self.note(&format!("redis cluster ok: {}", self.urls()));
        Ok(())
    }

    /// Writes node `i`'s configuration and starts it, detached from kith's process group so
    /// it outlives the command that started it.
    fn launch(&mut self, i: usize) -> Result<()> {
        let timeout = self.node_timeout_ms;
        let n = &mut self.nodes[i];
        std::fs::create_dir_all(&n.dir)
            .map_err(|e| ClusterError(format!("creating {}: {e}", n.dir.display())))?;
        let conf = n.dir.join("redis.conf");
        // `cluster-require-full-coverage no`: while a master is flagged failed and before its
        // replica takes over, the other masters keep serving their slots and its replicas
        // their reads (`READONLY`), instead of every node refusing everything; the
        // write-back's reads (`cache/writeback.rs`) go on through that window.
        let text = format!(
            "port {port}\nbind {addr}\nbind-source-addr {addr}\ncluster-announce-ip {addr}\n\
             protected-mode no\ndir {dir}\n\
             cluster-enabled yes\ncluster-config-file nodes.conf\ncluster-node-timeout {timeout}\n\
             cluster-require-full-coverage no\n\
             appendonly yes\nappendfsync everysec\nsave \"\"\nlogfile {dir}/redis.log\n",
            port = n.port,
            addr = n.address,
            dir = n.dir.display(),
        );
        std::fs::write(&conf, text)
            .map_err(|e| ClusterError(format!("writing {}: {e}", conf.display())))?;
        use std::os::unix::process::CommandExt;
        let child = Command::new("redis-server")
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|e| {
                ClusterError(format!("cannot run redis-server (apt-get install redis-server): {e}"))
            })?;
        n.pid = Some(child.id());
        // Not waited for here: the state file keeps the pid; `down` stops it.
        std::mem::forget(child);
        Ok(())
    }

    fn save(&self) -> Result<()> {
        let path = self.dir.join(STATE_FILE);
        let text = serde_json::to_string_pretty(self).expect("plain data");
        std::fs::write(&path, text)
            .map_err(|e| ClusterError(format!("writing {}: {e}", path.display())))
    }

    fn note(&self, what: &str) {
        if self.progress {
            eprintln!("{what}");
        }
    }
}
