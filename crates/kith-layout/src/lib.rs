//! `kith-layout`: where each user's record goes, so that friends sit next to each other on
//! disk (after Bondhu, Hoque & Gupta).
//!
//! What it is: community detection (METIS k-way partitioning, Louvain modularity), Bondhu's
//! greedy linear arrangement inside and across communities, the baseline orderings (input,
//! random, degree, organ-pipe, BFS, reverse Cuthill–McKee, Gorder), kith's own page-aware
//! method, the cost metrics (linear arrangement, per-user cost, log-gap, pages per friend
//! list), and the layout file format.
//!
//! What it is not: storage. A [`Layout`] is a permutation of a graph's vertices; the store
//! above this crate turns it into record keys.
//!
//! # Example
//! ```
//! use kith_layout::{LayoutConfig, Method, compute, la_cost, paper_example};
//!
//! // Bondhu's 7-node example: input order costs 18; kith's LA objective finds the optimum 13.
//! let g = paper_example();
//! let config = LayoutConfig {
//!     method: Method::Kith,
//!     objective: kith_layout::Objective::La,
//!     ..Default::default()
//! };
//! let layout = compute(&g, &config)?.layout;
//! assert_eq!(la_cost(&g, &layout), 13);
//! # Ok::<(), kith_layout::Error>(())
//! ```

mod arrange;
mod baselines;
pub mod community;
mod error;
mod gorder;
mod greedy;
mod kith;
mod layout;
mod method;
pub mod metrics;

pub use arrange::arrange_communities;
pub use baselines::{
    bfs_order, default_order, degree_order, organ_pipe_order, random_order, rcm_order,
};
pub use error::{Error, Result};
pub use gorder::{DEFAULT_WINDOW, gorder_order};
pub use layout::{Layout, read_layout, write_layout};
pub use method::{CommunityReport, Computed, LayoutConfig, Method, Objective, compute};
pub use metrics::{Evaluation, PageStats, evaluate, la_cost, log_gap_cost, weighted_la_cost};

use kith_graph::Graph;

/// Bondhu's worked example: 7 users (ids 1–7) and 9 friendships 1-2, 1-3, 1-5, 2-3, 2-4,
/// 3-4, 3-5, 4-6, 4-7. Input order costs 18; the optimum is 13; the paper's own layout
/// {2,1,3,5,7,6,4} costs 20.
pub fn paper_example() -> Graph {
    let edges = [(1, 2), (1, 3), (1, 5), (2, 3), (2, 4), (3, 4), (3, 5), (4, 6), (4, 7)];
    Graph::from_edges(
        (1..=7).collect(),
        false,
        edges.iter().map(|&(a, b)| (a - 1, b - 1)).collect(),
    )
}
