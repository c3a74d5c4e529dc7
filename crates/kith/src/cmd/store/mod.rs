//! `kith store build|relayout|status|verify`: the layout-aware RocksDB store.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use kith_lab::cli::{GraphInput, method_parser};
use kith_layout::{LayoutConfig, Method, la_cost};
use kith_store::{BuildOptions, DEFAULT_CHUNK_BYTES, DataSpec, NewLayout, OpenOptions, Store};
use serde::Serialize;

mod cassandra;
mod choice;

pub(crate) use cassandra::{CassandraArgs, DropArgs};
use cassandra::{build_cassandra, relayout_cassandra};
use choice::{LayoutChoice, Placement};

#[derive(Debug, Subcommand)]
pub(crate) enum StoreCommand {
    /// Build a store from a graph: users in layout order, synthetic profiles and data blocks.
    Build(BuildArgs),
    /// Rewrite every record in a new layout and switch to it atomically.
    Relayout(RelayoutArgs),
    /// Users, friendships, the layout's cost against a fresh layout, and space used.
    Status(StatusArgs),
    /// Check every checksum and invariant; exits non-zero on any problem.
    Verify(VerifyArgs),
    /// Drop a store on Cassandra (its keyspace, with everything in it).
    Drop(DropArgs),
    /// Crash-test writer: durable random writes, each acknowledgement printed (for tests).
    #[command(hide = true)]
    CrashWriter(CrashWriterArgs),
}

pub(crate) fn run(command: StoreCommand) -> Result<()> {
    match command {
        StoreCommand::Build(a) => build_cmd(a),
        StoreCommand::Relayout(a) => relayout_cmd(a),
        StoreCommand::Status(a) => status_cmd(a),
        StoreCommand::Verify(a) => verify_cmd(a),
        StoreCommand::Drop(a) => {
            let options = a.cassandra.options()?;
            kith_cassandra::drop_store(&options)?;
            println!("dropped keyspace {}", options.keyspace);
            Ok(())
        }
        StoreCommand::CrashWriter(a) => crash_writer_cmd(a),
    }
}

/// The record and page sizes that make the layout model's pages the store's blocks.
fn paged_sizes(data_bytes: u64, chunk_bytes: u32) -> (u64, u64) {
    let c = kith_store::paged_config(LayoutConfig::default(), data_bytes, chunk_bytes);
    (c.record_bytes, c.page_bytes)
}

#[derive(Debug, Args)]
pub(crate) struct BuildArgs {
    #[command(flatten)]
    input: GraphInput,
    /// The new store's directory (must not exist or be empty).
    #[arg(long, required_unless_present = "cassandra", conflicts_with = "cassandra")]
    dir: Option<PathBuf>,
    #[command(flatten)]
    cassandra: CassandraArgs,
    /// On Cassandra: users per partition, runs of consecutive layout positions (`--method
    /// hash` is always 1).
    #[arg(long, default_value_t = 64, requires = "cassandra")]
    partition_users: u64,
    /// On Cassandra: a partition holding at most this many of a user's friends is read from
    /// copies of their profiles in the user's own partition (0: no copies; default 1, and 0
    /// for `--method hash`). Each copy is one more row per profile write.
    #[arg(long, requires = "cassandra")]
    friend_copies: Option<u32>,
    #[command(flatten)]
    layout: LayoutChoice,
    /// Every user's data block has this many bytes (4 B to 4 MiB).
    #[arg(long, conflicts_with = "data_dist", default_value_t = 40)]
    data_bytes: u64,
    /// Data block sizes drawn from a power law: `powerlaw:MIN,MAX`.
    #[arg(long)]
    data_dist: Option<String>,
    /// Data blocks are stored in chunks of this many bytes (1 B to 4 MiB).
    #[arg(long, default_value_t = DEFAULT_CHUNK_BYTES)]
    chunk_bytes: u32,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Serialize)]
