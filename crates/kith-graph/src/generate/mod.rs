//! Seeded generators of social-like graphs: LFR (communities and power-law degrees), R-MAT
//! (Graph500's skewed Kronecker graphs) and Barabási–Albert (preferential attachment); and the
//! synthetic directed graphs of the systems papers: Zipf in-degrees (PowerGraph's and the
//! LFGraph thesis's imbalance figures) and log-normal out-degrees (Pregel's SSSP scaling).
//!
//! Every generator is a pure function of its configuration: the same seed gives the same
//! graph on any machine and any number of threads.

mod ba;
mod lfr;
mod lognormal;
mod powerlaw;
mod rmat;
mod streams;
mod zipf;

pub use ba::{BaConfig, barabasi_albert};
pub use lfr::{Lfr, LfrConfig, lfr, mixing};
pub use lognormal::{LogNormalConfig, lognormal};
pub use powerlaw::fit_power_law_exponent;
pub use rmat::{RmatConfig, rmat};
pub use zipf::{ZipfConfig, zipf_in_degree};
