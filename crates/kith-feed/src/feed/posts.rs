//! Posting and reading: a post stored (or journaled) and queued for fan-out, posts by id
//! through the cache, and feeds by pull (k-way merge), push (timelines) or both.

use std::collections::{BinaryHeap, HashSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{FanJob, Feed, FeedPage, MAX_FEED_PAGE};
use crate::config::{CacheMode, Strategy};
use crate::error::{Error, Result};
use crate::journal::lock;
use crate::post::{Post, check_content, now_ms};
use crate::task::blocking;

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
                let engine = self.engine.clone();
                let p = post.clone();
                blocking(move || engine.put_posts(&[p.as_ref()])).await?;
                if mode == CacheMode::Aside {
                    self.backend.del_posts(&[post.id]).await?;
                }
            }
        }
        if self.pushed(author)? {
            self.enqueue(FanJob::Post { author, id: post.id }).await;
        }
        Ok(post)
    }

    /// One post.
    pub async fn get_post(&self, id: u64) -> Result<Arc<Post>> {
        self.get_posts(&[id]).await?.pop().ok_or(Error::UnknownPost(id))
    }

    /// The posts with these ids that exist, in the same order: from the cache, else from
    /// the write-back journal or the engine (also when the cache fails).
    pub async fn get_posts(&self, ids: &[u64]) -> Result<Vec<Arc<Post>>> {
        let cached = if self.config.cache == CacheMode::None {
            None
        } else {
            // The cache failing only means reading the store: posts never change.
            self.backend
                .get_posts(ids)
                .await
                .inspect_err(|e| self.backend.carried_on("reading cached posts", e))
                .ok()
        };
        let mut found: Vec<Option<Arc<Post>>> = cached.unwrap_or_else(|| vec![None; ids.len()]);
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
            let engine = self.engine.clone();
            let got = blocking(move || engine.get_posts(&want)).await?;
            let mut fill = Vec::new();
            for (i, post) in still.into_iter().zip(got) {
                if let Some(post) = post {
                    let post = Arc::new(post);
                    fill.push(post.clone());
                    found[i] = Some(post);
                }
            }
            if self.config.cache != CacheMode::None
                && !fill.is_empty()
                && let Err(e) = self.backend.put_posts(&fill).await
            {
                self.backend.carried_on("caching posts", &e);
            }
        }
        Ok(found.into_iter().flatten().collect())
    }

    /// The author's newest `timeline_len` post ids.
    pub(super) async fn author_recent(&self, author: u64) -> Result<Vec<u64>> {
        self.pull(vec![author], u64::MAX, self.config.timeline_len).await
    }

    /// Pull: the newest `limit` post ids below `before` by these authors (k-way merge).
    async fn pull(&self, authors: Vec<u64>, before: u64, limit: usize) -> Result<Vec<u64>> {
        if authors.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let engine = self.engine.clone();
        let pending = self.pending.clone();
        blocking(move || -> Result<Vec<u64>> {
            let mut lists = Vec::with_capacity(authors.len());
            for a in authors {
                let mut ids = lock(&pending).author_posts(a, before, limit);
                ids.extend(engine.author_posts(a, before, limit)?);
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

    /// Push read: the timeline down to its floor, then a pull below it. When the backend
    /// fails (or cannot build the timeline), the whole read is a pull: the timeline is
    /// only a faster way to the same answer.
    async fn push_read(
        &self,
        uid: u64,
        authors: &[u64],
        before: u64,
        limit: usize,
    ) -> Result<Vec<u64>> {
        let mut got = match self.backend.timeline_read(uid, before, limit).await {
            Ok(got) => got,
            Err(e) => {
                self.backend.carried_on("reading a timeline", &e);
                None
            }
        };
        self.metrics.hit("timeline", got.is_some(), 1);
        if got.is_none() && self.backend.health().is_none() {
            got = match self.build_timeline(uid, authors.to_vec()).await {
                Ok(()) => self.backend.timeline_read(uid, before, limit).await,
                Err(e) => Err(e),
            }
            .or_else(|e| match e {
                // The store failing fails the read; the cache failing only makes it a pull.
                Error::Store(_) | Error::TaskFailed(_) => Err(e),
                e => {
                    self.backend.carried_on("building a timeline", &e);
                    Ok(None)
                }
            })?;
        }
        match got {
            Some((mut ids, floor)) => {
                if ids.len() < limit && floor > 0 {
                    let older = self.pull(authors.to_vec(), before.min(floor), limit - ids.len());
                    ids.extend(older.await?);
                }
                Ok(ids)
            }
            // Evicted between build and read, or the backend is failing: answer by pull.
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
        let engine = self.engine.clone();
        // One trip to the blocking pool: the reader exists, and whom they follow.
        let followees = blocking(move || {
            if !engine.contains(uid)? {
                return Err(kith_store::Error::UnknownUser(uid));
            }
            engine.followees(uid, 0, usize::MAX)
        })
        .await?;
        let ids = match self.config.strategy {
            Strategy::Pull => self.pull(followees.clone(), before, limit).await?,
            Strategy::Push => self.push_read(uid, &followees, before, limit).await?,
            Strategy::Hybrid => {
                let threshold = self.config.celebrity_threshold;
                let (mut celebs, mut normal) = (Vec::new(), Vec::new());
                for &f in &followees {
                    if self.engine.follow_degree(f)?.followers > threshold {
                        celebs.push(f);
                    } else {
                        normal.push(f);
                    }
                }
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
