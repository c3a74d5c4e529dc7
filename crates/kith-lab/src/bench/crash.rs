//! `kith bench crash` and `kith bench crash-check`: the long crash test. A durable writer
//! (`kith store crash-writer`, a child process) doing mixed writes (friendships added and
//! deleted, profiles, data blocks, whole users, relayouts) is SIGKILLed at random moments;
//! after each restart the store is verified and every write it acknowledged must be there.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use kith_graph::Graph;
use kith_layout::{LayoutConfig, Method, compute};
use kith_store::{BuildOptions, DataSpec, OpenOptions, Store, build, check_crash_log};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::Serialize;

use crate::machine::{Machine, git_commit, utc_now, write_json};

#[derive(Debug, Args)]
pub struct CrashCheckArgs {
    /// The store.
    #[arg(long)]
    dir: PathBuf,
    /// The writers' acknowledgement log.
    #[arg(long)]
    log: PathBuf,
}

pub(super) fn check(args: CrashCheckArgs) -> Result<()> {
    let store = Store::open(&args.dir, &OpenOptions::default())?;
    let log = std::fs::read_to_string(&args.log)
        .with_context(|| format!("cannot read {}", args.log.display()))?;
    let check = check_crash_log(&store, &log)?;
    println!("{}", serde_json::to_string_pretty(&check)?);
    if !check.lost.is_empty() {
        bail!("{} acknowledged writes lost, first: {}", check.lost.len(), check.lost[0]);
    }
    Ok(())
}

#[derive(Debug, Args)]
pub struct CrashArgs {
    /// SIGKILLs.
    #[arg(long, default_value_t = 200)]
    kills: usize,
    /// Users of the LFR graph the store starts from.
    #[arg(long, default_value_t = 2000)]
    users: usize,
    /// Where to write the JSON results (default: bench/results/crash-<date>.json).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Seed of the graph and the kill times.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Debug, Serialize)]
struct CrashBench {
    benchmark: &'static str,
    date: String,
    commit: Option<String>,
    machine: Machine,
    kills: usize,
    writes: &'static str,
    acknowledged_writes: u64,
    acknowledged_by_kind: std::collections::BTreeMap<String, u64>,
    /// Friendships, profiles and data blocks whose last acknowledged state was checked at
    /// the end (each restart also checks the writes of its round).
    items_checked_at_end: u64,
    relayouts_completed: u64,
    verify_failures: usize,
    lost_writes: usize,
    seconds: f64,
}

fn lfr_graph(nodes: usize, seed: u64) -> Result<Graph> {
    let config = kith_graph::generate::LfrConfig {
        nodes,
        seed,
        ..kith_graph::generate::LfrConfig::default()
    };
    Ok(kith_graph::generate::lfr(&config)?.graph)
}

/// Steps of the writer's first thread between relayouts (a step is a write or a skipped
/// one), few enough that relayouts complete between kills even on a slow disk.
const RELAYOUT_EVERY: u64 = 60;

fn run_writer_once(exe: &Path, dir: &Path, seed: u64, wait: Duration) -> Result<String> {
    let mut child = Command::new(exe)
        .args(["store", "crash-writer", "--dir"])
        .arg(dir)
        .args(["--threads", "4", "--relayout-every", &RELAYOUT_EVERY.to_string()])
        .args(["--seed", &seed.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start the crash writer")?;
    let stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        BufReader::new(stdout).lines().map_while(Result::ok).fold(String::new(), |mut s, l| {
            s.push_str(&l);
            s.push('\n');
            s
        })
    });
    let deadline = Instant::now() + wait;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait()? {
            bail!("the crash writer exited by itself: {status}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill()?; // SIGKILL
    child.wait()?;
    Ok(reader.join().unwrap_or_default())
}

pub(super) fn run(args: CrashArgs) -> Result<()> {
    let start = Instant::now();
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path().join("store");
    let graph = lfr_graph(args.users, args.seed)?;
    let layout =
        compute(&graph, &LayoutConfig { method: Method::Bfs, ..LayoutConfig::default() })?.layout;
    let options = BuildOptions { data: DataSpec::Fixed(100), ..BuildOptions::default() };
    drop(build(
        &dir,
        &graph,
        &layout,
        kith_store::LayoutMeta::of(&LayoutConfig::default()),
        &options,
    )?);
    let exe = std::env::current_exe()?;
    let mut rng = Pcg64Mcg::seed_from_u64(args.seed);
    let mut log = String::new();
    let (mut verify_failures, mut lost) = (0, 0);
    let bar = indicatif::ProgressBar::new(args.kills as u64);
    for kill in 0..args.kills {
        let wait = Duration::from_millis(rng.random_range(30..1200));
        let round = run_writer_once(&exe, &dir, kill as u64, wait)?;
        let store = Store::open(&dir, &OpenOptions::default())?;
        if !store.verify()?.ok() {
            verify_failures += 1;
        }
        // Each restart checks the writes acknowledged since the last one; the end checks all.
        let check = check_crash_log(&store, &round)?;
        lost += check.lost.len();
        if let Some(first) = check.lost.first() {
            bar.println(format!(
                "kill {kill}: {} acknowledged writes lost, e.g. {first}",
                check.lost.len()
            ));
        }
        log.push_str(&round);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let store = Store::open(&dir, &OpenOptions::default())?;
    let check = check_crash_log(&store, &log)?;
    lost += check.lost.len();
    let (relayouts, acknowledged) = (check.relayouts, check.acknowledged);
    let (by_kind, items) = (check.acknowledged_by_kind, check.items_checked);
    drop(store);
    let report = CrashBench {
        benchmark: "store-crash",
        date: utc_now(),
        commit: git_commit(),
        machine: Machine::describe(),
        kills: args.kills,
        writes: "4 threads: friendship adds and deletes, profile and data replacements, user \
                 puts (new and replaced); a random relayout every 60 steps of thread 0",
        acknowledged_writes: acknowledged,
        acknowledged_by_kind: by_kind,
        items_checked_at_end: items,
        relayouts_completed: relayouts,
        verify_failures,
        lost_writes: lost,
        seconds: start.elapsed().as_secs_f64(),
    };
    let out = args.out.unwrap_or_else(|| {
        PathBuf::from(format!("bench/results/crash-{}.json", &report.date[..10]))
    });
    write_json(&out, &report)?;
    crate::say!("wrote {}", out.display());
    crate::say!(
        "{} kills, {} acknowledged writes, {} relayouts: {} verify failures, {} lost writes",
        report.kills,
        report.acknowledged_writes,
        report.relayouts_completed,
        verify_failures,
        lost
    );
    if verify_failures > 0 || lost > 0 {
        bail!("the crash test failed");
    }
    Ok(())
}
