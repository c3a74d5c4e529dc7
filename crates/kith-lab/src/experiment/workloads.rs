//! `kith experiment bondhu-workloads`: Bondhu's Fig. 10 on real stores. A layout is built
//! under each weight model (uniform, preferential, overlap); each friend-access workload
//! then queries every store: a user drawn uniformly reads the data blocks of K friends drawn
//! by the workload's weights (without replacement), cold, the stores' queries interleaved.
//! `bondhu-models` compares the same layouts by weighted cost; this measures them.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context as _, Result, ensure};
use clap::Args;
use kith_graph::WeightModel;
use kith_layout::{LayoutConfig, Method, compute};
use kith_store::{
    BuildOptions, CacheMode, DataSpec, DeviceModel, FriendsBench, FriendsReport, OpenOptions,
    Store, build,
};
use kith_workload::FriendAccess;
use rand::SeedableRng;

use super::bondhu::write_csv;
use crate::cli::{GraphInput, method_parser};
use crate::plot::bar_chart;
use crate::say;

#[derive(Debug, Args)]
pub struct WorkloadsArgs {
    /// The graph (any format `kith graph import` reads).
    #[arg(long)]
    graph: PathBuf,
    /// Where to write the CSV and PNG, and (temporarily) the stores.
    #[arg(long)]
    pub(super) out: PathBuf,
    /// The layout method built under each model.
    #[arg(long, default_value = "parcom", value_parser = method_parser())]
    method: Method,
    /// parcom's part count.
    #[arg(long, default_value_t = 64)]
    communities: usize,
    /// Every user's data block, bytes.
    #[arg(long, default_value_t = 400)]
    size: u64,
    /// Friends read per query (all of a user's friends when they have fewer).
    #[arg(long, default_value_t = 10)]
    friends_per_query: usize,
    /// Queries per workload.
    #[arg(long, default_value_t = 1500)]
    users: usize,
    /// Runs per query; the fastest counts.
    #[arg(long, default_value_t = 6)]
    repeat: usize,
    /// Seed of layouts, data and queries.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub(super) fn run(args: &WorkloadsArgs) -> Result<()> {
    ensure!(args.friends_per_query >= 1, "--friends-per-query must be at least 1");
    ensure!(args.users >= 1, "--users must be at least 1");
    ensure!(
        (1..=kith_store::MAX_DATA_BYTES).contains(&args.size),
        "--size must be 1 to {} bytes",
        kith_store::MAX_DATA_BYTES
    );
    let graph = GraphInput::file(args.graph.clone()).load_undirected()?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let stores_dir = args.out.join("stores");
    // The baseline (input order) and one layout per model.
    let mut built: Vec<(String, PathBuf)> = Vec::new();
    let builds = std::iter::once((Method::Input, WeightModel::Uniform, "default".to_owned()))
        .chain(WeightModel::ALL.iter().map(|&m| (args.method, m, m.to_string())));
    for (method, model, name) in builds {
        let config = kith_store::paged_config(
            LayoutConfig {
                method,
                model,
                communities: args.communities,
                seed: args.seed,
                progress: true,
                ..LayoutConfig::default()
            },
            args.size,
            kith_store::DEFAULT_CHUNK_BYTES,
        );
        let layout = compute(&graph, &config)?.layout;
        let dir = stores_dir.join(&name);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)
                .with_context(|| format!("cannot clear {}", dir.display()))?;
        }
        eprintln!("bondhu-workloads: building {} ({} under {model})", dir.display(), method);
        let options = BuildOptions {
            data: DataSpec::Fixed(args.size),
            seed: args.seed,
            progress: true,
            ..BuildOptions::default()
        };
        drop(build(&dir, &graph, &layout, kith_store::LayoutMeta::of(&config), &options)?);
        built.push((name, dir));
    }
    let stores = built
        .iter()
        .map(|(_, dir)| {
            Store::open(dir, &OpenOptions { mode: CacheMode::Cold, ..OpenOptions::default() })
        })
        .collect::<std::result::Result<Vec<Store>, _>>()?;
    let refs: Vec<&Store> = stores.iter().collect();
    let mut csv = String::from(
        "built_under,workload,friends_per_query,users,median_ms,mean_ms,data_median_ms,\
         data_pages_read_mean,data_requests_mean,hdd_model_data_mean_ms,median_improvement,\
         data_pages_improvement,hdd_model_data_improvement\n",
    );
    // values[workload][built under], the HDD model's data-time improvement over input order.
    let mut values = Vec::new();
    for (w, &workload) in WeightModel::ALL.iter().enumerate() {
        eprintln!("bondhu-workloads: {workload} workload on {} stores", refs.len());
        let access = FriendAccess::new(&graph, workload)?;
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(args.seed ^ (w as u64 + 1));
        let queries: Vec<(u64, Vec<u64>)> = (0..args.users)
            .map(|_| access.draw_friends(&mut rng, args.friends_per_query))
            .collect();
        let bench = FriendsBench {
            users: args.users,
            repeat: args.repeat,
            fetch_bytes: None,
            device: Some(DeviceModel::Hdd(kith_store::Hdd::default())),
            seed: args.seed,
            keep_trace: false,
            progress: true,
            queries: Some(Arc::new(queries)),
        };
        let reports = kith_store::bench_friends_interleaved(&refs, &bench)?;
        let base = &reports[0].summary;
        let mut row = Vec::new();
        for ((name, _), report) in built.iter().zip(&reports) {
            let s = &report.summary;
            let gain = |b: f64, x: f64| if b > 0.0 { 1.0 - x / b } else { 0.0 };
            let model = |r: &FriendsReport| r.summary.model_data_mean_ms.unwrap_or(f64::NAN);
            let hdd_gain = gain(model(&reports[0]), model(report));
            writeln!(
                csv,
                "{name},{workload},{},{},{:.4},{:.4},{:.4},{:.3},{:.3},{:.4},{:.4},{:.4},{:.4}",
                args.friends_per_query,
                s.users,
                s.median_ms,
                s.mean_ms,
                s.data_median_ms,
                s.data_pages_read_mean,
                s.data_requests_mean,
                model(report),
                gain(base.median_ms, s.median_ms),
                gain(base.data_pages_read_mean, s.data_pages_read_mean),
                hdd_gain
            )?;
            if name != "default" {
                row.push(100.0 * hdd_gain);
            }
        }
        values.push(row);
    }
    drop(stores);
    let _ = std::fs::remove_dir_all(&stores_dir);
    let csv_path = args.out.join("bondhu-workloads.csv");
    write_csv(&csv_path, &csv)?;
    let names: Vec<String> = WeightModel::ALL.iter().map(|m| m.to_string()).collect();
    bar_chart(
        &args.out.join("bondhu-workloads.png"),
        &format!(
            "{}: reading {} friends' {} B blocks, HDD-model time improvement over input order",
            args.method, args.friends_per_query, args.size
        ),
        "improvement (%)",
        &names.iter().map(|n| format!("workload: {n}")).collect::<Vec<_>>(),
        &names.iter().map(|n| format!("built: {n}")).collect::<Vec<_>>(),
        &values,
    )?;
    say!("{csv}");
    eprintln!("wrote {} and bondhu-workloads.png", csv_path.display());
    Ok(())
}
