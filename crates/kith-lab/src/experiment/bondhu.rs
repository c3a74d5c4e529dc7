//! `kith experiment bondhu-communities|bondhu-models|bondhu-evolution`: the Bondhu paper's
//! figures 9–11 in cost terms, each written as a CSV table and a PNG chart.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use kith_graph::{Graph, VertexId, WeightModel, edge_weights};
use kith_layout::metrics::mean_pages;
use kith_layout::{Layout, LayoutConfig, Method, compute, evaluate, la_cost};
use rand::SeedableRng;
use rand::seq::SliceRandom;

use crate::cli::{GraphInput, method_parser};
use crate::plot::{LineChart, Series, bar_chart, line_chart};

#[derive(Debug, Args)]
pub struct ExperimentArgs {
    /// The graph (any format `kith graph import` reads).
    #[arg(long)]
    graph: PathBuf,
    /// The input format; detected when omitted.
    #[arg(long)]
    format: Option<String>,
    /// Where to write the CSV and PNG (created if missing).
    #[arg(long)]
    pub(super) out: PathBuf,
    /// The layout method (bondhu-models and bondhu-evolution; bondhu-communities is parcom).
    #[arg(long, default_value = "parcom", value_parser = method_parser())]
    method: Method,
    /// The layout improvements are measured against (bondhu-communities, bondhu-models):
    /// `default` is input order, as in the paper; `random` suits inputs already in a
    /// crawl order that clusters friends.
    #[arg(long, default_value = "default", value_parser = method_parser())]
    baseline_method: Method,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

impl ExperimentArgs {
    fn load(&self) -> Result<Graph> {
        let format = self.format.as_deref().map(str::parse).transpose()?;
        let input = GraphInput { graph: self.graph.clone(), format, directed: false, member: None };
        let graph = input.load_undirected()?;
        std::fs::create_dir_all(&self.out)
            .with_context(|| format!("cannot create {}", self.out.display()))?;
        Ok(graph)
    }

    fn baseline(&self, graph: &Graph) -> Result<Layout> {
        Ok(compute(graph, &self.config(self.baseline_method, WeightModel::Uniform))?.layout)
    }

