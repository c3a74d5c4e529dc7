//! `kith experiment parker-cluster`: Parker's scaling figures on the store on Cassandra.
//! For clusters of 1, 3 and 5 nodes on loopback (replication factor min(3, nodes), QUORUM):
//! the throughput and latency of reads (`get_user` at QUORUM and at ONE) and writes
//! (`put_profile`) from a closed loop of clients, and "list all friends' profiles" under
//! `hash` and `kith` placement.
//! CSV + PNG. On this 2-core machine every node, and the clients, share the same two cores:
//! more nodes add replicas' work, not capacity, which the charts show.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use kith_cassandra::local::{ClusterConfig, LocalCluster};
use kith_cassandra::{BuildConfig, CassandraOptions, CassandraStore};
use kith_store::{DataSpec, Engine, Profile, ReadLevel};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::Serialize;

use crate::bench::cassandra::{layout_for, measure, quantile};
use crate::cli::GraphInput;
use crate::machine::{Machine, datasets_dir, git_commit, utc_now, write_json};
use crate::plot::{LineChart, Series, line_chart};

#[derive(Debug, Args)]
pub struct ParkerClusterArgs {
    /// The graph whose users fill the store (default: ego-Facebook from the datasets).
    #[arg(long)]
    graph: Option<PathBuf>,
    /// Cluster sizes.
    #[arg(long, value_delimiter = ',', default_value = "1,3,5")]
    nodes: Vec<usize>,
    /// Closed-loop clients.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Seconds of reads, then of writes, per cluster size.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// "List all friends' profiles" queries per placement.
    #[arg(long, default_value_t = 300)]
    queries: usize,
    /// Users per partition of the `kith` placement.
    #[arg(long, default_value_t = 64)]
    partition_users: u64,
    /// Each node's heap in MiB.
    #[arg(long, default_value_t = 512)]
    heap_mb: u32,
    /// Where to write CSV, JSON and PNG (created if missing).
    #[arg(long, default_value = "bench/results/parker-cluster")]
    pub(super) out: PathBuf,
}

#[derive(Debug, Serialize)]
struct Point {
    nodes: usize,
    replication: usize,
    op: &'static str,
    clients: usize,
    ops: u64,
    errors: u64,
    ops_per_s: f64,
    p50_ms: f64,
    p99_ms: f64,
}

/// Closed-loop clients calling `op` for `seconds`: (ops, errors, sorted latencies in ms).
fn drive(
    clients: usize,
    seconds: f64,
    op: impl Fn(&mut Pcg64Mcg) -> bool + Sync,
) -> (u64, u64, Vec<f64>) {
    let stop = AtomicBool::new(false);
    let results: Vec<(u64, Vec<f64>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                let (stop, op) = (&stop, &op);
                s.spawn(move || {
                    let mut rng = Pcg64Mcg::seed_from_u64(c as u64 + 1);
                    let (mut errors, mut ms) = (0u64, Vec::new());
                    while !stop.load(Ordering::Relaxed) {
                        let t = Instant::now();
                        if op(&mut rng) {
                            ms.push(t.elapsed().as_secs_f64() * 1e3);
                        } else {
                            errors += 1;
                        }
                    }
                    (errors, ms)
                })
            })
            .collect();
        std::thread::sleep(Duration::from_secs_f64(seconds));
        stop.store(true, Ordering::Relaxed);
        handles.into_iter().map(|h| h.join().expect("client panicked")).collect()
    });
    let errors = results.iter().map(|r| r.0).sum();
    let mut ms: Vec<f64> = results.into_iter().flat_map(|r| r.1).collect();
    ms.sort_by(f64::total_cmp);
    (ms.len() as u64, errors, ms)
}

