//! The complex-network study's three jobs: mutual friends (Algorithm 1), connected
//! components by iterated min-label message passing (Algorithm 2), and triangle counting
//! from triads and edges (Algorithm 3). Each gives the same result as its vertex program.

use kith_graph::{VertexId, for_each_common};

use super::contract::{Emit, Group, Input, MrEngine};
use super::local::{LocalEngine, MrConfig};
use super::report::JobReport;
use crate::engine::InGraph;
use crate::error::Result;
use crate::mutual::MutualFriends;

fn pair(a: VertexId, b: VertexId) -> u64 {
    let (lo, hi) = if a < b { (a, b) } else { (b, a) };
    (u64::from(lo) << 32) | u64::from(hi)
}

fn unpair(key: u64) -> (VertexId, VertexId) {
    ((key >> 32) as VertexId, key as VertexId)
}

/// Algorithm 1 on an undirected graph: map each adjacency list to `(friendship, list)` for
/// every friend in it; each friendship's reduce gets both ends' lists and intersects them.
///
/// # Errors
/// The spill directory cannot be written, or a spill file cannot be read back.
pub fn mr_mutual_friends(graph: &InGraph, config: &MrConfig) -> Result<(MutualFriends, JobReport)> {
    let mut engine = LocalEngine::new(config)?;
    let result = mutual_friends_job(&mut engine, graph)?;
    Ok((result, engine.finish()))
}

/// Algorithm 1 on any [`MrEngine`] (a distributed engine's workers all call this; the
/// result is complete where [`MrEngine::read`] delivers records).
///
/// # Errors
/// The engine's.
pub fn mutual_friends_job<E: MrEngine>(engine: &mut E, graph: &InGraph) -> Result<MutualFriends> {
    let out = engine.round(
        "adjacency lists to common friends",
        Input::Graph(graph),
        |v, friends, shuffle| {
            for &u in friends {
                shuffle.emit(pair(v as VertexId, u), friends);
            }
        },
        |key, group, out| {
            let mut lists = group.values();
            let mut common = Vec::new();
            if let (Some(a), Some(b)) = (lists.next(), lists.next()) {
                for_each_common(a, b, |i, _| common.push(a[i]));
            }
            out.emit(key, &common);
        },
    )?;
    let mut lists = Vec::new();
    engine.read(out, |key, value| lists.push((unpair(key), value.to_vec())))?;
    lists.sort_unstable_by_key(|l| l.0);
    Ok(MutualFriends::from_lists(lists))
}

/// The marker of a friendship among the triples: no user id is `u32::MAX`.
const FRIENDS: u32 = u32::MAX;

/// Mutual friends in the study's three jobs, from the edge list: **adjacency** (each
/// friendship, read once from the graph as its edge-list record, is emitted both ways and
/// grouped into every user's sorted friend list), **triples** (each user `u` emits
/// `((a, b), u)` for every pair of its friends, and every friendship `((u, v), FRIENDS)`; a
/// pair's reduce keeps the triples of pairs that are friends) and **lists** (the triples are
/// grouped into each friendship's sorted list of common friends). The same result as
/// [`mr_mutual_friends`], with a shuffle of one small record per triple instead of one list
/// per friendship end.
///
/// # Errors
/// As [`mr_mutual_friends`].
pub fn mr_mutual_friends_3(
    graph: &InGraph,
    config: &MrConfig,
) -> Result<(MutualFriends, JobReport)> {
    let mut engine = LocalEngine::new(config)?;
    let result = mutual_friends_3_job(&mut engine, graph)?;
    Ok((result, engine.finish()))
}

