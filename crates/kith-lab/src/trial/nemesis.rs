//! The faults a trial makes during its load, at random times, each bounded in time: kill -9
//! and restart, and pause (SIGSTOP) and resume (SIGCONT), of a kith server, a Cassandra
//! node or a Redis node; and a kith server's or a Cassandra node's wall clock set seconds
//! ahead or behind, then stepped the other way (libfaketime clock files); and a Cassandra
//! node's disk (a tmpfs of its own) filled to the last byte, then emptied, the node
//! restarted if it stopped serving, as an operator would; and a Cassandra node's network
//! links (it runs in a network namespace of its own) to the other nodes cut, or to them and
//! to the clients, then mended. A schedule holds
//! one fault at a time, with a quiet gap between; everything is healed before the run's
//! quiet reads.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::processes::ChildProcess;
use crate::rig::Rig;

/// A kind of fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Nemesis {
    /// No fault: the baseline.
    None,
    KillKith,
    KillCassandra,
    KillRedis,
    PauseKith,
    PauseCassandra,
    PauseRedis,
    /// A kith server's clock 2–30 s ahead or behind, stepped to the other side halfway.
    SkewKith,
    /// A Cassandra node's clock, likewise.
    SkewCassandra,
    /// A Cassandra node's disk full for 4–20 s.
    FullDiskCassandra,
    /// A Cassandra node cut from the other nodes for 4–20 s; the clients reach every node.
    PartitionCassandra,
    /// A Cassandra node cut from the other nodes and from the clients for 4–20 s.
    IsolateCassandra,
    /// Each fault of a schedule one of the above, at random.
    Mix,
}

/// Every nemesis, in the order the trials run them.
pub const ALL: [Nemesis; 13] = [
    Nemesis::None,
    Nemesis::KillKith,
    Nemesis::KillCassandra,
    Nemesis::KillRedis,
    Nemesis::PauseKith,
    Nemesis::PauseCassandra,
    Nemesis::PauseRedis,
    Nemesis::SkewKith,
    Nemesis::SkewCassandra,
    Nemesis::FullDiskCassandra,
    Nemesis::PartitionCassandra,
    Nemesis::IsolateCassandra,
    Nemesis::Mix,
];

impl Nemesis {
    pub fn name(self) -> &'static str {
        match self {
            Nemesis::None => "none",
            Nemesis::KillKith => "kill-kith",
            Nemesis::KillCassandra => "kill-cassandra",
            Nemesis::KillRedis => "kill-redis",
            Nemesis::PauseKith => "pause-kith",
            Nemesis::PauseCassandra => "pause-cassandra",
            Nemesis::PauseRedis => "pause-redis",
            Nemesis::SkewKith => "skew-kith",
            Nemesis::SkewCassandra => "skew-cassandra",
            Nemesis::FullDiskCassandra => "full-disk-cassandra",
            Nemesis::PartitionCassandra => "partition-cassandra",
            Nemesis::IsolateCassandra => "isolate-cassandra",
            Nemesis::Mix => "mix",
        }
    }
}

impl Nemesis {
    /// A short code of its own, in its runs' tags: the tag is in every key, post content and
    /// Redis key of a run, so two nemeses sharing a code would make their runs on one store
    /// read each other's writes (`pause-cassandra` and `partition-cassandra` once did).
    pub fn code(self) -> &'static str {
        match self {
            Nemesis::None => "n",
            Nemesis::KillKith => "kk",
            Nemesis::KillCassandra => "kc",
            Nemesis::KillRedis => "kr",
            Nemesis::PauseKith => "pk",
            Nemesis::PauseCassandra => "pc",
            Nemesis::PauseRedis => "pr",
            Nemesis::SkewKith => "sk",
            Nemesis::SkewCassandra => "sc",
            Nemesis::FullDiskCassandra => "fdc",
            Nemesis::PartitionCassandra => "xc",
            Nemesis::IsolateCassandra => "ic",
            Nemesis::Mix => "m",
        }
    }
}

impl std::str::FromStr for Nemesis {
    type Err = String;
    fn from_str(s: &str) -> Result<Nemesis, String> {
        ALL.iter().copied().find(|n| n.name() == s).ok_or_else(|| {
            let names: Vec<&str> = ALL.iter().map(|n| n.name()).collect();
            format!("unknown nemesis {s:?}: expected one of {}", names.join(", "))
        })
    }
}

