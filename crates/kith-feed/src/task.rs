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
    let joined = tokio::task::spawn_blocking(f).await;
    crate::timing::add_store(start.elapsed());
    match joined {
        Ok(done) => done.map_err(Into::into),
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
}
