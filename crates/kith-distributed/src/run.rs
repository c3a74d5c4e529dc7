//! Running a vertex program on a cluster: the process's entry point [`run`], which shares the
//! loaded graph with this process's workers and starts the worker loop on each.

use std::sync::Arc;

use kith_analytics::InGraph;

use crate::cluster::{Cluster, execute};
use crate::engine::{Output, Program, WorkerConfig, run_worker};
use crate::error::Result;
use crate::part::Shared;

/// Runs `program` on `graph` as process `cluster.process` of the cluster: every process
/// calls this with the same graph and program. Returns the values and the report on
/// process 0, `None` on the others.
///
/// # Errors
/// The cluster cannot form (a process unreachable within the connect timeout, an address
/// in use), the processes run different things, or a worker fails. A process that dies
/// mid-run ends this one with a message (see [`Cluster`]).
pub fn run<P: Program + Clone + Sync>(
    graph: Arc<InGraph>,
    program: P,
    cluster: &Cluster,
) -> Result<Option<Output<P::Value>>> {
    // Links counted by out-degree, which every process holds whole even when it read only
    // its own parts' in-links.
    let links: u64 = (0..graph.num_vertices() as u32).map(|v| u64::from(graph.out_degree(v))).sum();
    let config = WorkerConfig {
        mode: cluster.mode,
        wait_timeout: cluster.wait_timeout,
        description: format!(
            "{} processes x {} threads, {} exchange, {} vertices, {links} links{}",
            cluster.processes(),
            cluster.threads,
            cluster.mode.name(),
            graph.num_vertices(),
            if graph.is_weighted() { ", weighted" } else { "" }
        ),
    };
    let shared = Arc::new(Shared::new(graph, cluster.threads));
    execute(cluster, move |worker| run_worker(worker, &shared, program.clone(), &config))
}
