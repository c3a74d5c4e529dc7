//! `kith trial cluster`: Jepsen-style trials of kith's distributed mode. A 3-node Cassandra
//! cluster, a Redis Cluster (three masters with a replica each) and three `kith serve` on
//! loopback; clients spread a mixed load of every write and read kind over the servers,
//! contending for a few hot users and post ids, while a nemesis kills or pauses a kith
//! server, a Cassandra node or a Redis node, skews a kith server's or a Cassandra node's
//! clock, or fills a Cassandra node's disk. Every request is recorded as a history
//! (`history.rs`); once every fault is healed and the system is quiet, the state is read
//! from the store and every server, and the checker (`check/`) counts anomalies by kind.
//! Results go to `bench/results/trial-<date>.json`, written after every run; `--resume`
//! skips the runs a file already holds, so the full count can span several sessions.

mod balance;
mod check;
mod client;
mod history;
mod nemesis;
mod quiet;
mod recovery;
mod run;
mod workload;

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use kith_cassandra::{CassandraOptions, CassandraStore};
use kith_store::Engine;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use crate::machine::{Machine, git_commit, utc_now, write_json};
use crate::rig::{Rig, RigConfig};
pub use check::KINDS;
pub use nemesis::Nemesis;
use run::{RunReport, Stage, TrialConfig};

/// `kith trial ...`.
#[derive(Debug, Args)]
pub struct TrialArgs {
    #[command(subcommand)]
    command: TrialCommand,
}

#[derive(Debug, Subcommand)]
enum TrialCommand {
    /// Recorded histories of a mixed load on three servers over Cassandra and a Redis
    /// Cluster, under each nemesis, judged by the checker.
    Cluster(ClusterArgs),
}

#[derive(Debug, Args)]
struct ClusterArgs {
    /// Nemeses to run: none, kill-kith, kill-cassandra, kill-redis, pause-kith,
    /// pause-cassandra, pause-redis, skew-kith, skew-cassandra, full-disk-cassandra,
    /// partition-cassandra, isolate-cassandra, mix. On a cluster of `--cluster-dir`, skewing
    /// a Cassandra node needs it started with `kith cluster up --skewable`, filling a node's
    /// disk with `--disk-mb N`, and cutting its links with `--netns` (the trial's own cluster
    /// is started with all three; mix leaves out what a cluster cannot take).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "none,kill-kith,kill-cassandra,kill-redis,pause-kith,pause-cassandra,pause-redis,skew-kith,skew-cassandra,full-disk-cassandra,partition-cassandra,isolate-cassandra,mix"
    )]
    nemesis: Vec<Nemesis>,
    /// Runs of each nemesis.
    #[arg(long, default_value_t = 10)]
    runs: usize,
    /// Seconds of load per run.
    #[arg(long, default_value_t = 60.0)]
    load_s: f64,
    /// Concurrent clients.
    #[arg(long, default_value_t = 12)]
    clients: usize,
    /// Users in the generated graph.
    #[arg(long, default_value_t = 400)]
    users: usize,
    /// Users the load touches; the first `--hot` of them take most requests.
    #[arg(long, default_value_t = 40)]
    playground: usize,
    #[arg(long, default_value_t = 6)]
    hot: usize,
    /// Feed strategies, taken in turn by the runs.
    #[arg(long, value_delimiter = ',', default_value = "pull,push,hybrid")]
    feed: Vec<String>,
    /// Cache modes, taken in turn after each round of feed strategies.
    #[arg(long, value_delimiter = ',', default_value = "aside,write-back")]
    cache: Vec<String>,
    /// A client's patience with one request (ms); an answer later than this is unknown.
    #[arg(long, default_value_t = 10_000)]
    timeout_ms: u64,
    /// How long a client waits on one server before it sends a read or a keyed write to
    /// another (ms; the last attempt waits `--timeout-ms`); 0: as long as `--timeout-ms`.
    /// A client that moves on so keeps going while a server is paused, as one behind a
    /// load balancer with a per-try timeout does.
    #[arg(long, default_value_t = 1_000)]
    patience_ms: u64,
    /// Seconds to let the system settle after the faults are healed, before the quiet reads
    /// (three times as long after a kith server was killed: its lease must lapse).
    #[arg(long, default_value_t = 3.0)]
    settle_s: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Run on the local cluster `kith cluster up --dir DIR` started (left running, every
    /// node it kills restarted) instead of starting one.
    #[arg(long)]
    cluster_dir: Option<PathBuf>,
    /// The clusters' first address (Cassandra and Redis nodes on it and the next five).
    #[arg(long, default_value = "127.0.6.1")]
    base: Ipv4Addr,
    #[arg(long, default_value_t = 6393)]
    redis_port: u16,
    /// Where to write the JSON (default: bench/results/trial-<date>.json).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Keep each run's history (JSON lines) in this directory.
    #[arg(long)]
    history_dir: Option<PathBuf>,
    /// Keep the runs `--out` already holds and run only the others.
    #[arg(long)]
    resume: bool,
    /// With `--resume`: recompute the kept runs' recovery windows from their histories
    /// (after their measure changed), failing if a history is gone.
    #[arg(long, requires = "resume")]
    rejudge: bool,
}

