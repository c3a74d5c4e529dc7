//! Fault trials with the real engine on loopback, bounded in count and time: a stream of
//! mixed QUORUM writes (profiles and friendships) from several clients while nodes are
//! killed with SIGKILL, restarted and added; every acknowledged write is then checked.
//!
//! Each client owns its users (uid ≡ client mod clients), so the writes to one profile or one
//! friendship are totally ordered by their client. A key's final value must be its last
//! acknowledged write's or that of a later attempt (a failed write may or may not have been
//! applied); anything older is a **lost** acknowledged write. Both sides of a friendship must
//! agree (a logged batch is all or nothing).
//!
//! - `one_of_three`: kill -9 one node of three under load, restart it; wait until the others
//!   hold no hints for it; then kill the other two and read everything at ONE from the
//!   restarted node alone: it must hold every acknowledged write. Restart the two.
//! - `two_of_three`: kill two nodes under load: writes fail with `Unavailable` (503), none
//!   started after the kill is acknowledged; restart one: writes succeed again.
//! - `add_node`: bootstrap a fourth node under load; failed requests are counted; afterwards
//!   every acknowledged write reads back at QUORUM and the new node holds data.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kith_graph::Graph;
use kith_layout::Layout;
use kith_store::{Engine, Error as StoreError, LayoutMeta, Profile, ReadLevel};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::local::{ClusterConfig, LocalCluster};
use crate::schema::Level;
use crate::{BuildConfig, CassandraOptions, CassandraStore, build};

/// What the trials run on.
#[derive(Clone, Debug)]
pub struct TrialConfig {
    /// The trial cluster's directory (made and removed here).
    pub dir: PathBuf,
    /// The first node's address (the trial cluster is its own, apart from any other).
    pub base: Ipv4Addr,
    /// Each node's heap.
    pub heap_mb: u32,
    /// Users in the store.
    pub users: u32,
    /// Concurrent writing clients.
    pub clients: usize,
    /// Seconds of load before a fault, during it and after the recovery.
    pub phase: Duration,
    /// Times each trial runs.
    pub runs: usize,
    /// Print progress.
    pub progress: bool,
}

impl Default for TrialConfig {
    fn default() -> TrialConfig {
        TrialConfig {
            dir: std::env::temp_dir().join(format!("kith-trials-{}", std::process::id())),
            base: Ipv4Addr::new(127, 0, 5, 1),
            heap_mb: 512,
            users: 400,
            clients: 4,
            phase: Duration::from_secs(4),
            runs: 1,
            progress: false,
        }
    }
}

/// One run of one trial.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TrialRun {
    /// The trial's name.
    pub trial: &'static str,
    /// Writes attempted.
    pub attempted: u64,
    /// Writes acknowledged.
    pub acknowledged: u64,
    /// Writes that failed, by the store error's kind (`unavailable`, …).
    pub failed: BTreeMap<String, u64>,
    /// The first few failures' messages, as clients saw them.
    pub failure_samples: Vec<String>,
    /// Acknowledged writes not found afterwards at QUORUM with every node up (goal 0).
    pub lost: u64,
    /// `one_of_three`: acknowledged writes the restarted node did not hold on its own once the
    /// others' hints for it were delivered (goal 0).
    pub lost_on_restarted_node: u64,
    /// Friendships whose two sides disagree afterwards (goal 0).
    pub torn: u64,
    /// Writes acknowledged that were started after the fault made a quorum impossible
    /// (`two_of_three`; goal 0).
    pub false_acknowledgements: u64,
    /// Seconds from the first to the last failed write (0 with none).
    pub failure_window_s: f64,
    /// Seconds until the trial's recovery: the restarted node holds every write
    /// (`one_of_three`), writes succeed again (`two_of_three`), the new node has joined
    /// (`add_node`).
    pub recovery_s: f64,
    /// Data bytes on the added node after it joined (`add_node`).
    pub added_node_bytes: u64,
    /// Users read while two of three nodes were down (`two_of_three`), at each level.
    pub reads_while_down: u64,
    /// Of those, the reads at `ReadLevel::One` that answered (goal: all: the survivor holds
    /// every user).
    pub one_reads_answered: u64,
    /// Of those, the reads at `ReadLevel::Strong` that answered (goal 0: no quorum).
    pub strong_reads_answered: u64,
}

/// What a client key holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Profile(u64),
    Pair(u64, u64),
}

#[derive(Clone, Debug)]
struct Attempt {
    key: Key,
    /// The profile's sequence number, or whether the friendship exists after it.
    value: u64,
    acked: bool,
    started: Instant,
    failed: Option<&'static str>,
    message: Option<String>,
}

/// Clients writing until stopped.
struct Load {
    stop: Arc<AtomicBool>,
    clients: Vec<JoinHandle<Vec<Attempt>>>,
}

