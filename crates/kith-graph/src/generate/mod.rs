//! Seeded generators of social-like graphs: LFR (communities and power-law degrees), R-MAT
//! (Graph500's skewed Kronecker graphs) and Barabási–Albert (preferential attachment).
//!
//! Every generator is a pure function of its configuration: the same seed gives the same
//! graph on any machine and any number of threads.

mod ba;
mod lfr;
mod powerlaw;
mod rmat;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressFinish, ProgressStyle};
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

pub use ba::{BaConfig, barabasi_albert};
pub use lfr::{Lfr, LfrConfig, lfr, mixing};
pub use powerlaw::{PowerLaw, fit_power_law_exponent};
pub use rmat::{RmatConfig, rmat};

/// An independent random stream for each `(seed, stream)` pair.
pub(crate) fn rng_for(seed: u64, stream: u64) -> Pcg64Mcg {
    Pcg64Mcg::seed_from_u64(seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// A spinner naming the current stage of a long generation, drawn only on a terminal.
pub(crate) struct Progress(ProgressBar);

impl Progress {
    pub(crate) fn new(show: bool, what: &str) -> Progress {
        if !show {
            return Progress(ProgressBar::hidden());
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
            .with_finish(ProgressFinish::AndClear);
        bar.set_style(
            ProgressStyle::with_template("{spinner} {prefix}: {msg} ({elapsed})")
                .expect("valid template"),
        );
        bar.set_prefix(what.to_owned());
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        Progress(bar)
    }

    pub(crate) fn stage(&self, message: &'static str) {
        self.0.set_message(message);
    }

    pub(crate) fn finish(&self) {
        self.0.finish_and_clear();
    }
}
