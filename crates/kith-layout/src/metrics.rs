//! How good a layout is: Bondhu's linear-arrangement costs, the log-gap cost of graph
//! compression, and the pages a store reads to list a user's friends.
//!
//! - **Cost** (Bondhu eq. 2): `Σ_{edges uv} w(u,v)·|π(u) − π(v)|`, each friendship once;
//!   unweighted (`w = 1`) and under a weight model.
//! - **Per-user cost** (eq. 1): `Σ_{v ∈ N(u)} w(u,v)·|π(u) − π(v)|`; quantiles over users, and
//!   each user's improvement over a baseline layout, `(base(u) − cost(u)) / base(u)`, over the
//!   users whose baseline cost is positive.
//! - **Log-gap cost** (Dhulipala et al., KDD 2016): sort `u` and its friends by position and
//!   sum `log2` of the gaps between consecutive positions (`d` gaps for `d` friends: `u`'s own
//!   record is the reference a store starts from); reported as bits per adjacency entry.
//! - **Pages**: records of `s` bytes laid contiguously in position order (record `p` occupies
//!   bytes `[p·s, (p+1)·s)`, so a record may straddle two pages); "list all friends" of `u`
//!   reads every page holding a byte of `u`'s record or a friend's. Mean, median and p99 over
//!   users, beside the floor `⌈(d+1)·s / page⌉` averaged the same way.
//!
//! Quantiles interpolate linearly between order statistics, as numpy's default does.

use kith_graph::{Graph, VertexId};
use rayon::prelude::*;
use serde::Serialize;

use crate::layout::Layout;

/// The page size of the paper's and kith's disk model.
pub const PAGE_BYTES: u64 = 4096;

/// The record sizes the issue tracks: 4 B to 400 KiB, by factors of ten.
pub const RECORD_SIZES: [u64; 6] = [4, 40, 400, 4096, 40960, 409_600];

/// The unweighted linear-arrangement cost, each undirected edge counted once.
pub fn la_cost(graph: &Graph, layout: &Layout) -> u64 {
    let pos = layout.positions();
    (0..graph.num_nodes() as VertexId)
        .into_par_iter()
        .map(|u| {
            let pu = pos[u as usize];
            graph
                .neighbors(u)
                .iter()
                .filter(|&&v| v > u)
                .map(|&v| u64::from(pu.abs_diff(pos[v as usize])))
                .sum::<u64>()
        })
        .sum()
}

/// The weighted linear-arrangement cost, `weights` aligned with the CSR entries.
pub fn weighted_la_cost(graph: &Graph, layout: &Layout, weights: &[f64]) -> f64 {
    weighted_cost_at(graph, layout.positions(), weights)
}

/// The weighted linear-arrangement cost for vertex positions `pos`.
pub(crate) fn weighted_cost_at(graph: &Graph, pos: &[u32], weights: &[f64]) -> f64 {
    (0..graph.num_nodes() as VertexId)
        .into_par_iter()
        .map(|u| user_cost(graph, pos, weights, u))
        .sum::<f64>()
        / 2.0
}

/// `Σ_{v ∈ N(u)} w(u,v)·|π(u) − π(v)|` for positions `pos`.
fn user_cost(graph: &Graph, pos: &[u32], weights: &[f64], u: VertexId) -> f64 {
    let csr = graph.out_csr();
    let (start, end) = csr.range(u);
    let pu = pos[u as usize];
    csr.targets()[start..end]
        .iter()
        .zip(&weights[start..end])
        .map(|(&v, &w)| w * f64::from(pu.abs_diff(pos[v as usize])))
        .sum()
}

/// Every user's cost `Σ_{v ∈ N(u)} w(u,v)·|π(u) − π(v)|`, indexed by vertex.
pub fn per_user_costs(graph: &Graph, layout: &Layout, weights: &[f64]) -> Vec<f64> {
    let pos = layout.positions();
    (0..graph.num_nodes() as VertexId)
        .into_par_iter()
        .map(|u| user_cost(graph, pos, weights, u))
        .collect()
}

