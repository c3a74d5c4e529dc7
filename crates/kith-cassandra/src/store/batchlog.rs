//! Logged batches while the batch log cannot be written.
//!
//! A coordinator writes a logged batch to the batch logs of two other live nodes before it
//! applies it, and Cassandra counts a node live until its failure detector convicts it
//! (about 11 s after it stopped answering, `phi_convict_threshold` 5 being the lowest it
//! takes). In a three-node cluster those two are the only others, so from a node's death,
//! pause or cut until its conviction every logged batch times out writing its batch log
//! (`write_request_timeout`, 2 s) having applied nothing, and writes stall.
//!
//! So while the driver has no connection to a node (a node killed, or one that answered no
//! keepalive), and from a batch-log timeout, or a logged batch unanswered for
//! [`HEDGE_AFTER`], until a batch gets through logged again (one batch tries every
//! [`DOWN_FOR`]), this process sends a logged batch as an unlogged one:
//! each of its writes applied at QUORUM by the live nodes, with the batch's one timestamp,
//! sent again while it times out, for up to [`RESEND_WITHIN`]. Every batch kith sends sets
//! values, so sending it again is applying it once; what the batch log no longer covers
//! meanwhile is this kith server dying between the writes of one batch (a second fault
//! while the first lasts).
//!
//! A logged batch unanswered for [`HEDGE_AFTER`] is sent as an unlogged one too, and the
//! first to succeed answers: waiting for the batch-log timeout held every client writing a
//! friendship, profile or user for 2–3 s after a node was cut off (`partition-cassandra`
//! timelines). Both copies set the same values, so applying both is applying it once; a
//! batch stamped by kith (`Writes::at`) carries its stamp in both, and an unstamped one
//! (posts, which never change, and follow index rows, stamped per statement) takes each
//! copy's coordinator's clock within the write's own time.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use futures_util::future::{Either, select};
use kith_store::Error as StoreError;
use scylla::client::session::Session;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError, WriteType};
use scylla::serialize::row::SerializeRow;
use scylla::statement::batch::{Batch, BatchType};

use crate::error::driver;

/// How long a logged batch may go unanswered before it is sent unlogged too. Under the
/// trials' load on two cores a whole friendship write (key claim, read, batch) takes
/// 215 ms at the 99th percentile.
const HEDGE_AFTER: Duration = Duration::from_millis(400);
/// How long after a batch-log timeout one batch tries the batch log again.
const DOWN_FOR: Duration = Duration::from_secs(5);
/// How long an unlogged batch standing in for a logged one is sent again while it times out.
const RESEND_WITHIN: Duration = Duration::from_secs(8);

/// Until when (milliseconds since this process's first use) the batch log counts as down;
/// 0 while it has never been.
static DOWN_UNTIL_MS: AtomicU64 = AtomicU64::new(0);
/// Whether a batch is trying the batch log again after it was down.
static PROBING: AtomicBool = AtomicBool::new(false);

fn since_start_ms() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed().as_millis() as u64 + 1
}

/// How a logged batch is sent now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    Logged,
    /// Logged, the one batch trying the batch log again after it was down.
    Probe,
    Unlogged,
}

/// Unlogged while a node the driver uses has no open connection (killed, or dropped for
/// missing keepalives) or for [`DOWN_FOR`] after a batch-log timeout; then one batch at a
/// time tries the batch log again while the others go on unlogged.
pub(super) fn mode(session: &Session) -> Mode {
    let state = session.get_cluster_state();
    if state.get_nodes_info().iter().any(|n| n.is_enabled() && !n.is_connected()) {
        return Mode::Unlogged;
    }
    let until = DOWN_UNTIL_MS.load(Ordering::Relaxed);
    if until == 0 {
        Mode::Logged
    } else if since_start_ms() < until || PROBING.swap(true, Ordering::AcqRel) {
        Mode::Unlogged
    } else {
        Mode::Probe
    }
}

/// A probe's batch log was written: logged batches again.
pub(super) fn up() {
    if DOWN_UNTIL_MS.swap(0, Ordering::Relaxed) != 0 {
        eprintln!("kith cassandra: batch log writes go through again: logged batches again");
    }
    PROBING.store(false, Ordering::Release);
}

/// A probe failed otherwise: the next batch probes again.
pub(super) fn probe_failed() {
    PROBING.store(false, Ordering::Release);
}

pub(super) fn mark_down() {
    let until = since_start_ms() + DOWN_FOR.as_millis() as u64;
    if DOWN_UNTIL_MS.fetch_max(until, Ordering::Relaxed) == 0 {
        eprintln!(
            "kith cassandra: a batch log write timed out (a node down and not yet convicted): \
             sending logged batches unlogged until one goes through logged, tried every {} s",
            DOWN_FOR.as_secs()
        );
    }
    PROBING.store(false, Ordering::Release);
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

/// Sends `batch` (logged) as `mode` says (the batch log working, or one batch probing it),
/// and as an unlogged batch if it has no answer within [`HEDGE_AFTER`] or fails writing
/// its batch log; answers with the first copy to succeed.
pub(super) async fn logged(
    session: &Session,
    batch: &Batch,
    values: &[Box<dyn SerializeRow + Send + Sync>],
    mode: Mode,
    what: &str,
) -> Result<(), StoreError> {
    let mut sent = std::pin::pin!(session.batch(batch, values));
    let Ok(answer) = tokio::time::timeout(HEDGE_AFTER, sent.as_mut()).await else {
        mark_down();
        let copy = std::pin::pin!(unlogged(session, batch, values, what));
        return match select(sent, copy).await {
            Either::Left((Ok(_), _)) | Either::Right((Ok(()), _)) => Ok(()),
            Either::Left((Err(_), copy)) => copy.await,
            Either::Right((Err(e), sent)) => sent.await.map(|_| ()).map_err(|_| e),
        };
    };
    match answer {
        Ok(_) => {
            if mode == Mode::Probe {
                up();
            }
            Ok(())
        }
        // The batch log could not be written: nothing was applied.
        Err(e) if timed_out(&e) => {
            mark_down();
            unlogged(session, batch, values, what).await
        }
        Err(e) => {
            if mode == Mode::Probe {
                probe_failed();
            }
            Err(driver(what, e))
        }
    }
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
