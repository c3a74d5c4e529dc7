//! Community detection for layouts: METIS k-way partitioning (`parcom`) and Louvain
//! modularity optimisation (`modcom`), and the modularity of any partition
//! (`partition.rs`). This file only wires them together.

mod louvain;
mod metis;
mod partition;

pub(crate) use louvain::louvain;
pub(crate) use metis::metis_partition;
pub use partition::Partition;
pub(crate) use partition::modularity;
