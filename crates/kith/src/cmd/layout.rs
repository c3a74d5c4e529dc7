//! `kith layout compute|eval|compare`. `compare` computes each method in a child process
//! (`kith_lab::cli::compare_methods`), so that its time and peak memory are its own.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use kith_graph::{WeightModel, edge_weights};
use kith_lab::cli::{
    CommunityJson, ComputeReport, GraphInput, MethodOptions, compare_methods, method_parser,
    model_parser,
};
use kith_layout::metrics::gaps_and_pages;
use kith_layout::{LayoutConfig, Method, compute, evaluate, la_cost, read_layout, write_layout};

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
    let (log_gap_cost, pages) = gaps_and_pages(&graph, &computed.layout, config.record_bytes);
    let report = ComputeReport {
        method: args.method.to_string(),
        objective: config.objective.to_string(),
        model: config.model.to_string(),
        record_bytes: config.record_bytes,
        nodes: graph.num_nodes(),
        edges: graph.num_edges(),
        seconds,
        cost: la_cost(&graph, &computed.layout),
        log_gap_cost,
        pages,
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
            let method = method.unwrap_or(Method::Input);
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
