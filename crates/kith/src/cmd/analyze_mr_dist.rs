//! `kith analyze mr <job> --processes P | --hostfile F --process i`: the study's MapReduce
//! jobs on kith-distributed's timely workers, with per-round phase times (max and mean over
//! workers) and the bytes each round shuffled between workers.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Result, ensure};
use kith_analytics::InGraph;
use kith_distributed::{Cluster, MrJob, MrOutput, MrReport};
use serde_json::json;

use super::analyze_mr::MrArgs;

/// Runs job `name` as this process's part of `cluster`; process 0 prints the report.
pub(crate) fn run(name: &str, args: &MrArgs, cluster: &Cluster) -> Result<()> {
    let graph = args.input.load_undirected()?;
    let ig = Arc::new(InGraph::new(&graph));
    let job = match name {
        "mutual-friends" => MrJob::MutualFriends,
        "cc" => MrJob::Components,
        _ => MrJob::Triangles,
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
        print_table(name, &out, &report);
    }
    ensure!(verified != Some(false), "mr {name}: the result differs from the vertex program's");
    Ok(())
}

fn print_table(name: &str, out: &serde_json::Value, report: &MrReport) {
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
