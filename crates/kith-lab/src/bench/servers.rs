//! `kith bench servers`: the service's cached reads (friend lists, feeds, posts) on 1, 2 and
//! 4 `kith serve` processes over a 3-node Cassandra and a Redis Cluster, beside one embedded
//! server (RocksDB, in-process cache) in the same run. Per case and operation: throughput,
//! p50 and p99 from a closed loop of clients spread over the servers, and the CPU-seconds
//! per request of the servers and of the engines under them (Cassandra's JVMs, the Redis
//! nodes), read from `/proc`: on 2 cores everything shares the CPU, so CPU per request is
//! the figure that carries over to a machine per process. JSON under `bench/results/`, two
//! charts beside it.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, ensure};
use clap::Args;
use kith_workload::{Request, RunConfig, RunReport, Source};
use rand::Rng;
use rand_pcg::Pcg64Mcg;
use serde::Serialize;
use serde_json::json;

use crate::machine::{Machine, git_commit, utc_now, write_json};
use crate::plot::{LineChart, Series, line_chart};
use crate::processes::{ChildProcess, build_kith_store, start_server};
use crate::rig::{Rig, RigConfig};

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
    /// Where to write the JSON (default bench/results/servers-<date>.json; the charts go
    /// beside it).
    #[arg(long)]
    out: Option<PathBuf>,
}

/// The operations measured, each alone.
const OPS: [&str; 3] = ["friends", "feed", "post"];

/// One operation on one case.
#[derive(Debug, Serialize)]
struct Row {
    /// `embedded`, `cluster`, or `cluster-near` (friend lists copied in each server).
    mode: &'static str,
    servers: usize,
    op: &'static str,
    requests: u64,
    errors: u64,
    requests_per_s: f64,
    p50_ms: f64,
    p99_ms: f64,
    /// CPU-seconds of the kith servers, and of the engines under them, over the window.
    server_cpu_s: f64,
    engine_cpu_s: f64,
    /// (server + engine) CPU per request, microseconds.
    cpu_us_per_request: f64,
    /// The servers' share alone.
    server_cpu_us_per_request: f64,
    /// `cpu_us_per_request` over the embedded server's for the same operation.
    cpu_ratio_vs_embedded: f64,
    /// Requests each server answered.
    answered_by: Vec<u64>,
}

/// Cached reads of one kind, for random users or posts.
struct Reads {
    op: &'static str,
    users: Vec<u64>,
    posts: Vec<u64>,
}

impl Source for Reads {
    fn next(&self, _: u64, rng: &mut Pcg64Mcg) -> Option<Request> {
        let u = self.users[rng.random_range(0..self.users.len())];
        let path = match self.op {
            "friends" => format!("/users/{u}/friends?consistency=eventual&limit=1000"),
            "feed" => format!("/users/{u}/feed?limit=20"),
            _ => format!("/posts/{}", self.posts[rng.random_range(0..self.posts.len())]),
        };
        Some(Request { op: self.op, method: "GET", path, body: None })
    }

    fn ops(&self) -> Vec<&'static str> {
        vec![self.op]
    }
}

/// CPU-seconds a process has used (user + system), from `/proc/<pid>/stat`.
fn cpu_s(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return 0.0 };
    // The fields after the command name (which may hold spaces), from field 3.
    let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else { return 0.0 };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15: 11 and 12 here.
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    (ticks(11) + ticks(12)) / hz
}

