//! `kith demo`: kith's main job on its embedded default, with nothing to install or download.
//! Generate a social graph with planted communities, describe it, round-trip it through a
//! `.kgraph` snapshot, and lay its users out on disk: input order, Bondhu's parcom and kith's
//! own method, compared by the pages a "list all friends" reads; then store the users in
//! RocksDB under two of those layouts and time "list all friends" from the device, with a
//! relayout, durable writes and a full verification; finally serve that store over HTTP on
//! loopback and drive a short mixed workload against it. `kith demo cluster` (`cluster.rs`)
//! shows the service on a cluster instead.

mod cluster;
mod http;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Result, ensure};
use clap::{Args, Subcommand};
use kith_graph::LoadConfig;
use kith_graph::generate::{LfrConfig, lfr};
use kith_layout::metrics::mean_pages;
use kith_layout::{LayoutConfig, Method, compute, la_cost, write_layout};

use crate::cli::stats_table;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct DemoArgs {
    #[command(subcommand)]
    what: Option<DemoWhat>,
    /// Vertices of the generated social graph.
    #[arg(long, default_value_t = 100_000)]
    nodes: usize,
    /// Random seed.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Keep the generated files in this directory (default: a temporary one, removed after).
    #[arg(long)]
    keep: Option<PathBuf>,
    /// Seconds of the HTTP workload.
    #[arg(long, default_value_t = 5.0)]
    http_seconds: f64,
    /// Concurrent HTTP clients.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Print every figure of the walk-through as one JSON document on stdout (the
    /// walk-through and progress go to stderr).
    #[arg(long)]
    json: bool,
}

/// The other demos.
#[derive(Debug, Subcommand)]
pub enum DemoWhat {
    /// kith on a cluster, on loopback: 3 Cassandra nodes, a 3-master Redis Cluster and 3
    /// kith servers under mixed load, with one of each killed midway; then every
    /// acknowledged write read back, and everything stopped.
    Cluster(cluster::ClusterDemoArgs),
}

/// Runs the demo.
pub fn run(args: DemoArgs) -> Result<()> {
    if let Some(DemoWhat::Cluster(a)) = args.what {
        return cluster::run(a);
    }
    crate::report::set_json(args.json);
    let mut doc = serde_json::Map::new();
    let tmp = tempfile::tempdir()?;
    let dir = args.keep.clone().unwrap_or_else(|| tmp.path().to_path_buf());
    std::fs::create_dir_all(&dir)?;

    crate::say!(
        "kith demo: a seeded LFR social graph with {} users (seed {})\n",
        args.nodes,
        args.seed
    );
    let start = Instant::now();
    let config =
        LfrConfig { nodes: args.nodes, seed: args.seed, progress: true, ..Default::default() };
    let generated = lfr(&config)?;
    let generate_s = start.elapsed().as_secs_f64();
    let graph = &generated.graph;
    let stats = kith_graph::stats(graph);
    crate::say!("{}", stats_table(&stats).trim_end());
    doc.insert("graph".into(), serde_json::to_value(&stats)?);
    doc.insert(
        "communities".into(),
        serde_json::json!({
            "planted": generated.num_communities(),
            "mixing": generated.realized_mu(),
            "mixing_asked": config.mu,
            "degree_exponent": generated.fitted_degree_exponent(),
            "degree_exponent_asked": config.tau1,
        }),
    );

    crate::say!(
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
    doc.insert(
        "timings".into(),
        serde_json::json!({
            "generate_s": generate_s, "snapshot_bytes": bytes, "save_s": save_s, "load_s": load_s,
        }),
    );
    crate::say!(
        "\ngenerated in {generate_s:.2} s; snapshot of {:.1} MB written in {save_s:.3} s, loaded and verified in {load_s:.3} s",
        bytes as f64 / 1e6
    );
    crate::say!("\nlayouts: where each user's record goes (pages of 4 KiB, 40-byte records)");
    crate::say!("{:<10}{:>18}{:>20}{:>12}", "method", "LA cost", "pages/friend list", "seconds");
    let mut layouts = Vec::new();
    let mut layout_rows = Vec::new();
    for method in [Method::Input, Method::Random, Method::Parcom, Method::Kith] {
        let start = Instant::now();
        let config = LayoutConfig { method, seed: args.seed, progress: true, ..Default::default() };
        let layout = compute(graph, &config)?.layout;
        let seconds = start.elapsed().as_secs_f64();
        let (cost, pages) = (la_cost(graph, &layout), mean_pages(graph, &layout, 40));
        crate::say!("{:<10}{cost:>18}{pages:>20.3}{seconds:>12.2}", method.name());
        layout_rows.push(serde_json::json!({
            "method": method.name(), "la_cost": cost, "pages_per_friend_list": pages,
            "seconds": seconds,
        }));
        layouts.push((method, layout));
    }
    doc.insert("layouts".into(), layout_rows.into());
    let store_dir = store_demo(&dir, graph, &layouts, args.seed, &mut doc)?;
    if let Some(store_dir) = store_dir {
        let http = http::run(
            &store_dir,
            graph.original_ids(),
            args.http_seconds,
            args.clients,
            args.seed,
        )?;
        doc.insert("http".into(), http);
    }
    if args.keep.is_some() {
        if let Some((_, layout)) = layouts.last() {
            write_layout(&dir.join("demo.layout"), graph, layout)?;
        }
        kith_graph::write_communities(&dir.join("demo.cmty.txt"), &generated.communities())?;
        crate::say!(
            "kept {}, demo.cmty.txt and demo.layout in {}",
            snapshot.display(),
            dir.display()
        );
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&serde_json::Value::Object(doc))?);
    }
    Ok(())
}

