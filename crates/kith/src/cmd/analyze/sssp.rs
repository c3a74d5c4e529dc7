//! `kith analyze sssp`: hop distances from one user along edge direction, or weighted
//! distances with a weight file; verified against the sequential implementations.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use clap::Args;
use kith_analytics::UNREACHABLE;
use kith_graph::VertexId;
use serde_json::json;

use super::runner::{Algorithm, CommonArgs, Job, Outcome, Ran};

#[derive(Debug, Args)]
pub(crate) struct SsspArgs {
    #[command(flatten)]
    pub(super) common: CommonArgs,
    /// The source user (an original id).
    #[arg(long)]
    source: u64,
    /// Weighted distances: `source target weight` lines (the graph file itself when its
    /// third column is a weight). Links not listed weigh 1; negative weights are refused.
    #[arg(long)]
    weights: Option<PathBuf>,
}

impl SsspArgs {
    pub(super) fn algorithm(&self) -> Algorithm {
        Algorithm {
            name: "sssp",
            undirected: false,
            local_only: None,
            whole_graph: self.weights.as_ref().map(|_| "--weights (matched against every link)"),
        }
    }
}

pub(super) fn sssp(job: &mut Job<'_>, a: &SsspArgs) -> Result<Option<Outcome>> {
    let source = job.vertex("--source", a.source)?;
    match &a.weights {
        Some(path) => weighted(job, a, source, path),
        None => hops(job, a, source),
    }
}

fn hops(job: &mut Job<'_>, a: &SsspArgs, source: VertexId) -> Result<Option<Outcome>> {
    let ig = job.ig.clone();
    let (dist, steps) = match job.distribute(&ig, || kith_distributed::Hops { source })? {
        Ran::Here => {
            let (dist, stats) = kith_analytics::sssp(&ig, source);
            (dist, stats.steps)
        }
        Ran::Cluster(d) => (d.values, d.steps),
        Ran::Elsewhere => return Ok(None),
    };
    let verified = job.verify.then(|| dist == kith_analytics::sssp_sequential(&ig, source));
    let reachable = dist.iter().filter(|&&d| d != UNREACHABLE).count();
    let max = dist.iter().filter(|&&d| d != UNREACHABLE).max().copied().unwrap_or(0);
    let ids = ig.original_ids();
    Ok(Some(Outcome {
        summary: json!({"source": a.source, "reachable": reachable, "max_distance": max,
            "weighted": false}),
        header: "uid,value",
        rows: job.rows(|| {
            dist.iter()
                .enumerate()
                .filter(|&(_, &d)| d != UNREACHABLE)
                .map(|(v, d)| format!("{},{d}", ids[v]))
                .collect()
        }),
        verified,
        steps: Some(steps),
    }))
}

fn weighted(
    job: &mut Job<'_>,
    a: &SsspArgs,
    source: VertexId,
    path: &std::path::Path,
) -> Result<Option<Outcome>> {
    let (weighted, read) = kith_analytics::read_weights(&job.ig, job.directed, path)?;
    let weighted = Arc::new(weighted);
    let (dist, steps) =
        match job.distribute(&weighted, || kith_distributed::Distances { source })? {
            Ran::Here => {
                let (dist, stats) = kith_analytics::sssp_weighted(&weighted, source)?;
                (dist, stats.steps)
            }
            Ran::Cluster(d) => (d.values, d.steps),
            Ran::Elsewhere => return Ok(None),
        };
    let verified = job.verify.then(|| {
        kith_analytics::sssp_weighted_sequential(&weighted, source).is_ok_and(|want| want == dist)
    });
    let reached: Vec<f64> = dist.iter().copied().filter(|d| d.is_finite()).collect();
    let max = reached.iter().copied().fold(0.0, f64::max);
    let ids = job.ig.original_ids();
    Ok(Some(Outcome {
        summary: json!({"source": a.source, "reachable": reached.len(), "max_distance": max,
            "weighted": true, "weight_lines": read.lines,
            "links_weighted": read.weighted_links, "links_default_1": read.default_links}),
        header: "uid,value",
        rows: job.rows(|| {
            dist.iter()
                .enumerate()
                .filter(|&(_, d)| d.is_finite())
                .map(|(v, d)| format!("{},{d}", ids[v]))
                .collect()
        }),
        verified,
        steps: Some(steps),
    }))
}
