//! The feed service: follows, posts, and pull, push or hybrid timelines, with optional
//! cache-aside or journaled write-back caching of post bodies.

use std::collections::{BinaryHeap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use kith_store::Store;
use prometheus::Registry;
use tokio::sync::{Mutex as AsyncMutex, Notify, mpsc};
use tokio::task::JoinHandle;

use crate::cache::Backend;
use crate::config::{CacheMode, FeedConfig, Strategy};
use crate::db::{Degree, FeedDb};
use crate::error::{Error, Result};
use crate::journal::{Journal, SharedPending, lock};
use crate::metrics::Metrics;
use crate::post::{IdGen, Post, check_content, now_ms};

mod background;
use background::remove_segments;

/// The most posts one feed page holds.
pub const MAX_FEED_PAGE: usize = 1000;

/// A page of a feed.
#[derive(Clone, Debug)]
pub struct FeedPage {
    /// Newest first.
    pub posts: Vec<Arc<Post>>,
    /// The cursor for the next (older) page, if there may be one.
    pub next: Option<u64>,
}

/// The follow lists of a user.
#[derive(Clone, Debug)]
pub struct Follows {
    /// A page of whom the user follows.
    pub followees: Vec<u64>,
    /// A page of who follows the user.
    pub followers: Vec<u64>,
    /// Counts.
    pub degree: Degree,
}

/// Hit and miss counts of one cache kind.
#[derive(Clone, Copy, Debug, Default)]
pub struct HitRate {
    /// Served from the cache.
    pub hits: u64,
    /// Not in the cache.
    pub misses: u64,
}

impl HitRate {
    /// hits / (hits + misses), or `None` before any request.
    pub fn rate(&self) -> Option<f64> {
        let n = self.hits + self.misses;
        (n > 0).then(|| self.hits as f64 / n as f64)
    }
}

enum FanJob {
    /// A new post: add it to every follower's timeline.
    Post { author: u64, id: u64 },
    /// An author stopped being a celebrity: add its recent posts to followers' timelines.
    Author { author: u64 },
}

/// The feed service. Shared as `Arc<Feed>`; [`Feed::shutdown`] before dropping.
pub struct Feed {
    store: Arc<Store>,
    db: Arc<FeedDb>,
    backend: Backend,
    config: FeedConfig,
    pending: SharedPending,
    journal: Option<Journal>,
    ids: IdGen,
    fanout: mpsc::Sender<FanJob>,
    depth: Arc<AtomicI64>,
    idle: Arc<Notify>,
    closing: AtomicBool,
    tasks: std::sync::Mutex<Vec<JoinHandle<()>>>,
    to_delete: AsyncMutex<Vec<std::path::PathBuf>>,
    /// Versions of friend-list cache stripes, bumped on every change.
    friend_stripes: Box<[AsyncMutex<u64>]>,
    metrics: Metrics,
}

impl std::fmt::Debug for Feed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feed")
            .field("config", &self.config)
            .field("backend", &self.backend.name())
            .finish_non_exhaustive()
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f).await.map_err(|e| Error::Invalid(format!("task failed: {e}")))?
}

/// Merges lists sorted newest first into the newest `limit` ids, dropping duplicates.
pub fn merge_newest(lists: &[Vec<u64>], limit: usize) -> Vec<u64> {
    let mut heap: BinaryHeap<(u64, usize, usize)> =
        lists.iter().enumerate().filter_map(|(i, l)| l.first().map(|&id| (id, i, 0))).collect();
    let mut out: Vec<u64> = Vec::with_capacity(limit.min(1024));
    while out.len() < limit {
        let Some((id, i, at)) = heap.pop() else { break };
        if out.last() != Some(&id) {
            out.push(id);
        }
        if let Some(&next) = lists[i].get(at + 1) {
            heap.push((next, i, at + 1));
        }
    }
    out
}