fn kind(e: &StoreError) -> &'static str {
    match e {
        StoreError::Unavailable(_) => "unavailable",
        StoreError::Backend { .. } => "backend",
        StoreError::UnknownUser(_) => "unknown_user",
        _ => "other",
    }
}

impl Load {
    fn start(store: &Arc<CassandraStore>, uids: &[u64], clients: usize) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let clients = (0..clients)
            .map(|c| {
                let (store, stop) = (store.clone(), stop.clone());
                let mine: Vec<u64> =
                    uids.iter().copied().filter(|u| (*u as usize) % clients == c).collect();
                std::thread::spawn(move || {
                    let mut rng = Pcg64Mcg::seed_from_u64(c as u64 + 77);
                    let mut log = Vec::new();
                    let mut seq = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        seq += 1;
                        let started = Instant::now();
                        let (key, value, result) = if rng.random_bool(0.5) {
                            let u = mine[rng.random_range(0..mine.len())];
                            let p = Profile { name: format!("v{seq}"), ..Profile::default() };
                            (Key::Profile(u), seq, store.put_profile(u, &p))
                        } else {
                            let a = mine[rng.random_range(0..mine.len())];
                            let b = mine[rng.random_range(0..mine.len())];
                            if a == b {
                                continue;
                            }
                            let add = rng.random_bool(0.5);
                            let r = if add {
                                store.add_friend(a, b)
                            } else {
                                store.delete_friend(a, b)
                            };
                            (Key::Pair(a.min(b), a.max(b)), u64::from(add), r.map(|_| ()))
                        };
                        let failed = result.as_ref().err().map(kind);
                        let message = result.as_ref().err().map(ToString::to_string);
                        if failed.is_some() {
                            // A client backs off a little after a failure.
                            std::thread::sleep(Duration::from_millis(20));
                        }
                        log.push(Attempt {
                            key,
                            value,
                            acked: result.is_ok(),
                            started,
                            failed,
                            message,
                        });
                    }
                    log
                })
            })
            .collect();
        Load { stop, clients }
    }

    fn stop(self) -> Vec<Attempt> {
        self.stop.store(true, Ordering::Relaxed);
        self.clients.into_iter().flat_map(|c| c.join().expect("a load client panicked")).collect()
    }
}

/// Counts attempts and failures into a run.
fn tally(run: &mut TrialRun, attempts: &[Attempt]) {
    run.attempted = attempts.len() as u64;
    run.acknowledged = attempts.iter().filter(|a| a.acked).count() as u64;
    let mut first: Option<Instant> = None;
    let mut last: Option<Instant> = None;
    for a in attempts {
        if let Some(k) = a.failed {
            *run.failed.entry(k.to_string()).or_default() += 1;
            if run.failure_samples.len() < 5 {
                run.failure_samples.extend(a.message.clone());
            }
            first = Some(first.map_or(a.started, |f| f.min(a.started)));
            last = Some(last.map_or(a.started, |l| l.max(a.started)));
        }
    }
    run.failure_window_s = match (first, last) {
        (Some(f), Some(l)) => l.duration_since(f).as_secs_f64(),
        _ => 0.0,
    };
}

/// Checks every key against what `store` reads: (lost, torn).
fn check(store: &CassandraStore, attempts: &[Attempt]) -> Result<(u64, u64)> {
    let mut by_key: BTreeMap<Key, Vec<&Attempt>> = BTreeMap::new();
    for a in attempts {
        by_key.entry(a.key).or_default().push(a);
    }
    // Attempts of one key come from one client, in its order; `started` keeps it across the
    // clients' logs being concatenated.
    for list in by_key.values_mut() {
        list.sort_by_key(|a| a.started);
    }
    let mut friends: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    let mut friends_of = |u: u64| -> Result<Vec<u64>> {
        if let Some(f) = friends.get(&u) {
            return Ok(f.clone());
        }
        let f = store.get_all_friends(u)?;
        friends.insert(u, f.clone());
        Ok(f)
    };
    let (mut lost, mut torn) = (0, 0);
    for (key, list) in &by_key {
        let Some(last_acked) = list.iter().rposition(|a| a.acked) else { continue };
        let acceptable: Vec<u64> = list[last_acked..].iter().map(|a| a.value).collect();
        let observed = match *key {
            Key::Profile(u) => {
                let name = store.get_profile(u)?.name;
                name.strip_prefix('v').and_then(|s| s.parse().ok()).unwrap_or(0)
            }
            Key::Pair(a, b) => {
                let ab = friends_of(a)?.binary_search(&b).is_ok();
                let ba = friends_of(b)?.binary_search(&a).is_ok();
                if ab != ba {
                    torn += 1;
                }
                u64::from(ab)
            }
        };
        if !acceptable.contains(&observed) {
            lost += 1;
        }
    }
    Ok((lost, torn))
}

