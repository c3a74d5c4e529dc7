//! The in-process backend, bounded in bytes: post bodies in a quick_cache (S3-FIFO, sharded:
//! a feed read looks up 50 of them, and moka's bookkeeping per read was a third of a cached
//! feed read's CPU), and in one moka cache friend lists (which expire after the time to
//! live; nothing else does), followee lists and timelines with floors. Each holds half the
//! budget.
//!
//! A followee list is cached only if no follow or unfollow of a user in its stripe (uid
//! modulo [`STRIPES`]) happened between reading the stripe's version and caching it: the
//! change bumps the version before dropping the list, and a fill checks the version again
//! after inserting, dropping its own entry if it moved, so a fill that raced a change never
//! outlives it.
//!
//! Entries are weighed when inserted, so a timeline, which grows in place behind a mutex,
//! is inserted again whenever its length has drifted far from the weighed one. Methods
//! never fail; they return `Result` to share the Redis backend's signatures, so
//! [`Backend`](super::Backend) only dispatches.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use moka::Expiry;

use super::Build;
use crate::error::Result;
use crate::post::Post;

/// Stripes of followee-list versions.
const STRIPES: usize = 4096;

/// Weighs a cached post by its bytes.
#[derive(Clone, Copy, Debug)]
struct PostBytes;

impl quick_cache::Weighter<u64, Arc<Post>> for PostBytes {
    fn weight(&self, _: &u64, post: &Arc<Post>) -> u64 {
        u64::from(post.weight())
    }
}

/// The in-process backend.
#[derive(Clone)]
pub struct Local {
    posts: Arc<quick_cache::sync::Cache<u64, Arc<Post>, PostBytes>>,
    cache: moka::sync::Cache<Key, Val>,
    /// Followee-list versions, by uid modulo [`STRIPES`].
    followee_versions: Arc<[AtomicU64]>,
}

impl std::fmt::Debug for Local {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Local")
            .field("post_bytes", &self.posts.weight())
            .field("bytes", &self.cache.weighted_size())
            .finish()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Key {
    Friends(u64),
    Followees(u64),
    Timeline(u64),
}

#[derive(Clone, Debug)]
enum Val {
    /// A friend or followee list.
    Ids(Arc<[u64]>),
    /// The timeline and the length it was weighed at (the weigher must not lock it).
    Timeline(Arc<Mutex<Timeline>>, usize),
}

/// Bytes an entry takes, roughly: a fixed overhead plus its contents.
fn weight(_: &Key, val: &Val) -> u32 {
    match val {
        Val::Ids(f) => 48 + 8 * f.len().min(1 << 28) as u32,
        Val::Timeline(_, len) => 64 + 16 * (*len).min(1 << 27) as u32,
    }
}

/// Friend lists live for the time to live from their latest insert; other entries stay
/// until evicted or invalidated.
struct Ttl(Duration);

impl Expiry<Key, Val> for Ttl {
    fn expire_after_create(&self, key: &Key, _: &Val, _: Instant) -> Option<Duration> {
        matches!(key, Key::Friends(_)).then_some(self.0)
    }
    fn expire_after_update(
        &self,
        key: &Key,
        _: &Val,
        _: Instant,
        left: Option<Duration>,
    ) -> Option<Duration> {
        if matches!(key, Key::Friends(_)) { Some(self.0) } else { left }
    }
}

/// A timeline and its floor, with the floor rules of the [module above](super).
#[derive(Debug, Default)]
struct Timeline {
    ids: BTreeSet<u64>,
    /// `None` until a build first finishes.
    floor: Option<u64>,
    /// The mark of the build under way, if any.
    build: Option<Build>,
}

impl Timeline {
    /// Up to `limit` ids in `[floor, before)`, newest first, and the floor; `None` while
    /// being built.
    fn read(&self, before: u64, limit: usize) -> Option<(Vec<u64>, u64)> {
        let floor = self.floor?;
        let ids = if floor < before {
            self.ids.range(floor..before).rev().take(limit).copied().collect()
        } else {
            Vec::new()
        };
        Some((ids, floor))
    }

