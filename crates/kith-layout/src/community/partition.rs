//! `Partition`, an assignment of vertices to communities, and Newman's modularity of one.

use kith_graph::Graph;
use rayon::prelude::*;

/// An assignment of every vertex to one of `count` communities `0..count`.
///
/// **Invariant: every `membership` entry is `< count`.** Communities may be empty (METIS can
/// leave a part empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    membership: Vec<u32>,
    count: usize,
}

impl Partition {
    /// A partition from a membership vector, renumbering communities densely in order of
    /// first appearance so that none is empty.
    pub fn from_membership(membership: &[u32]) -> Partition {
        let mut relabel = std::collections::HashMap::new();
        let mut count = 0u32;
        let membership = membership
            .iter()
            .map(|&c| {
                let slot = relabel.entry(c).or_insert_with(|| {
                    count += 1;
                    count - 1
                });
                *slot
            })
            .collect();
        Partition { membership, count: count as usize }
    }

    /// The community of each vertex.
    pub fn membership(&self) -> &[u32] {
        &self.membership
    }

    /// The number of communities.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The members of every community, each list ascending.
    pub fn members(&self) -> Vec<Vec<u32>> {
        let mut members = vec![Vec::new(); self.count];
        for (v, &c) in self.membership.iter().enumerate() {
            members[c as usize].push(v as u32);
        }
        members
    }
}

/// Newman's modularity of `partition` under `weights` (aligned with the CSR entries):
/// `Q = Σ_c [ in_c / 2m − (tot_c / 2m)² ]`, where `in_c` sums the weights of adjacency entries
/// inside `c` (both directions of each edge), `tot_c` the weighted degrees of its members, and
/// `2m` all weights. 0 for a graph without edges.
pub(crate) fn modularity(graph: &Graph, weights: &[f64], partition: &Partition) -> f64 {
    let csr = graph.out_csr();
    let member = partition.membership();
    let n = graph.num_nodes() as u32;
    let (inside, degree): (Vec<f64>, Vec<f64>) = (0..n)
        .into_par_iter()
        .map(|u| {
            let (s, e) = csr.range(u);
            let cu = member[u as usize];
            let mut inside = 0.0;
            let mut degree = 0.0;
            for (&v, &w) in csr.targets()[s..e].iter().zip(&weights[s..e]) {
                degree += w;
                if member[v as usize] == cu {
                    inside += w;
                }
            }
            (inside, degree)
        })
        .unzip();
    let two_m: f64 = degree.iter().sum();
    if two_m == 0.0 {
        return 0.0;
    }
    let mut tot = vec![0.0; partition.count()];
    for (u, d) in degree.iter().enumerate() {
        tot[member[u] as usize] += d;
    }
    let inside: f64 = inside.iter().sum();
    inside / two_m - tot.iter().map(|t| (t / two_m) * (t / two_m)).sum::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_triangles_joined_by_an_edge() {
        let g = Graph::from_edges(
            (0..6).collect(),
            false,
            vec![(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3), (2, 3)],
        );
        let w = vec![1.0; g.out_csr().num_entries()];
        let p = Partition::from_membership(&[7, 7, 7, 9, 9, 9]);
        assert_eq!(p.membership(), &[0, 0, 0, 1, 1, 1]);
        // m = 7: in = 12/14, tot = 7/14 each.
        let q = modularity(&g, &w, &p);
        assert!((q - (12.0 / 14.0 - 0.5)).abs() < 1e-12, "{q}");
        let one = Partition::from_membership(&[0; 6]);
        assert!(modularity(&g, &w, &one).abs() < 1e-12);
    }
}
