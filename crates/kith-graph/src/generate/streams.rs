//! Independent random streams: a generator draws each parallel block's randomness from its
//! own stream, seeded from `(seed, block)`, so that its output does not depend on how many
//! threads ran the blocks.

use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

/// An independent random stream for each `(seed, stream)` pair.
pub(crate) fn rng_for(seed: u64, stream: u64) -> Pcg64Mcg {
    Pcg64Mcg::seed_from_u64(seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}
