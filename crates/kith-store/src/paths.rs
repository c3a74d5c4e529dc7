//! Parker's traversals over friend lists: the shortest path between two users by
//! bidirectional breadth-first search, and a user's neighbourhood within a few hops. They
//! read nothing but whole friend lists (and whether a user exists), so every
//! [`Engine`](crate::Engine) gets them as provided methods.
//!
//! Their work is bounded by the request: each counts the friend-list entries it reads
//! against a budget ([`Engine::traversal_budget`](crate::Engine::traversal_budget), by
//! default [`DEFAULT_TRAVERSAL_BUDGET`]) and answers
//! [`Error::TooExpensive`](crate::Error::TooExpensive) once it is spent, and a
//! neighbourhood holds at most `limit` users of its last level in memory.

use std::collections::{BTreeSet, HashMap};

use crate::error::{Error, Result};

/// The most hops `shortest_path` searches.
pub const MAX_PATH_HOPS: u32 = 6;
/// The most hops `neighborhood` reaches.
pub const MAX_NEIGHBORHOOD_HOPS: u32 = 3;

/// The friend-list entries one traversal may read unless the engine says otherwise: four
/// times the largest friend list, so any single list (and a few more) can be read, while a
/// hub's 2-hop level of millions cannot.
pub const DEFAULT_TRAVERSAL_BUDGET: u64 = 4 * crate::record::MAX_FRIENDS as u64;

/// Counts friend-list entries read against a budget.
struct Budget {
    what: &'static str,
    limit: u64,
    spent: u64,
}