/// The three-job form on any [`MrEngine`].
///
/// # Errors
/// The engine's.
pub fn mutual_friends_3_job<E: MrEngine>(engine: &mut E, graph: &InGraph) -> Result<MutualFriends> {
    let adjacency = engine.round(
        "adjacency lists",
        Input::Graph(graph),
        |v, friends, shuffle| {
            // The edge list: each friendship once, from its smaller end.
            for &u in friends.iter().filter(|&&u| u64::from(u) > v) {
                shuffle.emit(v, &[u]);
                shuffle.emit(u64::from(u), &[v as u32]);
            }
        },
        |v, group, out| {
            let mut list: Vec<u32> = group.values().flatten().copied().collect();
            list.sort_unstable();
            out.emit(v, &list);
        },
    )?;
    let triples = engine.round(
        "friend-pair triples",
        Input::Records(adjacency),
        |u, friends, shuffle| {
            let u = u as u32;
            for (i, &a) in friends.iter().enumerate() {
                if u < a {
                    shuffle.emit(pair(u, a), &[FRIENDS]);
                }
                for &b in &friends[i + 1..] {
                    shuffle.emit(pair(a, b), &[u]);
                }
            }
        },
        |key, group, out| {
            if group.values().any(|v| v == [FRIENDS]) {
                let common: Vec<u32> =
                    group.values().flatten().copied().filter(|&w| w != FRIENDS).collect();
                if common.is_empty() {
                    out.emit(key, &[]);
                }
                for w in common {
                    out.emit(key, &[w]);
                }
            }
        },
    )?;
    let lists = engine.round(
        "common-friend lists",
        Input::Records(triples),
        |key, triple, shuffle| shuffle.emit(key, triple),
        |key, group, out| {
            let mut common: Vec<u32> = group.values().flatten().copied().collect();
            common.sort_unstable();
            out.emit(key, &common);
        },
    )?;
    let mut result = Vec::new();
    engine.read(lists, |key, value| result.push((unpair(key), value.to_vec())))?;
    result.sort_unstable_by_key(|l| l.0);
    Ok(MutualFriends::from_lists(result))
}

const STATE: u32 = 0;
const MESSAGE: u32 = 1;

/// Algorithm 2 on an undirected graph: every round, a vertex whose label changed sends it to
/// its neighbours, and each vertex's reduce keeps the smallest label it has seen; the job
/// ends after a round in which no label changed. Labels are the smallest id in each
/// component, as [`crate::components_label_propagation`] gives them.
///
/// # Errors
/// As [`mr_mutual_friends`].
pub fn mr_components(graph: &InGraph, config: &MrConfig) -> Result<(Vec<u32>, JobReport)> {
    let mut engine = LocalEngine::new(config)?;
    let labels = components_job(&mut engine, graph)?;
    Ok((labels, engine.finish()))
}

/// Algorithm 2 on any [`MrEngine`]; the rounds stop when no label changed on any worker.
///
/// # Errors
/// The engine's.
pub fn components_job<E: MrEngine>(engine: &mut E, graph: &InGraph) -> Result<Vec<u32>> {
    // State records are `[STATE, label, changed, neighbours...]`, messages `[MESSAGE, label]`.
    let mut changed = 0u64;
    let mut file = engine.round(
        "min-label message passing",
        Input::Graph(graph),
        |v, friends, shuffle| {
            let mut state = vec![STATE, v as u32, 1];
            state.extend_from_slice(friends);
            shuffle.emit(v, &state);
            for &u in friends {
                shuffle.emit(u64::from(u), &[MESSAGE, v as u32]);
            }
        },
        |v, group, out| min_label(&mut changed, v, group, out),
    )?;
    while engine.sum(changed)? > 0 {
        changed = 0;
        file = engine.round(
            "min-label message passing",
            Input::Records(file),
            |v, state, shuffle| {
                shuffle.emit(v, state);
                if state[2] == 1 {
                    for &u in &state[3..] {
                        shuffle.emit(u64::from(u), &[MESSAGE, state[1]]);
                    }
                }
            },
            |v, group, out| min_label(&mut changed, v, group, out),
        )?;
    }
    let mut labels = vec![0u32; graph.num_vertices()];
    engine.read(file, |v, state| labels[v as usize] = state[1])?;
    Ok(labels)
}