struct BuildReport {
    dir: String,
    users: usize,
    friendships: u64,
    method: String,
    layout_cost: u64,
    data: String,
    layout_seconds: f64,
    write_seconds: f64,
    bytes_on_disk: u64,
}

fn data_spec(bytes: u64, dist: Option<&str>) -> Result<DataSpec> {
    Ok(match dist {
        Some(d) => DataSpec::parse(d)?,
        None => DataSpec::parse(&bytes.to_string())?,
    })
}

fn build_cmd(args: BuildArgs) -> Result<()> {
    let spec = data_spec(args.data_bytes, args.data_dist.as_deref())?;
    if args.cassandra.cassandra.is_some() {
        return build_cassandra(
            &args.input,
            &args.layout,
            &args.cassandra,
            args.partition_users,
            args.friend_copies,
            spec,
            args.json,
        );
    }
    if args.layout.method == Some(Placement::Hash) {
        bail!(
            "--method hash is a placement on Cassandra (one partition per user); the embedded store needs a layout"
        );
    }
    let dir = args.dir.clone().expect("clap requires --dir without --cassandra");
    let options = BuildOptions {
        data: spec,
        chunk_bytes: args.chunk_bytes,
        seed: args.layout.seed,
        progress: true,
    };
    // Before the graph is read and the layout computed, which would use the chunk size.
    options.check().context("--chunk-bytes")?;
    let graph = args.input.load_undirected()?;
    let t = Instant::now();
    let paged = paged_sizes(spec.mean().round() as u64, args.chunk_bytes);
    let (layout, meta) = args.layout.resolve(&graph, paged)?;
    let layout_seconds = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let method = meta.method.clone();
    kith_store::build(&dir, &graph, &layout, meta, &options)?;
    let report = BuildReport {
        dir: dir.display().to_string(),
        users: graph.num_nodes(),
        friendships: graph.num_edges(),
        method,
        layout_cost: la_cost(&graph, &layout),
        data: match spec {
            DataSpec::Fixed(n) => format!("{n} B"),
            DataSpec::PowerLaw { min, max } => format!("power law {min}..{max} B"),
        },
        layout_seconds,
        write_seconds: t.elapsed().as_secs_f64(),
        bytes_on_disk: kith_store::dir_bytes(&dir),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "built {} : {} users, {} friendships, {} layout (cost {}), data {}, {:.1} MB on disk \
             (layout {:.2} s, write {:.2} s)",
            report.dir,
            report.users,
            report.friendships,
            report.method,
            report.layout_cost,
            report.data,
            report.bytes_on_disk as f64 / 1e6,
            report.layout_seconds,
            report.write_seconds
        );
    }
    Ok(())
}

#[derive(Debug, Args)]
pub(crate) struct RelayoutArgs {
    /// The store.
    #[arg(long, required_unless_present = "cassandra", conflicts_with = "cassandra")]
    dir: Option<PathBuf>,
    #[command(flatten)]
    cassandra: CassandraArgs,
    /// On Cassandra: users per partition in the new generation (default: as now).
    #[arg(long, requires = "cassandra")]
    partition_users: Option<u64>,
    /// On Cassandra: the friend-copy limit of the new generation (default: as now, 0 for
    /// `--method hash`).
    #[arg(long, requires = "cassandra")]
    friend_copies: Option<u32>,
    #[command(flatten)]
    layout: LayoutChoice,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

fn open(dir: &Path) -> Result<Store> {
    Store::open(dir, &OpenOptions::default())
        .with_context(|| format!("cannot open store {}", dir.display()))
}

fn relayout_cmd(args: RelayoutArgs) -> Result<()> {
    if args.layout.layout.is_none() && args.layout.method.is_none() {
        bail!("relayout needs --layout <file> or --method <name>");
    }
    if args.cassandra.cassandra.is_some() {
        return relayout_cassandra(
            &args.layout,
            &args.cassandra,
            args.partition_users,
            args.friend_copies,
            args.json,
        );
    }
    if args.layout.method == Some(Placement::Hash) {
        bail!("--method hash is a placement on Cassandra; the embedded store needs a layout");
    }
    let dir = args.dir.clone().expect("clap requires --dir without --cassandra");
    let store = open(&dir)?;
    let stored = store.layout_config()?;
    let paged = (stored.record_bytes, stored.page_bytes);
    let report = match &args.layout.layout {
        Some(_) => {
            let graph = store.graph()?.graph;
            let (layout, meta) = args.layout.resolve(&graph, paged)?;
            store.relayout(NewLayout::Given(&layout, meta), true)?
        }
        None => store.relayout(NewLayout::Compute(args.layout.config(paged)), true)?,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "relaid out {}: generation {} -> {}, {} users ({} appended), cost {} -> {} \
             (layout {:.2} s, rewrite {:.2} s)",
            dir.display(),
            report.from_generation,
            report.to_generation,
            report.users + report.appended,
            report.appended,
            report.cost_before,
            report.cost_after,
            report.compute_seconds,
            report.rewrite_seconds
        );
    }
    Ok(())
}

