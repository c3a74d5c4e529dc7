//! Recursive graph bisection for locality (after Dhulipala, Kabiljo, Karrer, Ottaviano,
//! Pupyrev & Shalita, "Compressing graphs and indexes with recursive graph bisection",
//! KDD 2016).
//!
//! Every user's closed neighbourhood `N[u]` is a query; the vertices are the data. A block of
//! the order is split into halves `A` and `B`, initially its first and second half. Under the
//! log-gap model a query with `n_A` members in `A` and `n_B` in `B` costs
//! `n_A·log2(|A| / (n_A + 1)) + n_B·log2(|B| / (n_B + 1))`; each vertex's move gain is the
//! drop in cost of its queries if it changed sides. Both halves are sorted by gain and the
//! best pairs swapped while a pair's total gain is positive; this repeats until no pair
//! gains (at most [`ITERATIONS`] times). Then both halves are bisected in turn, in parallel.
//!
//! With page-aligned splits ([`Split::Pages`]) a block is split at the page boundary nearest
//! its middle, so every block is a whole number of pages and the recursion ends with blocks
//! of exactly one page: the last level decides which users share a page.
//!
//! Queries are renumbered locally for each block (a per-thread table indexed by vertex,
//! reset by generation counter), so each iteration is `O(vol(block))`.

use std::cell::RefCell;

use kith_graph::VertexId;

use super::adjacency::Adjacency;
use rayon::prelude::*;

/// The most swap rounds per bisection.
pub(crate) const ITERATIONS: usize = 10;

/// Rounds stop once they swap fewer than one vertex in this many.
const MIN_SWAPS_PER_MILLE: usize = 1000;

/// Where blocks are split and when the recursion stops.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Split {
    /// At page boundaries for records of this size; stop at one page.
    Pages { record_bytes: u64, page_bytes: u64 },
    /// In halves; stop at `leaf` vertices or fewer.
    Halves { leaf: usize },
}

impl Split {
    /// The split position of the block at positions `lo..hi`, or `None` for a leaf.
    fn point(self, lo: usize, hi: usize) -> Option<usize> {
        match self {
            Split::Halves { leaf } => (hi - lo > leaf.max(1)).then_some(lo + (hi - lo) / 2),
            Split::Pages { record_bytes, page_bytes } => {
                let page = |p: usize| p as u64 * record_bytes / page_bytes;
                let (first, last) = (page(lo), page(hi - 1));
                let boundary = (first + last).div_ceil(2) * page_bytes;
                let mid = boundary.div_ceil(record_bytes) as usize;
                (mid > lo && mid < hi).then_some(mid)
            }
        }
    }
}

struct Context<'g> {
    graph: &'g Adjacency,
    split: Split,
    /// `(1 − p)^n` of probabilistic fanout for `n` up to the largest degree plus two.
    miss: Vec<f64>,
    /// `log2(n)` for `n` up to the largest degree plus two.
    log2: Vec<f64>,
    /// Blocks this short or shorter are left alone (0: recurse to the leaves).
    limit: usize,
}

thread_local! {
    /// Per-thread query renumbering: `slot[q]` is valid while `generation[q]` is current.
    static SCRATCH: RefCell<(Vec<u32>, Vec<u32>, u32)> = const { RefCell::new((Vec::new(), Vec::new(), 0)) };
}

/// Blocks at least this large are bisected before the graph is relabelled by the order.
const RELABEL_FRACTION: usize = 16;

