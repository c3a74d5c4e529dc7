//! A partition (from `kith graph partition`) as the input of `kith analyze <algorithm>`:
//! a process of a cluster reads only its own workers' parts, so no process holds the whole
//! graph; on one machine every part is read, which is the whole graph again. What needs the
//! whole graph on a cluster (`--verify`, `--order`) is refused.

use std::time::Instant;

use anyhow::{Result, bail, ensure};
use kith_analytics::InGraph;
use kith_distributed::{Cluster, PartitionMeta};
use kith_graph::Graph;
use serde_json::{Value, json};

use super::runner::{Algorithm, CommonArgs};

/// A run's input, loaded.
pub(super) enum Input {
    /// A graph file, whole.
    Whole(Graph),
    /// This process's parts of a partition.
    Parts {
        ig: InGraph,
        /// What was read, for the report.
        report: Value,
        shape: Shape,
    },
}

/// The size and direction of the graph a run is on.
pub(super) struct Shape {
    pub(super) users: u64,
    pub(super) edges: u64,
    pub(super) directed: bool,
}

impl Input {
    pub(super) fn shape(&self) -> Shape {
        match self {
            Input::Whole(g) => Shape {
                users: g.num_nodes() as u64,
                edges: g.num_edges(),
                directed: g.is_directed(),
            },
            Input::Parts { shape, .. } => {
                Shape { users: shape.users, edges: shape.edges, directed: shape.directed }
            }
        }
    }
}

/// The partition `common` names, after refusing what it cannot give `algorithm` on
/// `cluster` (processes, threads per process; `None` on one machine): what a launcher checks
/// before starting processes, and each process again.
pub(super) fn check(
    common: &CommonArgs,
    algorithm: &Algorithm,
    cluster: Option<(usize, usize)>,
) -> Result<PartitionMeta> {
    let dir = &common.input.graph;
    let shown = dir.display();
    let meta = kith_distributed::read_meta(dir)?;
    ensure!(
        common.input.format.is_none() && common.input.member.is_none(),
        "--format and --member name a graph file's contents; {shown} is a partition"
    );
    ensure!(
        !common.input.directed || meta.directed,
        "{shown} was partitioned without --directed (an undirected graph); partition the \
         graph file again with --directed to keep edge direction"
    );
    ensure!(
        !algorithm.undirected || !meta.directed,
        "{} runs on friendships, but {shown} was partitioned with --directed; partition the \
         graph file without --directed for it",
        algorithm.name
    );
    ensure!(
        common.order.is_none(),
        "--order relabels the whole graph, which a partition's parts are cut from; run on the \
         graph file to use it"
    );
    if let Some((processes, threads)) = cluster {
        let workers = processes
            .checked_mul(threads)
            .filter(|&w| w <= u32::MAX as usize)
            .ok_or_else(|| anyhow::anyhow!("{processes} processes × {threads} threads"))?;
        if meta.parts != workers {
            bail!(
                "{shown} has {} parts but the cluster has {workers} workers ({processes} \
                 processes × {threads} threads); partition with --parts {workers} or run {} \
                 workers",
                meta.parts,
                meta.parts
            );
        }
        if let Some(what) = algorithm.whole_graph.filter(|_| processes > 1) {
            bail!(
                "{what} needs the whole graph, which no process of a partitioned run holds; \
                 give the graph file, or run the partition on one machine"
            );
        }
        ensure!(
            !common.verify || processes == 1,
            "--verify compares with the whole graph, which no process of a partitioned run \
             holds; verify on one machine (without --processes) instead"
        );
    }
    Ok(meta)
}

/// Reads this process's parts of the partition `common` names (every part off a cluster),
/// after [`check`].
pub(super) fn read(
    common: &CommonArgs,
    algorithm: &Algorithm,
    cluster: Option<&Cluster>,
) -> Result<Input> {
    let meta = check(common, algorithm, cluster.map(|c| (c.processes(), c.threads)))?;
    let parts = match cluster {
        None => 0..meta.parts,
        Some(c) => c.process * c.threads..(c.process + 1) * c.threads,
    };
    let t = Instant::now();
    let ig = kith_distributed::read_parts(&common.input.graph, &meta, parts.clone())?;
    let report = json!({"dir": common.input.graph.display().to_string(), "parts": meta.parts,
        "parts_read": [parts.start, parts.end], "in_links_read": ig.num_in_links(),
        "read_s": t.elapsed().as_secs_f64()});
    let shape = Shape { users: meta.users, edges: meta.edges, directed: meta.directed };
    Ok(Input::Parts { ig, report, shape })
}
