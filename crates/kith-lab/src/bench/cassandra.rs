//! `kith bench cassandra`: the store on a 3-node Cassandra cluster on loopback. Friend-list
//! locality (the headline): partitions and CQL requests per "list all friends' profiles" and
//! its latency, under `hash` (one partition per user) and runs of `--partition-users`
//! positions of the `random`, `parcom` and `kith` layouts; bulk-load throughput beside the
//! embedded store's; and the fault trials at full count.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use kith_cassandra::local::{ClusterConfig, LocalCluster};
use kith_cassandra::trials::{TrialConfig, TrialRun};
use kith_cassandra::{BuildConfig, CassandraOptions, CassandraStore, drop_store};
use kith_graph::Graph;
use kith_layout::{Layout, LayoutConfig, Method, Objective, compute};
use kith_store::{BuildOptions, DataSpec, Engine, LayoutMeta};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::Serialize;

use crate::cli::GraphInput;
use crate::machine::{Machine, datasets_dir, git_commit, utc_now, write_json};
use crate::plot::bar_chart;

#[derive(Debug, Args)]
pub struct CassandraBenchArgs {
    /// The real datasets (default: $KITH_DATASETS, else shared/datasets beside the checkout).
    #[arg(long)]
    datasets: Option<PathBuf>,
    /// Graphs to measure (file names in the datasets directory).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "facebook_combined.txt.gz,soc-brightkite.mtx.gz,soc-Slashdot0902.txt.gz"
    )]
    graphs: Vec<String>,
    /// Placements: `hash` (one partition per user) and layouts whose runs of
    /// `--partition-users` positions make the partitions.
    #[arg(long, value_delimiter = ',', default_value = "hash,random,parcom,kith")]
    placements: Vec<String>,
    /// Users per partition of the layout placements; several values sweep them (their
    /// placements are named `kith-256` and so on).
    #[arg(long, value_delimiter = ',', default_value = "64")]
    partition_users: Vec<u64>,
    /// Friend-copy limits of the layout placements (0: placement alone); each nonzero `t`
    /// adds placements named `kith+copies<t>` and so on.
    #[arg(long, value_delimiter = ',', default_value = "0,1")]
    friend_copies: Vec<u32>,
    /// Profile writes timed per store after the reads (the copies' write amplification).
    #[arg(long, default_value_t = 300)]
    writes: usize,
    /// "List all friends' profiles" queries per store (users drawn uniformly among those with
    /// friends; the same users for every placement of a graph).
    #[arg(long, default_value_t = 1000)]
    queries: usize,
    /// Runs of each fault trial (0 skips them).
    #[arg(long, default_value_t = 3)]
    trial_runs: usize,
    /// Each node's heap in MiB.
    #[arg(long, default_value_t = 768)]
    heap_mb: u32,
    /// Where the benchmark's cluster runs (started here, stopped at the end).
    #[arg(long, default_value = "127.0.6.1")]
    base: std::net::Ipv4Addr,
    /// Where to write the JSON results (default: bench/results/cassandra-<date>.json).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Run only the fault trials, replacing the `faults` of the results file at `--out` (its
    /// other figures, and their date and commit, stay; the trials get their own).
    #[arg(long)]
    trials_only: bool,
    /// Only draw the charts again from the results file at `--out`.
    #[arg(long, conflicts_with = "trials_only")]
    charts_only: bool,
}

#[derive(Debug, Serialize)]
struct CassandraBench {
    benchmark: &'static str,
    date: String,
    commit: Option<String>,
    machine: Machine,
    cluster: String,
    query: &'static str,
    locality: Vec<Locality>,
    /// Per graph and kith placement: its partitions per query over hash's (goal ≤ 0.25).
    partitions_ratio_vs_hash: Vec<(String, String, f64)>,
    bulk_load: Vec<BulkLoad>,
    faults: Vec<TrialRun>,
}

