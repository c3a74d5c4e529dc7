//! `parcom`'s communities: METIS multilevel k-way partitioning (Karypis & Kumar, 1998), which
//! minimises the weighted edge cut under a balance constraint (parts within 3 % of `n / k`).
//!
//! METIS takes integer weights: the model weights are doubled and rounded (the preferential
//! model's halves become exact integers), and at least 1.

use kith_graph::Graph;
use metis::Idx;

use super::partition::Partition;
use crate::error::{Error, Result};

/// Partitions `graph` into `k` parts minimising the cut of `weights` (aligned with the CSR
/// entries), seeded.
///
/// # Errors
/// `k < 1` or `k >` the number of vertices; a graph too large for METIS's 32-bit indices;
/// any failure METIS reports.
///
/// # Complexity
/// METIS's multilevel scheme: about `O(E log k)`, single-threaded.
pub(crate) fn metis_partition(
    graph: &Graph,
    weights: &[f64],
    k: usize,
    seed: u64,
) -> Result<Partition> {
    let n = graph.num_nodes();
    if k < 1 || k > n.max(1) {
        return Err(Error::InvalidArgument(format!(
            "--communities must be between 1 and the number of nodes ({n}), not {k}"
        )));
    }
    if n == 0 {
        return Ok(Partition::from_membership(&[]));
    }
    let too_large = || {
        Error::Metis(format!(
            "a graph of {n} nodes and {} adjacency entries exceeds METIS's 32-bit indices",
            weights.len()
        ))
    };
    let csr = graph.out_csr();
    let xadj: Vec<Idx> = csr
        .offsets()
        .iter()
        .map(|&o| Idx::try_from(o).map_err(|_| too_large()))
        .collect::<Result<_>>()?;
    let adjncy: Vec<Idx> = csr.targets().iter().map(|&v| v as Idx).collect();
    let adjwgt: Vec<Idx> =
        weights.iter().map(|&w| ((2.0 * w).round() as Idx).clamp(1, Idx::MAX / 1024)).collect();
    let parts = Idx::try_from(k).map_err(|_| too_large())?;
    let mut part = vec![0 as Idx; n];
    metis::Graph::new(1, parts, &xadj, &adjncy)
        .map_err(|e| Error::Metis(format!("METIS refused the graph: {e}")))?
        .set_adjwgt(&adjwgt)
        .set_option(metis::option::Seed((seed & 0x7fff_ffff) as Idx))
        .part_kway(&mut part)
        .map_err(|e| Error::Metis(e.to_string()))?;
    let membership: Vec<u32> = part.iter().map(|&p| p as u32).collect();
    Ok(Partition::from_membership(&membership))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_cliques_joined_by_one_edge_split_at_the_bridge() {
        let mut edges = Vec::new();
        for a in 0..5u32 {
            for b in a + 1..5 {
                edges.push((a, b));
                edges.push((a + 5, b + 5));
            }
        }
        edges.push((4, 5));
        let g = Graph::from_edges((0..10).collect(), false, edges);
        let w = vec![1.0; g.out_csr().num_entries()];
        let p = metis_partition(&g, &w, 2, 1).unwrap();
        assert_eq!(p.count(), 2);
        let m = p.membership();
        assert!(m[..5].iter().all(|&c| c == m[0]) && m[5..].iter().all(|&c| c == m[5]));
        assert_ne!(m[0], m[5]);
    }

    #[test]
    fn bad_part_counts_are_refused() {
        let g = Graph::from_edges((0..3).collect(), false, vec![(0, 1), (1, 2)]);
        let w = vec![1.0; 4];
        for k in [0, 4] {
            let err = metis_partition(&g, &w, k, 1).unwrap_err().to_string();
            assert!(err.contains("between 1 and the number of nodes (3)"), "{err}");
        }
        assert_eq!(metis_partition(&g, &w, 1, 1).unwrap().count(), 1);
    }
}