#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    /// The store.
    #[arg(long)]
    dir: PathBuf,
    /// Compare against a fresh layout by this method (default: the store's own).
    #[arg(long, value_parser = method_parser())]
    method: Option<Method>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

fn status_cmd(args: StatusArgs) -> Result<()> {
    let store = open(&args.dir)?;
    let stored = store.layout_config()?;
    let fresh = args.method.map(|method| LayoutConfig { method, ..stored });
    let s = store.status(fresh)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
        return Ok(());
    }
    println!("store {} (generation {})", args.dir.display(), s.generation);
    println!(
        "  users                  {} ({} appended since the layout)",
        s.users, s.appended_since_layout
    );
    println!("  friendships            {}", s.friendships);
    println!(
        "  layout                 {} ({} B entries, {} B pages)",
        s.layout.method, s.record_bytes, s.page_bytes
    );
    println!("  layout cost            {}", s.layout_cost);
    println!(
        "  fresh layout cost      {} ({:.2} s to compute)",
        s.fresh_layout_cost, s.fresh_seconds
    );
    println!("  degradation            {:+.1} %", 100.0 * s.degradation);
    println!("  pages per friend list  {:.3} now, {:.3} fresh", s.pages_mean, s.fresh_pages_mean);
    println!("  bytes on disk          {}", s.bytes_on_disk);
    Ok(())
}

#[derive(Debug, Args)]
pub(crate) struct VerifyArgs {
    /// The store.
    #[arg(long)]
    dir: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

fn verify_cmd(args: VerifyArgs) -> Result<()> {
    let store = open(&args.dir)?;
    let report = store.verify().with_context(|| format!("verify {}", args.dir.display()))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "{}: {} users, {} friendships, {} records ({} bytes) read",
            args.dir.display(),
            report.users,
            report.friendships,
            report.records,
            report.bytes
        );
        for p in &report.problems {
            println!("  problem: {p}");
        }
    }
    if !report.ok() {
        bail!("{} problems found in {}", report.problem_count, args.dir.display());
    }
    if !args.json {
        println!("  OK");
    }
    Ok(())
}

#[derive(Debug, Args)]
pub(crate) struct CrashWriterArgs {
    /// The store.
    #[arg(long)]
    dir: PathBuf,
    /// Writer threads.
    #[arg(long, default_value_t = 4)]
    threads: usize,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Relayout every this many writes of the first thread (0 = never).
    #[arg(long, default_value_t = 0)]
    relayout_every: u64,
}

fn crash_writer_cmd(args: CrashWriterArgs) -> Result<()> {
    let store = open(&args.dir)?;
    let out: Box<dyn std::io::Write + Send> = Box::new(std::io::stdout());
    let log = Mutex::new(out);
    kith_store::crash_writer(&store, args.threads.max(1), args.seed, args.relayout_every, &log)?;
    Ok(())
}
