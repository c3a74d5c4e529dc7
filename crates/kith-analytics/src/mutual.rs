//! Mutual friends: for every friendship, the friends both sides share, as a vertex program
//! with list values (LFGraph's variable-size values), and "people you may know": a user's
//! friends of friends, ranked by how many friends they share with the user.

use std::collections::HashMap;

use kith_graph::{VertexId, for_each_common};

use crate::engine::{Context, InGraph, RunStats, VertexProgram, run};

/// For every friendship `(a, b)` with `a < b`, in that order, the common friends (ascending).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MutualFriends {
    pairs: Vec<(VertexId, VertexId)>,
    offsets: Vec<u64>,
    common: Vec<VertexId>,
}

impl MutualFriends {
    /// Builds from pairs ordered by `(a, b)` and their lists.
    pub fn from_lists(
        lists: impl IntoIterator<Item = ((VertexId, VertexId), Vec<VertexId>)>,
    ) -> Self {
        let mut out = MutualFriends { offsets: vec![0], ..Default::default() };
        for (pair, list) in lists {
            out.pairs.push(pair);
            out.common.extend_from_slice(&list);
            out.offsets.push(out.common.len() as u64);
        }
        out
    }

    /// Friendships.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// Whether there are no friendships.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The `i`-th friendship and its common friends.
    pub fn get(&self, i: usize) -> ((VertexId, VertexId), &[VertexId]) {
        (self.pairs[i], &self.common[self.offsets[i] as usize..self.offsets[i + 1] as usize])
    }

    /// Every friendship with its common friends, ordered by pair.
    pub fn iter(&self) -> impl Iterator<Item = ((VertexId, VertexId), &[VertexId])> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Common friends over all friendships (three per triangle).
    pub fn total(&self) -> u64 {
        self.common.len() as u64
    }
}

/// A vertex's value: first its friend list (published before step 0), then, for each friend
/// `b` above it, the count and the list of common friends, flattened.
#[derive(Clone, Debug)]
enum Lists {
    Friends(Vec<VertexId>),
    Common(Vec<VertexId>),
}

struct Program;

impl VertexProgram for Program {
    type Value = Lists;

    fn init(&self, v: VertexId, graph: &InGraph) -> Lists {
        Lists::Friends(graph.in_links(v).to_vec())
    }

    fn compute(&self, ctx: &Context<'_, Lists>) -> Option<Lists> {
        let Lists::Friends(own) = ctx.own() else { return None };
        let v = ctx.vertex();
        let mut out = Vec::new();
        for u in ctx.in_links().iter().copied().filter(|&u| u > v) {
            let Lists::Friends(theirs) = ctx.value(u) else { continue };
            let at = out.len();
            out.push(0);
            for_each_common(own, theirs, |i, _| out.push(own[i]));
            out[at] = (out.len() - at - 1) as VertexId;
        }
        Some(Lists::Common(out))
    }

    fn after_step(&mut self, _: usize, _: &[Lists], _: &[Lists], _: &[bool]) -> bool {
        true // one step: every friendship is answered by its lower end
    }
}

/// The common friends of every friendship of an undirected graph, by a one-step vertex
/// program whose values are lists.
pub fn mutual_friends(graph: &InGraph) -> (MutualFriends, RunStats) {
    let (values, stats) = run(graph, &mut Program, 1);
    let mut out = MutualFriends { offsets: vec![0], ..Default::default() };
    for (a, value) in values.iter().enumerate() {
        let Lists::Common(flat) = value else { continue };
        let above = graph.in_links(a as VertexId).iter().filter(|&&b| b > a as VertexId);
        let mut at = 0;
        for &b in above {
            let len = flat[at] as usize;
            out.pairs.push((a as VertexId, b));
            out.common.extend_from_slice(&flat[at + 1..at + 1 + len]);
            out.offsets.push(out.common.len() as u64);
            at += 1 + len;
        }
    }
    (out, stats)
}

/// Every pair's lists by hash-set intersection (the verifier; small graphs).
pub fn mutual_friends_sequential(graph: &InGraph) -> MutualFriends {
    let n = graph.num_vertices() as VertexId;
    MutualFriends::from_lists((0..n).flat_map(|a| {
        graph.in_links(a).iter().copied().filter(move |&b| b > a).map(move |b| {
            let theirs: std::collections::HashSet<_> = graph.in_links(b).iter().collect();
            let list = graph.in_links(a).iter().copied().filter(|w| theirs.contains(w)).collect();
            ((a, b), list)
        })
    }))
}

/// "People you may know" for `user`: the `k` users who are not yet friends with `user` and
/// share the most friends with them, most first (ties by smaller id), with those counts.
pub fn people_you_may_know(graph: &InGraph, user: VertexId, k: usize) -> Vec<(VertexId, u32)> {
    let friends = graph.in_links(user);
    let mut counts: HashMap<VertexId, u32> = HashMap::new();
    for &f in friends {
        for &w in graph.in_links(f) {
            if w != user && friends.binary_search(&w).is_err() {
                *counts.entry(w).or_insert(0) += 1;
            }
        }
    }
    let mut ranked: Vec<(VertexId, u32)> = counts.into_iter().collect();
    ranked.sort_unstable_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
    ranked.truncate(k);
    ranked
}

/// The same ranking by intersecting `user`'s friends with every other user's (the
/// verifier).
pub fn people_you_may_know_sequential(
    graph: &InGraph,
    user: VertexId,
    k: usize,
) -> Vec<(VertexId, u32)> {
    let friends = graph.in_links(user);
    let mut ranked: Vec<(VertexId, u32)> = (0..graph.num_vertices() as VertexId)
        .filter(|&w| w != user && friends.binary_search(&w).is_err())
        .map(|w| (w, kith_graph::intersection_size(friends, graph.in_links(w)) as u32))
        .filter(|&(_, c)| c > 0)
        .collect();
    ranked.sort_unstable_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
    ranked.truncate(k);
    ranked
}
