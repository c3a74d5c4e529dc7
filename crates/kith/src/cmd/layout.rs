//! `kith layout compute|eval|compare`.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Subcommand};
use kith_graph::{Graph, WeightModel, edge_weights};
use kith_layout::metrics::{RECORD_SIZES, mean_pages};
use kith_layout::{
    CommunityReport, Layout, LayoutConfig, Method, Objective, compute, evaluate, la_cost,
    log_gap_cost, read_layout, write_layout,
};
use serde::{Deserialize, Serialize};

use super::graph::GraphInput;
use crate::machine::run_self;

#[derive(Debug, Subcommand)]
pub(crate) enum LayoutCommand {
    /// Compute a layout: the order in which users' records are placed.
    Compute(ComputeArgs),
    /// Evaluate a layout: costs, per-user improvement over a baseline, pages per friend list.
    Eval(EvalArgs),
    /// Compute several layouts and compare them side by side.
    Compare(CompareArgs),
}

pub(crate) fn run(command: LayoutCommand) -> Result<()> {
    match command {
        LayoutCommand::Compute(a) => compute_cmd(a),
        LayoutCommand::Eval(a) => eval_cmd(a),
        LayoutCommand::Compare(a) => compare_cmd(a),
    }
}

pub(crate) fn method_parser() -> impl TypedValueParser<Value = Method> {
    let names: Vec<&'static str> = Method::ALL.iter().map(|m| m.name()).collect();
    PossibleValuesParser::new(names).map(|s| s.parse::<Method>().expect("listed name"))
}

pub(crate) fn model_parser() -> impl TypedValueParser<Value = WeightModel> {
    let names: Vec<&'static str> = WeightModel::ALL.iter().map(|m| m.name()).collect();
    PossibleValuesParser::new(names).map(|s| s.parse::<WeightModel>().expect("listed name"))
}

fn objective_parser() -> impl TypedValueParser<Value = Objective> {
    PossibleValuesParser::new(["pages", "la"]).map(|s| s.parse::<Objective>().expect("listed"))
}

