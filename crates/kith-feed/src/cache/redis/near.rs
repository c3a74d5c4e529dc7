//! This process's copies in front of Redis: posts, which never change once stored (so a
//! copy is never stale), bounded in bytes; and, when asked for, friend lists for a short
//! time to live, the bound on how stale a `consistency=eventual` read may be after a change
//! made through another server (this server's own changes drop its copy at once). Followee
//! lists and timelines are never copied: feed reads must see every change at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::post::Post;

/// Bytes an entry is charged beyond its payload.
const OVERHEAD: u32 = 64;

/// The near copies; each kind may be off.
#[derive(Debug, Default)]
pub(super) struct Near {
    posts: Option<moka::sync::Cache<u64, Arc<Post>>>,
    friends: Option<moka::sync::Cache<u64, Arc<[u64]>>>,
    /// Bumped by every change's drop: a list read from Redis is kept only if no drop ran
    /// since the read began, so a read that raced this server's own change keeps nothing.
    drops: AtomicU64,
}

impl Near {
    /// Posts within `bytes` (0: none kept); friend lists for `friends_ttl` (zero: none
    /// kept), within a quarter of `bytes` more.
    pub(super) fn new(bytes: u64, friends_ttl: Duration) -> Near {
        let posts = (bytes > 0).then(|| {
            moka::sync::Cache::builder()
                .max_capacity(bytes)
                .weigher(|_, p: &Arc<Post>| (p.content.len() as u32).saturating_add(OVERHEAD))
                .build()
        });
        let friends = (bytes > 0 && !friends_ttl.is_zero()).then(|| {
            moka::sync::Cache::builder()
                .max_capacity(bytes / 4)
                .weigher(|_, l: &Arc<[u64]>| (8 * l.len() as u32).saturating_add(OVERHEAD))
                .time_to_live(friends_ttl)
                .build()
        });
        Near { posts, friends, drops: AtomicU64::new(0) }
    }

    pub(super) fn post(&self, id: u64) -> Option<Arc<Post>> {
        self.posts.as_ref()?.get(&id)
    }

    pub(super) fn keep_posts(&self, posts: &[Arc<Post>]) {
        if let Some(c) = &self.posts {
            for p in posts {
                c.insert(p.id, p.clone());
            }
        }
    }

    pub(super) fn forget_posts(&self, ids: &[u64]) {
        if let Some(c) = &self.posts {
            for id in ids {
                c.invalidate(id);
            }
        }
    }

    pub(super) fn friends(&self, uid: u64) -> Option<Arc<[u64]>> {
        self.friends.as_ref()?.get(&uid)
    }

    /// Where the drops stand, to hand to [`Near::keep_friends`] after reading Redis.
    pub(super) fn drops(&self) -> u64 {
        self.drops.load(Ordering::Acquire)
    }

    /// Keeps a list read from Redis, unless a drop ran since `drops` was read.
    pub(super) fn keep_friends(&self, uid: u64, list: Arc<[u64]>, drops: u64) {
        if let Some(c) = &self.friends {
            c.insert(uid, list);
            // Checked after the insert: a drop that raced it either ran before this check
            // (and the entry goes), or after the insert (and removed it itself).
            if self.drops.load(Ordering::Acquire) != drops {
                c.invalidate(&uid);
            }
        }
    }

    pub(super) fn forget_friends(&self, uids: &[u64]) {
        self.drops.fetch_add(1, Ordering::AcqRel);
        if let Some(c) = &self.friends {
            for u in uids {
                c.invalidate(u);
            }
        }
    }
}
