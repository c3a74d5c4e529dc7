//! `kith demo cluster`: kith on a cluster, on this machine's loopback. A 3-node Cassandra and
//! a Redis Cluster of three masters with a replica each, a generated graph loaded under
//! kith's layout, three `kith serve` over them, and the mixed load from clients spread over
//! the servers; midway a Redis master, a kith server and a Cassandra node are killed (-9),
//! one after the other. It prints the load second by second, then throughput, latencies,
//! failed requests and every acknowledged write read back, and stops everything, on Ctrl-C
//! too.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use clap::Args;
use kith_cassandra::local::LocalCluster;
use kith_feed::redis_cluster::LocalRedisCluster;

use crate::failover::{FailoverConfig, Kill, Outcome, load_with_kills, rig};

#[derive(Debug, Args)]
pub struct ClusterDemoArgs {
    /// Users in the generated graph (LFR, with planted communities).
    #[arg(long, default_value_t = 3000)]
    users: usize,
    /// Seconds of mixed load; the kills come at 30 %, 50 % and 70 % of it.
    #[arg(long, default_value_t = 30.0)]
    load_s: f64,
    /// Concurrent clients, spread over the three servers.
    #[arg(long, default_value_t = 8)]
    clients: usize,
    /// Feed strategy of the servers.
    #[arg(long, default_value = "push", value_parser = ["pull", "push", "hybrid"])]
    feed: String,
    /// Cache mode of the servers.
    #[arg(long, default_value = "write-back", value_parser = ["none", "aside", "write-back"])]
    cache: String,
    /// The first node's loopback address: Cassandra's nodes take it and the next two, Redis's
    /// it and the next five.
    #[arg(long, default_value = "127.0.10.1")]
    base: Ipv4Addr,
    /// The Redis nodes' port.
    #[arg(long, default_value_t = 6390)]
    redis_port: u16,
    /// How long a Redis master may be unreachable before a replica replaces it (ms).
    #[arg(long, default_value_t = 1000)]
    redis_node_timeout_ms: u64,
    /// Keep the clusters' directories and the servers' logs here (default: a temporary
    /// directory, removed at the end).
    #[arg(long)]
    keep: Option<PathBuf>,
    /// Print what the load saw as one JSON document on stdout (the walk-through goes to
    /// stderr).
    #[arg(long)]
    json: bool,
}

/// Runs the demo.
pub fn run(a: ClusterDemoArgs) -> Result<()> {
    if a.load_s < 5.0 {
        bail!("--load-s {}: the demo needs at least 5 s of load to fit its three kills", a.load_s);
    }
    if a.users < 100 {
        bail!("--users {}: the demo needs at least 100 users", a.users);
    }
    let tmp = tempfile::tempdir()?;
    let dir = match &a.keep {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            d.clone()
        }
        None => tmp.path().to_path_buf(),
    };
    stop_on_ctrl_c(dir.clone());
    let config = FailoverConfig {
        faults: Vec::new(),
        runs: 1,
        load_s: a.load_s,
        clients: a.clients,
        users: a.users,
        dir: dir.clone(),
        base: a.base,
        redis_port: a.redis_port,
        redis_node_timeout: Duration::from_millis(a.redis_node_timeout_ms),
        feed: a.feed.clone(),
        cache: a.cache.clone(),
    };
    crate::report::set_json(a.json);
    let began = Instant::now();
    crate::say!(
        "kith demo cluster: 3 Cassandra nodes, a Redis Cluster of 3 masters with a replica \
         each, and 3 kith servers, on loopback from {}\n",
        a.base
    );
    let mut stage = rig(&config)?;
    crate::say!(
        "\nloaded {} users (LFR, kith layout, 64 per partition) in {:.0} s from the start",
        a.users,
        began.elapsed().as_secs_f64()
    );
    crate::say!("  cassandra      {}", stage.rig.hosts());
    crate::say!("  redis cluster  {}", stage.rig.redis_urls());
    let load = Duration::from_secs_f64(a.load_s);
    let schedule = [
        (load.mul_f64(0.3), Kill::RedisMaster),
        (load.mul_f64(0.5), Kill::KithServer(3)),
        (load.mul_f64(0.7), Kill::CassandraNode(3)),
    ];
    crate::say!(
        "\nmixed load: {} clients over the 3 servers for {} s (35 % posts, 10 % friendships, \
         10 % follows, 25 % friend lists, 20 % feeds; --feed {} --cache {}); kill -9 of a Redis \
         master at {:.1} s, kith server 3 at {:.1} s, Cassandra node 3 at {:.1} s",
        a.clients,
        a.load_s,
        a.feed,
        a.cache,
        schedule[0].0.as_secs_f64(),
        schedule[1].0.as_secs_f64(),
        schedule[2].0.as_secs_f64()
    );
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs)?;
    let outcome = load_with_kills(&config, &mut stage, "demo", 1, &schedule, Some(&logs))?;
    report(&outcome, a.load_s);
    crate::say!("\nstopping everything");
    drop(stage);
    if a.keep.is_some() {
        crate::say!("kept the clusters' directories and the servers' logs in {}", dir.display());
    }
    crate::say!("done in {:.0} s", began.elapsed().as_secs_f64());
    if a.json {
        println!("{}", serde_json::to_string_pretty(&outcome_json(&outcome, a.load_s))?);
    }
    if !outcome.lost.is_empty() {
        bail!("{} acknowledged writes lost", outcome.lost.len());
    }
    Ok(())
}

