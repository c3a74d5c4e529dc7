//! Routing that puts last, for a few seconds, a node whose requests keep being overtaken.
//!
//! A node cut off from the other nodes but not from kith answers at once what it can do
//! alone (keepalives, reads at ONE), and every QUORUM request it coordinates only after its
//! timeout. The driver sends an idempotent request to a second node after 250 ms
//! (`schema::SPECULATIVE_AFTER`) and cancels the first attempt when the second answers, so
//! the slow answers are never measured, and the driver's latency awareness keeps the node
//! first in a third of all plans: each of those requests waits the speculative delay, and a
//! kith request made of several statements almost always meets one.
//!
//! [`Overtaken`] wraps the driver's policy and watches the plans it hands out: when a plan's
//! second node is asked for, its first node was too slow or failed. A node with
//! [`IN_A_ROW`] strikes (such a plan, or an attempt failing for want of replicas or a
//! connection) and no answer of its own in between (at a level that needs other replicas: a
//! cut-off node still answers reads at ONE) goes after every other node for
//! [`PUT_LAST_FOR`], then leads plans again and is judged anew; put last again with no
//! answer in between, for twice as long, up to [`PUT_LAST_AT_MOST`]; of nodes put last, the
//! one put last most recently goes at the very end. It stays in every plan, so a request
//! the other nodes cannot serve still reaches it. (Judged instead by the share
//! of its plans overtaken over a window, it was judged with the answers from before the
//! fault, and put last 2 s late.)

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use scylla::cluster::{ClusterState, NodeAddr};
use scylla::errors::{DbError, RequestAttemptError};
use scylla::policies::load_balancing::{FallbackPlan, LoadBalancingPolicy, RoutingInfo};
use scylla::routing::Shard;
use scylla::statement::Consistency;

type NodeRef<'a> = &'a Arc<scylla::cluster::Node>;

/// Strikes against a node in a row, with no answer of its own in between, that put it last:
/// a plan it led going on to its second node, or an attempt of its failing for want of
/// replicas or a connection.
const IN_A_ROW: usize = 3;
/// How long a node goes last the first time; each time again with no answer of its own in
/// between, twice as long, up to [`PUT_LAST_AT_MOST`]. A cut lasting longer would otherwise
/// hold some requests every 5 s: the ones that cannot go to a second node (follow switches,
/// not idempotent) wait for their timeout on it.
const PUT_LAST_FOR: Duration = Duration::from_secs(5);
const PUT_LAST_AT_MOST: Duration = Duration::from_secs(20);

/// One node's record: strikes since its last answer, until when it goes last, and for how
/// long the next time.
#[derive(Debug)]
struct Record {
    strikes: usize,
    last_until: Option<Instant>,
    /// When it was last put last.
    put_at: Option<Instant>,
    next_for: Duration,
}

impl Default for Record {
    fn default() -> Self {
        Record { strikes: 0, last_until: None, put_at: None, next_for: PUT_LAST_FOR }
    }
}

/// The records of every node, by a key naming it.
#[derive(Debug)]
struct Judge<K> {
    nodes: HashMap<K, Record>,
}

impl<K: std::hash::Hash + Eq + Copy> Judge<K> {
    fn new() -> Self {
        Judge { nodes: HashMap::new() }
    }

    /// Whether `node` goes last at `now`.
    #[cfg(test)]
    fn is_last(&self, node: K, now: Instant) -> bool {
        self.last_since(node, now).is_some()
    }

    /// When `node` was put last, if it goes last at `now`.
    fn last_since(&self, node: K, now: Instant) -> Option<Instant> {
        let r = self.nodes.get(&node)?;
        r.last_until.filter(|&until| now < until).and(r.put_at)
    }

    /// `node` answered a request that needed other replicas than itself.
    fn answered(&mut self, node: K) {
        if let Some(r) = self.nodes.get_mut(&node) {
            r.strikes = 0;
            r.next_for = PUT_LAST_FOR;
        }
    }

    /// A strike against `node` at `now`; returns whether `node` now goes last.
    fn strike(&mut self, node: K, now: Instant) -> bool {
        let r = self.nodes.entry(node).or_default();
        r.strikes += 1;
        if r.strikes >= IN_A_ROW {
            r.last_until = Some(now + r.next_for);
            r.put_at = Some(now);
            r.next_for = (r.next_for * 2).min(PUT_LAST_AT_MOST);
            // Judged anew when it leads plans again.
            r.strikes = 0;
            return true;
        }
        false
    }
}

