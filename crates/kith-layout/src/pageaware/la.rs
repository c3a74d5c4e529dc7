//! Refinement of an order for the (weighted) linear-arrangement cost.
//!
//! - **Median relaxation**: the cost is a sum of `w·|x_u − x_v|`, so for fixed neighbours a
//!   vertex's best spot is the weighted median of its friends' positions. Every vertex gets
//!   that target (the midpoint of the two middle positions when the weight splits evenly),
//!   the order is re-sorted by target (ties by the current position), and the new order is
//!   kept while the cost falls.
//! - **Window dynamic programming**: for a window of `k` consecutive positions, the best
//!   order of its vertices with everything else fixed is found exactly by DP over subsets
//!   (`O(2^k·k)`). With the window's internal edges crossing each gap counted once per gap
//!   they span, placing vertex `v` at slot `i` adds `i·(L_v − R_v)` for its weight `L_v` to
//!   the left of the window and `R_v` to its right. Windows slide by half their width; sweeps
//!   repeat while they improve. A graph of at most [`EXACT`] vertices fits in one window, so
//!   its arrangement is optimal.

use kith_graph::{Graph, VertexId};
use rayon::prelude::*;

use crate::layout::inverse;
use crate::metrics::weighted_cost_at;

/// Graphs this small are arranged exactly.
pub(crate) const EXACT: usize = 12;

/// Refines `order` for the weighted linear-arrangement cost under `weights`.
pub(crate) fn refine(graph: &Graph, weights: &[f64], mut order: Vec<VertexId>) -> Vec<VertexId> {
    let n = order.len();
    if n <= 1 {
        return order;
    }
    let mut pos = inverse(&order);
    let mut cost = weighted_cost_at(graph, &pos, weights);
    for _ in 0..50 {
        let candidate = median_step(graph, weights, &order, &pos);
        let candidate_pos = inverse(&candidate);
        let candidate_cost = weighted_cost_at(graph, &candidate_pos, weights);
        if candidate_cost >= cost * (1.0 - 1e-5) {
            break;
        }
        (order, pos, cost) = (candidate, candidate_pos, candidate_cost);
    }
    let k = if n <= EXACT {
        n
    } else if n <= 200_000 {
        10
    } else {
        8
    };
    for _ in 0..6 {
        let gained = window_sweep(graph, weights, &mut order, &mut pos, k);
        if gained <= cost * 1e-5 {
            break;
        }
        cost -= gained;
    }
    order
}

fn median_step(graph: &Graph, weights: &[f64], order: &[VertexId], pos: &[u32]) -> Vec<VertexId> {
    let csr = graph.out_csr();
    let target: Vec<f64> = (0..graph.num_nodes() as VertexId)
        .into_par_iter()
        .map_init(Vec::new, |scratch: &mut Vec<(u32, f64)>, v| {
            let (s, e) = csr.range(v);
            if s == e {
                return f64::from(pos[v as usize]);
            }
            scratch.clear();
            scratch.extend(
                csr.targets()[s..e].iter().zip(&weights[s..e]).map(|(&u, &w)| (pos[u as usize], w)),
            );
            scratch.sort_unstable_by_key(|&(p, _)| p);
            let half = scratch.iter().map(|&(_, w)| w).sum::<f64>() / 2.0;
            let mut acc = 0.0;
            for (i, &(p, w)) in scratch.iter().enumerate() {
                acc += w;
                if acc > half {
                    return f64::from(p);
                }
                if acc == half {
                    return (f64::from(p) + f64::from(scratch[i + 1].0)) / 2.0;
                }
            }
            f64::from(scratch[scratch.len() - 1].0)
        })
        .collect();
    let mut next = order.to_vec();
    next.par_sort_unstable_by(|&a, &b| {
        target[a as usize]
            .total_cmp(&target[b as usize])
            .then(pos[a as usize].cmp(&pos[b as usize]))
    });
    next
}

/// One sweep of exact window optimisation; returns the cost removed.
fn window_sweep(
    graph: &Graph,
    weights: &[f64],
    order: &mut [VertexId],
    pos: &mut [u32],
    k: usize,
) -> f64 {
    let n = order.len();
    let k = k.min(n);
    let step = (k / 2).max(1);
    let mut gained = 0.0;
    let mut dp = WindowDp::new(k);
    let mut start = 0;
    loop {
        let end = (start + k).min(n);
        gained += dp.optimise(graph, weights, order, pos, start, end);
        if end == n {
            break;
        }
        start += step;
    }
    gained
}

/// Scratch for the subset DP of one window.
struct WindowDp {
    best: Vec<f64>,
    choice: Vec<u8>,
    cut: Vec<f64>,
}

impl WindowDp {
    fn new(k: usize) -> WindowDp {
        WindowDp { best: vec![0.0; 1 << k], choice: vec![0; 1 << k], cut: vec![0.0; 1 << k] }
    }

