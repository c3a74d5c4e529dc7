//! Cache and timeline backends: in-process (quick_cache for posts and moka for the rest,
//! bounded in bytes) or Redis.
//!
//! Both hold four kinds of entries: post bodies, friend lists (with a time to live, for
//! `consistency=eventual` reads), followee lists (for feed reads) and push timelines. A timeline is a set of post ids with a
//! **floor**: every post of the followees with an id at or above the floor is in it, so a
//! read takes ids from the timeline down to the floor and pulls anything older from the
//! feed database. A timeline without a floor is being built (or was made by a push that
//! raced a build) and is not read. Pushes below the floor are not taken. Trimming to the
//! timeline length raises the floor to the oldest id kept; removing ids leaves it alone;
//! a build never lowers it.
//!
//! A build begins by marking the timeline with a [`Build`] token (creating it if missing,
//! or joining the build already marked), reads the store, and finishes only if its token
//! is still the mark: **a build finishes nothing once its timeline was dropped or deleted
//! after it began, even if another build has begun since** (the pushes between the drop
//! and that other build skipped the timeline, and only the other build's read has them).
//! The first build to finish clears the mark; builds that joined it finish nothing.
//!
//! [`Backend`] is the seam the feed calls: an enum whose methods only dispatch, so each call
//! is a plain future (no boxing) and each backend keeps its own type. `local.rs` holds the
//! in-process backend, whose timelines apply the floor rules above; `redis.rs` the Redis one,
//! whose Lua scripts (`lua.rs`) apply the same rules atomically inside Redis. The rules
//! therefore exist twice, in Rust and in Lua; `tests.rs` runs the same scenarios on both so
//! they agree.
//!
//! Only the Redis backend fails. Its calls are bounded in time and fail at once while Redis
//! is known to be unavailable (`health.rs`); the feed answers reads from the store instead
//! and treats a cache write that fails after a store write as a warning. Entries a failed
//! write left stale are never served (`health.rs`); `tests_faults.rs` breaks a real Redis
//! in each way to check it.

mod con;
mod health;
mod local;
mod lua;
mod redis;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_cluster;
#[cfg(test)]
mod tests_faults;
mod writeback;

pub(crate) use writeback::SHARDS;

use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use self::local::Local;
use self::redis::Redis;
pub use self::redis::Target;
use crate::config::FeedConfig;
use crate::error::{Error, Result};
use crate::post::Post;

/// The mark of a timeline build, given by [`Backend::timeline_begin`] to
/// [`Backend::timeline_finish`]. Random (64 bits), so that servers sharing a Redis never
/// take one another's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Build(u64);

impl Build {
    fn fresh() -> Build {
        static MADE: AtomicU64 = AtomicU64::new(0);
        Build(RandomState::new().hash_one(MADE.fetch_add(1, Ordering::Relaxed)))
    }
}

/// The per-user lists a backend caches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum List {
    /// Friend lists, for `consistency=eventual` reads.
    Friends,
    /// Whom a user follows, for feed reads.
    Followees,
}

impl List {
    fn index(self) -> usize {
        match self {
            List::Friends => 0,
            List::Followees => 1,
        }
    }

    /// The kind's letter in Redis keys: `<prefix>:<tag>:{uid}`, versions `<tag>v`.
    fn tag(self) -> &'static str {
        match self {
            List::Friends => "f",
            List::Followees => "g",
        }
    }

    const ALL: [List; 2] = [List::Friends, List::Followees];
}

/// Where caches and timelines live.
#[derive(Clone, Debug)]
pub enum Backend {
    /// In this process, bounded in bytes.
    Local(Local),
    /// In Redis (boxed: a connection and four scripts outweigh a moka handle many times).
    Redis(Box<Redis>),
}

impl Backend {
    /// An in-process backend of at most `bytes`.
    pub fn local(bytes: u64, friends_ttl: Duration) -> Backend {
        Backend::Local(Local::new(bytes, friends_ttl))
    }

    /// Connects to Redis at `url` (checked with a PING), with the prefix, friend-list time
    /// to live, timeouts and probe interval of `config`.
    pub async fn redis(url: &str, config: &FeedConfig) -> Result<Backend> {
        Backend::redis_at(Target::One(url), config).await
    }

