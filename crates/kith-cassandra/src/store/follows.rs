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
//! edit first stores an intent (`follow_intents`, in target's partition) and removes it once
//! the row is written. Every read of a followers list or count first settles the edges of
//! the target's intents (a QUORUM read of the edge, then its row), so the list shows an edge
//! as soon as the edge changed, even when its server stopped before writing the row; and
//! [`repair_follows_impl`] (every server's feed runs it every second) settles intents left
//! behind, for the feeds' sake, and removes them. Follow counts are counted from these
//! rows, so they equal the lists.
//!
//! [`repair_follows_impl`]: CassandraStore::repair_follows_impl

use futures_util::{StreamExt, TryStreamExt};
use kith_store::{Degree, Error as StoreError, IdempotencyRecord, Result};
use scylla::statement::Consistency;
use scylla::statement::prepared::PreparedStatement;

use super::rows::{key, uid};
use super::{CassandraStore, Writes, bad_rows, i};
use crate::error::driver;

/// An intent younger than this is its own edit's to finish; a repair leaves it alone.
const INTENT_GRACE_MS: u64 = 1_000;
/// An intent older than this is removed once repaired: every edit has ended by then (a
/// driver request gives up after 20 s; the service's own timeout is 30 s).
const INTENT_DONE_MS: u64 = 60_000;
/// How long an edit goes on sending its index writes that time out.
const INDEX_WITHIN: std::time::Duration = std::time::Duration::from_secs(8);
/// Requests one follow edit or count read has in flight at once (intents, edge reads, counts).
const CONCURRENCY: usize = 32;

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
            .buffered(CONCURRENCY)
            .try_collect()
            .await
    }

    async fn degree_of(&self, u: u64) -> Result<Degree> {
        self.finish_pending(u).await?;
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
            self.finish_pending(target).await?;
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

    /// Stores an intent per edge about to change, in its target's partition; returns them,
    /// to remove once done.
    async fn intend(&self, uid: u64, targets: &[u64]) -> Result<Vec<(u64, u64, i64)>> {
        let nonce = i(rand_nonce());
        let at = i(now_ms());
        futures_util::stream::iter(targets.to_vec())
            .map(|t| async move {
                self.session()
                    .execute_unpaged(&self.fixed.intent_put, (key(t), key(uid), nonce, at))
                    .await
                    .map_err(|e| driver("storing a follow intent", e))?;
                Ok::<_, StoreError>((t, uid, nonce))
            })
            .buffer_unordered(CONCURRENCY)
            .try_collect()
            .await
    }

    /// Removes finished intents; one left behind is removed by a later repair.
    async fn forget(&self, intents: &[(u64, u64, i64)]) {
        futures_util::stream::iter(intents.to_vec())
            .for_each_concurrent(CONCURRENCY, |(t, uid, nonce)| async move {
                let _ = self
                    .session()
                    .execute_unpaged(&self.fixed.intent_del, (key(t), key(uid), nonce))
                    .await;
            })
            .await;
    }

    /// Before a read of `target`'s followers: finishes the index rows of its edges with an
    /// edit under way or cut short (one read of its intents, nearly always empty), so the
    /// list shows every edge as the followee side reads it (QUORUM: an edit Paxos accepted
    /// but did not commit is on neither side until a Paxos round completes it; the repair's
    /// is one), even one whose server stopped between the edge and the row. Not by a Paxos
    /// read: reads of a hot user's followers would contend with each other and its edits.
    pub(super) async fn finish_pending(&self, target: u64) -> Result<()> {
        let rows = self
            .session()
            .execute_unpaged(&self.fixed.intents_of, (key(target),))
            .await
            .map_err(|e| driver("reading follow intents", e))?
            .into_rows_result()
            .map_err(|e| bad_rows("follow intents", e))?;
        let mut followers = std::collections::BTreeSet::new();
        for row in rows.rows::<(i64,)>().map_err(|e| bad_rows("follow intents", e))? {
            followers.insert(uid(row.map_err(|e| bad_rows("follow intents", e))?.0));
        }
        for u in followers {
            self.settle(u, target, false).await?;
        }
        Ok(())
    }

    /// Reads the edge uid → target (`serial`: by a Paxos read, completing an edit left in
    /// progress) and writes its index row to match; returns whether it is on.
    async fn settle(&self, uid: u64, target: u64, serial: bool) -> Result<bool> {
        let state = self.edge(uid, target, serial).await?;
        let mut w = Writes::logged();
        self.push_index(&mut w, uid, target, state);
        w.run(self.session(), "finishing a follow's index row").await?;
        Ok(state.active)
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
                let states: Vec<(u64, EdgeState)> =
                    futures_util::stream::iter(targets.to_vec())
                        .map(|t| async move {
                            Ok::<_, StoreError>((t, self.edge(uid, t, false).await?))
                        })
                        .buffered(CONCURRENCY)
                        .try_collect()
                        .await?;
                let mut w = Writes::logged();
                for (t, state) in states {
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
    /// server stopped, or a write failed, between the edge and the index): settles each such
    /// edge (a Paxos read, then its index row at the edge's timestamp). Returns the settled
    /// edges (uid, target, following).
    pub(crate) fn repair_follows_impl(&self) -> Result<Vec<(u64, u64, bool)>> {
        self.wait(async {
            let now = now_ms();
            let pager = self
                .session()
                .execute_iter(self.fixed.intents_all.clone(), ())
                .await
                .map_err(|e| StoreError::Unavailable(format!("reading follow intents: {e}")))?;
            let mut rows = pager
                .rows_stream::<(i64, i64, i64, Option<i64>)>()
                .map_err(|e| bad_rows("follow intents", e))?;
            let mut old = Vec::new();
            while let Some(row) = rows.next().await {
                let (t, u, nonce, at) = row
                    .map_err(|e| StoreError::Unavailable(format!("reading follow intents: {e}")))?;
                let age = now.saturating_sub(at.unwrap_or(0).max(0) as u64);
                if age >= INTENT_GRACE_MS {
                    old.push((uid(u), uid(t), nonce, age));
                }
            }
            let mut repaired = Vec::new();
            let mut done = std::collections::BTreeSet::new();
            for &(u, t, nonce, age) in &old {
                if done.insert((u, t)) {
                    repaired.push((u, t, self.settle(u, t, true).await?));
                }
                if age >= INTENT_DONE_MS {
                    self.forget(&[(t, u, nonce)]).await;
                }
            }
            Ok(repaired)
        })
    }
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
