//! Friendships and follows, each pair a register of one bit. A friendship {a, b} is
//! written by adding or deleting it and by `PUT /users/{a}` or `/users/{b}` with a whole
//! friend list, and read in either user's list; a follow a → b by follow and unfollow, and
//! read in a's followees and b's followers. Once quiet, each pair must hold the value of a
//! write nothing overwrote, on both sides, and the follow counts must count the follows.

use std::collections::{BTreeMap, BTreeSet};

use super::register::{Register, Verdict, Write};
use super::{Anomalies, Bounds, State};
use crate::trial::history::{Call, Op, Value};

/// An unordered pair, smaller id first.
fn pair(a: u64, b: u64) -> (u64, u64) {
    (a.min(b), a.max(b))
}

fn write_of(op: &Op, value: bool) -> Write<bool> {
    Write {
        op: op.id,
        invoke: op.invoke,
        complete: op.complete,
        outcome: op.outcome,
        value,
        warned: op.warned,
    }
}

/// Every user whose friend list a run can change, and the users each may be paired with.
fn friendship_universe(ops: &[Op], initial: &State, quiet: &State) -> BTreeMap<u64, BTreeSet<u64>> {
    let mut uni: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    let mut link = |a: u64, b: u64| {
        if a != b {
            uni.entry(a).or_default().insert(b);
            uni.entry(b).or_default().insert(a);
        }
    };
    for state in [initial, quiet] {
        for (&u, fs) in &state.friends {
            fs.iter().for_each(|&f| link(u, f));
        }
    }
    for op in ops {
        match (&op.call, &op.value) {
            (Call::AddFriend { u, v } | Call::DeleteFriend { u, v }, _) => link(*u, *v),
            (Call::PutUser { uid, friends, .. }, _) => friends.iter().for_each(|&f| link(*uid, f)),
            (Call::Friends { uid, .. }, Some(Value::Friends { friends })) => {
                friends.iter().for_each(|&f| link(*uid, f))
            }
            _ => {}
        }
    }
    uni
}

/// Friendships: stale reads during the run, lost writes and one-sided pairs once quiet.
pub fn friendships(
    ops: &[Op],
    initial: &State,
    quiet: &State,
    bounds: &Bounds,
    found: &mut Anomalies,
) {
    let uni = friendship_universe(ops, initial, quiet);
    let mut writes: BTreeMap<(u64, u64), Vec<Write<bool>>> = BTreeMap::new();
    for op in ops {
        match &op.call {
            Call::AddFriend { u, v } => {
                writes.entry(pair(*u, *v)).or_default().push(write_of(op, true))
            }
            Call::DeleteFriend { u, v } => {
                writes.entry(pair(*u, *v)).or_default().push(write_of(op, false))
            }
            Call::PutUser { uid, friends, .. } => {
                for &x in uni.get(uid).into_iter().flatten() {
                    let value = friends.contains(&x);
                    writes.entry(pair(*uid, x)).or_default().push(write_of(op, value));
                }
            }
            _ => {}
        }
    }
    // Only pairs some write touched are judged, from the value both users' lists agreed on
    // before the run (a pair one-sided before it was reported by the run that made it so,
    // and is judged only once quiet).
    let initial_of = |(a, b): (u64, u64)| {
        let side = |u: u64, v: u64| initial.friends.get(&u).map(|f| f.binary_search(&v).is_ok());
        match (side(a, b), side(b, a)) {
            (Some(x), Some(y)) if x != y => None,
            (x, y) => x.or(y),
        }
    };
    let mut registers: BTreeMap<(u64, u64), Register<bool>> = BTreeMap::new();
    for (p, ws) in writes {
        if let Some(init) = initial_of(p) {
            registers.insert(p, Register::new(init, ws));
        }
    }
    for op in ops {
        let (Call::Friends { uid, strong }, Some(Value::Friends { friends }), Some(done)) =
            (&op.call, &op.value, op.complete)
        else {
            continue;
        };
        for &x in uni.get(uid).into_iter().flatten() {
            let Some(r) = registers.get(&pair(*uid, x)) else { continue };
            let has = friends.binary_search(&x).is_ok();
            let verdict = r.judge(op.invoke, done, &has);
            let what = || {
                format!(
                    "friends of {uid} read at {:.0} ms: {x} {}",
                    op.invoke,
                    if has { "present" } else { "absent" }
                )
            };
            judge_read(verdict, *strong, bounds.friends_ms, bounds.friends_warned_ms, found, what);
        }
    }
    let side = |u: u64, v: u64| quiet.friends.get(&u).map(|f| f.binary_search(&v).is_ok());
    for (&u, friends) in &quiet.friends {
        for &f in friends {
            if side(f, u) == Some(false) {
                found.add("one-sided", || format!("friendship {u}-{f}: in {u}'s list only"));
            }
        }
    }
    for (&(a, b), r) in &registers {
        for (u, v) in [(a, b), (b, a)] {
            let Some(value) = side(u, v) else { continue };
            final_verdict(r.judge_final(&value), found, || {
                format!("friendship {a}-{b} in {u}'s list, once quiet: {value}")
            });
        }
    }
}

