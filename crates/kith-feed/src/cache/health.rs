//! The Redis backend's health: a circuit breaker, and the cached entries that cannot be
//! trusted because a write meant to change them failed.
//!
//! The circuit opens when Redis is unavailable: at the first call that finds it unreachable
//! or refusing writes (READONLY, OOM, MISCONF, LOADING), and once calls keep timing out
//! ([`Health::timed_out`]). A single slow moment (every call in flight timing out together
//! after a pause of this process or of the whole machine) fails only the calls it caught:
//! opening on it would fail every write for a probe interval at least, and every timeline
//! those writes missed would then be rebuilt from the store. While the circuit is
//! open every call fails at once without touching Redis, so the feed answers from the store
//! without paying the timeout on each request; a probe (`redis/upkeep.rs`) tries a write
//! periodically and closes the circuit when Redis takes it.
//!
//! A failed invalidation of a friend or followee list, or a failed push to a timeline, leaves an entry
//! in Redis that may be older than what this server acknowledged. The users are marked here
//! and their entries are read as misses until a later write replaces or deletes them, or
//! the probe, which runs while any mark is left, deletes them, so that no server sharing
//! the cache serves them either (**invariant: a list or timeline whose update failed is
//! never served by this server, and a probe runs until it is deleted from Redis or
//! replaced**). Each mark is numbered: a deletion or replacement clears only the marks
//! made before it began ([`Health::clock`]), so a failure racing a repair is never
//! forgotten. Past
//! [`MAX_STALE`] users the sets stop growing: then no friend list is served until every
//! list cached before the failure has expired, and the circuit stays open until every
//! timeline has been dropped.

use std::collections::HashMap;
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
    /// The first and the latest timeout of the current run of timeouts.
    timeouts: Option<(Instant, Instant)>,
    /// Counts the times the circuit opened, so a probe closes only a failure it outlived.
    trips: u64,
    /// Whether a probe is running (one at a time).
    probing: bool,
    /// The number of the latest mark.
    marks: u64,
    /// Per kind of list ([`List::index`]): users whose cached list is stale, with the
    /// number of their latest mark.
    stale_lists: [HashMap<u64, u64>; 2],
    /// Too many stale lists of a kind to remember: none of that kind is served before this
    /// instant.
    all_lists_stale_until: [Option<Instant>; 2],
    stale_timelines: HashMap<u64, u64>,
    /// Too many stale timelines to remember: all are dropped before the circuit closes.
    all_timelines_stale: bool,
    /// Counts the times `all_timelines_stale` was set, so a drop that raced a new loss
    /// does not clear it.
    timeline_losses: u64,
}

