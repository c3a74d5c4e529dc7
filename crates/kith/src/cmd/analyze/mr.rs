//! `kith analyze mr mutual-friends|cc|triangles`: the complex-network study's MapReduce jobs.
//! On one machine, kith-analytics' spilling engine, with per-phase times, an I/O profile and
//! a storage recommendation; with `--processes`/`--hostfile`, the same jobs on
//! kith-distributed's timely workers, with per-round phase times (max and mean over
//! workers) and the bytes each round shuffled between workers.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, Result, ensure};
use clap::{Args, Subcommand};
use kith_analytics::{InGraph, JobReport, MrConfig};
use kith_distributed::{Cluster, MrOutput, MrReport};
use kith_lab::cli::{GraphInput, mr_report_json, spinner};
use serde_json::{Value, json};

use super::cluster::DistArgs;
use super::launcher::launch;
use super::runner::thread_count;

#[derive(Debug, Subcommand)]
pub(crate) enum MrJob {
    /// Algorithm 1: the common friends of every friendship.
    MutualFriends(MrArgs),
    /// Algorithm 2: connected components by iterated min-label message passing.
    Cc(MrArgs),
    /// Algorithm 3: triangles from triads and edges.
    Triangles(MrArgs),
}

#[derive(Debug, Args)]
pub(crate) struct MrArgs {
    #[command(flatten)]
    input: GraphInput,
    /// The shuffle buffer's budget (Hadoop's io.sort.mb); past --spill-percent of it, sorted
    /// runs are spilled to --spill-dir.
    #[arg(long, default_value_t = 256)]
    memory_mb: u64,
    /// The buffer's fill at which it spills, in (0, 1] (io.sort.spill.percent).
    #[arg(long, default_value_t = 0.80)]
    spill_percent: f64,
    /// Runs merged at once, at least 2 (io.sort.factor); more runs take extra merge passes.
    #[arg(long, default_value_t = 10)]
    sort_factor: usize,
    /// Runs of a merge read ahead at once, each by its own thread
    /// (mapred.reduce.parallel.copies; 0 reads them all on the merging thread).
    #[arg(long, default_value_t = 5)]
    parallel_copies: usize,
    /// Sync every run and round output and drop it from the page cache, so that the job's
    /// reads come from --spill-dir's medium (a disk, or tmpfs) instead of memory.
    #[arg(long)]
    uncached: bool,
    /// mutual-friends: 3 runs the study's three jobs (adjacency lists, friend-pair triples,
    /// common-friend lists); 1 runs one round of list intersection.
    #[arg(long, value_parser = ["1", "3"])]
    rounds: Option<String>,
    /// Where spill runs and round outputs go (default: the system's temporary directory).
    #[arg(long)]
    spill_dir: Option<PathBuf>,
    /// Worker threads: per process when distributed (default 1), else for the vertex
    /// program that --verify compares with (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Check the result against the vertex program's (and report its time).
    #[arg(long)]
    verify: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    dist: DistArgs,
}

