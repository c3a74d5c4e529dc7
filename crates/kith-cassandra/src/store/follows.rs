//! Follow edits on the cluster, and the follow counts.
//!
//! An edge uid → target is one row of `follows` (in uid's partition), switched on and off by
//! lightweight transactions, so that of two edits of one pair on two servers exactly one
//! changes it. A Paxos commit writes its cells at its ballot's timestamp, and ballots of one
//! partition only grow, so the `writetime` of a row's `active` orders the edits of its edge.
//!
//! The follower index (`followers`, in target's partition) is derived from the edges: a
//! follower row is written or deleted `USING TIMESTAMP` of the edge state it reflects, so of
//! two index writes for one pair the later edge's wins, whatever order they arrive in. An
//! edit first stores an intent (`follow_intents`); a server that stops, or a write that
//! fails, between the edge and the index leaves the intent, and [`repair_follows_impl`]
//! (every server's feed runs it every second) reads the edge with a Paxos read and writes
//! the index to match. Follow counts are counted from these rows, so they equal the lists.
//!
//! [`repair_follows_impl`]: CassandraStore::repair_follows_impl

use futures_util::{StreamExt, TryStreamExt};
use kith_store::{Degree, Error as StoreError, IdempotencyRecord, Result};
use scylla::statement::Consistency;
use scylla::statement::prepared::PreparedStatement;

use super::rows::{key, uid};
use super::{CassandraStore, Writes, bad_rows, i};
use crate::error::driver;

/// Partitions of `follow_intents` (a repair reads each).
const INTENT_SHARDS: i32 = 16;
/// An intent younger than this is its own edit's to finish; a repair leaves it alone.
const INTENT_GRACE_MS: u64 = 1_000;
/// An intent older than this is removed once repaired: every edit has ended by then (a
/// driver request gives up after 20 s; the service's own timeout is 30 s).
const INTENT_DONE_MS: u64 = 60_000;
/// How long an edit goes on sending its index writes that time out.
const INDEX_WITHIN: std::time::Duration = std::time::Duration::from_secs(8);
/// Users whose counts are read at once.
const COUNT_CONCURRENCY: usize = 32;

/// One edge's state as stored: whether it is on, and the timestamp it was set at.
#[derive(Clone, Copy, Debug, PartialEq)]
struct EdgeState {
    active: bool,
    at: i64,
}

impl CassandraStore {
    /// Follow counts of `uids` (in their order), counted from the rows of the lists: every
    /// server sees every other's follows, and a count is its list's length.
    pub(crate) async fn degrees(&self, uids: &[u64]) -> Result<Vec<Degree>> {
        futures_util::stream::iter(uids.to_vec())
            .map(|u| self.degree_of(u))
            .buffered(COUNT_CONCURRENCY)
            .try_collect()
            .await
    }

    async fn degree_of(&self, u: u64) -> Result<Degree> {
        let followees = self.count(&self.fixed.followees_count, u).await?;
        let followers = self.count(&self.fixed.followers_count, u).await?;
        Ok(Degree { followees, followers })
    }

    async fn count(&self, statement: &PreparedStatement, u: u64) -> Result<u64> {
        let rows = self
            .session()
            .execute_unpaged(statement, (key(u),))
            .await
            .map_err(|e| driver("counting follows", e))?
            .into_rows_result()
            .map_err(|e| bad_rows("follow count", e))?;
        let (n,) = rows.single_row::<(i64,)>().map_err(|e| bad_rows("follow count", e))?;
        Ok(n.max(0) as u64)
    }

    pub(crate) fn degree(&self, uid: u64) -> Result<Degree> {
        Ok(self.wait(self.degrees(&[uid]))?[0])
    }