/// Runs the trials `runs` times each on a cluster of their own, and stops it.
pub fn run(config: &TrialConfig) -> Result<Vec<TrialRun>> {
    let _ = std::fs::remove_dir_all(&config.dir);
    let cluster = LocalCluster::up(&ClusterConfig {
        nodes: 3,
        dir: config.dir.clone(),
        base: config.base,
        heap_mb: config.heap_mb,
        progress: config.progress,
        ..ClusterConfig::default()
    })?;
    let mut guard = Stopper(Some(cluster));
    let result = trials(guard.0.as_mut().expect("cluster"), config);
    drop(guard);
    let _ = std::fs::remove_dir_all(&config.dir);
    result
}

/// Stops the trial cluster however the trials end.
struct Stopper(Option<LocalCluster>);

impl Drop for Stopper {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.down(Duration::from_secs(5));
        }
    }
}

fn say(config: &TrialConfig, what: String) {
    if config.progress {
        eprintln!("trials: {what}");
    }
}

fn trials(cluster: &mut LocalCluster, config: &TrialConfig) -> Result<Vec<TrialRun>> {
    let mut rng = Pcg64Mcg::seed_from_u64(9);
    let n = config.users;
    let edges = (0..n * 4).map(|_| (rng.random_range(0..n), rng.random_range(0..n))).collect();
    let graph = Graph::from_edges((0..u64::from(n)).collect(), false, edges);
    let uids: Vec<u64> = graph.original_ids().to_vec();
    let mut out = Vec::new();
    for r in 0..config.runs {
        for trial in ["one_of_three", "two_of_three"] {
            let (options, store) = fresh_store(cluster, &format!("trial_{trial}_{r}"), &graph)?;
            say(config, format!("run {r}: {trial}"));
            let run = match trial {
                "one_of_three" => one_of_three(cluster, config, &store, &uids, &options)?,
                _ => two_of_three(cluster, config, &store, &uids)?,
            };
            say(config, format!("{run:?}"));
            out.push(run);
        }
    }
    // Growing the cluster is done once: it leaves four nodes behind.
    let (_, store) = fresh_store(cluster, "trial_add_node", &graph)?;
    say(config, "add_node".into());
    let run = add_node(cluster, config, &store, &uids)?;
    say(config, format!("{run:?}"));
    out.push(run);
    Ok(out)
}

/// A store of `graph` in a new keyspace of the trial cluster.
fn fresh_store(
    cluster: &LocalCluster,
    keyspace: &str,
    graph: &Graph,
) -> Result<(CassandraOptions, Arc<CassandraStore>)> {
    let options = CassandraOptions::new(cluster.hosts(), keyspace);
    let layout = Layout::identity(graph.num_nodes());
    let config = BuildConfig { partition_users: 16, friend_copies: 1, ..BuildConfig::default() };
    let (store, _) = build(&options, graph, &layout, LayoutMeta::default(), &config)?;
    Ok((options, Arc::new(store)))
}

fn one_of_three(
    cluster: &mut LocalCluster,
    config: &TrialConfig,
    store: &Arc<CassandraStore>,
    uids: &[u64],
    options: &CassandraOptions,
) -> Result<TrialRun> {
    let mut run = TrialRun { trial: "one_of_three", ..TrialRun::default() };
    let load = Load::start(store, uids, config.clients);
    std::thread::sleep(config.phase);
    cluster.kill(3)?;
    std::thread::sleep(config.phase * 2);
    let t = Instant::now();
    cluster.restart(3)?;
    std::thread::sleep(config.phase);
    let attempts = load.stop();
    tally(&mut run, &attempts);
    // The others' hints for node 3 delivered: then it holds every write on its own. Hints sit
    // in memory until flushed to a file (every 2 s, `hints_flush_period`): wait past a flush,
    // then until neither holds a hint file (see `wait_no_hints`).
    std::thread::sleep(Duration::from_secs(3));
    for node in [1, 2] {
        wait_no_hints(cluster, node, Duration::from_secs(120))?;
    }
    run.recovery_s = t.elapsed().as_secs_f64();
    cluster.kill(1)?;
    cluster.kill(2)?;
    cluster.wait_seen_down(3, &[1, 2], Duration::from_secs(60))?;
    let alone = CassandraOptions {
        hosts: vec![cluster.nodes[2].cql().to_string()],
        level: Level::OneNamedHostsOnly,
        ..options.clone()
    };
    let node3 = CassandraStore::open(&alone)?;
    let (lost, torn) = check(&node3, &attempts)?;
    drop(node3);
    (run.lost_on_restarted_node, run.torn) = (lost, torn);
    cluster.restart(1)?;
    cluster.restart(2)?;
    // And at QUORUM, with every node back.
    let (lost, torn) = check(store, &attempts)?;
    run.lost = lost;
    run.torn += torn;
    Ok(run)
}