    fn config(&self, method: Method, model: WeightModel) -> LayoutConfig {
        LayoutConfig { method, model, seed: self.seed, ..Default::default() }
    }
}

pub(super) fn progress(len: usize, what: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(len as u64), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {msg} ({elapsed})")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(what.to_owned());
    bar
}

pub(super) fn write_csv(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

pub(super) fn communities(args: &ExperimentArgs) -> Result<()> {
    let graph = args.load()?;
    let n = graph.num_nodes();
    let default = args.baseline(&graph)?;
    let uniform = edge_weights(&graph, WeightModel::Uniform)?;
    let ks: Vec<usize> = (1..=10).map(|i| 1usize << i).filter(|&k| k <= n).collect();
    let bar = progress(ks.len(), "bondhu-communities");
    let mut csv = String::from(
        "k,cost,improvement_total,per_user_p25,per_user_median,per_user_p75,pages_40,seconds\n",
    );
    let (mut total, mut median) = (Vec::new(), Vec::new());
    for &k in &ks {
        bar.set_message(format!("K = {k}"));
        let config =
            LayoutConfig { communities: k, ..args.config(Method::Parcom, WeightModel::Uniform) };
        let start = std::time::Instant::now();
        let layout = compute(&graph, &config)?.layout;
        let seconds = start.elapsed().as_secs_f64();
        let e = evaluate(&graph, &layout, &uniform, &default);
        let i = &e.improvement;
        writeln!(
            csv,
            "{k},{},{:.6},{:.6},{:.6},{:.6},{:.4},{seconds:.3}",
            e.cost,
            i.total,
            i.per_user_p25,
            i.per_user_median,
            i.per_user_p75,
            mean_pages(&graph, &layout, 40)
        )?;
        total.push((k as f64, 100.0 * i.total));
        median.push((k as f64, 100.0 * i.per_user_median));
        bar.inc(1);
    }
    bar.finish_and_clear();
    finish(args, "bondhu-communities", &csv, |png| {
        line_chart(
            png,
            &LineChart {
                title: &format!("parcom: improvement over {} vs communities", args.baseline_method),
                x_label: "communities K",
                y_label: "cost improvement (%)",
                log2_x: true,
            },
            &[
                Series { name: "total cost".into(), points: total },
                Series { name: "per-user median".into(), points: median },
            ],
        )
    })
}

pub(super) fn models(args: &ExperimentArgs) -> Result<()> {
    let graph = args.load()?;
    let default = args.baseline(&graph)?;
    let weights: Vec<Vec<f64>> =
        WeightModel::ALL.iter().map(|&m| edge_weights(&graph, m)).collect::<Result<_, _>>()?;
    let bar = progress(WeightModel::ALL.len(), "bondhu-models");
    let mut csv = String::from(
        "built_under,evaluated_under,weighted_cost,improvement_total,per_user_median\n",
    );
    // values[evaluated][built]
    let mut values = vec![vec![0.0; 3]; 3];
    for (b, &built) in WeightModel::ALL.iter().enumerate() {
        bar.set_message(format!("{} layout under {built}", args.method));
        let layout = compute(&graph, &args.config(args.method, built))?.layout;
        for (e, &evaluated) in WeightModel::ALL.iter().enumerate() {
            let r = evaluate(&graph, &layout, &weights[e], &default);
            writeln!(
                csv,
                "{built},{evaluated},{:.1},{:.6},{:.6}",
                r.weighted_cost, r.improvement.total, r.improvement.per_user_median
            )?;
            values[e][b] = 100.0 * r.improvement.total;
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let names: Vec<String> = WeightModel::ALL.iter().map(|m| m.to_string()).collect();
    let groups: Vec<String> = names.iter().map(|n| format!("evaluated: {n}")).collect();
    let bars: Vec<String> = names.iter().map(|n| format!("built: {n}")).collect();
    let title = format!("{}: weighted-cost improvement over {}", args.method, args.baseline_method);
    finish(args, "bondhu-models", &csv, |png| {
        bar_chart(png, &title, "improvement (%)", &groups, &bars, &values)
    })
}

/// `graph` with a `fraction` of its edges (or nodes) removed at random, and for node removal
/// the surviving vertices' ids in `graph`.
fn remove(graph: &Graph, fraction: f64, nodes: bool, seed: u64) -> (Graph, Vec<VertexId>) {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed ^ 0x6576_6f6c_7665);
    let n = graph.num_nodes();
    let edges = (0..n as VertexId)
        .flat_map(|u| graph.neighbors(u).iter().filter(move |&&v| u < v).map(move |&v| (u, v)));
    if !nodes {
        let mut kept: Vec<(VertexId, VertexId)> = edges.collect();
        kept.shuffle(&mut rng);
        kept.truncate(((1.0 - fraction) * kept.len() as f64).round() as usize);
        let all: Vec<VertexId> = (0..n as VertexId).collect();
        return (Graph::from_edges(graph.original_ids().to_vec(), false, kept), all);
    }
    let mut shuffled: Vec<VertexId> = (0..n as VertexId).collect();
    shuffled.shuffle(&mut rng);
    let removed = (fraction * n as f64).round() as usize;
    let mut survivors = shuffled[removed..].to_vec();
    survivors.sort_unstable();
    let mut index = vec![u32::MAX; n];
    for (i, &v) in survivors.iter().enumerate() {
        index[v as usize] = i as u32;
    }
    let kept = edges
        .filter(|&(u, v)| index[u as usize] != u32::MAX && index[v as usize] != u32::MAX)
        .map(|(u, v)| (index[u as usize], index[v as usize]))
        .collect();
    let ids = survivors.iter().map(|&v| graph.original_id(v)).collect();
    (Graph::from_edges(ids, false, kept), survivors)
}

pub(super) fn evolution(args: &ExperimentArgs) -> Result<()> {
    let graph = args.load()?;
    let n = graph.num_nodes();
    let config = args.config(args.method, WeightModel::Uniform);
    let fresh = compute(&graph, &config)?.layout;
    let (fresh_cost, fresh_pages) = (la_cost(&graph, &fresh), mean_pages(&graph, &fresh, 40));
    let fractions = [0.05, 0.10, 0.20, 0.30, 0.40];
    let bar = progress(2 * fractions.len(), "bondhu-evolution");
    let mut csv = String::from(
        "removed,fraction,cost,fresh_cost,degradation,pages_40,fresh_pages_40,pages_degradation\n",
    );
    let mut series = Vec::new();
    for (kind, nodes) in [("edges", false), ("nodes", true)] {
        let (mut cost_points, mut page_points) = (Vec::new(), Vec::new());
        for &f in &fractions {
            bar.set_message(format!("{:.0} % of {kind} removed", 100.0 * f));
            let (reduced, survivors) = remove(&graph, f, nodes, args.seed);
            let old = compute(&reduced, &config)?.layout;
            // The old layout's order for the survivors, then the missing nodes appended in
            // id order, as new users are appended between relayouts.
            let mut order: Vec<VertexId> =
                old.order().iter().map(|&v| survivors[v as usize]).collect();
            let mut placed = vec![false; n];
            for &v in &order {
                placed[v as usize] = true;
            }
            order.extend((0..n as VertexId).filter(|&v| !placed[v as usize]));
            let stale = Layout::from_order(order)?;
            let (cost, pages) = (la_cost(&graph, &stale), mean_pages(&graph, &stale, 40));
            let degradation = cost as f64 / fresh_cost.max(1) as f64 - 1.0;
            let page_degradation = pages / fresh_pages - 1.0;
            writeln!(
                csv,
                "{kind},{f},{cost},{fresh_cost},{degradation:.6},{pages:.4},{fresh_pages:.4},{page_degradation:.6}"
            )?;
            cost_points.push((100.0 * f, 100.0 * degradation));
            page_points.push((100.0 * f, 100.0 * page_degradation));
            bar.inc(1);
        }
        series.push(Series { name: format!("{kind} removed: cost"), points: cost_points });
        series.push(Series { name: format!("{kind} removed: pages @40 B"), points: page_points });
    }
    bar.finish_and_clear();
    let title = format!("{}: stale layout vs fresh layout of the whole graph", args.method);
    finish(args, "bondhu-evolution", &csv, |png| {
        line_chart(
            png,
            &LineChart {
                title: &title,
                x_label: "removed before layout (%)",
                y_label: "degradation vs fresh (%)",
                log2_x: false,
            },
            &series,
        )
    })
}

/// Writes `<name>.csv` and `<name>.png` under `--out` and prints the table.
fn finish(
    args: &ExperimentArgs,
    name: &str,
    csv: &str,
    draw: impl FnOnce(&Path) -> Result<()>,
) -> Result<()> {
    let csv_path = args.out.join(format!("{name}.csv"));
    let png_path = args.out.join(format!("{name}.png"));
    write_csv(&csv_path, csv)?;
    draw(&png_path)?;
    if crate::report::json() {
        eprint!("{csv}");
    } else {
        print!("{csv}");
    }
    eprintln!("wrote {} and {}", csv_path.display(), png_path.display());
    Ok(())
}
