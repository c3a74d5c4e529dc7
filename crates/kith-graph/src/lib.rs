//! `kith-graph`: the bottom layer of kith. Social graphs in memory and on disk.
//!
//! What it is: dense `u32` vertex ids with the mapping back to the original `u64` ids; an
//! immutable CSR [`Graph`] with sorted, deduplicated neighbour lists (and in-adjacency for
//! directed graphs); streaming loaders for SNAP, KONECT, MatrixMarket and CSV edge lists (plain,
//! gzip, zip) and SNAP ego-network archives; the `.kgraph` snapshot; seeded generators (LFR,
//! R-MAT, Barabási–Albert); summary statistics; and Bondhu's edge-weight models.
//!
//! What it is not: a mutable graph, a store, or an algorithm library. Layout, storage and
//! analytics live in the crates above it; this crate depends on none of them.
//!
//! # Example
//! ```
//! use kith_graph::generate::{LfrConfig, lfr};
//! use kith_graph::{WeightModel, edge_weights, stats};
//!
//! let lfr = lfr(&LfrConfig { nodes: 1_000, avg_degree: 10.0, seed: 7, ..Default::default() })?;
//! let summary = stats(&lfr.graph);
//! assert_eq!(summary.nodes, 1_000);
//! let weights = edge_weights(&lfr.graph, WeightModel::Overlap)?;
//! assert_eq!(weights.len() as u64, 2 * summary.edges);
//! # Ok::<(), kith_graph::Error>(())
//! ```

mod csr;
pub mod durable;
mod error;
pub mod generate;
mod graph;
pub mod hint;
mod load;
pub mod progress;
mod snapshot;
mod snapshot_check;
mod stats;
mod weights;
mod write;

pub use csr::VertexId;
pub use error::{Error, Result};
pub use graph::{Cleaning, Graph};
pub use load::{Format, LoadConfig, load};
pub use stats::{DegreeSummary, GraphStats, stats};
pub use weights::{WeightModel, edge_weights, for_each_common, intersection_size};
pub use write::{read_communities, save, save_with, write_communities};
