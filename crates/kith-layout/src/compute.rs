//! The dispatcher: [`compute`] checks the graph and the configuration, runs the configured
//! [`Method`] (a baseline, Gorder, a community method, or the page-aware method) with a
//! spinner naming each stage, and reports what a community method found.

use kith_graph::progress::Stages;
use kith_graph::{Graph, edge_weights};
use serde::Serialize;

use crate::arrange::arrange_communities;
use crate::baselines::{
    bfs_order, degree_order, input_order, organ_pipe_order, random_order, rcm_order,
};
use crate::community::{Partition, louvain, metis_partition, modularity};
use crate::config::{LayoutConfig, Method, Objective};
use crate::error::{Error, Result};
use crate::gorder::{DEFAULT_WINDOW, gorder_order};
use crate::layout::Layout;
use crate::pageaware::pageaware_order;

/// The communities a community-based method found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CommunityReport {
    /// Non-empty communities.
    pub count: usize,
    /// Newman modularity under the configured weight model.
    pub modularity: f64,
    /// The Louvain level used (modcom only) and how many there were.
    pub level: Option<usize>,
    pub levels: Option<usize>,
}

/// A computed layout and what was learnt on the way.
#[derive(Clone, Debug)]
pub struct Computed {
    pub layout: Layout,
    pub communities: Option<CommunityReport>,
    /// The communities themselves, for writing out.
    pub partition: Option<Partition>,
}

/// Computes a layout of an undirected `graph`.
///
/// # Errors
/// A directed graph (layouts place friendships; symmetrise with [`Graph::to_undirected`]);
/// `communities` outside `1..=nodes`; a Louvain level that does not exist; `record_bytes` 0;
/// METIS failures.
///
/// # Example
/// ```
/// use kith_layout::{LayoutConfig, Method, compute, la_cost, paper_example};
/// let g = paper_example();
/// let config = LayoutConfig { method: Method::Parcom, communities: 2, ..Default::default() };
/// let computed = compute(&g, &config)?;
/// assert!(la_cost(&g, &computed.layout) < 18); // input order costs 18
/// # Ok::<(), kith_layout::Error>(())
/// ```
pub fn compute(graph: &Graph, config: &LayoutConfig) -> Result<Computed> {
    if graph.is_directed() {
        return Err(Error::InvalidArgument(
            "layouts are computed on friendships: symmetrise a directed graph first".into(),
        ));
    }
    if config.record_bytes == 0 {
        return Err(Error::InvalidArgument("--record-bytes must be at least 1".into()));
    }
    let stages = Stages::new(config.progress, &format!("layout {}", config.method));
    let plain = |order| {
        Ok(Computed { layout: Layout::from_order(order)?, communities: None, partition: None })
    };
    let weights = || -> Result<Vec<f64>> {
        stages.stage(format!("{} edge weights", config.model));
        Ok(edge_weights(graph, config.model)?)
    };
    let result = match config.method {
        Method::Input => plain(input_order(graph)),
        Method::Random => plain(random_order(graph, config.seed)),
        Method::Degree => plain(degree_order(graph)),
        Method::OrganPipe => plain(organ_pipe_order(graph)),
        Method::Bfs => plain(bfs_order(graph)),
        Method::Rcm => plain(rcm_order(graph)),
        Method::Gorder => {
            stages.stage("greedy window ordering");
            plain(gorder_order(graph, DEFAULT_WINDOW))
        }
        Method::Parcom => {
            let w = weights()?;
            stages.stage(format!("METIS {}-way partitioning", config.communities));
            let partition = metis_partition(graph, &w, config.communities, config.seed)?;
            stages.stage("greedy arrangement");
            community_layout(graph, &w, partition, None, None, config.seed)
        }
        Method::Modcom => {
            let w = weights()?;
            stages.stage("Louvain");
            let mut run = louvain(graph, &w, config.seed);
            let levels = run.levels.len();
            let level = config.level.unwrap_or(levels - 1);
            if level >= levels {
                return Err(Error::InvalidArgument(format!(
                    "--level {level} does not exist: Louvain found {levels} level{} (0 to {})",
                    if levels == 1 { "" } else { "s" },
                    levels - 1
                )));
            }
            let partition = run.levels.swap_remove(level);
            stages.stage("greedy arrangement");
            community_layout(graph, &w, partition, Some(level), Some(levels), config.seed)
        }
        Method::Kith => {
            // Only the LA objective weighs friendships; pages count every friend alike.
            let w = if config.objective == Objective::La { weights()? } else { Vec::new() };
            plain(pageaware_order(graph, &w, config, &stages))
        }
    };
    stages.finish();
    result
}

fn community_layout(
    graph: &Graph,
    weights: &[f64],
    partition: Partition,
    level: Option<usize>,
    levels: Option<usize>,
    seed: u64,
) -> Result<Computed> {
    let order = arrange_communities(graph, weights, &partition, seed);
    let report = CommunityReport {
        count: partition.count(),
        modularity: modularity(graph, weights, &partition),
        level,
        levels,
    };
    Ok(Computed {
        layout: Layout::from_order(order)?,
        communities: Some(report),
        partition: Some(partition),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kith_graph::WeightModel;
    use rand::{Rng, SeedableRng};

    /// A random graph with isolated vertices and several components.
    fn random_graph(n: u32, m: usize, seed: u64) -> Graph {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
        let edges = (0..m).map(|_| (rng.random_range(0..n), rng.random_range(0..n))).collect();
        Graph::from_edges((0..u64::from(n)).map(|i| 3 * i + 1).collect(), false, edges)
    }

    #[test]
    fn every_method_yields_a_permutation_on_random_graphs() {
        for seed in 0..4 {
            let g = random_graph(300 + 50 * seed as u32, 500, seed);
            for method in Method::ALL {
                for (objective, model) in [
                    (Objective::Pages, WeightModel::Uniform),
                    (Objective::La, WeightModel::Overlap),
                ] {
                    let config = LayoutConfig {
                        method,
                        objective,
                        model,
                        communities: 8,
                        record_bytes: [4, 40, 400, 5000][seed as usize],
                        seed,
                        ..Default::default()
                    };
                    // `compute` builds the layout with `Layout::from_order`, which refuses
                    // anything but a permutation of every vertex.
                    let layout = compute(&g, &config).unwrap().layout;
                    assert_eq!(layout.len(), g.num_nodes(), "{method}");
                }
            }
        }
    }

    #[test]
    fn directed_graphs_and_bad_options_are_refused() {
        let g = Graph::from_edges(vec![1, 2, 3], true, vec![(0, 1), (1, 2)]);
        let err = compute(&g, &LayoutConfig::default()).unwrap_err().to_string();
        assert!(err.contains("symmetrise"), "{err}");
        let g = g.to_undirected();
        let config = LayoutConfig { record_bytes: 0, ..Default::default() };
        assert!(compute(&g, &config).is_err());
        let config = LayoutConfig { method: Method::Modcom, level: Some(7), ..Default::default() };
        let err = compute(&g, &config).unwrap_err().to_string();
        assert!(err.contains("--level 7 does not exist"), "{err}");
    }
}
