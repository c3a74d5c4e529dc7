//! `kith-analytics`: graph analytics on one machine.
//!
//! What it is: LFGraph's vertex-program engine (in-neighbours only, real and shadow values,
//! changed flags, sub-shards on rayon threads, compute and exchange as separate phases) and
//! programs on it: PageRank (LFGraph's and the normalised formulation), hop distances,
//! connected components by label propagation (with a union-find fast path), and triangle
//! counting by degree-ordered merge intersection. Each has a sequential verifier.
//!
//! Also: local and average clustering coefficients, and k-core decomposition (the h-index
//! vertex program, with Batagelj–Zaversnik peeling as the verifier).
//!
//! Also: weighted SSSP, mutual friends and people-you-may-know, and the complex-network
//! study's MapReduce jobs on a spilling engine (written against [`MrEngine`]).
//!
//! What it is not: distributed. `kith-distributed` runs these programs and jobs on timely
//! workers over TCP.

mod cc;
mod clustering;
mod engine;
mod error;
mod kcore;
mod mr;
mod mutual;
mod pagerank;
mod sssp;
mod tiles;
mod triangles;
mod weights;

pub use cc::{components_label_propagation, components_union_find, summarize};
pub use clustering::clustering;
pub use engine::InGraph;
pub use error::{Error, Result};
pub use kcore::{core_numbers, core_numbers_sequential};
pub use mr::{
    Emit, Group, Input, JobReport, MrConfig, MrEngine, components_job, mr_components,
    mr_mutual_friends, mr_mutual_friends_3, mr_triangles, mutual_friends_3_job, mutual_friends_job,
    triangles_job,
};
pub use mutual::{
    MutualFriends, mutual_friends, mutual_friends_sequential, people_you_may_know,
    people_you_may_know_sequential,
};
pub use pagerank::{
    Formulation, PageRankConfig, Precision, contribution, next_rank, pagerank, pagerank_sequential,
    pagerank_vertex_program, sum_contributions,
};
pub use sssp::{
    UNREACHABLE, next_distance, next_hops, sssp, sssp_sequential, sssp_weighted,
    sssp_weighted_sequential,
};
pub use triangles::{triangle_count, triangles, triangles_sequential, triangles_vertex_program};
pub use weights::read_weights;

#[cfg(test)]
mod tests;
