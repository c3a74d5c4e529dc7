//! Bondhu's two-level arrangement: the greedy inside every community, the same greedy on the
//! graph of communities, then each community's block laid out in the community order.

use kith_graph::{Graph, VertexId};
use rayon::prelude::*;

use crate::community::Partition;
use crate::greedy::{WeightedGraph, greedy_arrangement};

/// The subgraph induced by each community (local ids = rank in the member list), and the
/// graph of communities (edge weight = summed weights between two communities).
pub(crate) fn split(
    graph: &Graph,
    weights: &[f64],
    partition: &Partition,
) -> (Vec<Vec<u32>>, Vec<WeightedGraph>, WeightedGraph) {
    let members = partition.members();
    let membership = partition.membership();
    let mut local = vec![0u32; graph.num_nodes()];
    for list in &members {
        for (i, &v) in list.iter().enumerate() {
            local[v as usize] = i as u32;
        }
    }
    let csr = graph.out_csr();
    let subgraphs: Vec<WeightedGraph> = members
        .par_iter()
        .map(|list| {
            let mut offsets = Vec::with_capacity(list.len() + 1);
            offsets.push(0);
            let (mut targets, mut ws) = (Vec::new(), Vec::new());
            for &v in list {
                let (s, e) = csr.range(v);
                let c = membership[v as usize];
                for (&u, &w) in csr.targets()[s..e].iter().zip(&weights[s..e]) {
                    if membership[u as usize] == c {
                        targets.push(local[u as usize]);
                        ws.push(w);
                    }
                }
                offsets.push(targets.len());
            }
            WeightedGraph::new(offsets, targets, ws)
        })
        .collect();
    let between: Vec<(u32, u32, f64)> = (0..graph.num_nodes() as VertexId)
        .into_par_iter()
        .flat_map_iter(|u| {
            let (s, e) = csr.range(u);
            let cu = membership[u as usize];
            csr.targets()[s..e]
                .iter()
                .zip(&weights[s..e])
                .filter(move |&(&v, _)| u < v && membership[v as usize] != cu)
                .map(move |(&v, &w)| (cu, membership[v as usize], w))
        })
        .collect();
    let community_graph = WeightedGraph::from_edges(partition.count(), between);
    (members, subgraphs, community_graph)
}

/// Bondhu's layout from a partition: greedy within communities and across them.
pub(crate) fn arrange_communities(
    graph: &Graph,
    weights: &[f64],
    partition: &Partition,
    seed: u64,
) -> Vec<VertexId> {
    let (members, subgraphs, community_graph) = split(graph, weights, partition);
    let blocks: Vec<Vec<VertexId>> = subgraphs
        .par_iter()
        .zip(&members)
        .enumerate()
        .map(|(c, (sub, list))| {
            greedy_arrangement(sub, seed.wrapping_add(c as u64))
                .into_iter()
                .map(|i| list[i as usize])
                .collect()
        })
        .collect();
    let community_order = greedy_arrangement(&community_graph, seed);
    community_order.iter().flat_map(|&c| blocks[c as usize].iter().copied()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn communities_stay_contiguous_and_the_order_is_a_permutation() {
        let lfr = kith_graph::generate::lfr(&kith_graph::generate::LfrConfig {
            nodes: 2_000,
            avg_degree: 12.0,
            seed: 5,
            ..Default::default()
        })
        .unwrap();
        let g = &lfr.graph;
        let w = vec![1.0; g.out_csr().num_entries()];
        let p = crate::community::metis_partition(g, &w, 16, 1).unwrap();
        let order = arrange_communities(g, &w, &p, 9);
        crate::layout::Layout::from_order(order.clone()).unwrap();
        // Each community occupies one run of positions.
        let runs = order
            .windows(2)
            .filter(|x| p.membership()[x[0] as usize] != p.membership()[x[1] as usize])
            .count();
        assert_eq!(runs + 1, p.count());
    }
}
