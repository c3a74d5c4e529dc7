//! `kith analyze cc`: connected components (weakly connected for a directed graph), by label
//! propagation (the vertex program, also distributed) or union-find (the fast path, which
//! is the verifier). Each user's label is the smallest original id in its component.

use anyhow::Result;
use clap::Args;
use serde_json::json;

use super::runner::{Algorithm, CommonArgs, Job, Outcome, Ran};

#[derive(Debug, Args)]
pub(crate) struct CcArgs {
    #[command(flatten)]
    pub(super) common: CommonArgs,
    /// label-propagation (the vertex program) or union-find (the fast path).
    #[arg(long, default_value = "label-propagation", value_parser = ["label-propagation", "union-find"])]
    method: String,
}

impl CcArgs {
    pub(super) fn algorithm(&self) -> Algorithm {
        let union_find = self.method == "union-find";
        Algorithm {
            name: "cc",
            undirected: true,
            local_only: union_find.then_some("cc --method union-find"),
            whole_graph: None,
        }
    }
}

pub(super) fn cc(job: &mut Job<'_>, a: &CcArgs) -> Result<Option<Outcome>> {
    let ig = job.ig.clone();
    let (labels, steps) = match job.distribute(&ig, || kith_distributed::MinLabel)? {
        Ran::Cluster(d) => (d.values, Some(d.steps)),
        Ran::Elsewhere => return Ok(None),
        Ran::Here if a.method == "union-find" => (kith_analytics::components_union_find(&ig), None),
        Ran::Here => {
            let (l, s) = kith_analytics::components_label_propagation(&ig);
            (l, Some(s.steps))
        }
    };
    let verified = job.verify.then(|| labels == kith_analytics::components_union_find(&ig));
    let (components, largest) = kith_analytics::summarize(&labels);
    let ids = ig.original_ids();
    Ok(Some(Outcome {
        summary: json!({"components": components, "largest": largest, "method": a.method}),
        header: "uid,value",
        rows: job.rows(|| {
            labels
                .iter()
                .enumerate()
                .map(|(v, &l)| format!("{},{}", ids[v], ids[l as usize]))
                .collect()
        }),
        verified,
        steps,
    }))
}
