//! `kith analyze kcore`: core numbers on the undirected graph by the h-index vertex
//! program, verified against peeling. It has no distributed form.

use anyhow::Result;
use serde_json::json;

use super::runner::{Algorithm, Job, Outcome};

pub(super) const KCORE: Algorithm =
    Algorithm { name: "kcore", undirected: true, local_only: Some("kcore"), whole_graph: None };

pub(super) fn kcore(job: &mut Job<'_>) -> Result<Option<Outcome>> {
    let ig = &job.ig;
    let (cores, stats) = kith_analytics::core_numbers(ig);
    let verified = job.verify.then(|| cores == kith_analytics::core_numbers_sequential(ig));
    let max = cores.iter().copied().max().unwrap_or(0);
    let in_max = cores.iter().filter(|&&c| c == max).count();
    let ids = ig.original_ids();
    Ok(Some(Outcome {
        summary: json!({"max_core": max, "max_core_users": in_max}),
        header: "uid,value",
        rows: job
            .rows(|| cores.iter().enumerate().map(|(v, c)| format!("{},{c}", ids[v])).collect()),
        verified,
        steps: Some(stats.steps),
    }))
}
