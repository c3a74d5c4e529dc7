//! Gorder (Wei, Yu, Lu & Lin, SIGMOD 2016): a greedy ordering that maximises locality within a
//! sliding window.
//!
//! The score of placing `v` after the last `w` placed vertices is `Σ S(u, v)` over that window,
//! where `S(u, v) = S_s + S_n`: `S_s` counts common in-neighbours (siblings) and `S_n` the arcs
//! between `u` and `v` (2 for an undirected friendship, one arc each way). Gorder places the
//! vertex of highest degree first, then always the unplaced vertex of highest score. Scores are
//! kept in a unit heap (buckets by score with O(1) increment and decrement): when a vertex
//! enters the window its neighbours gain 2 and its neighbours' neighbours gain 1 per shared
//! neighbour; when it leaves the window, the same amounts are taken back. As in the authors'
//! code, siblings are not counted through hubs of degree above `√n`, which would cost the square
//! of their degree for little locality.

use kith_graph::{Graph, VertexId};

/// Gorder's window size in the paper's experiments.
pub(crate) const DEFAULT_WINDOW: usize = 5;

const NONE: u32 = u32::MAX;

/// A max-priority queue over small integer keys: a doubly linked list per key.
struct UnitHeap {
    key: Vec<u32>,
    prev: Vec<u32>,
    next: Vec<u32>,
    head: Vec<u32>,
    top: usize,
    present: Vec<bool>,
}

impl UnitHeap {
    /// Every vertex at key 0; `front_last` lists them so that its last element is popped first.
    fn new(n: usize, front_last: &[VertexId]) -> UnitHeap {
        let mut heap = UnitHeap {
            key: vec![0; n],
            prev: vec![NONE; n],
            next: vec![NONE; n],
            head: vec![NONE],
            top: 0,
            present: vec![true; n],
        };
        for &v in front_last {
            heap.link(v);
        }
        heap
    }

    fn link(&mut self, v: u32) {
        let k = self.key[v as usize] as usize;
        if k >= self.head.len() {
            self.head.resize(k + 1, NONE);
        }
        let first = self.head[k];
        self.prev[v as usize] = NONE;
        self.next[v as usize] = first;
        if first != NONE {
            self.prev[first as usize] = v;
        }
        self.head[k] = v;
        self.top = self.top.max(k);
    }

    fn unlink(&mut self, v: u32) {
        let (p, n) = (self.prev[v as usize], self.next[v as usize]);
        if p == NONE {
            self.head[self.key[v as usize] as usize] = n;
        } else {
            self.next[p as usize] = n;
        }
        if n != NONE {
            self.prev[n as usize] = p;
        }
    }

    fn add(&mut self, v: u32, delta: i64) {
        if !self.present[v as usize] {
            return;
        }
        self.unlink(v);
        self.key[v as usize] = (i64::from(self.key[v as usize]) + delta) as u32;
        self.link(v);
    }

    fn remove(&mut self, v: u32) {
        self.unlink(v);
        self.present[v as usize] = false;
    }

    fn pop_max(&mut self) -> Option<u32> {
        loop {
            let v = self.head[self.top];
            if v != NONE {
                self.remove(v);
                return Some(v);
            }
            if self.top == 0 {
                return None;
            }
            self.top -= 1;
        }
    }
}

/// Gorder with window `window` (the paper uses 5).
///
/// # Complexity
/// `O(Σ_u d(u)²)` over vertices of degree at most `√n`, plus `O(E)`.
pub(crate) fn gorder_order(graph: &Graph, window: usize) -> Vec<VertexId> {
    let n = graph.num_nodes();
    if n == 0 {
        return Vec::new();
    }
    let hub = (n as f64).sqrt() as usize;
    // Ascending degree, so that with every score 0 the highest-degree vertex is popped first.
    let mut by_degree: Vec<VertexId> = (0..n as VertexId).collect();
    by_degree.sort_by_key(|&v| (graph.degree(v), std::cmp::Reverse(v)));
    let mut heap = UnitHeap::new(n, &by_degree);
    let mut order: Vec<VertexId> = Vec::with_capacity(n);
    let update = |heap: &mut UnitHeap, v: VertexId, sign: i64| {
        for &u in graph.neighbors(v) {
            heap.add(u, 2 * sign);
            if graph.degree(u) <= hub {
                for &x in graph.neighbors(u) {
                    if x != v {
                        heap.add(x, sign);
                    }
                }
            }
        }
    };
    while let Some(v) = heap.pop_max() {
        order.push(v);
        update(&mut heap, v, 1);
        if order.len() > window {
            let leaving = order[order.len() - 1 - window];
            update(&mut heap, leaving, -1);
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Gorder score of every window, computed from scratch.
    fn score(graph: &Graph, order: &[VertexId], window: usize) -> u64 {
        let hub = (graph.num_nodes() as f64).sqrt() as usize;
        let s = |u: VertexId, v: VertexId| -> u64 {
            let arcs = if graph.neighbors(u).binary_search(&v).is_ok() { 2 } else { 0 };
            let siblings = graph
                .neighbors(u)
                .iter()
                .filter(|&&x| {
                    graph.degree(x) <= hub && graph.neighbors(v).binary_search(&x).is_ok()
                })
                .count() as u64;
            arcs + siblings
        };
        let mut total = 0;
        for i in 0..order.len() {
            for j in i.saturating_sub(window)..i {
                total += s(order[j], order[i]);
            }
        }
        total
    }

    /// The greedy by brute force: at every step the unplaced vertex of highest window score.
    fn brute_force_scores(graph: &Graph, window: usize) -> Vec<u64> {
        let order = gorder_order(graph, window);
        let hub = (graph.num_nodes() as f64).sqrt() as usize;
        let mut best_scores = Vec::new();
        let mut gains = Vec::new();
        for i in 1..order.len() {
            let placed = &order[..i];
            let win = &order[i.saturating_sub(window)..i];
            let gain = |v: VertexId| -> u64 {
                win.iter()
                    .map(|&u| {
                        let arcs = if graph.neighbors(u).binary_search(&v).is_ok() { 2 } else { 0 };
                        let sib = graph
                            .neighbors(u)
                            .iter()
                            .filter(|&&x| {
                                graph.degree(x) <= hub
                                    && graph.neighbors(v).binary_search(&x).is_ok()
                            })
                            .count() as u64;
                        arcs + sib
                    })
                    .sum()
            };
            let best = (0..graph.num_nodes() as VertexId)
                .filter(|v| !placed.contains(v))
                .map(gain)
                .max()
                .unwrap();
            best_scores.push(best);
            gains.push(gain(order[i]));
        }
        assert_eq!(best_scores, gains, "gorder did not always take a best-scoring vertex");
        gains
    }

    #[test]
    fn takes_a_best_vertex_at_every_step() {
        use rand::{Rng, SeedableRng};
        for seed in 0..15 {
            let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
            let edges =
                (0..90).map(|_| (rng.random_range(0..40), rng.random_range(0..40))).collect();
            let g = Graph::from_edges((0..40).collect(), false, edges);
            brute_force_scores(&g, 5);
            let order = gorder_order(&g, 5);
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..40).collect::<Vec<_>>());
            // Gorder's score beats the input order's on a random graph.
            assert!(score(&g, &order, 5) >= score(&g, &(0..40).collect::<Vec<_>>(), 5));
        }
    }
}
