//! Friend lists: every friendship write goes through here, so the write and the
//! invalidation of the cached lists it changed are one call; and the one friend-list read,
//! strong (the engine) or eventual (the cache, filled from the engine).
//!
//! A change bumps a version per cache stripe under the stripe's lock before it deletes the
//! cached lists; a fill compares the version it saw before reading the engine with the
//! version under the same lock before it caches, and drops what it read if a change came in
//! between. So this server never caches a list older than a change it acknowledged. With
//! Redis, each list also has a version in Redis that every server's change bumps: the fill
//! reads it before the engine, and Redis caches the list only if it has not moved
//! (`cache/redis.rs`), so no server caches a list older than a change another server
//! acknowledged either.
//!
//! The engine is the truth and the cache only a copy: a change is acknowledged once the
//! engine has it, whatever the cache does next. A failed invalidation is a warning, and
//! the backend never serves the lists it failed to drop (see `cache/health.rs`); an
//! eventual read the cache cannot answer is answered from the engine.

use std::sync::Arc;

use kith_store::{FriendsPage, Profile, User, friends_page};

use super::{Consistency, FRIEND_STRIPES, Feed};
use crate::config::CacheMode;
use crate::error::Result;
use crate::task::blocking;

impl Feed {
    /// Creates or replaces a whole user (profile, friends, and the data block if given)
    /// and drops the cached friend lists the write changed, as the engine reported them
    /// under its locks. Returns the user as stored.
    pub async fn put_user(
        &self,
        uid: u64,
        profile: Profile,
        friends: Vec<u64>,
        data: Option<Vec<u8>>,
    ) -> Result<User> {
        let engine = self.engine.clone();
        let asked: Vec<u64> = std::iter::once(uid).chain(friends.iter().copied()).collect();
        let wrote =
            blocking(move || engine.put_user(uid, &profile, &friends, data.as_deref())).await;
        // Invalidate before reading the user back, so a failed read cannot leave the lists
        // this write changed cached; a write that failed may have applied all the same, so
        // its user's list and the lists it named are dropped then.
        match &wrote {
            Ok(w) => self.invalidate_friends(&w.touched).await,
            Err(_) => self.invalidate_friends(&asked).await,
        }
        wrote?;
        let engine = self.engine.clone();
        blocking(move || engine.get_user(uid)).await
    }

    /// Adds the friendship u–v (both sides at once) and drops both cached lists. Returns
    /// whether it was new.
    pub async fn add_friend(&self, u: u64, v: u64) -> Result<bool> {
        let engine = self.engine.clone();
        let changed = blocking(move || engine.add_friend(u, v)).await;
        // Whatever the store answered: a write that failed after its batch applied changed
        // the lists all the same.
        self.invalidate_friends(&[u, v]).await;
        changed
    }

    /// Removes the friendship u–v from both sides and drops both cached lists. Returns
    /// whether it existed.
    pub async fn delete_friend(&self, u: u64, v: u64) -> Result<bool> {
        let engine = self.engine.clone();
        let changed = blocking(move || engine.delete_friend(u, v)).await;
        // Whatever the store answered: a write that failed after its batch applied changed
        // the lists all the same.
        self.invalidate_friends(&[u, v]).await;
        changed
    }

    /// A page of the user's friend list, ascending, from `offset`, at most `limit`:
    /// [`friends_page`] of the list as the engine has it (strong) or as the cache has it
    /// (eventual).
    pub async fn friends(
        &self,
        uid: u64,
        offset: usize,
        limit: usize,
        consistency: Consistency,
    ) -> Result<FriendsPage> {
        match consistency {
            Consistency::Strong => {
                let engine = self.engine.clone();
                blocking(move || engine.get_friends_list(uid, offset, limit)).await
            }
            Consistency::Eventual => {
                Ok(friends_page(&self.cached_friends(uid).await?, offset, limit)?)
            }
        }
    }

    /// The whole list as `consistency=eventual` reads it: from the cache when there, else
    /// from the engine (then cached unless a change raced the fill).
    async fn cached_friends(&self, uid: u64) -> Result<Arc<[u64]>> {
        if self.config.cache == CacheMode::None {
            let engine = self.engine.clone();
            return Ok(blocking(move || engine.get_all_friends(uid)).await?.into());
        }
        match self.backend.get_friends(uid).await {
            Ok(Some(f)) => {
                self.metrics.hit("friends", true, 1);
                return Ok(f);
            }
            Ok(None) => {}
            Err(e) => self.backend.carried_on("reading a cached friend list", &e),
        }
        self.metrics.hit("friends", false, 1);
        let stripe = &self.friend_stripes[friend_stripe(uid)];
        let seen = *stripe.lock().await;
        // Before the engine read, like the stripe's version; without it, nothing is cached.
        let version = self.backend.friends_version(uid).await;
        let engine = self.engine.clone();
        let list: Arc<[u64]> = blocking(move || engine.get_all_friends(uid)).await?.into();
        let guard = stripe.lock().await;
        if *guard == seen
            && let Ok(version) = version
            && let Err(e) = self.backend.put_friends(uid, list.clone(), &version).await
        {
            self.backend.carried_on("caching a friend list", &e);
        }
        drop(guard);
        Ok(list)
    }

    /// Drops cached friend lists after a change (after the engine's write). Bumps each
    /// list's stripe version under its lock, so a fill that read the engine before the
    /// change sees the new version and does not cache what it read. A failure is counted
    /// and reported, not returned: the change is in the engine, and the backend does not
    /// serve the lists it failed to drop.
    pub(super) async fn invalidate_friends(&self, uids: &[u64]) {
        if self.config.cache == CacheMode::None {
            return;
        }
        let mut stripes: Vec<usize> = uids.iter().map(|&u| friend_stripe(u)).collect();
        stripes.sort_unstable();
        stripes.dedup();
        let mut guards = Vec::with_capacity(stripes.len());
        for s in stripes {
            let mut g = self.friend_stripes[s].lock().await;
            *g += 1;
            guards.push(g);
        }
        if let Err(e) = self.backend.del_friends(uids).await {
            self.metrics.cache_errors.inc();
            self.backend.carried_on("dropping cached friend lists", &e);
        }
    }
}

fn friend_stripe(uid: u64) -> usize {
    (uid.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize % FRIEND_STRIPES
}
