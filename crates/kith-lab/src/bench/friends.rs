//! `kith bench friends`: Bondhu's "list all friends" on one store, cold or warm, with the
//! device reads counted and optionally replayed through a disk model.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use kith_store::{CacheMode, DeviceModel, FriendsBench, OpenOptions, Store};

#[derive(Debug, Args)]
pub struct FriendsArgs {
    /// The store.
    #[arg(long)]
    dir: PathBuf,
    /// Random users to query (the same users for every store of the same graph and seed).
    #[arg(long, default_value_t = 1500)]
    users: usize,
    /// Runs per user; the fastest counts.
    #[arg(long, default_value_t = 6)]
    repeat: usize,
    /// Bytes to fetch from each friend's data block (default: all of it).
    #[arg(long)]
    fetch_bytes: Option<u64>,
    /// Cold: direct reads, a tiny block cache emptied and the files fadvised out before
    /// every run.
    #[arg(long, conflicts_with = "warm", required_unless_present = "warm")]
    cold: bool,
    /// Warm: buffered reads, caches kept.
    #[arg(long)]
    warm: bool,
    /// Replay each query's device reads through a disk model.
    #[arg(long)]
    device_model: Option<DeviceModel>,
    /// Which users.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Include every user's run in the JSON.
    #[arg(long)]
    per_user: bool,
}

pub(super) fn run(args: FriendsArgs) -> Result<()> {
    if args.users == 0 || args.repeat == 0 {
        anyhow::bail!("--users and --repeat must be at least 1");
    }
    let mode = if args.cold { CacheMode::Cold } else { CacheMode::Warm };
    let store = Store::open(&args.dir, &OpenOptions { mode, ..OpenOptions::default() })
        .with_context(|| format!("cannot open store {}", args.dir.display()))?;
    let bench = FriendsBench {
        users: args.users,
        repeat: args.repeat,
        fetch_bytes: args.fetch_bytes,
        device: args.device_model,
        seed: args.seed,
        keep_trace: false,
        progress: true,
        queries: None,
    };
    let report = store.bench_friends(&bench)?;
    let s = &report.summary;
    // `kith bench friends --json`: the summary, and per-user runs with --per-user.
    if crate::report::json() {
        let value =
            if args.per_user { serde_json::to_value(&report)? } else { serde_json::to_value(s)? };
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(());
    }
    crate::say!(
        "list all friends: {} users x {} runs, {} ({})",
        s.users,
        s.repeat,
        match s.mode {
            CacheMode::Cold => "cold",
            CacheMode::Warm => "warm",
        },
        s.cold_means.as_deref().unwrap_or("caches kept")
    );
    crate::say!("  median {:.3} ms, p5 {:.3} ms, p95 {:.3} ms", s.median_ms, s.p5_ms, s.p95_ms);
    crate::say!(
        "  per query: {:.2} pages (RocksDB blocks) read, {:.2} of them friends' data; {:.0} bytes; \
         {:.2} distinct 4 KiB device pages; {:.1} friends",
        s.pages_read_mean,
        s.data_pages_read_mean,
        s.bytes_read_mean,
        s.device_pages_mean,
        s.friends_mean
    );
    if let (Some(model), Some(median)) = (&s.device_model, s.model_median_ms) {
        crate::say!(
            "  {model} model: median {median:.3} ms, mean {:.3} ms ({} addresses)",
            s.model_mean_ms.unwrap_or(f64::NAN),
            if s.physical_addresses { "physical" } else { "stand-in" }
        );
    }
    Ok(())
}
