//! Profiles, a register per user written by `PUT /users/{uid}/profile` and by
//! `PUT /users/{uid}` (every write's name is unique in a run): reads during the run must not
//! be older than their level allows, and the quiet profile must be the name of a write
//! nothing overwrote.

use std::collections::BTreeMap;

use super::pairs::{final_verdict, judge_read};
use super::register::{Register, Write};
use super::{Anomalies, Bounds, State};
use crate::trial::history::{Call, Op, Value};

/// Judges every profile read and the quiet profiles.
pub fn check(ops: &[Op], initial: &State, quiet: &State, bounds: &Bounds, found: &mut Anomalies) {
    let mut writes: BTreeMap<u64, Vec<Write<String>>> = BTreeMap::new();
    for op in ops {
        if let Call::PutProfile { uid, name } | Call::PutUser { uid, name, .. } = &op.call {
            writes.entry(*uid).or_default().push(Write {
                op: op.id,
                invoke: op.invoke,
                complete: op.complete,
                outcome: op.outcome,
                value: name.clone(),
                warned: false,
            });
        }
    }
    let mut registers = BTreeMap::new();
    for (uid, ws) in writes {
        if let Some(init) = initial.profiles.get(&uid) {
            registers.insert(uid, Register::new(init.clone(), ws));
        }
    }
    for op in ops {
        let (Call::Profile { uid, strong }, Some(Value::Profile { name }), Some(done)) =
            (&op.call, &op.value, op.complete)
        else {
            continue;
        };
        let Some(r) = registers.get(uid) else { continue };
        let verdict = r.judge(op.invoke, done, name);
        let bound = bounds.profile_at(op.invoke);
        judge_read(verdict, *strong, bound, bound, found, || {
            format!("profile of {uid} read at {:.0} ms: {name:?}", op.invoke)
        });
    }
    for (uid, r) in &registers {
        if let Some(name) = quiet.profiles.get(uid) {
            final_verdict(r.judge_final(name), found, || {
                format!("profile of {uid} once quiet: {name:?}")
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{ok, read};
    use super::*;

    fn names(p: &[(u64, &str)]) -> State {
        State { profiles: p.iter().map(|(u, n)| (*u, n.to_string())).collect(), ..State::default() }
    }

    #[test]
    fn a_profile_reverted_or_overwritten_is_reported() {
        let ops = [
            ok(1, Call::PutProfile { uid: 7, name: "a".into() }, (0.0, 5.0)),
            ok(2, Call::PutUser { uid: 7, name: "b".into(), friends: vec![] }, (10.0, 20.0)),
            read(
                3,
                Call::Profile { uid: 7, strong: true },
                (25.0, 26.0),
                Value::Profile { name: "a".into() },
            ),
            read(
                4,
                Call::Profile { uid: 7, strong: false },
                (25.0, 26.0),
                Value::Profile { name: "a".into() },
            ),
        ];
        let initial = names(&[(7, "init")]);
        let mut found = Anomalies::default();
        check(&ops, &initial, &names(&[(7, "b")]), &Bounds::default(), &mut found);
        assert_eq!(found.count("stale-strong"), 1);
        assert_eq!(found.total(), 1, "the eventual read is within its bound: {found:?}");
        let mut found = Anomalies::default();
        check(&ops, &initial, &names(&[(7, "a")]), &Bounds::default(), &mut found);
        assert_eq!(found.count("lost"), 1);
        let mut found = Anomalies::default();
        check(&ops, &initial, &names(&[(7, "zz")]), &Bounds::default(), &mut found);
        assert_eq!(found.count("overwritten"), 1);
    }

    #[test]
    fn an_eventual_profile_may_lag_by_the_replica_outages_before_it_and_no_more() {
        // Written at 1 s, overwritten at 5 s; read at ONE at 29.5 s with the first value:
        // 24.5 s behind, as a replica paused from 2.7 to 15.8 s and from 18 to 29 s answers.
        let ops = [
            ok(1, Call::PutProfile { uid: 7, name: "a".into() }, (900.0, 960.0)),
            ok(2, Call::PutProfile { uid: 7, name: "b".into() }, (5_000.0, 5_020.0)),
            read(
                3,
                Call::Profile { uid: 7, strong: false },
                (29_500.0, 29_520.0),
                Value::Profile { name: "a".into() },
            ),
        ];
        let (initial, quiet) = (names(&[(7, "init")]), names(&[(7, "b")]));
        let mut found = Anomalies::default();
        check(&ops, &initial, &quiet, &Bounds::default(), &mut found);
        assert_eq!(found.count("stale-eventual"), 1, "no outage: 10 s at most");
        let paused = Bounds {
            outages_ms: vec![(2_700.0, 15_800.0), (18_000.0, 29_000.0)],
            ..Bounds::default()
        };
        let mut found = Anomalies::default();
        check(&ops, &initial, &quiet, &paused, &mut found);
        assert_eq!(found.total(), 0, "24.1 s of outages before the read: {found:?}");
        // One outage of 11 s is not enough for 24.5 s behind.
        let short = Bounds { outages_ms: vec![(18_000.0, 29_000.0)], ..Bounds::default() };
        let mut found = Anomalies::default();
        check(&ops, &initial, &quiet, &short, &mut found);
        assert_eq!(found.count("stale-eventual"), 1);
        // An outage after the read counts for nothing; one under way counts up to the read.
        let later = Bounds { outages_ms: vec![(2_000.0, 40_000.0)], ..Bounds::default() };
        assert_eq!(later.profile_at(29_500.0), 10_000.0 + 27_500.0);
        assert_eq!(later.profile_at(1_000.0), 10_000.0);
    }
}