fn total_cpu(pids: &[u32]) -> f64 {
    pids.iter().map(|&p| cpu_s(p)).sum()
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
    let tmp = tempfile::tempdir()?;
    let lfr = kith_graph::generate::LfrConfig {
        nodes: a.users,
        seed: a.seed,
        ..kith_graph::generate::LfrConfig::default()
    };
    let graph = kith_graph::generate::lfr(&lfr)?.graph.to_undirected();
    let users: Vec<u64> = graph.original_ids().to_vec();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let serve_args: Vec<String> = ["--feed", "push", "--cache", "aside", "--friends-ttl-s", "600"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut rows: Vec<Row> = Vec::new();

    // The embedded default: one process, RocksDB and the in-process cache.
    eprintln!("bench servers: embedded: building a kith-layout store of {} users", a.users);
    let store = tmp.path().join("store");
    build_kith_store(&graph, &store, a.seed)?;
    let (server, base) = start_server(&store, &serve_args)?;
    let posts = runtime.block_on(seed(&base, &graph, a.posts, a.seed))?;
    let m = Case { mode: "embedded", urls: &[base], servers: &[server.id()], engines: &[] };
    measure(&runtime, &a, &m, &OPS, &users, &posts, &mut rows)?;
    drop(server);

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
    let keyspace = format!("bench_servers_{}", std::process::id());
    eprintln!("bench servers: cluster: loading {} users into {keyspace}", a.users);
    rig.load(&graph, &keyspace)?;
    let prefix = format!("bs{}", std::process::id());
    let engines: Vec<u32> = rig
        .cassandra
        .nodes
        .iter()
        .filter_map(|n| n.pid)
        .chain(rig.redis.nodes.iter().filter_map(|n| n.pid))
        .collect();
    let mut posts = Vec::new();
    let result = (|| -> Result<()> {
        for &n in &a.servers {
            let (servers, urls) = rig.servers(&keyspace, n, &prefix, &serve_args, None)?;
            if posts.is_empty() {
                posts = runtime.block_on(seed(&urls[0], &graph, a.posts, a.seed))?;
            }
            let pids: Vec<u32> = servers.iter().flatten().map(ChildProcess::id).collect();
            let m = Case { mode: "cluster", urls: &urls, servers: &pids, engines: &engines };
            measure(&runtime, &a, &m, &OPS, &users, &posts, &mut rows)?;
            drop(servers);
            // Friend lists again with copies in each server (eventual reads may then miss
            // another server's change for up to the copies' time to live).
            if a.near_friends_ttl_ms > 0 {
                let mut near_args = serve_args.clone();
                near_args
                    .extend(["--near-friends-ttl-ms".into(), a.near_friends_ttl_ms.to_string()]);
                let (servers, urls) = rig.servers(&keyspace, n, &prefix, &near_args, None)?;
                let pids: Vec<u32> = servers.iter().flatten().map(ChildProcess::id).collect();
                let m =
                    Case { mode: "cluster-near", urls: &urls, servers: &pids, engines: &engines };
                measure(&runtime, &a, &m, &["friends"], &users, &posts, &mut rows)?;
                drop(servers);
            }
        }
        Ok(())
    })();
    rig.drop_keyspace(&keyspace);
    drop(rig);
    result?;

    let embedded: Vec<(&'static str, f64)> = rows
        .iter()
        .filter(|r| r.mode == "embedded")
        .map(|r| (r.op, r.cpu_us_per_request))
        .collect();
    for r in &mut rows {
        if let Some(&(_, e)) = embedded.iter().find(|(op, _)| *op == r.op) {
            r.cpu_ratio_vs_embedded = r.cpu_us_per_request / e;
        }
    }
    crate::say!(
        "\n{:<13}{:>8}{:>9}{:>11}{:>9}{:>9}{:>12}{:>12}{:>8}",
        "mode",
        "servers",
        "op",
        "req/s",
        "p50 ms",
        "p99 ms",
        "CPU µs/req",
        "server µs",
        "ratio"
    );
    for r in &rows {
        crate::say!(
            "{:<13}{:>8}{:>9}{:>11.0}{:>9.2}{:>9.2}{:>12.0}{:>12.0}{:>8.2}",
            r.mode,
            r.servers,
            r.op,
            r.requests_per_s,
            r.p50_ms,
            r.p99_ms,
            r.cpu_us_per_request,
            r.server_cpu_us_per_request,
            r.cpu_ratio_vs_embedded
        );
    }
    let date = utc_now();
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("bench/results/servers-{}.json", &date[..10])));
    let report = json!({
        "benchmark": "servers",
        "date": date,
        "commit": git_commit(),
        "machine": Machine::describe(),
        "setup": format!(
            "{} LFR users (kith layout), each following its friends; {} posts fanned out before \
             measuring; servers run --feed push --cache aside --friends-ttl-s 600. Embedded: one \
             kith serve on RocksDB with the in-process cache. Cluster: kith serve processes over \
             3 Cassandra nodes (RF 3, QUORUM) with caches and timelines on a Redis Cluster of 3 \
             masters with a replica each. {} closed-loop clients spread over the servers, {} s \
             per operation after {} s of warm-up, every user's friend list, feed and every post \
             read once before; cluster-near: friend lists again with --near-friends-ttl-ms {} \
             (each server keeps copies; eventual reads may miss another server's change for \
             that long). CPU from /proc: the servers' and the engines' (Cassandra JVMs, \
             Redis nodes) user + system time over the measured window; the driver's is not \
             counted.",
            a.users, a.posts, a.clients, a.seconds, a.warmup_s, a.near_friends_ttl_ms
        ),
        "goal": "cluster CPU per cached read <= 2x embedded",
        "rows": rows,
    });
    write_json(&out, &report)?;
    charts(&out, &rows)?;
    crate::say!("wrote {} and its charts", out.display());
    Ok(())
}

