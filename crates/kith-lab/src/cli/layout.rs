//! The layout options `kith layout`, `kith store` and the harness share, and the comparison
//! behind `kith layout compare` and `kith bench layout`: each method computed by a child
//! `kith layout compute` process, so that its time and peak memory are its own.

use anyhow::{Context, Result};
use clap::Args;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use kith_graph::{Graph, WeightModel};
use kith_layout::metrics::{RECORD_SIZES, mean_pages};
use kith_layout::{
    CommunityReport, Layout, LayoutConfig, Method, Objective, la_cost, log_gap_cost, read_layout,
};
use serde::{Deserialize, Serialize};

use super::graph::GraphInput;
use crate::machine::run_self;

/// The parser of `--method` values: every method by name.
pub fn method_parser() -> impl TypedValueParser<Value = Method> {
    let names: Vec<&'static str> = Method::ALL.iter().map(|m| m.name()).collect();
    PossibleValuesParser::new(names).map(|s| s.parse::<Method>().expect("listed name"))
}

/// The parser of `--model` values: every edge-weight model by name.
pub fn model_parser() -> impl TypedValueParser<Value = WeightModel> {
    let names: Vec<&'static str> = WeightModel::ALL.iter().map(|m| m.name()).collect();
    PossibleValuesParser::new(names).map(|s| s.parse::<WeightModel>().expect("listed name"))
}

fn objective_parser() -> impl TypedValueParser<Value = Objective> {
    PossibleValuesParser::new(["pages", "requests", "la"])
        .map(|s| s.parse::<Objective>().expect("listed"))
}

/// The options every layout computation takes.
#[derive(Clone, Debug, Args)]
pub struct MethodOptions {
    /// parcom: the number of METIS parts.
    #[arg(long, default_value_t = 64)]
    pub communities: usize,
    /// modcom: the Louvain level, 0 = finest (default: the last).
    #[arg(long)]
    pub level: Option<usize>,
    /// The edge-weight model for community detection and the greedy arrangement.
    #[arg(long, default_value = "uniform", value_parser = model_parser())]
    pub model: WeightModel,
    /// kith: the record size packed into 4 KiB pages.
    #[arg(long, default_value_t = 40)]
    pub record_bytes: u64,
    /// kith: minimise pages per friend list (pages); those pages' read requests too, each a
    /// run of adjacent pages priced at many pages (requests, what stores lay out by); or the
    /// linear-arrangement cost (la).
    #[arg(long, default_value = "pages", value_parser = objective_parser())]
    pub objective: Objective,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

impl Default for MethodOptions {
    /// The library's defaults, which the command line's defaults repeat.
    fn default() -> Self {
        let d = LayoutConfig::default();
        MethodOptions {
            communities: d.communities,
            level: d.level,
            model: d.model,
            record_bytes: d.record_bytes,
            objective: d.objective,
            seed: d.seed,
        }
    }
}

impl MethodOptions {
    /// The configuration of `method` under these options, on 4 KiB pages, with progress.
    pub fn config(&self, method: Method) -> LayoutConfig {
        LayoutConfig {
            method,
            communities: self.communities,
            level: self.level,
            model: self.model,
            record_bytes: self.record_bytes,
            page_bytes: kith_layout::metrics::PAGE_BYTES,
            objective: self.objective,
            seed: self.seed,
            progress: true,
        }
    }

    fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            "--communities".into(),
            self.communities.to_string(),
            "--model".into(),
            self.model.name().into(),
            "--record-bytes".into(),
            self.record_bytes.to_string(),
            "--objective".into(),
            self.objective.to_string(),
            "--seed".into(),
            self.seed.to_string(),
        ];
        if let Some(level) = self.level {
            args.extend(["--level".into(), level.to_string()]);
        }
        args
    }
}

/// What `kith layout compute --json` prints, and what the comparison reads back from it.
#[derive(Debug, Serialize, Deserialize)]
pub struct ComputeReport {
    pub method: String,
    pub objective: String,
    pub model: String,
    pub record_bytes: u64,
    pub nodes: usize,
    pub edges: u64,
    /// Time to compute the layout, excluding loading the graph and writing the file.
    pub seconds: f64,
    pub cost: u64,
    pub log_gap_cost: f64,
    /// Mean pages per "list all friends" at `record_bytes`.
    pub pages: f64,
    pub communities: Option<CommunityJson>,
    pub output: String,
}

/// The communities a community method found, in [`ComputeReport`].
#[derive(Debug, Serialize, Deserialize)]
pub struct CommunityJson {
    pub count: usize,
    pub modularity: f64,
    pub level: Option<usize>,
    pub levels: Option<usize>,
}

impl From<&CommunityReport> for CommunityJson {
    fn from(r: &CommunityReport) -> Self {
        CommunityJson { count: r.count, modularity: r.modularity, level: r.level, levels: r.levels }
    }
}

/// One row of `kith layout compare`.
#[derive(Debug, Serialize)]
pub struct CompareRow {
    pub method: String,
    pub cost: u64,
    pub log_gap_cost: f64,
    /// Compute time (excluding loading the graph), from the child process's own report.
    pub seconds: f64,
    /// Wall time of the child process, loading the graph and writing the layout included.
    pub process_seconds: f64,
    /// Peak resident memory of the child process that loaded the graph and computed the layout.
    pub peak_mb: f64,
    /// Mean pages per friend list at 4, 40 and 400 byte records.
    pub pages: Vec<PagesAt>,
    pub communities: Option<usize>,
    pub modularity: Option<f64>,
}

/// Mean pages per friend list at one record size, in [`CompareRow`].
#[derive(Debug, Serialize)]
pub struct PagesAt {
    pub record_bytes: u64,
    pub mean: f64,
}

/// Computes each method's layout in a child process (so its time and memory are its own)
/// and evaluates it here.
pub fn compare_methods(
    input: &GraphInput,
    graph: &Graph,
    methods: &[Method],
    options: &MethodOptions,
) -> Result<Vec<CompareRow>> {
    let dir = tempfile::tempdir()?;
    let mut rows = Vec::new();
    for &method in methods {
        let out = dir.path().join(format!("{method}.layout"));
        let mut args = vec!["layout".to_string(), "compute".into()];
        args.extend(input.to_args());
        args.extend(["--method".into(), method.name().into()]);
        args.extend(options.to_args());
        args.extend(["-o".into(), out.display().to_string(), "--json".into()]);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let child = run_self(&refs)?;
        let report: ComputeReport = serde_json::from_str(&child.stdout)
            .with_context(|| format!("unreadable report from the {method} child"))?;
        let layout: Layout = read_layout(&out, graph)?;
        rows.push(CompareRow {
            method: method.to_string(),
            cost: la_cost(graph, &layout),
            log_gap_cost: log_gap_cost(graph, &layout),
            seconds: report.seconds,
            process_seconds: child.seconds,
            peak_mb: child.peak_rss_mb,
            pages: RECORD_SIZES[..3]
                .iter()
                .map(|&s| PagesAt { record_bytes: s, mean: mean_pages(graph, &layout, s) })
                .collect(),
            communities: report.communities.as_ref().map(|c| c.count),
            modularity: report.communities.as_ref().map(|c| c.modularity),
        });
    }
    Ok(rows)
}
