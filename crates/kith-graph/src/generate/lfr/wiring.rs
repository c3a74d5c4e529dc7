//! The configuration model with rewiring (step 4 of the generator): stubs paired at random,
//! then every pair that is a self-loop, a duplicate or not allowed swapped with a random
//! accepted edge.

use rand::Rng;
use rand::seq::SliceRandom;
use rand_pcg::Pcg64Mcg;
use rustc_hash::FxHashSet;

use crate::csr::VertexId;

/// The configuration model on `stubs`: shuffle, pair neighbours, then rewire every pair that
/// is a self-loop, a duplicate or not `allowed` by swapping endpoints with a random accepted
/// edge. Returns the edges and the number of stubs that could not be placed.
pub(super) fn wire(
    stubs: &mut [VertexId],
    rng: &mut Pcg64Mcg,
    allowed: impl Fn(VertexId, VertexId) -> bool,
) -> (Vec<(VertexId, VertexId)>, u64) {
    const ATTEMPTS: usize = 1024;
    let key = |a: VertexId, b: VertexId| (u64::from(a.min(b)) << 32) | u64::from(a.max(b));
    stubs.shuffle(rng);
    let mut edges = Vec::with_capacity(stubs.len() / 2);
    let mut present = FxHashSet::default();
    present.reserve(stubs.len() / 2);
    let mut pending = Vec::new();
    for pair in stubs.chunks_exact(2) {
        let (a, b) = (pair[0], pair[1]);
        if a != b && allowed(a, b) && present.insert(key(a, b)) {
            edges.push((a, b));
        } else {
            pending.push((a, b));
        }
    }
    let mut dropped = (stubs.len() % 2) as u64;
    for (a, b) in pending {
        let mut placed = false;
        for _ in 0..ATTEMPTS {
            if edges.is_empty() {
                break;
            }
            let j = rng.random_range(0..edges.len());
            let (c, d) = if rng.random() { edges[j] } else { (edges[j].1, edges[j].0) };
            let ok = a != c
                && b != d
                && key(a, c) != key(b, d)
                && allowed(a, c)
                && allowed(b, d)
                && !present.contains(&key(a, c))
                && !present.contains(&key(b, d));
            if ok {
                present.remove(&key(c, d));
                present.insert(key(a, c));
                present.insert(key(b, d));
                edges[j] = (a, c);
                edges.push((b, d));
                placed = true;
                break;
            }
        }
        if !placed {
            dropped += 2;
        }
    }
    (edges, dropped)
}
