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
