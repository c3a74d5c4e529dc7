//! How the driver retries a request that failed: [`Retries`].

use std::net::SocketAddr;

use scylla::errors::{DbError, RequestAttemptError, RequestError, WriteType};
use scylla::observability::history::{AttemptId, HistoryListener, RequestId, SpeculativeId};
use scylla::policies::retry::{
    DefaultRetrySession, RequestInfo, RetryDecision, RetryPolicy, RetrySession,
};

/// The driver's default retries, but for a batch-log write timeout (not retried: the store
/// sends the batch unlogged, `store/batchlog.rs`), and other write timeouts of idempotent
/// writes (lightweight transactions included) and read timeouts once on another
/// coordinator.
#[derive(Debug)]
pub(crate) struct Retries;

impl RetryPolicy for Retries {
    fn new_session(&self) -> Box<dyn RetrySession> {
        Box::new(RetriesSession { default: DefaultRetrySession::new(), moved_on: false })
    }
}

struct RetriesSession {
    default: DefaultRetrySession,
    /// Whether this request was sent to another coordinator after a timeout already.
    moved_on: bool,
}

/// What kith decides for a failed attempt of an idempotent request (`None`: the driver's
/// default decides). `moved_on` says whether the request moved to another coordinator
/// after a timeout already; it moves once.
fn decide(error: &RequestAttemptError, serial: bool, moved_on: &mut bool) -> Option<RetryDecision> {
    let RequestAttemptError::DbError(e, _) = error else { return None };
    let next = |moved_on: &mut bool| {
        (!std::mem::replace(moved_on, true)).then_some(RetryDecision::RetryNextTarget(None))
    };
    if serial {
        return None;
    }
    match e {
        // Nothing applied; the store sends it again as an unlogged batch.
        DbError::WriteTimeout { write_type: WriteType::BatchLog, .. } => {
            Some(RetryDecision::DontRetry)
        }
        // A logged batch applied on too few replicas in time (it is in the batch log and will
        // be applied), or a single write: it sets values, so sending it again once is safe;
        // through another coordinator, as this one may be cut off from the replicas.
        DbError::WriteTimeout {
            write_type: WriteType::Batch | WriteType::Simple | WriteType::UnloggedBatch,
            ..
        } => next(moved_on),
        // A lightweight transaction whose Paxos round did not complete in time: its
        // coordinator may be cut off from the other replicas, and the driver sends every
        // round on one partition to the same replica first. Only those whose callers tell
        // their own earlier round from another's are idempotent (`store/statements.rs`); a
        // round on another coordinator completes one left in progress before its own.
        DbError::WriteTimeout { write_type: WriteType::Cas, .. } => next(moved_on),
        // A read that too few replicas answered in time (one slow, paused or dying node):
        // once more through another coordinator, which may ask others.
        DbError::ReadTimeout { .. } => next(moved_on),
        _ => None,
    }
}

impl RetrySession for RetriesSession {
    fn decide_should_retry(&mut self, info: RequestInfo<'_>) -> RetryDecision {
        let mine = info
            .is_idempotent
            .then(|| decide(info.error, info.consistency.is_serial(), &mut self.moved_on))
            .flatten();
        mine.unwrap_or_else(|| self.default.decide_should_retry(info))
    }

    fn reset(&mut self) {
        self.default.reset();
        self.moved_on = false;
    }
}

/// Counts the attempts the driver sends for one request: its first, a copy sent to a second
/// node ([`crate::schema::LWT_SPECULATIVE_AFTER`]), and retries. Set on a statement for one
/// request; a lightweight transaction answered after a single attempt had no other round
/// that could apply it, before or later. The driver runs a request's copies in its own
/// task and drops them when it answers, so the count is complete once it has answered.
#[derive(Debug, Default)]
pub(crate) struct Attempts(std::sync::atomic::AtomicUsize);

impl Attempts {
    pub(crate) fn count(&self) -> usize {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl HistoryListener for Attempts {
    fn log_request_start(&self) -> RequestId {
        RequestId(0)
    }

    fn log_request_success(&self, _: RequestId) {}

    fn log_request_error(&self, _: RequestId, _: &RequestError) {}

    fn log_new_speculative_fiber(&self, _: RequestId) -> SpeculativeId {
        SpeculativeId(0)
    }

    fn log_attempt_start(
        &self,
        _: RequestId,
        _: Option<SpeculativeId>,
        _: SocketAddr,
    ) -> AttemptId {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        AttemptId(n)
    }

    fn log_attempt_success(&self, _: AttemptId) {}

    fn log_attempt_error(&self, _: AttemptId, _: &RequestAttemptError, _: &RetryDecision) {}
}

#[cfg(test)]
mod tests {
    use scylla::statement::Consistency;

    use super::*;

    fn timeout(write_type: WriteType) -> RequestAttemptError {
        let e = DbError::WriteTimeout {
            consistency: Consistency::Serial,
            received: 1,
            required: 2,
            write_type,
        };
        RequestAttemptError::DbError(e, "timed out".into())
    }

    fn next() -> Option<RetryDecision> {
        Some(RetryDecision::RetryNextTarget(None))
    }

    #[test]
    fn batch_log_timeouts_are_not_retried_and_other_timeouts_move_on_once() {
        let mut moved_on = false;
        let batch_log = timeout(WriteType::BatchLog);
        assert_eq!(decide(&batch_log, false, &mut moved_on), Some(RetryDecision::DontRetry));
        assert_eq!(decide(&timeout(WriteType::Batch), false, &mut moved_on), next());
        assert_eq!(decide(&timeout(WriteType::Simple), false, &mut moved_on), None);
        let mut moved_on = false;
        assert_eq!(decide(&timeout(WriteType::Cas), false, &mut moved_on), next());
        assert_eq!(decide(&timeout(WriteType::Cas), false, &mut moved_on), None, "once");
        let mut moved_on = false;
        assert_eq!(decide(&timeout(WriteType::Simple), true, &mut moved_on), None, "serial");
        let read = RequestAttemptError::DbError(
            DbError::ReadTimeout {
                consistency: Consistency::Quorum,
                received: 1,
                required: 2,
                data_present: false,
            },
            String::new(),
        );
        assert_eq!(decide(&read, false, &mut moved_on), next());
    }
}
