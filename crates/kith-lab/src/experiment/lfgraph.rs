//! The LFGraph thesis's figures on synthetic graphs:
//!
//! - `lfgraph-balance` (Fig. 2.4): how unevenly hash placement spreads the computation (the
//!   in-links of each server's vertices) over 2…256 servers, on directed graphs with Zipf
//!   in-degrees for α = 1.7…2.1, beside the communication model of Figs. 2.3/2.5 for the same
//!   graphs and any real directed graphs given.
//! - `lfgraph-sssp` (Fig. 4.13): SSSP on Pregel's log-normal graphs at doubling sizes up to
//!   what this machine holds, on one process and on a local cluster, with the peak memory of
//!   each and so the bytes per vertex.

use std::path::PathBuf;

use anyhow::{Context as _, Result, bail, ensure};
use clap::Args;
use kith_distributed::{CommModel, Overhead, overhead};
use kith_graph::generate::{ZipfConfig, zipf_in_degree};
use serde_json::Value;

use super::bondhu::{progress, write_csv};
use crate::cli::GraphInput;
use crate::machine::run_self;
use crate::plot::{LineChart, Series, line_chart};
use crate::say;

#[derive(Debug, Args)]
pub struct BalanceArgs {
    /// Vertices of each synthetic graph.
    #[arg(long, default_value_t = 1_000_000)]
    pub vertices: usize,
    /// In-degree exponents α, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1.7,1.8,1.9,2.0,2.1")]
    pub alphas: Vec<f64>,
    /// Server counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "2,4,8,16,32,64,128,256")]
    pub servers: Vec<usize>,
    /// Real directed graphs to put beside the synthetic ones (edge lists), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub graphs: Vec<PathBuf>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output directory: lfgraph-balance.csv, lfgraph-balance.png (busiest server over the
    /// mean) and lfgraph-balance-comm.png (PowerGraph's values per vertex over LFGraph's).
    #[arg(long)]
    pub out: PathBuf,
}