pub(super) fn run(job: MrJob) -> Result<()> {
    let (name, args) = match &job {
        MrJob::MutualFriends(a) => ("mutual-friends", a),
        MrJob::Cc(a) => ("cc", a),
        MrJob::Triangles(a) => ("triangles", a),
    };
    ensure!(args.memory_mb >= 1, "--memory-mb must be at least 1");
    ensure!(
        args.rounds.is_none() || name == "mutual-friends",
        "--rounds applies to mr mutual-friends only"
    );
    let three = args.rounds.as_deref() != Some("1");
    if args.dist.is_distributed() {
        // The timely engine shuffles in memory over the network: it has no buffer to tune.
        let d = MrConfig::default();
        let knobs = [
            ("--spill-percent", args.spill_percent != d.spill_percent),
            ("--sort-factor", args.sort_factor != d.sort_factor),
            ("--parallel-copies", args.parallel_copies != d.parallel_copies),
            ("--uncached", args.uncached),
        ];
        if let Some((flag, _)) = knobs.iter().find(|k| k.1) {
            anyhow::bail!("{flag} tunes the single-machine engine; a cluster run does not spill");
        }
    }
    if args.dist.is_launcher() {
        return launch(args.dist.processes.unwrap_or(1));
    }
    if args.dist.is_distributed() {
        let cluster = args.dist.member(thread_count(Some(args.threads.unwrap_or(1)))?)?;
        return run_distributed(name, three, args, &cluster);
    }
    let threads = thread_count(args.threads)?;
    let graph = args.input.load_undirected()?;
    let ig = InGraph::new(&graph);
    let config = MrConfig {
        memory_bytes: args.memory_mb << 20,
        spill_percent: args.spill_percent,
        sort_factor: args.sort_factor,
        parallel_copies: args.parallel_copies,
        uncached: args.uncached,
        spill_dir: args.spill_dir.clone().unwrap_or_else(std::env::temp_dir),
        input_bytes: std::fs::metadata(&args.input.graph)
            .with_context(|| format!("reading {}", args.input.graph.display()))?
            .len(),
    };
    config.validate()?;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;
    let busy = spinner(&format!(
        "mr {name} on {} users, {} edges ({} MiB shuffle budget)",
        graph.num_nodes(),
        graph.num_edges(),
        args.memory_mb
    ));
    let start = Instant::now();
    let (summary, report, same_as_vertex_program, vp_s) = match job {
        MrJob::MutualFriends(_) => {
            let (mf, report) = if three {
                kith_analytics::mr_mutual_friends_3(&ig, &config)?
            } else {
                kith_analytics::mr_mutual_friends(&ig, &config)?
            };
            let seconds = start.elapsed().as_secs_f64();
            let check = args.verify.then(|| {
                let t = Instant::now();
                let same = pool.install(|| kith_analytics::mutual_friends(&ig).0) == mf;
                (same, t.elapsed().as_secs_f64())
            });
            let summary =
                json!({"friendships": mf.len(), "total_common": mf.total(), "seconds": seconds});
            (summary, report, check.map(|c| c.0), check.map(|c| c.1))
        }
        MrJob::Cc(_) => {
            let (labels, report) = kith_analytics::mr_components(&ig, &config)?;
            let seconds = start.elapsed().as_secs_f64();
            let check = args.verify.then(|| {
                let t = Instant::now();
                let same =
                    pool.install(|| kith_analytics::components_label_propagation(&ig).0) == labels;
                (same, t.elapsed().as_secs_f64())
            });
            let (components, largest) = kith_analytics::summarize(&labels);
            let summary = json!({"components": components, "largest": largest, "seconds": seconds});
            (summary, report, check.map(|c| c.0), check.map(|c| c.1))
        }
        MrJob::Triangles(_) => {
            let (per, total, report) = kith_analytics::mr_triangles(&ig, &config)?;
            let seconds = start.elapsed().as_secs_f64();
            let check = args.verify.then(|| {
                let t = Instant::now();
                let same = pool.install(|| kith_analytics::triangles(&ig).0) == per;
                (same, t.elapsed().as_secs_f64())
            });
            let summary = json!({"triangles": total, "seconds": seconds});
            (summary, report, check.map(|c| c.0), check.map(|c| c.1))
        }
    };
    busy.finish_and_clear();
    let mut out = json!({
        "algorithm": format!("mr {name}"),
        "users": graph.num_nodes(),
        "edges": graph.num_edges(),
        "threads": 1,
        "memory_mb": args.memory_mb,
        "spill_percent": args.spill_percent,
        "sort_factor": args.sort_factor,
        "parallel_copies": args.parallel_copies,
    });
    if name == "mutual-friends" {
        out["jobs"] = json!(if three { 3 } else { 1 });
    }
    for (k, v) in summary.as_object().expect("object") {
        out[k] = v.clone();
    }
    for (k, v) in mr_report_json(&report).as_object().expect("object") {
        out[k] = v.clone();
    }
    if let Some(same) = same_as_vertex_program {
        out["verified"] = json!(same);
        out["vertex_program_s"] = json!(vp_s);
        out["vertex_program_threads"] = json!(threads);
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print_table(name, &out, &report);
    }
    ensure!(
        same_as_vertex_program != Some(false),
        "mr {name}: the result differs from the vertex program's"
    );
    Ok(())
}