/// Reorders `order` by recursive bisection.
///
/// The top levels run on `graph` as given; once blocks are below `n / 16` vertices the graph
/// is relabelled by the order so far (see `adjacency.rs`) and the rest of the recursion runs
/// on the relabelled graph, which only changes the speed.
pub(crate) fn recursive_bisection(
    graph: &Adjacency,
    mut order: Vec<VertexId>,
    split: Split,
) -> Vec<VertexId> {
    let n = graph.num_nodes();
    let max_degree = (0..n as VertexId).map(|v| graph.degree(v)).max().unwrap_or(0);
    let log2: Vec<f64> = (0..max_degree + 3).map(|n| (n.max(1) as f64).log2()).collect();
    let miss: Vec<f64> = (0..max_degree + 3).map(|n| (1.0 - FANOUT_P).powi(n as i32)).collect();
    let limit = (n / RELABEL_FRACTION).max(4096);
    let top = Context { graph, split, miss: miss.clone(), log2: log2.clone(), limit };
    let mut leaves = Vec::new();
    recurse(&top, &mut order, 0, &mut leaves);
    if leaves.len() == 1 {
        // Too small to be worth relabelling: finish on the given graph.
        let ctx = Context { limit: 0, ..top };
        recurse(&ctx, &mut order, 0, &mut Vec::new());
        return order;
    }
    let relabelled = graph.relabel(&order);
    let ctx = Context { graph: &relabelled, split, miss, log2, limit: 0 };
    let mut local: Vec<VertexId> = (0..n as VertexId).collect();
    let mut blocks = Vec::with_capacity(leaves.len());
    let mut rest: &mut [VertexId] = &mut local;
    let mut start = 0;
    leaves.sort_unstable();
    for &(lo, hi) in &leaves {
        debug_assert_eq!(lo, start);
        let (block, tail) = rest.split_at_mut(hi - lo);
        blocks.push((lo, block));
        rest = tail;
        start = hi;
    }
    blocks.into_par_iter().for_each(|(lo, block)| recurse(&ctx, block, lo, &mut Vec::new()));
    local.iter().map(|&i| order[i as usize]).collect()
}

/// Bisects `block` (at positions `lo..`) recursively until blocks are leaves or no longer
/// than `ctx.limit`; records those blocks' position ranges in `leaves`.
fn recurse(ctx: &Context<'_>, block: &mut [VertexId], lo: usize, leaves: &mut Vec<(usize, usize)>) {
    let hi = lo + block.len();
    if block.is_empty() {
        return;
    }
    if block.len() <= ctx.limit {
        leaves.push((lo, hi));
        return;
    }
    let Some(mid) = ctx.split.point(lo, hi) else {
        leaves.push((lo, hi));
        return;
    };
    let mid = mid - lo;
    bisect(ctx, block, mid);
    let (a, b) = block.split_at_mut(mid);
    if a.len() + b.len() > 2048 {
        let (mut left, mut right) = (Vec::new(), Vec::new());
        rayon::join(|| recurse(ctx, a, lo, &mut left), || recurse(ctx, b, lo + mid, &mut right));
        leaves.append(&mut left);
        leaves.append(&mut right);
    } else {
        recurse(ctx, a, lo, leaves);
        recurse(ctx, b, lo + mid, leaves);
    }
}

/// The local structure of one block: for each block vertex, its queries' local ids.
struct Block {
    offsets: Vec<u32>,
    queries: Vec<u32>,
    num_queries: usize,
}

fn local_queries(graph: &Adjacency, block: &[VertexId]) -> Block {
    SCRATCH.with(|cell| {
        let (slot, generation, current) = &mut *cell.borrow_mut();
        let n = graph.num_nodes();
        if slot.len() < n {
            slot.resize(n, 0);
            generation.resize(n, 0);
        }
        *current = current.wrapping_add(1);
        if *current == 0 {
            generation.fill(0);
            *current = 1;
        }
        let mut offsets = Vec::with_capacity(block.len() + 1);
        offsets.push(0u32);
        // Reserved whole: grown as it filled, it was copied at each doubling, on fresh pages.
        let mut queries = Vec::with_capacity(block.iter().map(|&v| graph.degree(v) + 1).sum());
        let mut num_queries = 0u32;
        for &v in block {
            for q in std::iter::once(v).chain(graph.neighbors(v).iter().copied()) {
                let q = q as usize;
                if generation[q] != *current {
                    generation[q] = *current;
                    slot[q] = num_queries;
                    num_queries += 1;
                }
                queries.push(slot[q]);
            }
            offsets.push(queries.len() as u32);
        }
        Block { offsets, queries, num_queries: num_queries as usize }
    })
}

/// The two sides of a block being bisected, with every query's members on each side.
struct Sides<'a> {
    local: &'a Block,
    log2: &'a [f64],
    in_a: Vec<bool>,
    count_a: Vec<u32>,
    count_b: Vec<u32>,
    /// `log2` of each side's size.
    log_a: f64,
    log_b: f64,
    /// Probabilistic fanout (`1 − (1 − p)^n` per side, from the table of `(1 − p)^n`)
    /// instead of the log-gap model.
    fanout: Option<&'a [f64]>,
    /// Per query, the change in its cost if one of its members on side A (B) moved over.
    delta_a: Vec<f64>,
    delta_b: Vec<f64>,
    /// Queries whose counts a flip touched since their deltas were last computed, listed
    /// once each (`touched[q]` says whether `q` is listed). A query's deltas depend only on
    /// its counts (the sides' sizes stay fixed), so only these need computing again.
    dirty: Vec<u32>,
    touched: Vec<bool>,
}