impl Feed {
    /// Opens the feed next to `store` (`<store>/feed`, `<store>/feed-journal`), replays any
    /// journal a previous run left, connects the backend and starts the background tasks.
    pub async fn open(
        store: Arc<Store>,
        config: FeedConfig,
        registry: &Registry,
    ) -> Result<Arc<Feed>> {
        if config.timeline_len == 0 {
            return Err(Error::Invalid("timeline length must be at least 1".into()));
        }
        let root = store.path().to_path_buf();
        let db_dir = root.join("feed");
        let db = Arc::new(blocking(move || FeedDb::open(&db_dir)).await?);
        let backend = match &config.redis {
            Some(url) => Backend::redis(url, &config.redis_prefix, config.friends_ttl).await?,
            None => Backend::local(config.cache_bytes, config.friends_ttl),
        };
        let pending = SharedPending::default();
        let journal_dir = root.join("feed-journal");
        let metrics = Metrics::new(registry);
        let (journal, replayed, old) =
            Journal::open(&journal_dir, pending.clone(), metrics.journal.clone())?;
        let mut last = db.last_post_id()?;
        if !replayed.is_empty() {
            last = last.max(replayed.iter().map(|p| p.id).max().unwrap_or(0));
            let db2 = db.clone();
            blocking(move || db2.put_posts(&replayed.iter().collect::<Vec<_>>())).await?;
        }
        remove_segments(&old, &journal_dir)?;
        let journal = if config.cache == CacheMode::WriteBack {
            Some(journal)
        } else {
            journal.close();
            None
        };
        let (tx, rx) = mpsc::channel(1 << 16);
        let feed = Arc::new(Feed {
            store,
            db,
            backend,
            pending,
            journal,
            ids: IdGen::new(last),
            fanout: tx,
            depth: Arc::new(AtomicI64::new(0)),
            idle: Arc::new(Notify::new()),
            closing: AtomicBool::new(false),
            tasks: std::sync::Mutex::new(Vec::new()),
            to_delete: AsyncMutex::new(Vec::new()),
            friend_stripes: (0..FRIEND_STRIPES).map(|_| AsyncMutex::new(0)).collect(),
            metrics,
            config,
        });
        let dispatcher = tokio::spawn(Feed::dispatch(feed.clone(), rx));
        let mut tasks = vec![dispatcher];
        if feed.journal.is_some() {
            tasks.push(tokio::spawn(Feed::flusher(feed.clone())));
        }
        *feed.tasks.lock().expect("fresh mutex") = tasks;
        Ok(feed)
    }

    /// The settings.
    pub fn config(&self) -> &FeedConfig {
        &self.config
    }

    /// The backend's name ("in-process" or "redis").
    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    /// Bytes the in-process backend holds.
    pub fn cache_bytes_used(&self) -> Option<u64> {
        self.backend.bytes()
    }

    /// Hit and miss counts of a cache kind: "post", "friends" or "timeline".
    pub fn hit_rate(&self, kind: &str) -> HitRate {
        let get = |r: &str| self.metrics.cache.with_label_values(&[kind, r]).get();
        HitRate { hits: get("hit"), misses: get("miss") }
    }

    /// Fan-out jobs queued or running.
    pub fn fanout_depth(&self) -> i64 {
        self.depth.load(Ordering::SeqCst)
    }

    /// Write-back journal appends and `fdatasync` calls so far.
    pub fn journal_counts(&self) -> (u64, u64) {
        (self.metrics.journal.appends.get(), self.metrics.journal.syncs.get())
    }

    /// Posts acknowledged but still only in the journal.
    pub fn pending_posts(&self) -> usize {
        lock(&self.pending).posts.len()
    }

    fn pushed(&self, author: u64) -> bool {
        match self.config.strategy {
            Strategy::Pull => false,
            Strategy::Push => true,
            Strategy::Hybrid => self.db.degree(author).followers <= self.config.celebrity_threshold,
        }
    }

