//! What every `kith analyze <algorithm>` shares, written once: the common arguments, the
//! choice between this machine and a cluster (`--processes` launches one, `--hostfile`
//! joins one), loading and relabelling the graph (or reading this process's parts of a
//! partition, `partitioned.rs`), the thread pool, timing, the `--out`
//! CSV, and the JSON or text report with the verification's verdict. Each algorithm's
//! module says only what is specific to it, as a function from a [`Job`] to an
//! [`Outcome`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, Result, bail, ensure};
use clap::Args;
use kith_analytics::InGraph;
use kith_distributed::{Cluster, Program, Report, Totals};
use kith_graph::{Graph, VertexId};
use kith_lab::cli::{GraphInput, spinner};
use serde_json::{Value, json};

use super::cluster::{self, DistArgs};
use super::launcher::launch;
use super::partitioned::{self, Input, Shape};

/// The arguments of every algorithm.
#[derive(Debug, Args)]
pub(crate) struct CommonArgs {
    /// The graph, or a partition of it (a directory from `kith graph partition`), of which
    /// each process of a cluster reads only its own workers' parts.
    #[command(flatten)]
    pub(super) input: GraphInput,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Check the result against a sequential implementation.
    #[arg(long)]
    pub(super) verify: bool,
    /// Relabel the graph before running, by this layout file (from `kith layout compute`):
    /// users placed together get neighbouring ids, so their values share cache lines; or by
    /// `degree` (most in-links first), which packs the values read most on an undirected
    /// graph (a layout file named `degree` is given as `./degree`).
    #[arg(long, value_name = "LAYOUT|degree")]
    pub(super) order: Option<PathBuf>,
    /// Write per-user results as CSV (original id, value).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    dist: DistArgs,
}

/// What the runner needs to know of an algorithm before running it.
pub(super) struct Algorithm {
    /// Its name in the report and the spinner (`pagerank`, `mutual-friends`, ...).
    pub(super) name: &'static str,
    /// It runs on the friendships (a directed input is symmetrised), not the graph as given.
    pub(super) undirected: bool,
    /// It has no distributed form: what the refusal of `--processes`/`--hostfile` names.
    pub(super) local_only: Option<&'static str>,
    /// What of this run needs the whole graph, so that a process of a partitioned run
    /// cannot do it (the refusal's words).
    pub(super) whole_graph: Option<&'static str>,
}

/// What an algorithm computed, for the runner to write and report.
pub(super) struct Outcome {
    /// The algorithm's own fields of the report (in text, one `key: value` line each).
    pub(super) summary: Value,
    /// The header line of the `--out` CSV.
    pub(super) header: &'static str,
    /// The `--out` CSV's lines, one per user (per friendship for mutual friends).
    pub(super) rows: Vec<String>,
    /// With `--verify`: whether the result equals the verifier's.
    pub(super) verified: Option<bool>,
    /// Steps, for an algorithm that ran as a vertex program.
    pub(super) steps: Option<usize>,
}

/// One run of an algorithm: the loaded graph and where vertex programs run.
pub(super) struct Job<'a> {
    /// The graph as loaded (symmetrised for an undirected algorithm); `None` when read from
    /// a partition.
    graph: Option<&'a Graph>,
    /// Whether the graph keeps edge direction.
    pub(super) directed: bool,
    /// Its in-links, relabelled by `--order` if given; from a partition read by a process of
    /// a cluster, only its own workers' (every user's id and out-degree are there).
    pub(super) ig: Arc<InGraph>,
    /// `--verify`: compare the result with a sequential implementation.
    pub(super) verify: bool,
    /// `--out` was given: the per-user CSV rows are wanted.
    out: bool,
    /// Dense id to relabelled id, when `--order` relabelled the graph.
    position: Option<Vec<VertexId>>,
    cluster: Option<&'a Cluster>,
    /// The distributed run's steps, times and traffic, once there was one.
    report: Option<Report>,
}

/// Where a vertex program ran, as [`Job::distribute`] tells.
pub(super) enum Ran<V> {
    /// The run is not distributed: the algorithm runs its single-machine engine itself.
    Here,
    /// Distributed, on process 0: the whole cluster's result.
    Cluster(Distributed<V>),
    /// Distributed, on another process: its part is done and process 0 reports.
    Elsewhere,
}

