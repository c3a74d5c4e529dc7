//! `kith-distributed`: kith's analytics on timely-dataflow, for graphs one machine cannot
//! hold or compute fast enough.
//!
//! What it is: LFGraph's engine on timely workers (threads × processes over TCP). Vertices
//! are hash-partitioned over workers; a worker keeps only its vertices' in-links; before the
//! first step workers exchange subscribe lists, which their receivers keep as publish lists;
//! each step computes locally and then sends every changed value once per subscribing worker
//! (fetch-once), or, for comparison, once per cross-worker edge (Pregel without combiners).
//! On it run PageRank, hop and weighted SSSP, connected components, and the list-valued
//! triangle and mutual-friends programs, equal to `kith-analytics`' results. Also: LFGraph's
//! communication model (values per vertex per iteration under Pregel, GraphLab, PowerGraph
//! and LFGraph, and computation balance under hash placement).
//!
//! What it is not: a fault-tolerant system. A process that dies ends the run on every
//! process (with a message), and the run is started again.
//!
//! ```
//! use std::sync::Arc;
//! use kith_analytics::InGraph;
//! use kith_distributed::{Cluster, ExchangeMode, MinLabel, run};
//! use kith_graph::Graph;
//!
//! let g = Graph::from_edges((0..4).collect(), false, vec![(0, 1), (2, 3)]);
//! let cluster = Cluster {
//!     threads: 2,
//!     process: 0,
//!     addresses: vec!["127.0.0.1:0".into()],
//!     mode: ExchangeMode::FetchOnce,
//!     connect_timeout: std::time::Duration::from_secs(10),
//!     wait_timeout: std::time::Duration::from_secs(10),
//! };
//! let out = run(Arc::new(InGraph::new(&g)), MinLabel, &cluster).unwrap().unwrap();
//! assert_eq!(out.values, [0, 0, 2, 2]);
//! ```

mod cluster;
mod comm;
mod engine;
mod mr;
mod net;
mod part;
mod programs;
mod report;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use kith_analytics::{InGraph, MutualFriends};

pub use cluster::{Cluster, loopback_addresses, read_hostfile};
pub use comm::{CommModel, Overhead, overhead};
pub use engine::{Ctx, Output, Program, Totals};
pub use mr::{MrJob, MrOutput, MrReport, MrRoundReport, Records, run_mr};
pub use part::{ExchangeMode, Part, owner};
pub use programs::{Distances, Hops, Lists, MinLabel, MutualLists, PageRank, TriangleLists};
pub use report::{Exchange, Report, Spread, StepReport, WorkerStep};

/// An error of a distributed run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// A hostfile line is malformed.
    #[error("{path}:{line}: {message}")]
    Hostfile {
        /// The hostfile.
        path: PathBuf,
        /// The line, from 1 (0: the file as a whole).
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// The cluster could not start or a worker failed.
    #[error("{0}")]
    Cluster(String),
    /// An argument the run cannot accept.
    #[error("{0}")]
    InvalidArgument(String),
}

/// A result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The loaded graph, shared by this process's workers until each has built its part.
struct Shared {
    graph: Mutex<Option<Arc<InGraph>>>,
    remaining: AtomicUsize,
}

impl Shared {
    fn take(&self) -> Arc<InGraph> {
        let graph = self.graph.lock().expect("graph lock").clone();
        graph.expect("every worker takes the graph once")
    }

    /// Called by each worker once its part is built: the last one drops the process's copy.
    fn release(&self) {
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.graph.lock().expect("graph lock").take();
        }
    }
}

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
    let config = engine::WorkerConfig {
        mode: cluster.mode,
        wait_timeout: cluster.wait_timeout,
        description: format!(
            "{} processes x {} threads, {} exchange, {} vertices, {} in-links{}",
            cluster.processes(),
            cluster.threads,
            cluster.mode.name(),
            graph.num_vertices(),
            graph.num_in_links(),
            if graph.is_weighted() { ", weighted" } else { "" }
        ),
    };
    let shared = Arc::new(Shared {
        graph: Mutex::new(Some(graph)),
        remaining: AtomicUsize::new(cluster.threads),
    });
    cluster::execute(cluster, move |worker| {
        engine::run_worker(worker, &shared, program.clone(), &config)
    })
}

/// Triangles through each vertex from [`TriangleLists`]' values.
pub fn triangle_counts(values: &[Lists]) -> Vec<u64> {
    values.iter().map(|v| if let Lists::Count(c) = v { *c } else { 0 }).collect()
}

/// Every friendship's common friends from [`MutualLists`]' values (global dense ids).
pub fn mutual_friends(values: &[Lists]) -> MutualFriends {
    let mut lists = Vec::new();
    for (a, value) in values.iter().enumerate() {
        let Lists::Common(flat) = value else { continue };
        let mut i = 0;
        while i + 1 < flat.len() {
            let (b, count) = (flat[i], flat[i + 1] as usize);
            lists.push(((a as u32, b), flat[i + 2..i + 2 + count].to_vec()));
            i += 2 + count;
        }
    }
    MutualFriends::from_lists(lists)
}

#[cfg(test)]
mod tests;