    async fn require_users(&self, uids: Vec<u64>) -> Result<()> {
        let store = self.store.clone();
        blocking(move || {
            for u in uids {
                if !store.contains(u)? {
                    return Err(kith_store::Error::UnknownUser(u).into());
                }
            }
            Ok(())
        })
        .await
    }

    /// Publishes a post; returns it with its id and time once it is durable.
    pub async fn post(&self, author: u64, content: String) -> Result<Arc<Post>> {
        check_content(&content)?;
        if self.closing.load(Ordering::SeqCst) {
            return Err(Error::ShuttingDown);
        }
        self.require_users(vec![author]).await?;
        let post = Arc::new(Post { id: self.ids.next(), author, ts_ms: now_ms(), content });
        match (&self.journal, self.config.cache) {
            (Some(journal), _) => {
                journal.append(post.clone()).await?;
                self.metrics.pending.inc();
                if let Err(e) = self.backend.put_posts(std::slice::from_ref(&post)).await {
                    // Durable in the journal; the cache only misses it.
                    self.metrics.cache_errors.inc();
                    eprintln!("kith feed: caching post {} failed: {e}", post.id);
                }
            }
            (None, mode) => {
                let db = self.db.clone();
                let p = post.clone();
                blocking(move || db.put_posts(&[p.as_ref()])).await?;
                if mode == CacheMode::Aside {
                    self.backend.del_posts(&[post.id]).await?;
                }
            }
        }
        if self.pushed(author) {
            self.enqueue(FanJob::Post { author, id: post.id }).await;
        }
        Ok(post)
    }

    /// One post.
    pub async fn get_post(&self, id: u64) -> Result<Arc<Post>> {
        self.get_posts(&[id]).await?.pop().ok_or(Error::UnknownPost(id))
    }

    /// The posts with these ids that exist, in the same order.
    pub async fn get_posts(&self, ids: &[u64]) -> Result<Vec<Arc<Post>>> {
        let mut found: Vec<Option<Arc<Post>>> = if self.config.cache == CacheMode::None {
            vec![None; ids.len()]
        } else {
            self.backend.get_posts(ids).await?
        };
        let missing: Vec<usize> = (0..ids.len()).filter(|&i| found[i].is_none()).collect();
        if self.config.cache != CacheMode::None {
            self.metrics.hit("post", true, (ids.len() - missing.len()) as u64);
            self.metrics.hit("post", false, missing.len() as u64);
        }
        if !missing.is_empty() {
            // Pending first, then the database: a flush stores before it un-pends.
            let mut still = Vec::new();
            {
                let p = lock(&self.pending);
                for &i in &missing {
                    match p.posts.get(&ids[i]) {
                        Some(post) => found[i] = Some(post.clone()),
                        None => still.push(i),
                    }
                }
            }
            let want: Vec<u64> = still.iter().map(|&i| ids[i]).collect();
            let db = self.db.clone();
            let got = blocking(move || db.get_posts(&want)).await?;
            let mut fill = Vec::new();
            for (i, post) in still.into_iter().zip(got) {
                if let Some(post) = post {
                    let post = Arc::new(post);
                    fill.push(post.clone());
                    found[i] = Some(post);
                }
            }
            if self.config.cache != CacheMode::None && !fill.is_empty() {
                self.backend.put_posts(&fill).await?;
            }
        }
        Ok(found.into_iter().flatten().collect())
    }

    /// The author's newest `timeline_len` post ids.
    async fn author_recent(&self, author: u64) -> Result<Vec<u64>> {
        self.pull(vec![author], u64::MAX, self.config.timeline_len).await
    }

