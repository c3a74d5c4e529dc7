//! Where a store call's time goes, by what it pays for: an engine marks the steps of a call
//! that buy a guarantee (an idempotency key's claim, a follow edge's lightweight
//! transaction, ...) with [`step`], and the caller takes the time per step with [`take`] on
//! the same thread once the call returns. The service sums them per request
//! (`Server-Timing`, and its metrics), so a benchmark can say which guarantee costs what.
//!
//! Time is charged to the innermost step only, and steps are kept per thread: an engine
//! marks the sequential parts of a call that it runs on the calling thread (RocksDB's
//! calls, and Cassandra's futures, which `block_on` polls there). A step entered by
//! concurrent sub-futures of one call would be charged in an interleaved order; none is.

use std::cell::RefCell;
use std::time::{Duration, Instant};

/// What a step of a store call pays for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Price {
    /// Claiming an `Idempotency-Key` before the write (a lightweight transaction on a
    /// store several servers share).
    KeyClaim,
    /// Reading a key's record: a retry's replay, and the check before a late attempt's
    /// write (friendships, follows).
    KeyRead,
    /// Storing a key's finished record after the write.
    KeyFinish,
    /// A follow edge's switch: its read and its lightweight transaction.
    Edge,
    /// A follow edit's intent, stored before the edge and removed after its index row.
    Intent,
    /// The follower index rows of a follow edit, and settling recent edits before a count.
    Index,
}

impl Price {
    /// Every price, in the order [`take`] reports them.
    pub const ALL: [Price; 6] = [
        Price::KeyClaim,
        Price::KeyRead,
        Price::KeyFinish,
        Price::Edge,
        Price::Intent,
        Price::Index,
    ];

    /// The step's name in `Server-Timing` and the metrics.
    pub fn name(self) -> &'static str {
        match self {
            Price::KeyClaim => "key-claim",
            Price::KeyRead => "key-read",
            Price::KeyFinish => "key-finish",
            Price::Edge => "edge",
            Price::Intent => "intent",
            Price::Index => "index",
        }
    }
}

/// Time per price, in the order of [`Price::ALL`].
pub type Spent = [Duration; Price::ALL.len()];

#[derive(Default)]
struct Ledger {
    spent: Spent,
    /// The steps entered and not left, innermost last, each with when it was last charged.
    open: Vec<(Price, Instant)>,
}

thread_local! {
    static LEDGER: RefCell<Ledger> = RefCell::new(Ledger::default());
}

/// A step under way: its time is charged to its price until it is dropped (less the time
/// of steps entered inside it).
#[derive(Debug)]
#[must_use = "the step ends when this is dropped"]
pub struct Step(Price);

/// Enters a step of `price` on this thread.
pub fn step(price: Price) -> Step {
    LEDGER.with_borrow_mut(|l| {
        let now = Instant::now();
        if let Some((outer, since)) = l.open.last_mut() {
            l.spent[*outer as usize] += now - *since;
            *since = now;
        }
        l.open.push((price, now));
    });
    Step(price)
}

impl Drop for Step {
    fn drop(&mut self) {
        let _ = LEDGER.try_with(|l| {
            let mut l = l.borrow_mut();
            // Left on the thread it was entered on, innermost first; anything else is
            // not charged.
            if l.open.last().is_none_or(|(p, _)| *p != self.0) {
                return;
            }
            let (p, since) = l.open.pop().expect("checked above");
            let now = Instant::now();
            l.spent[p as usize] += now - since;
            if let Some((_, outer_since)) = l.open.last_mut() {
                *outer_since = now;
            }
        });
    }
}

/// The time charged on this thread since the last `take`, per price; starts again from
/// zero, with no step open (a step left open, as one sent to another thread is, ends
/// uncharged).
pub fn take() -> Spent {
    LEDGER.with_borrow_mut(|l| {
        l.open.clear();
        std::mem::take(&mut l.spent)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait(ms: u64) {
        std::thread::sleep(Duration::from_millis(ms));
    }

    #[test]
    fn time_goes_to_the_innermost_step() {
        take();
        {
            let _edge = step(Price::Edge);
            wait(20);
            {
                let _read = step(Price::KeyRead);
                wait(30);
            }
            wait(20);
        }
        wait(30); // outside any step: not charged
        let spent = take();
        let ms = |p: Price| spent[p as usize].as_millis();
        assert!((40..70).contains(&ms(Price::Edge)), "{spent:?}");
        assert!((30..50).contains(&ms(Price::KeyRead)), "{spent:?}");
        assert_eq!(ms(Price::KeyClaim), 0);
        assert_eq!(take(), Spent::default(), "taken once");
    }

    #[test]
    fn a_step_left_on_another_thread_is_not_charged_there() {
        take();
        let s = step(Price::Intent);
        std::thread::spawn(move || drop(s)).join().unwrap();
        assert_eq!(std::thread::spawn(take).join().unwrap(), Spent::default());
        let spent = take();
        assert_eq!(spent[Price::Intent as usize], Duration::ZERO, "never left here");
        assert!(LEDGER.with_borrow(|l| l.open.is_empty()), "take closes what was left open");
    }

    #[test]
    fn names_are_distinct() {
        let mut names: Vec<&str> = Price::ALL.iter().map(|p| p.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Price::ALL.len());
        for (i, p) in Price::ALL.iter().enumerate() {
            assert_eq!(*p as usize, i);
        }
    }
}
