//! The in-process backend: one moka cache, bounded in bytes, holding post bodies, friend
//! lists (which expire after the time to live; nothing else does) and timelines with
//! floors.
//!
//! Entries are weighed when inserted, so a timeline, which grows in place behind a mutex,
//! is inserted again whenever its length has drifted far from the weighed one. Methods
//! never fail; they return `Result` to share the Redis backend's signatures, so
//! [`Backend`](super::Backend) only dispatches.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use moka::Expiry;

use crate::error::Result;
use crate::post::Post;

/// The in-process backend.
#[derive(Clone)]
pub struct Local {
    cache: moka::sync::Cache<Key, Val>,
}

impl std::fmt::Debug for Local {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Local").field("bytes", &self.cache.weighted_size()).finish()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Key {
    Post(u64),
    Friends(u64),
    Timeline(u64),
}

#[derive(Clone, Debug)]
enum Val {
    Post(Arc<Post>),
    Friends(Arc<[u64]>),
    /// The timeline and the length it was weighed at (the weigher must not lock it).
    Timeline(Arc<Mutex<Timeline>>, usize),
}

/// Bytes an entry takes, roughly: a fixed overhead plus its contents.
fn weight(_: &Key, val: &Val) -> u32 {
    match val {
        Val::Post(p) => p.weight(),
        Val::Friends(f) => 48 + 8 * f.len().min(1 << 28) as u32,
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
    /// `None` while being built.
    floor: Option<u64>,
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

    /// Completes a build: the ids are complete down to `floor`.
    fn finish(&mut self, ids: &[u64], floor: u64, cap: usize) {
        self.ids.extend(ids);
        self.floor = Some(floor);
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
        let cache = moka::sync::Cache::builder()
            .max_capacity(bytes)
            .weigher(weight)
            .expire_after(Ttl(friends_ttl))
            .build();
        Local { cache }
    }

    /// Bytes held, once pending evictions have run.
    pub(super) fn bytes(&self) -> u64 {
        self.cache.run_pending_tasks();
        self.cache.weighted_size()
    }

    pub(super) fn get_posts(&self, ids: &[u64]) -> Result<Vec<Option<Arc<Post>>>> {
        Ok(ids
            .iter()
            .map(|&id| match self.cache.get(&Key::Post(id)) {
                Some(Val::Post(p)) => Some(p),
                _ => None,
            })
            .collect())
    }

    pub(super) fn put_posts(&self, posts: &[Arc<Post>]) -> Result<()> {
        for p in posts {
            self.cache.insert(Key::Post(p.id), Val::Post(p.clone()));
        }
        Ok(())
    }

    pub(super) fn del_posts(&self, ids: &[u64]) -> Result<()> {
        for &id in ids {
            self.cache.invalidate(&Key::Post(id));
        }
        Ok(())
    }

    pub(super) fn get_friends(&self, uid: u64) -> Result<Option<Arc<[u64]>>> {
        Ok(match self.cache.get(&Key::Friends(uid)) {
            Some(Val::Friends(f)) => Some(f),
            _ => None,
        })
    }

    pub(super) fn put_friends(&self, uid: u64, list: Arc<[u64]>) -> Result<()> {
        self.cache.insert(Key::Friends(uid), Val::Friends(list));
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

    pub(super) fn timeline_begin(&self, uid: u64) -> Result<()> {
        self.timeline_or_new(uid);
        Ok(())
    }

    pub(super) fn timeline_finish(
        &self,
        uid: u64,
        ids: &[u64],
        floor: u64,
        cap: usize,
    ) -> Result<()> {
        let (t, weighed) = self.timeline_or_new(uid);
        let len = {
            let mut g = lock(&t);
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

    pub(super) fn timeline_remove(&self, uid: u64, ids: &[u64]) -> Result<()> {
        if let Some((t, _)) = self.timeline(uid) {
            let mut g = lock(&t);
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
