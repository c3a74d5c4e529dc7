//! `kith analyze triangles` and `kith analyze clustering`, both on the undirected graph:
//! triangles in total and through each user (by degree-ordered merge intersection, or by
//! LFGraph's list-valued vertex program, which also runs distributed), and local
//! clustering coefficients from the per-user triangle counts. Verified against the
//! sequential triangle count.

use anyhow::Result;
use clap::Args;
use serde_json::json;

use super::runner::{Algorithm, CommonArgs, Job, Outcome, Ran};

pub(super) const TRIANGLES: Algorithm =
    Algorithm { name: "triangles", undirected: true, local_only: None, whole_graph: None };

pub(super) const CLUSTERING: Algorithm = Algorithm {
    name: "clustering",
    undirected: true,
    local_only: Some("clustering"),
    whole_graph: None,
};

#[derive(Debug, Args)]
pub(crate) struct TriangleArgs {
    #[command(flatten)]
    pub(super) common: CommonArgs,
    /// merge (degree-ordered merge intersection, the fast path) or lists (LFGraph's
    /// list-valued vertex program).
    #[arg(long, default_value = "merge", value_parser = ["merge", "lists"])]
    method: String,
}

pub(super) fn triangles(job: &mut Job<'_>, a: &TriangleArgs) -> Result<Option<Outcome>> {
    let ig = job.ig.clone();
    let (per, total, steps) = match job.distribute(&ig, || kith_distributed::TriangleLists)? {
        Ran::Cluster(d) => {
            let per = kith_distributed::triangle_counts(&d.values);
            let total = per.iter().sum::<u64>() / 3;
            (per, total, Some(d.steps))
        }
        Ran::Elsewhere => return Ok(None),
        Ran::Here if a.method == "lists" => {
            let (per, stats) = kith_analytics::triangles_vertex_program(&ig);
            let total = per.iter().sum::<u64>() / 3;
            (per, total, Some(stats.steps))
        }
        Ran::Here => {
            let (per, total) = kith_analytics::triangles(&ig);
            (per, total, None)
        }
    };
    let verified = job.verify.then(|| per == kith_analytics::triangles_sequential(&ig));
    let method = if job.distributed() { "lists" } else { a.method.as_str() };
    let ids = ig.original_ids();
    Ok(Some(Outcome {
        summary: json!({"triangles": total, "method": method}),
        header: "uid,value",
        rows: job.rows(|| per.iter().enumerate().map(|(v, t)| format!("{},{t}", ids[v])).collect()),
        verified,
        steps,
    }))
}

pub(super) fn clustering(job: &mut Job<'_>) -> Result<Option<Outcome>> {
    let ig = &job.ig;
    let (per, _) = kith_analytics::triangles(ig);
    let (local, average) = kith_analytics::clustering(ig, &per);
    let verified = job.verify.then(|| {
        let (want, _) = kith_analytics::clustering(ig, &kith_analytics::triangles_sequential(ig));
        want == local
    });
    let ids = ig.original_ids();
    Ok(Some(Outcome {
        summary: json!({"average_clustering": average}),
        header: "uid,value",
        rows: job
            .rows(|| local.iter().enumerate().map(|(v, c)| format!("{},{c}", ids[v])).collect()),
        verified,
        steps: None,
    }))
}
