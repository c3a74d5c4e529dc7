//! The layout methods and their configuration: one entry point, [`compute`].

use std::fmt;
use std::str::FromStr;

use kith_graph::progress::Stages;
use kith_graph::{Graph, WeightModel, edge_weights};
use serde::Serialize;

use crate::community::{Partition, louvain, metis_partition, modularity};
use crate::{Error, Layout, Result, arrange, baselines, gorder, kith};

/// A way of computing a layout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Method {
    /// Input order (ascending original id).
    Default,
    /// A seeded random permutation.
    Random,
    /// Descending degree.
    Degree,
    /// Organ-pipe: highest degree in the middle, alternating sides (Bondhu §5.7).
    OrganPipe,
    /// Breadth-first from the highest-degree vertex.
    Bfs,
    /// Reverse Cuthill–McKee.
    Rcm,
    /// Gorder (Wei et al., SIGMOD 2016), window 5.
    Gorder,
    /// Bondhu: METIS k-way communities, then the greedy arrangement.
    Parcom,
    /// Bondhu: Louvain communities, then the greedy arrangement.
    Modcom,
    /// kith's own method, optimising pages per friend list (or the linear-arrangement cost).
    #[default]
    Kith,
}

impl Method {
    /// Every method, baselines first.
    pub const ALL: [Method; 10] = [
        Method::Default,
        Method::Random,
        Method::Degree,
        Method::OrganPipe,
        Method::Bfs,
        Method::Rcm,
        Method::Gorder,
        Method::Parcom,
        Method::Modcom,
        Method::Kith,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Method::Default => "default",
            Method::Random => "random",
            Method::Degree => "degree",
            Method::OrganPipe => "organ-pipe",
            Method::Bfs => "bfs",
            Method::Rcm => "rcm",
            Method::Gorder => "gorder",
            Method::Parcom => "parcom",
            Method::Modcom => "modcom",
            Method::Kith => "kith",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Method {
    type Err = Error;

    fn from_str(s: &str) -> Result<Method> {
        Method::ALL.into_iter().find(|m| m.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Method::ALL.iter().map(|m| m.name()).collect();
            Error::InvalidArgument(format!(
                "unknown layout method {s:?}; expected one of {}",
                names.join(", ")
            ))
        })
    }
}

/// What the `kith` method minimises.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Objective {
    /// Expected pages read by "list all friends" for the configured record size.
    #[default]
    Pages,
    /// The linear-arrangement cost (Bondhu eq. 2).
    La,
}

impl FromStr for Objective {
    type Err = Error;

    fn from_str(s: &str) -> Result<Objective> {
        match s {
            "pages" => Ok(Objective::Pages),
            "la" => Ok(Objective::La),
            _ => Err(Error::InvalidArgument(format!(
                "unknown objective {s:?}; expected pages or la"
            ))),
        }
    }
}

impl fmt::Display for Objective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Objective::Pages => "pages",
            Objective::La => "la",
        })
    }
}

/// How to compute a layout. Every field has a documented default.
#[derive(Clone, Debug)]
pub struct LayoutConfig {
    /// The method; default `kith`.
    pub method: Method,
    /// `parcom`'s number of communities (METIS parts); default 64.
    pub communities: usize,
    /// `modcom`'s Louvain level, 0 = finest; default the last (coarsest).
    pub level: Option<usize>,
    /// The edge-weight model for community detection and the greedy; default uniform.
    pub model: WeightModel,
    /// The record size the `kith` method packs into pages; default 40 bytes.
    pub record_bytes: u64,
    /// The page size the `kith` method packs records into; default 4 KiB. A store whose
    /// blocks hold a whole number N of fixed-size entries of E bytes sets E and N·E here, so
    /// that the model's pages are its blocks exactly.
    pub page_bytes: u64,
    /// What the `kith` method minimises; default pages.
    pub objective: Objective,
    /// Seed of every random choice; default 1.
    pub seed: u64,
    /// Show a spinner on stderr; default false.
    pub progress: bool,
}

impl Default for LayoutConfig {
    fn default() -> Self {
        LayoutConfig {
            method: Method::default(),
            communities: 64,
            level: None,
            model: WeightModel::Uniform,
            record_bytes: 40,
            page_bytes: crate::metrics::PAGE_BYTES,
            objective: Objective::Pages,
            seed: 1,
            progress: false,
        }
    }
}

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
        Method::Default => plain(baselines::default_order(graph)),
        Method::Random => plain(baselines::random_order(graph, config.seed)),
        Method::Degree => plain(baselines::degree_order(graph)),
        Method::OrganPipe => plain(baselines::organ_pipe_order(graph)),
        Method::Bfs => plain(baselines::bfs_order(graph)),
        Method::Rcm => plain(baselines::rcm_order(graph)),
        Method::Gorder => {
            stages.stage("greedy window ordering");
            plain(gorder::gorder_order(graph, gorder::DEFAULT_WINDOW))
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
            plain(kith::kith_order(graph, &w, config, &stages))
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
    let order = arrange::arrange_communities(graph, weights, &partition, seed);
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
