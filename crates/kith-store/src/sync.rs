//! Mutexes that outlive a panicking holder. What kith-store guards with them stays
//! consistent across a panic (every durable change is one `WriteBatch`, every trace push one
//! `Vec::push`), so a poisoned lock is taken over rather than spreading the panic.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `m`, taking it over if a holder panicked.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