pub(super) fn run(args: ParkerClusterArgs) -> Result<()> {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let path =
        args.graph.clone().unwrap_or_else(|| datasets_dir().join("facebook_combined.txt.gz"));
    let graph = GraphInput::file(path.clone())
        .load_undirected()
        .with_context(|| format!("loading {}", path.display()))?;
    let uids: Arc<Vec<u64>> = Arc::new(graph.original_ids().to_vec());
    let mut rng = Pcg64Mcg::seed_from_u64(5);
    let sample: Vec<u64> = (0..args.queries)
        .map(|_| {
            loop {
                let v = rng.random_range(0..graph.num_nodes() as u32);
                if !graph.neighbors(v).is_empty() {
                    break graph.original_id(v);
                }
            }
        })
        .collect();
    let mut points = Vec::new();
    let mut friends = Vec::new();
    for (k, &nodes) in args.nodes.iter().enumerate() {
        let dir = std::env::temp_dir()
            .join(format!("kith-parker-cluster-{}-{nodes}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut cluster = LocalCluster::up(&ClusterConfig {
            nodes,
            dir: dir.clone(),
            base: Ipv4Addr::new(127, 0, 8 + k as u8, 1),
            heap_mb: args.heap_mb,
            progress: true,
            ..ClusterConfig::default()
        })?;
        let outcome = (|| -> Result<()> {
            let hosts = cluster.hosts();
            let replication = nodes.min(3);
            for placement in ["hash", "kith"] {
                let (layout, meta) = layout_for(&graph, placement, args.partition_users)?;
                let options = CassandraOptions::new(hosts.clone(), &format!("parker_{placement}"));
                let config = BuildConfig {
                    partition_users: if placement == "hash" { 1 } else { args.partition_users },
                    data: DataSpec::Fixed(40),
                    ..BuildConfig::default()
                };
                let (store, _) = kith_cassandra::build(&options, &graph, &layout, meta, &config)?;
                for n in 1..=nodes {
                    cluster.nodetool(n, &["flush"])?;
                }
                let mut row = measure(
                    &store,
                    &format!("{nodes} nodes"),
                    placement,
                    config.partition_users,
                    &sample,
                )?;
                row.graph =
                    path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
                friends.push((nodes, row));
                if placement == "kith" {
                    scaling(&store, &uids, nodes, replication, &args, &mut points);
                }
            }
            Ok(())
        })();
        let _ = cluster.down(Duration::from_secs(10));
        let _ = std::fs::remove_dir_all(&dir);
        outcome?;
    }
    let mut csv = String::from("nodes,replication,op,clients,ops,errors,ops_per_s,p50_ms,p99_ms\n");
    for p in &points {
        csv.push_str(&format!(
            "{},{},{},{},{},{},{:.1},{:.3},{:.3}\n",
            p.nodes,
            p.replication,
            p.op,
            p.clients,
            p.ops,
            p.errors,
            p.ops_per_s,
            p.p50_ms,
            p.p99_ms
        ));
        crate::say!(
            "{} nodes (RF {}): {:<12} {:>8.0} ops/s  p50 {:>7.2} ms  p99 {:>7.2} ms  errors {}",
            p.nodes,
            p.replication,
            p.op,
            p.ops_per_s,
            p.p50_ms,
            p.p99_ms,
            p.errors
        );
    }
    std::fs::write(args.out.join("parker-cluster-scaling.csv"), csv)?;
    let mut fcsv = String::from(
        "nodes,placement,partition_users,partitions_mean,requests_mean,p50_ms,p99_ms\n",
    );
    for (nodes, l) in &friends {
        fcsv.push_str(&format!(
            "{nodes},{},{},{:.3},{:.3},{:.3},{:.3}\n",
            l.placement, l.partition_users, l.partitions_mean, l.requests_mean, l.p50_ms, l.p99_ms
        ));
        crate::say!(
            "{nodes} nodes: list all friends' profiles, {:<5} {:>6.2} partitions  p50 {:>6.2} ms  p99 {:>6.2} ms",
            l.placement,
            l.partitions_mean,
            l.p50_ms,
            l.p99_ms
        );
    }
    std::fs::write(args.out.join("parker-cluster-friends.csv"), fcsv)?;
    charts(&args, &points, &friends)?;
    let doc = serde_json::json!({
        "experiment": "parker-cluster", "date": utc_now(), "commit": git_commit(),
        "machine": Machine::describe(), "graph": path.display().to_string(),
        "note": "every node and the clients share this machine's 2 cores: adding nodes adds replicas' work, not capacity",
        "scaling": points, "friends": friends.iter().map(|(n, l)| serde_json::json!({"nodes": n, "result": l})).collect::<Vec<_>>(),
    });
    write_json(&args.out.join("parker-cluster.json"), &doc)?;
    crate::say!(
        "wrote parker-cluster-scaling.csv, parker-cluster-friends.csv, .json and .png to {}",
        args.out.display()
    );
    Ok(())
}

