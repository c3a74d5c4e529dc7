//! `kith demo`: kith's main job on its embedded default, with nothing to install or download.
//! Generate a social graph with planted communities, describe it, round-trip it through a
//! `.kgraph` snapshot, and lay its users out on disk: input order, Bondhu's parcom and kith's
//! own method, compared by the pages a "list all friends" reads. Later layers extend the demo.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Result, ensure};
use clap::Args;
use kith_graph::LoadConfig;
use kith_graph::generate::{LfrConfig, lfr};
use kith_layout::metrics::mean_pages;
use kith_layout::{LayoutConfig, Method, compute, la_cost, write_layout};

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
    println!("\nlayouts: where each user's record goes (pages of 4 KiB, 40-byte records)");
    println!("{:<10}{:>18}{:>20}{:>12}", "method", "LA cost", "pages/friend list", "seconds");
    let mut kith_layout = None;
    for method in [Method::Default, Method::Random, Method::Parcom, Method::Kith] {
        let start = Instant::now();
        let config = LayoutConfig { method, seed: args.seed, progress: true, ..Default::default() };
        let layout = compute(graph, &config)?.layout;
        let seconds = start.elapsed().as_secs_f64();
        println!(
            "{:<10}{:>18}{:>20.3}{:>12.2}",
            method.name(),
            la_cost(graph, &layout),
            mean_pages(graph, &layout, 40),
            seconds
        );
        kith_layout = Some(layout);
    }
    if args.keep.is_some() {
        if let Some(layout) = &kith_layout {
            write_layout(&dir.join("demo.layout"), graph, layout)?;
        }
        kith_graph::write_communities(&dir.join("demo.cmty.txt"), &generated.communities())?;
        println!("kept {}, demo.cmty.txt and demo.layout in {}", snapshot.display(), dir.display());
    }
    Ok(())
}
