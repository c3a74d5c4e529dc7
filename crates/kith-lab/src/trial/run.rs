//! One run of a trial: three servers over the rig, the state before, the load with its
//! nemesis, every fault healed, the quiet state, and the checker's verdict, with the
//! operations counted by kind and outcome and the service's recovery after each fault.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use kith_store::Engine;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};

use super::check::{self, Anomalies, Bounds};
use super::history::{self, Call, Entry, Op, Outcome};
use super::nemesis::{self, Fault, Nemesis, Servers};
use super::quiet;
use super::recovery::{self, Recovery};
use super::workload::{self, Plan, Shared};
use crate::rig::Rig;

/// How a trial runs.
#[derive(Clone, Debug)]
pub struct TrialConfig {
    pub load: Duration,
    pub clients: usize,
    pub hot: usize,
    pub feeds: Vec<String>,
    pub caches: Vec<String>,
    pub timeout: Duration,
    /// A client's wait on one server before it sends a read or keyed write to another.
    pub patience: Duration,
    pub settle: Duration,
    pub seed: u64,
    pub history_dir: Option<PathBuf>,
    /// Recorded with each run.
    pub commit: Option<String>,
}

/// The clusters, the loaded store, and the users the load touches.
pub struct Stage {
    pub(super) rig: Rig,
    pub(super) keyspace: String,
    pub(super) engine: Arc<dyn Engine>,
    pub(super) playground: Vec<u64>,
}

impl std::fmt::Debug for Stage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stage")
            .field("keyspace", &self.keyspace)
            .field("playground", &self.playground)
            .finish()
    }
}

/// Operations of one kind, by outcome (logical operations: attempts of one write folded).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Counts {
    pub invoked: u64,
    pub ok: u64,
    pub failed: u64,
    pub unknown: u64,
    /// Attempts, retries included.
    pub attempts: u64,
}

/// One run's record.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunReport {
    pub nemesis: Nemesis,
    pub run: usize,
    pub feed: String,
    pub cache: String,
    pub load_s: f64,
    pub ops: BTreeMap<String, Counts>,
    /// Logical writes whose outcome stayed unknown, over all logical writes.
    pub unknown_share: f64,
    pub anomalies: Anomalies,
    pub faults: Vec<Recovery>,
    /// Seconds after the settle until no server had background work left (fan-out,
    /// write-back); `None` when some was left after [`BACKGROUND_LIMIT`].
    #[serde(default)]
    pub background_s: Option<f64>,
    /// Where the history was written (JSON lines), if kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history: Option<String>,
    /// The commit the invocation that made this run was started on (runs a `--resume`
    /// kept may come from other builds).
    #[serde(default)]
    pub commit: Option<String>,
}

/// The longest the quiet reads wait for the servers' background work after the settle.
pub const BACKGROUND_LIMIT: Duration = Duration::from_secs(30);

/// Runs one trial run on `stage`.
pub fn one(
    config: &TrialConfig,
    stage: &mut Stage,
    nemesis: Nemesis,
    run: usize,
) -> Result<RunReport> {
    // Strategies and caches in turn over the nemeses and their runs, so that even one run
    // of each nemesis covers every feed strategy and both caches.
    let turn = run + nemesis as usize;
    let feed = config.feeds[turn % config.feeds.len()].clone();
    let cache = config.caches[(turn / config.feeds.len()) % config.caches.len()].clone();
    let tag = format!("t{}{}r{run}", config.seed, nemesis.code());
    let mut args: Vec<String> =
        vec!["--feed".into(), feed.clone(), "--cache".into(), cache.clone()];
    // A low threshold, so hybrid feeds pull some hot authors and push the rest.
    args.extend(["--celebrity-threshold".into(), "4".into()]);
    let mut servers = start_servers(stage, &format!("{}_{tag}", stage.keyspace), &args)?;
    let plan = Arc::new(Plan {
        users: stage.playground.clone(),
        hot: config.hot,
        tag: tag.clone(),
        clients: config.clients,
        duration: config.load,
        timeout: config.timeout,
        patience: config.patience,
        seed: config.seed * 1000 + run as u64 * 10 + nemesis as u64,
    });
    // Each run starts from profiles of its own, written with every replica up: a replica
    // that missed writes in the last run's faults (their hints not yet replayed) would
    // otherwise answer an eventual read with a value from before the run.
    let engine = stage.engine.clone();
    for &u in &stage.playground {
        let mut profile = engine.get_profile(u).with_context(|| format!("profile of {u}"))?;
        profile.name = format!("i{tag}-{u}");
        engine.put_profile(u, &profile).with_context(|| format!("profile of {u}"))?;
    }
    let initial = quiet::users(engine.as_ref(), &stage.playground, &BTreeSet::new())?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let start = tokio::time::Instant::now();
    let shared = Arc::new(Shared::new(servers.addrs.clone(), start));
    let load = runtime.spawn(workload::drive(plan.clone(), shared.clone()));
    let mut rng = Pcg64Mcg::seed_from_u64(plan.seed ^ 0x5eed);
    let faults = nemesis::run(
        nemesis,
        &mut stage.rig,
        &mut servers,
        &mut rng,
        start.into_std(),
        config.load,
    );
    if nemesis::interrupted() {
        load.abort();
        let _ = runtime.block_on(load);
        heal_all(stage, &mut servers)?;
        faults?;
        bail!("interrupted: every fault healed; this run is not kept");
    }
    runtime.block_on(load).context("the load")??;
    // Heal anything a failed schedule left broken, then let the system settle.
    heal_all(stage, &mut servers)?;
    let faults = faults?;
    let killed_kith = faults.iter().any(|f| f.nemesis == Nemesis::KillKith);
    std::thread::sleep(if killed_kith { config.settle * 3 } else { config.settle });
    // Quiet means the servers' background work is done too: a fan-out or a write-back
    // flush retried after the faults must land before timelines are judged.
    let background_s = runtime.block_on(quiet::background_done(&servers.addrs, BACKGROUND_LIMIT));
    let entries = std::mem::take(&mut *shared.history.lock().expect("not poisoned"));
    let ops = history::fold(&entries);
    let mut also: BTreeSet<u64> = initial.friends.values().flatten().copied().collect();
    also.extend(ops.iter().flat_map(|o| users_of(&o.call)));
    let mut quiet_state = quiet::users(engine.as_ref(), &stage.playground, &also)?;
    quiet::posts(engine.as_ref(), &ops, &mut quiet_state)?;
    quiet::pulls(engine.as_ref(), &stage.playground, &mut quiet_state)?;
    runtime.block_on(quiet::feeds(&servers.addrs, &stage.playground, &mut quiet_state))?;
    let bounds = Bounds { outages_ms: replica_outages(&faults), ..Bounds::default() };
    let anomalies = check::check(&ops, &initial, &quiet_state, &bounds);
    let history = match &config.history_dir {
        Some(dir) => Some(write_history(dir, &tag, &entries)?),
        None => None,
    };
    drop(servers);
    let (ops_by_kind, unknown_share) = count(&entries, &ops);
    let load_s = config.load.as_secs_f64();
    let faults = recovery::all(faults, &ops, load_s);
    Ok(RunReport {
        nemesis,
        run,
        feed,
        cache,
        load_s: config.load.as_secs_f64(),
        ops: ops_by_kind,
        unknown_share,
        anomalies,
        faults,
        background_s,
        history,
        commit: config.commit.clone(),
    })
}

