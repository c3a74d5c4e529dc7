//! Opening's redo: the fan-out of every post above the server's watermark (stored, or
//! still waiting in the write-back) and the re-pushes a crash left pending, queued before
//! the feed serves.

use std::time::{Duration, Instant};

use super::{FanJob, Feed, REDO_BATCH, lock, waiting_unavailable};
use crate::config::Strategy;
use crate::error::{Error, Result};
use crate::task::blocking;

/// How long opening waits for the shared write-back to answer before it fails.
pub(super) const OPEN_WAIT: Duration = Duration::from_secs(30);

impl Feed {
    /// Queues the re-pushes a crash left pending (authors that stopped being celebrities
    /// just before it).
    pub(super) async fn redo_repushes(&self) -> Result<()> {
        let e = self.engine.clone();
        for author in blocking(move || e.pending_repushes()).await? {
            self.enqueue(FanJob::Author { author }).await;
        }
        Ok(())
    }

    /// Queues the fan-out of every post above `watermark`: the stored ones, then any only in
    /// the write-back pending set (replayed from the journal but not yet stored).
    pub(super) async fn redo_fanout(&self, watermark: u64) -> Result<()> {
        if self.config.strategy == Strategy::Pull {
            return Ok(());
        }
        let mut after = watermark;
        let mut redone = std::collections::HashSet::new();
        loop {
            let e = self.engine.clone();
            let posts = blocking(move || e.posts_after(after, REDO_BATCH)).await?;
            for p in &posts {
                self.redo_one(p.author, p.id).await?;
                redone.insert(p.id);
            }
            match posts.last() {
                Some(p) if posts.len() == REDO_BATCH => after = p.id,
                _ => break,
            }
        }
        let mut pending: Vec<(u64, u64)> = lock(&self.pending)
            .posts
            .values()
            .filter(|p| p.id > watermark && !redone.contains(&p.id))
            .map(|p| (p.author, p.id))
            .collect();
        pending.extend(
            self.waiting_after_patiently(watermark)
                .await?
                .into_iter()
                .filter(|(_, id)| !redone.contains(id)),
        );
        for (author, id) in pending {
            self.redo_one(author, id).await?;
        }
        Ok(())
    }

    /// Posts waiting in the shared write-back above `after`, as (author, id).
    pub(super) async fn waiting_after(&self, after: u64) -> Result<Vec<(u64, u64)>> {
        match (self.shared_writeback, self.backend.shared_writeback()) {
            (true, Ok(r)) => r.wb_after(after).await.map_err(waiting_unavailable),
            _ => Ok(Vec::new()),
        }
    }

    async fn redo_one(&self, author: u64, id: u64) -> Result<()> {
        let (engine, feed_ids) = (self.engine.clone(), &self.ids);
        // Above the stored watermark, so opening it writes nothing.
        self.marks.claim(id, feed_ids, engine.as_ref(), false)?;
        self.enqueue(FanJob::Post { author, id }).await;
        Ok(())
    }

    /// [`Self::waiting_after`], tried again while it fails, for at most [`OPEN_WAIT`].
    async fn waiting_after_patiently(&self, after: u64) -> Result<Vec<(u64, u64)>> {
        patiently(OPEN_WAIT, "reading the posts waiting in the write-back", || {
            self.waiting_after(after)
        })
        .await
    }
}

/// Runs `call` until it succeeds or fails other than for the moment (Redis, or the store
/// unavailable), 0.25 s apart doubling to 4 s, for at most `wait`; its last error after
/// that. A server opening while a Redis node fails over, or answers late, waits for it
/// rather than fails to start (as its number's claim waits for the store, `claim.rs`).
pub(super) async fn patiently<T, F, Fut>(wait: Duration, what: &str, mut call: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let until = Instant::now() + wait;
    let mut pause = Duration::from_millis(250).min(wait);
    loop {
        match call().await {
            Err(e) if transient(&e) && Instant::now() + pause < until => {
                eprintln!("kith feed: opening: {what} failed, trying again in {pause:?}: {e}");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(4));
            }
            done => return done,
        }
    }
}

/// Whether `e` may pass if the call is made again: Redis failed, or the store was
/// unavailable for the moment.
fn transient(e: &Error) -> bool {
    matches!(e, Error::Redis(_) | Error::Store(kith_store::Error::Unavailable(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unavailable() -> Error {
        Error::Store(kith_store::Error::Unavailable("not yet".into()))
    }

    #[tokio::test]
    async fn a_call_that_fails_for_a_while_is_waited_for() {
        let mut failures = 2;
        let got = patiently(Duration::from_secs(5), "a test", || {
            let fail = failures > 0;
            failures -= 1;
            async move { if fail { Err(unavailable()) } else { Ok(7) } }
        })
        .await;
        assert_eq!(got.ok(), Some(7));
    }

    #[tokio::test]
    async fn a_call_that_keeps_failing_fails_once_the_wait_is_over() {
        let began = Instant::now();
        let mut calls = 0;
        let got: Result<()> = patiently(Duration::from_millis(600), "a test", || {
            calls += 1;
            async { Err(unavailable()) }
        })
        .await;
        assert!(got.is_err());
        assert!(calls >= 2, "tried {calls} times");
        assert!(began.elapsed() < Duration::from_secs(2), "{:?}", began.elapsed());
    }

    #[tokio::test]
    async fn a_call_that_fails_for_good_fails_at_once() {
        let mut calls = 0;
        let got: Result<()> = patiently(Duration::from_secs(5), "a test", || {
            calls += 1;
            async { Err(Error::Invalid("bad".into())) }
        })
        .await;
        assert!(matches!(got, Err(Error::Invalid(_))));
        assert_eq!(calls, 1);
    }
}