/// Follows: stale reads, lost writes, one-sided follows and count drift.
pub fn follows(ops: &[Op], initial: &State, quiet: &State, found: &mut Anomalies) {
    let mut writes: BTreeMap<(u64, u64), Vec<Write<bool>>> = BTreeMap::new();
    for op in ops {
        match &op.call {
            Call::Follow { uid, target } => {
                writes.entry((*uid, *target)).or_default().push(write_of(op, true))
            }
            Call::Unfollow { uid, target } => {
                writes.entry((*uid, *target)).or_default().push(write_of(op, false))
            }
            _ => {}
        }
    }
    let mut registers = BTreeMap::new();
    // A follow on one side only before the run (an earlier run's, reported by that run) has
    // no one value to start from: its reads are not judged, only its state once quiet.
    let mut split = BTreeSet::new();
    for ((a, b), ws) in writes {
        if let Some(f) = initial.follows.get(&a) {
            let out = f.followees.contains(&b);
            if initial.follows.get(&b).is_some_and(|g| g.followers.contains(&a) != out) {
                split.insert((a, b));
            }
            registers.insert((a, b), Register::new(out, ws));
        }
    }
    for op in ops {
        let (Call::Follows { uid }, Some(Value::Follows { followees, followers, .. }), Some(done)) =
            (&op.call, &op.value, op.complete)
        else {
            continue;
        };
        for (&(a, b), r) in
            registers.range((*uid, 0)..=(*uid, u64::MAX)).filter(|(p, _)| !split.contains(*p))
        {
            let has = followees.contains(&b);
            judge_follow_read(r.judge(op.invoke, done, &has), found, || {
                format!("followees of {a} read at {:.0} ms: {b} {has}", op.invoke)
            });
        }
        for (&(a, b), r) in registers.iter().filter(|(p, _)| p.1 == *uid && !split.contains(*p)) {
            let has = followers.contains(&a);
            judge_follow_read(r.judge(op.invoke, done, &has), found, || {
                format!("followers of {b} read at {:.0} ms: {a} {has}", op.invoke)
            });
        }
    }
    for (&(a, b), r) in &registers {
        let out = quiet.follows.get(&a).map(|f| f.followees.contains(&b));
        let inn = quiet.follows.get(&b).map(|f| f.followers.contains(&a));
        if let (Some(o), Some(i)) = (out, inn)
            && o != i
        {
            found.add("follow-one-sided", || {
                format!("follow {a}->{b}: in followees {o}, in followers {i}")
            });
        }
        if let Some(o) = out {
            final_verdict(r.judge_final(&o), found, || format!("follow {a}->{b} once quiet: {o}"));
        }
    }
    for (u, f) in &quiet.follows {
        if f.followee_count != f.followees.len() as u64
            || f.follower_count != f.followers.len() as u64
        {
            found.add("count-drift", || {
                format!(
                    "user {u}: followee count {} for {} followees, follower count {} for {}",
                    f.followee_count,
                    f.followees.len(),
                    f.follower_count,
                    f.followers.len()
                )
            });
        }
    }
}

