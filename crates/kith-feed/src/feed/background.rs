//! The feed's background work: the fan-out queue and the tasks that deliver posts to
//! followers' timelines, and write-back flushing of journaled posts into the feed database.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::{Semaphore, mpsc};

use super::{FanJob, Feed};
use crate::error::Result;
use crate::journal::{lock, remove_segments};
use crate::post::Post;
use crate::task::blocking;

impl Feed {
    pub(super) async fn enqueue(&self, job: FanJob) {
        self.depth.fetch_add(1, Ordering::SeqCst);
        self.metrics.fanout_depth.inc();
        if self.fanout.send(job).await.is_err() {
            self.job_done();
        }
    }

    fn job_done(&self) {
        self.metrics.fanout_depth.dec();
        if self.depth.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.idle.notify_waiters();
        }
    }

    pub(super) async fn dispatch(feed: Arc<Feed>, mut rx: mpsc::Receiver<FanJob>) {
        let permits = Arc::new(Semaphore::new(feed.config.fanout_concurrency.max(1)));
        while let Some(job) = rx.recv().await {
            let permit = permits.clone().acquire_owned().await.expect("never closed");
            let feed = feed.clone();
            tokio::spawn(async move {
                if let Err(e) = feed.run_job(job).await {
                    feed.metrics.fanout_errors.inc();
                    eprintln!("kith feed: fan-out failed: {e}");
                }
                drop(permit);
                feed.job_done();
            });
        }
    }

    async fn run_job(&self, job: FanJob) -> Result<()> {
        let (author, ids) = match job {
            FanJob::Post { author, id } => (author, vec![id]),
            FanJob::Author { author } => (author, self.author_recent(author).await?),
        };
        let engine = self.engine.clone();
        let followers = blocking(move || engine.followers(author, 0, usize::MAX)).await?;
        self.metrics.fanout_deliveries.inc_by(followers.len() as u64);
        self.backend.timeline_add(&followers, &ids, self.config.timeline_len).await
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
            tick.tick().await;
            if feed.pending_posts() > 0
                && let Err(e) = feed.flush().await
            {
                eprintln!("kith feed: write-back flush failed (will retry): {e}");
            }
        }
    }

    /// Moves every journaled post into the feed database, then deletes the journal
    /// segments they were in.
    pub async fn flush(&self) -> Result<()> {
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

    /// Stops taking posts, runs the queued fan-out, flushes write-back and closes the journal.
    pub async fn shutdown(&self) -> Result<()> {
        self.closing.store(true, Ordering::SeqCst);
        self.drain().await;
        let flushed = self.flush().await;
        for t in self.tasks.lock().unwrap_or_else(std::sync::PoisonError::into_inner).drain(..) {
            t.abort();
        }
        if let Some(j) = &self.journal {
            j.close();
        }
        flushed
    }
}