fn two_of_three(
    cluster: &mut LocalCluster,
    config: &TrialConfig,
    store: &Arc<CassandraStore>,
    uids: &[u64],
) -> Result<TrialRun> {
    let mut run = TrialRun { trial: "two_of_three", ..TrialRun::default() };
    let load = Load::start(store, uids, config.clients);
    std::thread::sleep(config.phase);
    cluster.kill(2)?;
    cluster.kill(3)?;
    let down = Instant::now();
    std::thread::sleep(config.phase * 2);
    // Reads with a quorum gone: the survivor answers ONE, nobody answers QUORUM.
    let sample = &uids[1..uids.len().min(6)];
    let answered = |level| sample.iter().filter(|&&u| store.get_user_at(u, level).is_ok()).count();
    run.reads_while_down = sample.len() as u64;
    run.one_reads_answered = answered(ReadLevel::One) as u64;
    run.strong_reads_answered = answered(ReadLevel::Strong) as u64;
    let t = Instant::now();
    cluster.restart(2)?;
    // Writes succeed again once the restarted node is back in the others' view.
    let probe = uids[0];
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if store.put_profile(probe, &Profile { name: "probe".into(), ..Profile::default() }).is_ok()
        {
            break;
        }
        if Instant::now() > deadline {
            return Err(Error::Cluster(
                "writes did not resume within 120 s of a node's restart".into(),
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    run.recovery_s = t.elapsed().as_secs_f64();
    std::thread::sleep(config.phase);
    let attempts = load.stop();
    tally(&mut run, &attempts);
    run.false_acknowledgements =
        attempts.iter().filter(|a| a.acked && a.started > down && a.started < t).count() as u64;
    // The probe's own writes are not in the log: leave its profile out of the check.
    let attempts: Vec<Attempt> =
        attempts.into_iter().filter(|a| a.key != Key::Profile(probe)).collect();
    cluster.restart(3)?;
    let (lost, torn) = check(store, &attempts)?;
    (run.lost, run.torn) = (lost, torn);
    Ok(run)
}

fn add_node(
    cluster: &mut LocalCluster,
    config: &TrialConfig,
    store: &Arc<CassandraStore>,
    uids: &[u64],
) -> Result<TrialRun> {
    let mut run = TrialRun { trial: "add_node", ..TrialRun::default() };
    let load = Load::start(store, uids, config.clients);
    std::thread::sleep(config.phase);
    let t = Instant::now();
    let index = cluster.add_node()?;
    run.recovery_s = t.elapsed().as_secs_f64();
    std::thread::sleep(config.phase);
    let attempts = load.stop();
    tally(&mut run, &attempts);
    let (lost, torn) = check(store, &attempts)?;
    (run.lost, run.torn) = (lost, torn);
    cluster.nodetool(index, &["flush"])?;
    run.added_node_bytes =
        cluster.status().iter().find(|s| s.index == index).map_or(0, |s| s.data_bytes);
    Ok(run)
}

/// Waits until node `index` holds no hints for any other node.
///
/// `nodetool listpendinghints` alone is not enough: it lists only the files queued for
/// dispatch, not the file still open for writing (closed by the dispatch trigger every 10 s)
/// nor one being dispatched at that moment. A hint file is deleted only once every hint in it
/// was delivered, so the node's hints directory is the proof: empty, and still empty after a
/// flush period (hints buffered in memory reach a file within `hints_flush_period`, 2 s).
fn wait_no_hints(cluster: &LocalCluster, index: usize, timeout: Duration) -> Result<()> {
    let dir = cluster
        .nodes
        .iter()
        .find(|n| n.index == index)
        .map(|n| n.dir.join("hints"))
        .ok_or_else(|| Error::Cluster(format!("no node {index}")))?;
    let hint_files = || -> Result<Vec<String>> {
        let mut files = Vec::new();
        let context = || format!("listing {}", dir.display());
        for entry in std::fs::read_dir(&dir).map_err(Error::io(context()))? {
            let name = entry.map_err(Error::io(context()))?.file_name();
            let name = name.to_string_lossy();
            if name.ends_with(".hints") {
                files.push(name.into_owned());
            }
        }
        Ok(files)
    };
    let deadline = Instant::now() + timeout;
    let mut empty_since: Option<Instant> = None;
    loop {
        let files = hint_files()?;
        let listed = cluster.nodetool(index, &["listpendinghints"])?;
        if files.is_empty() && listed.contains("does not have any pending hints") {
            let since = *empty_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= Duration::from_millis(2500) {
                return Ok(());
            }
        } else {
            empty_since = None;
        }
        if Instant::now() > deadline {
            return Err(Error::Cluster(format!(
                "node {index} still holds hints after {timeout:?}: files {files:?}; {listed}"
            )));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}
