//! `kith`: the command line of the kith social-graph toolkit.
//!
//! The product's commands live in `cmd/` (graph, layout, store, serve, analyze, workload);
//! the harness's (bench, experiment, demo) in the `kith-lab` crate. This file parses
//! arguments, dispatches, and turns errors into a one-line message on stderr and a non-zero
//! exit code.

mod cmd;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// mimalloc: the service allocates many small, short-lived buffers per request (hyper,
/// serde, JSON), which it handles well.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (v3's `mimalloc.h`; libmimalloc-sys 0.1 does not name
/// it): how long freed memory waits before it goes back to the OS (1 s by default; -1:
/// never).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Keeps memory a process frees for reuse instead of returning it to the OS. A batch
/// command's large buffers come and go (the layout's bisection allocates per block and
/// level): returned and touched again, each page is zeroed by the kernel anew, which cost a
/// 35 M-edge layout several seconds. Its memory goes back when it exits. Not for `serve`,
/// which runs for long and keeps mimalloc's default, nor where `MIMALLOC_PURGE_DELAY` says
/// otherwise.
fn keep_freed_memory() {
    // SAFETY: sets one of mimalloc's option values; any value is valid for this option.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
}

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
    Experiment(kith_lab::experiment::ExperimentArgs),
    /// Benchmarks that record their results as JSON under bench/results/.
    Bench(kith_lab::bench::BenchArgs),
    /// Fault trials with recorded histories and a checker: `kith trial cluster`.
    Trial(kith_lab::trial::TrialArgs),
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
    /// Print a shell completion script: `kith completions bash > /etc/bash_completion.d/kith`.
    Completions(cmd::shell::CompletionsArgs),
    /// Print the man page kith(1), or with --dir write a page for every command.
    Man(cmd::shell::ManArgs),
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
    if !matches!(cli.command, Command::Serve(_))
        && std::env::var_os("MIMALLOC_PURGE_DELAY").is_none()
    {
        keep_freed_memory();
    }
    let result = match cli.command {
        Command::Graph(c) => cmd::graph::run(c),
        Command::Layout(c) => cmd::layout::run(c),
        Command::Store(c) => cmd::store::run(c),
        Command::Cluster(c) => cmd::cluster::run(c),
        Command::Experiment(c) => kith_lab::experiment::run(c),
        Command::Bench(c) => kith_lab::bench::run(c),
        Command::Trial(c) => kith_lab::trial::run(c),
        Command::Serve(a) => cmd::serve::run(*a),
        Command::Workload(c) => cmd::workload::run(c),
        Command::Analyze(c) => cmd::analyze::run(c),
        Command::Demo(a) => kith_lab::demo::run(a),
        Command::Completions(a) => cmd::shell::completions(Cli::command(), &a),
        Command::Man(a) => cmd::shell::man(Cli::command(), &a),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_purge_delay_option_is_the_one_set() {
        // Index 15 is mimalloc v3's purge delay: 1000 ms by default, and what is set reads
        // back.
        // SAFETY: reads and sets one of mimalloc's option values.
        unsafe {
            assert_eq!(libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY), 1000);
            keep_freed_memory();
            assert_eq!(libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY), -1);
            libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 1000);
        }
    }
}
