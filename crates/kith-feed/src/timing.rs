//! Where a request's time goes, for its `Server-Timing` header: the time spent waiting on the
//! storage engine (every blocking call, [`crate::blocking`]) and on Redis (every call through
//! the breaker), summed per request, and of the store's time, what the engine charged to the
//! steps that buy a guarantee ([`kith_store::price`]). Calls made by other tasks (fan-out, write-back) are not
//! the request's and are not counted; calls a request makes concurrently each count in full.

use std::cell::Cell;
use std::future::Future;
use std::time::Duration;

use kith_store::price::Spent;

/// The time a request spent in each kind of call.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Timings {
    /// Waiting for the storage engine (RocksDB, Cassandra) on the blocking pool.
    pub store: Duration,
    /// Waiting for Redis.
    pub cache: Duration,
    /// Of the store's time, the engine's steps per [`kith_store::price::Price`].
    pub prices: Spent,
}

#[derive(Default)]
struct Spans {
    store: Cell<Duration>,
    cache: Cell<Duration>,
    prices: Cell<Spent>,
}

tokio::task_local! {
    static SPANS: Spans;
}

/// Runs `f`, adding up the store and cache calls it makes on this task.
pub async fn timed<F: Future>(f: F) -> (F::Output, Timings) {
    SPANS
        .scope(Spans::default(), async move {
            let out = f.await;
            let t = SPANS.with(|s| Timings {
                store: s.store.get(),
                cache: s.cache.get(),
                prices: s.prices.get(),
            });
            (out, t)
        })
        .await
}

/// Counts `d` as store time of the current request, if the task is one.
pub(crate) fn add_store(d: Duration) {
    let _ = SPANS.try_with(|s| s.store.set(s.store.get() + d));
}

/// Counts the engine's steps as the current request's, if the task is one.
pub(crate) fn add_prices(spent: &Spent) {
    let _ = SPANS.try_with(|s| {
        let mut all = s.prices.get();
        for (a, d) in all.iter_mut().zip(spent) {
            *a += *d;
        }
        s.prices.set(all);
    });
}

/// Counts `d` as cache time of the current request, if the task is one.
pub(crate) fn add_cache(d: Duration) {
    let _ = SPANS.try_with(|s| s.cache.set(s.cache.get() + d));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn blocking_calls_count_as_store_time_of_the_task_that_awaits_them() {
        let ((), t) = timed(async {
            crate::blocking(|| -> crate::Result<()> {
                std::thread::sleep(Duration::from_millis(20));
                Ok(())
            })
            .await
            .unwrap();
            // Another task's calls are not this request's.
            tokio::spawn(crate::blocking(|| -> crate::Result<()> {
                std::thread::sleep(Duration::from_millis(50));
                Ok(())
            }))
            .await
            .unwrap()
            .unwrap();
        })
        .await;
        assert!(
            t.store >= Duration::from_millis(20) && t.store < Duration::from_millis(50),
            "{t:?}"
        );
        assert_eq!(t.cache, Duration::ZERO);
        // The engine's steps are the request's too.
        let ((), t) = timed(async {
            crate::blocking(|| -> crate::Result<()> {
                let _s = kith_store::price::step(kith_store::price::Price::Edge);
                std::thread::sleep(Duration::from_millis(20));
                Ok(())
            })
            .await
            .unwrap();
        })
        .await;
        let edge = t.prices[kith_store::price::Price::Edge as usize];
        assert!(edge >= Duration::from_millis(20) && edge <= t.store, "{t:?}");
        // Outside a request nothing is counted, and nothing fails.
        crate::blocking(|| -> crate::Result<()> { Ok(()) }).await.unwrap();
    }
}
