//! `kith bench layout`: every layout method side by side on real social graphs and an LFR
//! graph, kith's goals as ratios, and time and memory at LiveJournal scale.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use clap::Args;
use kith_graph::Graph;
use kith_layout::{LayoutConfig, Method, Objective, compute, la_cost, paper_example};
use serde::Serialize;

use crate::cli::{CompareRow, GraphInput, MethodOptions, compare_methods};
use crate::machine::{Machine, datasets_dir, git_commit, run_self, utc_now, write_json};
use crate::plot::bar_chart;

#[derive(Debug, Args)]
pub struct LayoutBenchArgs {
    /// The real datasets (default: $KITH_DATASETS, else shared/datasets beside the checkout).
    #[arg(long)]
    datasets: Option<PathBuf>,
    /// Vertices of the generated LFR comparison graph (mean degree 20).
    #[arg(long, default_value_t = 1_000_000)]
    lfr_nodes: usize,
    /// Vertices of the LiveJournal-scale LFR graph timed for kith and parcom (mean degree 20,
    /// so about 10 edges per vertex); 0 skips it.
    #[arg(long, default_value_t = 3_500_000)]
    large_nodes: usize,
    /// Where to write the JSON results (default: bench/results/layout-<date>.json); the charts
    /// go beside it.
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
struct LayoutBench {
    benchmark: &'static str,
    date: String,
    commit: Option<String>,
    machine: Machine,
    /// Every method on Bondhu's 7-node example (input order 18, optimum 13).
    paper_example: BTreeMap<String, u64>,
    graphs: Vec<GraphCase>,
    large: Option<LargeCase>,
}

#[derive(Debug, Serialize)]
struct GraphCase {
    graph: String,
    nodes: usize,
    edges: u64,
    /// Every method with default options (kith: pages objective at 40 B records), then
    /// `kith@400` (pages objective at 400 B) and `kith-la` (linear-arrangement objective).
    rows: Vec<CompareRow>,
    /// Each row's cost, log-gap cost and pages at 40 and 400 B over the same quantity of the
    /// reference methods.
    relative: BTreeMap<String, BTreeMap<String, Ratios>>,
    goals: Goals,
}

#[derive(Debug, Serialize)]
struct Ratios {
    cost: f64,
    log_gap_cost: f64,
    pages_40: f64,
    pages_400: f64,
}

/// The goals as measured ratios (goal in the field's comment).
#[derive(Debug, Serialize)]
struct Goals {
    /// kith's pages at 40 B over parcom's (goal ≤ 0.85).
    pages_40_vs_parcom: f64,
    /// kith's pages at 40 B over Gorder's (goal ≤ 0.95).
    pages_40_vs_gorder: f64,
    /// kith@400's pages at 400 B over parcom's (goal ≤ 0.85).
    pages_400_vs_parcom: f64,
    /// kith@400's pages at 400 B over Gorder's (goal ≤ 0.95).
    pages_400_vs_gorder: f64,
    /// kith-la's linear-arrangement cost over parcom's (goal ≤ 0.7).
    la_cost_vs_parcom: f64,
    met: bool,
}

#[derive(Debug, Serialize)]
struct LargeCase {
    nodes: usize,
    edges: u64,
    /// Per method: compute seconds (excluding the load) and the process's peak memory.
    runs: Vec<LargeRun>,
}

#[derive(Debug, Serialize)]
struct LargeRun {
    method: String,
    seconds: f64,
    process_seconds: f64,
    peak_mb: f64,
    pages_40: f64,
}

const REFERENCES: [&str; 4] = ["default", "random", "gorder", "parcom"];

pub(super) fn run(args: LayoutBenchArgs) -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let datasets = args.datasets.clone().unwrap_or_else(datasets_dir);
    let mut inputs: Vec<(String, PathBuf)> = Vec::new();
    for name in ["facebook_combined.txt.gz", "soc-brightkite.mtx.gz", "soc-Slashdot0902.txt.gz"] {
        let path = datasets.join(name);
        if !path.is_file() {
            bail!(
                "{}: not found; point --datasets or KITH_DATASETS at shared/datasets",
                path.display()
            );
        }
        inputs.push((name.to_owned(), path));
    }
    if args.lfr_nodes > 0 {
        let path = tmp.path().join("lfr.kgraph");
        generate(args.lfr_nodes, &path)?;
        inputs.push((format!("lfr-{}", args.lfr_nodes), path));
    }