/// Per nemesis, over its runs.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Summary {
    nemesis: Nemesis,
    runs: usize,
    writes: u64,
    reads: u64,
    unknown_share: f64,
    anomalies: BTreeMap<String, u64>,
    max_below_half_s: f64,
    /// Of stretches that began while a fault held, and once healing had begun.
    max_below_half_faulted_s: f64,
    max_below_half_healing_s: f64,
    max_first_ok_s: f64,
}

#[derive(Serialize)]
struct Report {
    benchmark: String,
    date: String,
    commit: Option<String>,
    machine: Machine,
    setup: String,
    summary: Vec<Summary>,
    runs: Vec<RunReport>,
}

/// The part of an earlier report `--resume` keeps.
#[derive(Deserialize)]
struct Resumed {
    runs: Vec<RunReport>,
}

/// Runs `kith trial ...`.
pub fn run(args: TrialArgs) -> Result<()> {
    match args.command {
        TrialCommand::Cluster(a) => cluster(a),
    }
}

fn cluster(a: ClusterArgs) -> Result<()> {
    anyhow::ensure!(a.hot >= 1 && a.hot <= a.playground, "--hot must be 1 to --playground");
    anyhow::ensure!(
        a.playground >= 2 && a.playground <= a.users,
        "--playground must be 2 to --users"
    );
    anyhow::ensure!(!a.feed.is_empty() && !a.cache.is_empty(), "--feed and --cache need a value");
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("bench/results/trial-{}.json", &utc_now()[..10])));
    let mut done: Vec<RunReport> = if a.resume && out.exists() {
        let text =
            std::fs::read_to_string(&out).with_context(|| format!("reading {}", out.display()))?;
        let report: Resumed = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a trial report", out.display()))?;
        report.runs
    } else {
        Vec::new()
    };
    if a.rejudge {
        for r in done.iter_mut().filter(|r| !r.faults.is_empty()) {
            let history = r.history.clone().with_context(|| {
                format!("{} run {}: no history kept to rejudge", r.nemesis.name(), r.run + 1)
            })?;
            recovery::rejudge(&mut r.faults, std::path::Path::new(&history), r.load_s)?;
        }
        write(&a, &out, &done)?;
    }
    let config = TrialConfig {
        load: Duration::from_secs_f64(a.load_s),
        clients: a.clients,
        hot: a.hot,
        feeds: a.feed.clone(),
        caches: a.cache.clone(),
        timeout: Duration::from_millis(a.timeout_ms),
        patience: Duration::from_millis(patience_ms(&a)),
        settle: Duration::from_secs_f64(a.settle_s),
        seed: a.seed,
        history_dir: a.history_dir.clone(),
        commit: git_commit(),
    };
    let left = a
        .nemesis
        .iter()
        .flat_map(|&n| (0..a.runs).map(move |run| (n, run)))
        .filter(|&(n, run)| !done.iter().any(|r| r.nemesis == n && r.run == run))
        .count();
    if left == 0 {
        eprintln!("trial: every run is in {} already", out.display());
        return write(&a, &out, &done);
    }
    let dir = tempfile::tempdir()?;
    let mut stage = stage(&a, dir.path().to_path_buf())?;
    for &n in &a.nemesis {
        if let Some(why) = nemesis::unsupported(n, &stage.rig) {
            anyhow::bail!("{why}");
        }
        if n == Nemesis::Mix {
            for k in nemesis::ALL.iter().filter_map(|&k| nemesis::unsupported(k, &stage.rig)) {
                eprintln!("trial: mix leaves out {k}");
            }
        }
    }
    nemesis::heal_on_interrupt();
    for &nemesis in &a.nemesis {
        for run in 0..a.runs {
            if done.iter().any(|r| r.nemesis == nemesis && r.run == run) {
                continue;
            }
            anyhow::ensure!(!nemesis::interrupted(), "interrupted: the runs so far are kept");
            eprintln!("trial: {} run {}", nemesis.name(), run + 1);
            let began = std::time::Instant::now();
            let r = run::one(&config, &mut stage, nemesis, run)?;
            eprintln!(
                "trial: {} run {} ({:.0} s): {} anomalies {:?}, unknown {:.2} %, background work {}",
                nemesis.name(),
                run + 1,
                began.elapsed().as_secs_f64(),
                r.anomalies.total(),
                r.anomalies.counts.iter().filter(|(_, n)| **n > 0).collect::<Vec<_>>(),
                r.unknown_share * 100.0,
                r.background_s
                    .map_or("left after the limit".into(), |s| format!("done in {s:.1} s"))
            );
            done.push(r);
            write(&a, &out, &done)?;
        }
    }
    if a.cluster_dir.is_some() {
        // A shared cluster's heap holds only so many keyspaces.
        stage.rig.drop_keyspace(&stage.keyspace);
    }
    write(&a, &out, &done)
}