/// The positions of `u` and its friends, sorted, in `scratch`.
fn sorted_positions<'s>(
    graph: &Graph,
    pos: &[u32],
    u: VertexId,
    scratch: &'s mut Vec<u32>,
) -> &'s [u32] {
    scratch.clear();
    scratch.push(pos[u as usize]);
    scratch.extend(graph.neighbors(u).iter().map(|&v| pos[v as usize]));
    scratch.sort_unstable();
    scratch
}

/// `Σ log2(gap)` over the gaps between consecutive sorted positions.
fn gap_bits(sorted: &[u32]) -> f64 {
    sorted.windows(2).map(|w| f64::from(w[1] - w[0]).log2()).sum()
}

/// The log-gap cost in bits per adjacency entry (0 for a graph without edges).
pub fn log_gap_cost(graph: &Graph, layout: &Layout) -> f64 {
    let pos = layout.positions();
    let (bits, entries) = (0..graph.num_nodes() as VertexId)
        .into_par_iter()
        .map_init(Vec::new, |scratch: &mut Vec<u32>, u| {
            let sorted = sorted_positions(graph, pos, u, scratch);
            (gap_bits(sorted), sorted.len() as u64 - 1)
        })
        .reduce(|| (0.0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    if entries == 0 { 0.0 } else { bits / entries as f64 }
}

/// The pages read to list all friends of `u`: those holding a byte of `u`'s record or of a
/// friend's. `scratch` is reused between calls.
pub fn pages_touched(
    graph: &Graph,
    layout: &Layout,
    u: VertexId,
    record_bytes: u64,
    scratch: &mut Vec<u32>,
) -> u64 {
    pages_touched_of(graph, layout, u, record_bytes, PAGE_BYTES, scratch)
}

/// [`pages_touched`] with pages of `page_bytes`.
pub fn pages_touched_of(
    graph: &Graph,
    layout: &Layout,
    u: VertexId,
    record_bytes: u64,
    page_bytes: u64,
    scratch: &mut Vec<u32>,
) -> u64 {
    let pos = layout.positions();
    scratch.clear();
    scratch.push(pos[u as usize]);
    scratch.extend(graph.neighbors(u).iter().map(|&v| pos[v as usize]));
    scratch.sort_unstable();
    pages_of_sorted(scratch, record_bytes, page_bytes)
}

/// The distinct pages of `page_bytes` holding the records at the ascending positions `sorted`.
pub(crate) fn pages_of_sorted(sorted: &[u32], record_bytes: u64, page_bytes: u64) -> u64 {
    let mut pages = 0;
    // One past the last page counted so far.
    let mut next_free = 0u64;
    for &p in sorted {
        let first = u64::from(p) * record_bytes / page_bytes;
        let last = (u64::from(p) * record_bytes + record_bytes - 1) / page_bytes;
        let from = first.max(next_free);
        if last >= from {
            pages += last - from + 1;
            next_free = last + 1;
        }
    }
    pages
}

/// Quantiles of a distribution over users.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Quantiles {
    pub mean: f64,
    pub p25: f64,
    pub median: f64,
    pub p75: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl Quantiles {
    /// The quantiles of `values` (all zero when empty).
    pub fn of(mut values: Vec<f64>) -> Quantiles {
        if values.is_empty() {
            return Quantiles::default();
        }
        values.par_sort_unstable_by(f64::total_cmp);
        let q = |f: f64| {
            let rank = f * (values.len() - 1) as f64;
            let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
            values[lo] + (values[hi] - values[lo]) * (rank - lo as f64)
        };
        Quantiles {
            mean: values.iter().sum::<f64>() / values.len() as f64,
            p25: q(0.25),
            median: q(0.5),
            p75: q(0.75),
            p90: q(0.9),
            p99: q(0.99),
            max: values[values.len() - 1],
        }
    }
}

/// Pages per "list all friends" for one record size.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PageStats {
    pub record_bytes: u64,
    pub mean: f64,
    pub median: f64,
    pub p99: f64,
    /// The mean of `⌈(d+1)·record_bytes / 4096⌉`: no layout can read fewer pages on average.
    pub floor_mean: f64,
}

/// The pages read by "list all friends" of every user, summarised.
pub fn page_stats(graph: &Graph, layout: &Layout, record_bytes: u64) -> PageStats {
    let counts = page_counts(graph, layout, record_bytes);
    let n = graph.num_nodes().max(1) as f64;
    let floor: u64 = (0..graph.num_nodes() as VertexId)
        .into_par_iter()
        .map(|u| (graph.degree(u) as u64 + 1) * record_bytes)
        .map(|b| b.div_ceil(PAGE_BYTES))
        .sum();
    let q = Quantiles::of(counts.into_iter().map(|c| c as f64).collect());
    PageStats {
        record_bytes,
        mean: q.mean,
        median: q.median,
        p99: q.p99,
        floor_mean: floor as f64 / n,
    }
}

/// The pages read by "list all friends" of every user, indexed by vertex.
pub fn page_counts(graph: &Graph, layout: &Layout, record_bytes: u64) -> Vec<u64> {
    (0..graph.num_nodes() as VertexId)
        .into_par_iter()
        .map_init(Vec::new, |scratch, u| pages_touched(graph, layout, u, record_bytes, scratch))
        .collect()
}

/// The mean pages per "list all friends" (the pages objective).
pub fn mean_pages(graph: &Graph, layout: &Layout, record_bytes: u64) -> f64 {
    mean_pages_of(graph, layout, record_bytes, PAGE_BYTES)
}

/// The mean pages of `page_bytes` per "list all friends" for records of `record_bytes`.
pub fn mean_pages_of(graph: &Graph, layout: &Layout, record_bytes: u64, page_bytes: u64) -> f64 {
    let pos = layout.positions();
    let total: u64 = (0..graph.num_nodes() as VertexId)
        .into_par_iter()
        .map_init(Vec::new, |scratch: &mut Vec<u32>, u| {
            pages_of_sorted(sorted_positions(graph, pos, u, scratch), record_bytes, page_bytes)
        })
        .sum();
    total as f64 / graph.num_nodes().max(1) as f64
}

/// [`log_gap_cost`] and [`mean_pages`] at `record_bytes`, in one pass: each neighbourhood's
/// positions are sorted once for both (what `kith layout compute` reports; on a graph of 35 M
/// edges the second sort of every neighbourhood cost about as long as the first).
pub fn gaps_and_pages(graph: &Graph, layout: &Layout, record_bytes: u64) -> (f64, f64) {
    let pos = layout.positions();
    let (bits, entries, pages) = (0..graph.num_nodes() as VertexId)
        .into_par_iter()
        .map_init(Vec::new, |scratch: &mut Vec<u32>, u| {
            let sorted = sorted_positions(graph, pos, u, scratch);
            let pages = pages_of_sorted(sorted, record_bytes, PAGE_BYTES);
            (gap_bits(sorted), sorted.len() as u64 - 1, pages)
        })
        .reduce(|| (0.0, 0, 0), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2));
    let gaps = if entries == 0 { 0.0 } else { bits / entries as f64 };
    (gaps, pages as f64 / graph.num_nodes().max(1) as f64)
}

