//! Follows: following (all targets or none) with a backfill of the targets' recent posts,
//! unfollowing with their removal, and the follow lists.

use super::idempotent::Once;
use super::{FanJob, Feed, Follows};
use crate::config::Strategy;
use crate::error::Result;
use crate::task::blocking;

impl Feed {
    /// Makes `uid` follow `targets` (all or none), then backfills their recent posts into
    /// the user's timeline.
    pub async fn follow(&self, uid: u64, targets: Vec<u64>) -> Result<()> {
        self.follow_once(uid, targets, Once::Free).await.map(|_| ())
    }

    /// [`Feed::follow`] as `once` says; `false` when a fence found another attempt's answer
    /// (nothing of this one is left applied that the answer does not count).
    pub(super) async fn follow_once(
        &self,
        uid: u64,
        targets: Vec<u64>,
        once: Once,
    ) -> Result<bool> {
        if targets.contains(&uid) {
            return Err(kith_store::Error::SelfFollow(uid).into());
        }
        let mut all = vec![uid];
        all.extend(&targets);
        self.require_users(all).await?;
        let engine = self.engine.clone();
        let t = targets.clone();
        let stored = blocking(move || match once {
            Once::Free => engine.follow(uid, &t).map(Some),
            Once::Recorded(r) => engine.follow_recorded(uid, &t, &r).map(Some),
            Once::Fenced { key, taken_over } => {
                engine.follow_unless_answered(uid, &t, Once::fence(&key, taken_over))
            }
        })
        .await;
        // Whatever the store answered: a write that failed after its batch applied, or one
        // found done already, may have changed the list all the same.
        self.invalidate_followees(uid).await;
        if stored.is_err() && self.config.strategy != Strategy::Pull {
            // Applied or not, it was not backfilled: the timeline is built again if it was.
            self.backend.timeline_drop(uid).await;
        }
        if stored?.is_none() {
            return Ok(false);
        }
        self.backfill(uid, &targets).await?;
        Ok(true)
    }

    /// Adds the pushed targets' recent posts to the user's timeline. The follow is stored
    /// already, so nothing here fails it: where the backfill fails (reading the targets'
    /// posts, or the cache), the user's timeline is dropped instead, and built again from
    /// the store when next read (**invariant: no timeline is served without the backfill
    /// of a stored follow**).
    pub(super) async fn backfill(&self, uid: u64, targets: &[u64]) -> Result<()> {
        if self.config.strategy == Strategy::Pull {
            return Ok(());
        }
        if let Err(e) = self.try_backfill(uid, targets).await {
            self.metrics.cache_errors.inc();
            self.backend.carried_on("a follow's timeline backfill", &e);
            self.backend.timeline_drop(uid).await;
        }
        Ok(())
    }

    async fn try_backfill(&self, uid: u64, targets: &[u64]) -> Result<()> {
        for &t in targets {
            if self.pushed(t).await? {
                let ids = self.author_recent(t).await?;
                self.backend.timeline_add(&[uid], &ids, self.config.timeline_len).await?;
            }
        }
        Ok(())
    }

    /// Makes `uid` stop following `target`, and removes the target's posts from the user's
    /// timeline.
    pub async fn unfollow(&self, uid: u64, target: u64) -> Result<()> {
        self.unfollow_once(uid, target, Once::Free).await.map(|_| ())
    }

    /// [`Feed::unfollow`] as `once` says; `false` when a fence found another attempt's
    /// answer (nothing of this one applied).
    pub(super) async fn unfollow_once(&self, uid: u64, target: u64, once: Once) -> Result<bool> {
        self.require_users(vec![uid, target]).await?;
        let engine = self.engine.clone();
        // Under hybrid feeds an unfollow that ends the target's celebrity stores, with the
        // unfollow, a pending re-push of its recent posts, redone at open after a crash.
        let t = self.config.celebrity_threshold;
        let repush_at = (self.config.strategy == Strategy::Hybrid).then_some(t);
        let stored = blocking(move || match once {
            Once::Free => engine.unfollow(uid, target, repush_at).map(Some),
            Once::Recorded(r) => engine.unfollow_recorded(uid, target, repush_at, &r).map(Some),
            Once::Fenced { key, taken_over } => engine.unfollow_unless_answered(
                uid,
                target,
                repush_at,
                Once::fence(&key, taken_over),
            ),
        })
        .await;
        self.invalidate_followees(uid).await;
        let Some((before, after)) = stored? else {
            return Ok(false);
        };
        if self.config.strategy != Strategy::Pull {
            // The unfollow is stored, so nothing here fails it. Feed reads leave out posts
            // of authors no longer followed, so a removal that fails costs space and a
            // read's refill, not correctness; one whose posts cannot be read drops the
            // timeline, and one that meets a build under way drops it too (the build may
            // have read the posts before the removal).
            match self.author_recent(target).await {
                Ok(ids) => {
                    if let Err(e) = self.backend.timeline_remove(uid, &ids).await {
                        self.metrics.cache_errors.inc();
                        self.backend.carried_on("an unfollow's timeline removal", &e);
                    }
                }
                Err(e) => {
                    self.metrics.cache_errors.inc();
                    self.backend.carried_on("an unfollow's timeline removal", &e);
                    self.backend.timeline_drop(uid).await;
                }
            }
            if repush_at.is_some() && before > t && after <= t {
                self.enqueue(FanJob::Author { author: target }).await;
            }
        }
        Ok(true)
    }

    /// Pages of whom `uid` follows and who follows `uid`.
    pub async fn follows(&self, uid: u64, offset: usize, limit: usize) -> Result<Follows> {
        self.require_users(vec![uid]).await?;
        let engine = self.engine.clone();
        blocking(move || -> kith_store::Result<Follows> {
            Ok(Follows {
                followees: engine.followees(uid, offset, limit)?,
                followers: engine.followers(uid, offset, limit)?,
                degree: engine.follow_degree(uid)?,
            })
        })
        .await
    }
}
