//! The graph as the `kith` method works on it: plain adjacency lists that can be relabelled
//! so that vertex ids follow the current order.
//!
//! Relabelling matters for speed, not for the result: once the top levels of the bisection
//! have grouped friends together, giving every vertex its position as its id makes the
//! neighbour lists of a block contiguous in memory and the per-query tables indexed by id
//! local, so the deeper levels and the page refinement run out of cache rather than memory.

use kith_graph::{Graph, VertexId};
use rayon::prelude::*;

/// Adjacency lists on ids `0..n`, each list ascending.
#[derive(Clone, Debug)]
pub(crate) struct Adjacency {
    offsets: Vec<usize>,
    targets: Vec<VertexId>,
}

impl Adjacency {
    pub(crate) fn from_graph(graph: &Graph) -> Adjacency {
        let csr = graph.out_csr();
        Adjacency {
            offsets: csr.offsets().iter().map(|&o| o as usize).collect(),
            targets: csr.targets().to_vec(),
        }
    }

    /// The same graph with vertex `order[i]` renamed `i`.
    pub(crate) fn relabel(&self, order: &[VertexId]) -> Adjacency {
        let n = self.num_nodes();
        let new_id = crate::layout::inverse(order);
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0);
        for &v in order {
            offsets.push(offsets.last().copied().unwrap_or(0) + self.degree(v));
        }
        let mut targets = vec![0 as VertexId; self.targets.len()];
        let mut rest: &mut [VertexId] = &mut targets;
        let mut lists = Vec::with_capacity(n);
        for &v in order {
            let (list, tail) = rest.split_at_mut(self.degree(v));
            lists.push((v, list));
            rest = tail;
        }
        lists.into_par_iter().for_each(|(v, list)| {
            for (slot, &u) in list.iter_mut().zip(self.neighbors(v)) {
                *slot = new_id[u as usize];
            }
            list.sort_unstable();
        });
        Adjacency { offsets, targets }
    }

    pub(crate) fn num_nodes(&self) -> usize {
        self.offsets.len() - 1
    }

    pub(crate) fn neighbors(&self, v: VertexId) -> &[VertexId] {
        &self.targets[self.offsets[v as usize]..self.offsets[v as usize + 1]]
    }

    pub(crate) fn degree(&self, v: VertexId) -> usize {
        self.offsets[v as usize + 1] - self.offsets[v as usize]
    }

    /// A refinement's rounds: at most `max`, the first visiting `first`, each later one the
    /// vertices the last round moved and their neighbours. `round(visit, moved)` runs one
    /// (pushing the vertices it moved) and says whether to go on.
    pub(crate) fn rounds(
        &self,
        first: Vec<VertexId>,
        max: usize,
        mut round: impl FnMut(&mut [VertexId], &mut Vec<VertexId>) -> bool,
    ) {
        let mut visit = first;
        let mut moved = Vec::new();
        let mut mark = vec![false; self.num_nodes()];
        for _ in 0..max {
            moved.clear();
            if !round(&mut visit, &mut moved) {
                break;
            }
            self.near(&moved, &mut mark, &mut visit);
        }
    }

    /// Into `out` (cleared), the vertices of `of` and their neighbours, each once. `mark`
    /// (one flag per vertex, all false) is left all false.
    fn near(&self, of: &[VertexId], mark: &mut [bool], out: &mut Vec<VertexId>) {
        out.clear();
        for &v in of {
            for u in std::iter::once(v).chain(self.neighbors(v).iter().copied()) {
                if !mark[u as usize] {
                    mark[u as usize] = true;
                    out.push(u);
                }
            }
        }
        for &u in out.iter() {
            mark[u as usize] = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relabelling_renames_every_edge() {
        let g = Graph::from_edges((0..4).collect(), false, vec![(0, 1), (1, 2), (2, 3), (3, 0)]);
        let adj = Adjacency::from_graph(&g);
        let order = [2, 0, 3, 1];
        let r = adj.relabel(&order);
        for (i, &old) in order.iter().enumerate() {
            let mut expected: Vec<u32> = adj
                .neighbors(old)
                .iter()
                .map(|&u| order.iter().position(|&x| x == u).unwrap() as u32)
                .collect();
            expected.sort_unstable();
            assert_eq!(r.neighbors(i as u32), expected.as_slice());
        }
    }
}