/// Counts a read's verdict: stale beyond its bound (strong reads have none), a refused
/// write seen, or a value nothing wrote.
pub(super) fn judge_read(
    verdict: Verdict,
    strong: bool,
    bound_ms: f64,
    warned_bound_ms: f64,
    found: &mut Anomalies,
    what: impl FnOnce() -> String,
) {
    match verdict {
        Verdict::Fine => {}
        Verdict::Stale { lag_ms, .. } if strong => {
            found.add("stale-strong", || format!("{} ({lag_ms:.0} ms behind)", what()))
        }
        Verdict::Stale { lag_ms, lag_unwarned_ms, .. } => {
            if lag_unwarned_ms > bound_ms || lag_ms > warned_bound_ms {
                found.add("stale-eventual", || format!("{} ({lag_ms:.0} ms behind)", what()))
            }
        }
        Verdict::FailedWrite { op } => {
            found.add("failed-applied", || format!("{} (refused op {op})", what()))
        }
        Verdict::Foreign => found.add("foreign-read", what),
    }
}

/// Counts a follow read's verdict: a stale one is a follow's own kind.
fn judge_follow_read(verdict: Verdict, found: &mut Anomalies, what: impl FnOnce() -> String) {
    match verdict {
        Verdict::Stale { lag_ms, .. } => {
            found.add("follow-stale", || format!("{} ({lag_ms:.0} ms behind)", what()))
        }
        v => judge_read(v, true, 0.0, 0.0, found, what),
    }
}