impl Budget {
    /// Reads `u`'s friends through `friends`, charging the list's length.
    fn read(&mut self, u: u64, friends: &impl Fn(u64) -> Result<Vec<u64>>) -> Result<Vec<u64>> {
        if self.spent >= self.limit {
            return Err(Error::TooExpensive { what: self.what, limit: self.limit });
        }
        let list = friends(u)?;
        self.spent = self.spent.saturating_add(list.len() as u64);
        if self.spent > self.limit {
            return Err(Error::TooExpensive { what: self.what, limit: self.limit });
        }
        Ok(list)
    }
}

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
/// whole level at a time, so the first level that meets gives the shortest. More than
/// `budget` friend-list entries read is [`Error::TooExpensive`].
pub(crate) fn shortest_path(
    from: u64,
    to: u64,
    max_hops: u32,
    budget: u64,
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
    let mut budget =
        Budget { what: "friend-list entries read by shortest_path", limit: budget, spent: 0 };
    while depth[0] + depth[1] < max_hops {
        let s = usize::from(frontier[1].len() < frontier[0].len());
        if frontier[s].is_empty() {
            return Ok(None);
        }
        let mut next = Vec::new();
        // The best meeting found in this level: (total hops, node on side s, node on the other).
        let mut best: Option<(u32, u64, u64)> = None;
        for &u in &frontier[s] {
            for v in budget.read(u, &friends)? {
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
/// the friend lists `friends` reads: by distance then uid, exactly the first `limit` of that
/// order. It stops at the level that reaches `limit`, and of that level keeps only the
/// `limit` smallest uids it has met, so memory is bounded by `limit`; the lists it reads
/// are bounded by `budget` entries ([`Error::TooExpensive`] past it).
pub(crate) fn neighborhood(
    uid: u64,
    hops: u32,
    limit: usize,
    budget: u64,
    friends: impl Fn(u64) -> Result<Vec<u64>>,
) -> Result<Neighborhood> {
    if hops == 0 || hops > MAX_NEIGHBORHOOD_HOPS {
        return Err(Error::Invalid(format!(
            "hops must be 1 to {MAX_NEIGHBORHOOD_HOPS}, got {hops}"
        )));
    }
    let mut budget =
        Budget { what: "friend-list entries read by neighborhood", limit: budget, spent: 0 };
    // Every user of the levels before the current one (at most `limit` of them, as a level
    // that fills the answer is the last one expanded).
    let mut seen = HashMap::from([(uid, 0u32)]);
    let mut users = Vec::new();
    let mut frontier = vec![uid];
    for d in 1..=hops {
        let room = limit - users.len();
        // The smallest `room` new uids of this level met so far, and whether more were met.
        let mut level = BTreeSet::new();
        let mut more = false;
        for &u in &frontier {
            for v in budget.read(u, &friends)? {
                if seen.contains_key(&v) || level.contains(&v) {
                    continue;
                }
                if level.len() < room {
                    level.insert(v);
                } else if level.last().is_some_and(|&max| v < max) {
                    level.pop_last();
                    level.insert(v);
                    more = true;
                } else {
                    more = true;
                }
            }
        }
        users.extend(level.iter().map(|&v| (v, d)));
        if more {
            return Ok(Neighborhood { users, truncated: true });
        }
        if level.is_empty() {
            break;
        }
        if users.len() == limit && d < hops {
            // Full, but a later level might have more: the answer is cut if it has any.
            let next_has_more = frontier_has_new(&level, &seen, &mut budget, &friends)?;
            return Ok(Neighborhood { users, truncated: next_has_more });
        }
        for &v in &level {
            seen.insert(v, d);
        }
        frontier = level.into_iter().collect();
    }
    Ok(Neighborhood { users, truncated: false })
}

/// Whether any friend of `level` is in neither `level` nor `seen`: whether the next level
/// has a user. Stops at the first one.
fn frontier_has_new(
    level: &BTreeSet<u64>,
    seen: &HashMap<u64, u32>,
    budget: &mut Budget,
    friends: &impl Fn(u64) -> Result<Vec<u64>>,
) -> Result<bool> {
    for &u in level {
        if budget.read(u, friends)?.iter().any(|v| !seen.contains_key(v) && !level.contains(v)) {
            return Ok(true);
        }
    }
    Ok(false)
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

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    /// A generated graph: user 0 has `hub` friends 1..=hub, and each of those has `fan`
    /// friends of its own that no one else has. Counts the entries handed out.
    fn star_of_stars(hub: u64, fan: u64, read: &Cell<u64>) -> impl Fn(u64) -> Result<Vec<u64>> {
        move |u| {
            let list: Vec<u64> = if u == 0 {
                (1..=hub).collect()
            } else if u <= hub {
                std::iter::once(0).chain((0..fan).map(|i| 1_000_000 + u * fan + i)).collect()
            } else if u >= 1_000_000 && fan > 0 {
                vec![(u - 1_000_000) / fan]
            } else {
                Vec::new()
            };
            read.set(read.get() + list.len() as u64);
            Ok(list)
        }
    }

    #[test]
    fn a_hubs_second_level_is_refused_past_the_budget() {
        let read = Cell::new(0);
        // The 15 nearest: the hub's 10 friends and 5 of their 100,000 friends, which are only
        // known to be the smallest once every list of the level is read.
        let err = neighborhood(0, 2, 15, 50_000, star_of_stars(10, 10_000, &read)).unwrap_err();
        assert!(matches!(err, Error::TooExpensive { limit: 50_000, .. }), "{err}");
        assert_eq!(
            err.to_string(),
            "friend-list entries read by neighborhood exceeds the budget of 50000"
        );
        assert!(read.get() <= 50_000 + 10_001, "read {} entries", read.get());
    }

    #[test]
    fn a_neighbourhood_keeps_the_first_limit_in_order_and_bounded() {
        let read = Cell::new(0);
        let hood = neighborhood(0, 2, 15, 1 << 20, star_of_stars(10, 100, &read)).unwrap();
        // Level 1 is 1..=10, then the five smallest of level 2: user 1's first five.
        let mut want: Vec<(u64, u32)> = (1..=10).map(|v| (v, 1)).collect();
        want.extend((0..5).map(|i| (1_000_000 + 100 + i, 2)));
        assert_eq!(hood, Neighborhood { users: want, truncated: true });
        // Exactly the limit, with nothing further: not truncated.
        let hood = neighborhood(0, 1, 10, 1 << 20, star_of_stars(10, 0, &read)).unwrap();
        assert_eq!((hood.users.len(), hood.truncated), (10, false));
        let hood = neighborhood(0, 2, 10, 1 << 20, star_of_stars(10, 1, &read)).unwrap();
        assert_eq!((hood.users.len(), hood.truncated), (10, true));
    }

    #[test]
    fn a_long_search_is_refused_past_the_budget() {
        let read = Cell::new(0);
        let contains = |_| Ok(true);
        // Two leaves under different hub friends: 4 hops apart, through 0's and two of its
        // friends' lists of 2,001 entries each.
        let (a, b) = (1_000_000 + 2000, 1_000_000 + 2000 * 2000 + 5);
        let friends = star_of_stars(2000, 2000, &read);
        let err = shortest_path(a, b, 4, 3000, contains, friends).unwrap_err();
        assert_eq!(
            err.to_string(),
            "friend-list entries read by shortest_path exceeds the budget of 3000"
        );
        assert!(read.get() <= 3000 + 2001, "read {} entries", read.get());
        let friends = star_of_stars(2000, 2000, &read);
        let path = shortest_path(a, b, 4, 100_000, contains, friends).unwrap();
        assert_eq!(path, Some(vec![a, 1, 0, 2000, b]));
    }
}