    let paper_example = Method::ALL
        .iter()
        .map(|&method| {
            let objective = Objective::La;
            let config = LayoutConfig { method, communities: 2, objective, ..Default::default() };
            let g = paper_example();
            Ok((method.to_string(), la_cost(&g, &compute(&g, &config)?.layout)))
        })
        .collect::<Result<BTreeMap<_, _>>>()?;

    let mut graphs = Vec::new();
    for (name, path) in &inputs {
        eprintln!("comparing layouts of {name}");
        let input = GraphInput::file(path.clone());
        let graph = input.load_undirected()?;
        graphs.push(graph_case(name, &input, &graph)?);
    }

    let large =
        if args.large_nodes > 0 { Some(large_case(args.large_nodes, tmp.path())?) } else { None };
    let report = LayoutBench {
        benchmark: "layout",
        date: utc_now(),
        commit: git_commit(),
        machine: Machine::describe(),
        paper_example,
        graphs,
        large,
    };
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from(format!("bench/results/layout-{}.json", &report.date[..10]))
    });
    write_json(&out, &report)?;
    charts(&report, &out)?;
    print_summary(&report);
    eprintln!("wrote {}", out.display());
    Ok(())
}

fn generate(nodes: usize, path: &Path) -> Result<()> {
    let nodes = nodes.to_string();
    let out = path.display().to_string();
    let args =
        ["graph", "generate", "--model", "lfr", "--nodes", &nodes, "--seed", "42", "-o", &out];
    eprintln!("generating LFR with {nodes} nodes");
    run_self(&args)?;
    Ok(())
}

fn graph_case(name: &str, input: &GraphInput, graph: &Graph) -> Result<GraphCase> {
    let mut rows = compare_methods(input, graph, &Method::ALL, &MethodOptions::default())?;
    let at_400 = MethodOptions { record_bytes: 400, ..MethodOptions::default() };
    let mut row = compare_methods(input, graph, &[Method::Kith], &at_400)?.remove(0);
    row.method = "kith@400".into();
    rows.push(row);
    let la = MethodOptions { objective: Objective::La, ..MethodOptions::default() };
    let mut row = compare_methods(input, graph, &[Method::Kith], &la)?.remove(0);
    row.method = "kith-la".into();
    rows.push(row);

    let find = |m: &str| rows.iter().find(|r| r.method == m).expect("every method ran");
    let pages = |r: &CompareRow, bytes: u64| {
        r.pages.iter().find(|p| p.record_bytes == bytes).map_or(f64::NAN, |p| p.mean)
    };
    let mut relative = BTreeMap::new();
    for r in &rows {
        let mut by_reference = BTreeMap::new();
        for reference in REFERENCES {
            let b = find(reference);
            by_reference.insert(
                reference.to_owned(),
                Ratios {
                    cost: r.cost as f64 / b.cost.max(1) as f64,
                    log_gap_cost: r.log_gap_cost / b.log_gap_cost,
                    pages_40: pages(r, 40) / pages(b, 40),
                    pages_400: pages(r, 400) / pages(b, 400),
                },
            );
        }
        relative.insert(r.method.clone(), by_reference);
    }
    let (kith, kith400, kith_la) = (find("kith"), find("kith@400"), find("kith-la"));
    let (parcom, gorder) = (find("parcom"), find("gorder"));
    let mut goals = Goals {
        pages_40_vs_parcom: pages(kith, 40) / pages(parcom, 40),
        pages_40_vs_gorder: pages(kith, 40) / pages(gorder, 40),
        pages_400_vs_parcom: pages(kith400, 400) / pages(parcom, 400),
        pages_400_vs_gorder: pages(kith400, 400) / pages(gorder, 400),
        la_cost_vs_parcom: kith_la.cost as f64 / parcom.cost as f64,
        met: false,
    };
    goals.met = goals.pages_40_vs_parcom <= 0.85
        && goals.pages_40_vs_gorder <= 0.95
        && goals.pages_400_vs_parcom <= 0.85
        && goals.pages_400_vs_gorder <= 0.95
        && goals.la_cost_vs_parcom <= 0.7;
    Ok(GraphCase {
        graph: name.to_owned(),
        nodes: graph.num_nodes(),
        edges: graph.num_edges(),
        rows,
        relative,
        goals,
    })
}

