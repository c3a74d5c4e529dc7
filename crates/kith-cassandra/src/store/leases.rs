//! Server numbers' leases judged by watching the rows, not by any clock's time of day.
//!
//! A holder rewrites its row's value (`<owner>@<beat>`, a new beat each time) by a
//! lightweight transaction at every renewal. Another process counts a lease as lapsed
//! once it has read the same value for at least the lease, by its own monotonic clock,
//! and takes the number over with a transaction conditioned on that value. The holder
//! stops using the number a margin before the lease has passed since it sent its last
//! renewal that held, and that renewal was written before the watcher first read its
//! value, so the two never use one number at once. Nothing here depends on the wall
//! clocks of the Cassandra nodes or of the servers: with the lease a Cassandra TTL, a
//! coordinator whose clock was set 6 s or more behind wrote leases that had expired when
//! written, and one set ahead read live leases as expired (`skew-cassandra` trials).

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// A row's value for `owner` at renewal `beat`.
pub(crate) fn stamp(owner: &str, beat: u64) -> String {
    format!("{owner}@{beat}")
}

/// The owner and beat of a row's value (a value with no beat, from before this format of
/// the value, has beat 0).
pub(crate) fn split(value: &str) -> (&str, u64) {
    match value.rsplit_once('@') {
        Some((owner, beat)) => match beat.parse() {
            Ok(beat) => (owner, beat),
            Err(_) => (value, 0),
        },
        None => (value, 0),
    }
}

/// What this process has seen of the `servers` rows, and the values of the rows it holds.
#[derive(Debug, Default)]
pub(crate) struct Watch {
    /// Per number: the value read last, and when this process first read it.
    seen: HashMap<u16, (String, Instant)>,
    /// Per number this process holds: the value it last wrote or found its own.
    mine: HashMap<u16, String>,
    /// The last beat this process wrote: every value it writes has a beat of its own, so a
    /// value read back is this write's only if it carries this write's beat, and a value
    /// never comes back to a row (which a watcher would take for one never changed).
    beat: u64,
}

/// One row as watched: its number, its value, and whether its lease has lapsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Watched {
    pub n: u16,
    pub value: String,
    pub lapsed: bool,
}

impl Watch {
    /// Records the rows (every row of the table) read just before `now`; returns each
    /// with whether its value has stood unchanged here for at least `lease`. A number
    /// without a row is forgotten: a row made later starts a new watch.
    pub(crate) fn observe(
        &mut self,
        rows: &[(u16, String)],
        now: Instant,
        lease: Duration,
    ) -> Vec<Watched> {
        self.seen.retain(|n, _| rows.iter().any(|(m, _)| m == n));
        rows.iter()
            .map(|(n, value)| {
                let since = match self.seen.get(n) {
                    Some((seen, since)) if seen == value => *since,
                    _ => {
                        self.seen.insert(*n, (value.clone(), now));
                        now
                    }
                };
                Watched { n: *n, value: value.clone(), lapsed: now.duration_since(since) >= lease }
            })
            .collect()
    }

    /// A beat never written before by this process (owners are unique to a process).
    pub(crate) fn next_beat(&mut self) -> u64 {
        self.beat += 1;
        self.beat
    }

    /// The value this process last wrote to `n` for `owner`, if it holds it.
    pub(crate) fn mine(&self, n: u16, owner: &str) -> Option<String> {
        self.mine.get(&n).filter(|v| split(v).0 == owner).cloned()
    }

    /// `n` now holds `value`, written or found by this process as its own.
    pub(crate) fn hold(&mut self, n: u16, value: String) {
        self.mine.insert(n, value);
    }

    /// `n` is no longer this process's.
    pub(crate) fn let_go(&mut self, n: u16) {
        self.mine.remove(&n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_carry_owner_and_beat() {
        assert_eq!(stamp("kith-1-ab", 7), "kith-1-ab@7");
        assert_eq!(split("kith-1-ab@7"), ("kith-1-ab", 7));
        assert_eq!(split("a@b@3"), ("a@b", 3));
        assert_eq!(split("plain"), ("plain", 0));
        assert_eq!(split("odd@x"), ("odd@x", 0));
    }

    #[test]
    fn a_lease_lapses_only_once_one_value_stood_for_the_lease() {
        let lease = Duration::from_secs(5);
        let t0 = Instant::now();
        let mut w = Watch::default();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let lapsed = |got: Vec<Watched>| got.iter().map(|r| (r.n, r.lapsed)).collect::<Vec<_>>();
        let rows = vec![(1, stamp("a", 1)), (2, stamp("b", 1))];
        assert_eq!(lapsed(w.observe(&rows, at(0), lease)), [(1, false), (2, false)]);
        assert_eq!(lapsed(w.observe(&rows, at(4), lease)), [(1, false), (2, false)]);
        // 1 renewed (a new beat) at 4-6 s: its watch starts again; 2 did not.
        let renewed = vec![(1, stamp("a", 2)), (2, stamp("b", 1))];
        assert_eq!(lapsed(w.observe(&renewed, at(6), lease)), [(1, false), (2, true)]);
        assert_eq!(lapsed(w.observe(&renewed, at(10), lease)), [(1, false), (2, true)]);
        assert_eq!(lapsed(w.observe(&renewed, at(11), lease)), [(1, true), (2, true)]);
        // A row deleted and made again is watched anew.
        assert_eq!(lapsed(w.observe(&[(1, stamp("a", 2))], at(12), lease)), [(1, true)]);
        assert_eq!(lapsed(w.observe(&renewed, at(13), lease)), [(1, true), (2, false)]);
    }

    #[test]
    fn held_values_belong_to_their_owner() {
        let mut w = Watch::default();
        let (a, b) = (w.next_beat(), w.next_beat());
        assert!(b > a, "beats never repeat");
        w.hold(3, stamp("a", 4));
        assert_eq!(w.mine(3, "a"), Some(stamp("a", 4)));
        assert_eq!(w.mine(3, "b"), None);
        assert_eq!(w.mine(4, "a"), None);
        w.let_go(3);
        assert_eq!(w.mine(3, "a"), None);
    }
}
