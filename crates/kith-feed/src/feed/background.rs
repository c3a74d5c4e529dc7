//! The feed's background work: the fan-out queue and the tasks that deliver posts to
//! followers' timelines (a batch of followers at a time), the keeper that retries failed
//! fan-out with backoff and stores the fan-out watermark, and write-back flushing of
//! journaled posts into the feed database.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use tokio::sync::{Notify, Semaphore, mpsc};
use tokio::time::Instant;

use super::{FanJob, Feed};
use crate::error::Result;
use crate::journal::{lock, remove_segments};
use crate::post::Post;
use crate::task::blocking;

/// How often the keeper stores the watermark; also the first retry's backoff.
const KEEP_TICK: Duration = Duration::from_millis(100);
/// How often the server number's lease is renewed (a fifth of the lease).
const RENEW_EVERY: Duration = Duration::from_secs(1);
/// How often the keeper looks for server numbers whose server stopped with fan-out left.
const ORPHANS_EVERY: Duration = Duration::from_secs(2);
/// How often the keeper has the store finish follow edits left half done.
const REPAIR_EVERY: Duration = Duration::from_secs(1);
/// The longest wait between retries of failed fan-out: timelines lag the store by about
/// this much after an outage of the store or the cache ends.
const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// The longest a shutdown waits for a background task or a fan-out job to end.
const STOP_LIMIT: Duration = Duration::from_secs(30);

impl Feed {
    pub(super) async fn enqueue(&self, job: FanJob) {
        self.depth.fetch_add(1, Ordering::SeqCst);
        self.metrics.fanout_depth.inc();
        if self.fanout.send(job).await.is_err() {
            job_done(&self.depth, &self.idle, &self.metrics.fanout_depth);
        }
    }

    pub(super) async fn dispatch(feed: Arc<Feed>, mut rx: mpsc::Receiver<FanJob>) {
        let permits = Arc::new(Semaphore::new(feed.config.fanout_concurrency.max(1)));
        loop {
            // Jobs still queued when the feed stops are left: their posts stay open, and
            // whoever takes the number over redoes them from the watermark.
            let job = tokio::select! {
                job = rx.recv() => job,
                () = feed.stopped() => None,
            };
            let Some(job) = job else { return };
            let permit = permits.clone().acquire_owned().await.expect("never closed");
            feed.running.fetch_add(1, Ordering::SeqCst);
            let running = Running { feed: Some(feed.clone()), _permit: permit };
            tokio::spawn(async move {
                if let Some(feed) = &running.feed {
                    feed.run_or_keep(job).await;
                }
            });
        }
    }

    /// Until [`Feed::stop_tasks`] is called; at once if it was.
    pub(super) async fn stopped(&self) {
        let mut stop = self.stop.subscribe();
        let _ = stop.wait_for(|stopped| *stopped).await;
    }

    /// Runs a job; a job that fails is kept for the keeper to retry, and its post stays
    /// open, holding the watermark back, until a retry succeeds.
    async fn run_or_keep(&self, job: FanJob) -> bool {
        match self.run_job(job).await {
            Ok(()) => {
                if let FanJob::Post { id, .. } = job {
                    self.marks.close(id);
                }
                true
            }
            Err(e) => {
                self.metrics.fanout_errors.inc();
                eprintln!("kith feed: fan-out failed (will retry): {e}");
                self.failed_jobs().push(job);
                false
            }
        }
    }

    /// Delivers a job's posts to its author's followers, `fanout_batch` followers at a
    /// time (read by seeking past the last one), so memory is bounded by a batch. Whether
    /// the author is pushed is decided here, not when posting: a post's acknowledgement
    /// never waits for (or fails on) this decision. Redoing a job is harmless.
    ///
    /// A re-push reads its pending token before the author's posts and removes it after
    /// the last batch, only if no later unfollow stored it again meanwhile (whose posts it
    /// may have missed; that unfollow's own job is queued).
    async fn run_job(&self, job: FanJob) -> Result<()> {
        let (author, ids, token) = match job {
            FanJob::Post { author, id } => {
                if !self.pushed(author).await? {
                    return Ok(());
                }
                (author, vec![id], None)
            }
            FanJob::Author { author } => {
                let engine = self.engine.clone();
                let token = blocking(move || engine.pending_repush(author)).await?;
                // A celebrity again (or pull feeds now): its posts are pulled, nothing to add.
                let ids = if self.pushed(author).await? {
                    self.author_recent(author).await?
                } else {
                    vec![]
                };
                (author, ids, token)
            }
        };
        if !ids.is_empty() {
            self.deliver(author, &ids).await?;
        }
        if let Some(token) = token {
            let engine = self.engine.clone();
            blocking(move || engine.repush_done(author, token)).await?;
        }
        Ok(())
    }