/// Whether an answer at `consistency` shows that its coordinator reaches other replicas: an
/// answer at ONE may come from a node cut off from every other.
fn needs_others(consistency: Consistency) -> bool {
    !matches!(consistency, Consistency::One | Consistency::LocalOne | Consistency::Any)
}

/// Whether a failed attempt counts against its node: no replicas or no connection, not a
/// refusal of the request itself.
fn counts_against(error: &RequestAttemptError) -> bool {
    match error {
        RequestAttemptError::BrokenConnectionError(_)
        | RequestAttemptError::UnableToAllocStreamId => true,
        RequestAttemptError::DbError(e, _) => matches!(
            e,
            DbError::Unavailable { .. }
                | DbError::ReadTimeout { .. }
                | DbError::WriteTimeout { .. }
                | DbError::Overloaded
                | DbError::IsBootstrapping
        ),
        _ => false,
    }
}

/// Moves the elements put last (`since` is when) after the others, keeping the others'
/// order, the one put last most recently at the end: with two nodes put last, the one put
/// last earlier is likelier to answer again (a node cut after another was healed, whose
/// time last has not run out yet).
fn put_last<T, S: Ord>(items: Vec<T>, since: impl Fn(&T) -> Option<S>) -> Vec<T> {
    let (mut first, mut rest): (Vec<T>, Vec<T>) =
        items.into_iter().partition(|t| since(t).is_none());
    rest.sort_by_key(|t| since(t));
    first.extend(rest);
    first
}

/// The driver's policy `inner`, with nodes overtaken too often put last.
#[derive(Debug)]
pub(crate) struct Overtaken {
    inner: Arc<dyn LoadBalancingPolicy>,
    judge: Mutex<Judge<NodeAddr>>,
}

impl Overtaken {
    pub(crate) fn new(inner: Arc<dyn LoadBalancingPolicy>) -> Self {
        Overtaken { inner, judge: Mutex::new(Judge::new()) }
    }

    fn judge(&self) -> std::sync::MutexGuard<'_, Judge<NodeAddr>> {
        // The records are advice: a panic elsewhere leaves them usable.
        self.judge.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn key(node: NodeRef<'_>) -> NodeAddr {
    node.address
}

impl LoadBalancingPolicy for Overtaken {
    /// Always none: the whole plan comes from [`Overtaken::fallback`], which sees when it goes
    /// past its first node.
    fn pick<'a>(
        &'a self,
        _request: &'a RoutingInfo<'a>,
        _cluster: &'a ClusterState,
    ) -> Option<(NodeRef<'a>, Option<Shard>)> {
        None
    }

    fn fallback<'a>(
        &'a self,
        request: &'a RoutingInfo<'a>,
        cluster: &'a ClusterState,
    ) -> FallbackPlan<'a> {
        let mut plan: Vec<(NodeRef<'a>, Option<Shard>)> = Vec::with_capacity(4);
        let picked = self.inner.pick(request, cluster);
        plan.extend(picked);
        for target in self.inner.fallback(request, cluster) {
            if !plan.iter().any(|(n, _)| Arc::ptr_eq(n, target.0)) {
                plan.push(target);
            }
        }
        let now = Instant::now();
        let plan = {
            let judge = self.judge();
            put_last(plan, |(n, _)| judge.last_since(key(n), now))
        };
        Box::new(Watched { policy: self, plan: plan.into_iter(), first: None, given: 0 })
    }

    fn on_request_success(&self, request: &RoutingInfo<'_>, latency: Duration, node: NodeRef<'_>) {
        if needs_others(request.consistency) {
            self.judge().answered(key(node));
        }
        self.inner.on_request_success(request, latency, node);
    }

    fn on_request_failure(
        &self,
        request: &RoutingInfo<'_>,
        latency: Duration,
        node: NodeRef<'_>,
        error: &RequestAttemptError,
    ) {
        // An attempt that fails and is then sent on counts twice (here and as its plan goes
        // on): both say the same node could not serve it.
        if counts_against(error) {
            self.judge().strike(key(node), Instant::now());
        }
        self.inner.on_request_failure(request, latency, node, error);
    }

    fn name(&self) -> String {
        format!("Overtaken({})", self.inner.name())
    }
}

