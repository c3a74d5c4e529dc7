//! The keyed writes of follows, unfollows and friendships: each attempt of a request under
//! one idempotency key claims the key, applies the write at most once across all servers
//! and answers as every other attempt does (the key's mechanics are in `idempotent`).

use super::Feed;
use super::idempotent::{Applied, Once, answered, fingerprint};
use crate::error::{Error, Result};
use crate::task::blocking;

impl Feed {
    /// [`Feed::follow`] under an optional idempotency key.
    pub async fn follow_keyed(
        &self,
        uid: u64,
        targets: Vec<u64>,
        key: Option<String>,
    ) -> Result<Applied<()>> {
        let Some(key) = key else {
            self.follow(uid, targets).await?;
            return Ok(Applied { value: (), replayed: false });
        };
        let _guard = self.key_stripe(&key)?.lock().await;
        let t: Vec<u8> = targets.iter().flat_map(|t| t.to_le_bytes()).collect();
        let fp = fingerprint(&[b"follow", &uid.to_le_bytes(), &t]);
        let Some(held) = self.claim_or_answer(&key, fp, uid).await? else {
            // As the first attempt would have: a retry repairs what failed after the store.
            self.invalidate_followees(uid).await;
            self.backfill(uid, &targets).await?;
            return Ok(Applied { value: (), replayed: true });
        };
        let claimed = held.taken_over;
        if !self.shared_store() {
            let record = self.record(key.clone(), fp, Vec::new());
            let stored = self.follow_once(uid, targets, Once::Recorded(record)).await;
            if let Err(e) = &stored {
                self.record_refusal(&key, fp, e).await?;
            }
            stored?;
            return Ok(Applied { value: (), replayed: false });
        }
        // The store reads the key's record before each edge it writes, and writes nothing
        // more once another attempt has answered (see `kith_store::Fence`).
        let fenced = Once::Fenced { key: key.clone(), taken_over: claimed };
        match self.follow_once(uid, targets.clone(), fenced).await {
            Ok(true) => {}
            Ok(false) => {
                // First: edges this attempt switched may be kept (the answer counts them).
                self.backfill(uid, &targets).await?;
                self.answered_elsewhere(&key, fp, uid).await?;
                return Ok(Applied { value: (), replayed: true });
            }
            // The other attempt that claimed the key stored it (a store that does not
            // count a target followed already as that attempt's).
            Err(Error::Store(kith_store::Error::AlreadyFollowing { .. })) if claimed => {
                self.backfill(uid, &targets).await?
            }
            Err(e) => {
                let answer = self.refusal_over_claim(&key, fp, uid, &held.marker, e).await;
                if answer.is_ok() {
                    // Answered by the attempt that took over: its edges stand.
                    self.backfill(uid, &targets).await?;
                }
                return answer;
            }
        }
        if let Some(instead) = self.answer_over_claim(&key, fp, uid, &held.marker, vec![]).await? {
            self.backfill(uid, &targets).await?;
            return Ok(instead);
        }
        Ok(Applied { value: (), replayed: claimed })
    }

    /// [`Feed::unfollow`] under an optional idempotency key.
    pub async fn unfollow_keyed(
        &self,
        uid: u64,
        target: u64,
        key: Option<String>,
    ) -> Result<Applied<()>> {
        let Some(key) = key else {
            self.unfollow(uid, target).await?;
            return Ok(Applied { value: (), replayed: false });
        };
        let _guard = self.key_stripe(&key)?.lock().await;
        let fp = fingerprint(&[b"unfollow", &uid.to_le_bytes(), &target.to_le_bytes()]);
        let Some(held) = self.claim_or_answer(&key, fp, uid).await? else {
            self.invalidate_followees(uid).await;
            return Ok(Applied { value: (), replayed: true });
        };
        let claimed = held.taken_over;
        if !self.shared_store() {
            let record = self.record(key.clone(), fp, Vec::new());
            let stored = self.unfollow_once(uid, target, Once::Recorded(record)).await;
            if let Err(e) = &stored {
                self.record_refusal(&key, fp, e).await?;
            }
            stored?;
            return Ok(Applied { value: (), replayed: false });
        }
        let fenced = Once::Fenced { key: key.clone(), taken_over: claimed };
        match self.unfollow_once(uid, target, fenced).await {
            Ok(true) => {}
            Ok(false) => {
                self.answered_elsewhere(&key, fp, uid).await?;
                return Ok(Applied { value: (), replayed: true });
            }
            Err(Error::Store(kith_store::Error::NotFollowing { .. })) if claimed => {}
            Err(e) => return self.refusal_over_claim(&key, fp, uid, &held.marker, e).await,
        }
        if let Some(instead) = self.answer_over_claim(&key, fp, uid, &held.marker, vec![]).await? {
            return Ok(instead);
        }
        Ok(Applied { value: (), replayed: claimed })
    }

    /// [`Feed::add_friend`] (`add`) or [`Feed::delete_friend`] under an optional
    /// idempotency key; the value is whether the friendship changed (the first time).
    pub async fn friend_keyed(
        &self,
        u: u64,
        v: u64,
        add: bool,
        key: Option<String>,
    ) -> Result<Applied<bool>> {
        let Some(key) = key else {
            let changed =
                if add { self.add_friend(u, v).await? } else { self.delete_friend(u, v).await? };
            return Ok(Applied { value: changed, replayed: false });
        };
        let _guard = self.key_stripe(&key)?.lock().await;
        let op: &[u8] = if add { b"add_friend" } else { b"delete_friend" };
        let fp = fingerprint(&[op, &u.to_le_bytes(), &v.to_le_bytes()]);
        let Some(claimed) = self.claim_unless_done(&key, fp).await? else {
            return self.friend_replay(&key, fp).await;
        };
        // A friendship write is idempotent: an attempt that finds another's claim applies it
        // too, so that its answer holds whether or not that attempt finishes. Unless, as the
        // write goes, another attempt has answered: the client may have changed the pair
        // since, and this write would undo that.
        let (engine, k) = (self.engine.clone(), key.clone());
        let changed =
            blocking(move || engine.change_friendship_unless_finished(u, v, add, &k, answered))
                .await;
        // Whatever the store answered: a write that failed after its batch applied changed
        // the lists all the same.
        self.invalidate_friends(&[u, v]).await;
        let Some(changed) = changed? else {
            return self.friend_replay(&key, fp).await;
        };
        self.finish(self.record(key, fp, vec![u8::from(changed)])).await?;
        Ok(Applied { value: changed, replayed: claimed })
    }

    /// A friendship write's answer from the record another attempt finished.
    async fn friend_replay(&self, key: &str, fp: u64) -> Result<Applied<bool>> {
        let first = self.recorded(key, fp).await?.unwrap_or_default();
        Ok(Applied { value: first.first() == Some(&1), replayed: true })
    }
}