/// Why `rig`'s Cassandra cluster cannot take `kind`'s faults, if it cannot.
pub fn unsupported(kind: Nemesis, rig: &Rig) -> Option<String> {
    let c = &rig.cassandra;
    let flag = match kind {
        Nemesis::SkewCassandra if !c.skewable => "--skewable",
        Nemesis::FullDiskCassandra if c.disk_mb.is_none() => "--disk-mb",
        Nemesis::PartitionCassandra | Nemesis::IsolateCassandra if !c.netns => "--netns",
        _ => return None,
    };
    Some(format!(
        "nemesis {}: the Cassandra cluster in {} was not started with `kith cluster up {flag}`",
        kind.name(),
        c.dir.display()
    ))
}

/// A fault as it happened (seconds from the start of the load).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Fault {
    pub nemesis: Nemesis,
    pub what: String,
    pub at_s: f64,
    /// When healing began (the process restarted or resumed, the clock set right, the disk
    /// emptied, the links mended); `None` in reports from before it was recorded.
    #[serde(default)]
    pub heal_began_s: Option<f64>,
    /// When it was healed (the process resumed or running again).
    pub healed_s: f64,
}

/// The servers of a run, restartable on their addresses.
pub struct Servers {
    pub procs: Vec<Option<ChildProcess>>,
    pub addrs: Vec<String>,
    pub keyspace: String,
    pub prefix: String,
    pub args: Vec<String>,
}

/// What is broken right now, to heal.
enum Broken {
    Killed(Target),
    /// Stopped with SIGSTOP: the process id to resume.
    Paused(u32),
    /// Its clock set off: to set right again.
    Skewed(Target),
    /// Cassandra node n's disk filled: to empty (and the node to restart if it stopped).
    Filled(usize),
    /// Network links cut: to mend.
    Cut,
}

#[derive(Clone, Copy, Debug)]
enum Target {
    Kith(usize),
    Cassandra(usize),
    Redis(usize),
}

/// Runs `nemesis` faults from `start` until `end` (from the start), one at a time with a
/// gap of 2–5 s before each (and a tenth of the load, at most 8 s, more before the first),
/// each held 1–20 s for pauses, 4–20 s for skews and 3–10 s for kills (less when the load
/// ends sooner, so that each fault is healed a second before it ends). A skewed clock is
/// stepped to the other side of the true time halfway through.
pub fn run(
    nemesis: Nemesis,
    rig: &mut Rig,
    servers: &mut Servers,
    rng: &mut impl Rng,
    start: Instant,
    end: Duration,
) -> Result<Vec<Fault>> {
    let mut faults = Vec::new();
    if nemesis == Nemesis::None {
        nap(end.saturating_sub(start.elapsed()));
        return Ok(faults);
    }
    // The first fault waits a tenth of the load more (at most 8 s), so that the rate it is
    // measured against is the steady one and not only the first seconds' ramp-up.
    let mut gap_extra = (end / 10).min(Duration::from_secs(8));
    loop {
        let gap = Duration::from_millis(rng.random_range(2_000..5_000)) + gap_extra;
        gap_extra = Duration::ZERO;
        let kind = match nemesis {
            Nemesis::Mix => {
                let kinds: Vec<Nemesis> = ALL[1..ALL.len() - 1]
                    .iter()
                    .copied()
                    .filter(|&k| unsupported(k, rig).is_none())
                    .collect();
                kinds[rng.random_range(0..kinds.len())]
            }
            n => n,
        };
        let hold = match kind {
            Nemesis::PauseKith | Nemesis::PauseCassandra | Nemesis::PauseRedis => {
                Duration::from_millis(rng.random_range(1_000..20_000))
            }
            Nemesis::SkewKith
            | Nemesis::SkewCassandra
            | Nemesis::FullDiskCassandra
            | Nemesis::PartitionCassandra
            | Nemesis::IsolateCassandra => Duration::from_millis(rng.random_range(4_000..20_000)),
            _ => Duration::from_millis(rng.random_range(3_000..10_000)),
        };
        // Cut to what is left of the load (a short run still gets its fault), at least 1 s.
        let left = end.saturating_sub(start.elapsed() + gap + Duration::from_secs(1));
        if left < Duration::from_secs(1) {
            break;
        }
        let hold = hold.min(left);
        if nap(gap) {
            break;
        }
        let at_s = start.elapsed().as_secs_f64();
        let (broken, mut what) = inflict(kind, rig, servers, rng)?;
        eprintln!("trial: {at_s:>6.1} s  {what}");
        if let Broken::Skewed(target) = broken {
            if !nap(hold / 2) {
                let step = skew(target, rig, servers, rng, true)?;
                eprintln!("trial: {:>6.1} s  stepped to {step:+} s", start.elapsed().as_secs_f64());
                what = format!("{what}, then {step:+} s");
                nap(hold - hold / 2);
            }
        } else {
            nap(hold);
        }
        let heal_began_s = Some(start.elapsed().as_secs_f64());
        heal(broken, rig, servers)?;
        let healed_s = start.elapsed().as_secs_f64();
        eprintln!("trial: {healed_s:>6.1} s  healed");
        faults.push(Fault { nemesis: kind, what, at_s, heal_began_s, healed_s });
        if interrupted() {
            break;
        }
    }
    nap(end.saturating_sub(start.elapsed()));
    Ok(faults)
}

