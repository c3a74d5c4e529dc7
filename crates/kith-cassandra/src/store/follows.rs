//! Follow edits on the cluster, and the follow counts.
//!
//! An edge uid → target is one row of `follows` (in uid's partition), switched on and off by
//! lightweight transactions, so that of two edits of one pair on two servers exactly one
//! changes it. A Paxos commit writes its cells at its ballot's timestamp, and ballots of one
//! partition only grow, so the `writetime` of a row's `active` orders the edits of its edge.
//!
//! Each switch stores a random id of its own in `edit`, on the condition that `edit` still
//! holds the id it read: the edit it follows. A second round of the same switch (the driver
//! sends it through another node after a timeout, or after 500 ms) applies only if no edit
//! has applied since that read, its own included, and a round that finds its own id knows it
//! applied. So a switch is sent twice without ever applying twice, and a round that a paused
//! node holds cannot undo a later edit when it runs. A round that finds another edit's id
//! did not apply if the driver sent it only once (the edit reads the edge again and goes
//! on from there); sent twice, its outcome is unknown.
//!
//! The follower index (`followers`, in target's partition) is derived from the edges: a
//! follower row is written or deleted `USING TIMESTAMP` of the edge state it reflects, so of
//! two index writes for one pair the later edge's wins, whatever order they arrive in. An
//! edit first stores an intent and removes it once the row is written (`intents.rs`). Every
//! read of a followers list or count first settles the edges of the target's recent intents
//! (a QUORUM read of the edge, then its row), so the list shows an edge as soon as the edge
//! changed, even when its server stopped before writing the row; and the repair settles
//! intents left behind, for the feeds' sake, and removes them. Follow counts are counted
//! from these rows, so they equal the lists.

use futures_util::{StreamExt, TryStreamExt};
use kith_store::price::{Price, step};
use kith_store::{Degree, Error as StoreError, Fence, IdempotencyRecord, Result};
use scylla::statement::Consistency;
use scylla::statement::prepared::PreparedStatement;

use super::rows::key;
use super::{CassandraStore, Writes, bad_rows, i};
use crate::error::driver;

/// Times an edit reads the edge again after another edit came between its read and its
/// round, before it gives up (each time, nothing of it applied).
const MOVED_TRIES: usize = 4;
/// How long an edit goes on sending its index writes that time out.
const INDEX_WITHIN: std::time::Duration = std::time::Duration::from_secs(8);
/// Requests one follow edit or count read has in flight at once (intents, edge reads, counts).
const CONCURRENCY: usize = 32;

/// One edge's state as stored: whether it is on, the timestamp it was set at, and the id of
/// the edit that set it (none before the first).
#[derive(Clone, Copy, Debug, PartialEq)]
struct EdgeState {
    active: bool,
    at: i64,
    edit: Option<i64>,
}

/// What became of a switch with id `mine`, conditioned on the edge's last edit being `from`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Switched {
    /// It applied (this round, or an earlier round of it that this one found).
    Applied,
    /// The edge was already switched that way, and no edit came between.
    Refused,
    /// Another edit came between the read and this round, which the driver sent once: it
    /// did not apply (a coordinator answers "not applied" only if no replica accepted its
    /// proposal; one that some accepted but not a quorum is answered with a timeout, as
    /// another round may complete it), and may be tried again from that edit.
    Moved,
    /// Another edit came between the read and this round, which the driver sent more than
    /// once: it may have applied before that edit (in a round whose answer was lost) or
    /// never.
    Unknown,
    /// Another attempt of the request answered (with a refusal, or not) before this round
    /// went: it was not sent.
    Answered { refused: bool },
    /// Found on by an attempt that took the request over, and made its own edit: counted as
    /// followed, and never undone by this attempt (an earlier attempt, or an earlier
    /// request, may have switched it on).
    Adopted,
}

