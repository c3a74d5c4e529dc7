//! The Redis backend's health: a circuit breaker, and the cached entries that cannot be
//! trusted because a write meant to change them failed.
//!
//! The circuit opens on the first call that finds Redis unavailable (unreachable, timed
//! out, or refusing writes: READONLY, OOM, MISCONF, LOADING). While it is open every call
//! fails at once without touching Redis, so the feed answers from the store without paying
//! the timeout on each request; a probe (`redis.rs`) tries a write periodically and closes
//! the circuit when Redis takes it.
//!
//! A failed invalidation of a friend or followee list, or a failed push to a timeline, leaves an entry
//! in Redis that is older than what this server acknowledged. The users are remembered here
//! and their entries are read as misses until a later write replaces or deletes them, or
//! the probe deletes them once Redis is back, so that no server sharing the cache serves
//! them either (**invariant: a list or timeline whose update failed is never served by
//! this server, and is deleted from Redis before its circuit closes**). Past
//! [`MAX_STALE`] users the sets stop growing: then no friend list is served until every
//! list cached before the failure has expired, and the circuit stays open until every
//! timeline has been dropped.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use redis::{ErrorKind, RedisError};

use super::List;

/// The most users remembered per kind of stale entry.
pub(super) const MAX_STALE: usize = 1 << 16;

/// The breaker and the stale entries.
#[derive(Debug, Default)]
pub(super) struct Health {
    /// Mirrors `State::failure.is_some()`, read without the lock on every call.
    open: AtomicBool,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Why the circuit is open, and since when.
    failure: Option<(String, Instant)>,
    /// Per kind of list ([`List::index`]): users whose cached list is stale.
    stale_lists: [HashSet<u64>; 2],
    /// Too many stale lists of a kind to remember: none of that kind is served before this
    /// instant.
    all_lists_stale_until: [Option<Instant>; 2],
    stale_timelines: HashSet<u64>,
    /// Too many stale timelines to remember: all are dropped before the circuit closes.
    all_timelines_stale: bool,
    /// Counts the times `all_timelines_stale` was set, so a drop that raced a new loss
    /// does not clear it.
    timeline_losses: u64,
}

/// Whether an error means Redis cannot serve now (as opposed to a bad request or reply).
pub(super) fn unavailable(e: &RedisError) -> bool {
    let refusing = matches!(
        e.kind(),
        ErrorKind::ReadOnly
            | ErrorKind::MasterDown
            | ErrorKind::BusyLoadingError
            | ErrorKind::TryAgain
            | ErrorKind::ClusterDown
    ) || matches!(e.code(), Some("OOM" | "MISCONF" | "READONLY" | "LOADING"));
    // A script's write refused inside Redis comes back wrapped in a script error.
    let text = e.to_string();
    e.is_io_error() || refusing || text.contains("READONLY") || text.contains("OOM command")
}

/// The error of a call not made because the circuit is open.
fn circuit_open(why: &str, since: Duration) -> RedisError {
    let detail = format!(
        "not tried: the circuit has been open for {:.1} s, since {why}",
        since.as_secs_f64()
    );
    RedisError::from((ErrorKind::IoError, "cache unavailable", detail))
}

impl Health {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Fails at once while the circuit is open.
    pub(super) fn check(&self) -> Result<(), RedisError> {
        if !self.open.load(Ordering::Acquire) {
            return Ok(());
        }
        match &self.lock().failure {
            Some((why, at)) => Err(circuit_open(why, at.elapsed())),
            None => Ok(()),
        }
    }

    /// Opens the circuit after `e`; true when it was closed (the caller starts the probe).
    pub(super) fn trip(&self, e: &RedisError) -> bool {
        let mut s = self.lock();
        let newly = s.failure.is_none();
        if newly {
            s.failure = Some((e.to_string(), Instant::now()));
            self.open.store(true, Ordering::Release);
        }
        newly
    }

    /// A probe failed too: keeps the circuit open with its latest reason.
    pub(super) fn still_failing(&self, e: &RedisError) {
        if let Some((why, _)) = &mut self.lock().failure {
            *why = e.to_string();
        }
    }

    /// Closes the circuit, unless timelines are still to be dropped.
    pub(super) fn close(&self) -> bool {
        let mut s = self.lock();
        if s.all_timelines_stale {
            return false;
        }
        s.failure = None;
        self.open.store(false, Ordering::Release);
        true
    }

    /// Why the circuit is open, or `None` while Redis serves.
    pub(super) fn failure(&self) -> Option<String> {
        if !self.open.load(Ordering::Acquire) {
            return None;
        }
        self.lock()
            .failure
            .as_ref()
            .map(|(why, at)| format!("{why} ({:.1} s ago)", at.elapsed().as_secs_f64()))
    }

    /// These users' cached lists of this kind may be stale; `ttl` bounds how long any
    /// cached list lives.
    pub(super) fn lists_stale(&self, list: List, uids: &[u64], ttl: Duration) {
        let mut s = self.lock();
        let k = list.index();
        s.stale_lists[k].extend(uids);
        if s.stale_lists[k].len() > MAX_STALE {
            s.stale_lists[k].clear();
            s.all_lists_stale_until[k] = Some(Instant::now() + ttl);
        }
    }

