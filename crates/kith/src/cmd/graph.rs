//! `kith graph import|stats|generate|partition`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use kith_graph::generate::{BaConfig, LfrConfig, LogNormalConfig, RmatConfig, ZipfConfig};
use kith_graph::{Graph, VertexId};
use kith_lab::cli::{GraphInput, stats_table};
use serde::Serialize;

#[derive(Debug, Subcommand)]
pub(crate) enum GraphCommand {
    /// Read an edge list and write it as a .kgraph snapshot (or as another edge list).
    Import(ImportArgs),
    /// Print a graph's size, cleaning counts, degree distribution and components.
    Stats(StatsArgs),
    /// Generate a seeded graph: LFR, R-MAT (Graph500), Barabási–Albert, or the systems papers'
    /// directed Zipf in-degree (PowerGraph) and log-normal out-degree (Pregel) graphs.
    Generate(GenerateArgs),
    /// Split a graph into the parts of the distributed engine's hash partitioning, so that
    /// each process of `kith analyze <algorithm> DIR --processes P` reads only its own
    /// workers' in-links.
    Partition(PartitionArgs),
}

pub(crate) fn run(command: GraphCommand) -> Result<()> {
    match command {
        GraphCommand::Import(a) => import(a),
        GraphCommand::Stats(a) => stats(a),
        GraphCommand::Generate(a) => generate(a),
        GraphCommand::Partition(a) => partition(a),
    }
}

#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    #[command(flatten)]
    input: GraphInput,
    /// Output: a .kgraph snapshot, or an edge list for other tools (.csv, or SNAP text such as
    /// .txt; add .gz to compress).
    #[arg(short, long)]
    output: PathBuf,
    /// Print the import's report as JSON on stdout.
    #[arg(long)]
    json: bool,
}