    pub(crate) fn follow_impl(
        &self,
        uid: u64,
        targets: &[u64],
        record: Option<&IdempotencyRecord>,
    ) -> Result<()> {
        kith_store::check_follow_targets(uid, targets)?;
        let _one = self.follow_lock();
        self.wait(async {
            let intents = self.intend(uid, targets).await?;
            let mut taken = Vec::new();
            for &t in targets {
                if !self.switch(&self.fixed.follow_on, uid, t).await? {
                    // All or none: undo the ones taken. Then the index rows of those and of
                    // the edge found on: the edit that switched it may not have written its
                    // row yet, and a refusal (or a retry answered by it) must not be seen
                    // before that row.
                    for &d in &taken {
                        self.switch(&self.fixed.follow_off, uid, d).await?;
                    }
                    taken.push(t);
                    self.index(uid, &taken, None, None).await?;
                    self.forget(&intents).await;
                    return Err(StoreError::AlreadyFollowing { uid, target: t });
                }
                taken.push(t);
            }
            self.index(uid, targets, None, record).await?;
            self.forget(&intents).await;
            Ok(())
        })
    }

    pub(crate) fn unfollow_impl(
        &self,
        uid: u64,
        target: u64,
        repush_at: Option<u64>,
        record: Option<&IdempotencyRecord>,
    ) -> Result<(u64, u64)> {
        let _one = self.follow_lock();
        self.wait(async {
            let before = self.count(&self.fixed.followers_count, target).await?;
            let intents = self.intend(uid, &[target]).await?;
            if !self.switch(&self.fixed.follow_off, uid, target).await? {
                // As for a follow refused: the edit that switched it off may not have
                // deleted its row yet.
                self.index(uid, &[target], None, None).await?;
                self.forget(&intents).await;
                return Err(StoreError::NotFollowing { uid, target });
            }
            let repush = repush_at.is_some_and(|t| before == t + 1).then(|| self.next_token());
            self.index(uid, &[target], repush.map(|token| (target, token)), record).await?;
            self.forget(&intents).await;
            Ok((before, before.saturating_sub(1)))
        })
    }

    /// Stores an intent per edge about to change; returns them, to remove once done.
    async fn intend(&self, uid: u64, targets: &[u64]) -> Result<Vec<(i32, u64, u64, i64)>> {
        let nonce = i(rand_nonce());
        let at = i(now_ms());
        let mut out = Vec::with_capacity(targets.len());
        for &t in targets {
            let shard = shard(uid, t);
            self.session()
                .execute_unpaged(&self.fixed.intent_put, (shard, key(uid), key(t), nonce, at))
                .await
                .map_err(|e| driver("storing a follow intent", e))?;
            out.push((shard, uid, t, nonce));
        }
        Ok(out)
    }

    /// Removes finished intents; one left behind is removed by a later repair.
    async fn forget(&self, intents: &[(i32, u64, u64, i64)]) {
        for &(shard, uid, t, nonce) in intents {
            let _ = self
                .session()
                .execute_unpaged(&self.fixed.intent_del, (shard, key(uid), key(t), nonce))
                .await;
        }
    }

    /// Runs a lightweight transaction on the edge uid → target; whether it applied.
    async fn switch(&self, statement: &PreparedStatement, uid: u64, target: u64) -> Result<bool> {
        let rows = self
            .session()
            .execute_unpaged(statement, (key(uid), key(target)))
            .await
            .map_err(|e| driver("changing a follow", e))?
            .into_rows_result()
            .map_err(|e| bad_rows("follow", e))?;
        Ok(super::rows::lwt_outcome(&rows, "active")?.0)
    }

    /// The edge's state (`serial`: by a Paxos read, which first completes an edit left in
    /// progress).
    async fn edge(&self, uid: u64, target: u64, serial: bool) -> Result<EdgeState> {
        let mut statement = self.fixed.follow_state.clone();
        if serial {
            statement.set_consistency(Consistency::Serial);
        }
        let rows = self
            .session()
            .execute_unpaged(&statement, (key(uid), key(target)))
            .await
            .map_err(|e| driver("reading a follow", e))?
            .into_rows_result()
            .map_err(|e| bad_rows("follow", e))?;
        let row = rows
            .maybe_first_row::<(Option<bool>, Option<i64>)>()
            .map_err(|e| bad_rows("follow", e))?;
        Ok(match row {
            Some((Some(active), Some(at))) => EdgeState { active, at },
            _ => EdgeState { active: false, at: 0 },
        })
    }