impl Sides<'_> {
    fn queries(&self, i: usize) -> &[u32] {
        &self.local.queries[self.local.offsets[i] as usize..self.local.offsets[i + 1] as usize]
    }

    /// The log-gap model's cost of `n` query members on a side of `2^log_size` vertices.
    fn term(&self, n: u32, log_size: f64) -> f64 {
        if let Some(miss) = self.fanout {
            return 1.0 - miss[n as usize];
        }
        f64::from(n) * (log_size - self.log2[n as usize + 1])
    }

    /// Recounts every query's members on side A; side B's are the rest of `total`. Large
    /// blocks count in two halves in parallel.
    fn recount(&mut self, total: &[u32], parallel: bool) {
        let local = self.local;
        let in_a = &self.in_a;
        let count_range = |range: std::ops::Range<usize>, counts: &mut Vec<u32>| {
            counts.fill(0);
            for i in range.filter(|&i| in_a[i]) {
                let qs = &local.queries[local.offsets[i] as usize..local.offsets[i + 1] as usize];
                for &q in qs {
                    counts[q as usize] += 1;
                }
            }
        };
        let len = in_a.len();
        if parallel {
            let mut second = vec![0u32; total.len()];
            let mut first = std::mem::take(&mut self.count_a);
            rayon::join(
                || count_range(0..len / 2, &mut first),
                || count_range(len / 2..len, &mut second),
            );
            first.par_iter_mut().zip(&second).for_each(|(a, b)| *a += b);
            self.count_a = first;
        } else {
            let mut counts = std::mem::take(&mut self.count_a);
            count_range(0..len, &mut counts);
            self.count_a = counts;
        }
        for ((b, a), t) in self.count_b.iter_mut().zip(&self.count_a).zip(total) {
            *b = t - a;
        }
    }

    /// The drop in cost if vertex `i` alone changed sides.
    fn gain(&self, i: usize) -> f64 {
        let (la, lb) = (self.log_a, self.log_b);
        let mut g = 0.0;
        for &q in self.queries(i) {
            let (na, nb) = (self.count_a[q as usize], self.count_b[q as usize]);
            g += if self.in_a[i] {
                self.term(na, la) - self.term(na - 1, la) + self.term(nb, lb)
                    - self.term(nb + 1, lb)
            } else {
                self.term(nb, lb) - self.term(nb - 1, lb) + self.term(na, la)
                    - self.term(na + 1, la)
            };
        }
        g
    }

    /// The move deltas of every query (`all`), or of the queries flips touched since the
    /// last call, from the current counts: the same values either way.
    fn compute_deltas(&mut self, parallel: bool, all: bool) {
        let mut deltas_a = std::mem::take(&mut self.delta_a);
        let mut deltas_b = std::mem::take(&mut self.delta_b);
        let mut dirty = std::mem::take(&mut self.dirty);
        let (la, lb) = (self.log_a, self.log_b);
        let delta = |q: usize| {
            let (na, nb) = (self.count_a[q], self.count_b[q]);
            let from_a = if na > 0 {
                self.term(na, la) - self.term(na - 1, la) + self.term(nb, lb)
                    - self.term(nb + 1, lb)
            } else {
                0.0
            };
            let from_b = if nb > 0 {
                self.term(nb, lb) - self.term(nb - 1, lb) + self.term(na, la)
                    - self.term(na + 1, la)
            } else {
                0.0
            };
            (from_a, from_b)
        };
        deltas_a.resize(self.count_a.len(), 0.0);
        deltas_b.resize(self.count_a.len(), 0.0);
        if all || 2 * dirty.len() > self.count_a.len() {
            let fill = |(q, (a, b)): (usize, (&mut f64, &mut f64))| (*a, *b) = delta(q);
            if parallel {
                deltas_a.par_iter_mut().zip(deltas_b.par_iter_mut()).enumerate().for_each(fill);
            } else {
                deltas_a.iter_mut().zip(deltas_b.iter_mut()).enumerate().for_each(fill);
            }
        } else if parallel {
            let fresh: Vec<(f64, f64)> = dirty.par_iter().map(|&q| delta(q as usize)).collect();
            for (&q, (a, b)) in dirty.iter().zip(fresh) {
                (deltas_a[q as usize], deltas_b[q as usize]) = (a, b);
            }
        } else {
            for &q in &dirty {
                (deltas_a[q as usize], deltas_b[q as usize]) = delta(q as usize);
            }
        }
        for &q in &dirty {
            self.touched[q as usize] = false;
        }
        dirty.clear();
        (self.delta_a, self.delta_b, self.dirty) = (deltas_a, deltas_b, dirty);
    }

    /// The gain of moving vertex `i` alone, from the deltas of the last `compute_deltas`.
    fn stale_gain(&self, i: usize) -> f64 {
        let delta = if self.in_a[i] { &self.delta_a } else { &self.delta_b };
        self.queries(i).iter().map(|&q| delta[q as usize]).sum()
    }

    /// Moves vertex `i` to the other side.
    fn flip(&mut self, i: usize) {
        let qs =
            &self.local.queries[self.local.offsets[i] as usize..self.local.offsets[i + 1] as usize];
        let (from, to) = if self.in_a[i] {
            (&mut self.count_a, &mut self.count_b)
        } else {
            (&mut self.count_b, &mut self.count_a)
        };
        for &q in qs {
            from[q as usize] -= 1;
            to[q as usize] += 1;
            if !self.touched[q as usize] {
                self.touched[q as usize] = true;
                self.dirty.push(q);
            }
        }
        self.in_a[i] = !self.in_a[i];
    }
}