/// Two stores of the same users, under random order and kith's layout: "list all friends"
/// from the device, then durable writes, a relayout and a full verification.
fn store_demo(
    dir: &std::path::Path,
    graph: &kith_graph::Graph,
    layouts: &[(Method, kith_layout::Layout)],
    seed: u64,
    doc: &mut serde_json::Map<String, serde_json::Value>,
) -> Result<Option<PathBuf>> {
    use kith_store::{
        BuildOptions, CacheMode, DataSpec, FriendsBench, NewLayout, OpenOptions, Store,
    };
    const DATA: u64 = 400;
    crate::say!(
        "\nstore: users in RocksDB keyed by layout position, {DATA}-byte data blocks; \
         \"list all friends\" of 300 random users, cold (direct reads, caches dropped)"
    );
    crate::say!(
        "{:<10}{:>12}{:>14}{:>16}{:>16}",
        "layout",
        "build s",
        "median ms",
        "pages/query",
        "HDD model ms"
    );
    let mut kept = None;
    let mut store_rows = Vec::new();
    for (method, layout) in
        layouts.iter().filter(|(m, _)| matches!(m, Method::Random | Method::Kith))
    {
        let path = dir.join(format!("store-{method}"));
        if path.exists() {
            std::fs::remove_dir_all(&path)?;
        }
        let start = Instant::now();
        let options = BuildOptions {
            data: DataSpec::Fixed(DATA),
            seed,
            progress: true,
            ..Default::default()
        };
        let config = kith_store::paged_config(
            LayoutConfig { method: *method, seed, ..Default::default() },
            DATA,
            kith_store::DEFAULT_CHUNK_BYTES,
        );
        // kith's layout again, for the store's own pages: blocks of 400-byte entries.
        let paged;
        let layout = if *method == Method::Kith {
            paged = compute(graph, &config)?.layout;
            &paged
        } else {
            layout
        };
        drop(kith_store::build(
            &path,
            graph,
            layout,
            kith_store::LayoutMeta::of(&config),
            &options,
        )?);
        let build_s = start.elapsed().as_secs_f64();
        let store =
            Store::open(&path, &OpenOptions { mode: CacheMode::Cold, ..Default::default() })?;
        let bench = FriendsBench {
            users: 300,
            repeat: 3,
            device: Some(kith_store::DeviceModel::Hdd(kith_store::Hdd::default())),
            seed,
            progress: true,
            ..Default::default()
        };
        let s = store.bench_friends(&bench)?.summary;
        store_rows.push(serde_json::json!({
            "layout": method.name(), "build_s": build_s, "median_ms": s.median_ms,
            "pages_per_query": s.pages_read_mean, "hdd_model_ms": s.model_mean_ms,
        }));
        crate::say!(
            "{:<10}{:>12.2}{:>14.3}{:>16.2}{:>16.2}",
            method.name(),
            build_s,
            s.median_ms,
            s.pages_read_mean,
            s.model_mean_ms.unwrap_or(f64::NAN)
        );
        kept = Some(path);
    }
    doc.insert("stores".into(), store_rows.into());
    let Some(path) = kept else { return Ok(None) };
    let store = Store::open(&path, &OpenOptions::default())?;
    let uids = graph.original_ids();
    let start = Instant::now();
    let mut added = 0;
    for i in 0..200usize {
        let (u, v) = (uids[(i * 7919) % uids.len()], uids[(i * 104_729 + 13) % uids.len()]);
        if u != v && store.add_friend(u, v)? {
            added += 1;
        }
    }
    let write_s = start.elapsed().as_secs_f64();
    crate::say!(
        "\n{added} durable add_friend calls (WAL fsynced before each returns) in {write_s:.2} s"
    );
    doc.insert("writes".into(), serde_json::json!({"add_friend": added, "seconds": write_s}));
    let status = store.status(None)?;
    doc.insert("status".into(), serde_json::to_value(&status)?);
    crate::say!(
        "status: {} users, {} friendships, layout cost {} vs fresh {} (degradation {:+.2} %)",
        status.users,
        status.friendships,
        status.layout_cost,
        status.fresh_layout_cost,
        100.0 * status.degradation
    );
    let config = kith_store::paged_config(
        LayoutConfig { method: Method::Kith, seed, ..Default::default() },
        DATA,
        kith_store::DEFAULT_CHUNK_BYTES,
    );
    let r = store.relayout(NewLayout::Compute(config), true)?;
    doc.insert("relayout".into(), serde_json::to_value(&r)?);
    crate::say!(
        "relayout to generation {}: cost {} -> {} ({:.2} s computing, {:.2} s rewriting)",
        r.to_generation,
        r.cost_before,
        r.cost_after,
        r.compute_seconds,
        r.rewrite_seconds
    );
    let report = store.verify()?;
    ensure!(report.ok(), "verify found problems: {:?}", report.problems);
    doc.insert(
        "verify".into(),
        serde_json::json!({
            "users": report.users, "friendships": report.friendships,
            "records": report.records, "ok": true,
        }),
    );
    crate::say!(
        "verify: {} users, {} friendships, {} records checked, OK",
        report.users,
        report.friendships,
        report.records
    );
    Ok(Some(path))
}