fn import(args: ImportArgs) -> Result<()> {
    let start = Instant::now();
    let graph = args.input.load()?;
    let loaded = start.elapsed().as_secs_f64();
    kith_graph::save(&graph, &args.output)?;
    let c = graph.cleaning();
    if args.json {
        let report = serde_json::json!({
            "nodes": graph.num_nodes(), "edges": graph.num_edges(),
            "directed": graph.is_directed(), "self_loops_dropped": c.self_loops_dropped,
            "duplicates_merged": c.duplicates_merged, "seconds": loaded,
            "output": args.output.display().to_string(),
        });
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    eprintln!(
        "imported {} nodes, {} {} edges ({} self-loops dropped, {} duplicates merged) in {loaded:.2} s; wrote {}",
        graph.num_nodes(),
        graph.num_edges(),
        if graph.is_directed() { "directed" } else { "undirected" },
        c.self_loops_dropped,
        c.duplicates_merged,
        args.output.display()
    );
    Ok(())
}

#[derive(Debug, Args)]
pub(crate) struct PartitionArgs {
    #[command(flatten)]
    input: GraphInput,
    /// Parts: the workers of the runs that will read it (processes × threads per process).
    #[arg(long)]
    parts: usize,
    /// The directory to write (created if missing; an old partition in it is replaced, any
    /// other non-empty directory refused).
    #[arg(short, long)]
    output: PathBuf,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    json: bool,
}

fn partition(args: PartitionArgs) -> Result<()> {
    anyhow::ensure!(args.parts >= 1, "--parts must be at least 1");
    let start = Instant::now();
    let graph = args.input.load()?;
    let ig = kith_analytics::InGraph::new(&graph);
    let edges = graph.num_edges();
    drop(graph);
    let loaded = start.elapsed().as_secs_f64();
    let bar = indicatif::ProgressBar::new(args.parts as u64).with_style(
        indicatif::ProgressStyle::with_template("[{elapsed_precise}] {bar:30} {pos}/{len} parts")
            .expect("a valid template"),
    );
    let source = args.input.graph.display().to_string();
    let meta = kith_distributed::write_partition(
        &kith_graph::durable::StdFs,
        &ig,
        edges,
        &source,
        args.parts,
        &args.output,
        |_| bar.inc(1),
    )?;
    bar.finish_and_clear();
    let seconds = start.elapsed().as_secs_f64();
    let most = meta.part_links.iter().copied().max().unwrap_or(0);
    let mean = meta.in_links as f64 / meta.parts as f64;
    if args.json {
        let report = serde_json::json!({
            "output": args.output.display().to_string(), "parts": meta.parts,
            "users": meta.users, "edges": meta.edges, "in_links": meta.in_links,
            "directed": meta.directed, "part_links": meta.part_links,
            "max_over_mean": most as f64 / mean.max(1.0), "load_s": loaded, "seconds": seconds,
        });
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        eprintln!(
            "partitioned {} users, {} in-links into {} parts (largest {most}, {:.3} × the mean) in {seconds:.2} s; wrote {}",
            meta.users,
            meta.in_links,
            meta.parts,
            most as f64 / mean.max(1.0),
            args.output.display()
        );
    }
    Ok(())
}

#[derive(Debug, Args)]
pub(crate) struct StatsArgs {
    #[command(flatten)]
    input: GraphInput,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// Also write every vertex's degree as CSV (`id,degree`, original ids).
    #[arg(long, value_name = "FILE")]
    degrees_out: Option<PathBuf>,
}

fn stats(args: StatsArgs) -> Result<()> {
    let graph = args.input.load()?;
    let s = kith_graph::stats(&graph);
    if let Some(path) = &args.degrees_out {
        write_degrees(&graph, path)?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        print!("{}", stats_table(&s));
    }
    Ok(())
}

fn write_degrees(graph: &Graph, path: &Path) -> Result<()> {
    let file = std::fs::File::create(path)
        .with_context(|| format!("{}: cannot create", path.display()))?;
    let mut w = std::io::BufWriter::new(file);
    writeln!(w, "id,degree")?;
    for v in 0..graph.num_nodes() as VertexId {
        writeln!(w, "{},{}", graph.original_id(v), graph.degree(v))?;
    }
    w.flush().with_context(|| format!("{}: write failed", path.display()))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Model {
    /// LFR benchmark: power-law degrees and community sizes, mixing parameter μ.
    Lfr,
    /// R-MAT with Graph500's parameters (a=0.57, b=0.19, c=0.19, d=0.05).
    Rmat,
    /// Barabási–Albert preferential attachment.
    Ba,
    /// Directed, in-degrees from Zipf(--alpha), out-degrees even (PowerGraph's synthetic
    /// graphs; the LFGraph thesis's imbalance figure).
    Zipf,
    /// Directed, out-degrees from a log-normal law, targets uniform (Pregel's SSSP graphs).
    Lognormal,
}

#[derive(Debug, Args)]
pub(crate) struct GenerateArgs {
    /// The random-graph model.
    #[arg(long, value_enum)]
    model: Model,
    /// Number of vertices.
    #[arg(long)]
    nodes: usize,
    /// Mean degree (default: 20 for LFR, 32 for R-MAT, 10 for Barabási–Albert; not for zipf or
    /// lognormal, whose laws fix it).
    #[arg(long)]
    avg_degree: Option<f64>,
    /// LFR: the largest degree (default min(50 × avg-degree, nodes / 10)).
    #[arg(long)]
    max_degree: Option<usize>,
    /// LFR: the mixing parameter, the share of each vertex's edges leaving its community.
    #[arg(long)]
    mu: Option<f64>,
    /// LFR: the degree exponent τ1 (default 2.5).
    #[arg(long)]
    tau1: Option<f64>,
    /// LFR: the community-size exponent τ2 (default 1.5).
    #[arg(long)]
    tau2: Option<f64>,
    /// LFR: the smallest community (default: one more than the minimum degree, at least 3).
    #[arg(long)]
    min_community: Option<usize>,
    /// LFR: the largest community (default: the maximum degree).
    #[arg(long)]
    max_community: Option<usize>,
    /// R-MAT: keep edge direction.
    #[arg(long)]
    directed: bool,
    /// Zipf: the in-degree exponent α (default 2.0).
    #[arg(long)]
    alpha: Option<f64>,
    /// Log-normal: the mean of ln(out-degree) (default 4, Pregel's).
    #[arg(long)]
    lognormal_mu: Option<f64>,
    /// Log-normal: the standard deviation of ln(out-degree) (default 1.3, Pregel's).
    #[arg(long)]
    lognormal_sigma: Option<f64>,
    /// Random seed; the same seed gives the same graph.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output: a .kgraph snapshot, or an edge list (.csv, or SNAP text such as .txt; .gz
    /// compresses).
    #[arg(short, long)]
    output: PathBuf,
    /// LFR: write the planted communities here (SNAP .cmty.txt format: one per line).
    #[arg(long, value_name = "FILE")]
    communities_out: Option<PathBuf>,
    /// Print the generation report as JSON.
    #[arg(long)]
    json: bool,
}

/// What `kith graph generate` reports.
#[derive(Debug, Serialize)]
struct GenerationReport {
    pub model: &'static str,
    pub nodes: u64,
    pub edges: u64,
    pub seed: u64,
    pub seconds: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lfr: Option<LfrReport>,
}

/// How close an LFR graph came to what was asked.
#[derive(Debug, Serialize)]
struct LfrReport {
    pub mu_requested: f64,
    pub mu_realized: f64,
    pub tau1_requested: f64,
    /// The maximum-likelihood exponent of the realised degrees over the sampled range.
    pub tau1_fitted: f64,
    pub min_degree: f64,
    pub max_degree: f64,
    pub communities: usize,
    pub stubs_dropped: u64,
}

fn generate(args: GenerateArgs) -> Result<()> {
    if args.model != Model::Lfr {
        let lfr_only = [
            ("--max-degree", args.max_degree.is_some()),
            ("--mu", args.mu.is_some()),
            ("--tau1", args.tau1.is_some()),
            ("--tau2", args.tau2.is_some()),
            ("--min-community", args.min_community.is_some()),
            ("--max-community", args.max_community.is_some()),
            ("--communities-out", args.communities_out.is_some()),
        ];
        if let Some((flag, _)) = lfr_only.iter().find(|(_, given)| *given) {
            bail!("{flag} applies to --model lfr only");
        }
    }
    if args.directed && args.model != Model::Rmat {
        bail!("--directed applies to --model rmat only");
    }
    if args.alpha.is_some() && args.model != Model::Zipf {
        bail!("--alpha applies to --model zipf only");
    }
    if (args.lognormal_mu.is_some() || args.lognormal_sigma.is_some())
        && args.model != Model::Lognormal
    {
        bail!("--lognormal-mu and --lognormal-sigma apply to --model lognormal only");
    }
    let degree_models = [Model::Lfr, Model::Rmat, Model::Ba];
    if args.avg_degree.is_some() && !degree_models.contains(&args.model) {
        bail!("--avg-degree does not apply to --model zipf or lognormal: their laws fix the mean");
    }
    let (report, graph) = generate_graph(&args)?;
    kith_graph::save(&graph, &args.output)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        eprintln!(
            "generated {} graph: {} nodes, {} edges in {:.2} s; wrote {}",
            report.model,
            report.nodes,
            report.edges,
            report.seconds,
            args.output.display()
        );
        if let Some(l) = &report.lfr {
            eprintln!(
                "mixing: requested {:.3}, realised {:.3}; degree exponent: requested {:.2}, fitted {:.2}; {} communities",
                l.mu_requested, l.mu_realized, l.tau1_requested, l.tau1_fitted, l.communities
            );
        }
    }
    Ok(())
}

fn generate_graph(args: &GenerateArgs) -> Result<(GenerationReport, Graph)> {
    let start = Instant::now();
    let (model, graph, lfr) = match args.model {
        Model::Lfr => {
            let defaults = LfrConfig::default();
            let config = LfrConfig {
                nodes: args.nodes,
                avg_degree: args.avg_degree.unwrap_or(defaults.avg_degree),
                max_degree: args.max_degree,
                mu: args.mu.unwrap_or(defaults.mu),
                tau1: args.tau1.unwrap_or(defaults.tau1),
                tau2: args.tau2.unwrap_or(defaults.tau2),
                min_community: args.min_community,
                max_community: args.max_community,
                seed: args.seed,
                progress: true,
            };
            let lfr = kith_graph::generate::lfr(&config)?;
            if let Some(path) = &args.communities_out {
                kith_graph::write_communities(path, &lfr.communities())?;
            }
            let law = lfr.degree_law;
            let report = LfrReport {
                mu_requested: config.mu,
                mu_realized: lfr.realized_mu(),
                tau1_requested: config.tau1,
                tau1_fitted: lfr.fitted_degree_exponent(),
                min_degree: law.min,
                max_degree: law.max,
                communities: lfr.num_communities(),
                stubs_dropped: lfr.stubs_dropped,
            };
            ("lfr", lfr.graph, Some(report))
        }
        Model::Rmat => {
            let defaults = RmatConfig::default();
            let config = RmatConfig {
                nodes: args.nodes,
                avg_degree: args.avg_degree.unwrap_or(defaults.avg_degree),
                directed: args.directed,
                seed: args.seed,
                progress: true,
                ..defaults
            };
            ("rmat", kith_graph::generate::rmat(&config)?, None)
        }
        Model::Ba => {
            let defaults = BaConfig::default();
            let config = BaConfig {
                nodes: args.nodes,
                avg_degree: args.avg_degree.unwrap_or(defaults.avg_degree),
                seed: args.seed,
                progress: true,
            };
            ("ba", kith_graph::generate::barabasi_albert(&config)?, None)
        }
        Model::Zipf => {
            let defaults = ZipfConfig::default();
            let config = ZipfConfig {
                nodes: args.nodes,
                alpha: args.alpha.unwrap_or(defaults.alpha),
                seed: args.seed,
                progress: true,
            };
            ("zipf", kith_graph::generate::zipf_in_degree(&config)?, None)
        }
        Model::Lognormal => {
            let defaults = LogNormalConfig::default();
            let config = LogNormalConfig {
                nodes: args.nodes,
                mu: args.lognormal_mu.unwrap_or(defaults.mu),
                sigma: args.lognormal_sigma.unwrap_or(defaults.sigma),
                seed: args.seed,
                progress: true,
            };
            ("lognormal", kith_graph::generate::lognormal(&config)?, None)
        }
    };
    let report = GenerationReport {
        model,
        nodes: graph.num_nodes() as u64,
        edges: graph.num_edges(),
        seed: args.seed,
        seconds: start.elapsed().as_secs_f64(),
        lfr,
    };
    Ok((report, graph))
}