    /// Whether the user's cached list of this kind must not be served.
    pub(super) fn is_list_stale(&self, list: List, uid: u64) -> bool {
        let mut s = self.lock();
        let k = list.index();
        if let Some(until) = s.all_lists_stale_until[k] {
            if Instant::now() < until {
                return true;
            }
            s.all_lists_stale_until[k] = None;
        }
        s.stale_lists[k].contains(&uid)
    }

    /// These users' cached lists of this kind were replaced or deleted.
    pub(super) fn lists_fresh(&self, list: List, uids: &[u64]) {
        let mut s = self.lock();
        for u in uids {
            s.stale_lists[list.index()].remove(u);
        }
    }

    /// Some users with a stale list of this kind, to delete when Redis is back.
    pub(super) fn some_stale_lists(&self, list: List, n: usize) -> Vec<u64> {
        self.lock().stale_lists[list.index()].iter().take(n).copied().collect()
    }

    /// A push to these users' timelines failed.
    pub(super) fn timelines_stale(&self, uids: &[u64]) {
        let mut s = self.lock();
        s.stale_timelines.extend(uids);
        if s.stale_timelines.len() > MAX_STALE {
            s.stale_timelines.clear();
            s.all_timelines_stale = true;
            s.timeline_losses += 1;
        }
    }

    /// Takes up to `n` users whose timeline missed a push out of the set, to delete their
    /// timelines when Redis is back (so no server of a shared cache serves them); the
    /// caller puts them back with [`Self::timelines_stale`] if the deletion fails. A push
    /// that fails after they were taken marks its users again, for the next round.
    pub(super) fn take_stale_timelines(&self, n: usize) -> Vec<u64> {
        let mut s = self.lock();
        let some: Vec<u64> = s.stale_timelines.iter().take(n).copied().collect();
        for u in &some {
            s.stale_timelines.remove(u);
        }
        some
    }

    /// Whether the user's timeline must not be served.
    pub(super) fn is_timeline_stale(&self, uid: u64) -> bool {
        let s = self.lock();
        s.all_timelines_stale || s.stale_timelines.contains(&uid)
    }

    /// A build of the user's timeline began: pushes that failed before it are in the
    /// store already, so the build's pull takes them.
    pub(super) fn timeline_rebuilding(&self, uid: u64) {
        self.lock().stale_timelines.remove(&uid);
    }

    /// `Some(n)` when every timeline must be dropped, `n` identifying this loss.
    pub(super) fn all_timelines_lost(&self) -> Option<u64> {
        let s = self.lock();
        s.all_timelines_stale.then_some(s.timeline_losses)
    }

    /// Every timeline was dropped after loss `n`.
    pub(super) fn timelines_dropped(&self, n: u64) {
        let mut s = self.lock();
        if s.timeline_losses == n {
            s.all_timelines_stale = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_circuit_opens_once_and_closes_after_timelines_are_dropped() {
        let h = Health::default();
        assert!(h.check().is_ok() && h.failure().is_none());
        let e = RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut));
        assert!(unavailable(&e));
        assert!(h.trip(&e));
        assert!(!h.trip(&e), "only the first failure starts a probe");
        let err = h.check().unwrap_err().to_string();
        assert!(err.contains("circuit") && err.contains("timed out"), "{err}");
        let many: Vec<u64> = (0..=MAX_STALE as u64).collect();
        h.timelines_stale(&many);
        assert!(h.is_timeline_stale(123_456_789));
        let n = h.all_timelines_lost().unwrap();
        assert!(!h.close(), "closed with timelines still to drop");
        h.timelines_dropped(n);
        assert!(h.close());
        assert!(h.check().is_ok() && !h.is_timeline_stale(5));
        h.timelines_stale(&[7, 8]);
        let mut taken = h.take_stale_timelines(10);
        taken.sort_unstable();
        assert_eq!(taken, [7, 8]);
        assert!(!h.is_timeline_stale(7) && h.take_stale_timelines(10).is_empty());
    }

    #[test]
    fn stale_friend_lists_until_replaced_or_expired() {
        let h = Health::default();
        h.lists_stale(List::Friends, &[1, 2], Duration::from_secs(60));
        assert!(h.is_list_stale(List::Friends, 1) && !h.is_list_stale(List::Friends, 3));
        assert!(!h.is_list_stale(List::Followees, 1), "each kind of list on its own");
        h.lists_fresh(List::Friends, &[1]);
        assert!(!h.is_list_stale(List::Friends, 1) && h.is_list_stale(List::Friends, 2));
        let many: Vec<u64> = (0..=MAX_STALE as u64).collect();
        h.lists_stale(List::Friends, &many, Duration::from_millis(50));
        assert!(h.is_list_stale(List::Friends, u64::MAX), "overflow: every list is stale");
        std::thread::sleep(Duration::from_millis(80));
        assert!(!h.is_list_stale(List::Friends, u64::MAX), "every list cached before has expired");
        let refused = RedisError::from((ErrorKind::ReadOnly, "READONLY"));
        assert!(unavailable(&refused));
        assert!(!unavailable(&RedisError::from((ErrorKind::TypeError, "bad reply"))));
    }
}