    /// Reorders `order[start..end]` optimally; returns the cost removed.
    fn optimise(
        &mut self,
        graph: &Graph,
        weights: &[f64],
        order: &mut [VertexId],
        pos: &mut [u32],
        start: usize,
        end: usize,
    ) -> f64 {
        let k = end - start;
        let window = &order[start..end];
        let csr = graph.out_csr();
        // External pull (L − R) and internal weights between window slots.
        let mut external = vec![0.0f64; k];
        let mut internal = vec![0.0f64; k * k];
        for (j, &v) in window.iter().enumerate() {
            let (s, e) = csr.range(v);
            for (&u, &w) in csr.targets()[s..e].iter().zip(&weights[s..e]) {
                let p = pos[u as usize] as usize;
                if p < start {
                    external[j] += w;
                } else if p >= end {
                    external[j] -= w;
                } else {
                    internal[j * k + (p - start)] += w;
                }
            }
        }
        let full = (1usize << k) - 1;
        let internal_degree: Vec<f64> =
            (0..k).map(|j| internal[j * k..(j + 1) * k].iter().sum()).collect();
        self.cut[0] = 0.0;
        for set in 1..=full {
            let j = set.trailing_zeros() as usize;
            let rest = set & (set - 1);
            let mut to_rest = 0.0;
            let mut bits = rest;
            while bits != 0 {
                let l = bits.trailing_zeros() as usize;
                to_rest += internal[j * k + l];
                bits &= bits - 1;
            }
            self.cut[set] = self.cut[rest] + internal_degree[j] - 2.0 * to_rest;
        }
        // The cost of the current arrangement, in the same terms.
        let mut current = 0.0;
        let mut prefix = 0usize;
        for (i, ext) in external.iter().enumerate() {
            prefix |= 1 << i;
            current += i as f64 * ext + if prefix != full { self.cut[prefix] } else { 0.0 };
        }
        self.best[0] = 0.0;
        for set in 1..=full {
            let slot = f64::from(set.count_ones()) - 1.0;
            let gap = if set != full { self.cut[set] } else { 0.0 };
            let mut best = f64::INFINITY;
            let mut choice = 0u8;
            let mut bits = set;
            while bits != 0 {
                let j = bits.trailing_zeros() as usize;
                let value = self.best[set & !(1 << j)] + slot * external[j];
                if value < best {
                    best = value;
                    choice = j as u8;
                }
                bits &= bits - 1;
            }
            self.best[set] = best + gap;
            self.choice[set] = choice;
        }
        let optimum = self.best[full];
        if optimum >= current - 1e-9 {
            return 0.0;
        }
        let mut arranged = vec![0 as VertexId; k];
        let mut set = full;
        for slot in (0..k).rev() {
            let j = self.choice[set] as usize;
            arranged[slot] = window[j];
            set &= !(1 << j);
        }
        for (slot, &v) in arranged.iter().enumerate() {
            order[start + slot] = v;
            pos[v as usize] = (start + slot) as u32;
        }
        current - optimum
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::example::paper_example;
    use crate::layout::Layout;
    use crate::metrics::la_cost;

    fn brute_force_min(graph: &Graph) -> u64 {
        let n = graph.num_nodes();
        let mut order: Vec<VertexId> = (0..n as VertexId).collect();
        let mut best = u64::MAX;
        permute(&mut order, 0, &mut |o| {
            best = best.min(la_cost(graph, &Layout::from_order(o.to_vec()).unwrap()));
        });
        best
    }

    fn permute(items: &mut [VertexId], k: usize, visit: &mut dyn FnMut(&[VertexId])) {
        if k == items.len() {
            visit(items);
            return;
        }
        for i in k..items.len() {
            items.swap(k, i);
            permute(items, k + 1, visit);
            items.swap(k, i);
        }
    }

    #[test]
    fn small_graphs_are_arranged_optimally() {
        use rand::{Rng, SeedableRng};
        for seed in 0..12 {
            let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
            let n = 4 + (seed % 5) as u32;
            let edges =
                (0..2 * n).map(|_| (rng.random_range(0..n), rng.random_range(0..n))).collect();
            let g = Graph::from_edges((0..u64::from(n)).collect(), false, edges);
            let w = vec![1.0; g.out_csr().num_entries()];
            let order = refine(&g, &w, (0..n).collect());
            assert_eq!(la_cost(&g, &Layout::from_order(order).unwrap()), brute_force_min(&g));
        }
    }

    #[test]
    fn the_paper_example_reaches_13() {
        let g = paper_example();
        assert_eq!(brute_force_min(&g), 13);
        let w = vec![1.0; g.out_csr().num_entries()];
        let order = refine(&g, &w, (0..7).collect());
        assert_eq!(la_cost(&g, &Layout::from_order(order).unwrap()), 13);
    }

    #[test]
    fn windows_never_raise_the_cost() {
        let lfr = kith_graph::generate::lfr(&kith_graph::generate::LfrConfig {
            nodes: 3_000,
            avg_degree: 10.0,
            seed: 2,
            ..Default::default()
        })
        .unwrap();
        let g = &lfr.graph;
        let w = vec![1.0; g.out_csr().num_entries()];
        let start: Vec<VertexId> = crate::baselines::random_order(g, 3);
        let before = la_cost(g, &Layout::from_order(start.clone()).unwrap());
        let mut order = start;
        let mut pos = inverse(&order);
        let gained = window_sweep(g, &w, &mut order, &mut pos, 8);
        let after = la_cost(g, &Layout::from_order(order).unwrap());
        assert_eq!(before - after, gained as u64);
        assert!(after < before);
    }
}
