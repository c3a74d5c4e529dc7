//! `kith analyze pagerank`: the normalised formulation with dangling mass (networkx's), or
//! LFGraph's; verified against the sequential implementation, or on a cluster against the
//! single-machine engine.

use anyhow::{Result, ensure};
use clap::Args;
use kith_analytics::{Formulation, PageRankConfig, Precision};
use serde_json::{Value, json};

use super::runner::{Algorithm, CommonArgs, Job, Outcome, Ran};

pub(super) const PAGERANK: Algorithm =
    Algorithm { name: "pagerank", undirected: false, local_only: None, whole_graph: None };

#[derive(Debug, Args)]
pub(crate) struct PageRankArgs {
    #[command(flatten)]
    pub(super) common: CommonArgs,
    /// At most this many iterations.
    #[arg(long, default_value_t = 20)]
    iterations: usize,
    /// Stop when a step changes the ranks by less than this in L1 (0: all iterations).
    #[arg(long, default_value_t = 0.0)]
    tolerance: f64,
    /// Damping factor.
    #[arg(long, default_value_t = 0.85)]
    damping: f64,
    /// normalized (networkx's) or lfgraph.
    #[arg(long, default_value = "normalized", value_parser = ["normalized", "lfgraph"])]
    formulation: String,
    /// How contributions are held between steps: f64 (exact to the order of sums) or f32
    /// (half the bytes read at random; ranks and sums stay f64, the L1 error is about 1e-7).
    #[arg(long, default_value = "f64", value_parser = ["f64", "f32"])]
    precision: String,
}

pub(super) fn pagerank(job: &mut Job<'_>, a: &PageRankArgs) -> Result<Option<Outcome>> {
    ensure!(a.iterations > 0, "--iterations must be at least 1");
    ensure!(a.tolerance >= 0.0 && a.tolerance.is_finite(), "--tolerance must not be negative");
    ensure!(a.damping > 0.0 && a.damping < 1.0, "--damping must be between 0 and 1");
    let formulation =
        if a.formulation == "lfgraph" { Formulation::LfGraph } else { Formulation::Normalized };
    let config = PageRankConfig {
        formulation,
        damping: a.damping,
        iterations: a.iterations,
        tolerance: a.tolerance,
        precision: if a.precision == "f32" { Precision::F32 } else { Precision::F64 },
    };
    ensure!(
        config.precision == Precision::F64 || !job.distributed(),
        "--precision f32 runs on one machine only (the distributed engine exchanges f64)"
    );
    let ig = job.ig.clone();
    let n = ig.num_vertices();
    // `run_s`: the steps' wall time (phases and global aggregates; distributed, the initial
    // exchange too).
    let (pr, steps, compute_s, run_s, delta) =
        match job.distribute(&ig, || kith_distributed::PageRank::new(config, n))? {
            Ran::Here => {
                let (pr, stats, delta) = kith_analytics::pagerank(&ig, config);
                (pr, stats.steps, stats.compute_s, stats.steps_s, delta)
            }
            Ran::Cluster(d) => (d.values, d.steps, d.compute_s, d.steps_s, d.last.delta),
            Ran::Elsewhere => return Ok(None),
        };
    let verified = job.verify.then(|| {
        if job.distributed() {
            // Equal to the single-machine engine, up to the order of global sums.
            let (want, _, _) = kith_analytics::pagerank(&ig, config);
            pr.iter().zip(&want).all(|(x, y)| (x - y).abs() <= 1e-12 * y.abs())
        } else {
            let want = kith_analytics::pagerank_sequential(&ig, config, steps);
            let within = match config.precision {
                Precision::F64 => 1e-9 * pr.len().max(1) as f64,
                // f32 contributions: about 6e-8 relative each.
                Precision::F32 => 1e-6 * want.iter().sum::<f64>(),
            };
            pr.iter().zip(&want).map(|(x, y)| (x - y).abs()).sum::<f64>() < within
        }
    });
    let ids = ig.original_ids();
    // Every link, counted by out-degree: a process of a partitioned run holds only its own
    // parts' in-links but every out-degree.
    let links: u64 = (0..n as u32).map(|v| u64::from(ig.out_degree(v))).sum();
    let mut order: Vec<usize> = (0..pr.len()).collect();
    order.sort_by(|&x, &y| pr[y].total_cmp(&pr[x]).then(x.cmp(&y)));
    let top: Vec<Value> =
        order.iter().take(10).map(|&v| json!({"uid": ids[v], "rank": pr[v]})).collect();
    Ok(Some(Outcome {
        summary: json!({"top": top, "iterations": steps, "last_delta": delta,
            "formulation": a.formulation, "run_s": run_s,
            "edges_per_s": links as f64 * steps as f64 / compute_s.max(1e-12)}),
        header: "uid,value",
        rows: job.rows(|| pr.iter().enumerate().map(|(v, r)| format!("{},{r}", ids[v])).collect()),
        verified,
        steps: Some(steps),
    }))
}