/// A distributed vertex program's result on process 0.
pub(super) struct Distributed<V> {
    /// Every vertex's value by (relabelled) dense id.
    pub(super) values: Vec<V>,
    pub(super) steps: usize,
    /// Compute-phase seconds, summed over steps (the slowest worker in each).
    pub(super) compute_s: f64,
    /// Wall seconds of the initial exchange and the steps.
    pub(super) steps_s: f64,
    /// The totals of the last step (PageRank's L1 change is `last.delta`).
    pub(super) last: Totals,
}

impl Job<'_> {
    /// The `--out` CSV's rows, made by `make` only when `--out` was given (formatting a
    /// line per user costs about as much as a PageRank step).
    pub(super) fn rows(&self, make: impl FnOnce() -> Vec<String>) -> Vec<String> {
        if self.out { make() } else { Vec::new() }
    }

    /// Whether the vertex programs run on a cluster.
    pub(super) fn distributed(&self) -> bool {
        self.cluster.is_some()
    }

    /// The vertex of user `uid` (an original id given with `flag`), relabelled like the graph.
    pub(super) fn vertex(&self, flag: &str, uid: u64) -> Result<VertexId> {
        let v = match self.graph {
            Some(g) => g.dense_id(uid),
            None => self.ig.original_ids().iter().position(|&x| x == uid).map(|p| p as VertexId),
        }
        .with_context(|| format!("{flag} {uid} is not a user of the graph"))?;
        Ok(self.position.as_ref().map_or(v, |p| p[v as usize]))
    }

    /// Runs `program` on `graph` across the cluster, if the run is distributed.
    pub(super) fn distribute<P: Program + Clone + Sync>(
        &mut self,
        graph: &Arc<InGraph>,
        program: impl FnOnce() -> P,
    ) -> Result<Ran<P::Value>> {
        let Some(cluster) = self.cluster else { return Ok(Ran::Here) };
        let Some(out) = kith_distributed::run(Arc::clone(graph), program(), cluster)? else {
            return Ok(Ran::Elsewhere);
        };
        let r = self.report.insert(out.report);
        Ok(Ran::Cluster(Distributed {
            values: out.values,
            steps: r.steps,
            compute_s: r.compute_s,
            steps_s: r.steps_s,
            last: out.last,
        }))
    }
}

/// Worker threads: the given count (at least 1), or all cores.
pub(super) fn thread_count(threads: Option<usize>) -> Result<usize> {
    Ok(match threads {
        Some(0) => bail!("--threads must be at least 1"),
        Some(t) => t,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    })
}

