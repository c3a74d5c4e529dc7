//! kith's own layout method, `Method::Kith` (named `kith` on the command line): page-aware
//! ordering.
//!
//! A store pays for pages, not for the linear-arrangement cost, so kith optimises what a
//! store reads: the pages touched by "list all friends" of a user, for a given record size.
//!
//! 1. **Recursive bisection** (`bisect.rs`), after Dhulipala et al. (KDD 2016): every user's
//!    closed neighbourhood is a query; each block of the order is split in two so that
//!    queries fall on few sides, by iterated swaps of the vertices with the best move gains,
//!    under the log-gap cost model for large blocks and probabilistic fanout (Kabiljo et al.,
//!    VLDB 2017) for blocks of a few pages. With the pages objective the split points fall on
//!    page boundaries of the configured record size, so the blocks of the last level are
//!    exactly pages, and the recursion stops there.
//! 2. **Page refinement** (`pages.rs`): swaps between pages that lower the page count of
//!    every affected neighbourhood, then the choice of which member of each page takes the
//!    slot that straddles into the next page.
//! 3. With `--objective requests` (what stores lay out by), **request refinement**
//!    (`requests.rs`): swaps that lower each friend list's read requests (runs of adjacent
//!    pages), each priced at many pages, plus its pages.
//! 4. With `--objective la`, **arrangement refinement** (`la.rs`) of two starts, the
//!    bisection's order (halves down to 8 vertices) and Louvain communities arranged by
//!    Bondhu's greedy, keeping the cheaper: median relaxation (every vertex towards the
//!    weighted median of its friends' positions, kept when the cost falls) and exact dynamic
//!    programming over sliding windows of consecutive positions.

mod adjacency;
mod bisect;
mod la;
mod page_counts;
mod pages;
mod requests;

use kith_graph::progress::Stages;
use kith_graph::{Graph, VertexId, WeightModel, edge_weights};

use crate::arrange::arrange_communities;
use crate::baselines::bfs_order;
use crate::community::louvain;
use crate::config::{LayoutConfig, Objective};
use crate::layout::inverse;
use crate::metrics::weighted_cost_at;
use adjacency::Adjacency;

/// The `kith` method's order. `weights` (aligned with the CSR entries) are read only by the
/// LA objective; the pages objective counts every friend alike.
pub(crate) fn pageaware_order(
    graph: &Graph,
    weights: &[f64],
    config: &LayoutConfig,
    stages: &Stages,
) -> Vec<VertexId> {
    let pages = matches!(config.objective, Objective::Pages | Objective::Requests)
        && config.record_bytes < config.page_bytes;
    stages.stage("recursive bisection");
    let split = if pages {
        bisect::Split::Pages { record_bytes: config.record_bytes, page_bytes: config.page_bytes }
    } else {
        bisect::Split::Halves { leaf: 8 }
    };
    // The start, with the graph relabelled by it so that even the top levels of the
    // bisection find a vertex's friends nearby in memory: breadth-first order; or, where the
    // page refinement's swap rounds run (pages of a few records), Louvain's finest
    // communities arranged by Bondhu's greedy, from which the bisection finds fewer pages
    // (on a 1 M-node LFR graph at 400 B, 0.5 % fewer, in the same time: it converges sooner).
    let start = if pages && pages::swap_rounds_run(config.record_bytes, config.page_bytes) {
        stages.stage("Louvain start");
        // Uniform weights (the pages objective counts every friend alike); a friendship graph.
        let w = edge_weights(graph, WeightModel::Uniform).expect("an undirected graph");
        let run = louvain(graph, &w, config.seed);
        let finest = run.levels.first().expect("Louvain returns at least one level");
        arrange_communities(graph, &w, finest, config.seed)
    } else {
        bfs_order(graph)
    };
    let adjacency = Adjacency::from_graph(graph).relabel(&start);
    let n = start.len() as VertexId;
    let local = bisect::recursive_bisection(&adjacency, (0..n).collect(), split);
    let mut order: Vec<VertexId> = local.iter().map(|&i| start[i as usize]).collect();
    if pages {
        // Each refinement on the graph relabelled by the order so far, so that its search
        // walks memory in order.
        type Refine = fn(&Adjacency, Vec<VertexId>, u64, u64, u64) -> Vec<VertexId>;
        let mut steps: Vec<(&str, Refine)> = vec![("page refinement", pages::refine)];
        if config.objective == Objective::Requests {
            steps.push(("request refinement", requests::refine));
        }
        let (mut adjacency, mut local) = (adjacency, local);
        for (name, refine) in steps {
            stages.stage(name);
            adjacency = adjacency.relabel(&local);
            local = refine(
                &adjacency,
                (0..n).collect(),
                config.record_bytes,
                config.page_bytes,
                config.seed,
            );
            order = local.iter().map(|&i| order[i as usize]).collect();
        }
    }
    if config.objective == Objective::La {
        // Two starts, both refined, the cheaper kept: the bisection's order, and Louvain's
        // communities (coarsest level) arranged by Bondhu's greedy, whose long edges are
        // mostly between communities and so already few.
        stages.stage("Louvain start");
        let run = louvain(graph, weights, config.seed);
        let partition = run.levels.last().expect("Louvain returns at least one level");
        let communities = arrange_communities(graph, weights, partition, config.seed);
        stages.stage("arrangement refinement");
        let (a, b) = rayon::join(
            || la::refine(graph, weights, order),
            || la::refine(graph, weights, communities),
        );
        let cost = |o: &[VertexId]| weighted_cost_at(graph, &inverse(o), weights);
        order = if cost(&b) < cost(&a) { b } else { a };
    }
    order
}