/// `x`'s bits mapped so that integer order is `f64::total_cmp`'s order.
fn order_bits(x: f64) -> u64 {
    let bits = x.to_bits();
    if bits >> 63 == 1 { !bits } else { bits | 1 << 63 }
}

/// Blocks of at most this many pages are split on probabilistic fanout, not log-gaps.
const FANOUT_PAGES: u64 = 8;
/// The `p` of probabilistic fanout (Kabiljo et al., VLDB 2017).
const FANOUT_P: f64 = 0.5;

/// Whether a block of `len` vertices is split on probabilistic fanout.
fn fanout_for(split: Split, len: usize) -> bool {
    let Split::Pages { record_bytes, page_bytes } = split else { return false };
    len as u64 * record_bytes <= FANOUT_PAGES * page_bytes
}

/// Splits `block` into a first part of `mid` vertices and the rest, minimising the log-gap
/// model's cost; reorders `block` so the first part comes first.
fn bisect(ctx: &Context<'_>, block: &mut [VertexId], mid: usize) {
    let len = block.len();
    let local = local_queries(ctx.graph, block);
    let mut sides = Sides {
        local: &local,
        log2: &ctx.log2,
        in_a: (0..len).map(|i| i < mid).collect(),
        count_a: vec![0; local.num_queries],
        count_b: vec![0; local.num_queries],
        log_a: (mid as f64).log2(),
        log_b: ((len - mid) as f64).log2(),
        fanout: fanout_for(ctx.split, len).then_some(&ctx.miss[..]),
        delta_a: Vec::new(),
        delta_b: Vec::new(),
        dirty: Vec::new(),
        touched: vec![false; local.num_queries],
    };
    let mut gains = vec![0.0f64; len];
    let parallel = len > 50_000;
    // Members of every query in the block, whichever side they are on.
    let mut total = vec![0u32; local.num_queries];
    for &q in &local.queries {
        total[q as usize] += 1;
    }
    // Counted once: flips keep the counts exact from then on, and recompute only the deltas
    // of the queries they touched.
    sides.recount(&total, parallel);
    for round in 0..ITERATIONS {
        sides.compute_deltas(parallel, round == 0);
        if parallel {
            gains.par_iter_mut().enumerate().for_each(|(i, g)| *g = sides.stale_gain(i));
        } else {
            for (i, g) in gains.iter_mut().enumerate() {
                *g = sides.stale_gain(i);
            }
        }
        // Only vertices that can be part of a gaining pair need sorting: a gain above minus
        // the best gain on the other side.
        let best = |in_a: bool| {
            (0..len)
                .filter(|&i| sides.in_a[i] == in_a)
                .map(|i| gains[i])
                .fold(f64::NEG_INFINITY, f64::max)
        };
        let (best_a, best_b) = (best(true), best(false));
        // Sorted on (gain, index) packed into one word, highest gain first, ties to the
        // lower index: the sort compares integers in place instead of looking gains up.
        let key = |i: u32| (u128::from(!order_bits(gains[i as usize])) << 32) | u128::from(i);
        let movers = |in_a: bool, best_other: f64| -> Vec<u128> {
            let keep =
                |i: &u32| sides.in_a[*i as usize] == in_a && gains[*i as usize] + best_other > 0.0;
            if parallel {
                (0..len as u32).into_par_iter().filter(keep).map(key).collect()
            } else {
                (0..len as u32).filter(keep).map(key).collect()
            }
        };
        let (mut movers_a, mut movers_b) = (movers(true, best_b), movers(false, best_a));
        // Pairs are taken best with best, so only the shorter side's count of each is used:
        // select those before sorting.
        let pairs = movers_a.len().min(movers_b.len());
        for movers in [&mut movers_a, &mut movers_b] {
            if movers.len() > pairs && pairs > 0 {
                movers.select_nth_unstable(pairs);
            }
            movers.truncate(pairs);
        }
        if parallel {
            movers_a.par_sort_unstable();
            movers_b.par_sort_unstable();
        } else {
            movers_a.sort_unstable();
            movers_b.sort_unstable();
        }
        // Swap the best pairs, each on fresh gains: the sorted gains assumed one move at a
        // time, and moving many vertices of the same queries at once can overshoot (two
        // halves trading the same kind of vertex back and forth).
        let mut swapped = 0;
        for (&x, &y) in movers_a.iter().zip(&movers_b) {
            let (x, y) = (x as u32 as usize, y as u32 as usize);
            if gains[x] + gains[y] <= 1e-9 {
                break;
            }
            let gx = sides.gain(x);
            sides.flip(x);
            if gx + sides.gain(y) > 1e-9 {
                sides.flip(y);
                swapped += 1;
            } else {
                sides.flip(x);
            }
        }
        if swapped * MIN_SWAPS_PER_MILLE < len {
            break;
        }
    }
    // Stable partition: the first part's vertices first, each part in its previous order.
    let mut parts = (Vec::with_capacity(mid), Vec::with_capacity(len - mid));
    for (&v, &first) in block.iter().zip(&sides.in_a) {
        if first { parts.0.push(v) } else { parts.1.push(v) }
    }
    block[..mid].copy_from_slice(&parts.0);
    block[mid..].copy_from_slice(&parts.1);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::PAGE_BYTES;
    use kith_graph::Graph;

    #[test]
    fn page_splits_fall_on_page_boundaries() {
        let split = Split::Pages { record_bytes: 40, page_bytes: PAGE_BYTES };
        // 4096 / 40 = 102.4 records per page; positions 0..1024 cover 10 pages.
        let mid = split.point(0, 1024).unwrap();
        assert_eq!(mid, (5 * 4096u64).div_ceil(40) as usize);
        // One page's records (and the one straddling into the next) make a leaf.
        assert_eq!(split.point(0, 103), None);
        assert!(split.point(0, 104).is_some());
        assert_eq!(Split::Halves { leaf: 8 }.point(10, 18), None);
        assert_eq!(Split::Halves { leaf: 8 }.point(10, 19), Some(14));
    }

    #[test]
    fn separates_two_cliques_that_start_shuffled() {
        use rand::SeedableRng;
        use rand::seq::SliceRandom;
        let mut edges = Vec::new();
        for a in 0..16u32 {
            for b in a + 1..16 {
                if a % 2 == b % 2 {
                    edges.push((a, b));
                }
            }
        }
        let g = Graph::from_edges((0..16).collect(), false, edges);
        let mut start: Vec<u32> = (0..16).collect();
        start.shuffle(&mut rand_pcg::Pcg64Mcg::seed_from_u64(7));
        let order =
            recursive_bisection(&Adjacency::from_graph(&g), start, Split::Halves { leaf: 8 });
        let first: Vec<u32> = order[..8].iter().map(|v| v % 2).collect();
        assert!(first.iter().all(|&p| p == first[0]), "{order:?}");
    }
}