/// What the load saw and what it left, as `--json` prints it.
fn outcome_json(o: &Outcome, load_s: f64) -> serde_json::Value {
    let t = &o.tally;
    let ops: Vec<serde_json::Value> = t
        .latency
        .iter()
        .map(|(op, h)| {
            let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
            serde_json::json!({
                "op": op, "requests": h.len(), "per_s": h.len() as f64 / load_s,
                "p50_ms": ms(0.5), "p99_ms": ms(0.99), "max_ms": h.max() as f64 / 1000.0,
            })
        })
        .collect();
    let killed: Vec<serde_json::Value> = o
        .killed
        .iter()
        .map(|k| serde_json::json!({"at_s": k.at_s, "what": k.what, "promoted_s": k.promoted_s}))
        .collect();
    let (posts, friendships, follows) = o.acked;
    serde_json::json!({
        "load_s": load_s,
        "requests": t.requests,
        "retries": t.retries,
        "failed": t.failures.len(),
        "failed_by": t.failed_by,
        "failed_between_s": t.failures.first().zip(t.failures.last())
            .map(|(a, b)| [a.as_secs_f64(), b.as_secs_f64()]),
        "ops": ops,
        "killed": killed,
        "acknowledged": {"posts": posts, "friendships": friendships, "follows": follows},
        "checked": o.checked,
        "lost": o.lost,
    })
}

/// Prints what the load saw and what it left.
fn report(o: &Outcome, load_s: f64) {
    let t = &o.tally;
    crate::say!(
        "\n{} requests in {load_s:.0} s ({:.0}/s), {} failed, {} sent again to another server",
        t.requests,
        t.requests as f64 / load_s,
        t.failures.len(),
        t.retries
    );
    crate::say!(
        "{:<10}{:>10}{:>10}{:>10}{:>10}{:>10}",
        "op",
        "requests",
        "per s",
        "p50 ms",
        "p99 ms",
        "max ms"
    );
    for (op, h) in &t.latency {
        let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
        crate::say!(
            "{op:<10}{:>10}{:>10.1}{:>10.2}{:>10.2}{:>10.1}",
            h.len(),
            h.len() as f64 / load_s,
            ms(0.5),
            ms(0.99),
            h.max() as f64 / 1000.0
        );
    }
    crate::say!("\nkilled:");
    for k in &o.killed {
        let promoted =
            k.promoted_s.map_or(String::new(), |p| format!("; its replica took over in {p:.1} s"));
        crate::say!("  {:>5.1} s  {}{promoted}", k.at_s, k.what);
    }
    match (t.failures.first(), t.failures.last()) {
        (Some(first), Some(last)) => {
            let by: Vec<String> = t.failed_by.iter().map(|(s, n)| format!("{n} × {s}")).collect();
            crate::say!(
                "failed requests: {} (every server tried), sent between {:.1} s and {:.1} s: {}",
                t.failures.len(),
                first.as_secs_f64(),
                last.as_secs_f64(),
                by.join(", ")
            );
        }
        _ => crate::say!("failed requests: none"),
    }
    let (posts, friendships, follows) = o.acked;
    crate::say!(
        "\nacknowledged writes: {} ({posts} posts, {friendships} friendships, {follows} follows), \
         each read back through kith server 1",
        o.checked
    );
    if o.lost.is_empty() {
        crate::say!("0 acknowledged writes lost");
    } else {
        crate::say!(
            "{} acknowledged writes LOST, e.g. {}",
            o.lost.len(),
            o.lost[..o.lost.len().min(5)].join(", ")
        );
    }
}

/// On Ctrl-C: stops the clusters recorded under `dir` (their nodes run in process groups
/// of their own, so the terminal's signal does not reach them), then exits.
fn stop_on_ctrl_c(dir: PathBuf) {
    std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
            return;
        };
        if rt.block_on(tokio::signal::ctrl_c()).is_err() {
            return;
        }
        eprintln!("\nkith demo cluster: interrupted; stopping the clusters");
        stop_all(&dir);
        std::process::exit(130);
    });
}

fn stop_all(dir: &Path) {
    if let Ok(mut r) = LocalRedisCluster::open(dir) {
        let _ = r.down(Duration::from_secs(5));
    }
    if let Ok(mut c) = LocalCluster::open(dir) {
        let _ = c.down(Duration::from_secs(10));
    }
}
