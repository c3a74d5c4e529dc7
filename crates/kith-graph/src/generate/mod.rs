//! Seeded generators of social-like graphs: LFR (communities and power-law degrees), R-MAT
//! (Graph500's skewed Kronecker graphs) and Barabási–Albert (preferential attachment).
//!
//! Every generator is a pure function of its configuration: the same seed gives the same
//! graph on any machine and any number of threads.

mod ba;
mod lfr;
mod powerlaw;
mod rmat;

use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

pub use ba::{BaConfig, barabasi_albert};
pub use lfr::{Lfr, LfrConfig, lfr, mixing};
pub use powerlaw::{PowerLaw, fit_power_law_exponent};
pub use rmat::{RmatConfig, rmat};

pub(crate) use crate::progress::Stages as Progress;

/// An independent random stream for each `(seed, stream)` pair.
pub(crate) fn rng_for(seed: u64, stream: u64) -> Pcg64Mcg {
    Pcg64Mcg::seed_from_u64(seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}
