//! What the service experiments (`twibo`, `twibo-cache`, `parker-latency`) share: their
//! arguments, a kith-layout store of the follow graph's friendships with a SONETOR trace
//! split into a preload and the measured rest, copies of the store per run, preloading a
//! server over HTTP, and driving it with the load driver. Each experiment starts and stops
//! its own servers, and Redis, on loopback; the `cluster` backend runs them over a
//! Cassandra cluster and a Redis Cluster (`rig.rs`).

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Result, ensure};
use clap::Args;
use kith_graph::Graph;
use kith_workload::{Activity, Event, RunConfig, RunReport, SonetorConfig, TraceSource};
use serde_json::json;

use crate::cli::GraphInput;
use crate::processes::build_kith_store;
use crate::rig::{Rig, RigConfig};

#[derive(Debug, Args)]
pub struct ServiceArgs {
    /// The follow graph (e.g. ego-Twitter, with --directed). Its symmetrised friendships fill
    /// the store; its edges are the follows (both ways for an undirected graph).
    #[arg(long)]
    pub(super) graph: PathBuf,
    /// Keep the graph's direction: an edge u→v means u follows v.
    #[arg(long)]
    pub(super) directed: bool,
    /// Where to write CSV, JSON and PNG (created if missing).
    #[arg(long)]
    pub(super) out: PathBuf,
    /// Client counts to sweep (twibo), Twibo's Tables 3 and 4.
    #[arg(long, value_delimiter = ',', default_value = "8,16,32,64,128,256,512")]
    pub(super) clients: Vec<usize>,
    /// Clients of twibo-cache's runs (Twibo's Table 5 used 64).
    #[arg(long, default_value_t = 64)]
    pub(super) cache_clients: usize,
    /// Measured seconds per run.
    #[arg(long, default_value_t = 5.0)]
    pub(super) duration_s: f64,
    /// Warm-up seconds per run.
    #[arg(long, default_value_t = 1.0)]
    pub(super) warmup_s: f64,
    /// Publishes of the trace stored before measuring (twibo, twibo-cache): Twibo stored the
    /// first million. The trace is as many SONETOR days (seeds seed, seed + 1, ...) as it
    /// takes to hold them and a remainder to replay.
    #[arg(long, default_value_t = 1_000_000)]
    pub(super) preload: usize,
    /// The trace's parameters: `twibo` (Twibo's Table 2 and load driver) or `sonetor`
    /// (SONETOR's example configuration).
    #[arg(long, default_value = "twibo")]
    pub(super) preset: kith_workload::Preset,
    /// Backends (twibo: both by default; twibo-cache: in-process by default).
    #[arg(long, value_delimiter = ',')]
    pub(super) backends: Vec<String>,
    /// Hybrid: authors with more followers than this are pulled.
    #[arg(long, default_value_t = 100)]
    pub(super) celebrity_threshold: u64,
    /// Cache sizes in MB (twibo-cache).
    #[arg(long, value_delimiter = ',', default_value = "2,4,8,16,32")]
    pub(super) cache_mb: Vec<u64>,
    /// Random seed (trace and clients).
    #[arg(long, default_value_t = 1)]
    pub(super) seed: u64,
    /// Server processes to sweep on the `cluster` backend (twibo), e.g. 1,2,4; given, the
    /// backends default to in-process and cluster.
    #[arg(long, value_delimiter = ',')]
    pub(super) servers: Vec<usize>,
    /// The `cluster` backend: run on the local cluster in this directory (`kith cluster up
    /// --dir`) instead of starting one.
    #[arg(long)]
    pub(super) cluster_dir: Option<PathBuf>,
    /// The `cluster` backend started here: its first loopback address (Cassandra on it and
    /// the next two, Redis on it and the next five).
    #[arg(long, default_value = "127.0.12.1")]
    pub(super) base: Ipv4Addr,
    /// The `cluster` backend started here: the Redis nodes' port.
    #[arg(long, default_value_t = 6390)]
    pub(super) redis_port: u16,
}

impl ServiceArgs {
    /// The backends to run: as given, else in-process with Redis, or with the cluster when
    /// server counts are given.
    pub(super) fn backends(&self, default: &[&str]) -> Result<Vec<String>> {
        let all = if !self.backends.is_empty() {
            self.backends.clone()
        } else if !self.servers.is_empty() {
            vec!["in-process".into(), "cluster".into()]
        } else {
            default.iter().map(|s| s.to_string()).collect()
        };
        for b in &all {
            ensure!(
                matches!(b.as_str(), "in-process" | "redis" | "cluster"),
                "unknown backend {b:?}: in-process, redis or cluster"
            );
        }
        ensure!(
            self.servers.iter().all(|&n| (1..=32).contains(&n)),
            "--servers: counts from 1 to 32"
        );
        Ok(all)
    }

    /// The cluster the `cluster` backend runs on.
    pub(super) fn rig(&self, scratch: &Path) -> Result<Rig> {
        match &self.cluster_dir {
            Some(dir) => Rig::open(dir),
            None => Rig::up(&RigConfig {
                dir: scratch.join("cluster"),
                base: self.base,
                redis_port: self.redis_port,
                redis_node_timeout: Duration::from_secs(2),
                heap_mb: 768,
                trial: false,
            }),
        }
    }
}

/// An experiment's starting point.
pub(super) struct Prepared {
    /// The follow graph as read (directed with `--directed`).
    pub(super) follows: Graph,
    /// Its friendships (the follows, symmetrised), which the store holds.
    pub(super) friends: Graph,
    /// The store built from the follows' friendships, copied for each run.
    pub(super) store: PathBuf,
    /// The trace's first `--preload` publishes, stored before measuring.
    pub(super) preload: Vec<Event>,
    /// The rest of the trace, which the runs replay.
    pub(super) rest: Arc<TraceSource>,
    /// The directory holding the store and each run's copy; removed when dropped.
    pub(super) scratch: tempfile::TempDir,
}

