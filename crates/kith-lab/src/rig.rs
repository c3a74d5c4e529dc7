//! A cluster to run the service on, on loopback: a Cassandra cluster and a Redis Cluster,
//! started here (and stopped when dropped) or an existing local cluster that `kith cluster
//! up` started (left running). Stores of generated or real graphs are built on it under
//! kith's layout, and `kith serve` processes started over them. The failover trials, the
//! cluster demo, the scaling benchmark and Twibo's experiment on several servers run on it.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use kith_cassandra::local::{ClusterConfig, LocalCluster};
use kith_cassandra::{BuildConfig, CassandraOptions};
use kith_feed::redis_cluster::{LocalRedisCluster, RedisClusterConfig};
use kith_graph::Graph;

use crate::processes::{ChildProcess, Launch, start_cassandra_server};

/// Each Cassandra node's disk in a trial's own cluster (MiB; filled by the nemesis).
const TRIAL_DISK_MB: u64 = 1024;

/// Where a new cluster goes.
#[derive(Clone, Debug)]
pub(crate) struct RigConfig {
    /// Its directory.
    pub dir: PathBuf,
    /// The first Cassandra node's address; Redis's nodes use it and the next five.
    pub base: Ipv4Addr,
    /// The Redis nodes' port.
    pub redis_port: u16,
    /// How long a Redis master may be unreachable before a replica replaces it.
    pub redis_node_timeout: Duration,
    /// Each Cassandra node's heap.
    pub heap_mb: u32,
    /// Whether the Cassandra nodes' clocks can be skewed (`ClusterConfig::skewable`), and
    /// their disks filled (each on a tmpfs of its own, `ClusterConfig::disk_mb`), and their
    /// links cut (each in a network namespace of its own, `ClusterConfig::netns`).
    pub trial: bool,
}

/// The two clusters, and a directory for the servers' journals.
#[derive(Debug)]
pub(crate) struct Rig {
    pub cassandra: LocalCluster,
    pub redis: LocalRedisCluster,
    hosts: String,
    redis_urls: String,
    journal_dir: tempfile::TempDir,
    /// Whether dropping it stops the clusters (those it started).
    owned: bool,
}

impl Drop for Rig {
    fn drop(&mut self) {
        if self.owned {
            let _ = self.redis.down(Duration::from_secs(5));
            let _ = self.cassandra.down(Duration::from_secs(10));
        }
    }
}

