//! `f32` contributions gathered by AVX-512. A list's first four links are loaded one by one
//! into four lanes, with no branch on the list's length (two in three of
//! soc-Slashdot0902's users have at most four in-links, and a gather costs as much for one
//! link as for sixteen); the rest are gathered sixteen at a time, the last ones by one
//! masked gather, and each sixteen added to the four lanes a quarter at a time. So lane `i`
//! adds links `4k + i` in ascending order and the lanes are added as `(s0 + s1) + (s2 +
//! s3)`: the order of [`sum_lanes`](super::sum_lanes), and the sums are those of
//! [`Held::sum`](super::Held::sum) bit for bit (missing links add zeros, which change no sum of contributions, all at least zero; a
//! lane whose links all hold −0 would sum to −0 where the loads give +0, and ranks are
//! never negative, so no contribution is −0).
//!
//! Which is faster depends on the graph and its order: in trial runs gathers beat loads link
//! by link on graphs of 50 k vertices and more in the orders they came in, and lost clearly
//! in degree order (hubs first, their contributions in the L1 cache, where plain loads hit)
//! and on a graph of 7 k vertices. So a run tries both ([`Way`](super::Way)).

use std::arch::x86_64::{
    __m128, __m512, _mm_add_ps, _mm_add_ss, _mm_cvtss_f32, _mm_movehl_ps, _mm_setr_ps,
    _mm_setzero_ps, _mm_shuffle_ps, _mm512_castps512_ps128, _mm512_extractf32x4_ps,
    _mm512_mask_i32gather_ps, _mm512_maskz_loadu_epi32, _mm512_setzero_ps,
};

use super::{Pull, Settle, Tally, VertexId};

/// Whether the CPU has AVX-512F and `held`'s indices fit the gather's signed 32 bits.
#[inline]
pub(super) fn usable(held: &[f32]) -> bool {
    held.len() <= i32::MAX as usize && std::arch::is_x86_feature_detected!("avx512f")
}

/// [`Held::pull`](super::Held::pull) with [`sum`].
///
/// # Safety
/// As [`sum`], for every vertex of `run`.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn pull(held: &[f32], run: Pull<'_, f32>, settle: impl Settle<f32>) -> Tally {
    let Pull { offsets, sources, outs, ranks, shares } = run;
    let mut tally = Tally::default();
    for (((w, &out), r), s) in offsets.windows(2).zip(outs).zip(ranks).zip(shares) {
        // SAFETY: the caller's promises.
        let sum = unsafe { sum(held, sources, w[0] as usize..w[1] as usize) };
        tally += settle(f64::from(sum), out, r, s);
    }
    tally
}

/// `Σ held[u]` over the links `sources[list]`, in the order of
/// [`sum_lanes`](super::sum_lanes).
///
/// # Safety
/// The CPU must have AVX-512F, `list` must lie in `sources`, every entry of `sources`
/// must index `held`, and `held` must have at most `i32::MAX` entries ([`usable`]).
#[inline]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn sum(held: &[f32], sources: &[VertexId], list: std::ops::Range<usize>) -> f32 {
    let links = &sources[list.clone()];
    let lanes = if let Some(four) = sources.get(list.start..list.start + 4) {
        // The four entries from the list's start, past its end too (they are the next
        // lists' links, vertices all the same), each kept only if it is the list's.
        let head: [f32; 4] = std::array::from_fn(|i| {
            // SAFETY: every entry of `sources` indexes `held` (the caller's promise).
            let value = unsafe { *held.get_unchecked(four[i] as usize) };
            if i < links.len() { value } else { 0.0 }
        });
        let lanes = _mm_setr_ps(head[0], head[1], head[2], head[3]);
        match links.get(4..) {
            // SAFETY: the caller's promises.
            Some(tail) if !tail.is_empty() => unsafe { gather_into(lanes, held, tail) },
            _ => lanes,
        }
    } else {
        // Near the end of `sources`: all of the list by gathers.
        // SAFETY: the caller's promises.
        unsafe { gather_into(_mm_setzero_ps(), held, links) }
    };
    // (s0 + s1) + (s2 + s3): lanes 0 and 2 of the lanes plus their neighbours.
    let pairs = _mm_add_ps(lanes, _mm_shuffle_ps::<0b10_11_00_01>(lanes, lanes));
    _mm_cvtss_f32(_mm_add_ss(pairs, _mm_movehl_ps(pairs, pairs)))
}

/// `lanes` plus `held[u]` over `links`, sixteen links to a gather, each sixteen added a
/// quarter at a time (links `4k..4k + 4` after another, as
/// [`sum_lanes`](super::sum_lanes) adds them).
///
/// # Safety
/// The CPU must have AVX-512F, and each of `links` must index `held`, which has at most
/// `i32::MAX` entries.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn gather_into(mut lanes: __m128, held: &[f32], links: &[VertexId]) -> __m128 {
    let mut sixteens = links.chunks_exact(16);
    for chunk in &mut sixteens {
        // SAFETY: all sixteen lanes are `chunk`'s, and the caller's promises.
        lanes = add_quarters(lanes, unsafe { gather(held, chunk, u16::MAX) });
    }
    let rest = sixteens.remainder();
    if rest.is_empty() {
        return lanes;
    }
    let mask = ((1u32 << rest.len()) - 1) as u16;
    // SAFETY: the mask covers `rest`'s entries only, and the caller's promises.
    add_quarters(lanes, unsafe { gather(held, rest, mask) })
}

/// `held[u]` for the first links of `links` that `mask` covers (bit `i` for link `i`),
/// 0 in the other lanes.
///
/// # Safety
/// The CPU must have AVX-512F, `mask` must cover only entries of `links`, and each of
/// those must index `held`, which has at most `i32::MAX` entries.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn gather(held: &[f32], links: &[VertexId], mask: u16) -> __m512 {
    // SAFETY: the caller's promises: the masked load reads only `links`' entries and
    // the masked gather only their vertices' entries of `held`.
    unsafe {
        let at = _mm512_maskz_loadu_epi32(mask, links.as_ptr().cast());
        _mm512_mask_i32gather_ps::<4>(_mm512_setzero_ps(), mask, at, held.as_ptr())
    }
}

/// `lanes` plus sixteen values a quarter at a time.
#[inline]
#[target_feature(enable = "avx512f")]
fn add_quarters(lanes: __m128, values: __m512) -> __m128 {
    let lanes = _mm_add_ps(lanes, _mm512_castps512_ps128(values));
    let lanes = _mm_add_ps(lanes, _mm512_extractf32x4_ps::<1>(values));
    let lanes = _mm_add_ps(lanes, _mm512_extractf32x4_ps::<2>(values));
    _mm_add_ps(lanes, _mm512_extractf32x4_ps::<3>(values))
}