#[derive(Debug, Serialize, serde::Deserialize)]
pub(crate) struct Locality {
    pub(crate) graph: String,
    pub(crate) placement: String,
    pub(crate) partition_users: u64,
    /// The friend-copy limit (0: none).
    pub(crate) friend_copies: u32,
    /// Friend copies stored per user (each one more row per profile write).
    pub(crate) copies_per_user: f64,
    users: usize,
    queries: usize,
    /// Partitions of the profile table read per query (the user's own index row aside).
    pub(crate) partitions_mean: f64,
    /// CQL requests per query: the index row, then one per partition.
    pub(crate) requests_mean: f64,
    /// Friends read from copies per query.
    copies_read_mean: f64,
    friends_mean: f64,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
    mean_ms: f64,
    /// p50 and p99 over hash's on the same graph.
    p50_vs_hash: Option<f64>,
    p99_vs_hash: Option<f64>,
    /// `put_profile` latency (profile and its copies in one logged batch), sequential.
    write_p50_ms: f64,
    write_p99_ms: f64,
}

#[derive(Debug, Serialize)]
struct BulkLoad {
    graph: String,
    placement: String,
    users: u64,
    cassandra_users_per_s: f64,
    cassandra_seconds: f64,
    /// The embedded RocksDB store built from the same graph and layout (SstFileWriter).
    embedded_users_per_s: f64,
    embedded_seconds: f64,
}

/// Stops the benchmark's cluster however the benchmark ends.
struct Stopper(LocalCluster);

impl Drop for Stopper {
    fn drop(&mut self) {
        let _ = self.0.down(Duration::from_secs(10));
        let _ = std::fs::remove_dir_all(&self.0.dir);
    }
}

pub(crate) fn layout_for(
    graph: &Graph,
    placement: &str,
    partition_users: u64,
) -> Result<(Layout, LayoutMeta)> {
    if placement == "hash" {
        return Ok((
            Layout::identity(graph.num_nodes()),
            LayoutMeta { method: "hash".into(), ..LayoutMeta::default() },
        ));
    }
    let method: Method = placement.parse().map_err(anyhow::Error::msg)?;
    // A "page" of the layout is one partition: partition_users records of 64 bytes.
    let config = LayoutConfig {
        method,
        communities: 64,
        record_bytes: 64,
        page_bytes: 64 * partition_users,
        objective: Objective::Pages,
        ..LayoutConfig::default()
    };
    Ok((compute(graph, &config)?.layout, LayoutMeta::of(&config)))
}

pub(crate) fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn trials(runs: usize) -> Result<Vec<TrialRun>> {
    if runs == 0 {
        return Ok(Vec::new());
    }
    Ok(kith_cassandra::trials::run(&TrialConfig {
        runs,
        progress: true,
        base: std::net::Ipv4Addr::new(127, 0, 7, 1),
        ..TrialConfig::default()
    })?)
}

fn trials_only(args: &CassandraBenchArgs) -> Result<()> {
    let out = args.out.clone().context("--trials-only needs --out, the results file to update")?;
    let mut doc: serde_json::Value = match std::fs::read_to_string(&out) {
        Ok(text) => {
            serde_json::from_str(&text).with_context(|| format!("reading {}", out.display()))?
        }
        Err(_) => serde_json::json!({"benchmark": "cassandra"}),
    };
    let faults = trials(args.trial_runs)?;
    doc["faults"] = serde_json::to_value(&faults)?;
    doc["faults_date"] = serde_json::json!(utc_now());
    doc["faults_commit"] = serde_json::json!(git_commit());
    write_json(&out, &doc)?;
    for t in &faults {
        crate::say!("{t:?}");
    }
    crate::say!("wrote {}", out.display());
    Ok(())
}