/// A vertex's reduce in Algorithm 2: keep the smallest label among its state and messages.
fn min_label(changed: &mut u64, key: u64, group: &Group, out: &mut dyn Emit) {
    let mut state: Vec<u32> = Vec::new();
    let mut best = u32::MAX;
    for value in group.values() {
        if value[0] == STATE {
            state = value.to_vec();
        } else {
            best = best.min(value[1]);
        }
    }
    if best < state[1] {
        state[1] = best;
        state[2] = 1;
        *changed += 1;
    } else {
        state[2] = 0;
    }
    out.emit(key, &state);
}

const EDGE: u32 = u32::MAX;

/// Algorithm 3 on an undirected graph, in three rounds: (1) every vertex learns its
/// neighbours' degrees and keeps those ranked above it (degree, then id), so each triangle
/// has one lowest corner; (2) each vertex emits its triads — pairs of higher neighbours,
/// keyed by the pair — and each edge is emitted keyed by its ends; a pair's reduce that finds
/// the edge closes its triads into triangles and credits their corners; (3) credits are
/// summed per vertex. Gives triangles per vertex (by id) and in total.
///
/// # Errors
/// As [`mr_mutual_friends`].
pub fn mr_triangles(graph: &InGraph, config: &MrConfig) -> Result<(Vec<u64>, u64, JobReport)> {
    let mut engine = LocalEngine::new(config)?;
    let (per, total) = triangles_job(&mut engine, graph)?;
    Ok((per, total, engine.finish()))
}

/// Algorithm 3 on any [`MrEngine`].
///
/// # Errors
/// The engine's.
pub fn triangles_job<E: MrEngine>(engine: &mut E, graph: &InGraph) -> Result<(Vec<u64>, u64)> {
    let higher = engine.round(
        "degrees and orientation",
        Input::Graph(graph),
        |v, friends, shuffle| {
            for &u in friends {
                shuffle.emit(u64::from(u), &[v as u32, friends.len() as u32]);
            }
        },
        |u, group, out| {
            let degree = group.values().count() as u32;
            let mut above: Vec<u32> = group
                .values()
                .filter(|x| (x[1], x[0]) > (degree, u as u32))
                .map(|x| x[0])
                .collect();
            above.sort_unstable();
            out.emit(u, &above);
        },
    )?;
    let credits = engine.round(
        "triads and edges",
        Input::Records(higher),
        |u, above, shuffle| {
            for (i, &a) in above.iter().enumerate() {
                shuffle.emit(pair(u as VertexId, a), &[EDGE]);
                for &b in &above[i + 1..] {
                    shuffle.emit(pair(a, b), &[u as u32]);
                }
            }
        },
        |key, group, out| {
            if !group.values().any(|x| x[0] == EDGE) {
                return;
            }
            let mut closed = 0u32;
            for x in group.values().filter(|x| x[0] != EDGE) {
                out.emit(u64::from(x[0]), &[1]);
                closed += 1;
            }
            if closed > 0 {
                let (a, b) = unpair(key);
                out.emit(u64::from(a), &[closed]);
                out.emit(u64::from(b), &[closed]);
            }
        },
    )?;
    let sums = engine.round(
        "triangles per vertex",
        Input::Records(credits),
        |v, credit, shuffle| shuffle.emit(v, credit),
        |v, group, out| {
            let total: u64 = group.values().map(|x| u64::from(x[0])).sum();
            out.emit(v, &[total as u32, (total >> 32) as u32]);
        },
    )?;
    let mut per = vec![0u64; graph.num_vertices()];
    engine.read(sums, |v, t| per[v as usize] = u64::from(t[0]) | (u64::from(t[1]) << 32))?;
    let total = per.iter().sum::<u64>() / 3;
    Ok((per, total))
}