    /// Pull: the newest `limit` post ids below `before` by these authors (k-way merge).
    async fn pull(&self, authors: Vec<u64>, before: u64, limit: usize) -> Result<Vec<u64>> {
        if authors.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let db = self.db.clone();
        let pending = self.pending.clone();
        blocking(move || {
            let mut lists = Vec::with_capacity(authors.len());
            for a in authors {
                let mut ids = lock(&pending).author_posts(a, before, limit);
                ids.extend(db.author_posts(a, before, limit)?);
                ids.sort_unstable_by(|x, y| y.cmp(x));
                ids.dedup();
                ids.truncate(limit);
                lists.push(ids);
            }
            Ok(merge_newest(&lists, limit))
        })
        .await
    }

    /// Builds a user's timeline from a pull over `authors`.
    async fn build_timeline(&self, uid: u64, authors: Vec<u64>) -> Result<()> {
        self.metrics.timeline_builds.inc();
        self.backend.timeline_begin(uid).await?;
        let cap = self.config.timeline_len;
        let ids = self.pull(authors, u64::MAX, cap).await?;
        let floor = if ids.len() == cap { *ids.last().expect("cap >= 1") } else { 0 };
        self.backend.timeline_finish(uid, &ids, floor, cap).await
    }

    /// Push read: the timeline down to its floor, then a pull below it.
    async fn push_read(
        &self,
        uid: u64,
        authors: &[u64],
        before: u64,
        limit: usize,
    ) -> Result<Vec<u64>> {
        let mut got = self.backend.timeline_read(uid, before, limit).await?;
        self.metrics.hit("timeline", got.is_some(), 1);
        if got.is_none() {
            self.build_timeline(uid, authors.to_vec()).await?;
            got = self.backend.timeline_read(uid, before, limit).await?;
        }
        match got {
            Some((mut ids, floor)) => {
                if ids.len() < limit && floor > 0 {
                    let older = self.pull(authors.to_vec(), before.min(floor), limit - ids.len());
                    ids.extend(older.await?);
                }
                Ok(ids)
            }
            // Evicted between build and read: answer by pull.
            None => self.pull(authors.to_vec(), before, limit).await,
        }
    }

    /// A user's feed: posts by the users they follow, newest first, below `before`.
    pub async fn feed(&self, uid: u64, before: Option<u64>, limit: usize) -> Result<FeedPage> {
        if limit == 0 || limit > MAX_FEED_PAGE {
            return Err(Error::TooLarge {
                what: "feed page",
                got: limit as u64,
                limit: MAX_FEED_PAGE as u64,
            });
        }
        let before = before.unwrap_or(u64::MAX);
        let (db, store) = (self.db.clone(), self.store.clone());
        // One trip to the blocking pool: the reader exists, and whom they follow.
        let followees = blocking(move || {
            if !store.contains(uid)? {
                return Err(kith_store::Error::UnknownUser(uid).into());
            }
            db.followees(uid, 0, usize::MAX)
        })
        .await?;
        let ids = match self.config.strategy {
            Strategy::Pull => self.pull(followees.clone(), before, limit).await?,
            Strategy::Push => self.push_read(uid, &followees, before, limit).await?,
            Strategy::Hybrid => {
                let threshold = self.config.celebrity_threshold;
                let (celebs, normal): (Vec<u64>, Vec<u64>) =
                    followees.iter().partition(|&&f| self.db.degree(f).followers > threshold);
                let pushed = self.push_read(uid, &normal, before, limit).await?;
                let pulled = self.pull(celebs, before, limit).await?;
                merge_newest(&[pushed, pulled], limit)
            }
        };
        let next = (ids.len() == limit).then(|| *ids.last().expect("limit >= 1"));
        let following: HashSet<u64> = followees.into_iter().collect();
        let mut posts = self.get_posts(&ids).await?;
        // A push that raced an unfollow may have left a post of someone no longer followed.
        posts.retain(|p| following.contains(&p.author));
        Ok(FeedPage { posts, next })
    }

