//! Model-based test of the store: random sequences of writes (`put_user`, `add_friend`,
//! `delete_friend`, `put_profile`, `put_data`), reopens, kills and relayouts, applied to a
//! real store and to an in-memory model (`BTreeMap`s of users, friend sets, profiles and
//! data blocks); after every step the two must agree exactly.
//!
//! A kill runs the writes in a child process (this test binary re-executed in its child
//! mode, `model_child_process`), which reports each acknowledged write on stdout, then starts
//! one more write and is SIGKILLed as soon as the last acknowledgement is read: every
//! acknowledged write must survive, and the write in flight must be applied whole or not at
//! all. `KITH_MODEL_CASES` sets the number of random sequences (default 8; the test
//! takes seconds).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use kith_layout::{LayoutConfig, Method};
use kith_store::{
    BuildOptions, DataSpec, Error, LayoutMeta, NewLayout, OpenOptions, Profile, Store,
};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

/// The uids the operations pick from: the example graph has 1..=7, the rest are new.
const UIDS: u64 = 10;
const CHILD_DIR: &str = "KITH_MODEL_CHILD_DIR";
const CHILD_OPS: &str = "KITH_MODEL_CHILD_OPS";

/// One write, with small arguments that the model turns into profiles and data.
#[derive(Clone, Debug, Serialize, Deserialize)]
enum Write {
    PutUser { uid: u64, profile: u8, friends: Vec<u64>, data: Option<(u8, u16)> },
    AddFriend(u64, u64),
    DeleteFriend(u64, u64),
    PutProfile(u64, u8),
    PutData(u64, u8, u16),
}

#[derive(Clone, Debug)]
enum Step {
    Write(Write),
    Reopen,
    /// The writes run in a child that is SIGKILLed while the extra write is in flight.
    Kill(Vec<Write>, Write),
    Relayout(u64),
}

fn profile(variant: u8) -> Profile {
    let mut p = Profile { name: format!("name {variant}"), age: None, fields: BTreeMap::new() };
    if variant % 2 == 1 {
        p.age = Some(u32::from(variant));
    }
    if variant.is_multiple_of(3) {
        p.fields.insert("city".into(), "x".repeat(usize::from(variant)));
    }
    p
}

/// A data block of `len` bytes; lengths cross the 4 KiB chunk size.
fn data(seed: u8, len: u16) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

/// What the store holds, as the model sees it.
#[derive(Clone, Debug, Default, PartialEq)]
struct Model {
    users: BTreeMap<u64, (Profile, BTreeSet<u64>, Vec<u8>)>,
}

/// What a write returned, reduced to what the model predicts.
#[derive(Debug, PartialEq)]
enum Outcome {
    Ok,
    UnknownUser,
    SelfFriendship,
}

impl Model {
    fn apply(&mut self, write: &Write) -> Outcome {
        let known = |m: &Model, u: u64| m.users.contains_key(&u);
        match write {
            Write::AddFriend(u, v) | Write::DeleteFriend(u, v) => {
                if u == v {
                    return Outcome::SelfFriendship;
                }
                if !known(self, *u) || !known(self, *v) {
                    return Outcome::UnknownUser;
                }
                let add = matches!(write, Write::AddFriend(..));
                for (a, b) in [(*u, *v), (*v, *u)] {
                    let set = &mut self.users.get_mut(&a).expect("known").1;
                    if add {
                        set.insert(b)
                    } else {
                        set.remove(&b)
                    };
                }
            }
            Write::PutProfile(u, p) => match self.users.get_mut(u) {
                Some(user) => user.0 = profile(*p),
                None => return Outcome::UnknownUser,
            },
            Write::PutData(u, s, len) => match self.users.get_mut(u) {
                Some(user) => user.2 = data(*s, *len),
                None => return Outcome::UnknownUser,
            },
            Write::PutUser { uid, profile: p, friends, data: d } => {
                if friends.contains(uid) {
                    return Outcome::SelfFriendship;
                }
                if friends.iter().any(|f| !known(self, *f)) {
                    return Outcome::UnknownUser;
                }
                let wanted: BTreeSet<u64> = friends.iter().copied().collect();
                let old = self.users.get(uid).map(|u| u.1.clone()).unwrap_or_default();
                for f in old.difference(&wanted) {
                    self.users.get_mut(f).expect("a friend exists").1.remove(uid);
                }
                for f in wanted.difference(&old) {
                    self.users.get_mut(f).expect("checked above").1.insert(*uid);
                }
                let entry = self.users.entry(*uid).or_default();
                entry.0 = profile(*p);
                entry.1 = wanted;
                if let Some((s, len)) = d {
                    entry.2 = data(*s, *len);
                }
            }
        }
        Outcome::Ok
    }

