//! `kith bench graph`: text import throughput (a whole `kith graph import` process, timed
//! with its peak memory), `.kgraph` load time against it, generator time and memory, and
//! edge-weight models.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use kith_graph::{Graph, LoadConfig, WeightModel};
use serde::Serialize;

use super::median;
use crate::machine::{ChildRun, Machine, datasets_dir, git_commit, run_self, utc_now, write_json};

#[derive(Debug, Args)]
pub struct GraphBenchArgs {
    /// The real datasets (default: $KITH_DATASETS, else shared/datasets beside the checkout).
    #[arg(long)]
    datasets: Option<PathBuf>,
    /// Edges drawn for the generated R-MAT graph (Graph500 parameters, mean degree 32); R-MAT
    /// repeats some, which are merged. Each generated graph is also written as a gzip edge
    /// list and imported.
    #[arg(long, default_value_t = 10_000_000)]
    edges: u64,
    /// Vertices of the LFR generation case (mean degree 20, so about 10 edges per vertex).
    #[arg(long, default_value_t = 1_000_000)]
    lfr_nodes: usize,
    /// Runs of each measurement; medians are reported.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Where to write the JSON results (default: bench/results/graph-<date>.json).
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
struct GraphBench {
    benchmark: &'static str,
    date: String,
    commit: Option<String>,
    machine: Machine,
    repeat: usize,
    import: Vec<ImportCase>,
    generation: Vec<GenerationCase>,
    weights: Vec<WeightCase>,
}

/// Computing one edge-weight model over every adjacency entry of a generated graph.
#[derive(Debug, Serialize)]
struct WeightCase {
    graph: &'static str,
    model: &'static str,
    edges: u64,
    seconds: f64,
    edges_per_s: f64,
}

/// One edge list: imported by a whole `kith graph import` process, loaded as text in process,
/// and loaded from the snapshot that the import wrote.
#[derive(Debug, Serialize)]
struct ImportCase {
    input: String,
    input_bytes: u64,
    directed: bool,
    /// Data lines parsed: edges plus the self-loops and duplicates cleaned out.
    lines: u64,
    nodes: u64,
    edges: u64,
    import_process_s: f64,
    /// Edge lines parsed per second: the throughput of reading the file.
    import_lines_per_s: f64,
    /// Distinct edges of the resulting graph per second.
    import_edges_per_s: f64,
    import_peak_rss_mb: f64,
    text_load_s: f64,
    kgraph_bytes: u64,
    kgraph_load_s: f64,
    /// `import_process_s / kgraph_load_s`.
    kgraph_speedup_vs_import: f64,
    /// `text_load_s / kgraph_load_s`, both in this process.
    kgraph_speedup_vs_text_load: f64,
    /// Whether the snapshot loaded to exactly the graph the text gave.
    verification: &'static str,
}

#[derive(Debug, Serialize)]
struct GenerationCase {
    model: &'static str,
    nodes: u64,
    edges: u64,
    seconds: f64,
    peak_rss_mb: f64,
}

pub(super) fn run(args: GraphBenchArgs) -> Result<()> {
    if args.repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    let tmp = tempfile::tempdir()?;
    let datasets = args.datasets.clone().unwrap_or_else(datasets_dir);
    let slashdot = datasets.join("soc-Slashdot0902.txt.gz");
    if !slashdot.is_file() {
        bail!(
            "{}: not found; point --datasets or KITH_DATASETS at shared/datasets",
            slashdot.display()
        );
    }

    let mut generation = Vec::new();
    let mut import = Vec::new();
    eprintln!("importing {}", slashdot.display());
    import.push(import_case(&slashdot, true, tmp.path(), args.repeat)?);

    let rmat_nodes = (args.edges * 2 / 32).max(2).to_string();
    let lfr_nodes = args.lfr_nodes.to_string();
    let models: [(&'static str, Vec<&str>); 2] = [
        ("lfr", vec!["--model", "lfr", "--nodes", &lfr_nodes, "--avg-degree", "20"]),
        ("rmat", vec!["--model", "rmat", "--nodes", &rmat_nodes]),
    ];
    let mut weights = Vec::new();
    for (name, flags) in models {
        eprintln!("generating {name} ({})", flags.join(" "));
        let snapshot = tmp.path().join(format!("{name}.kgraph"));
        let mut command = vec!["graph", "generate"];
        command.extend(&flags);
        command.extend(["-o", path_str(&snapshot)?]);
        let run = median_child(args.repeat, &command)?;
        let graph = kith_graph::load(&snapshot, &LoadConfig::default())?;
        generation.push(GenerationCase {
            model: name,
            nodes: graph.num_nodes() as u64,
            edges: graph.num_edges(),
            seconds: run.seconds,
            peak_rss_mb: run.peak_rss_mb,
        });
        for weight_model in WeightModel::ALL {
            let mut times = Vec::with_capacity(args.repeat);
            for _ in 0..args.repeat {
                let start = Instant::now();
                std::hint::black_box(kith_graph::edge_weights(&graph, weight_model)?);
                times.push(start.elapsed().as_secs_f64());
            }
            let seconds = median(&mut times);
            weights.push(WeightCase {
                graph: name,
                model: weight_model.name(),
                edges: graph.num_edges(),
                seconds,
                edges_per_s: graph.num_edges() as f64 / seconds,
            });
        }
        // The generated graph as a gzip edge list, then imported like any dataset.
        let text = tmp.path().join(format!("{name}.txt.gz"));
        kith_graph::save(&graph, &text)?;
        drop(graph);
        eprintln!("importing {}", text.display());
        import.push(import_case(&text, false, tmp.path(), args.repeat)?);
    }

    let report = GraphBench {
        benchmark: "graph",
        date: utc_now(),
        commit: git_commit(),
        machine: Machine::describe(),
        repeat: args.repeat,
        import,
        generation,
        weights,
    };
    let out = args.out.unwrap_or_else(|| {
        PathBuf::from(format!("bench/results/graph-{}.json", &report.date[..10]))
    });
    write_json(&out, &report)?;
    print_summary(&report);
    eprintln!("wrote {}", out.display());
    Ok(())
}

fn import_case(input: &Path, directed: bool, tmp: &Path, repeat: usize) -> Result<ImportCase> {
    let snapshot = tmp.join("import.kgraph");
    let mut args = vec!["graph", "import", path_str(input)?, "-o", path_str(&snapshot)?];
    if directed {
        args.push("--directed");
    }
    let process = median_child(repeat, &args)?;
    let config = LoadConfig { directed, ..Default::default() };
    let (text_load_s, text_graph) = median_load(repeat, || kith_graph::load(input, &config))?;
    let (kgraph_load_s, kgraph_graph) =
        median_load(repeat, || kith_graph::load(&snapshot, &LoadConfig::default()))?;
    let c = text_graph.cleaning();
    let lines = text_graph.num_edges() + c.self_loops_dropped + c.duplicates_merged;
    Ok(ImportCase {
        input: input.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        input_bytes: std::fs::metadata(input)?.len(),
        directed,
        lines,
        nodes: text_graph.num_nodes() as u64,
        edges: text_graph.num_edges(),
        import_process_s: process.seconds,
        import_lines_per_s: lines as f64 / process.seconds,
        import_edges_per_s: text_graph.num_edges() as f64 / process.seconds,
        import_peak_rss_mb: process.peak_rss_mb,
        text_load_s,
        kgraph_bytes: std::fs::metadata(&snapshot)?.len(),
        kgraph_load_s,
        kgraph_speedup_vs_import: process.seconds / kgraph_load_s,
        kgraph_speedup_vs_text_load: text_load_s / kgraph_load_s,
        verification: if text_graph == kgraph_graph { "PASS" } else { "FAIL" },
    })
}

/// Runs a child `repeat` times: the median time and the largest peak memory.
fn median_child(repeat: usize, args: &[&str]) -> Result<ChildRun> {
    let runs = (0..repeat).map(|_| run_self(args)).collect::<Result<Vec<_>>>()?;
    let mut seconds: Vec<f64> = runs.iter().map(|r| r.seconds).collect();
    let peak = runs.iter().map(|r| r.peak_rss_mb).fold(0.0, f64::max);
    Ok(ChildRun {
        seconds: median(&mut seconds),
        peak_rss_mb: peak,
        process_peak_rss_mb: Vec::new(),
        stdout: String::new(),
    })
}

/// Loads `repeat` times in this process: the median time and the last graph.
fn median_load(
    repeat: usize,
    load: impl Fn() -> kith_graph::Result<Graph>,
) -> Result<(f64, Graph)> {
    let mut times = Vec::new();
    let mut graph = None;
    for _ in 0..repeat {
        drop(graph.take());
        let start = Instant::now();
        graph = Some(load()?);
        times.push(start.elapsed().as_secs_f64());
    }
    Ok((median(&mut times), graph.expect("repeat >= 1")))
}

fn path_str(path: &Path) -> Result<&str> {
    path.to_str().with_context(|| format!("{}: not valid UTF-8", path.display()))
}

fn print_summary(report: &GraphBench) {
    crate::say!(
        "{:<26}{:>12}{:>14}{:>12}{:>12}{:>10}  verification",
        "import",
        "lines",
        "lines/s",
        "process s",
        "kgraph s",
        "speedup"
    );
    for c in &report.import {
        crate::say!(
            "{:<26}{:>12}{:>14.0}{:>12.2}{:>12.3}{:>9.1}x  {}",
            c.input,
            c.lines,
            c.import_lines_per_s,
            c.import_process_s,
            c.kgraph_load_s,
            c.kgraph_speedup_vs_import,
            c.verification
        );
    }
    crate::say!(
        "{:<26}{:>12}{:>14}{:>12}{:>12}",
        "generation",
        "nodes",
        "edges",
        "seconds",
        "peak MB"
    );
    for g in &report.generation {
        crate::say!(
            "{:<26}{:>12}{:>14}{:>12.2}{:>12.0}",
            g.model,
            g.nodes,
            g.edges,
            g.seconds,
            g.peak_rss_mb
        );
    }
    crate::say!("{:<26}{:>12}{:>14}{:>12}", "edge weights", "model", "edges/s", "seconds");
    for w in &report.weights {
        crate::say!("{:<26}{:>12}{:>14.0}{:>12.3}", w.graph, w.model, w.edges_per_s, w.seconds);
    }
}