pub(super) fn run(args: CassandraBenchArgs) -> Result<()> {
    if args.trials_only {
        return trials_only(&args);
    }
    if args.charts_only {
        let out = args.out.clone().context("--charts-only needs --out, the results file")?;
        let doc: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(&out).with_context(|| format!("reading {}", out.display()))?,
        )
        .with_context(|| format!("parsing {}", out.display()))?;
        let locality: Vec<Locality> = serde_json::from_value(doc["locality"].clone())
            .with_context(|| format!("the locality table of {}", out.display()))?;
        return chart(&out, &locality);
    }
    let datasets = args.datasets.clone().unwrap_or_else(datasets_dir);
    let dir = std::env::temp_dir().join(format!("kith-bench-cassandra-{}", std::process::id()));
    let cluster = LocalCluster::up(&ClusterConfig {
        nodes: 3,
        dir: dir.clone(),
        base: args.base,
        heap_mb: args.heap_mb,
        progress: true,
        ..ClusterConfig::default()
    })?;
    let cluster = Stopper(cluster);
    let hosts = cluster.0.hosts();
    let mut locality: Vec<Locality> = Vec::new();
    let mut bulk = Vec::new();
    let tmp = tempfile::tempdir_in(std::env::temp_dir())?;
    for name in &args.graphs {
        let path = datasets.join(name);
        let graph = GraphInput::file(path.clone())
            .load_undirected()
            .with_context(|| format!("loading {}", path.display()))?;
        let short = name.split('.').next().unwrap_or(name).to_string();
        let mut rng = Pcg64Mcg::seed_from_u64(17);
        let mut with_friends: Vec<u64> = (0..graph.num_nodes() as u32)
            .filter(|&v| !graph.neighbors(v).is_empty())
            .map(|v| graph.original_id(v))
            .collect();
        with_friends.shuffle(&mut rng);
        let sample: Vec<u64> = (0..args.queries)
            .map(|_| with_friends[rng.random_range(0..with_friends.len())])
            .collect();
        let runs: Vec<(&String, u64, u32)> = args
            .placements
            .iter()
            .flat_map(|p| {
                let (ks, ts) = if p == "hash" {
                    (vec![1], vec![0])
                } else {
                    (args.partition_users.clone(), args.friend_copies.clone())
                };
                ks.into_iter().flat_map(move |k| ts.clone().into_iter().map(move |t| (p, k, t)))
            })
            .collect();
        for (method, k, t) in runs {
            let mut placement = if method != "hash" && args.partition_users.len() > 1 {
                format!("{method}-{k}")
            } else {
                method.clone()
            };
            if t > 0 {
                placement = format!("{placement}+copies{t}");
            }
            let placement = &placement;
            let (layout, meta) = layout_for(&graph, method, k)?;
            let keyspace = format!(
                "bench_{}_{}",
                short.replace('-', "_").to_ascii_lowercase(),
                placement.replace(['-', '+'], "_")
            );
            let options = CassandraOptions::new(hosts.clone(), &keyspace);
            let _ = drop_store(&options);
            let config = BuildConfig {
                partition_users: k,
                friend_copies: t,
                data: DataSpec::Fixed(40),
                progress: true,
                ..BuildConfig::default()
            };
            eprintln!(
                "bench cassandra: {short}, {placement}: building ({} users)",
                graph.num_nodes()
            );
            let (store, report) =
                kith_cassandra::build(&options, &graph, &layout, meta.clone(), &config)?;
            // The embedded store from the same graph and layout, for the load rate beside it.
            let t = Instant::now();
            let embedded_dir = tmp.path().join(format!("{short}-{placement}"));
            let options_rocks =
                BuildOptions { data: DataSpec::Fixed(40), ..BuildOptions::default() };
            drop(kith_store::build(&embedded_dir, &graph, &layout, meta, &options_rocks)?);
            let embedded_seconds = t.elapsed().as_secs_f64();
            let _ = std::fs::remove_dir_all(&embedded_dir);
            bulk.push(BulkLoad {
                graph: short.clone(),
                placement: placement.clone(),
                users: report.users,
                cassandra_users_per_s: report.users_per_second,
                cassandra_seconds: report.load_seconds,
                embedded_users_per_s: graph.num_nodes() as f64 / embedded_seconds,
                embedded_seconds,
            });
            // Reads from SSTables, not memtables, and from one SSTable per table on every
            // node: no compaction left running under the measurement, the same read path for
            // every placement.
            for n in 1..=3 {
                cluster.0.nodetool(n, &["flush", &keyspace])?;
                cluster.0.nodetool(n, &["compact", &keyspace])?;
            }
            let mut l = measure(&store, &short, placement, k, &sample)?;
            l.copies_per_user = report.copies as f64 / report.users.max(1) as f64;
            (l.write_p50_ms, l.write_p99_ms) = time_profile_writes(&store, &sample, args.writes)?;
            eprintln!(
                "bench cassandra: {short}, {placement}: {:.2} partitions, p50 {:.2} ms, p99 {:.2} ms, \
                 {:.2} copies per user, write p50 {:.2} ms",
                l.partitions_mean, l.p50_ms, l.p99_ms, l.copies_per_user, l.write_p50_ms
            );
            locality.push(l);
            drop(store);
            drop_store(&options)?;
        }
    }
    for graph in locality.iter().map(|l| l.graph.clone()).collect::<std::collections::BTreeSet<_>>()
    {
        let hash = locality
            .iter()
            .find(|l| l.graph == graph && l.placement == "hash")
            .map(|l| (l.p50_ms, l.p99_ms));
        for l in locality.iter_mut().filter(|l| l.graph == graph) {
            if let Some((p50, p99)) = hash {
                l.p50_vs_hash = Some(l.p50_ms / p50);
                l.p99_vs_hash = Some(l.p99_ms / p99);
            }
        }
    }
    let ratios: Vec<(String, String, f64)> = locality
        .iter()
        .filter(|l| l.placement.starts_with("kith"))
        .filter_map(|k| {
            let h = locality.iter().find(|l| l.graph == k.graph && l.placement == "hash")?;
            Some((k.graph.clone(), k.placement.clone(), k.partitions_mean / h.partitions_mean))
        })
        .collect();
    drop(cluster);
    let faults = trials(args.trial_runs)?;
    let result = CassandraBench {
        benchmark: "cassandra",
        date: utc_now(),
        commit: git_commit(),
        machine: Machine::describe(),
        cluster: format!(
            "3 Cassandra {} nodes on loopback, heap {} MiB each, replication factor 3, QUORUM",
            kith_cassandra::local::CASSANDRA_VERSION,
            args.heap_mb
        ),
        query: "list all friends' profiles: the user's index row, then one request per partition of friends (pos IN (...)); with friend copies, friends alone in their partition (at most t there) are read from copies in the user's own partition; sequential single client, after one warm-up pass over the same users",
        locality,
        partitions_ratio_vs_hash: ratios,
        bulk_load: bulk,
        faults,
    };
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from(format!("bench/results/cassandra-{}.json", &result.date[..10]))
    });
    write_json(&out, &result)?;
    crate::say!("wrote {}", out.display());
    print_tables(&result);
    chart(&out, &result.locality)?;
    Ok(())
}

