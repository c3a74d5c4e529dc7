//! `kith analyze <algorithm> --processes P | --hostfile F --process i`: the vertex programs
//! on kith-distributed's timely engine. `--processes` is a launcher: it picks free loopback
//! ports, writes a hostfile and starts P copies of this command as its processes, watching
//! them; a process that fails makes the launcher stop the others and say which one failed.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail, ensure};
use clap::Args;
use kith_analytics::InGraph;
use kith_distributed::{Cluster, CommModel, ExchangeMode, Output, Program};
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
    pub(crate) fn is_distributed(&self) -> bool {
        self.processes.is_some() || self.hostfile.is_some()
    }

    /// Whether this process is the launcher of a local cluster.
    pub(crate) fn is_launcher(&self) -> bool {
        self.processes.is_some() && self.hostfile.is_none()
    }

    /// This process's place in the cluster given by --hostfile.
    pub(crate) fn member(&self, threads: usize) -> Result<Cluster> {
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

/// Starts `processes` copies of this command on loopback and waits for them. Process 0's
/// stdout is this one's; every process's stderr is this one's.
pub(crate) fn launch(processes: usize) -> Result<()> {
    ensure!(processes >= 1, "--processes must be at least 1");
    let addresses = kith_distributed::loopback_addresses(processes)?;
    let dir = tempfile::tempdir().context("a directory for the hostfile")?;
    let hostfile = dir.path().join("hosts");
    std::fs::write(&hostfile, addresses.join("\n") + "\n")
        .with_context(|| format!("writing {}", hostfile.display()))?;
    let mut args: Vec<OsString> = Vec::new();
    let mut skip = false;
    for arg in std::env::args_os().skip(1) {
        if std::mem::take(&mut skip) {
            continue;
        }
        match arg.to_str() {
            Some("--processes") => skip = true,
            Some(a) if a.starts_with("--processes=") => {}
            _ => args.push(arg),
        }
    }
    let exe = std::env::current_exe()?;
    let mut children = Vec::new();
    for (i, address) in addresses.iter().enumerate() {
        let child = Command::new(&exe)
            .args(&args)
            .arg("--hostfile")
            .arg(&hostfile)
            .args(["--process", &i.to_string()])
            .stdin(Stdio::null())
            .stdout(if i == 0 { Stdio::inherit() } else { Stdio::null() })
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting process {i}"))?;
        eprintln!("kith: process {i} of {processes} is pid {} at {address}", child.id());
        children.push(child);
    }
    // Each process's outcome; after the first failure the others get a grace period to
    // see their connections close and stop by themselves, then they are killed.
    let mut outcomes: Vec<Option<std::process::ExitStatus>> = vec![None; processes];
    let mut failed_at: Option<Instant> = None;
    while outcomes.iter().any(Option::is_none) {
        for (i, child) in children.iter_mut().enumerate() {
            if outcomes[i].is_none()
                && let Some(status) = child.try_wait()?
            {
                outcomes[i] = Some(status);
                if !status.success() {
                    failed_at.get_or_insert_with(Instant::now);
                }
            }
        }
        if failed_at.is_some_and(|at| at.elapsed() > Duration::from_secs(10)) {
            for (i, child) in children.iter_mut().enumerate() {
                if outcomes[i].is_none() {
                    let _ = child.kill();
                    outcomes[i] = child.wait().ok();
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut failures: Vec<(bool, String)> = Vec::new();
    for (i, (status, child)) in outcomes.iter().zip(&children).enumerate() {
        let Some(status) = status.filter(|s| !s.success()) else { continue };
        use std::os::unix::process::ExitStatusExt as _;
        let pid = child.id();
        failures.push(match status.signal() {
            Some(signal) => {
                (true, format!("process {i} (pid {pid}) was killed by signal {signal}"))
            }
            None => (false, format!("process {i} (pid {pid}) failed with {status}")),
        });
    }
    // The processes killed from outside first: the others failed because of them.
    failures.sort_by_key(|f| !f.0);
    if !failures.is_empty() {
        let what: Vec<String> = failures.into_iter().map(|f| f.1).collect();
        bail!("the distributed run failed: {}", what.join("; "));
    }
    Ok(())
}

/// Runs `program` as this process's part of the cluster; `None` on processes other than 0.
pub(crate) fn run<P: Program + Clone + Sync>(
    graph: &Arc<InGraph>,
    program: P,
    cluster: &Cluster,
) -> Result<Option<Output<P::Value>>> {
    Ok(kith_distributed::run(Arc::clone(graph), program, cluster)?)
}

/// The JSON fields a distributed run adds, with the communication model's prediction for
/// its worker count beside the measured values per vertex of the initial exchange (in which
/// every value is sent).
pub(crate) fn report_json(
    cluster: &Cluster,
    output_report: &kith_distributed::Report,
    graph: &kith_graph::Graph,
) -> Value {
    let r = output_report;
    let model = kith_distributed::overhead(&CommModel::new(graph), r.workers);
    let predicted = match cluster.mode {
        ExchangeMode::FetchOnce => model.lfgraph,
        ExchangeMode::PerEdge => model.pregel,
    };
    let first = r.per_step.first();
    let initial = first.map_or(0.0, |s| s.messages.mean * r.workers as f64);
    let initial_bytes = first.map_or(0.0, |s| s.bytes.mean * r.workers as f64);
    let n = graph.num_nodes().max(1) as f64;
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
        "model": {
            "servers": r.workers,
            "predicted_values_per_vertex": predicted,
            "measured_values_per_vertex": initial / n,
            // In bytes, at the measured bytes per value of this run's encoding.
            "predicted_bytes_all_changed": predicted * n * initial_bytes / initial.max(1.0),
            "measured_bytes_all_changed": initial_bytes,
            "compute_max_over_mean": model.compute_max_over_mean,
        },
    })
}

/// The per-step table of a distributed run (max / mean over workers).
pub(crate) fn print_steps(cluster: &Cluster, r: &kith_distributed::Report) {
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
pub(crate) fn unsupported(what: &str) -> Result<()> {
    bail!("{what} has no distributed form; run it without --processes/--hostfile")
}
