//! Seeded generators of social-like graphs: LFR (communities and power-law degrees), R-MAT
//! (Graph500's skewed Kronecker graphs) and Barabási–Albert (preferential attachment).
//!
//! Every generator is a pure function of its configuration: the same seed gives the same
//! graph on any machine and any number of threads.

mod ba;
mod lfr;
mod powerlaw;
mod rmat;
mod streams;

pub use ba::{BaConfig, barabasi_albert};
pub use lfr::{Lfr, LfrConfig, lfr, mixing};
pub use powerlaw::fit_power_law_exponent;
pub use rmat::{RmatConfig, rmat};