impl Rig {
    /// Starts a 3-node Cassandra, then a Redis Cluster of three masters with a replica each.
    pub(crate) fn up(config: &RigConfig) -> Result<Rig> {
        let cassandra = LocalCluster::up(&ClusterConfig {
            nodes: 3,
            dir: config.dir.clone(),
            base: config.base,
            heap_mb: config.heap_mb,
            progress: true,
            skewable: config.trial,
            disk_mb: config.trial.then_some(TRIAL_DISK_MB),
            netns: config.trial,
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
        Rig::of(cassandra, redis, true)
    }

    /// The running local cluster in `dir` (`kith cluster up --dir`), left running when
    /// dropped.
    pub(crate) fn open(dir: &Path) -> Result<Rig> {
        let cassandra = LocalCluster::open(dir)?;
        let redis = LocalRedisCluster::open(dir).with_context(|| {
            format!("{}: no Redis Cluster beside the Cassandra cluster", dir.display())
        })?;
        Rig::of(cassandra, redis, false)
    }

    fn of(cassandra: LocalCluster, redis: LocalRedisCluster, owned: bool) -> Result<Rig> {
        Ok(Rig {
            hosts: cassandra.hosts().join(","),
            redis_urls: redis.urls(),
            cassandra,
            redis,
            journal_dir: tempfile::tempdir()?,
            owned,
        })
    }

    /// Cassandra's nodes, as `kith serve --cassandra` takes them.
    pub(crate) fn hosts(&self) -> &str {
        &self.hosts
    }

    /// The Redis Cluster's nodes, as `kith serve --redis-cluster` takes them.
    pub(crate) fn redis_urls(&self) -> &str {
        &self.redis_urls
    }

    /// Builds `keyspace` (replacing any) from `graph` (undirected) under kith's layout, 64
    /// users per partition and 40-byte data blocks.
    pub(crate) fn load(&self, graph: &Graph, keyspace: &str) -> Result<()> {
        let (layout, meta) = crate::bench::cassandra::layout_for(graph, "kith", 64)?;
        let options = CassandraOptions::new(self.cassandra.hosts(), keyspace);
        let _ = kith_cassandra::drop_store(&options);
        let build = BuildConfig {
            partition_users: 64,
            data: kith_store::DataSpec::Fixed(40),
            ..BuildConfig::default()
        };
        drop(kith_cassandra::build(&options, graph, &layout, meta, &build)?);
        Ok(())
    }

    /// Drops `keyspace` (a test cluster's heap holds only so many).
    pub(crate) fn drop_keyspace(&self, keyspace: &str) {
        let options = CassandraOptions::new(self.cassandra.hosts(), keyspace);
        if let Err(e) = kith_cassandra::drop_store(&options) {
            eprintln!("rig: dropping keyspace {keyspace}: {e}");
        }
    }

    /// Starts `n` servers over `keyspace` with `--redis-cluster` and `--redis-prefix
    /// prefix`, then `args`; returns them with their URLs. Their standard error goes to
    /// `logs/server-<i>.log` when given.
    pub(crate) fn servers(
        &self,
        keyspace: &str,
        n: usize,
        prefix: &str,
        args: &[String],
        logs: Option<&Path>,
    ) -> Result<(Vec<Option<ChildProcess>>, Vec<String>)> {
        self.servers_of(None, keyspace, n, prefix, args, logs)
    }

    /// [`Rig::servers`] with another kith binary when `exe` is given.
    pub(crate) fn servers_of(
        &self,
        exe: Option<&Path>,
        keyspace: &str,
        n: usize,
        prefix: &str,
        args: &[String],
        logs: Option<&Path>,
    ) -> Result<(Vec<Option<ChildProcess>>, Vec<String>)> {
        let all = self.serve_args(prefix, args);
        let (mut servers, mut urls) = (Vec::new(), Vec::new());
        for i in 1..=n {
            let journal = self.journal_dir.path().join(format!("{prefix}-{i}"));
            let log = logs.map(|d| d.join(format!("server-{i}.log")));
            let launch = Launch { exe, log: log.as_deref(), clock: None };
            let (child, url) = start_cassandra_server(
                &self.hosts,
                keyspace,
                &journal,
                &all,
                "127.0.0.1:0",
                launch,
            )?;
            servers.push(Some(child));
            urls.push(url);
        }
        Ok((servers, urls))
    }

    /// `--redis-cluster <urls> --redis-prefix <prefix>`, then `args`.
    fn serve_args(&self, prefix: &str, args: &[String]) -> Vec<String> {
        let mut all: Vec<String> =
            vec!["--redis-cluster".into(), self.redis_urls.clone(), "--redis-prefix".into()];
        all.push(prefix.into());
        all.extend(args.iter().cloned());
        all
    }

    /// The clock file server `i` (1-based) of `prefix` started by [`Rig::server_at`] reads
    /// its wall clock through ([`kith_cassandra::local::clock`]).
    pub(crate) fn server_clock(&self, prefix: &str, i: usize) -> PathBuf {
        self.journal_dir.path().join(format!("{prefix}-{i}.clock"))
    }

    /// Starts server `i` (1-based) over `keyspace` as [`Rig::servers`] does, listening on
    /// `addr` (the address a killed server had, so its clients find it again), its wall
    /// clock skewable through [`Rig::server_clock`].
    pub(crate) fn server_at(
        &self,
        keyspace: &str,
        i: usize,
        prefix: &str,
        args: &[String],
        addr: &str,
    ) -> Result<ChildProcess> {
        let all = self.serve_args(prefix, args);
        let journal = self.journal_dir.path().join(format!("{prefix}-{i}"));
        let clock = self.server_clock(prefix, i);
        let (child, _) = start_cassandra_server(
            &self.hosts,
            keyspace,
            &journal,
            &all,
            addr,
            Launch { clock: Some(&clock), ..Launch::default() },
        )?;
        Ok(child)
    }
}