/// What "list all friends" reads from a store that keeps the friend list apart and reads
/// only the friends' records, each counted on the page it starts on (exact for a store whose
/// blocks hold whole records): the mean pages and the mean requests, a request being a run of
/// adjacent pages (what a reader that merges adjacent blocks, like RocksDB's `MultiGet`,
/// issues). Users without friends read nothing and count as zero.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct FriendReads {
    /// Mean pages per query.
    pub pages: f64,
    /// Mean requests (runs of adjacent pages) per query.
    pub requests: f64,
}

/// [`FriendReads`] of `layout` for records of `record_bytes` on pages of `page_bytes`.
pub fn friend_reads(
    graph: &Graph,
    layout: &Layout,
    record_bytes: u64,
    page_bytes: u64,
) -> FriendReads {
    let pos = layout.positions();
    let (pages, requests) = (0..graph.num_nodes() as VertexId)
        .into_par_iter()
        .map_init(Vec::new, |scratch: &mut Vec<u64>, u| {
            scratch.clear();
            scratch.extend(
                graph
                    .neighbors(u)
                    .iter()
                    .map(|&v| u64::from(pos[v as usize]) * record_bytes / page_bytes),
            );
            scratch.sort_unstable();
            scratch.dedup();
            let runs = scratch.windows(2).filter(|w| w[1] != w[0] + 1).count()
                + usize::from(!scratch.is_empty());
            (scratch.len() as u64, runs as u64)
        })
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    let n = graph.num_nodes().max(1) as f64;
    FriendReads { pages: pages as f64 / n, requests: requests as f64 / n }
}

