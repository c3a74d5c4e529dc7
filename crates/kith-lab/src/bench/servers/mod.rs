//! `kith bench servers`: the service's cached reads (friend lists, feeds, posts) and writes
//! (posts, profiles, follows and friendships switched on and off) on 1, 2 and 4 `kith
//! serve` processes over a 3-node Cassandra and a Redis Cluster, beside one embedded server
//! (RocksDB, in-process cache) in the same run; with `--baseline`, another kith binary's
//! servers in every case too, both builds' up at once and taking turns load by load over
//! several rounds, and the ratios of their medians. Per case and operation: throughput, p50
//! and p99 from a closed loop of clients spread over the servers, and the
//! CPU-seconds per request of the servers and of the engines under them (Cassandra's JVMs,
//! the Redis nodes), read from `/proc`: on 2 cores everything shares the CPU, so CPU per
//! request is the figure that carries over to a machine per process. JSON under
//! `bench/results/`, two charts beside it.

mod charts;
mod load;
mod measure;
mod parts;

use std::collections::HashSet;
use std::io::Write;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use clap::Args;
use serde_json::json;

use crate::machine::{Machine, git_commit, utc_now, write_json};
use crate::processes::{ChildProcess, start_server_of};
use crate::rig::{Rig, RigConfig};
use load::{LOADS, seed};
use measure::{Case, Row, Subjects, measure};

#[derive(Debug, Args)]
pub struct ServersBenchArgs {
    /// Server counts on the cluster.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    servers: Vec<usize>,
    /// Users of the generated LFR graph; each follows its friends.
    #[arg(long, default_value_t = 5000)]
    users: usize,
    /// Posts by random users, stored (and fanned out) before measuring.
    #[arg(long, default_value_t = 5000)]
    posts: usize,
    /// Closed-loop clients, spread over the servers.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Measured seconds per case and operation.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Unmeasured seconds before each.
    #[arg(long, default_value_t = 2.0)]
    warmup_s: f64,
    /// Times each load runs per case and build, the builds taking turns; the figures are
    /// the medians (default 3 with --baseline, else 1).
    #[arg(long)]
    rounds: Option<usize>,
    /// Run on the local cluster in this directory (`kith cluster up --dir`) instead of
    /// starting one.
    #[arg(long)]
    cluster_dir: Option<PathBuf>,
    /// The first address of the cluster started here (Cassandra on it and the next two,
    /// Redis on it and the next five).
    #[arg(long, default_value = "127.0.11.1")]
    base: Ipv4Addr,
    /// The Redis nodes' port of the cluster started here.
    #[arg(long, default_value_t = 6390)]
    redis_port: u16,
    /// Friend lists once more per server count with this --near-friends-ttl-ms (copies in
    /// each server; 0 skips it).
    #[arg(long, default_value_t = 1000)]
    near_friends_ttl_ms: u64,
    /// Random seed (graph, posts, clients).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Another kith binary (an earlier build, say): its servers run every case beside this
    /// build's, each on a store it builds itself, and the JSON gets this build's throughput
    /// and p99 over its, per case and operation.
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// Where to write the JSON (default bench/results/servers-<date>.json; the charts go
    /// beside it).
    #[arg(long)]
    out: Option<PathBuf>,
}

/// A kith binary whose servers are measured.
struct Build {
    /// `this` or `baseline`.
    name: &'static str,
    exe: PathBuf,
}

impl Build {
    /// Runs `<exe> store build <edges> --method kith --seed <seed> --data-bytes 40 <to>`.
    fn store(&self, edges: &Path, seed: u64, to: &[&str]) -> Result<()> {
        let status = Command::new(&self.exe)
            .args(["store", "build"])
            .arg(edges)
            .args(["--format", "snap", "--method", "kith", "--data-bytes", "40", "--seed"])
            .arg(seed.to_string())
            .args(to)
            .stdout(std::process::Stdio::null())
            .status()
            .with_context(|| format!("running {}", self.exe.display()))?;
        ensure!(status.success(), "{}: store build {to:?}: {status}", self.exe.display());
        Ok(())
    }
}

