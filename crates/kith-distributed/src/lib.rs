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
mod error;
mod mr;
mod net;
mod part;
mod partition;
mod programs;
mod report;
mod run;

pub use cluster::{Cluster, loopback_addresses, read_hostfile};
pub use comm::{CommModel, Overhead, overhead};
pub use engine::{Output, Program, Totals};
pub use error::{Error, Result};
pub use mr::{MrJob, MrOutput, MrReport, run_mr};
pub use part::ExchangeMode;
pub use partition::{
    PartitionMeta, is_partition, part_path, read_meta, read_parts, write_partition,
};
pub use programs::{
    Distances, Hops, MinLabel, MutualLists, PageRank, TriangleLists, mutual_friends,
    triangle_counts,
};
pub use report::{Report, Spread};
pub use run::run;

#[cfg(test)]
mod tests;
