//! The MapReduce part of `kith bench analytics`: the study's three jobs on each dataset,
//! their per-phase report beside the vertex program computing the same result.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, ensure};
use kith_analytics::{InGraph, MrConfig};
use kith_graph::LoadConfig;
use serde_json::{Value, json};

use crate::cli::mr_report_json;

/// The study's MapReduce jobs on one dataset beside their vertex programs: mutual friends in
/// one round (`mutual-friends`) and in the study's three jobs (`mutual-friends-3`),
/// components and triangles.
///
/// The vertex programs run on `threads` threads; the jobs' shuffle buffer has `memory_mb`.
pub(super) fn table(path: &Path, name: &str, memory_mb: u64, threads: usize) -> Result<Vec<Value>> {
    let config = LoadConfig { progress: true, ..Default::default() };
    let graph = kith_graph::load(path, &config).with_context(|| format!("loading {name}"))?;
    let graph = if graph.is_directed() { graph.to_undirected() } else { graph };
    let ig = InGraph::new(&graph);
    let spill = tempfile::tempdir()?;
    let mr = MrConfig {
        memory_bytes: memory_mb << 20,
        spill_dir: spill.path().into(),
        input_bytes: std::fs::metadata(path)?.len(),
        ..MrConfig::default()
    };
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;
    let mut rows = Vec::new();
    for job in ["mutual-friends", "mutual-friends-3", "cc", "triangles"] {
        let t = Instant::now();
        let (report, equal, vp_s) = match job {
            "mutual-friends" | "mutual-friends-3" => {
                let (mf, report) = if job == "mutual-friends" {
                    kith_analytics::mr_mutual_friends(&ig, &mr)?
                } else {
                    kith_analytics::mr_mutual_friends_3(&ig, &mr)?
                };
                let t = Instant::now();
                let vp = pool.install(|| kith_analytics::mutual_friends(&ig).0);
                (report, vp == mf, t.elapsed().as_secs_f64())
            }
            "cc" => {
                let (labels, report) = kith_analytics::mr_components(&ig, &mr)?;
                let t = Instant::now();
                let vp = pool.install(|| kith_analytics::components_label_propagation(&ig).0);
                (report, vp == labels, t.elapsed().as_secs_f64())
            }
            _ => {
                let (per, _, report) = kith_analytics::mr_triangles(&ig, &mr)?;
                let t = Instant::now();
                let vp = pool.install(|| kith_analytics::triangles(&ig).0);
                (report, vp == per, t.elapsed().as_secs_f64())
            }
        };
        let seconds = t.elapsed().as_secs_f64() - vp_s;
        ensure!(equal, "mr {job} on {name} differs from the vertex program");
        let mut row = mr_report_json(&report);
        row["dataset"] = json!(name);
        row["job"] = json!(job);
        row["users"] = json!(graph.num_nodes());
        row["edges"] = json!(graph.num_edges());
        row["memory_mb"] = json!(memory_mb);
        row["seconds"] = json!(seconds);
        row["vertex_program_s"] = json!(vp_s);
        row["vertex_program_threads"] = json!(threads);
        row["equal_to_vertex_program"] = json!(equal);
        rows.push(row);
    }
    Ok(rows)
}