/// A plan that tells its policy which node led it and when it went past that node.
struct Watched<'a> {
    policy: &'a Overtaken,
    plan: std::vec::IntoIter<(NodeRef<'a>, Option<Shard>)>,
    first: Option<NodeAddr>,
    given: usize,
}

impl<'a> Iterator for Watched<'a> {
    type Item = (NodeRef<'a>, Option<Shard>);

    fn next(&mut self) -> Option<Self::Item> {
        let next = self.plan.next()?;
        self.given += 1;
        let now = Instant::now();
        match (self.given, self.first) {
            (1, _) => self.first = Some(key(next.0)),
            (2, Some(first)) => {
                self.policy.judge().strike(first, now);
            }
            _ => {}
        }
        Some(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_overtaken_in_a_row_goes_last_for_a_while() {
        let t0 = Instant::now();
        let ms = |m| t0 + Duration::from_millis(m);
        let mut j = Judge::new();
        assert!(!j.strike(1, ms(0)));
        assert!(!j.strike(1, ms(10)));
        assert!(!j.is_last(1, ms(20)));
        assert!(j.strike(1, ms(20)));
        assert!(j.is_last(1, ms(21)));
        assert!(!j.is_last(2, ms(21)), "only the node overtaken");
        assert!(j.is_last(1, ms(20) + PUT_LAST_FOR - Duration::from_millis(1)));
        assert!(!j.is_last(1, ms(20) + PUT_LAST_FOR));
    }

    #[test]
    fn a_node_put_last_again_without_answering_goes_last_longer_up_to_a_bound() {
        let t0 = Instant::now();
        let mut j = Judge::new();
        let put_last = |j: &mut Judge<i32>, at: Instant| {
            assert!(!j.strike(1, at));
            assert!(!j.strike(1, at));
            assert!(j.strike(1, at));
        };
        let mut at = t0;
        for expect in [5, 10, 20, 20] {
            put_last(&mut j, at);
            let d = Duration::from_secs(expect);
            assert!(j.is_last(1, at + d - Duration::from_millis(1)), "{expect} s");
            assert!(!j.is_last(1, at + d), "{expect} s");
            at += d;
        }
        j.answered(1);
        put_last(&mut j, at);
        assert!(!j.is_last(1, at + PUT_LAST_FOR), "an answer starts again from 5 s");
    }

    #[test]
    fn answers_at_one_and_refusals_do_not_clear_or_count() {
        assert!(!needs_others(Consistency::One));
        assert!(!needs_others(Consistency::LocalOne));
        assert!(needs_others(Consistency::Quorum));
        assert!(needs_others(Consistency::Serial));
        let timeout =
            DbError::Unavailable { consistency: Consistency::Quorum, required: 2, alive: 1 };
        assert!(counts_against(&RequestAttemptError::DbError(timeout, String::new())));
        assert!(!counts_against(&RequestAttemptError::DbError(DbError::Invalid, String::new())));
        assert!(!counts_against(&RequestAttemptError::DbError(
            DbError::SyntaxError,
            String::new()
        )));
    }

    #[test]
    fn an_answer_in_between_clears_the_count() {
        let t0 = Instant::now();
        let mut j = Judge::new();
        for _ in 0..10 {
            assert!(!j.strike(1, t0));
            assert!(!j.strike(1, t0));
            j.answered(1);
        }
        assert!(!j.is_last(1, t0));
        // Another node's answers do not count for it.
        assert!(!j.strike(1, t0));
        assert!(!j.strike(1, t0));
        j.answered(2);
        assert!(j.strike(1, t0));
    }

    #[test]
    fn put_last_keeps_the_others_order_and_the_latest_put_last_at_the_end() {
        let since = |&x: &i32| (x % 2 == 0).then_some(-x);
        assert_eq!(put_last(vec![1, 2, 3, 4, 5], since), vec![1, 3, 5, 4, 2]);
        assert_eq!(put_last(vec![2, 4], since), vec![4, 2]);
        assert_eq!(put_last(vec![3, 1], since), vec![3, 1]);
    }

    #[test]
    fn of_two_nodes_put_last_the_later_goes_after() {
        let t0 = Instant::now();
        let mut j = Judge::new();
        for _ in 0..3 {
            j.strike(1, t0);
        }
        let later = t0 + Duration::from_secs(1);
        for _ in 0..3 {
            j.strike(2, later);
        }
        let now = later + Duration::from_millis(1);
        assert_eq!(put_last(vec![2, 1, 3], |&n| j.last_since(n, now)), vec![3, 1, 2]);
    }
}
