//! The baseline orderings: input order, seeded random, degree, organ-pipe, BFS and reverse
//! Cuthill–McKee. Gorder has its own file.

use std::collections::VecDeque;

use kith_graph::{Graph, VertexId};
use rand::SeedableRng;
use rand::seq::SliceRandom;

/// Input order: vertices by ascending original id (kith's dense ids are their ranks).
pub(crate) fn input_order(graph: &Graph) -> Vec<VertexId> {
    (0..graph.num_nodes() as VertexId).collect()
}

/// A uniformly random permutation, seeded.
pub(crate) fn random_order(graph: &Graph, seed: u64) -> Vec<VertexId> {
    let mut order = input_order(graph);
    order.shuffle(&mut rand_pcg::Pcg64Mcg::seed_from_u64(seed ^ 0x7261_6e64_6f6d));
    order
}

/// Descending degree, ties by input order.
pub(crate) fn degree_order(graph: &Graph) -> Vec<VertexId> {
    let mut order = input_order(graph);
    order.sort_by_key(|&v| std::cmp::Reverse(graph.degree(v)));
    order
}

/// The organ-pipe arrangement (Bondhu thesis §5.8): the busiest user (highest degree) in the middle,
/// the next ones alternately right and left of it, so that the access frequency falls off
/// symmetrically from the centre, which minimises expected seek distance for independent
/// accesses.
pub(crate) fn organ_pipe_order(graph: &Graph) -> Vec<VertexId> {
    crate::greedy::alternate_sides(&degree_order(graph))
}

/// Breadth-first order: from the highest-degree unvisited vertex, neighbours in input order;
/// every component in turn, larger hubs first.
pub(crate) fn bfs_order(graph: &Graph) -> Vec<VertexId> {
    let n = graph.num_nodes();
    let mut visited = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let mut queue = VecDeque::new();
    for root in degree_order(graph) {
        if visited[root as usize] {
            continue;
        }
        visited[root as usize] = true;
        queue.push_back(root);
        while let Some(u) = queue.pop_front() {
            order.push(u);
            for &v in graph.neighbors(u) {
                if !visited[v as usize] {
                    visited[v as usize] = true;
                    queue.push_back(v);
                }
            }
        }
    }
    order
}

/// Reverse Cuthill–McKee (George & Liu's variant): per component, start from a
/// pseudo-peripheral vertex (found by repeated BFS from a minimum-degree vertex while the
/// eccentricity grows), visit neighbours in ascending degree, then reverse the whole order.
/// Components are taken in order of their minimum-degree vertex.
pub(crate) fn rcm_order(graph: &Graph) -> Vec<VertexId> {
    let n = graph.num_nodes();
    let mut by_degree = input_order(graph);
    by_degree.sort_by_key(|&v| graph.degree(v));
    let mut visited = vec![false; n];
    // Scratch for the pseudo-peripheral search: BFS levels stamped with the search number.
    let mut stamp = vec![0u32; n];
    let mut search = 0u32;
    let mut order = Vec::with_capacity(n);
    let mut queue = VecDeque::new();
    let mut neighbours = Vec::new();
    for start in by_degree {
        if visited[start as usize] {
            continue;
        }
        let root = pseudo_peripheral(graph, start, &mut stamp, &mut search);
        visited[root as usize] = true;
        queue.push_back(root);
        while let Some(u) = queue.pop_front() {
            order.push(u);
            neighbours.clear();
            neighbours.extend(graph.neighbors(u).iter().copied().filter(|&v| !visited[v as usize]));
            neighbours.sort_by_key(|&v| (graph.degree(v), v));
            for &v in &neighbours {
                visited[v as usize] = true;
                queue.push_back(v);
            }
        }
    }
    order.reverse();
    order
}

/// George & Liu: BFS from `v`; move to the minimum-degree vertex of the last level while that
/// makes the eccentricity grow (at most 8 rounds, plenty on small-world graphs).
fn pseudo_peripheral(
    graph: &Graph,
    mut v: VertexId,
    stamp: &mut [u32],
    search: &mut u32,
) -> VertexId {
    let mut eccentricity = 0;
    for _ in 0..8 {
        *search += 1;
        let (last_level, depth) = bfs_last_level(graph, v, stamp, *search);
        let next = last_level
            .into_iter()
            .min_by_key(|&u| (graph.degree(u), u))
            .expect("the last level holds at least the root");
        if depth <= eccentricity {
            break;
        }
        eccentricity = depth;
        v = next;
    }
    v
}

/// The vertices of the deepest BFS level from `root`, and that depth.
fn bfs_last_level(
    graph: &Graph,
    root: VertexId,
    stamp: &mut [u32],
    mark: u32,
) -> (Vec<VertexId>, u32) {
    let mut level = vec![root];
    stamp[root as usize] = mark;
    let mut depth = 0;
    loop {
        let mut next = Vec::new();
        for &u in &level {
            for &w in graph.neighbors(u) {
                if stamp[w as usize] != mark {
                    stamp[w as usize] = mark;
                    next.push(w);
                }
            }
        }
        if next.is_empty() {
            return (level, depth);
        }
        level = next;
        depth += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(n: u32) -> Graph {
        Graph::from_edges((0..u64::from(n)).collect(), false, (1..n).map(|i| (i - 1, i)).collect())
    }

    #[test]
    fn orders_on_a_small_star_with_a_tail() {
        // Star centre 0 with leaves 1, 2, 3; a tail 3-4.
        let g = Graph::from_edges((0..5).collect(), false, vec![(0, 1), (0, 2), (0, 3), (3, 4)]);
        assert_eq!(degree_order(&g), vec![0, 3, 1, 2, 4]);
        assert_eq!(organ_pipe_order(&g), vec![4, 1, 0, 3, 2]);
        assert_eq!(bfs_order(&g), vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn rcm_of_a_shuffled_path_is_the_path() {
        let g = path(9);
        let order = rcm_order(&g);
        // A path's pseudo-peripheral vertex is an end; RCM walks it end to end.
        assert!(order == (0..9).collect::<Vec<_>>() || order == (0..9).rev().collect::<Vec<_>>());
    }
}
