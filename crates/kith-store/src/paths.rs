//! Parker's traversals over friend lists: the shortest path between two users by
//! bidirectional breadth-first search, and a user's neighbourhood within a few hops. They
//! read nothing but whole friend lists (and whether a user exists), so every
//! [`Engine`](crate::Engine) gets them as provided methods.

use std::collections::HashMap;

use crate::error::{Error, Result};

/// The most hops `shortest_path` searches.
pub const MAX_PATH_HOPS: u32 = 6;
/// The most hops `neighborhood` reaches.
pub const MAX_NEIGHBORHOOD_HOPS: u32 = 3;

/// Users within some hops of a user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Neighborhood {
    /// (uid, distance), by distance then uid; the user itself is not included.
    pub users: Vec<(u64, u32)>,
    /// Whether `limit` cut the list short.
    pub truncated: bool,
}

/// A shortest friendship path from `from` to `to` (both ends included) of at most
/// `max_hops` edges, or `None`, over the friend lists `friends` reads; `contains` says
/// whether a user exists. Bidirectional BFS that always expands the smaller frontier, one
/// whole level at a time, so the first level that meets gives the shortest.
pub(crate) fn shortest_path(
    from: u64,
    to: u64,
    max_hops: u32,
    contains: impl Fn(u64) -> Result<bool>,
    friends: impl Fn(u64) -> Result<Vec<u64>>,
) -> Result<Option<Vec<u64>>> {
    if max_hops > MAX_PATH_HOPS {
        return Err(Error::TooLarge {
            what: "max_hops",
            got: u64::from(max_hops),
            limit: u64::from(MAX_PATH_HOPS),
        });
    }
    // Both must exist, so an unknown id is an error rather than "no path".
    for uid in [from, to] {
        if !contains(uid)? {
            return Err(Error::UnknownUser(uid));
        }
    }
    if from == to {
        return Ok(Some(vec![from]));
    }
    // parent maps: node -> the node it was reached from (itself for the roots).
    let mut side = [HashMap::from([(from, from)]), HashMap::from([(to, to)])];
    let mut frontier = [vec![from], vec![to]];
    let mut depth = [0u32, 0u32];
    while depth[0] + depth[1] < max_hops {
        let s = usize::from(frontier[1].len() < frontier[0].len());
        if frontier[s].is_empty() {
            return Ok(None);
        }
        let mut next = Vec::new();
        // The best meeting found in this level: (total hops, node on side s, node on the other).
        let mut best: Option<(u32, u64, u64)> = None;
        for &u in &frontier[s] {
            for v in friends(u)? {
                if let Some(dv) = depth_of(&side[1 - s], v, depth[1 - s]) {
                    let total = depth[s] + 1 + dv;
                    if total <= max_hops && best.is_none_or(|b| total < b.0) {
                        best = Some((total, u, v));
                    }
                }
                if let std::collections::hash_map::Entry::Vacant(e) = side[s].entry(v) {
                    e.insert(u);
                    next.push(v);
                }
            }
        }
        if let Some((_, u, v)) = best {
            let mut path = walk(&side[s], u);
            path.reverse();
            path.extend(walk(&side[1 - s], v));
            if s == 1 {
                path.reverse();
            }
            return Ok(Some(path));
        }
        frontier[s] = next;
        depth[s] += 1;
    }
    Ok(None)
}

/// Users within `hops` (1 to 3) of `uid`, with their distance, at most `limit` of them, over
/// the friend lists `friends` reads.
pub(crate) fn neighborhood(
    uid: u64,
    hops: u32,
    limit: usize,
    friends: impl Fn(u64) -> Result<Vec<u64>>,
) -> Result<Neighborhood> {
    if hops == 0 || hops > MAX_NEIGHBORHOOD_HOPS {
        return Err(Error::Invalid(format!(
            "hops must be 1 to {MAX_NEIGHBORHOOD_HOPS}, got {hops}"
        )));
    }
    let mut seen = HashMap::from([(uid, 0u32)]);
    let mut users = Vec::new();
    let mut frontier = vec![uid];
    for d in 1..=hops {
        let mut next = Vec::new();
        for &u in &frontier {
            for v in friends(u)? {
                if let std::collections::hash_map::Entry::Vacant(e) = seen.entry(v) {
                    e.insert(d);
                    next.push(v);
                }
            }
        }
        next.sort_unstable();
        for &v in &next {
            if users.len() == limit {
                return Ok(Neighborhood { users, truncated: true });
            }
            users.push((v, d));
        }
        frontier = next;
    }
    Ok(Neighborhood { users, truncated: false })
}

/// The BFS depth of `v` on a side, if reached. Depths are not stored: a node is in the map
/// only if reached, and its depth is found by walking to the root (at most 6 steps).
fn depth_of(side: &HashMap<u64, u64>, v: u64, max: u32) -> Option<u32> {
    let mut d = 0;
    let mut at = v;
    loop {
        let &parent = side.get(&at)?;
        if parent == at {
            return Some(d);
        }
        d += 1;
        if d > max {
            return None;
        }
        at = parent;
    }
}

/// The path from `v` back to its side's root, `v` first.
fn walk(side: &HashMap<u64, u64>, v: u64) -> Vec<u64> {
    let mut path = vec![v];
    let mut at = v;
    while let Some(&parent) = side.get(&at) {
        if parent == at {
            break;
        }
        path.push(parent);
        at = parent;
    }
    path
}