    async fn deliver(&self, author: u64, ids: &[u64]) -> Result<()> {
        let batch = self.config.fanout_batch.max(1);
        let mut from = 0;
        loop {
            let engine = self.engine.clone();
            let followers = blocking(move || engine.followers_from(author, from, batch)).await?;
            self.metrics.fanout_deliveries.inc_by(followers.len() as u64);
            self.backend.timeline_add(&followers, ids, self.config.timeline_len).await?;
            match followers.last() {
                Some(&last) if followers.len() == batch && last < u64::MAX => from = last + 1,
                _ => return Ok(()),
            }
        }
    }

    /// Every `KEEP_TICK`, stores the fan-out watermark if it moved; retries failed fan-out
    /// jobs after a backoff that doubles on each failed round (up to `MAX_BACKOFF`) and
    /// starts over once a round succeeds.
    ///
    /// Every [`ORPHANS_EVERY`] it also takes over the fan-out of server numbers whose server
    /// stopped.
    pub(super) async fn keeper(feed: Arc<Feed>) {
        let mut backoff = KEEP_TICK;
        let mut next_retry = Instant::now();
        let mut next_orphans = Instant::now();
        let mut next_repair = Instant::now();
        let mut tick = tokio::time::interval(KEEP_TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = feed.stopped() => return,
            }
            if Instant::now() >= next_orphans {
                next_orphans = Instant::now() + ORPHANS_EVERY;
                if let Err(e) = feed.adopt_orphans().await {
                    eprintln!(
                        "kith feed: taking over a stopped server's fan-out failed (will retry): {e}"
                    );
                }
            }
            if Instant::now() >= next_repair {
                next_repair = Instant::now() + REPAIR_EVERY;
                if let Err(e) = feed.repair_follows().await {
                    eprintln!("kith feed: repairing follow edits failed (will retry): {e}");
                }
            }
            if Instant::now() >= next_retry {
                let jobs = std::mem::take(&mut *feed.failed_jobs());
                let mut all_ok = true;
                for job in jobs {
                    all_ok &= feed.run_or_keep(job).await;
                }
                backoff = if all_ok { KEEP_TICK } else { (backoff * 2).min(MAX_BACKOFF) };
                next_retry = Instant::now() + backoff;
            }
            if let Err(e) = feed.persist_watermark().await {
                eprintln!("kith feed: storing the fan-out watermark failed (will retry): {e}");
            }
        }
    }

    /// Has the store finish follow edits left half done, then brings what the feed keeps
    /// of each repaired edge along: the follower's cached followee list, and, for an edge
    /// now on, the follower's timeline (the backfill its own follow missed).
    async fn repair_follows(&self) -> Result<()> {
        let engine = self.engine.clone();
        let repaired = blocking(move || engine.repair_follows()).await?;
        for (uid, target, following) in repaired {
            self.invalidate_followees(uid).await;
            if following {
                self.backfill(uid, &[target]).await?;
            }
        }
        Ok(())
    }

    /// Renews the lease on this server's number every [`RENEW_EVERY`], on a task of its own
    /// so nothing else delays it. Each renewal that holds moves the deadline for handing out
    /// ids to when it was sent plus the lease, less a margin; a renewal that takes longer
    /// than half the lease counts as failed. A number another server took is claimed again
    /// once free; until then, and whenever the store cannot be reached, the deadline passes
    /// and the server takes no posts, so no two servers hand out ids under one number.
    pub(super) async fn leaser(feed: Arc<Feed>) {
        let mut tick = tokio::time::interval(RENEW_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = feed.stopped() => return,
            }
            let sent = feed.started.elapsed();
            let (f, server) = (feed.clone(), feed.server);
            let renewal = blocking(move || -> kith_store::Result<bool> {
                let (engine, owner) = (&f.engine, &f.owner);
                // Not claimed again once closing: the shutdown releases it, and a renewal
                // still running here must not make the row again.
                Ok(engine.renew_server(server, owner, super::LEASE)?
                    || (!f.closing.load(Ordering::SeqCst)
                        && engine.claim_server(owner, super::LEASE, Some(server))?.is_some()))
            });
            let held = match tokio::time::timeout(super::LEASE / 2, renewal).await {
                Ok(Ok(held)) => Ok(held),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err(format!("no answer within {:?}", super::LEASE / 2)),
            };
            if held == Ok(true) {
                let until = sent + super::LEASE - super::LEASE_MARGIN;
                feed.lease_until_ms.fetch_max(until.as_millis() as u64, Ordering::SeqCst);
            }
            let fence = held != Ok(true);
            if fence != feed.fenced.swap(fence, Ordering::SeqCst) {
                match held {
                    Ok(true) => {
                        feed.marks.unsure();
                        eprintln!("kith feed: server number {server} held again");
                    }
                    Ok(false) => eprintln!(
                        "kith feed: server number {server} was taken by another server: taking \
                         no posts until it is free again"
                    ),
                    Err(e) => eprintln!(
                        "kith feed: server number {server}'s lease not renewed ({e}): taking no \
                         posts once it lapses"
                    ),
                }
            }
        }
    }

    /// Takes over server numbers whose server stopped with a watermark stored (killed, or
    /// stopped with fan-out failing): holds each briefly, queues the fan-out of every post
    /// above its watermark (under this server's own marks, so a crash here leaves them to
    /// be redone in turn) and the pending re-pushes, then forgets its watermark and frees
    /// it. Fan-out is idempotent, so posts delivered already cost only a repeat.
    pub(super) async fn adopt_orphans(&self) -> Result<()> {
        if self.config.strategy == crate::config::Strategy::Pull {
            return Ok(());
        }
        let engine = self.engine.clone();
        let orphans = blocking(move || engine.orphaned_servers(super::LEASE)).await?;
        for n in orphans.into_iter().filter(|&n| n != self.server) {
            let (engine, owner) = (self.engine.clone(), self.owner.clone());
            let held = blocking(move || -> kith_store::Result<Option<u64>> {
                match engine.claim_server(&owner, super::LEASE, Some(n))? {
                    Some(_) => Ok(Some(engine.fanout_watermark(n)?.unwrap_or(u64::MAX))),
                    None => Ok(None),
                }
            })
            .await?;
            let Some(watermark) = held else { continue };
            let mut after = watermark;
            let mut redone = 0usize;
            // Its posts still waiting in the shared write-back first (claimed under this
            // server's marks, like the stored ones below).
            let waiting = self.waiting_after(watermark).await?;
            let (marks, ids, engine) = (self.marks.clone(), self.ids.clone(), self.engine.clone());
            let claim: Vec<u64> = waiting.iter().map(|&(_, id)| id).collect();
            blocking(move || -> Result<()> {
                for id in claim {
                    marks.claim(id, &ids, engine.as_ref(), false)?;
                }
                Ok(())
            })
            .await?;
            for &(author, id) in &waiting {
                self.enqueue(FanJob::Post { author, id }).await;
            }
            redone += waiting.len();
            while after < u64::MAX {
                let (engine, marks, ids) =
                    (self.engine.clone(), self.marks.clone(), self.ids.clone());
                let posts = blocking(move || -> Result<Vec<(u64, u64)>> {
                    let posts = engine.posts_after(after, super::REDO_BATCH)?;
                    for p in &posts {
                        marks.claim(p.id, &ids, engine.as_ref(), false)?;
                    }
                    Ok(posts.iter().map(|p| (p.author, p.id)).collect())
                })
                .await?;
                for &(author, id) in &posts {
                    self.enqueue(FanJob::Post { author, id }).await;
                }
                redone += posts.len();
                match posts.last() {
                    Some(&(_, id)) if posts.len() == super::REDO_BATCH => after = id,
                    _ => break,
                }
            }
            self.redo_repushes().await?;
            let (engine, owner) = (self.engine.clone(), self.owner.clone());
            blocking(move || -> kith_store::Result<()> {
                engine.drop_fanout_watermark(n)?;
                engine.release_server(n, &owner)
            })
            .await?;
            eprintln!(
                "kith feed: took over server {n}'s fan-out: {redone} posts above its watermark queued"
            );
        }
        Ok(())
    }

    fn failed_jobs(&self) -> std::sync::MutexGuard<'_, Vec<FanJob>> {
        self.failed.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Stores the watermark, under every strategy: pull feeds open no fan-out, so theirs
    /// follows the newest post, and a later switch to push does not redo their history.
    async fn persist_watermark(&self) -> Result<()> {
        let (engine, marks) = (self.engine.clone(), self.marks.clone());
        blocking(move || marks.persist(engine.as_ref())).await
    }

    /// Stops the background tasks and waits until they and every running fan-out job have
    /// ended: each ends between rounds, so a call to the store it made (which holds the
    /// store) is over, and the store is free to open again once the feed is shut. A task
    /// still running after [`STOP_LIMIT`] is aborted.
    pub(super) async fn stop_tasks(&self) {
        self.stop.send_replace(true);
        let tasks: Vec<_> = self
            .tasks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .drain(..)
            .collect();
        let ends = Instant::now() + STOP_LIMIT;
        for mut t in tasks {
            if tokio::time::timeout_at(ends, &mut t).await.is_err() {
                eprintln!("kith feed: a background task did not stop within {STOP_LIMIT:?}");
                t.abort();
            }
        }
        while self.running.load(Ordering::SeqCst) > 0 && Instant::now() < ends {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Waits until every queued fan-out job has run.
    pub async fn drain(&self) {
        loop {
            let idle = self.idle.notified();
            if self.depth.load(Ordering::SeqCst) == 0 {
                return;
            }
            let _ = tokio::time::timeout(Duration::from_millis(10), idle).await;
        }
    }

    pub(super) async fn flusher(feed: Arc<Feed>) {
        let mut tick = tokio::time::interval(feed.config.flush_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = feed.stopped() => return,
            }
            if (feed.pending_posts() > 0 || feed.shared_writeback)
                && let Err(e) = feed.flush().await
            {
                feed.backend.carried_on("write-back flush (will retry)", &e);
            }
        }
    }

    /// Shared write-back: moves every shard's oldest waiting posts (from any server) into
    /// the store, one shard at a time under its lock, so each is moved by one server.
    async fn flush_shared(&self) -> Result<()> {
        let r = self.backend.shared_writeback()?;
        for shard in 0..crate::cache::SHARDS {
            let Some(posts) = r.wb_take(shard, &self.owner).await? else { continue };
            if !posts.is_empty() {
                let (engine, batch) = (self.engine.clone(), posts.clone());
                let stored =
                    blocking(move || engine.put_posts(&batch.iter().collect::<Vec<_>>())).await;
                if let Err(e) = stored {
                    r.wb_unlock(shard, &self.owner).await?;
                    return Err(e);
                }
                self.metrics.flushed.inc_by(posts.len() as u64);
            }
            r.wb_done(shard, &self.owner, &posts).await?;
        }
        Ok(())
    }

    /// Moves every journaled post into the feed database, then deletes the journal
    /// segments they were in.
    pub async fn flush(&self) -> Result<()> {
        if self.shared_writeback {
            return self.flush_shared().await;
        }
        let Some(journal) = &self.journal else { return Ok(()) };
        let mut to_delete = self.to_delete.lock().await;
        to_delete.extend(journal.rotate().await?);
        let posts: Vec<Arc<Post>> = lock(&self.pending).posts.values().cloned().collect();
        let engine = self.engine.clone();
        let batch = posts.clone();
        blocking(move || engine.put_posts(&batch.iter().map(|p| p.as_ref()).collect::<Vec<_>>()))
            .await?;
        {
            let mut p = lock(&self.pending);
            for post in &posts {
                p.remove(post);
            }
            self.metrics.pending.set(p.posts.len() as i64);
        }
        self.metrics.flushed.inc_by(posts.len() as u64);
        remove_segments(&to_delete, &self.journal_dir)?;
        to_delete.clear();
        Ok(())
    }

    /// Stops taking posts, runs the queued fan-out, flushes write-back, stores the fan-out
    /// watermark and closes the journal. Fan-out that still fails is left above the
    /// watermark, for the next start to redo.
    pub async fn shutdown(&self) -> Result<()> {
        self.closing.store(true, Ordering::SeqCst);
        self.drain().await;
        let flushed = self.flush().await;
        self.stop_tasks().await;
        let flushed = flushed.and(self.persist_watermark().await);
        if let Some(j) = &self.journal {
            j.close();
        }
        // Everything delivered: nothing for another server to take over, so the number is
        // freed with no watermark. Otherwise the watermark stays, for whoever takes the
        // number (or takes it over) to redo from.
        let (engine, marks, server, owner) =
            (self.engine.clone(), self.marks.clone(), self.server, self.owner.clone());
        let released = blocking(move || -> kith_store::Result<()> {
            if marks.all_delivered() && engine.server_slots() > 1 {
                engine.drop_fanout_watermark(server)?;
            }
            engine.release_server(server, &owner)
        })
        .await;
        flushed.and(released)
    }
}

/// Counts one queued fan-out job as done; the last wakes whoever drains the queue.
fn job_done(depth: &AtomicI64, idle: &Notify, gauge: &prometheus::IntGauge) {
    gauge.dec();
    if depth.fetch_sub(1, Ordering::SeqCst) == 1 {
        idle.notify_waiters();
    }
}

/// A running fan-out job's hold on the feed and on a permit: when the job ends, however it
/// ends, the feed is let go first, then the job counts as done.
struct Running {
    feed: Option<Arc<Feed>>,
    _permit: tokio::sync::OwnedSemaphorePermit,
}

impl Drop for Running {
    fn drop(&mut self) {
        let Some(feed) = self.feed.take() else { return };
        let (depth, idle, gauge, running) = (
            feed.depth.clone(),
            feed.idle.clone(),
            feed.metrics.fanout_depth.clone(),
            feed.running.clone(),
        );
        drop(feed);
        running.fetch_sub(1, Ordering::SeqCst);
        job_done(&depth, &idle, &gauge);
    }
}
