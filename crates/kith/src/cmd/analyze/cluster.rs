//! `kith analyze <algorithm> --processes P | --hostfile F --process i`: the cluster
//! arguments, this process's place in the cluster, and what a distributed run adds to the
//! report (traffic, the communication model's prediction, the per-step table). The
//! launcher behind `--processes` is `launcher.rs`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, Result, bail, ensure};
use clap::Args;
use kith_distributed::{Cluster, CommModel, ExchangeMode};
use serde_json::{Value, json};

/// Distributed runs.
#[derive(Clone, Debug, Args)]
pub(crate) struct DistArgs {
    /// Run on P processes on this machine (loopback TCP), as a launcher.
    #[arg(long)]
    pub(crate) processes: Option<usize>,
    /// Join a cluster: one host:port per process, in process order (every process is given
    /// the same file, the same graph path and the same arguments).
    #[arg(long, requires = "process")]
    hostfile: Option<PathBuf>,
    /// This process's line in --hostfile, from 0.
    #[arg(long, requires = "hostfile")]
    process: Option<usize>,
    /// fetch-once (LFGraph: a changed value once per subscribing worker) or per-edge
    /// (Pregel without combiners: once per cross-worker edge).
    #[arg(long, default_value = "fetch-once", value_parser = ["fetch-once", "per-edge"])]
    exchange: String,
    /// Seconds the processes may take to connect.
    #[arg(long, default_value_t = 30)]
    connect_timeout: u64,
    /// Seconds a worker waits for the others in one round before giving up.
    #[arg(long, default_value_t = 600)]
    wait_timeout: u64,
}

impl DistArgs {
    /// Whether the run is distributed (a launcher or a member).
    pub(super) fn is_distributed(&self) -> bool {
        self.processes.is_some() || self.hostfile.is_some()
    }

    /// Whether this process is the launcher of a local cluster.
    pub(super) fn is_launcher(&self) -> bool {
        self.processes.is_some() && self.hostfile.is_none()
    }

    /// This process's place in the cluster given by --hostfile.
    pub(super) fn member(&self, threads: usize) -> Result<Cluster> {
        let path = self.hostfile.as_ref().context("--process needs --hostfile")?;
        let addresses = kith_distributed::read_hostfile(path)?;
        let process = self.process.context("--hostfile needs --process")?;
        if let Some(p) = self.processes {
            ensure!(
                p == addresses.len(),
                "--processes {p} but {} lists {} processes",
                path.display(),
                addresses.len()
            );
        }
        ensure!(
            process < addresses.len(),
            "--process {process} is not a line of {} ({} processes, numbered from 0)",
            path.display(),
            addresses.len()
        );
        Ok(Cluster {
            threads,
            process,
            addresses,
            mode: if self.exchange == "per-edge" {
                ExchangeMode::PerEdge
            } else {
                ExchangeMode::FetchOnce
            },
            connect_timeout: Duration::from_secs(self.connect_timeout.max(1)),
            wait_timeout: Duration::from_secs(self.wait_timeout.max(1)),
        })
    }
}

/// The JSON fields a distributed run adds, with the communication model's prediction for
/// its worker count beside the measured values per vertex of the initial exchange (in which
/// every value is sent). The model needs the whole graph: it is `null` for a run that read
/// a partition.
pub(super) fn report_json(
    cluster: &Cluster,
    output_report: &kith_distributed::Report,
    graph: Option<&kith_graph::Graph>,
) -> Value {
    let r = output_report;
    let first = r.per_step.first();
    let initial = first.map_or(0.0, |s| s.messages.mean * r.workers as f64);
    let initial_bytes = first.map_or(0.0, |s| s.bytes.mean * r.workers as f64);
    let model = graph.map(|graph| {
        let model = kith_distributed::overhead(&CommModel::new(graph), r.workers);
        let predicted = match cluster.mode {
            ExchangeMode::FetchOnce => model.lfgraph,
            ExchangeMode::PerEdge => model.pregel,
        };
        let n = graph.num_nodes().max(1) as f64;
        json!({
            "servers": r.workers,
            "predicted_values_per_vertex": predicted,
            "measured_values_per_vertex": initial / n,
            // In bytes, at the measured bytes per value of this run's encoding.
            "predicted_bytes_all_changed": predicted * n * initial_bytes / initial.max(1.0),
            "measured_bytes_all_changed": initial_bytes,
            "compute_max_over_mean": model.compute_max_over_mean,
        })
    });
    json!({
        "processes": cluster.processes(),
        "threads_per_process": cluster.threads,
        "workers": r.workers,
        "exchange_mode": cluster.mode.name(),
        "exchange": r.exchange,
        "setup_s": r.setup_s,
        "steps_s": r.steps_s,
        "compute_s": r.compute_s,
        "exchange_s": r.exchange_s,
        "per_step": r.per_step,
        "model": model,
    })
}

/// The per-step table of a distributed run (max / mean over workers).
pub(super) fn print_steps(cluster: &Cluster, r: &kith_distributed::Report) {
    println!(
        "  {} processes x {} threads, {} exchange: {} values, {:.1} MB (busiest worker {:.1} MB, mean {:.1} MB)",
        cluster.processes(),
        cluster.threads,
        cluster.mode.name(),
        r.exchange.messages,
        r.exchange.bytes as f64 / 1e6,
        r.exchange.max_worker_bytes as f64 / 1e6,
        r.exchange.mean_worker_bytes / 1e6
    );
    println!(
        "  {:>5} {:>9} {:>19} {:>19} {:>19} {:>19}",
        "step",
        "changed",
        "compute ms max/mean",
        "exchange ms max/mean",
        "values max/mean",
        "KB max/mean"
    );
    for s in &r.per_step {
        let step = s.step.map_or_else(|| "init".to_string(), |x| x.to_string());
        let changed = s.changed.map_or_else(|| "all".to_string(), |x| x.to_string());
        let pair = |x: kith_distributed::Spread, scale: f64| {
            format!("{:.1}/{:.1}", x.max * scale, x.mean * scale)
        };
        println!(
            "  {step:>5} {changed:>9} {:>19} {:>19} {:>19} {:>19}",
            pair(s.compute_s, 1e3),
            pair(s.exchange_s, 1e3),
            pair(s.messages, 1.0),
            pair(s.bytes, 1e-3)
        );
    }
}

/// Refuses what has no distributed form.
pub(super) fn unsupported(what: &str) -> Result<()> {
    bail!("{what} has no distributed form; run it without --processes/--hostfile")
}