pub(super) fn prepare(args: &ServiceArgs, with_trace: bool) -> Result<Prepared> {
    ensure!(args.duration_s > 0.0 && args.warmup_s >= 0.0, "durations must be positive");
    ensure!(
        !args.clients.is_empty() && args.clients.iter().all(|&c| c > 0),
        "--clients must be positive"
    );
    std::fs::create_dir_all(&args.out)?;
    let input = GraphInput {
        graph: args.graph.clone(),
        format: None,
        directed: args.directed,
        member: None,
    };
    let follows = input.load()?;
    let friends = if follows.is_directed() { follows.to_undirected() } else { follows.clone() };
    let tmp = tempfile::tempdir()?;
    let store = tmp.path().join("store");
    eprintln!("experiment: building a kith-layout store of {} users", friends.num_nodes());
    build_kith_store(&friends, &store, args.seed)?;
    let (mut preload, mut rest) = (Vec::new(), Vec::new());
    if with_trace {
        let config = SonetorConfig::preset(args.preset);
        let mut publishes = 0;
        // Day after day until the preload is full and the rest holds half a day (at most 2 M
        // activities), more than the runs replay.
        for day in 0.. {
            ensure!(day < 1000, "1,000 SONETOR days hold fewer than {} publishes", args.preload);
            let (events, _) = kith_workload::generate(
                follows.original_ids(),
                &config,
                args.seed.wrapping_add(day),
                0,
            );
            ensure!(!events.is_empty(), "the trace of {} is empty", args.graph.display());
            let offset = day as f64 * config.time_limit_s;
            let generated = events.len();
            for mut e in events {
                e.ts += offset;
                if publishes < args.preload {
                    if e.activity == Activity::Publish {
                        publishes += 1;
                        preload.push(e);
                    }
                } else {
                    rest.push(e);
                }
            }
            if publishes >= args.preload && rest.len() >= (generated / 2).min(2_000_000) {
                break;
            }
            eprintln!("experiment: {publishes} publishes after {} SONETOR day(s)", day + 1);
        }
        eprintln!(
            "experiment: trace of {} activities after {} preloaded publishes",
            rest.len(),
            preload.len()
        );
    }
    Ok(Prepared {
        follows,
        friends,
        store,
        preload,
        rest: Arc::new(TraceSource::new(rest)),
        scratch: tmp,
    })
}

pub(super) fn copy_store(from: &Path, to: &Path) -> Result<()> {
    if to.exists() {
        std::fs::remove_dir_all(to)?;
    }
    let status = std::process::Command::new("cp").arg("-r").arg(from).arg(to).status()?;
    ensure!(status.success(), "copying the store failed");
    Ok(())
}

/// Follows from the graph's edges, then the preloaded posts, then waits for fan-out.
pub(super) async fn preload(base: &str, follows: &Graph, posts: &[Event]) -> Result<()> {
    let http = reqwest::Client::new();
    let ids = follows.original_ids();
    let mut jobs = Vec::new();
    for u in 0..follows.num_nodes() as u32 {
        for chunk in follows.neighbors(u).chunks(1000) {
            let targets: Vec<u64> = chunk.iter().map(|&v| ids[v as usize]).collect();
            jobs.push((
                format!("{base}/users/{}/follow", ids[u as usize]),
                json!({"targets": targets}),
            ));
        }
    }
    for e in posts {
        jobs.push((
            format!("{base}/posts"),
            json!({"author": e.user, "content": "x".repeat(e.attr.clamp(1, 65_536) as usize)}),
        ));
    }
    let bar = indicatif::ProgressBar::new(jobs.len() as u64);
    let mut in_flight = tokio::task::JoinSet::new();
    for (url, body) in jobs {
        if in_flight.len() >= 32 {
            let r: reqwest::Response = in_flight.join_next().await.expect("non-empty")??;
            ensure!(r.status().is_success(), "preload: {} {}", r.url(), r.status());
            bar.inc(1);
        }
        let req = http.post(url).json(&body);
        in_flight.spawn(async move { req.send().await });
    }
    while let Some(r) = in_flight.join_next().await {
        let r = r??;
        ensure!(r.status().is_success(), "preload: {} {}", r.url(), r.status());
    }
    bar.finish_and_clear();
    for _ in 0..60_000 {
        let s: serde_json::Value = http.get(format!("{base}/stats")).send().await?.json().await?;
        if s["fanout_queue_depth"] == 0 && s["writeback_pending"] == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

pub(super) async fn stats(base: &str) -> Result<serde_json::Value> {
    Ok(reqwest::get(format!("{base}/stats")).await?.json().await?)
}

/// Drives the servers at `targets` (requests spread over them) with `clients` clients.
pub(super) fn drive(
    runtime: &tokio::runtime::Runtime,
    source: Arc<dyn kith_workload::Source>,
    targets: &[String],
    clients: usize,
    args: &ServiceArgs,
) -> Result<RunReport> {
    let config = RunConfig {
        targets: targets.to_vec(),
        clients,
        rate: None,
        duration: Duration::from_secs_f64(args.duration_s),
        warmup: Duration::from_secs_f64(args.warmup_s),
        seed: args.seed,
        timeout: Duration::from_secs(60),
    };
    Ok(runtime.block_on(kith_workload::run(source, &config))?)
}

pub(super) fn op<'a>(r: &'a RunReport, name: &str) -> Option<&'a kith_workload::OpReport> {
    r.ops.iter().find(|o| o.op == name)
}