pub(super) fn run(a: ServersBenchArgs) -> Result<()> {
    ensure!(
        !a.servers.is_empty() && a.servers.iter().all(|&n| (1..=32).contains(&n)),
        "--servers: counts from 1 to 32"
    );
    ensure!(
        a.users >= 10 && a.posts >= 1 && a.clients >= 1,
        "--users, --posts and --clients must be positive"
    );
    let rounds = a.rounds.unwrap_or(if a.baseline.is_some() { 3 } else { 1 });
    ensure!((1..=20).contains(&rounds), "--rounds: from 1 to 20, got {rounds}");
    let mut builds = vec![Build { name: "this", exe: std::env::current_exe()? }];
    if let Some(exe) = &a.baseline {
        ensure!(exe.is_file(), "--baseline {}: no such file", exe.display());
        builds.push(Build { name: "baseline", exe: exe.clone() });
    }
    let tmp = tempfile::tempdir()?;
    let lfr = kith_graph::generate::LfrConfig {
        nodes: a.users,
        seed: a.seed,
        ..kith_graph::generate::LfrConfig::default()
    };
    let graph = kith_graph::generate::lfr(&lfr)?.graph.to_undirected();
    let ids = graph.original_ids();
    let mut friends = HashSet::new();
    let edges = tmp.path().join("graph.txt");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&edges)?);
    for u in 0..graph.num_nodes() as u32 {
        for &v in graph.neighbors(u) {
            let (x, y) = (ids[u as usize], ids[v as usize]);
            if x < y {
                writeln!(out, "{x}\t{y}")?;
                friends.insert((x, y));
            }
        }
    }
    out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    // Users without a friend are not in an edge list's store.
    let users: Vec<u64> = (0..graph.num_nodes() as u32)
        .filter(|&u| graph.degree(u) > 0)
        .map(|u| ids[u as usize])
        .collect();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let serve_args: Vec<String> = ["--feed", "push", "--cache", "aside", "--friends-ttl-s", "600"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let run = kith_workload::RunConfig {
        targets: Vec::new(),
        clients: a.clients,
        rate: None,
        duration: Duration::from_secs_f64(a.seconds),
        warmup: Duration::from_secs_f64(a.warmup_s),
        seed: a.seed,
        timeout: Duration::from_secs(30),
    };
    let mut rows: Vec<Row> = Vec::new();
    let mut salt = a.seed;
    let mut subjects = || {
        salt += 1;
        Subjects { users: &users, friends: &friends, salt }
    };

    // The embedded default: one process per build, RocksDB and the in-process cache.
    let mut embedded = Vec::new();
    for b in &builds {
        eprintln!(
            "bench servers: {}: embedded: a kith-layout store of {} users",
            b.name,
            users.len()
        );
        let store = tmp.path().join(format!("store-{}", b.name));
        b.store(&edges, a.seed, &["--dir", &store.to_string_lossy()])?;
        let (server, base) = start_server_of(&b.exe, &store, &serve_args)?;
        let posts = runtime.block_on(seed(&base, &graph, a.posts, a.seed))?;
        embedded.push((b.name, server, [base], posts));
    }
    let pids: Vec<[u32; 1]> = embedded.iter().map(|(_, server, _, _)| [server.id()]).collect();
    let cases: Vec<Case<'_>> = embedded
        .iter()
        .zip(&pids)
        .map(|((build, _, urls, posts), pid)| Case {
            build,
            mode: "embedded",
            urls,
            servers: pid,
            engines: &[],
            posts,
        })
        .collect();
    measure(&runtime, &run, &cases, &LOADS, &subjects(), rounds, &mut rows)?;
    drop(cases);
    drop(embedded);

    let rig = match &a.cluster_dir {
        Some(dir) => Rig::open(dir)?,
        None => Rig::up(&RigConfig {
            dir: tmp.path().join("cluster"),
            base: a.base,
            redis_port: a.redis_port,
            redis_node_timeout: Duration::from_secs(2),
            heap_mb: 768,
            trial: false,
        })?,
    };
    let engines: Vec<u32> = rig
        .cassandra
        .nodes
        .iter()
        .filter_map(|n| n.pid)
        .chain(rig.redis.nodes.iter().filter_map(|n| n.pid))
        .collect();
    let keyspace = |b: &Build| format!("bench_servers_{}_{}", std::process::id(), b.name);
    let result = (|| -> Result<()> {
        for b in &builds {
            eprintln!(
                "bench servers: {}: cluster: loading {} users into {}",
                b.name,
                users.len(),
                keyspace(b)
            );
            b.store(
                &edges,
                a.seed,
                &[
                    "--cassandra",
                    rig.hosts(),
                    "--keyspace",
                    &keyspace(b),
                    "--partition-users",
                    "64",
                ],
            )?;
        }
        let mut posts: Vec<Vec<u64>> = vec![Vec::new(); builds.len()];
        let prefix = |b: &Build| format!("bs{}{}", std::process::id(), b.name);
        for &n in &a.servers {
            // Every build's servers at once, on its own keyspace and Redis prefix.
            let mut up = Vec::new();
            for (k, b) in builds.iter().enumerate() {
                let (servers, urls) =
                    rig.servers_of(Some(&b.exe), &keyspace(b), n, &prefix(b), &serve_args, None)?;
                if posts[k].is_empty() {
                    posts[k] = runtime.block_on(seed(&urls[0], &graph, a.posts, a.seed))?;
                }
                let pids: Vec<u32> = servers.iter().flatten().map(ChildProcess::id).collect();
                up.push((servers, urls, pids));
            }
            let cases = cluster_cases(&builds, "cluster", &up, &posts, &engines);
            measure(&runtime, &run, &cases, &LOADS, &subjects(), rounds, &mut rows)?;
            drop(cases);
            drop(up);
            // Friend lists again with copies in each server (eventual reads may then miss
            // another server's change for up to the copies' time to live).
            if a.near_friends_ttl_ms > 0 {
                let mut near_args = serve_args.clone();
                near_args
                    .extend(["--near-friends-ttl-ms".into(), a.near_friends_ttl_ms.to_string()]);
                let mut up = Vec::new();
                for b in &builds {
                    let (servers, urls) = rig.servers_of(
                        Some(&b.exe),
                        &keyspace(b),
                        n,
                        &prefix(b),
                        &near_args,
                        None,
                    )?;
                    let pids: Vec<u32> = servers.iter().flatten().map(ChildProcess::id).collect();
                    up.push((servers, urls, pids));
                }
                let cases = cluster_cases(&builds, "cluster-near", &up, &posts, &engines);
                measure(&runtime, &run, &cases, &["friends"], &subjects(), rounds, &mut rows)?;
            }
        }
        Ok(())
    })();
    for b in &builds {
        rig.drop_keyspace(&keyspace(b));
    }
    drop(rig);
    result?;
    report(&a, &builds, users.len(), rounds, rows)
}