/// The options every layout computation takes.
#[derive(Clone, Debug, Args)]
pub(crate) struct MethodOptions {
    /// parcom: the number of METIS parts.
    #[arg(long, default_value_t = 64)]
    pub(crate) communities: usize,
    /// modcom: the Louvain level, 0 = finest (default: the last).
    #[arg(long)]
    pub(crate) level: Option<usize>,
    /// The edge-weight model for community detection and the greedy arrangement.
    #[arg(long, default_value = "uniform", value_parser = model_parser())]
    pub(crate) model: WeightModel,
    /// kith: the record size packed into 4 KiB pages.
    #[arg(long, default_value_t = 40)]
    pub(crate) record_bytes: u64,
    /// kith: minimise pages per friend list (pages) or the linear-arrangement cost (la).
    #[arg(long, default_value = "pages", value_parser = objective_parser())]
    pub(crate) objective: Objective,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
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
    fn config(&self, method: Method) -> LayoutConfig {
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

#[derive(Debug, Args)]
pub(crate) struct ComputeArgs {
    #[command(flatten)]
    input: GraphInput,
    /// The layout method.
    #[arg(long, default_value = "kith", value_parser = method_parser())]
    method: Method,
    #[command(flatten)]
    options: MethodOptions,
    /// Where to write the layout: one original node id per line, in position order
    /// (gzip-compressed when the name ends in .gz).
    #[arg(short, long)]
    output: PathBuf,
    /// parcom/modcom: also write the communities (SNAP .cmty.txt format).
    #[arg(long)]
    communities_out: Option<PathBuf>,
    /// Print a JSON report instead of text.
    #[arg(long)]
    json: bool,
}

/// What `kith layout compute --json` prints.
#[derive(Debug, Serialize, Deserialize)]
struct ComputeReport {
    method: String,
    objective: String,
    model: String,
    record_bytes: u64,
    nodes: usize,
    edges: u64,
    /// Time to compute the layout, excluding loading the graph and writing the file.
    seconds: f64,
    cost: u64,
    log_gap_cost: f64,
    /// Mean pages per "list all friends" at `record_bytes`.
    pages: f64,
    communities: Option<CommunityJson>,
    output: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct CommunityJson {
    count: usize,
    modularity: f64,
    level: Option<usize>,
    levels: Option<usize>,
}

impl From<&CommunityReport> for CommunityJson {
    fn from(r: &CommunityReport) -> Self {
        CommunityJson { count: r.count, modularity: r.modularity, level: r.level, levels: r.levels }
    }
}

fn compute_cmd(args: ComputeArgs) -> Result<()> {
    let graph = args.input.load_undirected()?;
    let config = args.options.config(args.method);
    let start = Instant::now();
    let computed = compute(&graph, &config)?;
    let seconds = start.elapsed().as_secs_f64();
    write_layout(&args.output, &graph, &computed.layout)?;
    if let Some(path) = &args.communities_out {
        let Some(partition) = &computed.partition else {
            bail!(
                "--communities-out needs a community method (parcom or modcom), not {}",
                args.method
            );
        };
        let members: Vec<Vec<u64>> = partition
            .members()
            .iter()
            .map(|m| m.iter().map(|&v| graph.original_id(v)).collect())
            .collect();
        kith_graph::write_communities(path, &members)?;
    }
    let report = ComputeReport {
        method: args.method.to_string(),
        objective: config.objective.to_string(),
        model: config.model.to_string(),
        record_bytes: config.record_bytes,
        nodes: graph.num_nodes(),
        edges: graph.num_edges(),
        seconds,
        cost: la_cost(&graph, &computed.layout),
        log_gap_cost: log_gap_cost(&graph, &computed.layout),
        pages: mean_pages(&graph, &computed.layout, config.record_bytes),
        communities: computed.communities.as_ref().map(CommunityJson::from),
        output: args.output.display().to_string(),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    println!(
        "{} layout of {} nodes / {} edges in {:.2} s -> {}",
        report.method, report.nodes, report.edges, seconds, report.output
    );
    println!("  linear-arrangement cost  {}", report.cost);
    println!("  log-gap cost             {:.3} bits/entry", report.log_gap_cost);
    println!(
        "  pages per friend list    {:.3} (records of {} B)",
        report.pages, report.record_bytes
    );
    if let Some(c) = &report.communities {
        println!("  communities              {} (modularity {:.4})", c.count, c.modularity);
    }
    Ok(())
}

#[derive(Debug, Args)]
pub(crate) struct EvalArgs {
    #[command(flatten)]
    input: GraphInput,
    /// The layout file to evaluate.
    #[arg(long)]
    layout: PathBuf,
    /// A layout file to measure improvement against.
    #[arg(long, conflicts_with = "baseline_method")]
    baseline: Option<PathBuf>,
    /// A method whose layout (default options) to measure improvement against.
    #[arg(long, value_parser = method_parser())]
    baseline_method: Option<Method>,
    /// The weight model of `weighted_cost` and the per-user costs.
    #[arg(long, default_value = "uniform", value_parser = model_parser())]
    model: WeightModel,
    /// Print a JSON report instead of text.
    #[arg(long)]
    json: bool,
}

fn eval_cmd(args: EvalArgs) -> Result<()> {
    let graph = args.input.load_undirected()?;
    let layout = read_layout(&args.layout, &graph)?;
    let (baseline, baseline_name) = match (&args.baseline, args.baseline_method) {
        (Some(path), _) => (read_layout(path, &graph)?, path.display().to_string()),
        (None, method) => {
            let method = method.unwrap_or(Method::Default);
            let config = LayoutConfig { method, progress: true, ..Default::default() };
            (compute(&graph, &config)?.layout, method.to_string())
        }
    };
    let weights = edge_weights(&graph, args.model)?;
    let e = evaluate(&graph, &layout, &weights, &baseline);
    if args.json {
        let mut value = serde_json::to_value(&e)?;
        value["baseline"] = baseline_name.into();
        value["model"] = args.model.name().into();
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(());
    }
    println!("layout {} (baseline {baseline_name}, {} weights)", args.layout.display(), args.model);
    println!("  cost                 {}", e.cost);
    println!("  weighted cost        {:.1}", e.weighted_cost);
    println!("  log-gap cost         {:.3} bits/entry", e.log_gap_cost);
    let q = &e.per_user_cost;
    println!("  per-user cost        median {:.1}  p90 {:.1}  p99 {:.1}", q.median, q.p90, q.p99);
    let i = &e.improvement;
    println!(
        "  improvement          total {:.1} %  per user: median {:.1} %  (quartiles {:.1} %, {:.1} %)",
        100.0 * i.total,
        100.0 * i.per_user_median,
        100.0 * i.per_user_p25,
        100.0 * i.per_user_p75
    );
    println!("  pages per friend list (4 KiB pages):");
    println!("    {:>10} {:>8} {:>8} {:>8} {:>8}", "record", "mean", "median", "p99", "floor");
    for p in &e.pages {
        println!(
            "    {:>10} {:>8.3} {:>8.1} {:>8.1} {:>8.3}",
            format!("{} B", p.record_bytes),
            p.mean,
            p.median,
            p.p99,
            p.floor_mean
        );
    }
    Ok(())
}

#[derive(Debug, Args)]
pub(crate) struct CompareArgs {
    #[command(flatten)]
    input: GraphInput,
    /// The methods to compare, comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = method_parser(), default_value = "default,random,degree,organ-pipe,bfs,rcm,gorder,parcom,modcom,kith")]
    methods: Vec<Method>,
    #[command(flatten)]
    options: MethodOptions,
    /// Print a JSON report instead of a table.
    #[arg(long)]
    json: bool,
}

/// One row of `kith layout compare`.
#[derive(Debug, Serialize)]
pub(crate) struct CompareRow {
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

#[derive(Debug, Serialize)]
pub(crate) struct PagesAt {
    pub record_bytes: u64,
    pub mean: f64,
}

/// Computes each method's layout in a child process (so its time and memory are its own)
/// and evaluates it here.
pub(crate) fn compare_methods(
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

fn compare_cmd(args: CompareArgs) -> Result<()> {
    let graph = args.input.load_undirected()?;
    let rows = compare_methods(&args.input, &graph, &args.methods, &args.options)?;
    if args.json {
        let report = serde_json::json!({
            "graph": args.input.graph.display().to_string(),
            "nodes": graph.num_nodes(),
            "edges": graph.num_edges(),
            "rows": rows,
        });
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    println!(
        "{} nodes, {} edges; pages per friend list on 4 KiB pages",
        graph.num_nodes(),
        graph.num_edges()
    );
    println!(
        "{:<11} {:>14} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "method", "cost", "log-gap", "pages@4", "pages@40", "pages@400", "seconds", "peak MB"
    );
    for r in &rows {
        println!(
            "{:<11} {:>14} {:>8.3} {:>9.3} {:>9.3} {:>9.3} {:>9.2} {:>9.1}",
            r.method,
            r.cost,
            r.log_gap_cost,
            r.pages[0].mean,
            r.pages[1].mean,
            r.pages[2].mean,
            r.seconds,
            r.peak_mb
        );
    }
    Ok(())
}