/// Counts a quiet read's verdict: anything but a write nothing overwrote is lost.
pub(super) fn final_verdict(
    verdict: Verdict,
    found: &mut Anomalies,
    what: impl FnOnce() -> String,
) {
    match verdict {
        Verdict::Fine => {}
        Verdict::Stale { op, .. } => {
            found.add("lost", || format!("{} (overwritten op {op} shows)", what()))
        }
        Verdict::FailedWrite { op } => {
            found.add("failed-applied", || format!("{} (refused op {op})", what()))
        }
        Verdict::Foreign => found.add("overwritten", what),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{ok, read};
    use super::super::{Follows, State};
    use super::*;

    fn state(friends: &[(u64, &[u64])]) -> State {
        State {
            friends: friends.iter().map(|(u, f)| (*u, f.to_vec())).collect(),
            ..State::default()
        }
    }

    #[test]
    fn a_friendship_on_one_side_once_quiet_is_reported() {
        let ops = [ok(1, Call::AddFriend { u: 1, v: 2 }, (0.0, 5.0))];
        let initial = state(&[(1, &[]), (2, &[])]);
        let mut found = Anomalies::default();
        friendships(
            &ops,
            &initial,
            &state(&[(1, &[2]), (2, &[1])]),
            &Bounds::default(),
            &mut found,
        );
        assert_eq!(found.total(), 0, "{found:?}");
        friendships(&ops, &initial, &state(&[(1, &[2]), (2, &[])]), &Bounds::default(), &mut found);
        assert_eq!(found.count("one-sided"), 1);
        assert_eq!(found.count("lost"), 1, "2's side lost the acknowledged add");
    }

    #[test]
    fn a_put_user_overwrites_every_pair_of_its_user() {
        let ops = [
            ok(1, Call::AddFriend { u: 1, v: 3 }, (0.0, 5.0)),
            ok(2, Call::PutUser { uid: 1, name: "n".into(), friends: vec![2] }, (10.0, 20.0)),
        ];
        let initial = state(&[(1, &[]), (2, &[]), (3, &[])]);
        let quiet = state(&[(1, &[2]), (2, &[1]), (3, &[])]);
        let mut found = Anomalies::default();
        friendships(&ops, &initial, &quiet, &Bounds::default(), &mut found);
        assert_eq!(found.total(), 0, "{found:?}");
        // 1-3 left behind after the PUT was acknowledged.
        let quiet = state(&[(1, &[2, 3]), (2, &[1]), (3, &[1])]);
        let mut found = Anomalies::default();
        friendships(&ops, &initial, &quiet, &Bounds::default(), &mut found);
        assert_eq!(found.count("lost"), 2, "{found:?}");
    }

    #[test]
    fn stale_friend_reads_count_by_consistency_and_bound() {
        let add = ok(1, Call::AddFriend { u: 1, v: 2 }, (0.0, 5.0));
        let strong = read(
            2,
            Call::Friends { uid: 1, strong: true },
            (6.0, 7.0),
            Value::Friends { friends: vec![] },
        );
        let early = read(
            3,
            Call::Friends { uid: 1, strong: false },
            (6.0, 7.0),
            Value::Friends { friends: vec![] },
        );
        let late = read(
            4,
            Call::Friends { uid: 1, strong: false },
            (2000.0, 2001.0),
            Value::Friends { friends: vec![] },
        );
        let initial = state(&[(1, &[]), (2, &[])]);
        let quiet = state(&[(1, &[2]), (2, &[1])]);
        let mut found = Anomalies::default();
        friendships(&[add, strong, early, late], &initial, &quiet, &Bounds::default(), &mut found);
        assert_eq!(found.count("stale-strong"), 1);
        assert_eq!(found.count("stale-eventual"), 1, "only the read 1995 ms behind");
        assert_eq!(found.total(), 2);
    }

    #[test]
    fn follow_counts_and_sides_are_checked() {
        let f = |ees: &[u64], ers: &[u64], c: (u64, u64)| Follows {
            followees: ees.to_vec(),
            followers: ers.to_vec(),
            followee_count: c.0,
            follower_count: c.1,
        };
        let ops = [ok(1, Call::Follow { uid: 1, target: 2 }, (0.0, 5.0))];
        let initial = State {
            follows: [(1, f(&[], &[], (0, 0))), (2, f(&[], &[], (0, 0)))].into(),
            ..State::default()
        };
        let good = State {
            follows: [(1, f(&[2], &[], (1, 0))), (2, f(&[], &[1], (0, 1)))].into(),
            ..State::default()
        };
        let mut found = Anomalies::default();
        follows(&ops, &initial, &good, &mut found);
        assert_eq!(found.total(), 0, "{found:?}");
        let bad = State {
            follows: [(1, f(&[2], &[], (2, 0))), (2, f(&[], &[], (0, 1)))].into(),
            ..State::default()
        };
        follows(&ops, &initial, &bad, &mut found);
        assert_eq!(found.count("count-drift"), 2);
        assert_eq!(found.count("follow-one-sided"), 1);
        // One-sided before the run (1 in 2's followers only): reads of either side are not
        // judged against one starting value, while the state once quiet still is.
        let split = State {
            follows: [(1, f(&[], &[], (0, 0))), (2, f(&[], &[1], (0, 1)))].into(),
            ..State::default()
        };
        let early = Value::Follows {
            followees: vec![],
            followers: vec![1],
            followee_count: 0,
            follower_count: 1,
        };
        let late = ok(1, Call::Follow { uid: 1, target: 2 }, (10.0, 15.0));
        let reads = [late, read(2, Call::Follows { uid: 2 }, (0.0, 1.0), early)];
        let mut found = Anomalies::default();
        follows(&reads, &split, &good, &mut found);
        assert_eq!(found.total(), 0, "{found:?}");
        follows(&reads, &initial, &good, &mut found);
        assert_eq!(found.count("foreign-read"), 1, "a follower nothing wrote, from agreed sides");
    }
}
