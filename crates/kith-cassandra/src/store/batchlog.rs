//! Logged batches while the batch log cannot be written.
//!
//! A coordinator writes a logged batch to the batch logs of two other live nodes before it
//! applies it, and Cassandra counts a node live until its failure detector convicts it
//! (about 11 s after it stopped answering, `phi_convict_threshold` 5 being the lowest it
//! takes). In a three-node cluster those two are the only others, so from a node's death,
//! pause or cut until its conviction every logged batch times out writing its batch log
//! (`write_request_timeout`, 2 s) having applied nothing, and writes stall.
//!
//! So the first batch-log timeout marks the batch log down for this process for
//! [`DOWN_FOR`]: meanwhile a logged batch is sent as an unlogged one (each of its writes
//! applied at QUORUM by the live nodes, with the batch's one timestamp), sent again while it
//! times out, for up to [`RESEND_WITHIN`]. Every batch kith sends sets values, so sending it
//! again is applying it once; what the batch log no longer covers meanwhile is this kith
//! server dying between the writes of one batch (a second fault while the first lasts).
//! Once [`DOWN_FOR`] has passed the next batch tries the batch log again.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use kith_store::Error as StoreError;
use scylla::client::session::Session;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError, WriteType};
use scylla::serialize::row::SerializeRow;
use scylla::statement::batch::{Batch, BatchType};

use crate::error::driver;

/// How long a batch-log timeout sends logged batches unlogged.
const DOWN_FOR: Duration = Duration::from_secs(5);
/// How long an unlogged batch standing in for a logged one is sent again while it times out.
const RESEND_WITHIN: Duration = Duration::from_secs(8);

/// Until when (milliseconds since this process's first use) the batch log counts as down.
static DOWN_UNTIL_MS: AtomicU64 = AtomicU64::new(0);

fn since_start_ms() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed().as_millis() as u64
}

/// Whether logged batches go unlogged now.
pub(super) fn down() -> bool {
    since_start_ms() < DOWN_UNTIL_MS.load(Ordering::Relaxed)
}

pub(super) fn mark_down() {
    let until = since_start_ms() + DOWN_FOR.as_millis() as u64;
    if DOWN_UNTIL_MS.fetch_max(until, Ordering::Relaxed) <= since_start_ms() {
        eprintln!(
            "kith cassandra: a batch log write timed out (a node down and not yet convicted): \
             sending logged batches unlogged for {} s",
            DOWN_FOR.as_secs()
        );
    }
}

/// Whether a logged batch failed writing its batch log (so applied nothing).
pub(super) fn timed_out(e: &ExecutionError) -> bool {
    matches!(
        e,
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(
            DbError::WriteTimeout { write_type: WriteType::BatchLog, .. },
            _,
        ))
    )
}

/// Sends `logged`'s statements as an unlogged batch, again while it fails for want of
/// replicas, within [`RESEND_WITHIN`].
pub(super) async fn unlogged(
    session: &Session,
    logged: &Batch,
    values: &[Box<dyn SerializeRow + Send + Sync>],
    what: &str,
) -> Result<(), StoreError> {
    let mut batch = Batch::new_with_statements(BatchType::Unlogged, logged.statements.clone());
    batch.set_timestamp(logged.get_timestamp());
    batch.set_is_idempotent(true);
    if let Some(c) = logged.get_consistency() {
        batch.set_consistency(c);
    }
    let deadline = tokio::time::Instant::now() + RESEND_WITHIN;
    let mut pause = Duration::from_millis(50);
    loop {
        match session.batch(&batch, values).await.map_err(|e| driver(what, e)) {
            Err(StoreError::Unavailable(_)) if tokio::time::Instant::now() + pause < deadline => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(1));
            }
            sent => return sent.map(|_| ()),
        }
    }
}
