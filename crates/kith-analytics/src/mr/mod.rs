//! MapReduce as the complex-network study ran its jobs on one machine: each round maps
//! input records to `(key, value)` pairs, shuffles them (sorts by key in a memory buffer,
//! spilling sorted runs to disk whenever the buffer outgrows its budget), merges the runs
//! (at most `sort_factor` at a time, Hadoop's `io.sort.factor`; the other knobs are Hadoop's too), and reduces each key's
//! values. A round's output is a file of records, the next round's input. Every file
//! operation is logged, so a job reports its per-phase times and an I/O profile — and from
//! the profile, which storage medium suits it.
//!
//! Keys are `u64`; values are lists of `u32` (ids, labels, counts). The study's jobs are
//! written against [`MrEngine`], so they also run on other engines (kith-distributed runs
//! them on timely workers).
//!
//! The files: `contract.rs` (what a job sees: [`MrEngine`], [`Emit`], [`Group`], [`Input`]),
//! `local.rs` (the spilling engine: buffer, sorted runs, merge passes, reduce),
//! `records.rs` (the record files it writes), `io.rs` (the logged device), `report.rs`
//! (phases, rounds, the medium's recommendation), `jobs.rs` (the study's Algorithms 1–3).

mod contract;
mod io;
mod jobs;
mod local;
mod records;
mod report;

pub use contract::{Emit, Group, Input, MrEngine};
pub use jobs::{
    components_job, mr_components, mr_mutual_friends, mr_mutual_friends_3, mr_triangles,
    mutual_friends_3_job, mutual_friends_job, triangles_job,
};
pub use local::MrConfig;
pub use report::JobReport;

#[cfg(test)]
mod tests;
