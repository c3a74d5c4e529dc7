//! The intents of follow edits under way, and the repair of edits left half done.
//!
//! An edit stores its intent twice before it changes the edge: in the target's partition of
//! `follow_intents_at`, ordered newest first, where a read of the target's followers finds
//! it; and in `follow_intent_log`, partitioned by the 2 s bucket of its time (and a shard),
//! where the repair finds it. Both rows are deleted once the edit has written its index row.
//!
//! Both rows are written at a timestamp derived from the intent's own time, and deleted at a
//! later one derived from it too ([`Intent::written_at`]), never at their coordinators'
//! clocks: with those, an intent written through a node whose clock was ahead outlived its
//! deletion through another node, and every read of its target's followers (every hybrid
//! feed, through the follow counts) settled its edge again for the next two minutes.
//!
//! Neither table is ever scanned whole. A deleted row stays as a tombstone until compaction
//! purges it, and a query reads the tombstones of the range it covers: a full scan every
//! second by every server read every intent ever deleted (4,000 tombstones per scan after
//! 2,000 follows and unfollows, with Cassandra warning on each scan). A read of a target's
//! followers now reads its intents of the last [`PENDING_WINDOW_MS`]; the repair reads each
//! bucket of the log a few times, at fixed ages ([`CHECKPOINTS_MS`]), and never again after
//! the last.

use kith_store::price::{Price, step};
use std::collections::BTreeSet;

use futures_util::{StreamExt, TryStreamExt};
use kith_store::{Error as StoreError, Result};

use super::rows::{key, uid};
use super::{CassandraStore, bad_rows, i};
use crate::error::driver;

/// An intent younger than this is its own edit's to finish; a repair leaves it alone.
const INTENT_GRACE_MS: u64 = 1_000;
/// The span of one bucket of the intent log.
pub(crate) const BUCKET_MS: u64 = 2_000;
/// Partitions per bucket, so that one bucket's writes spread over the nodes.
pub(crate) const SHARDS: i32 = 4;
/// The ages, after a bucket's end, at which the repair reads it: soon after its edits
/// (a server that stopped mid-edit has its feeds repaired within seconds), once more, after
/// every edit has ended (a driver request gives up after 20 s, the service's own timeout is
/// 30 s), and last for an edit whose server's clock was behind by up to 4 minutes. The
/// repair deletes the intents it settles at the last age.
pub(crate) const CHECKPOINTS_MS: [u64; 4] = [1_500, 15_000, 65_000, 300_000];
/// How far back a repair starts when its server starts, or after failing for longer.
const LOOKBACK_MS: u64 = 600_000;
/// The intents a read of a target's followers settles: those of the last 2 minutes (every
/// edit ends within 60 s; an older intent is the repair's).
const PENDING_WINDOW_MS: u64 = 120_000;
/// How long after an intent's time its deletion is stamped (ten minutes, in microseconds).
const DELETED_AFTER_US: i64 = 600_000_000;
/// Requests in flight at once for one edit's intents.
const CONCURRENCY: usize = 32;

/// One edit's intent on one edge, as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Intent {
    pub target: u64,
    pub uid: u64,
    pub nonce: i64,
    pub at_ms: i64,
}

impl Intent {
    /// The timestamp both rows of the intent are written at (microseconds): its own time,
    /// from its writer's clock, never a coordinator's.
    fn written_at(&self) -> i64 {
        self.at_ms.saturating_mul(1000)
    }

    /// The timestamp its rows are deleted at: [`DELETED_AFTER_US`] after
    /// [`Intent::written_at`]. A deletion shadows the rows and nothing else (no intent is
    /// written twice), including rows an older kith wrote at a coordinator's clock less than
    /// that far ahead.
    fn deleted_at(&self) -> i64 {
        self.written_at().saturating_add(DELETED_AFTER_US)
    }

    fn bucket(&self) -> i64 {
        self.at_ms.div_euclid(BUCKET_MS as i64)
    }

    fn shard(&self) -> i32 {
        self.nonce.rem_euclid(i64::from(SHARDS)) as i32
    }
}

