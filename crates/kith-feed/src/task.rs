//! Blocking storage calls off the async executor, and the one answer for a task that
//! panicked or was cancelled.

use crate::error::{Error, Result};

/// Runs `f` on tokio's blocking pool and returns its result. A task that panicked or was
/// cancelled is [`Error::TaskFailed`], which the service answers with 500 whatever the
/// request was: every blocking call of the feed and the server goes through here, so they
/// all answer it alike.
pub async fn blocking<T, E>(
    f: impl FnOnce() -> std::result::Result<T, E> + Send + 'static,
) -> Result<T>
where
    T: Send + 'static,
    E: Into<Error> + Send + 'static,
{
    let start = std::time::Instant::now();
    let joined = tokio::task::spawn_blocking(move || {
        kith_store::price::take();
        let done = f();
        (done, kith_store::price::take())
    })
    .await;
    crate::timing::add_store(start.elapsed());
    match joined {
        Ok((done, spent)) => {
            crate::timing::add_prices(&spent);
            done.map_err(Into::into)
        }
        Err(failed) => Err(Error::TaskFailed(failed.to_string())),
    }
}

/// Runs `f` to its end on a task of its own, even if the caller is dropped first (a client
/// that hangs up drops its request's handler): a write, its idempotency record and its cache
/// invalidations finish together or fail together, never half. Its store and cache time
/// count for the caller's request. A task that panicked is [`Error::TaskFailed`].
pub async fn detached<T: Send + 'static>(
    f: impl std::future::Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    match tokio::spawn(crate::timing::timed(f)).await {
        Ok((out, t)) => {
            crate::timing::add_store(t.store);
            crate::timing::add_cache(t.cache);
            crate::timing::add_prices(&t.prices);
            out
        }
        Err(failed) => Err(Error::TaskFailed(failed.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panicking_task_is_a_task_failure() {
        let got = blocking(|| -> Result<()> { panic!("deliberately, in a test") }).await;
        assert!(matches!(got, Err(Error::TaskFailed(_))), "{got:?}");
        let store_error = blocking(|| Err::<(), _>(kith_store::Error::UnknownUser(4))).await;
        assert!(matches!(store_error, Err(Error::Store(kith_store::Error::UnknownUser(4)))));
    }

    #[tokio::test]
    async fn a_detached_write_finishes_after_its_caller_is_dropped() {
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let d = done.clone();
        let write = detached(async move {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            d.store(true, std::sync::atomic::Ordering::SeqCst);
            Ok(())
        });
        // The caller gives up after 5 ms, as a client hanging up drops its handler.
        assert!(tokio::time::timeout(std::time::Duration::from_millis(5), write).await.is_err());
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        assert!(done.load(std::sync::atomic::Ordering::SeqCst), "the write was cut short");
    }
}