/// Servers started for one build: the processes, their URLs and process ids.
type Up = (Vec<Option<ChildProcess>>, Vec<String>, Vec<u32>);

/// One case per build on the cluster, on the servers `up` started for it.
fn cluster_cases<'a>(
    builds: &'a [Build],
    mode: &'static str,
    up: &'a [Up],
    posts: &'a [Vec<u64>],
    engines: &'a [u32],
) -> Vec<Case<'a>> {
    builds
        .iter()
        .zip(up)
        .zip(posts)
        .map(|((b, (_, urls, pids)), posts)| Case {
            build: b.name,
            mode,
            urls,
            servers: pids,
            engines,
            posts,
        })
        .collect()
}

/// Per build, each row's CPU per request over the embedded server's; with a baseline, this
/// build's throughput and p99 over the baseline's per case and operation; the table, the
/// JSON and the charts.
fn report(
    a: &ServersBenchArgs,
    builds: &[Build],
    users: usize,
    rounds: usize,
    runs: Vec<Row>,
) -> Result<()> {
    let mut rows = measure::medians(&runs);
    let embedded: Vec<(&str, &str, f64)> = rows
        .iter()
        .filter(|r| r.mode == "embedded")
        .map(|r| (r.build, r.op, r.cpu_us_per_request))
        .collect();
    for r in &mut rows {
        if let Some(&(_, _, e)) = embedded.iter().find(|(b, op, _)| *b == r.build && *op == r.op) {
            r.cpu_ratio_vs_embedded = r.cpu_us_per_request / e;
        }
    }
    let mut versus = Vec::new();
    for t in rows.iter().filter(|r| r.build == "this") {
        let Some(b) = rows.iter().find(|b| {
            b.build == "baseline" && b.mode == t.mode && b.servers == t.servers && b.op == t.op
        }) else {
            continue;
        };
        versus.push(json!({
            "mode": t.mode, "servers": t.servers, "op": t.op,
            "throughput_ratio": t.requests_per_s / b.requests_per_s,
            "p99_ratio": t.p99_ms / b.p99_ms,
            "cpu_ratio": t.cpu_us_per_request / b.cpu_us_per_request,
        }));
    }
    crate::say!(
        "\n{:<9}{:<13}{:>8}{:>10}{:>11}{:>9}{:>9}{:>12}{:>8}",
        "build",
        "mode",
        "servers",
        "op",
        "req/s",
        "p50 ms",
        "p99 ms",
        "CPU µs/req",
        "ratio"
    );
    for r in &rows {
        crate::say!(
            "{:<9}{:<13}{:>8}{:>10}{:>11.0}{:>9.2}{:>9.2}{:>12.0}{:>8.2}",
            r.build,
            r.mode,
            r.servers,
            r.op,
            r.requests_per_s,
            r.p50_ms,
            r.p99_ms,
            r.cpu_us_per_request,
            r.cpu_ratio_vs_embedded
        );
    }
    if !versus.is_empty() {
        crate::say!("\nthis build over the baseline ({})", builds[1].exe.display());
        for v in &versus {
            crate::say!(
                "{:<13}{:>3}{:>10}  throughput {:.2}x  p99 {:.2}x  CPU {:.2}x",
                v["mode"].as_str().unwrap_or(""),
                v["servers"],
                v["op"].as_str().unwrap_or(""),
                v["throughput_ratio"].as_f64().unwrap_or(f64::NAN),
                v["p99_ratio"].as_f64().unwrap_or(f64::NAN),
                v["cpu_ratio"].as_f64().unwrap_or(f64::NAN)
            );
        }
    }
    let date = utc_now();
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("bench/results/servers-{}.json", &date[..10])));
    let baseline = builds.get(1).map(|b| {
        let version = Command::new(&b.exe).arg("--version").output().ok();
        json!({
            "exe": b.exe.display().to_string(),
            "version": version.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()),
        })
    });
    let report = json!({
        "benchmark": "servers",
        "date": date,
        "commit": git_commit(),
        "machine": Machine::describe(),
        "setup": format!(
            "{users} LFR users (kith layout, built by each build's `kith store build`), each \
             following its friends; {} posts fanned out before measuring; servers run --feed \
             push --cache aside --friends-ttl-s 600. Embedded: one kith serve on RocksDB with \
             the in-process cache. Cluster: kith serve processes over 3 Cassandra nodes (RF 3, \
             QUORUM) with caches and timelines on a Redis Cluster of 3 masters with a replica \
             each. {} closed-loop clients spread over the servers, {} s per load after {} s of \
             warm-up, every user's friend list, feed and every post read once before. Loads: \
             friends (eventual), feed, post (by id), publish (POST /posts), profile (PUT), \
             follow-switch (follow and unfollow) and friend-switch (befriend and unfriend) over \
             256 pairs of non-friends per case, switched on and off in turn; every request \
             carries an Idempotency-Key. cluster-near: friend lists again with \
             --near-friends-ttl-ms {}. CPU from /proc: the servers' and the engines' (Cassandra \
             JVMs, Redis nodes) user + system time over the measured window; the driver's is \
             not counted. parts_ms: milliseconds per request the servers waited on the \
             store and the cache, and of the store's time each step that buys a guarantee \
             (key-claim, key-read, key-finish, edge, intent, index), from their metrics \
             (kith_http_time_seconds_total) over the load's window, warm-up included; a \
             build that does not count them has none. With a baseline, each case runs this build's servers and the \
             baseline's, on keyspaces and Redis prefixes of their own, both up at once; each \
             load runs {rounds} time(s) per case and build, the builds taking turns (the first \
             first in one round, last in the next); rows hold the medians over the rounds, \
             runs every round.",
            a.posts, a.clients, a.seconds, a.warmup_s, a.near_friends_ttl_ms
        ),
        "rounds": rounds,
        "goal": "cluster CPU per cached read <= 2x embedded; with a baseline, no operation \
                 slower than 1.2x the baseline's (throughput ratio >= 0.83, p99 ratio <= 1.2)",
        "baseline": baseline,
        "rows": rows,
        "versus_baseline": versus,
        "runs": runs,
    });
    write_json(&out, &report)?;
    charts::charts(&out, &rows)?;
    crate::say!("wrote {} and its charts", out.display());
    Ok(())
}
