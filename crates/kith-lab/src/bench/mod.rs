//! `kith bench ...`: macro benchmarks that write their results as JSON under
//! `bench/results/` (with date, commit and machine), one module per benchmark.

mod analytics;
pub(crate) mod cassandra;
mod crash;
mod distributed;
mod failover;
mod feed_crash;
mod friends;
mod graph;
mod http;
mod layout;
mod servers;
mod store;

use anyhow::Result;
use clap::{Args, Subcommand};

/// `kith bench [--json] <benchmark>`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Print the results document (the JSON written under bench/results/) on stdout; the
    /// tables go to stderr.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: BenchCommand,
}

// `kith bench`'s subcommands; each variant's doc comment is its help.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Text import throughput, .kgraph load time against it, and generator time and memory.
    Graph(graph::GraphBenchArgs),
    /// Every layout method on real graphs and LFR: costs, pages per friend list, kith's goals
    /// as ratios, and kith's and parcom's time and memory at LiveJournal scale.
    Layout(layout::LayoutBenchArgs),
    /// Bondhu's "list all friends" on one store, cold or warm: response times, pages and bytes
    /// read, and a disk model's estimate.
    Friends(friends::FriendsArgs),
    /// The store on real graphs: device pages per "list all friends" for every layout and
    /// data size (cold), read and durable-write throughput, fsyncs per write.
    Store(store::StoreBenchArgs),
    /// The long crash test: SIGKILL a durable writer at random moments, verify and check every
    /// acknowledged write after each restart.
    Crash(crash::CrashArgs),
    /// The feed's crash trial: SIGKILL `kith serve --cache write-back` under mixed writes
    /// (posts, follows, friendships, profiles), check every acknowledged write after each
    /// restart.
    FeedCrash(feed_crash::FeedCrashArgs),
    /// A quick HTTP throughput figure with wrk: cached and strong friend lists, push feeds.
    Http(http::HttpBenchArgs),
    /// PageRank, triangles and components on Slashdot, R-MAT and LFR beside networkx, igraph
    /// and NetworKit; `--order` effects; the MapReduce jobs' phases beside the vertex programs.
    Analytics(analytics::AnalyticsBenchArgs),
    /// Timely PageRank on 2-8 local processes: bytes under fetch-once and per-edge exchange,
    /// COST against the single-thread engine, and the communication model's charts.
    Distributed(distributed::DistributedBenchArgs),
    /// The store on a 3-node Cassandra cluster: partitions, requests and latency per "list all
    /// friends' profiles" for hash and layout placements, bulk-load throughput beside the
    /// embedded store's, and the fault trials at full count.
    Cassandra(cassandra::CassandraBenchArgs),
    /// Failover of the service on a cluster: three kith servers over Cassandra and a Redis
    /// Cluster under mixed load, with a Redis master, a kith server, or a Cassandra node and
    /// a kith server killed midway; the window of failed requests and every acknowledged
    /// write checked.
    Failover(failover::FailoverBenchArgs),
    /// Cached friend lists, feeds and posts on 1, 2 and 4 kith servers over Cassandra and a
    /// Redis Cluster, beside one embedded server: throughput, p50/p99 and CPU-seconds per
    /// request of the servers and the engines.
    Servers(servers::ServersBenchArgs),
    /// Checks a crash writer's acknowledgement log against a store (used by the crash tests).
    #[command(hide = true)]
    CrashCheck(crash::CrashCheckArgs),
}

/// The median of `values` (sorted in place; the mean of the middle two for an even count).
pub(crate) fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// Runs one benchmark.
pub fn run(args: BenchArgs) -> Result<()> {
    crate::report::set_json(args.json);
    match args.command {
        BenchCommand::Graph(a) => graph::run(a),
        BenchCommand::Layout(a) => layout::run(a),
        BenchCommand::Friends(a) => friends::run(a),
        BenchCommand::Store(a) => store::run(a),
        BenchCommand::Crash(a) => crash::run(a),
        BenchCommand::FeedCrash(a) => feed_crash::run(a),
        BenchCommand::Http(a) => http::run(a),
        BenchCommand::Cassandra(a) => cassandra::run(a),
        BenchCommand::Analytics(a) => analytics::run(a),
        BenchCommand::Distributed(a) => distributed::run(a),
        BenchCommand::Failover(a) => failover::run(a),
        BenchCommand::Servers(a) => servers::run(a),
        BenchCommand::CrashCheck(a) => crash::check(a),
    }
}
