//! Reading posts and feeds: posts by id through the cache, and feeds by pull (k-way
//! merge), push (timelines) or both, bounded by the followees one read merges.

use std::collections::{BinaryHeap, HashSet};
use std::sync::Arc;

use super::{Feed, FeedPage, MAX_FEED_PAGE};
use crate::config::{CacheMode, Strategy};
use crate::error::{Error, Result};
use crate::journal::lock;
use crate::post::Post;
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
            if self.shared_writeback
                && !still.is_empty()
                && let Ok(r) = self.backend.shared_writeback()
            {
                let want: Vec<u64> = still.iter().map(|&i| ids[i]).collect();
                let waiting = r.wb_get(&want).await.map_err(super::waiting_unavailable)?;
                let mut rest = Vec::new();
                for (i, post) in still.into_iter().zip(waiting) {
                    match post {
                        Some(post) => found[i] = Some(post),
                        None => rest.push(i),
                    }
                }
                still = rest;
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
        // Waiting in the shared write-back: read before the store (a flush removes a post
        // from there only after the store has it).
        let mut waiting = match (self.shared_writeback, self.backend.shared_writeback()) {
            (true, Ok(r)) => r
                .wb_author_posts(&authors, before, limit)
                .await
                .map_err(super::waiting_unavailable)?,
            _ => Vec::new(),
        };
        let engine = self.engine.clone();
        let pending = self.pending.clone();
        blocking(move || -> Result<Vec<u64>> {
            // The pending and waiting posts first: a flush removes a post from them only
            // after the store has it. The store's lists in one call (concurrent reads on a
            // cluster, where one read per followee in turn made pull feeds grow slower with
            // every author followed).
            let mut lists: Vec<Vec<u64>> = {
                let pending = lock(&pending);
                authors.iter().map(|&a| pending.author_posts(a, before, limit)).collect()
            };
            let stored = engine.authors_posts(&authors, before, limit)?;
            for (k, (ids, more)) in lists.iter_mut().zip(stored).enumerate() {
                if let Some(w) = waiting.get_mut(k) {
                    ids.append(w);
                }
                ids.extend(more);
                ids.sort_unstable_by(|x, y| y.cmp(x));
                ids.dedup();
                ids.truncate(limit);
            }
            Ok(merge_newest(&lists, limit))
        })
        .await
    }

    /// Builds a user's timeline from a pull over whom the user follows, read after the
    /// build began: a follow stored before that read is in it, and one stored after it
    /// backfills the timeline, which exists from the begin on (or was dropped, and then
    /// this build finishes nothing). A list read before the begin could miss a follow
    /// whose backfill found no timeline, and the timeline would lack that author's posts
    /// down to its floor.
    async fn build_timeline(&self, uid: u64) -> Result<()> {
        self.metrics.timeline_builds.inc();
        let build = self.backend.timeline_begin(uid).await?;
        let authors = self.followees_for_feed(uid).await?;
        if authors.len() > self.config.max_followees_per_read {
            // Over the budget since the read began: the read fails or pulls, not this.
            return Ok(());
        }
        let cap = self.config.timeline_len;
        let ids = self.pull(authors, u64::MAX, cap).await?;
        let floor = if ids.len() == cap { *ids.last().expect("cap >= 1") } else { 0 };
        self.backend.timeline_finish(uid, build, &ids, floor, cap).await
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
            got = match self.build_timeline(uid).await {
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

    /// Whom the reader follows (one more than the feed's budget at most, to tell "at the
    /// budget" from "over it"), with the reader's existence checked: from the cache when
    /// it holds the list (Redis: a list is cached only for an existing user, and every
    /// follow and unfollow on any server drops it before it is acknowledged), else from the
    /// store in one trip to the blocking pool, then cached unless a change raced the fill.
    async fn followees_for_feed(&self, uid: u64) -> Result<Vec<u64>> {
        let cached = self.config.cache != CacheMode::None;
        // The list is cut at the reader's budget + 1; the cache holds the cut it was filled
        // with first, then the list.
        let cap = self.config.max_followees_per_read.saturating_add(1);
        if cached {
            match self.backend.get_followees(uid).await {
                Ok(Some(list)) => {
                    if let Some((&filled_cap, ids)) = list.split_first() {
                        // Whole, or cut no shorter than this server's own cut.
                        if (ids.len() as u64) < filled_cap || filled_cap >= cap as u64 {
                            return Ok(ids.to_vec());
                        }
                    }
                }
                Ok(None) => {}
                Err(e) => self.backend.carried_on("reading a cached followee list", &e),
            }
        }
        // Before the store read: a change after it bumps the version, and the fill is not
        // cached.
        let version = match cached {
            true => self.backend.followees_version(uid).await.ok(),
            false => None,
        };
        let engine = self.engine.clone();
        let followees = blocking(move || {
            if !engine.contains(uid)? {
                return Err(kith_store::Error::UnknownUser(uid));
            }
            engine.followees(uid, 0, cap)
        })
        .await?;
        let entry: Vec<u64> =
            std::iter::once(cap as u64).chain(followees.iter().copied()).collect();
        if let Some(version) = version
            && let Err(e) = self.backend.put_followees(uid, &entry, &version).await
        {
            self.backend.carried_on("caching a followee list", &e);
        }
        Ok(followees)
    }

    /// Drops the user's cached followee list after a follow or unfollow reached the store,
    /// before it is answered; on a cluster, a replica confirms the drop. A failure is
    /// counted and reported, not returned: the change is in the store, this server no
    /// longer serves the list, and other servers may serve it until it expires (the lists'
    /// time to live, `--friends-ttl-s`).
    pub(super) async fn invalidate_followees(&self, uid: u64) {
        // With `--cache none` too: other servers sharing the Redis may cache the list.
        if let Err(e) = self.backend.del_followees(uid).await {
            self.metrics.cache_errors.inc();
            self.backend.carried_on("dropping a cached followee list", &e);
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
        let budget = self.config.max_followees_per_read;
        let followees = self.followees_for_feed(uid).await?;
        if followees.len() > budget {
            return Err(Error::TooExpensive {
                what: "followees merged by one feed read",
                limit: budget as u64,
            });
        }
        let following: HashSet<u64> = followees.iter().copied().collect();
        let (mut posts, mut next, mut below) = (Vec::with_capacity(limit), None, before);
        // A timeline may hold posts of someone no longer followed (a push that raced an
        // unfollow, or an unfollow whose removal failed): they are left out and the page
        // filled from below, a page of ids at a time, so a page is short only at the end.
        // They are not removed from the timeline: the followee list was read before the
        // timeline, and a follow in between may just have backfilled that author's posts,
        // which a removal would take from every later read (a trial found 18 posts missing
        // so). The timeline's length bounds them, and so the rounds. With rounds of what
        // was still wanted, at most 4, two rounds of one id each met two such posts in a
        // trial, and the page ended short of a post it owed.
        let rounds = self.config.timeline_len / limit + 2;
        for _ in 0..rounds {
            let ids = self.feed_ids(uid, &followees, below, limit).await?;
            let Some(&last) = ids.last() else {
                next = None;
                break;
            };
            let got = self.get_posts(&ids).await?;
            posts.extend(
                got.into_iter().filter(|p| following.contains(&p.author)).take(limit - posts.len()),
            );
            if posts.len() == limit {
                next = posts.last().map(|p| p.id);
                break;
            }
            if ids.len() < limit {
                next = None;
                break;
            }
            (below, next) = (last, Some(last));
        }
        Ok(FeedPage { posts, next })
    }

    /// The newest `limit` ids below `before` by `followees`, by the feed's strategy.
    async fn feed_ids(
        &self,
        uid: u64,
        followees: &[u64],
        before: u64,
        limit: usize,
    ) -> Result<Vec<u64>> {
        Ok(match self.config.strategy {
            Strategy::Pull => self.pull(followees.to_vec(), before, limit).await?,
            Strategy::Push => self.push_read(uid, followees, before, limit).await?,
            Strategy::Hybrid => {
                let threshold = self.config.celebrity_threshold;
                let (engine, all) = (self.engine.clone(), followees.to_vec());
                let degrees = blocking(move || engine.follow_degrees(&all)).await?;
                let (mut celebs, mut normal) = (Vec::new(), Vec::new());
                for (&f, d) in followees.iter().zip(degrees) {
                    if d.followers > threshold {
                        celebs.push(f);
                    } else {
                        normal.push(f);
                    }
                }
                let pushed = self.push_read(uid, &normal, before, limit).await?;
                let pulled = self.pull(celebs, before, limit).await?;
                merge_newest(&[pushed, pulled], limit)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{FeedConfig, Strategy};

    /// A push feed over a store of `n` users without friendships, cached in process.
    async fn small_feed(dir: &std::path::Path, n: u32) -> Arc<Feed> {
        let graph = kith_graph::Graph::from_edges((0..u64::from(n)).collect(), false, vec![]);
        let options =
            kith_store::BuildOptions { data: kith_store::DataSpec::Fixed(8), ..Default::default() };
        let path = dir.join("store");
        let layout = kith_layout::Layout::identity(n as usize);
        kith_store::build(&path, &graph, &layout, Default::default(), &options).unwrap();
        let store = kith_store::Store::open(&path, &Default::default()).unwrap();
        let config = FeedConfig { strategy: Strategy::Push, ..FeedConfig::default() };
        let registry = prometheus::Registry::new();
        Feed::open(Arc::new(store), path.join("journal"), config, &registry).await.unwrap()
    }

    /// A feed read that read whom the user follows before a follow, and begins its build
    /// after that follow's backfill found no timeline: the build reads the list again
    /// after it began, so the timeline has the new followee's posts (built from the
    /// read's own list, it lacked them down to its floor).
    #[tokio::test]
    async fn a_build_reads_whom_the_user_follows_after_it_began() {
        let dir = tempfile::tempdir().unwrap();
        let feed = small_feed(dir.path(), 3).await;
        let posted = feed.post(2, "by 2".into()).await.unwrap();
        feed.drain().await;
        assert_eq!(feed.followees_for_feed(0).await.unwrap(), Vec::<u64>::new());
        feed.follow(0, vec![2]).await.unwrap();
        assert_eq!(feed.backend.timeline_read(0, u64::MAX, 10).await.unwrap(), None);
        feed.build_timeline(0).await.unwrap();
        let built = feed.backend.timeline_read(0, u64::MAX, 10).await.unwrap();
        assert_eq!(built, Some((vec![posted.id], 0)));
    }

    #[test]
    fn merge_takes_the_newest_once() {
        let lists = vec![vec![9, 5, 1], vec![8, 5, 2], vec![], vec![10]];
        assert_eq!(merge_newest(&lists, 4), vec![10, 9, 8, 5]);
        assert_eq!(merge_newest(&lists, 100), vec![10, 9, 8, 5, 2, 1]);
        assert_eq!(merge_newest(&[], 3), Vec::<u64>::new());
    }
}