    /// Reads everything the model knows about back from the store.
    fn read(store: &Store) -> Model {
        let mut model = Model::default();
        for uid in 0..UIDS {
            match store.get_user(uid) {
                Ok(user) => {
                    let data = store.get_data(uid, None).expect("data of a user");
                    let friends = user.friends.iter().copied().collect();
                    model.users.insert(uid, (user.profile, friends, data));
                }
                Err(Error::UnknownUser(_)) => {}
                Err(e) => panic!("reading user {uid}: {e}"),
            }
        }
        assert_eq!(store.count_users().unwrap(), model.users.len() as u64, "count_users");
        model
    }
}

fn apply(store: &Store, write: &Write) -> Outcome {
    let result = match write {
        Write::PutUser { uid, profile: p, friends, data: d } => {
            let block = d.map(|(s, len)| data(s, len));
            store.put_user(*uid, &profile(*p), friends, block.as_deref()).map(drop)
        }
        Write::AddFriend(u, v) => store.add_friend(*u, *v).map(drop),
        Write::DeleteFriend(u, v) => store.delete_friend(*u, *v).map(drop),
        Write::PutProfile(u, p) => store.put_profile(*u, &profile(*p)),
        Write::PutData(u, s, len) => store.put_data(*u, &data(*s, *len)),
    };
    match result {
        Ok(()) => Outcome::Ok,
        Err(Error::UnknownUser(_)) => Outcome::UnknownUser,
        Err(Error::SelfFriendship(_)) => Outcome::SelfFriendship,
        Err(e) => panic!("{write:?} failed: {e}"),
    }
}

