//! The crash test's two halves: a writer that reports every acknowledged write, to be killed
//! at a random moment, and a checker that reopens the store and finds every acknowledged
//! write in it.
//!
//! The writer runs several threads (so group commit is exercised), each owning the data
//! blocks of its own users; friendships are only added, never removed, so an acknowledged
//! friendship must always be present. Before each write a thread logs `T <write>` ("tried"),
//! after its acknowledgement `A <write>`. A data block must equal the last acknowledged
//! write to it or one tried after that (which may have reached the WAL before the kill).

use std::collections::HashMap;
use std::io::Write;
use std::sync::Mutex;

use kith_layout::{LayoutConfig, Method};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Error, Result};
use crate::record::Profile;
use crate::relayout::NewLayout;
use crate::store::Store;
use crate::sync::lock;

/// Users the writer creates get uids from here up.
pub const NEW_USER_BASE: u64 = 1 << 40;

fn data_for(uid: u64, version: u64) -> Vec<u8> {
    let len = (xxh3_64(&[uid.to_le_bytes(), version.to_le_bytes()].concat()) % 9000) as usize + 1;
    let mut rng = Pcg64Mcg::seed_from_u64(uid ^ version.rotate_left(32));
    let mut v = vec![0u8; len];
    rng.fill(&mut v[..]);
    v
}

/// Runs `threads` writers forever (until killed), logging to `log`. Each run needs its own
/// `seed` (below 2^20): new users' uids are drawn from it. Every `relayout_every`
/// writes of thread 0, it relays the store out (random order), so kills also land inside
/// relayouts. Returns only on an error.
pub fn crash_writer(
    store: &Store,
    threads: usize,
    seed: u64,
    relayout_every: u64,
    log: &Mutex<Box<dyn Write + Send>>,
) -> Result<()> {
    let base: Vec<u64> = store.graph()?.graph.original_ids().to_vec();
    if base.len() < 2 {
        return Err(Error::Invalid("the crash writer needs a store with at least 2 users".into()));
    }
    let emit = |line: String| -> Result<()> {
        let mut out = lock(log);
        writeln!(out, "{line}").and_then(|()| out.flush()).map_err(Error::io("writing the ack log"))
    };
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let base = &base;
                let emit = &emit;
                scope.spawn(move || -> Result<()> {
                    let mut rng =
                        Pcg64Mcg::seed_from_u64(seed ^ (t as u64 + 1).wrapping_mul(0x9e37_79b9));
                    let mine: Vec<u64> =
                        base.iter().copied().filter(|u| u % threads as u64 == t as u64).collect();
                    let mut created: u64 = 0;
                    for i in 0u64.. {
                        if t == 0 && relayout_every > 0 && i > 0 && i % relayout_every == 0 {
                            let config = LayoutConfig {
                                method: Method::Random,
                                seed: i,
                                ..LayoutConfig::default()
                            };
                            store.relayout(NewLayout::Compute(config), false)?;
                            emit(format!("R {i}"))?;
                        }
                        let roll: f64 = rng.random();
                        if roll < 0.6 {
                            let u = base[rng.random_range(0..base.len())];
                            let v = base[rng.random_range(0..base.len())];
                            if u == v {
                                continue;
                            }
                            emit(format!("T friend {u} {v}"))?;
                            store.add_friend(u, v)?;
                            emit(format!("A friend {u} {v}"))?;
                        } else if roll < 0.8 && !mine.is_empty() {
                            let u = mine[rng.random_range(0..mine.len())];
                            let version = i;
                            emit(format!("T data {u} {version}"))?;
                            store.put_data(u, &data_for(u, version))?;
                            emit(format!("A data {u} {version}"))?;
                        } else {
                            // Unique across runs as long as each run has its own seed.
                            let uid =
                                NEW_USER_BASE + (seed << 28) + created * threads as u64 + t as u64;
                            created += 1;
                            let f = base[rng.random_range(0..base.len())];
                            let profile =
                                Profile { name: format!("new {uid}"), ..Profile::default() };
                            emit(format!("T user {uid} {f}"))?;
                            store.put_user(uid, &profile, &[f], Some(&data_for(uid, 0)))?;
                            emit(format!("A user {uid} {f}"))?;
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join().map_err(|_| Error::Invalid("a writer thread panicked".into()))??;
        }
        Ok(())
    })
}

/// What the checker found.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct CrashCheck {
    /// Acknowledged writes in the log.
    pub acknowledged: u64,
    /// Relayouts the writer completed.
    pub relayouts: u64,
    /// Acknowledged writes missing or wrong after the restart.
    pub lost: Vec<String>,
}

/// Checks every acknowledged write of `log` against the reopened store.
pub fn check_crash_log(store: &Store, log: &str) -> Result<CrashCheck> {
    let mut check = CrashCheck::default();
    // Per user: the last acknowledged data version and every version tried after it.
    let mut data: HashMap<u64, (Option<u64>, Vec<u64>)> = HashMap::new();
    let mut friends: Vec<(u64, u64)> = Vec::new();
    let mut users: Vec<(u64, u64)> = Vec::new();
    for line in log.lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        let num = |i: usize| parts.get(i).and_then(|s| s.parse::<u64>().ok());
        match (parts.first().copied(), parts.get(1).copied()) {
            (Some("R"), _) => check.relayouts += 1,
            (Some(kind @ ("T" | "A")), Some(what)) => {
                // A line cut short by the kill is ignored; it was never acknowledged.
                let (Some(a), Some(b)) = (num(2), num(3)) else { continue };
                let acked = kind == "A";
                check.acknowledged += u64::from(acked);
                match what {
                    "friend" if acked => friends.push((a, b)),
                    "user" if acked => users.push((a, b)),
                    "data" => {
                        let entry = data.entry(a).or_default();
                        if acked {
                            *entry = (Some(b), Vec::new());
                        } else {
                            entry.1.push(b);
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    for (u, v) in friends {
        let user = match store.get_user(u) {
            Ok(user) => user,
            Err(Error::UnknownUser(_)) => {
                check.lost.push(format!("user {u} (friend of {v}) is missing"));
                continue;
            }
            Err(e) => return Err(e),
        };
        if user.friends.binary_search(&v).is_err() {
            check.lost.push(format!("acknowledged friendship {u}-{v} is missing"));
        }
    }
    for (uid, f) in users {
        match store.get_user(uid) {
            Ok(user) if user.friends.binary_search(&f).is_ok() => {}
            Ok(_) => check.lost.push(format!("new user {uid} lost its friend {f}")),
            Err(Error::UnknownUser(_)) => {
                check.lost.push(format!("acknowledged new user {uid} is missing"))
            }
            Err(e) => return Err(e),
        }
    }
    for (uid, (acked, tried)) in data {
        let Some(acked) = acked else { continue };
        let got = store.get_data(uid, None)?;
        let ok = std::iter::once(acked).chain(tried).any(|v| data_for(uid, v) == got);
        if !ok {
            check.lost.push(format!(
                "user {uid}: data is not the acknowledged version {acked} or a later one"
            ));
        }
    }
    Ok(check)
}