impl State {
    fn mark(&mut self) -> u64 {
        self.marks += 1;
        self.marks
    }
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

/// Up to `n` users whose latest mark is not after `upto`.
fn some(marks: &HashMap<u64, u64>, n: usize, upto: u64) -> Vec<u64> {
    marks.iter().filter(|&(_, &m)| m <= upto).map(|(&u, _)| u).take(n).collect()
}

/// Removes the users whose latest mark is not after `since`.
fn clear(marks: &mut HashMap<u64, u64>, uids: &[u64], since: u64) {
    for u in uids {
        if marks.get(u).is_some_and(|&m| m <= since) {
            marks.remove(u);
        }
    }
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

    /// A call (or a probe) timed out: true once timeouts have kept coming for `open_after`,
    /// none more than `gap` after the one before (then the caller opens the circuit).
    /// Successes in between do not end a run: on a cluster, the other masters answer.
    pub(super) fn timed_out(&self, gap: Duration, open_after: Duration) -> bool {
        let now = Instant::now();
        let mut s = self.lock();
        let first = match s.timeouts {
            Some((first, last)) if now.duration_since(last) <= gap => first,
            _ => now,
        };
        s.timeouts = Some((first, now));
        now.duration_since(first) >= open_after
    }

    /// Opens the circuit after `e`; true when it was closed.
    pub(super) fn trip(&self, e: &RedisError) -> bool {
        let mut s = self.lock();
        let newly = s.failure.is_none();
        if newly {
            s.failure = Some((e.to_string(), Instant::now()));
            s.trips += 1;
            self.open.store(true, Ordering::Release);
        }
        newly
    }

    /// Counts the times the circuit opened: read before a probe's pass, for [`Self::close`].
    pub(super) fn trips(&self) -> u64 {
        self.lock().trips
    }

    /// True when no probe runs (the caller starts one): once the circuit is open, or a mark
    /// was made.
    pub(super) fn start_probe(&self) -> bool {
        let mut s = self.lock();
        !std::mem::replace(&mut s.probing, true)
    }

    /// A probe failed too: keeps the circuit open with its latest reason.
    pub(super) fn still_failing(&self, e: &RedisError) {
        if let Some((why, _)) = &mut self.lock().failure {
            *why = e.to_string();
        }
    }

    /// After a probe's pass that began when `trips` ([`Self::trips`]) was read: closes the
    /// circuit, unless it opened again since or timelines are still to be dropped. True
    /// when it was open and is closed now.
    pub(super) fn close(&self, trips: u64) -> bool {
        let mut s = self.lock();
        if s.all_timelines_stale || s.trips != trips || s.failure.is_none() {
            return false;
        }
        s.failure = None;
        s.timeouts = None;
        self.open.store(false, Ordering::Release);
        true
    }

    /// True when the probe may stop: the circuit is closed and no mark is left (a mark
    /// made later starts a new probe).
    pub(super) fn probe_done(&self) -> bool {
        let mut s = self.lock();
        let done = s.failure.is_none()
            && s.stale_lists.iter().all(HashMap::is_empty)
            && s.stale_timelines.is_empty()
            && !s.all_timelines_stale;
        if done {
            s.probing = false;
        }
        done
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

    /// The number of the latest mark: a deletion or replacement that begins now clears only
    /// marks up to it.
    pub(super) fn clock(&self) -> u64 {
        self.lock().marks
    }

    /// These users' cached lists of this kind may be stale; `ttl` bounds how long any
    /// cached list lives.
    pub(super) fn lists_stale(&self, list: List, uids: &[u64], ttl: Duration) {
        let mut s = self.lock();
        let k = list.index();
        for &u in uids {
            let m = s.mark();
            s.stale_lists[k].insert(u, m);
        }
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
        s.stale_lists[k].contains_key(&uid)
    }

    /// These users' cached lists of this kind were replaced or deleted by a call that began
    /// after mark `since` ([`Self::clock`]); later marks stay.
    pub(super) fn lists_fresh(&self, list: List, uids: &[u64], since: u64) {
        clear(&mut self.lock().stale_lists[list.index()], uids, since);
    }

    /// Up to `n` users whose list of this kind was marked stale by mark `upto` or before,
    /// to delete (a pass that begins at `upto` ends, as later marks are left to the next).
    pub(super) fn some_stale_lists(&self, list: List, n: usize, upto: u64) -> Vec<u64> {
        some(&self.lock().stale_lists[list.index()], n, upto)
    }

    /// A push to these users' timelines failed.
    pub(super) fn timelines_stale(&self, uids: &[u64]) {
        let mut s = self.lock();
        for &u in uids {
            let m = s.mark();
            s.stale_timelines.insert(u, m);
        }
        if s.stale_timelines.len() > MAX_STALE {
            s.stale_timelines.clear();
            s.all_timelines_stale = true;
            s.timeline_losses += 1;
        }
    }

    /// Up to `n` users whose timeline missed a push by mark `upto` or before, to delete (so
    /// no server of a shared cache serves them).
    pub(super) fn some_stale_timelines(&self, n: usize, upto: u64) -> Vec<u64> {
        some(&self.lock().stale_timelines, n, upto)
    }

    /// These users' timelines were deleted by a call that began after mark `since`.
    pub(super) fn timelines_fresh(&self, uids: &[u64], since: u64) {
        clear(&mut self.lock().stale_timelines, uids, since);
    }

    /// Whether the user's timeline must not be served.
    pub(super) fn is_timeline_stale(&self, uid: u64) -> bool {
        let s = self.lock();
        s.all_timelines_stale || s.stale_timelines.contains_key(&uid)
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
        assert!(!h.trip(&e), "opened once");
        assert!(h.start_probe());
        assert!(!h.start_probe(), "one probe at a time");
        let err = h.check().unwrap_err().to_string();
        assert!(err.contains("circuit") && err.contains("timed out"), "{err}");
        let many: Vec<u64> = (0..=MAX_STALE as u64).collect();
        h.timelines_stale(&many);
        assert!(h.is_timeline_stale(123_456_789));
        let n = h.all_timelines_lost().unwrap();
        let trips = h.trips();
        assert!(!h.close(trips), "closed with timelines still to drop");
        assert!(!h.probe_done());
        h.timelines_dropped(n);
        assert!(!h.close(trips - 1), "closed a circuit that opened after the pass began");
        assert!(h.close(trips));
        assert!(!h.close(trips), "closed already");
        assert!(h.check().is_ok() && !h.is_timeline_stale(5));
        assert!(h.probe_done());
        assert!(h.start_probe(), "a new probe once the last one is done");
    }

    #[test]
    fn a_probe_runs_while_any_mark_is_left() {
        let h = Health::default();
        h.timelines_stale(&[7, 8]);
        assert!(h.check().is_ok(), "a mark alone does not open the circuit");
        assert!(h.start_probe());
        let since = h.clock();
        let mut some = h.some_stale_timelines(10, since);
        some.sort_unstable();
        assert_eq!(some, [7, 8]);
        // While the repair deletes them, a push to 8 fails again: the pass is not asked to
        // delete it again, and it stays marked.
        h.timelines_stale(&[8]);
        assert_eq!(h.some_stale_timelines(10, since), [7]);
        h.timelines_fresh(&some, since);
        assert!(h.some_stale_timelines(10, since).is_empty());
        assert!(!h.is_timeline_stale(7));
        assert!(h.is_timeline_stale(8), "a mark made during the repair was forgotten");
        assert!(!h.probe_done());
        h.timelines_fresh(&[8], h.clock());
        assert!(h.probe_done());
    }

    #[test]
    fn a_single_slow_moment_does_not_open_the_circuit() {
        let h = Health::default();
        let (gap, open_after) = (Duration::from_millis(300), Duration::from_millis(600));
        // Every call in flight times out at once after a stall: no run of timeouts.
        for _ in 0..50 {
            assert!(!h.timed_out(gap, open_after));
        }
        // Timeouts that stop for longer than the gap start a new run.
        std::thread::sleep(gap * 2);
        let start = Instant::now();
        assert!(!h.timed_out(gap, open_after));
        // Timeouts that keep coming: Redis is unavailable.
        let mut opened = false;
        while start.elapsed() < open_after * 3 {
            std::thread::sleep(Duration::from_millis(50));
            if h.timed_out(gap, open_after) {
                opened = true;
                break;
            }
        }
        assert!(opened && start.elapsed() >= open_after, "opened after {:?}", start.elapsed());
    }

    #[test]
    fn stale_friend_lists_until_replaced_or_expired() {
        let h = Health::default();
        let before = h.clock();
        h.lists_stale(List::Friends, &[1, 2], Duration::from_secs(60));
        assert!(h.is_list_stale(List::Friends, 1) && !h.is_list_stale(List::Friends, 3));
        assert!(!h.is_list_stale(List::Followees, 1), "each kind of list on its own");
        h.lists_fresh(List::Friends, &[1], before);
        assert!(h.is_list_stale(List::Friends, 1), "a drop that began before the mark");
        assert_eq!(h.some_stale_lists(List::Friends, 10, before), Vec::<u64>::new());
        h.lists_fresh(List::Friends, &[1], h.clock());
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