/// The buckets of the log a repair reads when the last one that succeeded ran at `from` and
/// this one at `now` (ms): each bucket with a checkpoint in (from, now], with whether that
/// checkpoint is its last.
pub(crate) fn due_buckets(from: u64, now: u64) -> BTreeSet<(i64, bool)> {
    let mut due = BTreeSet::new();
    let last = CHECKPOINTS_MS[CHECKPOINTS_MS.len() - 1];
    for d in CHECKPOINTS_MS {
        // Bucket b ends at (b + 1) * BUCKET_MS, so its checkpoint d is in (from, now] when
        // (b + 1) is in ((from - d) / BUCKET_MS, (now - d) / BUCKET_MS].
        let (Some(lo), Some(hi)) = (from.checked_sub(d), now.checked_sub(d)) else { continue };
        for end in lo / BUCKET_MS + 1..=hi / BUCKET_MS {
            due.insert((end as i64 - 1, d == last));
        }
    }
    // A bucket due at two checkpoints at once is read once, as its later one.
    let finals: BTreeSet<i64> = due.iter().filter(|d| d.1).map(|d| d.0).collect();
    due.retain(|&(b, last)| last || !finals.contains(&b));
    due
}

impl CassandraStore {
    /// Stores an intent per edge about to change; returns them, to remove once done.
    pub(super) async fn intend(&self, uid: u64, targets: &[u64]) -> Result<Vec<Intent>> {
        let _s = step(Price::Intent);
        let nonce = i(rand_nonce());
        let at_ms = i(now_ms());
        futures_util::stream::iter(targets.to_vec())
            .map(|target| async move {
                let intent = Intent { target, uid, nonce, at_ms };
                let at = intent.written_at();
                let by_target = self.session().execute_unpaged(
                    &self.fixed.intent_put,
                    (key(target), at_ms, key(uid), nonce, at),
                );
                let logged = self.session().execute_unpaged(
                    &self.fixed.intent_log_put,
                    (intent.bucket(), intent.shard(), key(target), key(uid), nonce, at_ms, at),
                );
                let (a, b) = futures_util::join!(by_target, logged);
                a.and(b).map_err(|e| driver("storing a follow intent", e))?;
                Ok::<_, StoreError>(intent)
            })
            .buffer_unordered(CONCURRENCY)
            .try_collect()
            .await
    }

    /// Removes finished intents; one left behind is removed by a later repair.
    pub(super) async fn forget(&self, intents: &[Intent]) {
        let _s = step(Price::Intent);
        futures_util::stream::iter(intents.to_vec())
            .for_each_concurrent(CONCURRENCY, |n| async move {
                let at = n.deleted_at();
                let by_target = self.session().execute_unpaged(
                    &self.fixed.intent_del,
                    (at, key(n.target), n.at_ms, key(n.uid), n.nonce),
                );
                let logged = self.session().execute_unpaged(
                    &self.fixed.intent_log_del,
                    (at, n.bucket(), n.shard(), key(n.target), key(n.uid), n.nonce),
                );
                let _ = futures_util::join!(by_target, logged);
            })
            .await;
    }

    /// Before a read of `target`'s followers: finishes the index rows of its edges with an
    /// edit under way or cut short (one read of its recent intents, nearly always empty), so
    /// the list shows every edge as the followee side reads it (QUORUM: an edit Paxos
    /// accepted but did not commit is on neither side until a Paxos round completes it; the
    /// repair's is one), even one whose server stopped between the edge and the row. Not by
    /// a Paxos read: reads of a hot user's followers would contend with each other and its
    /// edits.
    pub(super) async fn finish_pending(&self, target: u64) -> Result<()> {
        let since = i(now_ms().saturating_sub(PENDING_WINDOW_MS));
        let rows = self
            .session()
            .execute_unpaged(&self.fixed.intents_of, (key(target), since))
            .await
            .map_err(|e| driver("reading follow intents", e))?
            .into_rows_result()
            .map_err(|e| bad_rows("follow intents", e))?;
        let mut followers = BTreeSet::new();
        for row in rows.rows::<(i64,)>().map_err(|e| bad_rows("follow intents", e))? {
            followers.insert(uid(row.map_err(|e| bad_rows("follow intents", e))?.0));
        }
        for u in followers {
            self.settle(u, target, false).await?;
        }
        Ok(())
    }

