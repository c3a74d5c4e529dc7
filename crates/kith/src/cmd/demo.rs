//! `kith demo`: kith's main job on its embedded default, with nothing to install or download.
//! For now: generate a social graph with planted communities, describe it, and round-trip it
//! through a `.kgraph` snapshot. Later layers extend the demo.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Result, ensure};
use clap::Args;
use kith_graph::LoadConfig;
use kith_graph::generate::{LfrConfig, lfr};

use super::graph::stats_table;

#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Vertices of the generated social graph.
    #[arg(long, default_value_t = 200_000)]
    nodes: usize,
    /// Random seed.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Keep the generated files in this directory (default: a temporary one, removed after).
    #[arg(long)]
    keep: Option<PathBuf>,
}

pub(crate) fn run(args: DemoArgs) -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let dir = args.keep.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir)?;

    println!(
        "kith demo: a seeded LFR social graph with {} users (seed {})\n",
        args.nodes, args.seed
    );
    let start = Instant::now();
    let config =
        LfrConfig { nodes: args.nodes, seed: args.seed, progress: true, ..Default::default() };
    let generated = lfr(&config)?;
    let generate_s = start.elapsed().as_secs_f64();
    let graph = &generated.graph;
    print!("{}", stats_table(&kith_graph::stats(graph)));

    println!(
        "{:<20}{} planted, mixing {:.3} (asked {:.2}), degree exponent {:.2} (asked {:.2})",
        "communities",
        generated.num_communities(),
        generated.realized_mu(),
        config.mu,
        generated.fitted_degree_exponent(),
        config.tau1
    );

    let snapshot = dir.join("demo.kgraph");
    let start = Instant::now();
    kith_graph::save(graph, &snapshot)?;
    let save_s = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let loaded = kith_graph::load(&snapshot, &LoadConfig::default())?;
    let load_s = start.elapsed().as_secs_f64();
    ensure!(&loaded == graph, "the snapshot did not load back to the same graph");
    let bytes = std::fs::metadata(&snapshot)?.len();
    println!(
        "\ngenerated in {generate_s:.2} s; snapshot of {:.1} MB written in {save_s:.3} s, loaded and verified in {load_s:.3} s",
        bytes as f64 / 1e6
    );
    if args.keep.is_some() {
        kith_graph::write_communities(&dir.join("demo.cmty.txt"), &generated.communities())?;
        println!("kept {} and demo.cmty.txt in {}", snapshot.display(), dir.display());
    }
    Ok(())
}