fn print_table(name: &str, out: &Value, report: &JobReport) {
    println!(
        "mr {name} on {} users, {} edges, {} MiB shuffle budget: {:.3} s",
        out["users"],
        out["edges"],
        out["memory_mb"],
        out["seconds"].as_f64().unwrap_or(0.0)
    );
    println!(
        "  {:<36} {:>9} {:>9} {:>9} {:>9} {:>6} {:>10} {:>10}",
        "round", "map s", "shuffle s", "merge s", "reduce s", "runs", "read MiB", "write MiB"
    );
    let mb = |b: u64| b as f64 / f64::from(1u32 << 20);
    for r in &report.rounds {
        let p = r.phases;
        println!(
            "  {:<36} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>6} {:>10.1} {:>10.1}",
            r.name,
            p.map_s,
            p.shuffle_s,
            p.merge_s,
            p.reduce_s,
            r.spill_runs,
            mb(r.io.read_bytes),
            mb(r.io.written_bytes)
        );
    }
    for key in ["triangles", "components", "largest", "friendships", "total_common"] {
        if let Some(v) = out.get(key) {
            println!("  {key}: {v}");
        }
    }
    println!(
        "  io: {:.1} MiB read, {:.1} MiB written, {:.0}% sequential",
        mb(report.io.read_bytes),
        mb(report.io.written_bytes),
        100.0 * report.io.sequential_fraction()
    );
    println!("  recommendation: {}", report.recommendation());
    if let Some(v) = out.get("verified") {
        println!("  verified against the vertex program: {v} ({:.3} s)", out["vertex_program_s"]);
    }
}

/// Runs job `name` as this process's part of `cluster`; process 0 prints the report.
fn run_distributed(name: &str, three: bool, args: &MrArgs, cluster: &Cluster) -> Result<()> {
    let graph = args.input.load_undirected()?;
    let ig = Arc::new(InGraph::new(&graph));
    let job = match name {
        "mutual-friends" if three => kith_distributed::MrJob::MutualFriends3,
        "mutual-friends" => kith_distributed::MrJob::MutualFriends,
        "cc" => kith_distributed::MrJob::Components,
        _ => kith_distributed::MrJob::Triangles,
    };
    let Some((output, report)) = kith_distributed::run_mr(Arc::clone(&ig), job, cluster)? else {
        return Ok(());
    };
    let seconds = report.seconds;
    let t = Instant::now();
    let (mut out, verified) = match &output {
        MrOutput::MutualFriends(mf) => (
            json!({"friendships": mf.len(), "total_common": mf.total()}),
            args.verify.then(|| kith_analytics::mutual_friends(&ig).0 == *mf),
        ),
        MrOutput::Components(labels) => {
            let (components, largest) = kith_analytics::summarize(labels);
            (
                json!({"components": components, "largest": largest}),
                args.verify.then(|| kith_analytics::components_union_find(&ig) == *labels),
            )
        }
        MrOutput::Triangles(per, total) => (
            json!({"triangles": total}),
            args.verify.then(|| kith_analytics::triangles(&ig).0 == *per),
        ),
    };
    for (k, v) in [
        ("algorithm", json!(format!("mr {name}"))),
        ("users", json!(graph.num_nodes())),
        ("edges", json!(graph.num_edges())),
        ("seconds", json!(seconds)),
        ("processes", json!(cluster.processes())),
        ("threads_per_process", json!(cluster.threads)),
        ("workers", json!(report.workers)),
        (
            "phases",
            json!({"map_s": report.map_s, "shuffle_s": report.shuffle_s,
                   "merge_s": report.merge_s, "reduce_s": report.reduce_s}),
        ),
        ("shuffled_bytes", json!(report.shuffled_bytes)),
        ("rounds", json!(report.rounds)),
    ] {
        out[k] = v;
    }
    if let Some(v) = verified {
        out["verified"] = json!(v);
        out["vertex_program_s"] = json!(t.elapsed().as_secs_f64());
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print_distributed_table(name, &out, &report);
    }
    ensure!(verified != Some(false), "mr {name}: the result differs from the vertex program's");
    Ok(())
}

fn print_distributed_table(name: &str, out: &Value, report: &MrReport) {
    println!(
        "mr {name} on {} users, {} edges, {} workers: {:.3} s",
        out["users"],
        out["edges"],
        report.workers,
        out["seconds"].as_f64().unwrap_or(0.0)
    );
    println!(
        "  {:<36} {:>9} {:>9} {:>9} {:>9} {:>12} {:>14}",
        "round (slowest worker)",
        "map s",
        "shuffle s",
        "merge s",
        "reduce s",
        "shuffled MiB",
        "max worker MiB"
    );
    let mb = |b: f64| b / f64::from(1u32 << 20);
    for r in &report.rounds {
        println!(
            "  {:<36} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>12.1} {:>14.1}",
            r.name,
            r.map_s.max,
            r.shuffle_s.max,
            r.merge_s.max,
            r.reduce_s.max,
            mb(r.shuffled_bytes as f64),
            mb(r.worker_bytes.max)
        );
    }
    for key in ["triangles", "components", "largest", "friendships", "total_common", "verified"] {
        if let Some(v) = out.get(key) {
            println!("  {key}: {v}");
        }
    }
}
