//! The crash test's two halves: a writer that reports every acknowledged write, to be killed
//! at a random moment, and a checker that reopens the store and finds every acknowledged
//! write in it.
//!
//! The writer runs several threads (so group commit is exercised) doing mixed writes:
//! friendships added and deleted, profiles and data blocks replaced, users created and
//! replaced. Every **item** (a friendship, a user's profile, a user's data block) is written
//! by one thread only, so the order of its lines in the log is the order of its writes:
//! a friendship of two users the store had at start belongs to the thread its pair hashes to,
//! a profile or data block to the thread its uid falls to, and everything about a user a
//! thread created to that thread. Before each write a thread logs `T <write>` ("tried"),
//! after its acknowledgement `A <write>`. After a crash every item must be in the state of
//! its last acknowledged write or of one tried after it (which may have reached the WAL
//! before the kill); a friendship must also be on both users' lists or on neither.
//!
//! The log's lines (versions are unique per run: the run's seed in the high bits):
//! - `friend <u> <v> <1|0>`: the friendship u–v added (1) or deleted (0);
//! - `profile <uid> <version>`: the profile replaced by [`profile_for`]`(uid, version)`;
//! - `data <uid> <version>`: the data block replaced by `data_for(uid, version)`;
//! - `user <uid> <version> <friend> [<dropped>...]`: the whole user put, with profile and
//!   data of `version`, its one friend, and the friends that put dropped;
//! - `R <i>`: a relayout completed.

use std::collections::{BTreeMap, HashSet};
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

/// The profile the crash writer gives `uid` at `version`.
fn profile_for(uid: u64, version: u64) -> Profile {
    let mut fields = BTreeMap::new();
    fields.insert("version".to_string(), version.to_string());
    Profile { name: format!("crash {uid}"), age: Some((version % 120) as u32), fields }
}

/// Which of `threads` threads owns the friendship u–v of two users that existed at start.
fn pair_owner(u: u64, v: u64, threads: usize) -> usize {
    let (a, b) = (u.min(v), u.max(v));
    (xxh3_64(&[a.to_le_bytes(), b.to_le_bytes()].concat()) % threads as u64) as usize
}

/// One writer thread's state: its rng, the users it owns and the users it created.
struct Writer<'a> {
    store: &'a Store,
    emit: &'a (dyn Fn(String) -> Result<()> + Sync),
    base: &'a [u64],
    in_base: &'a HashSet<u64>,
    threads: usize,
    t: usize,
    rng: Pcg64Mcg,
    mine: Vec<u64>,
    /// Users this thread created, with their one current friend.
    created: Vec<(u64, u64)>,
    next_uid: u64,
}

impl Writer<'_> {
    fn random_base(&mut self) -> u64 {
        self.base[self.rng.random_range(0..self.base.len())]
    }

    /// Adds (or deletes, when `add` is false) a friendship this thread owns.
    fn friendship(&mut self, add: bool) -> Result<()> {
        let u = self.random_base();
        let v = if add {
            self.random_base()
        } else {
            // Deleting a random pair would almost always be a no-op: pick an existing friend.
            let friends: Vec<u64> = self
                .store
                .get_all_friends(u)?
                .into_iter()
                .filter(|f| self.in_base.contains(f) && pair_owner(u, *f, self.threads) == self.t)
                .collect();
            match friends.len() {
                0 => return Ok(()),
                n => friends[self.rng.random_range(0..n)],
            }
        };
        if u == v || pair_owner(u, v, self.threads) != self.t {
            return Ok(());
        }
        let state = u8::from(add);
        (self.emit)(format!("T friend {u} {v} {state}"))?;
        if add {
            self.store.add_friend(u, v)?;
        } else {
            self.store.delete_friend(u, v)?;
        }
        (self.emit)(format!("A friend {u} {v} {state}"))
    }

    fn profile_or_data(&mut self, version: u64, profile: bool) -> Result<()> {
        if self.mine.is_empty() {
            return Ok(());
        }
        let u = self.mine[self.rng.random_range(0..self.mine.len())];
        let what = if profile { "profile" } else { "data" };
        (self.emit)(format!("T {what} {u} {version}"))?;
        if profile {
            self.store.put_profile(u, &profile_for(u, version))?;
        } else {
            self.store.put_data(u, &data_for(u, version))?;
        }
        (self.emit)(format!("A {what} {u} {version}"))
    }

    /// Creates a user, or replaces one this thread created (with a new friend).
    fn user(&mut self, version: u64) -> Result<()> {
        let replace = !self.created.is_empty() && self.rng.random_bool(0.3);
        let (at, uid, dropped) = if replace {
            let at = self.rng.random_range(0..self.created.len());
            let (uid, old) = self.created[at];
            (at, uid, vec![old])
        } else {
            let uid = self.next_uid;
            self.next_uid += self.threads as u64;
            self.created.push((uid, 0));
            (self.created.len() - 1, uid, Vec::new())
        };
        let f = self.random_base();
        let dropped: Vec<u64> = dropped.into_iter().filter(|&d| d != f).collect();
        let tail: String = dropped.iter().map(|d| format!(" {d}")).collect();
        (self.emit)(format!("T user {uid} {version} {f}{tail}"))?;
        let data = data_for(uid, version);
        self.store.put_user(uid, &profile_for(uid, version), &[f], Some(&data))?;
        self.created[at].1 = f;
        (self.emit)(format!("A user {uid} {version} {f}{tail}"))
    }
}

