//! The feed layer's error type.

/// Everything a feed operation can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The storage engine refused or failed: unknown users, follows that already exist or
    /// do not, self-follows, corrupt stored posts among them.
    #[error(transparent)]
    Store(#[from] kith_store::Error),
    /// No post has this id.
    #[error("post {0} not found")]
    UnknownPost(u64),
    /// A request larger than accepted.
    #[error("{what} of {got} exceeds the limit of {limit}")]
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// The size asked for.
        got: u64,
        /// The largest accepted.
        limit: u64,
    },
    /// A per-request budget was exceeded: the request would cost more than one request may.
    #[error("{what} exceeds the budget of {limit}")]
    TooExpensive {
        /// What was counted.
        what: &'static str,
        /// The budget.
        limit: u64,
    },
    /// An idempotency key already used for a different request.
    #[error("idempotency key {key:?} was already used for a different request")]
    IdempotencyKeyReused {
        /// The key.
        key: String,
    },
    /// A client-supplied post id that another post, with other content, already has.
    #[error("post id {0} is taken by another post")]
    PostIdTaken(u64),
    /// A request that cannot be carried out as asked.
    #[error("{0}")]
    Invalid(String),
    /// The feed is shutting down and takes no more writes.
    #[error("the server is shutting down")]
    ShuttingDown,
    /// A blocking task panicked or was cancelled: the server's fault, whatever was asked.
    #[error("a blocking task failed: {0}")]
    TaskFailed(String),
    /// A journal record that does not decode.
    #[error("corrupt {what}: {reason}")]
    Corrupt {
        /// Which record.
        what: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Redis failed or is unreachable.
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// A file-system error (the write-back journal).
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
}

impl Error {
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
        let context = context.into();
        move |source| Error::Io { context, source }
    }
}

/// The feed layer's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
