//! `kith`: the command line of the kith social-graph toolkit.
//!
//! The product's commands live in `cmd/` (graph, layout, store, serve, analyze, workload);
//! the harness's (bench, experiment, demo) in the `kith-lab` crate. This file parses
//! arguments, dispatches, and turns errors into a one-line message on stderr and a non-zero
//! exit code.

mod cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc: the service allocates many small, short-lived buffers per request (hyper,
/// serde, JSON), which it handles well.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// kith: a social-graph store and analytics toolkit.
#[derive(Debug, Parser)]
#[command(name = "kith", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Import, generate and describe graphs.
    #[command(subcommand)]
    Graph(cmd::graph::GraphCommand),
    /// Compute, evaluate and compare layouts: where each user's record goes on disk.
    #[command(subcommand)]
    Layout(cmd::layout::LayoutCommand),
    /// The layout-aware store, embedded on RocksDB or on a Cassandra cluster: build, relayout,
    /// status, verify.
    #[command(subcommand)]
    Store(cmd::store::StoreCommand),
    /// Local Apache Cassandra clusters on loopback addresses: up, status, down, and the node
    /// faults of the trials (kill, start, add).
    #[command(subcommand)]
    Cluster(cmd::cluster::ClusterCommand),
    /// Reproduce the papers' experiments: CSV tables and PNG charts.
    #[command(subcommand)]
    Experiment(kith_lab::experiment::ExperimentCommand),
    /// Benchmarks that record their results as JSON under bench/results/.
    #[command(subcommand)]
    Bench(kith_lab::bench::BenchCommand),
    /// The HTTP/JSON service over a store: Parker's API and Twibo's feeds.
    Serve(Box<cmd::serve::ServeArgs>),
    /// Graph analytics: PageRank, hop distances, components, triangles, clustering, k-cores.
    #[command(subcommand)]
    Analyze(cmd::analyze::AnalyzeCommand),
    /// Synthetic traffic: SONETOR traces.
    #[command(subcommand)]
    Workload(cmd::workload::WorkloadCommand),
    /// kith's main job on its embedded default: generate a social graph, lay it out, store
    /// it, serve it over HTTP and drive a short workload against it.
    Demo(kith_lab::demo::DemoArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => e.exit(), // --help and --version
        Err(e) => {
            eprintln!("kith: error: {}", one_line(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::Graph(c) => cmd::graph::run(c),
        Command::Layout(c) => cmd::layout::run(c),
        Command::Store(c) => cmd::store::run(c),
        Command::Cluster(c) => cmd::cluster::run(c),
        Command::Experiment(c) => kith_lab::experiment::run(c),
        Command::Bench(c) => kith_lab::bench::run(c),
        Command::Serve(a) => cmd::serve::run(*a),
        Command::Workload(c) => cmd::workload::run(c),
        Command::Analyze(c) => cmd::analyze::run(c),
        Command::Demo(a) => kith_lab::demo::run(a),
    };
    kith_lab::machine::report_peak_rss();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let message = format!("{e:#}").replace('\n', " ");
            eprintln!("kith: error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Folds clap's multi-line usage error into one line: its message and details, without the
/// usage block and the pointer to `--help` (which `kith <command> --help` shows in full).
fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more information")
        })
        .map(|l| l.strip_prefix("error: ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join(" ")
}
