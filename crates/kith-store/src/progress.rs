//! How far a long store operation (a build's or a relayout's rewrite) has got: a bar on the
//! terminal, a handle another thread reads (the service's relayout button), or both.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;

/// Where an operation is, as a reader of a [`Progress`] sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ProgressSnapshot {
    /// The current phase (`computing the layout`, `data`, `index`, `profiles`, …).
    pub phase: String,
    /// Units of the phase done.
    pub done: u64,
    /// Units of the phase in all (0 when the phase is not counted).
    pub total: u64,
}

#[derive(Debug, Default)]
struct Shared {
    phase: Mutex<String>,
    done: AtomicU64,
    total: AtomicU64,
}

/// A progress report, cheap to clone: every clone reports to, and reads, the same state.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    shared: Arc<Shared>,
    bar: bool,
}

impl Progress {
    /// A report that also draws a bar on the terminal when `bar` is set.
    pub fn terminal(bar: bool) -> Progress {
        Progress { shared: Arc::default(), bar }
    }

    /// Whether a terminal bar is wanted.
    pub(crate) fn shows_bar(&self) -> bool {
        self.bar
    }

    /// Where the operation is now.
    pub fn snapshot(&self) -> ProgressSnapshot {
        // The phase is written before its counters are reset, so a reader may pair a new
        // phase with the old one's counts for an instant: clamp rather than show done > total.
        let phase = self.shared.phase.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let phase = if phase.is_empty() { "starting".to_string() } else { phase };
        let total = self.shared.total.load(Ordering::Relaxed);
        let done = self.shared.done.load(Ordering::Relaxed);
        ProgressSnapshot { phase, done: if total > 0 { done.min(total) } else { done }, total }
    }

    /// Starts a phase of `total` units (0: not counted).
    pub(crate) fn phase(&self, name: &str, total: u64) {
        *self.shared.phase.lock().unwrap_or_else(PoisonError::into_inner) = name.to_string();
        self.shared.done.store(0, Ordering::Relaxed);
        self.shared.total.store(total, Ordering::Relaxed);
    }

    /// Counts `n` units of the current phase done.
    pub(crate) fn add(&self, n: u64) {
        self.shared.done.fetch_add(n, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_one_state_and_a_phase_restarts_the_count() {
        let p = Progress::terminal(false);
        let reader = p.clone();
        p.phase("data", 10);
        p.add(4);
        assert_eq!(
            reader.snapshot(),
            ProgressSnapshot { phase: "data".into(), done: 4, total: 10 }
        );
        p.phase("index", 3);
        assert_eq!(
            reader.snapshot(),
            ProgressSnapshot { phase: "index".into(), done: 0, total: 3 }
        );
        p.add(7);
        assert_eq!(reader.snapshot().done, 3, "clamped to the phase's total");
    }
}