/// One client call: whether it succeeded.
type Op<'a> = dyn Fn(&mut Pcg64Mcg) -> bool + Sync + 'a;

/// Reads, then writes, from the closed loop of clients.
fn scaling(
    store: &CassandraStore,
    uids: &Arc<Vec<u64>>,
    nodes: usize,
    replication: usize,
    args: &ParkerClusterArgs,
    out: &mut Vec<Point>,
) {
    let pick = |rng: &mut Pcg64Mcg| uids[rng.random_range(0..uids.len())];
    let runs: [(&'static str, &Op<'_>); 3] = [
        ("get_user", &|rng| store.get_user(pick(rng)).is_ok()),
        // `consistency=eventual`: the nearest replica answers alone.
        ("get_user_one", &|rng| store.get_user_at(pick(rng), ReadLevel::One).is_ok()),
        ("put_profile", &|rng| {
            let u = pick(rng);
            store
                .put_profile(
                    u,
                    &Profile {
                        name: format!("user {u}"),
                        age: Some(rng.random_range(13..90)),
                        ..Profile::default()
                    },
                )
                .is_ok()
        }),
    ];
    // A warm-up first, so that no op is measured on a colder cluster than the next (the
    // first of three runs otherwise starts with cold caches and an unwarmed JVM).
    drive(args.clients, (args.seconds / 2.0).max(1.0), runs[0].1);
    for (op, f) in runs {
        let (ops, errors, ms) = drive(args.clients, args.seconds, f);
        out.push(Point {
            nodes,
            replication,
            op,
            clients: args.clients,
            ops,
            errors,
            ops_per_s: ops as f64 / args.seconds,
            p50_ms: quantile(&ms, 0.5),
            p99_ms: quantile(&ms, 0.99),
        });
    }
}

fn charts(
    args: &ParkerClusterArgs,
    points: &[Point],
    friends: &[(usize, crate::bench::cassandra::Locality)],
) -> Result<()> {
    let series = |op: &str, f: fn(&Point) -> f64| Series {
        name: op.to_string(),
        points: points.iter().filter(|p| p.op == op).map(|p| (p.nodes as f64, f(p))).collect(),
    };
    line_chart(
        &args.out.join("parker-cluster-throughput.png"),
        &LineChart {
            title: "Parker on Cassandra: throughput against nodes (QUORUM, 2-core machine)",
            x_label: "nodes",
            y_label: "operations per second",
            log2_x: false,
        },
        &[series("get_user", |p| p.ops_per_s), series("put_profile", |p| p.ops_per_s)],
    )?;
    line_chart(
        &args.out.join("parker-cluster-latency.png"),
        &LineChart {
            title: "Parker on Cassandra: p50 and p99 latency against nodes",
            x_label: "nodes",
            y_label: "latency (ms)",
            log2_x: false,
        },
        &[
            series("get_user", |p| p.p50_ms),
            series("put_profile", |p| p.p50_ms),
            Series {
                name: "get_user p99".into(),
                points: points
                    .iter()
                    .filter(|p| p.op == "get_user")
                    .map(|p| (p.nodes as f64, p.p99_ms))
                    .collect(),
            },
            Series {
                name: "put_profile p99".into(),
                points: points
                    .iter()
                    .filter(|p| p.op == "put_profile")
                    .map(|p| (p.nodes as f64, p.p99_ms))
                    .collect(),
            },
        ],
    )?;
    let fr = |placement: &str, f: fn(&crate::bench::cassandra::Locality) -> f64| Series {
        name: placement.to_string(),
        points: friends
            .iter()
            .filter(|(_, l)| l.placement == placement)
            .map(|(n, l)| (*n as f64, f(l)))
            .collect(),
    };
    line_chart(
        &args.out.join("parker-cluster-friends.png"),
        &LineChart {
            title: "\"list all friends' profiles\": p50 latency, hash vs kith placement",
            x_label: "nodes",
            y_label: "p50 (ms)",
            log2_x: false,
        },
        &[fr("hash", |l| l.p50_ms), fr("kith", |l| l.p50_ms)],
    )?;
    Ok(())
}