    /// Brings the follower index in line with edits that left their intent behind (their
    /// server stopped, or a write failed, between the edge and the index): reads the buckets
    /// of the intent log due since the last repair that succeeded, and settles each edge
    /// found (a Paxos read, then its index row at the edge's timestamp); at a bucket's last
    /// checkpoint it also removes the intents. Returns the settled edges (uid, target,
    /// following).
    pub(crate) fn repair_follows_impl(&self) -> Result<Vec<(u64, u64, bool)>> {
        let now = now_ms();
        let from = self.repaired_to.lock().unwrap_or_else(|e| e.into_inner()).unwrap_or(0);
        let from = from.max(now.saturating_sub(LOOKBACK_MS));
        let due = due_buckets(from, now);
        let repaired = self.wait(async {
            let mut repaired = Vec::new();
            let mut done = BTreeSet::new();
            for (bucket, last) in due {
                let mut settled = Vec::new();
                for n in self.logged_intents(bucket).await? {
                    let age = now.saturating_sub(n.at_ms.max(0) as u64);
                    if age < INTENT_GRACE_MS {
                        continue;
                    }
                    if done.insert((n.uid, n.target)) {
                        repaired.push((n.uid, n.target, self.settle(n.uid, n.target, true).await?));
                    }
                    settled.push(n);
                }
                if last {
                    self.forget(&settled).await;
                }
            }
            Ok::<_, StoreError>(repaired)
        })?;
        *self.repaired_to.lock().unwrap_or_else(|e| e.into_inner()) = Some(now);
        Ok(repaired)
    }

    async fn logged_intents(&self, bucket: i64) -> Result<Vec<Intent>> {
        let pager = self
            .session()
            .execute_iter(self.fixed.intent_log_of.clone(), (bucket,))
            .await
            .map_err(|e| StoreError::Unavailable(format!("reading follow intents: {e}")))?;
        let mut rows = pager
            .rows_stream::<(i64, i64, i64, Option<i64>)>()
            .map_err(|e| bad_rows("follow intents", e))?;
        let mut intents = Vec::new();
        while let Some(row) = rows.next().await {
            let (t, u, nonce, at) =
                row.map_err(|e| StoreError::Unavailable(format!("reading follow intents: {e}")))?;
            intents.push(Intent { target: uid(t), uid: uid(u), nonce, at_ms: at.unwrap_or(0) });
        }
        Ok(intents)
    }
}

pub(super) fn rand_nonce() -> u64 {
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
    fn each_bucket_is_read_once_at_each_checkpoint_and_never_after_its_last() {
        let mut reads: std::collections::BTreeMap<i64, Vec<bool>> = Default::default();
        // A repair every 700 ms for 20 minutes, starting at the first bucket's start.
        let start = 1_000_000 * BUCKET_MS;
        let mut from = start;
        for step in 1..=(1_200_000 / 700) {
            let now = start + step * 700;
            for (b, last) in due_buckets(from, now) {
                reads.entry(b).or_default().push(last);
            }
            from = now;
        }
        let first = (start / BUCKET_MS) as i64;
        // Buckets wholly past their last checkpoint: every checkpoint once, the last last.
        for b in first..first + 400 {
            assert_eq!(reads[&b], [false, false, false, true], "bucket {b}");
        }
        assert!(reads.keys().all(|&b| b >= first - 150), "nothing before the first repair's reach");
    }

    #[test]
    fn a_repair_after_a_gap_reads_every_missed_checkpoint_once_as_its_latest() {
        let at = 500 * BUCKET_MS;
        let due = due_buckets(at, at + 70_000);
        // Bucket 499 (ended at `at`): 1.5 s, 15 s and 65 s all passed: read once, not last.
        assert!(due.contains(&(499, false)));
        assert_eq!(due.iter().filter(|d| d.0 == 499).count(), 1);
        // Nothing due in a repair that runs again at the same instant.
        assert!(due_buckets(at + 70_000, at + 70_000).is_empty());
        // A 300 s checkpoint passed makes the read the bucket's last.
        let due = due_buckets(at, at + 301_000);
        assert!(due.contains(&(499, true)) && !due.contains(&(499, false)));
    }
}
