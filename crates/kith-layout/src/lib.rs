//! `kith-layout`: where each user's record goes, so that friends sit next to each other on
//! disk (after Bondhu, Hoque & Gupta).
//!
//! What it is: community detection (METIS k-way partitioning, Louvain modularity), Bondhu's
//! greedy linear arrangement inside and across communities, the baseline orderings (input,
//! random, degree, organ-pipe, BFS, reverse Cuthill–McKee, Gorder), kith's own page-aware
//! method (`pageaware/`), the cost metrics (linear arrangement, per-user cost, log-gap, pages
//! per friend list), and the layout file format.
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
mod community;
mod compute;
mod config;
mod error;
mod example;
mod gorder;
mod greedy;
mod layout;
pub mod metrics;
mod pageaware;

pub use compute::{CommunityReport, compute};
pub use config::{LayoutConfig, Method, Objective};
pub use error::{Error, Result};
pub use example::paper_example;
pub use layout::{Layout, read_layout, write_layout, write_layout_with};
pub use metrics::{evaluate, la_cost, log_gap_cost};