/// Runs `threads` writers forever (until killed), logging to `log`. Each run needs its own
/// `seed` (below 2^20): new users' uids and the writes' versions are drawn from it. Every
/// `relayout_every` writes of thread 0, it relays the store out (random order), so kills
/// also land inside relayouts. Returns only on an error.
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
    let in_base: HashSet<u64> = base.iter().copied().collect();
    let emit = |line: String| -> Result<()> {
        let mut out = lock(log);
        writeln!(out, "{line}").and_then(|()| out.flush()).map_err(Error::io("writing the ack log"))
    };
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (base, in_base, emit) = (&base, &in_base, &emit);
                scope.spawn(move || -> Result<()> {
                    let mut w = Writer {
                        store,
                        emit,
                        base,
                        in_base,
                        threads,
                        t,
                        rng: Pcg64Mcg::seed_from_u64(
                            seed ^ (t as u64 + 1).wrapping_mul(0x9e37_79b9),
                        ),
                        mine: base
                            .iter()
                            .copied()
                            .filter(|u| u % threads as u64 == t as u64)
                            .collect(),
                        created: Vec::new(),
                        // Unique across runs as long as each run has its own seed.
                        next_uid: NEW_USER_BASE + (seed << 28) + t as u64,
                    };
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
                        let version = (seed << 40) | i;
                        let roll: f64 = w.rng.random();
                        match roll {
                            r if r < 0.35 => w.friendship(true)?,
                            r if r < 0.55 => w.friendship(false)?,
                            r if r < 0.7 => w.profile_or_data(version, true)?,
                            r if r < 0.85 => w.profile_or_data(version, false)?,
                            _ => w.user(version)?,
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
    /// Acknowledged writes by kind: `friend_add`, `friend_delete`, `profile`, `data`, `user`.
    pub acknowledged_by_kind: BTreeMap<String, u64>,
    /// Items (friendships, profiles, data blocks) whose last acknowledged state was checked.
    pub items_checked: u64,
    /// Relayouts the writer completed.
    pub relayouts: u64,
    /// Acknowledged writes missing or wrong after the restart.
    pub lost: Vec<String>,
}

/// One thing the writer changes, whose state the checker compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Item {
    /// The friendship of the two users, the smaller uid first; state 1 = friends.
    Friend(u64, u64),
    /// A user's profile; state = version.
    Profile(u64),
    /// A user's data block; state = version.
    Data(u64),
}

/// Per item, in order: its last acknowledged state and every state tried after it.
#[derive(Default)]
struct Ledger(BTreeMap<Item, (Option<u64>, Vec<u64>)>);

impl Ledger {
    fn record(&mut self, item: Item, state: u64, acked: bool) {
        let entry = self.0.entry(item).or_default();
        if acked {
            *entry = (Some(state), Vec::new());
        } else {
            entry.1.push(state);
        }
    }
}

fn friend(u: u64, v: u64) -> Item {
    Item::Friend(u.min(v), u.max(v))
}

/// Reads the log into a ledger, counting acknowledged writes. A line cut short by the kill
/// does not parse and is ignored: it was never acknowledged.
fn read_log(log: &str, check: &mut CrashCheck) -> Ledger {
    let mut ledger = Ledger::default();
    for line in log.lines() {
        let parts: Vec<&str> = line.split_whitespace().collect();
        if parts.first() == Some(&"R") {
            check.relayouts += 1;
            continue;
        }
        let nums: Option<Vec<u64>> = parts.iter().skip(2).map(|s| s.parse().ok()).collect();
        let (Some(kind), Some(what), Some(n)) = (parts.first(), parts.get(1), nums) else {
            continue;
        };
        let acked = match *kind {
            "A" => true,
            "T" => false,
            _ => continue,
        };
        let kind_name = match (*what, n.as_slice()) {
            ("friend", &[u, v, state]) if state <= 1 => {
                ledger.record(friend(u, v), state, acked);
                if state == 1 { "friend_add" } else { "friend_delete" }
            }
            ("profile", &[u, version]) => {
                ledger.record(Item::Profile(u), version, acked);
                "profile"
            }
            ("data", &[u, version]) => {
                ledger.record(Item::Data(u), version, acked);
                "data"
            }
            ("user", &[uid, version, f, ref dropped @ ..]) => {
                ledger.record(Item::Profile(uid), version, acked);
                ledger.record(Item::Data(uid), version, acked);
                ledger.record(friend(uid, f), 1, acked);
                for &d in dropped {
                    ledger.record(friend(uid, d), 0, acked);
                }
                "user"
            }
            _ => continue,
        };
        if acked {
            check.acknowledged += 1;
            *check.acknowledged_by_kind.entry(kind_name.to_string()).or_default() += 1;
        }
    }
    ledger
}

/// The state of `item` in the store, or why it cannot be read.
fn state_of(
    store: &Store,
    item: Item,
    candidates: &[u64],
) -> Result<std::result::Result<u64, String>> {
    let found = match item {
        Item::Friend(u, v) => {
            let on_u = store.get_all_friends(u).map(|f| f.binary_search(&v).is_ok());
            let on_v = store.get_all_friends(v).map(|f| f.binary_search(&u).is_ok());
            match (on_u, on_v) {
                (Ok(a), Ok(b)) if a == b => Ok(u64::from(a)),
                (Ok(_), Ok(_)) => {
                    return Ok(Err(format!("friendship {u}-{v} is on one side only")));
                }
                (Err(e), _) | (_, Err(e)) => Err(e),
            }
        }
        Item::Profile(u) => store.get_profile(u).map(|p| {
            let matching = candidates.iter().find(|&&c| profile_for(u, c) == p);
            matching.copied().unwrap_or(u64::MAX)
        }),
        Item::Data(u) => store.get_data(u, None).map(|d| {
            let matching = candidates.iter().find(|&&c| data_for(u, c) == d);
            matching.copied().unwrap_or(u64::MAX)
        }),
    };
    match found {
        Ok(state) => Ok(Ok(state)),
        Err(Error::UnknownUser(uid)) => Ok(Err(format!("user {uid} is missing"))),
        Err(e) => Err(e),
    }
}

/// Checks every acknowledged write of `log` against the reopened store: each item must be in
/// the state of its last acknowledged write or of a write tried after it.
pub fn check_crash_log(store: &Store, log: &str) -> Result<CrashCheck> {
    let mut check = CrashCheck::default();
    let ledger = read_log(log, &mut check);
    for (&item, (acked, tried)) in &ledger.0 {
        let Some(acked) = *acked else { continue };
        check.items_checked += 1;
        let candidates: Vec<u64> = std::iter::once(acked).chain(tried.iter().copied()).collect();
        match state_of(store, item, &candidates)? {
            Ok(state) if candidates.contains(&state) => {}
            Ok(state) => check.lost.push(format!(
                "{item:?}: found state {}, not the acknowledged {acked} or one tried after it",
                if state == u64::MAX { "unknown".to_string() } else { state.to_string() }
            )),
            Err(reason) => check.lost.push(format!("{item:?} (acknowledged {acked}): {reason}")),
        }
    }
    Ok(check)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BuildOptions, DataSpec, LayoutMeta, build};

    fn store(dir: &std::path::Path) -> Store {
        let graph = kith_layout::paper_example();
        let layout = kith_layout::Layout::identity(graph.num_nodes());
        let options = BuildOptions { data: DataSpec::Fixed(40), ..BuildOptions::default() };
        build(&dir.join("s"), &graph, &layout, LayoutMeta::default(), &options).unwrap()
    }

    /// An acknowledged delete, profile or data write that the store does not show is lost,
    /// and a write tried after the acknowledged one may show instead.
    #[test]
    fn checker_catches_lost_deletes_profiles_and_data() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        // The store as the log says: 1-7 added then deleted, profile 2 at version 5, data 3
        // at version 9 and tried at 10.
        store.put_profile(2, &profile_for(2, 5)).unwrap();
        store.put_data(3, &data_for(3, 10)).unwrap();
        let log = "T friend 1 7 1\nA friend 1 7 1\nT friend 1 7 0\nA friend 1 7 0\n\
                   R 60\nT profile 2 5\nA profile 2 5\nT data 3 9\nA data 3 9\nT data 3 10\nA data";
        let check = check_crash_log(&store, log).unwrap();
        assert!(check.lost.is_empty(), "{:?}", check.lost);
        assert_eq!(check.acknowledged, 4);
        assert_eq!(check.relayouts, 1);
        assert_eq!(check.items_checked, 3);
        // Now the delete and the profile are "lost".
        store.add_friend(1, 7).unwrap();
        store.put_profile(2, &profile_for(2, 4)).unwrap();
        let check = check_crash_log(&store, log).unwrap();
        assert_eq!(check.lost.len(), 2, "{:?}", check.lost);
        assert!(check.lost[0].contains("Friend(1, 7)"), "{:?}", check.lost);
        assert!(check.lost[1].contains("Profile(2)"), "{:?}", check.lost);
    }

    /// A replaced user's dropped friendship must be gone on both sides.
    #[test]
    fn checker_follows_user_puts() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let uid = NEW_USER_BASE;
        store.put_user(uid, &profile_for(uid, 1), &[2], Some(&data_for(uid, 1))).unwrap();
        store.put_user(uid, &profile_for(uid, 2), &[4], Some(&data_for(uid, 2))).unwrap();
        let log = format!("A user {uid} 1 2\nA user {uid} 2 4 2\n");
        let check = check_crash_log(&store, &log).unwrap();
        assert!(check.lost.is_empty(), "{:?}", check.lost);
        assert_eq!(check.items_checked, 4);
        store.add_friend(uid, 2).unwrap();
        let check = check_crash_log(&store, &log).unwrap();
        assert_eq!(check.lost.len(), 1, "{:?}", check.lost);
    }
}