    /// Writes the follower index of uid → each of `targets` as their edges stand, with a
    /// pending re-push (author, token) and the idempotency record in the same logged batch;
    /// resent while it times out, for [`INDEX_WITHIN`].
    async fn index(
        &self,
        uid: u64,
        targets: &[u64],
        repush: Option<(u64, u64)>,
        record: Option<&IdempotencyRecord>,
    ) -> Result<()> {
        let deadline = tokio::time::Instant::now() + INDEX_WITHIN;
        let mut pause = std::time::Duration::from_millis(50);
        loop {
            let sent = async {
                let mut w = Writes::logged();
                for &t in targets {
                    let state = self.edge(uid, t, false).await?;
                    self.push_index(&mut w, uid, t, state);
                }
                if let Some((author, token)) = repush {
                    w.push(&self.fixed.repush_put, (key(author), i(token)));
                }
                if let Some(r) = record {
                    self.push_record(&mut w, r)?;
                }
                w.run(self.session(), "the follower index").await
            }
            .await;
            match sent {
                Err(StoreError::Unavailable(_))
                    if tokio::time::Instant::now() + pause < deadline =>
                {
                    tokio::time::sleep(pause).await;
                    pause *= 2;
                }
                sent => return sent,
            }
        }
    }

    fn push_index(&self, w: &mut Writes, uid: u64, target: u64, state: EdgeState) {
        if state.active {
            w.push(&self.fixed.follower_put, (key(target), key(uid), state.at));
        } else if state.at > 0 {
            w.push(&self.fixed.follower_del, (state.at, key(target), key(uid)));
        }
    }

    /// Brings the follower index in line with edits that left their intent behind (their
    /// server stopped, or a write failed, between the edge and the index): reads each such
    /// edge by a Paxos read and writes its index row at the edge's timestamp. Returns the
    /// repaired edges (uid, target, following).
    pub(crate) fn repair_follows_impl(&self) -> Result<Vec<(u64, u64, bool)>> {
        self.wait(async {
            let now = now_ms();
            let mut repaired = Vec::new();
            for shard in 0..INTENT_SHARDS {
                let rows = self
                    .session()
                    .execute_unpaged(&self.fixed.intents_get, (shard,))
                    .await
                    .map_err(|e| driver("reading follow intents", e))?
                    .into_rows_result()
                    .map_err(|e| bad_rows("follow intents", e))?;
                let mut old = Vec::new();
                for row in rows
                    .rows::<(i64, i64, i64, Option<i64>)>()
                    .map_err(|e| bad_rows("follow intents", e))?
                {
                    let (u, t, nonce, at) = row.map_err(|e| bad_rows("follow intents", e))?;
                    let age = now.saturating_sub(at.unwrap_or(0).max(0) as u64);
                    if age >= INTENT_GRACE_MS {
                        old.push((uid(u), uid(t), nonce, age));
                    }
                }
                let mut done = std::collections::BTreeSet::new();
                for &(u, t, nonce, age) in &old {
                    if done.insert((u, t)) {
                        let state = self.edge(u, t, true).await?;
                        let mut w = Writes::logged();
                        self.push_index(&mut w, u, t, state);
                        w.run(self.session(), "repairing the follower index").await?;
                        repaired.push((u, t, state.active));
                    }
                    if age >= INTENT_DONE_MS {
                        self.forget(&[(shard, u, t, nonce)]).await;
                    }
                }
            }
            Ok(repaired)
        })
    }
}

/// The intent partition of an edge.
fn shard(uid: u64, target: u64) -> i32 {
    ((uid.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ target) % INTENT_SHARDS as u64) as i32
}

fn rand_nonce() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

pub(super) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_in_range_and_spread() {
        let mut seen = std::collections::BTreeSet::new();
        for u in 0..100u64 {
            for t in [0u64, 1, 7, u64::MAX] {
                let s = shard(u, t);
                assert!((0..INTENT_SHARDS).contains(&s));
                seen.insert(s);
            }
        }
        assert_eq!(seen.len(), INTENT_SHARDS as usize);
    }
}
