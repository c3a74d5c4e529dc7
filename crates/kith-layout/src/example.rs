//! Bondhu's worked example graph, small enough to check any method or metric by hand.

use kith_graph::Graph;

/// Bondhu's worked example: 7 users (ids 1–7) and 9 friendships 1-2, 1-3, 1-5, 2-3, 2-4,
/// 3-4, 3-5, 4-6, 4-7. Input order costs 18; the optimum is 13; the paper's own layout
/// {2,1,3,5,7,6,4} costs 20.
pub fn paper_example() -> Graph {
    let edges = [(1, 2), (1, 3), (1, 5), (2, 3), (2, 4), (3, 4), (3, 5), (4, 6), (4, 7)];
    Graph::from_edges(
        (1..=7).collect(),
        false,
        edges.iter().map(|&(a, b)| (a - 1, b - 1)).collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Layout, la_cost};

    /// Every order of the 7 users, by Heap's algorithm.
    fn all_orders(n: usize) -> Vec<Vec<u32>> {
        let mut a: Vec<u32> = (0..n as u32).collect();
        let mut c = vec![0; n];
        let mut out = vec![a.clone()];
        let mut i = 0;
        while i < n {
            if c[i] < i {
                a.swap(if i % 2 == 0 { 0 } else { c[i] }, i);
                out.push(a.clone());
                c[i] += 1;
                i = 0;
            } else {
                c[i] = 0;
                i += 1;
            }
        }
        out
    }

    #[test]
    fn brute_force_over_all_5040_orders_finds_the_optimum_13() {
        let g = paper_example();
        let orders = all_orders(7);
        assert_eq!(orders.len(), 5040);
        let cost = |o: &[u32]| la_cost(&g, &Layout::from_order(o.to_vec()).unwrap());
        assert_eq!(orders.iter().map(|o| cost(o)).min(), Some(13));
        assert_eq!(cost(&[0, 1, 2, 3, 4, 5, 6]), 18, "input order");
        // The paper's own layout {2,1,3,5,7,6,4}, as dense ids.
        assert_eq!(cost(&[1, 0, 2, 4, 6, 5, 3]), 20);
    }
}
