//! The structure a `.kgraph` must have beyond its checksums, which a forger can recompute:
//! ascending original ids, no self loops, and adjacency that is its own reverse (undirected)
//! or whose in-adjacency is its out-adjacency reversed (directed).

use rayon::prelude::*;

use crate::csr::{Csr, VertexId};
use crate::hint::prefetch;

/// Vertices whose entries [`check_symmetric`] lists before searching their mirrors.
const RUN: usize = 4096;

/// How many entries ahead [`check_symmetric`] fetches a mirror's offsets (its list half as
/// far ahead, once the offsets are in).
const AHEAD: usize = 16;

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
    let looped = (0..csr.num_vertices() as VertexId)
        .into_par_iter()
        .find_first(|&v| csr.neighbors(v).binary_search(&v).is_ok());
    match looped {
        Some(v) => Err(format!("vertex {v} is its own neighbour (a self loop)")),
        None => Ok(()),
    }
}

/// Every entry u -> v of `out` has v -> u in `back`. With lists strictly ascending and as
/// many entries in both, that makes `back` exactly `out` reversed.
pub(crate) fn check_transpose(out: &Csr, back: &Csr) -> Result<(), String> {
    let missing = (0..out.num_vertices() as VertexId).into_par_iter().find_map_first(|u| {
        let v = out.neighbors(u).iter().find(|&&v| back.neighbors(v).binary_search(&u).is_err());
        v.map(|&v| (u, v))
    });
    match missing {
        Some((u, v)) => Err(format!("the edge {u} -> {v} has no {v} -> {u}")),
        None => Ok(()),
    }
}

/// `out` is its own reverse (an undirected graph). Every entry u -> v with u < v must have
/// its mirror v -> u, and there must be as many entries below the diagonal as above: the
/// mirrors of distinct entries are distinct, so with equal counts they are all the entries
/// below it. Half the searches of [`check_transpose`]; lists must be strictly ascending and
/// free of self loops (checked before).
///
/// Each search lands on a list far from the last one, a cache miss on a large graph; so a
/// run of vertices' entries is listed first, and while one entry is searched the offsets
/// and list of one [`AHEAD`] entries on are fetched into the cache.
pub(crate) fn check_symmetric(out: &Csr) -> Result<(), String> {
    let n = out.num_vertices();
    let (missing, above, below) = (0..n.div_ceil(RUN))
        .into_par_iter()
        .map_init(Vec::new, |upper: &mut Vec<(VertexId, VertexId)>, run| {
            upper.clear();
            let mut below = 0u64;
            for u in (run * RUN) as VertexId..((run + 1) * RUN).min(n) as VertexId {
                let list = out.neighbors(u);
                let split = list.partition_point(|&v| v < u);
                below += split as u64;
                upper.extend(list[split..].iter().map(|&v| (u, v)));
            }
            let missing = (0..upper.len()).find_map(|i| {
                if let Some(&(_, ahead)) = upper.get(i + AHEAD) {
                    prefetch(out.offsets.get(ahead as usize));
                }
                if let Some(&(_, near)) = upper.get(i + AHEAD / 2) {
                    prefetch(out.targets.get(out.offsets[near as usize] as usize));
                }
                let (u, v) = upper[i];
                out.neighbors(v).binary_search(&u).is_err().then_some((u, v))
            });
            (missing, upper.len() as u64, below)
        })
        .reduce(
            || (None, 0, 0),
            // Keep the first vertex's failure, whichever piece finishes first.
            |a, b| (a.0.or(b.0), a.1 + b.1, a.2 + b.2),
        );
    if let Some((u, v)) = missing {
        return Err(format!("the edge {u} -> {v} has no {v} -> {u}"));
    }
    if above != below {
        return Err(format!(
            "{above} entries u -> v with u < v but {below} with u > v: some have no reverse"
        ));
    }
    Ok(())
}
