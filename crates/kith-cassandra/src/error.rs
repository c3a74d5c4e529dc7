//! The crate's errors: the local cluster's own, and the mapping of the driver's errors onto
//! the store's (what the service answers with).

use scylla::errors::{DbError, ExecutionError, RequestAttemptError};

/// What a local cluster, a connection or a build can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A local cluster could not be started, found or stopped.
    #[error("{0}")]
    Cluster(String),
    /// A program the cluster needs is not installed.
    #[error("{what} is not installed: {fix}")]
    Missing {
        /// The program.
        what: &'static str,
        /// How to install it.
        fix: &'static str,
    },
    /// A file-system or process error.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
    /// The store on the cluster failed.
    #[error(transparent)]
    Store(#[from] kith_store::Error),
}

impl Error {
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
        let context = context.into();
        move |source| Error::Io { context, source }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The store's error for a failed request: too few replicas alive or answering in time (or no
/// node reachable) is [`kith_store::Error::Unavailable`], which the service answers with 503
/// and which a write never acknowledges; anything else is the engine's own failure.
pub(crate) fn driver(what: &str, e: ExecutionError) -> kith_store::Error {
    let unavailable = match &e {
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(db, _)) => matches!(
            db,
            DbError::Unavailable { .. }
                | DbError::ReadTimeout { .. }
                | DbError::WriteTimeout { .. }
                | DbError::ReadFailure { .. }
                | DbError::WriteFailure { .. }
                | DbError::Overloaded
                | DbError::IsBootstrapping
                | DbError::RateLimitReached { .. }
        ),
        ExecutionError::LastAttemptError(RequestAttemptError::BrokenConnectionError(_))
        | ExecutionError::LastAttemptError(RequestAttemptError::UnableToAllocStreamId)
        | ExecutionError::ConnectionPoolError(_)
        | ExecutionError::EmptyPlan
        | ExecutionError::RequestTimeout(_) => true,
        _ => false,
    };
    if unavailable {
        kith_store::Error::Unavailable(format!("{what}: {e}"))
    } else {
        kith_store::Error::Backend { engine: "cassandra", detail: format!("{what}: {e}") }
    }
}
