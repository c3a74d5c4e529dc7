//! This process's copies in front of Redis: posts, which never change once stored (so a
//! copy is never stale), bounded in bytes; and, when asked for, friend lists for a short
//! time to live, the bound on how stale a `consistency=eventual` read may be after a change
//! made through another server (this server's own changes drop its copy at once). Followee
//! lists and timelines are never copied: feed reads must see every change at once.

use std::sync::Arc;
use std::time::Duration;

use crate::post::Post;

/// Bytes an entry is charged beyond its payload.
const OVERHEAD: u32 = 64;

/// The near copies; each kind may be off.
#[derive(Debug, Default)]
pub(super) struct Near {
    posts: Option<moka::sync::Cache<u64, Arc<Post>>>,
    friends: Option<moka::sync::Cache<u64, Arc<[u64]>>>,
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
        Near { posts, friends }
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

    pub(super) fn keep_friends(&self, uid: u64, list: Arc<[u64]>) {
        if let Some(c) = &self.friends {
            c.insert(uid, list);
        }
    }

    pub(super) fn forget_friends(&self, uids: &[u64]) {
        if let Some(c) = &self.friends {
            for u in uids {
                c.invalidate(u);
            }
        }
    }
}