    /// Completes a build: the ids are complete down to `floor`, so the floor is raised to
    /// it (never lowered: pushes since the first build skipped ids below the old floor).
    fn finish(&mut self, ids: &[u64], floor: u64, cap: usize) {
        self.ids.extend(ids);
        self.floor = Some(self.floor.map_or(floor, |f| f.max(floor)));
        self.trim(cap);
    }

    /// A push: ids below the floor are not taken (the timeline does not claim them).
    fn add(&mut self, ids: &[u64], cap: usize) {
        let floor = self.floor;
        self.ids.extend(ids.iter().filter(|&&id| floor.is_none_or(|f| id >= f)));
        self.trim(cap);
    }

    /// Keeps the newest `cap` ids, raising the floor to the oldest kept if any were dropped.
    fn trim(&mut self, cap: usize) {
        let mut trimmed = false;
        while self.ids.len() > cap {
            self.ids.pop_first();
            trimmed = true;
        }
        if trimmed && let (Some(f), Some(&oldest)) = (self.floor, self.ids.first()) {
            self.floor = Some(f.max(oldest));
        }
    }
}

impl Local {
    pub(super) const NAME: &'static str = "in-process";

    /// A cache of at most `bytes`.
    pub(super) fn new(bytes: u64, friends_ttl: Duration) -> Local {
        let half = (bytes / 2).max(1);
        // quick_cache sizes its table by an estimate of the items: posts of about 200 bytes.
        let posts = quick_cache::sync::Cache::with_weighter(
            usize::try_from(half / 200).unwrap_or(usize::MAX).max(16),
            half,
            PostBytes,
        );
        let cache = moka::sync::Cache::builder()
            .max_capacity(half)
            .weigher(weight)
            .expire_after(Ttl(friends_ttl))
            .build();
        let followee_versions = (0..STRIPES).map(|_| AtomicU64::new(0)).collect();
        Local { posts: Arc::new(posts), cache, followee_versions }
    }

    /// Bytes held, once pending evictions have run.
    pub(super) fn bytes(&self) -> u64 {
        self.cache.run_pending_tasks();
        self.cache.weighted_size() + self.posts.weight()
    }

    pub(super) fn get_posts(&self, ids: &[u64]) -> Result<Vec<Option<Arc<Post>>>> {
        Ok(ids.iter().map(|id| self.posts.get(id)).collect())
    }

    pub(super) fn put_posts(&self, posts: &[Arc<Post>]) -> Result<()> {
        for p in posts {
            self.posts.insert(p.id, p.clone());
        }
        Ok(())
    }

    pub(super) fn del_posts(&self, ids: &[u64]) -> Result<()> {
        for id in ids {
            self.posts.remove(id);
        }
        Ok(())
    }

    pub(super) fn get_friends(&self, uid: u64) -> Result<Option<Arc<[u64]>>> {
        Ok(match self.cache.get(&Key::Friends(uid)) {
            Some(Val::Ids(f)) => Some(f),
            _ => None,
        })
    }

    pub(super) fn put_friends(&self, uid: u64, list: Arc<[u64]>) -> Result<()> {
        self.cache.insert(Key::Friends(uid), Val::Ids(list));
        Ok(())
    }

    fn followee_version(&self, uid: u64) -> &AtomicU64 {
        &self.followee_versions[(uid % STRIPES as u64) as usize]
    }

    pub(super) fn get_followees(&self, uid: u64) -> Result<Option<Arc<[u64]>>> {
        Ok(match self.cache.get(&Key::Followees(uid)) {
            Some(Val::Ids(f)) => Some(f),
            _ => None,
        })
    }

    /// The version to read before the store's list and to give [`Local::put_followees`].
    pub(super) fn followees_version(&self, uid: u64) -> Result<String> {
        Ok(self.followee_version(uid).load(Ordering::SeqCst).to_string())
    }

    /// Caches the list unless a change in its stripe moved the version from `version`.
    pub(super) fn put_followees(&self, uid: u64, list: &[u64], version: &str) -> Result<()> {
        let current = || self.followee_version(uid).load(Ordering::SeqCst).to_string();
        if current() == version {
            self.cache.insert(Key::Followees(uid), Val::Ids(list.into()));
            // A change that bumped the version after the check may have dropped the list
            // before this insert: then this fill must not stay.
            if current() != version {
                self.cache.invalidate(&Key::Followees(uid));
            }
        }
        Ok(())
    }