fn stage(a: &ClusterArgs, dir: PathBuf) -> Result<Stage> {
    let rig = match &a.cluster_dir {
        Some(existing) => Rig::open(existing)?,
        None => Rig::up(&RigConfig {
            dir,
            base: a.base,
            redis_port: a.redis_port,
            redis_node_timeout: Duration::from_millis(1000),
            heap_mb: 512,
            trial: true,
        })?,
    };
    let lfr =
        kith_graph::generate::LfrConfig { nodes: a.users, seed: a.seed, ..Default::default() };
    let graph = kith_graph::generate::lfr(&lfr)?.graph.to_undirected();
    // Its own keyspace and Redis prefix per invocation: a keyspace made again under the
    // name an earlier invocation dropped, and that invocation's cached lists under the same
    // prefix, gave later invocations on one cluster reads nothing of theirs wrote.
    let keyspace = format!("trial_s{}_{}", a.seed, std::process::id());
    rig.load(&graph, &keyspace)?;
    let mut users: Vec<u64> = (0..graph.num_nodes() as u32).map(|v| graph.original_id(v)).collect();
    users.shuffle(&mut rand_pcg::Pcg64Mcg::seed_from_u64(a.seed));
    users.truncate(a.playground);
    let engine: Arc<dyn Engine> =
        Arc::new(CassandraStore::open(&CassandraOptions::new(rig.cassandra.hosts(), &keyspace))?);
    Ok(Stage { rig, keyspace, engine, playground: users })
}

fn write(a: &ClusterArgs, out: &std::path::Path, runs: &[RunReport]) -> Result<()> {
    let mut summary = Vec::new();
    for &n in &a.nemesis {
        let mine: Vec<&RunReport> = runs.iter().filter(|r| r.nemesis == n).collect();
        if mine.is_empty() {
            continue;
        }
        let mut anomalies: BTreeMap<String, u64> =
            KINDS.iter().map(|k| (k.to_string(), 0)).collect();
        let (mut writes, mut reads, mut unknown_w) = (0u64, 0u64, 0.0);
        for r in &mine {
            for (k, c) in &r.anomalies.counts {
                *anomalies.entry(k.clone()).or_insert(0) += c;
            }
            let w: u64 = r.ops.iter().filter(|(k, _)| is_write(k)).map(|(_, c)| c.invoked).sum();
            writes += w;
            reads +=
                r.ops.iter().filter(|(k, _)| !is_write(k)).map(|(_, c)| c.invoked).sum::<u64>();
            unknown_w += r.unknown_share * w as f64;
        }
        let faults = mine.iter().flat_map(|r| &r.faults);
        let (mut below, mut faulted, mut healing, mut first) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
        for f in faults {
            below = below.max(f.below_half_s);
            faulted = faulted.max(f.below_half_faulted_s);
            healing = healing.max(f.below_half_healing_s.unwrap_or(0.0));
            first = first.max(f.first_ok_s.unwrap_or(f64::INFINITY));
        }
        summary.push(Summary {
            nemesis: n,
            runs: mine.len(),
            writes,
            reads,
            unknown_share: if writes == 0 { 0.0 } else { unknown_w / writes as f64 },
            anomalies,
            max_below_half_s: below,
            max_below_half_faulted_s: faulted,
            max_below_half_healing_s: healing,
            max_first_ok_s: first,
        });
    }
    let report = Report {
        benchmark: "trial-cluster".into(),
        date: utc_now(),
        commit: git_commit(),
        machine: Machine::describe(),
        setup: format!(
            "3 kith serve over 3 Cassandra nodes (heap 512 MiB, RF 3, QUORUM) and a Redis Cluster \
             of 3 masters with a replica each (node timeout 1 s), on loopback; {} clients, {} s \
             per run, {} of {} LFR users touched ({} hot), client timeout {} ms (on one server: {} ms); \
             feeds {:?} in turn, caches {:?}",
            a.clients,
            a.load_s,
            a.playground,
            a.users,
            a.hot,
            a.timeout_ms,
            patience_ms(a),
            a.feed,
            a.cache
        ),
        summary,
        runs: runs.to_vec(),
    };
    write_json(out, &report)
}

fn is_write(kind: &str) -> bool {
    matches!(
        kind,
        "post"
            | "post-client-id"
            | "add-friend"
            | "delete-friend"
            | "put-user"
            | "put-profile"
            | "follow"
            | "unfollow"
    )
}

/// A client's wait on one server (`--patience-ms`, 0 meaning `--timeout-ms`).
fn patience_ms(a: &ClusterArgs) -> u64 {
    match a.patience_ms {
        0 => a.timeout_ms,
        p => p.min(a.timeout_ms),
    }
}