fn start_servers(stage: &Stage, prefix: &str, args: &[String]) -> Result<Servers> {
    let mut servers = Servers {
        procs: Vec::new(),
        addrs: Vec::new(),
        keyspace: stage.keyspace.clone(),
        prefix: prefix.to_string(),
        args: args.to_vec(),
    };
    // One after another: three servers started at once contend for the same server
    // numbers' lightweight transactions, and one such claim timed out (a node just
    // restarted), so its server did not start.
    for i in 0..3 {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let addr = format!("127.0.0.1:{port}");
        servers.procs.push(Some(stage.rig.server_at(
            &stage.keyspace,
            i + 1,
            prefix,
            args,
            &addr,
        )?));
        servers.addrs.push(format!("http://{addr}"));
    }
    Ok(servers)
}

/// Restarts whatever is down: kith servers, Cassandra nodes, Redis nodes; resumes anything
/// stopped.
fn heal_all(stage: &mut Stage, servers: &mut Servers) -> Result<()> {
    for i in 0..servers.procs.len() {
        if servers.procs[i].is_none() {
            nemesis::restart_kith(&stage.rig, servers, i)?;
        }
    }
    let down: Vec<usize> =
        stage.rig.cassandra.nodes.iter().filter(|n| !n.alive()).map(|n| n.index).collect();
    for n in down {
        stage.rig.cassandra.restart(n)?;
    }
    let down: Vec<usize> =
        stage.rig.redis.nodes.iter().filter(|n| !n.alive()).map(|n| n.index).collect();
    for n in down {
        stage.rig.redis.restart(n, Duration::from_secs(60))?;
    }
    Ok(())
}

fn users_of(call: &Call) -> Vec<u64> {
    match call {
        Call::AddFriend { u, v } | Call::DeleteFriend { u, v } => vec![*u, *v],
        Call::PutUser { uid, friends, .. } => {
            std::iter::once(*uid).chain(friends.iter().copied()).collect()
        }
        _ => Vec::new(),
    }
}

fn write_history(dir: &std::path::Path, tag: &str, entries: &[Entry]) -> Result<String> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!("{tag}.jsonl"));
    kith_graph::durable::write_atomic(&kith_graph::durable::StdFs, &path, |w| {
        for e in entries {
            serde_json::to_writer(&mut *w, e)?;
            w.write_all(b"\n")?;
        }
        Ok(())
    })
    .with_context(|| format!("{}: cannot write", path.display()))?;
    Ok(path.display().to_string())
}

/// Operations by kind and outcome, and the share of logical writes left unknown.
fn count(entries: &[Entry], ops: &[Op]) -> (BTreeMap<String, Counts>, f64) {
    let mut by: BTreeMap<String, Counts> = BTreeMap::new();
    for e in entries {
        by.entry(e.call.name().to_string()).or_default().attempts += 1;
    }
    let (mut writes, mut unknown) = (0u64, 0u64);
    for o in ops {
        let c = by.entry(o.call.name().to_string()).or_default();
        c.invoked += 1;
        match o.outcome {
            Outcome::Ok => c.ok += 1,
            Outcome::Fail => c.failed += 1,
            Outcome::Unknown => c.unknown += 1,
        }
        if o.call.is_write() {
            writes += 1;
            unknown += u64::from(o.outcome == Outcome::Unknown);
        }
    }
    (by, if writes == 0 { 0.0 } else { unknown as f64 / writes as f64 })
}

/// The Cassandra nodes' outages among `faults` (ms): those after which a replica may lack
/// writes acknowledged meanwhile (not a clock skew).
fn replica_outages(faults: &[Fault]) -> Vec<(f64, f64)> {
    use Nemesis::*;
    faults
        .iter()
        .filter(|f| {
            matches!(
                f.nemesis,
                KillCassandra
                    | PauseCassandra
                    | FullDiskCassandra
                    | PartitionCassandra
                    | IsolateCassandra
            )
        })
        .map(|f| (f.at_s * 1e3, f.healed_s * 1e3))
        .collect()
}