    /// Bumps the stripe's version, then drops the list.
    pub(super) fn del_followees(&self, uid: u64) -> Result<()> {
        self.followee_version(uid).fetch_add(1, Ordering::SeqCst);
        self.cache.invalidate(&Key::Followees(uid));
        Ok(())
    }

    pub(super) fn del_friends(&self, uids: &[u64]) -> Result<()> {
        for &u in uids {
            self.cache.invalidate(&Key::Friends(u));
        }
        Ok(())
    }

    pub(super) fn timeline_read(
        &self,
        uid: u64,
        before: u64,
        limit: usize,
    ) -> Result<Option<(Vec<u64>, u64)>> {
        Ok(self.timeline(uid).and_then(|(t, _)| lock(&t).read(before, limit)))
    }

    pub(super) fn timeline_begin(&self, uid: u64) -> Build {
        let (t, _) = self.timeline_or_new(uid);
        *lock(&t).build.get_or_insert_with(Build::fresh)
    }

    pub(super) fn timeline_finish(
        &self,
        uid: u64,
        build: Build,
        ids: &[u64],
        floor: u64,
        cap: usize,
    ) -> Result<()> {
        // Dropped or evicted since the build began (pushes made since skipped it), or
        // finished by the build this one joined.
        let Some((t, weighed)) = self.timeline(uid) else { return Ok(()) };
        let len = {
            let mut g = lock(&t);
            if g.build != Some(build) {
                return Ok(());
            }
            g.build = None;
            g.finish(ids, floor, cap);
            g.ids.len()
        };
        self.reweigh(uid, &t, weighed, len);
        Ok(())
    }

    pub(super) fn timeline_add(&self, uids: &[u64], ids: &[u64], cap: usize) -> Result<()> {
        for &u in uids {
            if let Some((t, weighed)) = self.timeline(u) {
                let len = {
                    let mut g = lock(&t);
                    g.add(ids, cap);
                    g.ids.len()
                };
                self.reweigh(u, &t, weighed, len);
            }
        }
        Ok(())
    }

    pub(super) fn timeline_drop(&self, uid: u64) {
        self.cache.invalidate(&Key::Timeline(uid));
    }

    /// Removes the ids; but drops a timeline being built, whose build may have read them
    /// before and would put them back when it finishes.
    pub(super) fn timeline_remove(&self, uid: u64, ids: &[u64]) -> Result<()> {
        if let Some((t, _)) = self.timeline(uid) {
            let mut g = lock(&t);
            if g.build.is_some() || g.floor.is_none() {
                drop(g);
                self.timeline_drop(uid);
                return Ok(());
            }
            for id in ids {
                g.ids.remove(id);
            }
        }
        Ok(())
    }

    fn timeline(&self, uid: u64) -> Option<(Arc<Mutex<Timeline>>, usize)> {
        match self.cache.get(&Key::Timeline(uid)) {
            Some(Val::Timeline(t, len)) => Some((t, len)),
            _ => None,
        }
    }

    fn timeline_or_new(&self, uid: u64) -> (Arc<Mutex<Timeline>>, usize) {
        match self
            .cache
            .entry(Key::Timeline(uid))
            .or_insert_with(|| Val::Timeline(Arc::default(), 0))
            .into_value()
        {
            Val::Timeline(t, len) => (t, len),
            _ => unreachable!("timeline keys hold timelines"),
        }
    }

    /// Re-inserts a timeline whose length has doubled (or shrunk to a quarter) since it was
    /// weighed, so the byte bound keeps counting it right.
    fn reweigh(&self, uid: u64, t: &Arc<Mutex<Timeline>>, weighed: usize, len: usize) {
        if len >= 2 * weighed.max(8) || len * 4 < weighed {
            self.cache.insert(Key::Timeline(uid), Val::Timeline(t.clone(), len));
        }
    }
}

/// A timeline's lock; a panic while holding it leaves a set of ids that is still valid.
fn lock(t: &Mutex<Timeline>) -> std::sync::MutexGuard<'_, Timeline> {
    t.lock().unwrap_or_else(PoisonError::into_inner)
}