/// Set by SIGINT or SIGTERM once [`heal_on_interrupt`] ran.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// From now on SIGINT and SIGTERM end the current fault at once, healed, and the trial
/// stops after it ([`interrupted`]), instead of leaving a node cut off, paused, skewed or
/// with its disk full.
pub fn heal_on_interrupt() {
    // SAFETY: `on_signal` only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
}

/// Whether the trial was asked to stop.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Sleeps for `d`, or until the trial is asked to stop; whether it was.
fn nap(d: Duration) -> bool {
    let end = Instant::now() + d;
    while !interrupted() {
        let now = Instant::now();
        if now >= end {
            return false;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(100)));
    }
    true
}

fn inflict(
    kind: Nemesis,
    rig: &mut Rig,
    servers: &mut Servers,
    rng: &mut impl Rng,
) -> Result<(Broken, String)> {
    let kith = rng.random_range(0..servers.procs.len());
    let cass = rng.random_range(1..=rig.cassandra.nodes.len());
    Ok(match kind {
        Nemesis::KillKith => {
            if let Some(p) = servers.procs[kith].take() {
                p.kill9();
            }
            (Broken::Killed(Target::Kith(kith)), format!("killed kith server {}", kith + 1))
        }
        Nemesis::KillCassandra => {
            rig.cassandra.kill(cass)?;
            (Broken::Killed(Target::Cassandra(cass)), format!("killed cassandra node {cass}"))
        }
        Nemesis::KillRedis => {
            let masters = rig.redis.master_indexes()?;
            let victim = masters[rng.random_range(0..masters.len())];
            rig.redis.kill(victim)?;
            (Broken::Killed(Target::Redis(victim)), format!("killed redis master {victim}"))
        }
        Nemesis::PauseKith => {
            let pid = servers.procs[kith].as_ref().context("no server to pause")?.id();
            signal(pid, libc::SIGSTOP);
            (Broken::Paused(pid), format!("paused kith server {}", kith + 1))
        }
        Nemesis::PauseCassandra => {
            let pid = rig.cassandra.nodes[cass - 1].pid.context("cassandra node not running")?;
            signal(pid, libc::SIGSTOP);
            (Broken::Paused(pid), format!("paused cassandra node {cass}"))
        }
        Nemesis::PauseRedis => {
            let i = rng.random_range(1..=rig.redis.nodes.len());
            let pid = rig.redis.nodes[i - 1].pid.context("redis node not running")?;
            signal(pid, libc::SIGSTOP);
            (Broken::Paused(pid), format!("paused redis node {i}"))
        }
        Nemesis::SkewKith | Nemesis::SkewCassandra => {
            let target = match kind {
                Nemesis::SkewKith => Target::Kith(kith),
                _ => Target::Cassandra(cass),
            };
            let offset = skew(target, rig, servers, rng, false)?;
            let name = match target {
                Target::Kith(i) => format!("kith server {}", i + 1),
                _ => format!("cassandra node {cass}"),
            };
            (Broken::Skewed(target), format!("set {name}'s clock {offset:+} s"))
        }
        Nemesis::FullDiskCassandra => {
            let bytes = rig.cassandra.fill_disk(cass)?;
            let mb = bytes as f64 / f64::from(1 << 20);
            (Broken::Filled(cass), format!("filled cassandra node {cass}'s disk ({mb:.0} MiB)"))
        }
        Nemesis::PartitionCassandra | Nemesis::IsolateCassandra => {
            let others: Vec<usize> =
                rig.cassandra.nodes.iter().map(|n| n.index).filter(|&i| i != cass).collect();
            let clients = kind == Nemesis::IsolateCassandra;
            rig.cassandra.cut(cass, &others, clients)?;
            let from = if clients { "the other nodes and the clients" } else { "the other nodes" };
            (Broken::Cut, format!("cut cassandra node {cass} from {from}"))
        }
        Nemesis::None | Nemesis::Mix => bail!("{kind:?} is not one fault"),
    })
}