    /// Connects to one Redis or a Redis Cluster.
    pub async fn redis_at(target: Target<'_>, config: &FeedConfig) -> Result<Backend> {
        Ok(Backend::Redis(Box::new(Redis::connect(target, config).await?)))
    }

    /// Why the backend is not serving (Redis down, paused or refusing writes), or `None`
    /// while it is. The in-process backend always serves.
    pub fn health(&self) -> Option<String> {
        match self {
            Backend::Local(_) => None,
            Backend::Redis(r) => r.failure(),
        }
    }

    /// Reports a failed call the feed carries on without (answering from the store, or
    /// leaving the cache cold). While the backend is known to be unavailable the failure
    /// is expected and its cause was reported when it became so: nothing is printed.
    pub fn carried_on(&self, what: &str, e: &Error) {
        if self.health().is_none() {
            eprintln!("kith feed: {what} failed, carrying on without the cache: {e}");
        }
    }

    /// "in-process", "redis" or "redis-cluster".
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Local(_) => Local::NAME,
            Backend::Redis(r) if r.is_cluster() => "redis-cluster",
            Backend::Redis(_) => Redis::NAME,
        }
    }

    /// Bytes held (in-process only).
    pub fn bytes(&self) -> Option<u64> {
        match self {
            Backend::Local(l) => Some(l.bytes()),
            Backend::Redis(_) => None,
        }
    }

    /// Cached posts, in the order of `ids`.
    pub async fn get_posts(&self, ids: &[u64]) -> Result<Vec<Option<Arc<Post>>>> {
        match self {
            Backend::Local(l) => l.get_posts(ids),
            Backend::Redis(r) => r.get_posts(ids).await,
        }
    }

    /// Caches posts.
    pub async fn put_posts(&self, posts: &[Arc<Post>]) -> Result<()> {
        match self {
            Backend::Local(l) => l.put_posts(posts),
            Backend::Redis(r) => r.put_posts(posts).await,
        }
    }

    /// Drops cached posts.
    pub async fn del_posts(&self, ids: &[u64]) -> Result<()> {
        match self {
            Backend::Local(l) => l.del_posts(ids),
            Backend::Redis(r) => r.del_posts(ids).await,
        }
    }

    /// A cached list of whom the user follows. (In one process too: the engine's read is a
    /// hop to the blocking pool and a range scan, where this is a hash lookup.)
    pub async fn get_followees(&self, uid: u64) -> Result<Option<Arc<[u64]>>> {
        match self {
            Backend::Local(l) => l.get_followees(uid),
            Backend::Redis(r) => r.get_list(List::Followees, uid).await,
        }
    }

    /// As [`Backend::friends_version`], for a followee list.
    pub async fn followees_version(&self, uid: u64) -> Result<String> {
        match self {
            Backend::Local(l) => l.followees_version(uid),
            Backend::Redis(r) => r.list_version(List::Followees, uid).await,
        }
    }

    /// As [`Backend::put_friends`], for a followee list.
    pub async fn put_followees(&self, uid: u64, list: &[u64], version: &str) -> Result<()> {
        match self {
            Backend::Local(l) => l.put_followees(uid, list, version),
            Backend::Redis(r) => r.put_list(List::Followees, uid, list, version).await,
        }
    }

    /// Drops a cached followee list (and bumps its version).
    pub async fn del_followees(&self, uid: u64) -> Result<()> {
        match self {
            Backend::Local(l) => l.del_followees(uid),
            Backend::Redis(r) => r.del_lists(List::Followees, &[uid]).await,
        }
    }

    /// A cached friend list.
    pub async fn get_friends(&self, uid: u64) -> Result<Option<Arc<[u64]>>> {
        match self {
            Backend::Local(l) => l.get_friends(uid),
            Backend::Redis(r) => r.get_list(List::Friends, uid).await,
        }
    }

    /// The version of a friend list, to read before reading the store for a fill and to
    /// hand to [`Backend::put_friends`] (Redis; in process, a fill is guarded by the feed's
    /// own stripes, and this is empty).
    pub async fn friends_version(&self, uid: u64) -> Result<String> {
        match self {
            Backend::Local(_) => Ok(String::new()),
            Backend::Redis(r) => r.list_version(List::Friends, uid).await,
        }
    }

    /// Caches a friend list for the time to live, unless a change bumped its version since
    /// `version` was read.
    pub async fn put_friends(&self, uid: u64, list: Arc<[u64]>, version: &str) -> Result<()> {
        match self {
            Backend::Local(l) => l.put_friends(uid, list),
            Backend::Redis(r) => r.put_list(List::Friends, uid, &list, version).await,
        }
    }

    /// Drops cached friend lists (and bumps their versions).
    pub async fn del_friends(&self, uids: &[u64]) -> Result<()> {
        match self {
            Backend::Local(l) => l.del_friends(uids),
            Backend::Redis(r) => r.del_lists(List::Friends, uids).await,
        }
    }

    /// Up to `limit` ids of the timeline below `before`, at or above its floor, newest
    /// first, and the floor; `None` when there is no complete timeline.
    pub async fn timeline_read(
        &self,
        uid: u64,
        before: u64,
        limit: usize,
    ) -> Result<Option<(Vec<u64>, u64)>> {
        match self {
            Backend::Local(l) => l.timeline_read(uid, before, limit),
            Backend::Redis(r) => r.timeline_read(uid, before, limit).await,
        }
    }

    /// Marks a timeline as being built (creating it if missing), so pushes land in it
    /// while the build reads; the mark it has, or a new one.
    pub async fn timeline_begin(&self, uid: u64) -> Result<Build> {
        match self {
            Backend::Local(l) => Ok(l.timeline_begin(uid)),
            Backend::Redis(r) => r.timeline_begin(uid, Build::fresh()).await,
        }
    }

    /// Completes a build: adds `ids` (the newest posts, complete down to `floor`; 0 = all),
    /// trims to `cap`, raises the floor to `floor` and clears the mark. Does nothing unless
    /// `build` is still the timeline's mark (see the [module](self)): a timeline dropped or
    /// evicted since the build began stays dropped, or is left to the build begun since.
    pub async fn timeline_finish(
        &self,
        uid: u64,
        build: Build,
        ids: &[u64],
        floor: u64,
        cap: usize,
    ) -> Result<()> {
        match self {
            Backend::Local(l) => l.timeline_finish(uid, build, ids, floor, cap),
            Backend::Redis(r) => r.timeline_finish(uid, build, ids, floor, cap).await,
        }
    }

    /// Adds `ids` to each of these users' timelines that exists (complete or being built);
    /// users without one are skipped (their timeline is built when they read). Pipelined.
    pub async fn timeline_add(&self, uids: &[u64], ids: &[u64], cap: usize) -> Result<()> {
        match self {
            Backend::Local(l) => l.timeline_add(uids, ids, cap),
            Backend::Redis(r) => r.timeline_add(uids, ids, cap).await,
        }
    }

    /// The Redis Cluster behind the backend, for write-back shared by servers; an error
    /// for any other backend.
    pub(crate) fn shared_writeback(&self) -> Result<&Redis> {
        match self {
            Backend::Redis(r) if r.is_cluster() => Ok(r),
            _ => Err(Error::Invalid(
                "write-back shared by several servers needs a Redis Cluster (--redis-cluster)"
                    .into(),
            )),
        }
    }

    /// Drops a user's timeline (it is built again from the store when next read), after an
    /// update it should have had failed. Never fails: where Redis cannot take the
    /// deletion now, the timeline is read as a miss here and deleted once Redis is back.
    pub async fn timeline_drop(&self, uid: u64) {
        match self {
            Backend::Local(l) => l.timeline_drop(uid),
            Backend::Redis(r) => {
                if let Err(e) = r.timeline_drop(uid).await {
                    self.carried_on("dropping a timeline", &e);
                }
            }
        }
    }

    /// Removes ids from a user's timeline.
    pub async fn timeline_remove(&self, uid: u64, ids: &[u64]) -> Result<()> {
        match self {
            Backend::Local(l) => l.timeline_remove(uid, ids),
            Backend::Redis(r) => r.timeline_remove(uid, ids).await,
        }
    }
}