pub(crate) fn measure(
    store: &CassandraStore,
    graph: &str,
    placement: &str,
    k: u64,
    sample: &[u64],
) -> Result<Locality> {
    // One pass to warm the driver's and the nodes' caches, then the measured pass.
    for &u in sample {
        store.friends_profiles(u)?;
    }
    let mut ms = Vec::with_capacity(sample.len());
    let (mut partitions, mut requests, mut friends, mut copies) = (0usize, 0usize, 0usize, 0usize);
    for &u in sample {
        let t = Instant::now();
        let got = store.friends_profiles(u)?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        partitions += got.partitions;
        requests += got.requests;
        friends += got.profiles.len();
        copies += got.copies;
    }
    let q = sample.len().max(1) as f64;
    let mean = ms.iter().sum::<f64>() / q;
    ms.sort_by(f64::total_cmp);
    Ok(Locality {
        graph: graph.to_string(),
        placement: placement.to_string(),
        partition_users: k,
        friend_copies: store.friend_copies(),
        copies_per_user: 0.0,
        users: store.count_users()? as usize,
        queries: sample.len(),
        partitions_mean: partitions as f64 / q,
        requests_mean: requests as f64 / q,
        copies_read_mean: copies as f64 / q,
        friends_mean: friends as f64 / q,
        p50_ms: quantile(&ms, 0.5),
        p99_ms: quantile(&ms, 0.99),
        mean_ms: mean,
        p50_vs_hash: None,
        p99_vs_hash: None,
        write_p50_ms: 0.0,
        write_p99_ms: 0.0,
    })
}

