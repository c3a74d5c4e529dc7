//! The structure a `.kgraph` must have beyond its checksums, which a forger can recompute:
//! ascending original ids, no self loops, and adjacency that is its own reverse (undirected)
//! or whose in-adjacency is its out-adjacency reversed (directed).

use crate::csr::{Csr, VertexId};

/// Original ids are strictly ascending, within a piece and from the previous piece's last.
pub(crate) fn check_ids(piece: &[u64], before: Option<&u64>) -> Result<(), String> {
    let mut prev = before.copied();
    for &id in piece {
        if prev.is_some_and(|p| p >= id) {
            return Err("not strictly ascending".into());
        }
        prev = Some(id);
    }
    Ok(())
}

/// No vertex is its own neighbour: a graph keeps no self loops (they are counted as dropped).
pub(crate) fn check_no_self_loops(csr: &Csr) -> Result<(), String> {
    for v in 0..csr.num_vertices() as VertexId {
        if csr.neighbors(v).binary_search(&v).is_ok() {
            return Err(format!("vertex {v} is its own neighbour (a self loop)"));
        }
    }
    Ok(())
}

/// Every entry u -> v of `out` has v -> u in `back`. With lists strictly ascending and as
/// many entries in both, that makes `back` exactly `out` reversed (for `back == out`: the
/// graph is symmetric).
pub(crate) fn check_transpose(out: &Csr, back: &Csr) -> Result<(), String> {
    for u in 0..out.num_vertices() as VertexId {
        for &v in out.neighbors(u) {
            if back.neighbors(v).binary_search(&u).is_err() {
                return Err(format!("the edge {u} -> {v} has no {v} -> {u}"));
            }
        }
    }
    Ok(())
}
