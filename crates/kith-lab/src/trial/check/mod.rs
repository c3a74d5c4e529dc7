//! The checker: a run's folded history and the state read once the system was quiet,
//! judged kind by kind. Each kind is a small pure function over plain data, tested on
//! hand-made histories; [`check`] runs them all and counts anomalies by kind, with a few
//! examples of each.

mod feeds;
mod pairs;
mod posts;
mod profiles;
pub mod register;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::trial::history::Op;

/// Every kind of anomaly the checker reports (each present in a report, 0 when none).
pub const KINDS: [&str; 16] = [
    // An acknowledged write missing from the quiet state (a friendship, follow, profile or
    // post), or undone by an older value.
    "lost",
    // A post's content or a profile changed to a value no write of it wrote.
    "overwritten",
    // One write applied twice: a key answered with two ids, or one post stored twice.
    "applied-twice",
    // Two different acknowledged posts under one id.
    "id-shared",
    // A friendship on one side only, once quiet.
    "one-sided",
    // A follow in the follower's followees but not the followee's followers, or the other
    // way round, once quiet.
    "follow-one-sided",
    // A post readable by id but missing from its author's posts, or the other way round.
    "partial",
    // A write that was refused (4xx, 503, 507) yet took effect.
    "failed-applied",
    // A feed, once quiet, lacks a post that a pull of the same followees returns.
    "feed-missing",
    // A feed, once quiet, holds a post that a pull of the same followees does not.
    "feed-extra",
    // A follow count different from the follows it counts, once quiet.
    "count-drift",
    // A strong read older than a write acknowledged before it began.
    "stale-strong",
    // A read of follows older than a follow or unfollow acknowledged before it began.
    "follow-stale",
    // An eventual read staler than its documented bound.
    "stale-eventual",
    // A read of a value nothing wrote, or wrote only after the read.
    "foreign-read",
    // A server that answered no read of a user's feed once quiet, tried for a few seconds:
    // the faults left it unable to serve.
    "unavailable-quiet",
];

/// How stale an eventual read may be (milliseconds), as docs/service.md states it.
#[derive(Clone, Debug, Serialize)]
pub struct Bounds {
    /// An eventual friend list, behind a change whose answer carried no warning.
    pub friends_ms: f64,
    /// Behind a change whose answer warned that the cache was not updated: the lists'
    /// time to live.
    pub friends_warned_ms: f64,
    /// An eventual profile (a read at consistency ONE), with every replica reachable all
    /// along.
    pub profile_ms: f64,
    /// The Cassandra nodes' outages (killed, paused, cut off, disk full: from, to, ms from
    /// the run's start). A replica that missed writes answers reads at ONE with what it
    /// holds until hinted handoff reaches it, so an eventual profile may lag by
    /// `profile_ms` more than the outages before it.
    pub outages_ms: Vec<(f64, f64)>,
}

impl Default for Bounds {
    fn default() -> Bounds {
        Bounds {
            friends_ms: 1_000.0,
            friends_warned_ms: 60_000.0,
            profile_ms: 10_000.0,
            outages_ms: Vec::new(),
        }
    }
}

impl Bounds {
    /// How far behind an eventual profile read that began at `at_ms` may be.
    pub fn profile_at(&self, at_ms: f64) -> f64 {
        let out: f64 =
            self.outages_ms.iter().filter(|o| o.0 < at_ms).map(|&(a, b)| b.min(at_ms) - a).sum();
        self.profile_ms + out
    }
}

/// What was read of the users a run touches (before it, and once it was quiet).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct State {
    /// Whole friend lists, ascending.
    pub friends: BTreeMap<u64, Vec<u64>>,
    /// Profile names.
    pub profiles: BTreeMap<u64, String>,
    /// Followees and followers, with the counts beside them.
    pub follows: BTreeMap<u64, Follows>,
    /// Per author, the posts in the store's author index: (id, content).
    pub author_posts: BTreeMap<u64, Vec<(u64, String)>>,
    /// Posts read by id: (author, content), `None` for not found.
    pub posts: BTreeMap<u64, Option<(u64, String)>>,
    /// Per server, each user's first feed page (post ids as returned).
    pub feeds: Vec<BTreeMap<u64, Vec<u64>>>,
    /// Each user's first page of a pull of their followees' posts, read from the store.
    pub pulls: BTreeMap<u64, Vec<u64>>,
    /// Feed reads once quiet that no try answered: (server, user, the last answer).
    #[serde(default)]
    pub unavailable: Vec<(usize, u64, String)>,
}