/// Every user follows its friends; `posts` posts by random users; waits for fan-out.
/// Returns the posts' ids.
async fn seed(base: &str, graph: &kith_graph::Graph, posts: usize, seed: u64) -> Result<Vec<u64>> {
    use rand::SeedableRng;
    let http = reqwest::Client::builder().timeout(Duration::from_secs(60)).build()?;
    let ids = graph.original_ids();
    let mut jobs = Vec::new();
    for u in 0..graph.num_nodes() as u32 {
        let targets: Vec<u64> = graph.neighbors(u).iter().map(|&v| ids[v as usize]).collect();
        if !targets.is_empty() {
            jobs.push((
                format!("{base}/users/{}/follow", ids[u as usize]),
                json!({"targets": targets}),
            ));
        }
    }
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    for i in 0..posts {
        let author = ids[rng.random_range(0..ids.len())];
        jobs.push((
            format!("{base}/posts"),
            json!({"author": author, "content": format!("post {i} of the benchmark")}),
        ));
    }
    let mut made = Vec::new();
    let mut in_flight = tokio::task::JoinSet::new();
    let mut jobs = jobs.into_iter();
    loop {
        while in_flight.len() < 32 {
            let Some((url, body)) = jobs.next() else { break };
            let req = http.post(url).json(&body);
            in_flight.spawn(async move {
                let r = req.send().await?;
                let status = r.status();
                let url = r.url().to_string();
                let v: serde_json::Value = r.json().await.unwrap_or_default();
                ensure!(status.is_success(), "seeding: {url}: {status}: {v}");
                anyhow::Ok(v["id"].as_u64())
            });
        }
        let Some(done) = in_flight.join_next().await else { break };
        if let Some(id) = done?? {
            made.push(id);
        }
    }
    for _ in 0..6000 {
        let s: serde_json::Value = http.get(format!("{base}/stats")).send().await?.json().await?;
        if s["fanout_queue_depth"] == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    ensure!(made.len() == posts, "seeding: {} of {posts} posts came back with an id", made.len());
    Ok(made)
}

/// Reads every user's friend list and feed and every post once, spread over `urls`.
async fn warm(urls: &[String], users: &[u64], posts: &[u64]) -> Result<()> {
    let http = reqwest::Client::builder().timeout(Duration::from_secs(60)).build()?;
    let mut paths = Vec::new();
    for u in users {
        paths.push(format!("/users/{u}/friends?consistency=eventual&limit=1000"));
        paths.push(format!("/users/{u}/feed?limit=20"));
    }
    paths.extend(posts.iter().map(|p| format!("/posts/{p}")));
    let mut in_flight = tokio::task::JoinSet::new();
    for (i, path) in paths.into_iter().enumerate() {
        if in_flight.len() >= 32 {
            in_flight.join_next().await.expect("non-empty")??;
        }
        let url = format!("{}{path}", urls[i % urls.len()]);
        let req = http.get(url);
        in_flight.spawn(async move {
            let r = req.send().await?;
            ensure!(r.status().is_success(), "warming: {}: {}", r.url(), r.status());
            anyhow::Ok(())
        });
    }
    while let Some(r) = in_flight.join_next().await {
        r??;
    }
    Ok(())
}

/// What one case runs on.
struct Case<'a> {
    mode: &'static str,
    urls: &'a [String],
    /// The servers' process ids, and the engines' under them.
    servers: &'a [u32],
    engines: &'a [u32],
}