pub(super) fn balance(args: &BalanceArgs) -> Result<()> {
    ensure!(
        !args.alphas.is_empty() || !args.graphs.is_empty(),
        "nothing to run: no --alphas and no --graphs"
    );
    ensure!(!args.servers.is_empty(), "--servers needs at least one count");
    if let Some(bad) = args.servers.iter().find(|&&s| s == 0 || s > 1 << 20) {
        bail!("--servers {bad}: a server count must be 1 to 1048576");
    }
    if let Some(bad) = args.alphas.iter().find(|a| !(**a > 1.0 && **a <= 10.0)) {
        bail!("--alphas {bad}: an exponent must be in (1, 10]");
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let bar = progress(args.alphas.len() + args.graphs.len(), "lfgraph-balance");
    let mut csv = String::from(
        "graph,alpha,vertices,edges,servers,compute_max_over_mean,compute_min_over_mean,\
         pregel,graphlab,powergraph,lfgraph\n",
    );
    let mut cases: Vec<(String, Vec<Overhead>)> = Vec::new();
    let mut add = |name: String, alpha: String, graph: &kith_graph::Graph| {
        let model = CommModel::new(graph);
        let rows: Vec<Overhead> = args.servers.iter().map(|&s| overhead(&model, s)).collect();
        for r in &rows {
            csv.push_str(&format!(
                "{name},{alpha},{},{},{},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6}\n",
                graph.num_nodes(),
                graph.num_edges(),
                r.servers,
                r.compute_max_over_mean,
                r.compute_min_over_mean,
                r.pregel,
                r.graphlab,
                r.powergraph,
                r.lfgraph
            ));
        }
        cases.push((name, rows));
    };
    for &alpha in &args.alphas {
        bar.set_message(format!("Zipf α = {alpha}, {} vertices", args.vertices));
        let config = ZipfConfig { nodes: args.vertices, alpha, seed: args.seed, progress: false };
        let graph = zipf_in_degree(&config)?;
        add(format!("zipf-{alpha}"), alpha.to_string(), &graph);
        bar.inc(1);
    }
    for path in &args.graphs {
        bar.set_message(path.display().to_string());
        let input = GraphInput { directed: true, ..GraphInput::file(path.clone()) };
        let graph = input.load()?;
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .map_or("graph".to_owned(), super::dataset_name);
        add(name, String::new(), &graph);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let csv_path = args.out.join("lfgraph-balance.csv");
    write_csv(&csv_path, &csv)?;
    let series = |f: fn(&Overhead) -> f64| -> Vec<Series> {
        cases
            .iter()
            .map(|(name, rows)| Series {
                name: name.clone(),
                points: rows.iter().map(|r| (r.servers as f64, f(r))).collect(),
            })
            .collect()
    };
    line_chart(
        &args.out.join("lfgraph-balance.png"),
        &LineChart {
            title: "Computation imbalance under hash placement: busiest server's in-links / mean",
            x_label: "servers",
            y_label: "max / mean in-links",
            log2_x: true,
        },
        &series(|r| r.compute_max_over_mean),
    )?;
    line_chart(
        &args.out.join("lfgraph-balance-comm.png"),
        &LineChart {
            title: "Values sent per vertex per iteration: PowerGraph / LFGraph",
            x_label: "servers",
            y_label: "PowerGraph / LFGraph",
            log2_x: true,
        },
        &series(|r| if r.lfgraph > 0.0 { r.powergraph / r.lfgraph } else { f64::NAN }),
    )?;
    say!("{csv}");
    eprintln!("wrote {} and its charts", csv_path.display());
    Ok(())
}

#[derive(Debug, Args)]
pub struct SsspArgs {
    /// Vertex counts, smallest first; the sweep stops before a size whose projected peak
    /// memory passes --max-rss-gb or whose graph file would not fit on the disk.
    #[arg(long, value_delimiter = ',', default_value = "250000,500000,1000000,2000000,4000000")]
    pub sizes: Vec<usize>,
    /// The mean of ln(out-degree) (Pregel's 4).
    #[arg(long, default_value_t = 4.0)]
    pub mu: f64,
    /// The standard deviation of ln(out-degree) (Pregel's 1.3).
    #[arg(long, default_value_t = 1.3)]
    pub sigma: f64,
    /// Threads of the single-process run.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// Processes of the distributed run (0: none).
    #[arg(long, default_value_t = 2)]
    pub processes: usize,
    /// The most memory any one run may be projected to hold, in GB (a local cluster's
    /// processes counted together).
    #[arg(long, default_value_t = 18.0)]
    pub max_rss_gb: f64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output directory: lfgraph-sssp.csv and lfgraph-sssp.png; the graphs are written to a
    /// scratch directory inside it and removed after each size.
    #[arg(long)]
    pub out: PathBuf,
}

const MIB: f64 = 1024.0 * 1024.0;

/// One size's measurements.
struct SsspRow {
    vertices: usize,
    edges: u64,
    generate_s: f64,
    generate_peak_mb: f64,
    kgraph_mb: f64,
    steps: u64,
    reachable: u64,
    single_s: f64,
    single_wall_s: f64,
    single_peak_mb: f64,
    dist_s: Option<f64>,
    dist_run_s: Option<f64>,
    dist_wall_s: Option<f64>,
    dist_peak_mb: Vec<f64>,
}

pub(super) fn sssp(args: &SsspArgs) -> Result<()> {
    ensure!(!args.sizes.is_empty(), "--sizes needs at least one vertex count");
    ensure!(args.sizes.windows(2).all(|w| w[0] < w[1]), "--sizes must be ascending");
    ensure!(args.sizes[0] >= 2, "--sizes: a graph needs at least 2 vertices");
    ensure!(args.threads >= 1, "--threads must be at least 1");
    ensure!(args.max_rss_gb > 0.0, "--max-rss-gb must be positive");
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let scratch = tempfile::tempdir_in(&args.out).context("a scratch directory for the graphs")?;
    let bar = progress(args.sizes.len(), "lfgraph-sssp");
    let mut rows: Vec<SsspRow> = Vec::new();
    let mut stopped = None;
    for &n in &args.sizes {
        if let Some(last) = rows.last() {
            let scale = n as f64 / last.vertices as f64;
            // The local cluster's processes each load the whole graph: their peaks add up.
            let cluster: f64 = if last.dist_peak_mb.is_empty() && last.dist_s.is_some() {
                // No per-process peaks: assume each process held what the single one did.
                last.single_peak_mb * args.processes as f64
            } else {
                last.dist_peak_mb.iter().sum()
            };
            let peak = last.generate_peak_mb.max(last.single_peak_mb).max(cluster) * scale / 1024.0;
            let disk = last.kgraph_mb * scale * 1.1 / 1024.0;
            let free = super::free_bytes(scratch.path())? as f64 / (1u64 << 30) as f64;
            if peak > args.max_rss_gb || disk > free {
                stopped = Some(format!(
                    "stopped before {n} vertices: projected peak {peak:.1} GB (limit {}), graph \
                     file {disk:.1} GB ({free:.1} GB free)",
                    args.max_rss_gb
                ));
                break;
            }
        }
        bar.set_message(format!("{n} vertices: generating"));
        let path = scratch.path().join(format!("lognormal-{n}.kgraph"));
        let path_s = path.to_str().context("a UTF-8 scratch path")?;
        let (n_s, mu, sigma, seed) =
            (n.to_string(), args.mu.to_string(), args.sigma.to_string(), args.seed.to_string());
        let generated = run_self(&[
            "graph",
            "generate",
            "--model",
            "lognormal",
            "--nodes",
            &n_s,
            "--lognormal-mu",
            &mu,
            "--lognormal-sigma",
            &sigma,
            "--seed",
            &seed,
            "-o",
            path_s,
            "--json",
        ])?;
        let generation: Value =
            serde_json::from_str(&generated.stdout).context("the generation report")?;
        let kgraph_mb = std::fs::metadata(&path)?.len() as f64 / MIB;
        bar.set_message(format!("{n} vertices: SSSP, 1 process × {} threads", args.threads));
        let threads = args.threads.to_string();
        let (single, report) = sssp_child(path_s, &["--threads", &threads])?;
        let mut row = SsspRow {
            vertices: n,
            edges: generation["edges"].as_u64().context("the generation report has no edges")?,
            generate_s: generated.seconds,
            generate_peak_mb: generated.peak_rss_mb,
            kgraph_mb,
            steps: report["steps"].as_u64().unwrap_or(0),
            reachable: report["reachable"].as_u64().unwrap_or(0),
            single_s: report["seconds"].as_f64().unwrap_or(f64::NAN),
            single_wall_s: single.seconds,
            single_peak_mb: single.peak_rss_mb,
            dist_s: None,
            dist_run_s: None,
            dist_wall_s: None,
            dist_peak_mb: Vec::new(),
        };
        if args.processes > 0 {
            bar.set_message(format!("{n} vertices: SSSP on {} processes", args.processes));
            let p = args.processes.to_string();
            let (dist, report) = sssp_child(path_s, &["--processes", &p])?;
            ensure!(
                report["reachable"].as_u64() == Some(row.reachable),
                "{n} vertices: the {}-process run reached {} vertices, the single process {}",
                args.processes,
                report["reachable"],
                row.reachable
            );
            // The vertex program's steps, comparable with the single process's `seconds`; the
            // run's `seconds` add the cluster's start and stop.
            row.dist_s = report["steps_s"].as_f64();
            row.dist_run_s = report["seconds"].as_f64();
            row.dist_wall_s = Some(dist.seconds);
            row.dist_peak_mb = dist.process_peak_rss_mb;
        }
        std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
        rows.push(row);
        bar.inc(1);
    }
    bar.finish_and_clear();
    write_sssp(args, &rows, stopped.as_deref())
}

/// `kith analyze sssp <graph> --source 0 --json` plus `extra`, as a measured child: the run
/// and its report.
fn sssp_child(graph: &str, extra: &[&str]) -> Result<(crate::machine::ChildRun, Value)> {
    let mut argv = vec!["analyze", "sssp", graph, "--source", "0", "--json"];
    argv.extend_from_slice(extra);
    let run = run_self(&argv)?;
    let report = serde_json::from_str(&run.stdout).context("the SSSP report")?;
    Ok((run, report))
}

fn write_sssp(args: &SsspArgs, rows: &[SsspRow], stopped: Option<&str>) -> Result<()> {
    let mut csv = String::from(
        "vertices,edges,mean_out_degree,generate_s,generate_peak_mb,kgraph_mb,steps,reachable,\
         sssp_s,sssp_wall_s,sssp_peak_mb,bytes_per_vertex,bytes_per_edge,processes,dist_sssp_s,\
         dist_run_s,dist_wall_s,dist_max_process_peak_mb,dist_bytes_per_vertex_per_process\n",
    );
    for r in rows {
        let bytes = r.single_peak_mb * MIB;
        let dist_max = r.dist_peak_mb.iter().copied().fold(f64::NAN, f64::max);
        let opt = |x: Option<f64>| x.map_or(String::new(), |x| format!("{x:.4}"));
        csv.push_str(&format!(
            "{},{},{:.2},{:.2},{:.1},{:.1},{},{},{:.4},{:.2},{:.1},{:.1},{:.2},{},{},{},{},{},{}\n",
            r.vertices,
            r.edges,
            r.edges as f64 / r.vertices as f64,
            r.generate_s,
            r.generate_peak_mb,
            r.kgraph_mb,
            r.steps,
            r.reachable,
            r.single_s,
            r.single_wall_s,
            r.single_peak_mb,
            bytes / r.vertices as f64,
            bytes / r.edges.max(1) as f64,
            if r.dist_s.is_some() { args.processes } else { 0 },
            opt(r.dist_s),
            opt(r.dist_run_s),
            opt(r.dist_wall_s),
            if dist_max.is_nan() { String::new() } else { format!("{dist_max:.1}") },
            if dist_max.is_nan() {
                String::new()
            } else {
                format!("{:.1}", dist_max * MIB / r.vertices as f64)
            },
        ));
    }
    let csv_path = args.out.join("lfgraph-sssp.csv");
    write_csv(&csv_path, &csv)?;
    let mut series = vec![Series {
        name: format!("1 process × {} threads", args.threads),
        points: rows.iter().map(|r| (r.vertices as f64, r.single_s)).collect(),
    }];
    if args.processes > 0 {
        series.push(Series {
            name: format!("{} processes (fetch-once)", args.processes),
            points: rows.iter().filter_map(|r| Some((r.vertices as f64, r.dist_s?))).collect(),
        });
    }
    line_chart(
        &args.out.join("lfgraph-sssp.png"),
        &LineChart {
            title: &format!("SSSP on log-normal graphs (μ = {}, σ = {})", args.mu, args.sigma),
            x_label: "vertices",
            y_label: "seconds",
            log2_x: true,
        },
        &series,
    )?;
    say!("{csv}");
    if let Some(why) = stopped {
        say!("{why}");
        std::fs::write(args.out.join("lfgraph-sssp-stopped.txt"), format!("{why}\n"))?;
    }
    eprintln!("wrote {} and lfgraph-sssp.png", csv_path.display());
    Ok(())
}