/// p50 and p99 (ms) of `n` sequential profile writes to the sampled users (each rewrites the
/// profile it read, so the store's contents stay as built).
fn time_profile_writes(store: &CassandraStore, sample: &[u64], n: usize) -> Result<(f64, f64)> {
    let mut ms = Vec::with_capacity(n);
    for &u in sample.iter().cycle().take(n.min(sample.len() * 4)) {
        let profile = store.get_profile(u)?;
        let t = Instant::now();
        store.put_profile(u, &profile)?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    ms.sort_by(f64::total_cmp);
    Ok((quantile(&ms, 0.5), quantile(&ms, 0.99)))
}

fn print_tables(r: &CassandraBench) {
    crate::say!("\n\"list all friends' profiles\" on 3 nodes (QUORUM):");
    crate::say!(
        "{:<18} {:<14} {:>5} {:>10} {:>9} {:>8} {:>8} {:>8} {:>8} {:>7} {:>9}",
        "graph",
        "place",
        "K",
        "partitions",
        "requests",
        "p50 ms",
        "p99 ms",
        "p50/hash",
        "p99/hash",
        "copies",
        "write p50"
    );
    for l in &r.locality {
        crate::say!(
            "{:<18} {:<14} {:>5} {:>10.2} {:>9.2} {:>8.2} {:>8.2} {:>8} {:>8} {:>7.2} {:>9.2}",
            l.graph,
            l.placement,
            l.partition_users,
            l.partitions_mean,
            l.requests_mean,
            l.p50_ms,
            l.p99_ms,
            l.p50_vs_hash.map_or("-".into(), |x| format!("{x:.2}")),
            l.p99_vs_hash.map_or("-".into(), |x| format!("{x:.2}")),
            l.copies_per_user,
            l.write_p50_ms
        );
    }
    for (g, placement, ratio) in &r.partitions_ratio_vs_hash {
        crate::say!("{g}: {placement} reads {ratio:.3}× hash's partitions (goal ≤ 0.25)");
    }
    crate::say!("\nbulk load (users/s): cassandra vs embedded");
    for b in &r.bulk_load {
        crate::say!(
            "{:<20} {:<8} {:>10.0} {:>12.0}",
            b.graph,
            b.placement,
            b.cassandra_users_per_s,
            b.embedded_users_per_s
        );
    }
    if !r.faults.is_empty() {
        crate::say!("\nfault trials:");
        for t in &r.faults {
            crate::say!(
                "{:<14} acknowledged {:>6} failed {:?} lost {} torn {} false acks {} failure window {:.1} s recovery {:.1} s",
                t.trial,
                t.acknowledged,
                t.failed,
                t.lost,
                t.torn,
                t.false_acknowledgements,
                t.failure_window_s,
                t.recovery_s
            );
        }
    }
}

fn chart(json: &std::path::Path, locality: &[Locality]) -> Result<()> {
    let graphs: Vec<String> = locality
        .iter()
        .map(|l| l.graph.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let places: Vec<String> = {
        let mut seen = Vec::new();
        for l in locality {
            if !seen.contains(&l.placement) {
                seen.push(l.placement.clone());
            }
        }
        seen
    };
    let value = |g: &String, p: &String, f: fn(&Locality) -> f64| {
        locality.iter().find(|l| &l.graph == g && &l.placement == p).map_or(0.0, f)
    };
    for (file, title, label, f) in [
        (
            "cassandra-partitions.png",
            "\"list all friends' profiles\": partitions read per query",
            "partitions per query",
            (|l: &Locality| l.partitions_mean) as fn(&Locality) -> f64,
        ),
        (
            "cassandra-p50.png",
            "\"list all friends' profiles\": median latency, 3 nodes, QUORUM",
            "p50 (ms)",
            |l: &Locality| l.p50_ms,
        ),
        (
            "cassandra-p99.png",
            "\"list all friends' profiles\": p99 latency, 3 nodes, QUORUM",
            "p99 (ms)",
            |l: &Locality| l.p99_ms,
        ),
    ] {
        let values: Vec<Vec<f64>> =
            graphs.iter().map(|g| places.iter().map(|p| value(g, p, f)).collect()).collect();
        let path = json.with_file_name(file);
        bar_chart(&path, title, label, &graphs, &places, &values)?;
        crate::say!("wrote {}", path.display());
    }
    Ok(())
}