/// Warms the caches, then measures each operation alone with the servers' and engines' CPU.
fn measure(
    runtime: &tokio::runtime::Runtime,
    a: &ServersBenchArgs,
    case: &Case<'_>,
    ops: &[&'static str],
    users: &[u64],
    posts: &[u64],
    rows: &mut Vec<Row>,
) -> Result<()> {
    let Case { mode, urls, servers, engines } = *case;
    eprintln!("bench servers: {mode}, {} server(s): warming the caches", urls.len());
    runtime.block_on(warm(urls, users, posts))?;
    for &op in ops {
        let source = Arc::new(Reads { op, users: users.to_vec(), posts: posts.to_vec() });
        let config = RunConfig {
            targets: urls.to_vec(),
            clients: a.clients,
            rate: None,
            duration: Duration::from_secs_f64(a.seconds),
            warmup: Duration::from_secs_f64(a.warmup_s),
            seed: a.seed,
            timeout: Duration::from_secs(30),
        };
        // CPU over the measured window only: sampled after the warm-up, and at its end.
        let sampler = {
            let (servers, engines) = (servers.to_vec(), engines.to_vec());
            let (warmup, seconds) = (config.warmup, config.duration);
            std::thread::spawn(move || {
                std::thread::sleep(warmup);
                let before = (total_cpu(&servers), total_cpu(&engines));
                std::thread::sleep(seconds);
                (total_cpu(&servers) - before.0, total_cpu(&engines) - before.1)
            })
        };
        let r: RunReport = runtime.block_on(kith_workload::run(source, &config))?;
        let (server_cpu_s, engine_cpu_s) = sampler.join().expect("the CPU sampler");
        let o = r.ops.iter().find(|o| o.op == op).context("no figures for the operation")?;
        let n = o.ops.max(1) as f64;
        let row = Row {
            mode,
            servers: urls.len(),
            op,
            requests: o.ops,
            errors: o.errors,
            requests_per_s: o.throughput,
            p50_ms: o.p50_ms,
            p99_ms: o.p99_ms,
            server_cpu_s,
            engine_cpu_s,
            cpu_us_per_request: (server_cpu_s + engine_cpu_s) * 1e6 / n,
            server_cpu_us_per_request: server_cpu_s * 1e6 / n,
            cpu_ratio_vs_embedded: f64::NAN,
            answered_by: r.answered_by.clone(),
        };
        eprintln!(
            "bench servers: {mode} x{}: {op}: {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms, {:.0} µs CPU per request",
            urls.len(),
            row.requests_per_s,
            row.p50_ms,
            row.p99_ms,
            row.cpu_us_per_request
        );
        ensure!(
            o.errors == 0,
            "{mode} x{}: {op}: {} requests failed: {:?}",
            urls.len(),
            o.errors,
            o.errors_by_status
        );
        rows.push(row);
    }
    Ok(())
}

/// Throughput and CPU per request against the server count, per operation; the embedded
/// server's figure as a point at one server.
fn charts(out: &Path, rows: &[Row]) -> Result<()> {
    let series = |f: &dyn Fn(&Row) -> f64| -> Vec<Series> {
        let mut all = Vec::new();
        for op in OPS {
            for mode in ["cluster", "cluster-near", "embedded"] {
                let points: Vec<(f64, f64)> = rows
                    .iter()
                    .filter(|r| r.op == op && r.mode == mode)
                    .map(|r| (r.servers as f64, f(r)))
                    .collect();
                if !points.is_empty() {
                    all.push(Series { name: format!("{op} ({mode})"), points });
                }
            }
        }
        all
    };
    let stem = out.with_extension("");
    let path = |what: &str| PathBuf::from(format!("{}-{what}.png", stem.display()));
    line_chart(
        &path("throughput"),
        &LineChart {
            title: "Cached reads: throughput against kith servers (2 cores shared by all)",
            x_label: "kith servers",
            y_label: "requests/s",
            log2_x: true,
        },
        &series(&|r| r.requests_per_s),
    )?;
    line_chart(
        &path("cpu"),
        &LineChart {
            title: "Cached reads: CPU per request, servers + engines",
            x_label: "kith servers",
            y_label: "CPU µs per request",
            log2_x: true,
        },
        &series(&|r| r.cpu_us_per_request),
    )?;
    Ok(())
}