fn large_case(nodes: usize, tmp: &Path) -> Result<LargeCase> {
    let path = tmp.join("large.kgraph");
    generate(nodes, &path)?;
    let input = GraphInput::file(path);
    let graph = input.load_undirected()?;
    let mut runs = Vec::new();
    for method in [Method::Parcom, Method::Kith] {
        eprintln!("timing {method} on {} edges", graph.num_edges());
        let row = compare_methods(&input, &graph, &[method], &MethodOptions::default())?.remove(0);
        runs.push(LargeRun {
            method: method.to_string(),
            seconds: row.seconds,
            process_seconds: row.process_seconds,
            peak_mb: row.peak_mb,
            pages_40: row.pages[1].mean,
        });
    }
    Ok(LargeCase { nodes: graph.num_nodes(), edges: graph.num_edges(), runs })
}

fn charts(report: &LayoutBench, out: &Path) -> Result<()> {
    let methods = ["random", "rcm", "gorder", "parcom", "modcom", "kith"];
    for (bytes, kith_row) in [(40u64, "kith"), (400, "kith@400")] {
        let groups: Vec<String> = report
            .graphs
            .iter()
            .map(|g| g.graph.replace(".txt.gz", "").replace(".mtx.gz", ""))
            .collect();
        let values: Vec<Vec<f64>> = report
            .graphs
            .iter()
            .map(|g| {
                methods
                    .iter()
                    .map(|&m| {
                        let m = if m == "kith" { kith_row } else { m };
                        let ratios = &g.relative[m]["default"];
                        if bytes == 40 { ratios.pages_40 } else { ratios.pages_400 }
                    })
                    .collect()
            })
            .collect();
        let bars: Vec<String> = methods.iter().map(|m| (*m).to_owned()).collect();
        let png = out.with_file_name(format!("layout-pages-{bytes}.png"));
        bar_chart(
            &png,
            &format!("pages per friend list at {bytes} B records, relative to input order"),
            "pages / input order's pages",
            &groups,
            &bars,
            &values,
        )?;
    }
    Ok(())
}

fn print_summary(report: &LayoutBench) {
    for g in &report.graphs {
        crate::say!("{} ({} nodes, {} edges)", g.graph, g.nodes, g.edges);
        crate::say!(
            "  {:<11} {:>15} {:>8} {:>9} {:>9} {:>8} {:>8}",
            "method",
            "cost",
            "log-gap",
            "pages@40",
            "pages@400",
            "seconds",
            "peak MB"
        );
        for r in &g.rows {
            crate::say!(
                "  {:<11} {:>15} {:>8.3} {:>9.3} {:>9.3} {:>8.2} {:>8.1}",
                r.method,
                r.cost,
                r.log_gap_cost,
                r.pages[1].mean,
                r.pages[2].mean,
                r.seconds,
                r.peak_mb
            );
        }
        let q = &g.goals;
        crate::say!(
            "  goals: pages@40 vs parcom {:.3} (<= 0.85), vs gorder {:.3} (<= 0.95); pages@400 vs parcom {:.3}, vs gorder {:.3}; LA cost vs parcom {:.3} (<= 0.7): {}",
            q.pages_40_vs_parcom,
            q.pages_40_vs_gorder,
            q.pages_400_vs_parcom,
            q.pages_400_vs_gorder,
            q.la_cost_vs_parcom,
            if q.met { "met" } else { "NOT met" }
        );
    }
    if let Some(large) = &report.large {
        crate::say!("LFR {} nodes, {} edges:", large.nodes, large.edges);
        for r in &large.runs {
            crate::say!(
                "  {:<7} {:>7.1} s compute, {:>7.1} s process, {:>7.0} MB peak, {:.3} pages@40",
                r.method,
                r.seconds,
                r.process_seconds,
                r.peak_mb,
                r.pages_40
            );
        }
    }
}