/// A layout's improvement over a baseline layout, as fractions (positive = better).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Improvement {
    /// `(base − cost) / base` of the weighted total cost.
    pub total: f64,
    /// Quartiles of the per-user improvement, over users with a positive baseline cost.
    pub per_user_p25: f64,
    pub per_user_median: f64,
    pub per_user_p75: f64,
}

/// Everything `kith layout eval` reports about one layout.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Evaluation {
    pub cost: u64,
    pub weighted_cost: f64,
    pub log_gap_cost: f64,
    pub per_user_cost: Quantiles,
    pub improvement: Improvement,
    pub pages: Vec<PageStats>,
}

/// Evaluates `layout` under `weights` (aligned with the CSR entries) against `baseline`.
pub fn evaluate(graph: &Graph, layout: &Layout, weights: &[f64], baseline: &Layout) -> Evaluation {
    let costs = per_user_costs(graph, layout, weights);
    let base = per_user_costs(graph, baseline, weights);
    let weighted_cost = costs.iter().sum::<f64>() / 2.0;
    let base_total = base.iter().sum::<f64>() / 2.0;
    let per_user: Vec<f64> =
        costs.iter().zip(&base).filter(|(_, b)| **b > 0.0).map(|(c, b)| (b - c) / b).collect();
    let per_user = Quantiles::of(per_user);
    Evaluation {
        cost: la_cost(graph, layout),
        weighted_cost,
        log_gap_cost: log_gap_cost(graph, layout),
        per_user_cost: Quantiles::of(costs),
        improvement: Improvement {
            total: if base_total > 0.0 { (base_total - weighted_cost) / base_total } else { 0.0 },
            per_user_p25: per_user.p25,
            per_user_median: per_user.median,
            per_user_p75: per_user.p75,
        },
        pages: RECORD_SIZES.iter().map(|&s| page_stats(graph, layout, s)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng, seq::SliceRandom};

    fn random_graph(n: u32, m: usize, seed: u64) -> Graph {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
        let edges = (0..m).map(|_| (rng.random_range(0..n), rng.random_range(0..n))).collect();
        Graph::from_edges((0..u64::from(n)).collect(), false, edges)
    }

    fn shuffled(n: usize, seed: u64) -> Layout {
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.shuffle(&mut rand_pcg::Pcg64Mcg::seed_from_u64(seed));
        Layout::from_order(order).unwrap()
    }

    /// Pages by brute force: mark every byte's page.
    fn naive_pages(g: &Graph, l: &Layout, u: u32, s: u64) -> u64 {
        let mut pages = std::collections::BTreeSet::new();
        for v in std::iter::once(u).chain(g.neighbors(u).iter().copied()) {
            let p = u64::from(l.position(v));
            for byte in p * s..(p + 1) * s {
                pages.insert(byte / PAGE_BYTES);
            }
        }
        pages.len() as u64
    }

    #[test]
    fn one_pass_gives_the_gap_cost_and_the_pages() {
        for seed in 0..10 {
            let g = random_graph(300, 1200, seed);
            let l = shuffled(300, seed + 7);
            for bytes in [4, 40, 400, 5000] {
                let (gaps, pages) = gaps_and_pages(&g, &l, bytes);
                assert!((gaps - log_gap_cost(&g, &l)).abs() < 1e-9, "seed {seed}");
                assert_eq!(pages, mean_pages(&g, &l, bytes), "seed {seed}, {bytes} B");
            }
        }
    }

    #[test]
    fn paper_example_costs_18_in_input_order() {
        let g = crate::example::paper_example();
        assert_eq!(la_cost(&g, &Layout::identity(7)), 18);
        // The paper's worked-example layout {2,1,3,5,7,6,4} (ids 1..7 are dense 0..6).
        let paper = Layout::from_order(vec![1, 0, 2, 4, 6, 5, 3]).unwrap();
        assert_eq!(la_cost(&g, &paper), 20);
    }

    #[test]
    fn costs_match_a_naive_edge_loop() {
        for seed in 0..20 {
            let g = random_graph(40, 120, seed);
            let l = shuffled(40, seed + 100);
            let w = kith_graph::edge_weights(&g, kith_graph::WeightModel::Overlap).unwrap();
            let (mut cost, mut weighted) = (0u64, 0.0);
            let mut per_user = vec![0.0; 40];
            for u in 0..40u32 {
                let (start, _) = g.out_csr().range(u);
                for (i, &v) in g.neighbors(u).iter().enumerate() {
                    let gap = i64::from(l.position(u)) - i64::from(l.position(v));
                    per_user[u as usize] += w[start + i] * gap.abs() as f64;
                    if u < v {
                        cost += gap.unsigned_abs();
                        weighted += w[start + i] * gap.abs() as f64;
                    }
                }
            }
            assert_eq!(la_cost(&g, &l), cost);
            assert!((weighted_la_cost(&g, &l, &w) - weighted).abs() < 1e-9);
            assert_eq!(per_user_costs(&g, &l, &w), per_user);
        }
    }

    #[test]
    fn pages_match_byte_by_byte_marking() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(9);
        for seed in 0..10 {
            let g = random_graph(300, 900, seed);
            let l = shuffled(300, seed);
            for s in [4, 40, 400, 4096, 5000, 40960] {
                let u = rng.random_range(0..300);
                assert_eq!(pages_touched(&g, &l, u, s, &mut Vec::new()), naive_pages(&g, &l, u, s));
            }
        }
    }

    #[test]
    fn log_gap_of_a_path_in_order_is_zero() {
        let g = Graph::from_edges((0..5).collect(), false, vec![(0, 1), (1, 2), (2, 3), (3, 4)]);
        assert_eq!(log_gap_cost(&g, &Layout::identity(5)), 0.0);
        // Closed neighbourhoods by position: 0:[1,4] 1:[1,2,4] 2:[1,2,3] 3:[0,2,3] 4:[0,3].
        let l = Layout::from_order(vec![4, 1, 2, 3, 0]).unwrap();
        let expected = (2.0 * 3f64.log2() + 2.0) / 8.0;
        assert!((log_gap_cost(&g, &l) - expected).abs() < 1e-12);
    }

    #[test]
    fn quantiles_interpolate_like_numpy() {
        let q = Quantiles::of(vec![4.0, 1.0, 3.0, 2.0]);
        assert_eq!((q.median, q.p25, q.p75, q.max, q.mean), (2.5, 1.75, 3.25, 4.0, 2.5));
    }

    #[test]
    fn improvement_against_itself_is_zero() {
        let g = random_graph(50, 200, 3);
        let l = shuffled(50, 4);
        let w = vec![1.0; g.out_csr().num_entries()];
        let e = evaluate(&g, &l, &w, &l);
        assert_eq!(e.improvement.total, 0.0);
        assert_eq!(e.improvement.per_user_median, 0.0);
        assert_eq!(e.pages.len(), RECORD_SIZES.len());
        // At 4 KiB and above a record fills whole pages, so every layout reads the floor.
        assert_eq!(e.pages[3].mean, e.pages[3].floor_mean);
    }
}