/// Kills the child on drop, so a failing test leaves no process behind.
struct ChildGuard(Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `writes` and then `extra` in a child process; SIGKILLs it once every one of `writes`
/// is acknowledged. Returns the outcomes the child reported.
fn run_child_and_kill(dir: &Path, writes: &[Write], extra: &Write) -> Vec<String> {
    let mut all = writes.to_vec();
    all.push(extra.clone());
    let mut child = ChildGuard(
        Command::new(std::env::current_exe().unwrap())
            .args(["model_child_process", "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_DIR, dir)
            .env(CHILD_OPS, serde_json::to_string(&all).unwrap())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("re-executing the test binary"),
    );
    let stdout = child.0.stdout.take().expect("piped");
    let mut outcomes = Vec::new();
    let mut lines = BufReader::new(stdout).lines();
    // With no writes to wait for, the kill lands while the child starts or runs the extra one.
    while outcomes.len() < writes.len() {
        let Some(line) = lines.next() else { break };
        let line = line.expect("reading the child's output");
        // The test harness may print its own words before ours on the first line.
        if let Some((_, outcome)) = line.split_once("KITH-ACK ") {
            outcomes.push(outcome.to_string());
        }
    }
    child.0.kill().expect("SIGKILL");
    child.0.wait().expect("waiting for the child");
    assert_eq!(outcomes.len(), writes.len(), "the child died before acknowledging every write");
    outcomes
}

/// The child's side of a kill: opens the store, applies the writes, reports each, and hangs
/// after the last one (the parent kills it). Does nothing when run as an ordinary test.
#[test]
fn model_child_process() {
    let (Some(dir), Some(ops)) = (std::env::var_os(CHILD_DIR), std::env::var_os(CHILD_OPS)) else {
        return;
    };
    let store = Store::open(Path::new(&dir), &OpenOptions::default()).unwrap();
    let writes: Vec<Write> = serde_json::from_str(ops.to_str().unwrap()).unwrap();
    for write in &writes {
        let outcome = apply(&store, write);
        println!("KITH-ACK {outcome:?}");
    }
    std::thread::sleep(std::time::Duration::from_secs(60));
}

fn build_store(dir: &Path) -> PathBuf {
    let path = dir.join("store");
    let graph = kith_layout::paper_example();
    let layout = kith_layout::Layout::identity(graph.num_nodes());
    let options = BuildOptions { data: DataSpec::Fixed(300), ..BuildOptions::default() };
    drop(kith_store::build(&path, &graph, &layout, LayoutMeta::default(), &options).unwrap());
    path
}

fn run_steps(steps: &[Step]) {
    let dir = tempfile::tempdir().unwrap();
    let path = build_store(dir.path());
    let open = || Store::open(&path, &OpenOptions::default()).unwrap();
    let mut store = Some(open());
    let mut model = Model::read(store.as_ref().unwrap());
    for (i, step) in steps.iter().enumerate() {
        match step {
            Step::Write(write) => {
                let expected = model.apply(write);
                assert_eq!(apply(store.as_ref().unwrap(), write), expected, "step {i}: {write:?}");
            }
            Step::Reopen => {
                drop(store.take());
                store = Some(open());
            }
            Step::Kill(writes, extra) => {
                drop(store.take());
                let outcomes = run_child_and_kill(&path, writes, extra);
                for (write, outcome) in writes.iter().zip(&outcomes) {
                    let expected = model.apply(write);
                    assert_eq!(outcome, &format!("{expected:?}"), "step {i}: {write:?}");
                }
                store = Some(open());
                // The write in flight is either wholly there or not at all.
                let found = Model::read(store.as_ref().unwrap());
                if found != model {
                    model.apply(extra);
                }
            }
            Step::Relayout(seed) => {
                let config =
                    LayoutConfig { method: Method::Random, seed: *seed, ..Default::default() };
                store.as_ref().unwrap().relayout(NewLayout::Compute(config), false).unwrap();
            }
        }
        let found = Model::read(store.as_ref().unwrap());
        assert_eq!(found, model, "after step {i}: {step:?}");
        assert!(store.as_ref().unwrap().verify().unwrap().ok(), "verify after step {i}");
    }
}

fn uid() -> impl Strategy<Value = u64> {
    1..UIDS
}

fn write() -> impl Strategy<Value = Write> {
    let len = prop_oneof![Just(0u16), 1..200u16, 4000..9000u16];
    prop_oneof![
        3 => (uid(), any::<u8>(), prop::collection::vec(uid(), 0..4), prop::option::of((any::<u8>(), len.clone())))
            .prop_map(|(uid, profile, friends, data)| Write::PutUser { uid, profile, friends, data }),
        4 => (uid(), uid()).prop_map(|(u, v)| Write::AddFriend(u, v)),
        3 => (uid(), uid()).prop_map(|(u, v)| Write::DeleteFriend(u, v)),
        2 => (uid(), any::<u8>()).prop_map(|(u, p)| Write::PutProfile(u, p)),
        2 => (uid(), any::<u8>(), len).prop_map(|(u, s, l)| Write::PutData(u, s, l)),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        20 => write().prop_map(Step::Write),
        2 => Just(Step::Reopen),
        2 => (prop::collection::vec(write(), 0..6), write()).prop_map(|(w, e)| Step::Kill(w, e)),
        2 => any::<u64>().prop_map(Step::Relayout),
    ]
}

fn cases() -> u32 {
    std::env::var("KITH_MODEL_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(8)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn store_agrees_with_the_model(steps in prop::collection::vec(step(), 1..40)) {
        run_steps(&steps);
    }
}

/// A fixed sequence with every kind of step, so each runs even if the random cases miss one.
#[test]
fn every_kind_of_step() {
    run_steps(&[
        Step::Write(Write::PutUser {
            uid: 8,
            profile: 3,
            friends: vec![1, 2],
            data: Some((1, 5000)),
        }),
        Step::Write(Write::DeleteFriend(1, 2)),
        Step::Write(Write::AddFriend(8, 9)),
        Step::Kill(
            vec![Write::PutProfile(8, 4), Write::DeleteFriend(8, 1), Write::PutData(2, 7, 9000)],
            Write::PutUser { uid: 9, profile: 1, friends: vec![8, 3], data: None },
        ),
        Step::Relayout(5),
        Step::Write(Write::PutUser { uid: 8, profile: 2, friends: vec![3], data: None }),
        Step::Reopen,
        Step::Write(Write::PutData(8, 1, 0)),
    ]);
}