    /// Makes `uid` follow `targets` (all or none), then backfills their recent posts into
    /// the user's timeline.
    pub async fn follow(&self, uid: u64, targets: Vec<u64>) -> Result<()> {
        if targets.contains(&uid) {
            return Err(Error::SelfFollow(uid));
        }
        let mut all = vec![uid];
        all.extend(&targets);
        self.require_users(all).await?;
        let db = self.db.clone();
        let t = targets.clone();
        blocking(move || db.follow(uid, &t)).await?;
        if self.config.strategy != Strategy::Pull {
            for t in targets {
                if self.pushed(t) {
                    let ids = self.author_recent(t).await?;
                    self.backend.timeline_add(&[uid], &ids, self.config.timeline_len).await?;
                }
            }
        }
        Ok(())
    }

    /// Makes `uid` stop following `target`, and removes the target's posts from the user's
    /// timeline.
    pub async fn unfollow(&self, uid: u64, target: u64) -> Result<()> {
        self.require_users(vec![uid, target]).await?;
        let db = self.db.clone();
        let (before, after) = blocking(move || db.unfollow(uid, target)).await?;
        if self.config.strategy != Strategy::Pull {
            let ids = self.author_recent(target).await?;
            self.backend.timeline_remove(uid, &ids).await?;
            let t = self.config.celebrity_threshold;
            if self.config.strategy == Strategy::Hybrid && before > t && after <= t {
                self.enqueue(FanJob::Author { author: target }).await;
            }
        }
        Ok(())
    }

    /// Pages of whom `uid` follows and who follows `uid`.
    pub async fn follows(&self, uid: u64, offset: usize, limit: usize) -> Result<Follows> {
        self.require_users(vec![uid]).await?;
        let db = self.db.clone();
        blocking(move || {
            Ok(Follows {
                followees: db.followees(uid, offset, limit)?,
                followers: db.followers(uid, offset, limit)?,
                degree: db.degree(uid),
            })
        })
        .await
    }

    /// A friend list as `consistency=eventual` reads it: from the cache when there, else
    /// from the store (then cached). A fill that raced a change is dropped (see
    /// [`Feed::invalidate_friends`]), so this server never caches a list older than a
    /// change it acknowledged; the time to live bounds what other servers sharing a Redis
    /// can leave behind.
    pub async fn friends_eventual(&self, uid: u64) -> Result<Arc<[u64]>> {
        if self.config.cache == CacheMode::None {
            let store = self.store.clone();
            return Ok(blocking(move || Ok(store.get_all_friends(uid)?)).await?.into());
        }
        if let Some(f) = self.backend.get_friends(uid).await? {
            self.metrics.hit("friends", true, 1);
            return Ok(f);
        }
        self.metrics.hit("friends", false, 1);
        let stripe = &self.friend_stripes[friend_stripe(uid)];
        let seen = *stripe.lock().await;
        let store = self.store.clone();
        let list: Arc<[u64]> = blocking(move || Ok(store.get_all_friends(uid)?)).await?.into();
        let guard = stripe.lock().await;
        if *guard == seen {
            self.backend.put_friends(uid, list.clone()).await?;
        }
        drop(guard);
        Ok(list)
    }

    /// Drops cached friend lists after a change (call after the store write). Bumps each
    /// list's stripe version under its lock, so a fill that read the store before the change
    /// sees the new version and does not cache what it read.
    pub async fn invalidate_friends(&self, uids: &[u64]) -> Result<()> {
        if self.config.cache == CacheMode::None {
            return Ok(());
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
        self.backend.del_friends(uids).await
    }
}

const FRIEND_STRIPES: usize = 256;

fn friend_stripe(uid: u64) -> usize {
    (uid.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize % FRIEND_STRIPES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_takes_the_newest_once() {
        let lists = vec![vec![9, 5, 1], vec![8, 5, 2], vec![], vec![10]];
        assert_eq!(merge_newest(&lists, 4), vec![10, 9, 8, 5]);
        assert_eq!(merge_newest(&lists, 100), vec![10, 9, 8, 5, 2, 1]);
        assert_eq!(merge_newest(&[], 3), Vec::<u64>::new());
    }
}
