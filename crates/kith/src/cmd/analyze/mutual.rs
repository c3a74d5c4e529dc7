//! `kith analyze mutual-friends`: the mutual friends of every friendship (the list-valued
//! vertex program, also distributed), and people-you-may-know for one user, on the
//! undirected graph; verified against the sequential implementations.

use anyhow::Result;
use clap::Args;
use serde_json::json;

use super::runner::{Algorithm, CommonArgs, Job, Outcome, Ran};

#[derive(Debug, Args)]
pub(crate) struct MutualArgs {
    #[command(flatten)]
    pub(super) common: CommonArgs,
    /// Also rank people this user may know (an original id) by common friends.
    #[arg(long)]
    user: Option<u64>,
    /// How many people to suggest.
    #[arg(long, default_value_t = 10)]
    top: usize,
}

impl MutualArgs {
    pub(super) fn algorithm(&self) -> Algorithm {
        Algorithm {
            name: "mutual-friends",
            undirected: true,
            local_only: None,
            whole_graph: self.user.map(|_| "--user (friends of friends anywhere in the graph)"),
        }
    }
}

pub(super) fn mutual_friends(job: &mut Job<'_>, a: &MutualArgs) -> Result<Option<Outcome>> {
    let user = a.user.map(|uid| job.vertex("--user", uid)).transpose()?;
    let ig = job.ig.clone();
    let (mf, steps) = match job.distribute(&ig, || kith_distributed::MutualLists)? {
        Ran::Here => {
            let (mf, stats) = kith_analytics::mutual_friends(&ig);
            (mf, stats.steps)
        }
        Ran::Cluster(d) => (kith_distributed::mutual_friends(&d.values), d.steps),
        Ran::Elsewhere => return Ok(None),
    };
    let suggestions = user.map(|v| kith_analytics::people_you_may_know(&ig, v, a.top));
    let verified = job.verify.then(|| {
        mf == kith_analytics::mutual_friends_sequential(&ig)
            && user.is_none_or(|v| {
                suggestions.as_ref()
                    == Some(&kith_analytics::people_you_may_know_sequential(&ig, v, a.top))
            })
    });
    let ids = ig.original_ids();
    let most = mf.iter().max_by(|x, y| x.1.len().cmp(&y.1.len()).then(y.0.cmp(&x.0)));
    // A friendship as its two original ids, the smaller first.
    let pair = |(p, q): (u32, u32)| {
        let (a, b) = (ids[p as usize], ids[q as usize]);
        (a.min(b), a.max(b))
    };
    let mut summary = json!({
        "friendships": mf.len(),
        "total_common": mf.total(),
        "max_common": most.map(|(p, l)| {
            let (a, b) = pair(p);
            json!({"a": a, "b": b, "common": l.len()})
        }),
    });
    if let (Some(uid), Some(s)) = (a.user, &suggestions) {
        summary["user"] = json!(uid);
        summary["people_you_may_know"] =
            s.iter().map(|&(w, c)| json!({"uid": ids[w as usize], "common": c})).collect();
    }
    let rows = job.rows(|| {
        let mut rows: Vec<(u64, u64, String)> = mf
            .iter()
            .map(|(p, list)| {
                let (a, b) = pair(p);
                let mut common: Vec<u64> = list.iter().map(|&w| ids[w as usize]).collect();
                common.sort_unstable();
                let text: Vec<String> = common.iter().map(u64::to_string).collect();
                (a, b, format!("{a},{b},{},{}", common.len(), text.join(" ")))
            })
            .collect();
        rows.sort_unstable_by_key(|r| (r.0, r.1));
        rows.into_iter().map(|r| r.2).collect()
    });
    Ok(Some(Outcome {
        summary,
        header: "a,b,count,common_friends",
        rows,
        verified,
        steps: Some(steps),
    }))
}