/// A round's answer: whether it applied, the last edit it found if not, and how many
/// attempts the driver sent.
fn switched(
    applied: bool,
    found: Option<i64>,
    from: Option<i64>,
    mine: i64,
    attempts: usize,
) -> Switched {
    if applied || found == Some(mine) {
        Switched::Applied
    } else if found == from {
        Switched::Refused
    } else if attempts <= 1 {
        Switched::Moved
    } else {
        Switched::Unknown
    }
}

fn unknown(uid: u64, target: u64) -> StoreError {
    StoreError::Unavailable(format!(
        "changing the follow {uid} → {target}: another edit of it came between, so whether \
         this one applied is unknown"
    ))
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

    /// A follow (see [`kith_store::Engine::follow_unless_answered`] for `fence`); `None`
    /// when the fence found another attempt's answer.
    pub(crate) fn follow_impl(
        &self,
        uid: u64,
        targets: &[u64],
        record: Option<&IdempotencyRecord>,
        fence: Option<Fence<'_>>,
    ) -> Result<Option<()>> {
        kith_store::check_follow_targets(uid, targets)?;
        // No follow stripe: a follow reads no count and stores no re-push, and its switches
        // are conditioned on the edits they read (a follow of many users holding all their
        // stripes queued the seeding of `kith bench servers` past its 30 s timeout).
        let taken_over = fence.is_some_and(|f| f.taken_over);
        self.wait(async {
            let intents = self.intend(uid, targets).await?;
            let mut taken: Vec<(u64, i64)> = Vec::new();
            let mut adopted: Vec<u64> = Vec::new();
            for &t in targets {
                let (outcome, mine) = if taken_over {
                    self.switch_or_adopt(uid, t, fence).await?
                } else {
                    self.switch(true, uid, t, fence).await?
                };
                match outcome {
                    Switched::Applied => {
                        taken.push((t, mine));
                        continue;
                    }
                    Switched::Adopted => {
                        adopted.push(t);
                        continue;
                    }
                    // The answer may count the edges this attempt switched: they stay.
                    Switched::Answered { refused: false } => {
                        let mut done: Vec<u64> = taken.iter().map(|&(d, _)| d).collect();
                        done.extend(&adopted);
                        self.index(uid, &done, None, None).await?;
                        self.forget(&intents).await;
                        return Ok(None);
                    }
                    _ => {}
                }
                // All or none: undo the ones taken (an edge another edit changed since is
                // left to it).
                for &(d, edit) in &taken {
                    let undo = i(super::intents::rand_nonce());
                    self.switch_round(false, uid, d, Some(edit), undo).await?;
                }
                if outcome == Switched::Unknown {
                    // The intents stay for the repair to settle.
                    return Err(unknown(uid, t));
                }
                // Then the index rows of those and of the edge found on: the edit that
                // switched it may not have written its row yet, and a refusal (or a retry
                // answered by it) must not be seen before that row.
                let mut settle: Vec<u64> = taken.iter().map(|&(d, _)| d).collect();
                settle.extend(&adopted);
                settle.push(t);
                self.index(uid, &settle, None, None).await?;
                self.forget(&intents).await;
                if matches!(outcome, Switched::Answered { .. }) {
                    return Ok(None);
                }
                return Err(StoreError::AlreadyFollowing { uid, target: t });
            }
            self.index(uid, targets, None, record).await?;
            self.forget(&intents).await;
            Ok(Some(()))
        })
    }

    /// An unfollow (see [`kith_store::Engine::unfollow_unless_answered`] for `fence`);
    /// `None` when the fence found another attempt's answer.
    pub(crate) fn unfollow_impl(
        &self,
        uid: u64,
        target: u64,
        repush_at: Option<u64>,
        record: Option<&IdempotencyRecord>,
        fence: Option<Fence<'_>>,
    ) -> Result<Option<(u64, u64)>> {
        let _locks = self.lock_followed([target]);
        self.wait(async {
            let before = {
                let _s = step(Price::Index);
                self.finish_pending(target).await?;
                self.count(&self.fixed.followers_count, target).await?
            };
            let intents = self.intend(uid, &[target]).await?;
            let (outcome, _) = self.switch(false, uid, target, fence).await?;
            match outcome {
                Switched::Unknown => return Err(unknown(uid, target)),
                Switched::Answered { .. } => {
                    self.forget(&intents).await;
                    return Ok(None);
                }
                Switched::Refused => {
                    // As for a follow refused: the edit that switched it off may not have
                    // deleted its row yet.
                    self.index(uid, &[target], None, None).await?;
                    self.forget(&intents).await;
                    return Err(StoreError::NotFollowing { uid, target });
                }
                Switched::Applied | Switched::Moved | Switched::Adopted => {}
            }
            let repush = match repush_at {
                Some(t) if before == t + 1 => {
                    Some((target, self.next_token(), self.repush_stamp(target).await?))
                }
                _ => None,
            };
            self.index(uid, &[target], repush, record).await?;
            self.forget(&intents).await;
            Ok(Some((before, before.saturating_sub(1))))
        })
    }

    /// Reads the edge uid → target (`serial`: by a Paxos read, completing an edit left in
    /// progress) and writes its index row to match; returns whether it is on.
    pub(super) async fn settle(&self, uid: u64, target: u64, serial: bool) -> Result<bool> {
        let state = self.edge(uid, target, serial).await?;
        let mut w = Writes::logged();
        self.push_index(&mut w, uid, target, state);
        w.run(self.session(), "finishing a follow's index row").await?;
        Ok(state.active)
    }

    /// Switches the edge uid → target `on` or off as a new edit, from the edit it reads
    /// first: applied (with the edit's id), refused (already so), or unknown. An edit that
    /// came between the read and a round sent once is read and followed in turn. With a
    /// `fence`, each round goes only if, read after the edge, no other attempt of the
    /// request has answered: the round is conditioned on the edit read, so one held back
    /// past such an answer (by a pause of this process, or of a node) applies only if the
    /// edge has not changed since, which the client's next write of it would have done.
    async fn switch(
        &self,
        on: bool,
        uid: u64,
        target: u64,
        fence: Option<Fence<'_>>,
    ) -> Result<(Switched, i64)> {
        let _s = step(Price::Edge);
        for _ in 0..MOVED_TRIES {
            let from = self.edge(uid, target, false).await?.edit;
            if let Some(f) = fence
                && let Some(r) = {
                    let _s = step(Price::KeyRead);
                    self.stored_record(f.key).await?
                }
                && (f.answered)(&r)
            {
                return Ok((Switched::Answered { refused: (f.refused)(&r) }, 0));
            }
            let mine = i(super::intents::rand_nonce());
            match self.switch_round(on, uid, target, from, mine).await? {
                Switched::Moved => continue,
                outcome => return Ok((outcome, mine)),
            }
        }
        Err(StoreError::Unavailable(format!(
            "changing the follow {uid} → {target}: {MOVED_TRIES} other edits of it came \
             between this one's read and its round, and this one did not apply"
        )))
    }

    /// [`CassandraStore::switch`] on, for an attempt that took its key over from another
    /// that claimed it and did not answer: an edge found on is counted as followed (that
    /// attempt may have followed it) and made this attempt's own edit, by a lightweight
    /// transaction conditioned on the edit found. Otherwise the other attempt, should it
    /// run on and meet a refusal, would undo its edges (its undo is conditioned on its own
    /// edit) under this attempt's success answer.
    async fn switch_or_adopt(
        &self,
        uid: u64,
        target: u64,
        fence: Option<Fence<'_>>,
    ) -> Result<(Switched, i64)> {
        for _ in 0..MOVED_TRIES {
            let (outcome, mine) = self.switch(true, uid, target, fence).await?;
            if outcome != Switched::Refused {
                return Ok((outcome, mine));
            }
            let _s = step(Price::Edge);
            let found = self.edge(uid, target, false).await?;
            if !found.active {
                continue;
            }
            let attempts = std::sync::Arc::new(crate::retries::Attempts::default());
            let mut statement = self.fixed.follow_adopt.clone();
            statement.set_history_listener(attempts.clone());
            let mine = i(super::intents::rand_nonce());
            let rows = self
                .session()
                .execute_unpaged(&statement, (mine, key(uid), key(target), found.edit))
                .await
                .map_err(|e| driver("taking over a follow", e))?
                .into_rows_result()
                .map_err(|e| bad_rows("follow", e))?;
            let (applied, now) = super::rows::lwt_outcome(&rows, "edit")?;
            if switched(applied, now, found.edit, mine, attempts.count()) == Switched::Applied {
                return Ok((Switched::Adopted, mine));
            }
            // Another edit came between (this round changing only the edit's id, whether an
            // earlier send of it applied matters not): read the edge again.
        }
        Err(StoreError::Unavailable(format!(
            "taking over the follow {uid} → {target}: other edits of it kept coming between"
        )))
    }

    /// One lightweight transaction of a switch as edit `mine`, if the edge's last edit is
    /// still `from` (the driver may send it more than once).
    async fn switch_round(
        &self,
        on: bool,
        uid: u64,
        target: u64,
        from: Option<i64>,
        mine: i64,
    ) -> Result<Switched> {
        let attempts = std::sync::Arc::new(crate::retries::Attempts::default());
        let mut statement = if on { &self.fixed.follow_on } else { &self.fixed.follow_off }.clone();
        statement.set_history_listener(attempts.clone());
        let rows = self
            .session()
            .execute_unpaged(&statement, (mine, key(uid), key(target), from))
            .await
            .map_err(|e| driver("changing a follow", e))?
            .into_rows_result()
            .map_err(|e| bad_rows("follow", e))?;
        let (applied, found) = super::rows::lwt_outcome(&rows, "edit")?;
        Ok(switched(applied, found, from, mine, attempts.count()))
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
            .maybe_first_row::<(Option<bool>, Option<i64>, Option<i64>)>()
            .map_err(|e| bad_rows("follow", e))?;
        Ok(match row {
            Some((Some(active), Some(at), edit)) => EdgeState { active, at, edit },
            _ => EdgeState { active: false, at: 0, edit: None },
        })
    }

    /// Writes the follower index of uid → each of `targets` as their edges stand, with a
    /// pending re-push (author, token, the ticket's timestamp) and the idempotency record
    /// in the same logged batch; resent while it times out, for [`INDEX_WITHIN`].
    async fn index(
        &self,
        uid: u64,
        targets: &[u64],
        repush: Option<(u64, u64, i64)>,
        record: Option<&IdempotencyRecord>,
    ) -> Result<()> {
        let _s = step(Price::Index);
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
                if let Some((author, token, at)) = repush {
                    w.push(&self.fixed.repush_put, (key(author), i(token), at));
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
}

#[cfg(test)]
mod tests {
    use super::{Switched, switched};

    #[test]
    fn a_round_that_applied_or_found_its_own_edit_applied() {
        assert_eq!(switched(true, None, None, 7, 1), Switched::Applied);
        assert_eq!(switched(false, Some(7), Some(3), 7, 2), Switched::Applied);
        assert_eq!(switched(false, Some(7), None, 7, 3), Switched::Applied);
    }

    #[test]
    fn a_round_that_found_the_edit_it_read_was_refused() {
        // Never edited (a row with no edit, or none at all), or unchanged since the read.
        assert_eq!(switched(false, None, None, 7, 1), Switched::Refused);
        assert_eq!(switched(false, Some(3), Some(3), 7, 2), Switched::Refused);
    }

    #[test]
    fn a_round_sent_once_that_found_another_edit_did_not_apply() {
        assert_eq!(switched(false, Some(4), Some(3), 7, 1), Switched::Moved);
        assert_eq!(switched(false, Some(4), None, 7, 1), Switched::Moved);
    }

    #[test]
    fn a_round_sent_twice_that_found_another_edit_is_unknown() {
        // Its other attempt may have applied before that edit, with its answer lost.
        assert_eq!(switched(false, Some(4), Some(3), 7, 2), Switched::Unknown);
        assert_eq!(switched(false, Some(4), None, 7, 2), Switched::Unknown);
        assert_eq!(switched(false, None, Some(3), 7, 3), Switched::Unknown);
    }
}