/// Runs `algorithm`, whose specific part is `body`: launches a local cluster for
/// `--processes`, or joins the one `--hostfile` names, or runs on this machine; then loads
/// the graph once, runs `body` on the thread pool, and reports (on process 0 only).
pub(super) fn run(
    common: &CommonArgs,
    algorithm: &Algorithm,
    body: impl FnOnce(&mut Job<'_>) -> Result<Option<Outcome>> + Send,
) -> Result<()> {
    if common.dist.is_distributed()
        && let Some(what) = algorithm.local_only
    {
        cluster::unsupported(what)?;
    }
    if common.dist.is_launcher() {
        let processes = common.dist.processes.unwrap_or(1);
        if common.input.graph.is_dir() {
            // Refused here once rather than by every process.
            let threads = common.threads.unwrap_or(1);
            partitioned::check(common, algorithm, Some((processes, threads)))?;
        }
        return launch(processes);
    }
    let cluster = if common.dist.is_distributed() {
        // One worker thread per process unless told otherwise: local clusters share cores.
        Some(common.dist.member(thread_count(Some(common.threads.unwrap_or(1)))?)?)
    } else {
        None
    };
    let threads = thread_count(common.threads)?;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;
    pool.install(|| analyze(common, algorithm, threads, cluster.as_ref(), body))
}

fn analyze(
    common: &CommonArgs,
    algorithm: &Algorithm,
    threads: usize,
    cluster: Option<&Cluster>,
    body: impl FnOnce(&mut Job<'_>) -> Result<Option<Outcome>>,
) -> Result<()> {
    let input = if common.input.graph.is_dir() {
        partitioned::read(common, algorithm, cluster)?
    } else if algorithm.undirected {
        Input::Whole(common.input.load_undirected()?)
    } else {
        Input::Whole(common.input.load()?)
    };
    let shape = input.shape();
    let busy =
        spinner(&format!("{} on {} users, {} edges", algorithm.name, shape.users, shape.edges));
    if cluster.is_some_and(|c| c.process != 0) {
        busy.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    // Timed from the loaded input: a graph file's in-links are built here, a partition's
    // were read with it (its `read_s` is in the report).
    let start = Instant::now();
    let (graph, mut ig, partition) = match input {
        Input::Parts { ig, report, .. } => (None, ig, Some(report)),
        Input::Whole(g) => {
            let ig = InGraph::new(&g);
            (Some(g), ig, None)
        }
    };
    let mut position = None;
    let mut ordering = json!({});
    if let Some(path) = &common.order {
        let t = Instant::now();
        let order = if path.as_os_str() == "degree" {
            ig.degree_order()
        } else {
            let graph = graph.as_ref().context("--order needs the graph file")?;
            kith_layout::read_layout(path, graph)?.order().to_vec()
        };
        let read_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        ig = ig.relabel(&order);
        ordering = json!({"order_s": read_s, "relabel_s": t.elapsed().as_secs_f64()});
        let mut positions = vec![0 as VertexId; order.len()];
        for (p, &v) in order.iter().enumerate() {
            positions[v as usize] = p as VertexId;
        }
        position = Some(positions);
    }
    let ig = Arc::new(ig);
    let prepare_s = start.elapsed().as_secs_f64();
    let out = common.out.is_some();
    let mut job = Job {
        graph: graph.as_ref(),
        directed: shape.directed,
        ig,
        verify: common.verify,
        out,
        position,
        cluster,
        report: None,
    };
    let Some(outcome) = body(&mut job)? else { return Ok(()) };
    let seconds = start.elapsed().as_secs_f64();
    busy.finish_and_clear();
    if let Some(path) = &common.out {
        write_csv(path, &outcome)?;
    }
    let run = Timing { threads, seconds, prepare_s, ordering, partition };
    let distributed = cluster.zip(job.report.as_ref());
    report(common, algorithm.name, (&shape, graph.as_ref()), distributed, run, outcome)
}

/// How a run went apart from its results: for the report.
struct Timing {
    threads: usize,
    /// Seconds from building the in-links to the result (relabelling and the algorithm).
    seconds: f64,
    /// Seconds building the in-links and relabelling them.
    prepare_s: f64,
    /// `--order`'s own times (reading the layout, relabelling).
    ordering: Value,
    /// What was read of a partition, when the input was one.
    partition: Option<Value>,
}

/// The `--out` CSV: the header, then one line per row.
fn write_csv(path: &std::path::Path, outcome: &Outcome) -> Result<()> {
    let mut text = format!("{}\n", outcome.header);
    for r in &outcome.rows {
        text.push_str(r);
        text.push('\n');
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Prints the report, as JSON or text, and fails if the verification did.
fn report(
    common: &CommonArgs,
    name: &str,
    (shape, graph): (&Shape, Option<&Graph>),
    distributed: Option<(&Cluster, &Report)>,
    run: Timing,
    outcome: Outcome,
) -> Result<()> {
    let Timing { threads, seconds, prepare_s, ordering, partition } = run;
    let Outcome { summary, verified, steps, .. } = outcome;
    let (users, edges) = (shape.users, shape.edges);
    let mut report = json!({"algorithm": name, "seconds": seconds, "threads": threads,
        "users": users, "edges": edges, "steps": steps,
        "order": common.order.as_ref().map(|p| p.display().to_string()),
        "prepare_s": prepare_s, "ordering": ordering, "partition": partition});
    if let Some(v) = verified {
        report["verified"] = json!(v);
    }
    if let Some((c, r)) = distributed {
        for (k, v) in cluster::report_json(c, r, graph).as_object().expect("an object") {
            report[k] = v.clone();
        }
        report["threads"] = json!(c.threads);
    }
    for (k, v) in summary.as_object().expect("summary is an object") {
        report[k] = v.clone();
    }
    if common.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{name} on {users} users, {edges} edges, {threads} threads: {seconds:.3} s");
        for (k, v) in summary.as_object().expect("object") {
            println!("  {k}: {v}");
        }
        if let Some(v) = verified {
            println!("  verified: {v}");
        }
        if let Some((c, r)) = distributed {
            cluster::print_steps(c, r);
        }
    }
    ensure!(verified != Some(false), "{name}: the result differs from the sequential verifier");
    Ok(())
}
