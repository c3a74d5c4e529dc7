//! `kith analyze comm-overhead <graph>`: LFGraph's communication model (values per vertex per
//! iteration under Pregel, GraphLab, PowerGraph and LFGraph) and computation balance under
//! hash placement, for server counts 2…256, as a table, JSON, CSV and two charts.

use std::path::PathBuf;

use anyhow::{Context as _, Result, ensure};
use clap::Args;
use kith_distributed::{CommModel, Overhead};
use kith_lab::cli::GraphInput;
use kith_lab::plot::{LineChart, Series, line_chart};
use serde_json::json;

#[derive(Debug, Args)]
pub(crate) struct CommArgs {
    #[command(flatten)]
    input: GraphInput,
    /// Server counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "2,4,8,16,32,64,128,256")]
    servers: Vec<usize>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Write comm-overhead.csv, comm-overhead.png (values per vertex per iteration) and
    /// comm-balance.png (busiest server's in-links over the mean) into this directory.
    #[arg(long)]
    plot: Option<PathBuf>,
}

pub(super) fn run(args: &CommArgs) -> Result<()> {
    ensure!(!args.servers.is_empty(), "--servers needs at least one count");
    if let Some(bad) = args.servers.iter().find(|&&s| s == 0 || s > 1 << 20) {
        anyhow::bail!("--servers {bad}: a server count must be 1 to 1048576");
    }
    let graph = args.input.load()?;
    let model = CommModel::new(&graph);
    let rows: Vec<Overhead> =
        args.servers.iter().map(|&s| kith_distributed::overhead(&model, s)).collect();
    if let Some(dir) = &args.plot {
        write_plots(dir, &rows)?;
    }
    if args.json {
        let report = json!({
            "graph": args.input.graph.display().to_string(),
            "directed": graph.is_directed(),
            "users": graph.num_nodes(),
            "edges": graph.num_edges(),
            "servers": rows,
        });
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    println!(
        "values per vertex per iteration on {} users, {} edges ({})",
        graph.num_nodes(),
        graph.num_edges(),
        if graph.is_directed() { "directed" } else { "undirected" }
    );
    println!("servers    pregel  graphlab  powergraph   lfgraph  compute max/mean");
    for r in &rows {
        println!(
            "{:>7} {:>9.3} {:>9.3} {:>11.3} {:>9.3} {:>17.3}",
            r.servers, r.pregel, r.graphlab, r.powergraph, r.lfgraph, r.compute_max_over_mean
        );
    }
    Ok(())
}

fn write_plots(dir: &std::path::Path, rows: &[Overhead]) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut csv = String::from(
        "servers,pregel,graphlab,powergraph,lfgraph,compute_max_over_mean,compute_min_over_mean\n",
    );
    for r in rows {
        csv.push_str(&format!(
            "{},{},{},{},{},{},{}\n",
            r.servers,
            r.pregel,
            r.graphlab,
            r.powergraph,
            r.lfgraph,
            r.compute_max_over_mean,
            r.compute_min_over_mean
        ));
    }
    let path = dir.join("comm-overhead.csv");
    std::fs::write(&path, csv).with_context(|| format!("writing {}", path.display()))?;
    let line = |name: &str, f: fn(&Overhead) -> f64| Series {
        name: name.into(),
        points: rows.iter().map(|r| (r.servers as f64, f(r))).collect(),
    };
    line_chart(
        &dir.join("comm-overhead.png"),
        &LineChart {
            title: "Expected values sent per vertex per iteration (hash placement)",
            x_label: "servers",
            y_label: "values per vertex per iteration",
            log2_x: true,
        },
        &[
            line("Pregel", |r| r.pregel),
            line("GraphLab", |r| r.graphlab),
            line("PowerGraph", |r| r.powergraph),
            line("LFGraph", |r| r.lfgraph),
        ],
    )?;
    line_chart(
        &dir.join("comm-balance.png"),
        &LineChart {
            title: "Computation balance: in-links per server under hash placement",
            x_label: "servers",
            y_label: "in-links / mean",
            log2_x: true,
        },
        &[
            line("busiest server", |r| r.compute_max_over_mean),
            line("least busy server", |r| r.compute_min_over_mean),
        ],
    )
}
