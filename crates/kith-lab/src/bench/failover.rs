//! `kith bench failover`: the failover trials of the service on a cluster (`failover.rs`) at
//! full count, as `bench/results/failover-<date>.json`: per fault and run, the window of
//! failed requests, how many failed, and the acknowledged writes checked and lost.

use std::net::Ipv4Addr;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use serde::Serialize;

use crate::failover::{FailoverConfig, Fault, Trial, rig, run as run_trials};
use crate::machine::{Machine, git_commit, utc_now, write_json};

#[derive(Debug, Args)]
pub struct FailoverBenchArgs {
    /// Faults to try: redis-master, kith-server, cassandra-and-kith.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "redis-master,kith-server,cassandra-and-kith"
    )]
    faults: Vec<Fault>,
    /// Runs of each fault.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Seconds of mixed load per run (the fault comes at a third of it).
    #[arg(long, default_value_t = 15.0)]
    load_s: f64,
    /// Concurrent clients.
    #[arg(long, default_value_t = 8)]
    clients: usize,
    /// Users in the generated graph.
    #[arg(long, default_value_t = 2000)]
    users: usize,
    /// Feed strategy of the servers.
    #[arg(long, default_value = "push", value_parser = ["pull", "push", "hybrid"])]
    feed: String,
    /// Cache mode of the servers.
    #[arg(long, default_value = "write-back", value_parser = ["none", "aside", "write-back"])]
    cache: String,
    /// The clusters' first address (Cassandra and Redis nodes on it and the next five).
    #[arg(long, default_value = "127.0.4.1")]
    base: Ipv4Addr,
    /// The Redis Cluster's port.
    #[arg(long, default_value_t = 6391)]
    redis_port: u16,
    /// How long a Redis master may be unreachable before a replica replaces it (ms).
    #[arg(long, default_value_t = 1000)]
    redis_node_timeout_ms: u64,
    /// Where to write the JSON (default: bench/results/failover-<date>.json).
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Serialize)]
struct Summary {
    fault: Fault,
    runs: usize,
    max_window_s: f64,
    failed: u64,
    requests: u64,
    acknowledged: u64,
    lost: u64,
    max_promoted_s: Option<f64>,
}

#[derive(Serialize)]
struct Report {
    benchmark: &'static str,
    date: String,
    commit: Option<String>,
    machine: Machine,
    setup: String,
    summary: Vec<Summary>,
    trials: Vec<Trial>,
}

pub(super) fn run(a: FailoverBenchArgs) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let config = FailoverConfig {
        faults: a.faults.clone(),
        runs: a.runs,
        load_s: a.load_s,
        clients: a.clients,
        users: a.users,
        dir: dir.path().to_path_buf(),
        base: a.base,
        redis_port: a.redis_port,
        redis_node_timeout: std::time::Duration::from_millis(a.redis_node_timeout_ms),
        feed: a.feed.clone(),
        cache: a.cache.clone(),
    };
    let mut rig = rig(&config)?;
    let trials = run_trials(&config, &mut rig)?;
    drop(rig);
    let summary = a
        .faults
        .iter()
        .map(|&f| {
            let mine: Vec<&Trial> = trials.iter().filter(|t| t.fault == f).collect();
            Summary {
                fault: f,
                runs: mine.len(),
                max_window_s: mine.iter().map(|t| t.window_s).fold(0.0, f64::max),
                failed: mine.iter().map(|t| t.failed).sum(),
                requests: mine.iter().map(|t| t.requests).sum(),
                acknowledged: mine.iter().map(|t| t.acknowledged).sum(),
                lost: mine.iter().map(|t| t.lost).sum(),
                max_promoted_s: mine.iter().filter_map(|t| t.promoted_s).reduce(f64::max),
            }
        })
        .collect::<Vec<_>>();
    crate::say!(
        "{:<20} {:>4} {:>10} {:>9} {:>9} {:>12} {:>5}",
        "fault",
        "runs",
        "window s",
        "failed",
        "requests",
        "acknowledged",
        "lost"
    );
    for s in &summary {
        crate::say!(
            "{:<20} {:>4} {:>10.2} {:>9} {:>9} {:>12} {:>5}",
            format!("{:?}", s.fault),
            s.runs,
            s.max_window_s,
            s.failed,
            s.requests,
            s.acknowledged,
            s.lost
        );
    }
    let report = Report {
        benchmark: "failover",
        date: utc_now(),
        commit: git_commit(),
        machine: Machine::describe(),
        setup: format!(
            "3 kith serve (--feed {} --cache {}) over 3 Cassandra nodes (heap 512 MiB, RF 3, \
             QUORUM) and a Redis Cluster of 3 masters with a replica each (node timeout {} ms), \
             on loopback; {} clients for {} s per run, fault at a third; {} users (LFR, kith \
             layout, 64 per partition)",
            a.feed, a.cache, a.redis_node_timeout_ms, a.clients, a.load_s, a.users
        ),
        summary,
        trials,
    };
    let out = a.out.clone().unwrap_or_else(|| {
        PathBuf::from(format!("bench/results/failover-{}.json", &report.date[..10]))
    });
    write_json(&out, &report)?;
    crate::say!("wrote {}", out.display());
    Ok(())
}