/// A user's follows.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Follows {
    pub followees: Vec<u64>,
    pub followers: Vec<u64>,
    pub followee_count: u64,
    pub follower_count: u64,
}

/// Anomalies by kind, with up to [`EXAMPLES`] descriptions of each.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Anomalies {
    pub counts: BTreeMap<String, u64>,
    pub examples: BTreeMap<String, Vec<String>>,
}

/// Examples kept per kind.
pub const EXAMPLES: usize = 5;

impl Default for Anomalies {
    fn default() -> Anomalies {
        Anomalies {
            counts: KINDS.iter().map(|k| (k.to_string(), 0)).collect(),
            examples: BTreeMap::new(),
        }
    }
}

impl Anomalies {
    /// Counts one anomaly of `kind`, keeping its description among the first few.
    pub fn add(&mut self, kind: &str, what: impl FnOnce() -> String) {
        debug_assert!(KINDS.contains(&kind), "unknown kind {kind}");
        *self.counts.entry(kind.to_string()).or_insert(0) += 1;
        let ex = self.examples.entry(kind.to_string()).or_default();
        if ex.len() < EXAMPLES {
            ex.push(what());
        }
    }

    /// All anomalies.
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    /// The count of `kind`.
    #[cfg(test)]
    pub fn count(&self, kind: &str) -> u64 {
        self.counts.get(kind).copied().unwrap_or(0)
    }
}

/// Judges a run: `ops` (folded), the state before it and the state once quiet.
pub fn check(ops: &[Op], initial: &State, quiet: &State, bounds: &Bounds) -> Anomalies {
    let mut found = Anomalies::default();
    pairs::friendships(ops, initial, quiet, bounds, &mut found);
    pairs::follows(ops, initial, quiet, &mut found);
    profiles::check(ops, initial, quiet, bounds, &mut found);
    posts::check(ops, quiet, &mut found);
    feeds::check(quiet, &mut found);
    for (server, uid, answer) in &quiet.unavailable {
        found.add("unavailable-quiet", || format!("server {server}: feed of {uid}: {answer}"));
    }
    found
}

#[cfg(test)]
pub(crate) mod testing {
    use crate::trial::history::{Call, Op, Outcome, Value};

    /// A hand-made operation for the checkers' tests.
    pub fn op(
        id: u64,
        call: Call,
        t: (f64, Option<f64>),
        outcome: Outcome,
        value: Option<Value>,
    ) -> Op {
        let ids = match &value {
            Some(Value::PostId { id }) => vec![*id],
            _ => Vec::new(),
        };
        let answers = Vec::new();
        Op { id, call, invoke: t.0, complete: t.1, outcome, value, warned: false, ids, answers }
    }

    /// An acknowledged write.
    pub fn ok(id: u64, call: Call, t: (f64, f64)) -> Op {
        op(id, call, (t.0, Some(t.1)), Outcome::Ok, None)
    }

    /// A read that returned `value`.
    pub fn read(id: u64, call: Call, t: (f64, f64), value: Value) -> Op {
        op(id, call, (t.0, Some(t.1)), Outcome::Ok, Some(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_unavailable_once_quiet_is_an_anomaly() {
        let quiet =
            State { unavailable: vec![(1, 7, "Unknown (Some(503))".into())], ..State::default() };
        let found = check(&[], &State::default(), &quiet, &Bounds::default());
        assert_eq!((found.count("unavailable-quiet"), found.total()), (1, 1));
        assert_eq!(found.counts.len(), KINDS.len(), "every kind reported, 0 when none");
    }
}
