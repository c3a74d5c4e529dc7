//! Turning original `u64` ids into dense `u32` ids: the rank of each id among all ids.

use rayon::prelude::*;

use crate::csr::{MAX_VERTICES, VertexId};
use crate::graph::Graph;

/// Builds a graph from edges in original ids. Every id that appears is a vertex, including one
/// whose only edge is a self-loop.
///
/// Compact id spaces (the usual case: ids below a few times the number of edges) are mapped
/// through a direct table; sparse ones through a sorted id list and binary search.
pub(crate) fn densify(pairs: Vec<(u64, u64)>, directed: bool) -> Result<Graph, String> {
    let max_id = pairs.par_iter().map(|&(a, b)| a.max(b)).max().unwrap_or(0);
    let table_limit = (pairs.len() as u64).saturating_mul(4).saturating_add(1 << 16);
    let (ids, edges) =
        if max_id < table_limit { by_table(&pairs, max_id as usize) } else { by_search(&pairs) };
    if ids.len() > MAX_VERTICES {
        return Err(format!(
            "{} distinct ids; kith supports at most {MAX_VERTICES} vertices",
            ids.len()
        ));
    }
    drop(pairs);
    Ok(Graph::from_edges(ids, directed, edges))
}

fn by_table(pairs: &[(u64, u64)], max_id: usize) -> (Vec<u64>, Vec<(VertexId, VertexId)>) {
    const ABSENT: VertexId = VertexId::MAX;
    let mut table = vec![ABSENT; max_id + 1];
    for &(a, b) in pairs {
        table[a as usize] = 0;
        table[b as usize] = 0;
    }
    let mut ids = Vec::new();
    for (id, slot) in table.iter_mut().enumerate() {
        if *slot != ABSENT {
            *slot = ids.len() as VertexId;
            ids.push(id as u64);
        }
    }
    let edges = pairs.par_iter().map(|&(a, b)| (table[a as usize], table[b as usize])).collect();
    (ids, edges)
}

fn by_search(pairs: &[(u64, u64)]) -> (Vec<u64>, Vec<(VertexId, VertexId)>) {
    let mut ids: Vec<u64> = pairs.par_iter().flat_map_iter(|&(a, b)| [a, b]).collect();
    ids.par_sort_unstable();
    ids.dedup();
    let rank = |id: u64| ids.binary_search(&id).expect("every id was collected") as VertexId;
    let edges = pairs.par_iter().map(|&(a, b)| (rank(a), rank(b))).collect();
    (ids, edges)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_and_search_agree() {
        let pairs = vec![(7, 3), (3, 9), (9, 9), (100, 7)];
        assert_eq!(by_table(&pairs, 100), by_search(&pairs));
        let g = densify(pairs, false).unwrap();
        assert_eq!(g.original_ids(), &[3, 7, 9, 100]);
        assert_eq!(g.cleaning().self_loops_dropped, 1);
        let sparse = densify(vec![(u64::MAX, 1), (1 << 40, 1)], true).unwrap();
        assert_eq!(sparse.original_ids(), &[1, 1 << 40, u64::MAX]);
        assert_eq!(sparse.num_edges(), 2);
    }
}