/// Sets `target`'s clock 2–30 s off, ahead or behind at random, or (`step`) to the other
/// side of the one it is at; returns the offset.
fn skew(
    target: Target,
    rig: &Rig,
    servers: &Servers,
    rng: &mut impl Rng,
    step: bool,
) -> Result<i64> {
    let size = rng.random_range(2..=30);
    let offset = match (step, rng.random_bool(0.5)) {
        (false, ahead) => {
            if ahead {
                size
            } else {
                -size
            }
        }
        (true, _) => -size * current_sign(target, rig, servers),
    };
    set_clock(target, rig, servers, offset)?;
    Ok(offset)
}

fn clock_file(target: Target, rig: &Rig, servers: &Servers) -> Result<std::path::PathBuf> {
    Ok(match target {
        Target::Kith(i) => rig.server_clock(&servers.prefix, i + 1),
        Target::Cassandra(n) => rig.cassandra.nodes[n - 1].clock_file(),
        Target::Redis(_) => bail!("Redis clocks are not skewed"),
    })
}

fn set_clock(target: Target, rig: &Rig, servers: &Servers, offset_s: i64) -> Result<()> {
    match target {
        Target::Cassandra(n) => rig.cassandra.set_clock(n, offset_s)?,
        _ => {
            kith_cassandra::local::clock::set_offset(&clock_file(target, rig, servers)?, offset_s)?
        }
    }
    Ok(())
}

/// The sign of the offset `target`'s clock file holds (1 when ahead or unset).
fn current_sign(target: Target, rig: &Rig, servers: &Servers) -> i64 {
    let text = clock_file(target, rig, servers)
        .ok()
        .and_then(|f| std::fs::read_to_string(f).ok())
        .unwrap_or_default();
    if text.trim_start().starts_with('-') { -1 } else { 1 }
}

fn heal(broken: Broken, rig: &mut Rig, servers: &mut Servers) -> Result<()> {
    match broken {
        Broken::Paused(pid) => signal(pid, libc::SIGCONT),
        Broken::Cut => rig.cassandra.mend()?,
        Broken::Skewed(target) => set_clock(target, rig, servers, 0)?,
        Broken::Filled(n) => {
            rig.cassandra.unfill_disk(n)?;
            // A node whose commit log could not be written stops serving (Cassandra's
            // `commit_failure_policy: stop`) or dies; it comes back by a restart.
            let node = &rig.cassandra.nodes[n - 1];
            if !(node.alive() && node.listening()) {
                if node.alive() {
                    rig.cassandra.kill(n)?;
                }
                eprintln!(
                    "trial: cassandra node {n} stopped serving on a full disk: restarting it"
                );
                rig.cassandra.restart(n)?;
            }
        }
        Broken::Killed(Target::Kith(i)) => restart_kith(rig, servers, i)?,
        Broken::Killed(Target::Cassandra(n)) => rig.cassandra.restart(n)?,
        Broken::Killed(Target::Redis(n)) => rig.redis.restart(n, Duration::from_secs(60))?,
    }
    Ok(())
}

/// Starts kith server `i` (0-based) again on its address.
pub fn restart_kith(rig: &Rig, servers: &mut Servers, i: usize) -> Result<()> {
    let addr = servers.addrs[i].trim_start_matches("http://").to_string();
    let p = rig.server_at(&servers.keyspace, i + 1, &servers.prefix, &servers.args, &addr)?;
    servers.procs[i] = Some(p);
    Ok(())
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) with a pid this trial started and a valid signal number.
    unsafe {
        libc::kill(pid as i32, sig);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_nemesis_has_a_code_of_its_own_that_is_no_prefix_of_another() {
        for a in ALL {
            for b in ALL {
                if a != b {
                    assert!(!b.code().starts_with(a.code()), "{a:?} {b:?}");
                }
            }
            assert_eq!(a.name().parse::<Nemesis>(), Ok(a));
        }
    }
}
