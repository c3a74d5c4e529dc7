//! The store's error type.

use std::path::{Path, PathBuf};

/// Everything a store operation can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No user has this id.
    #[error("user {0} not found")]
    UnknownUser(u64),
    /// A user was asked to befriend themselves.
    #[error("user {0} cannot be their own friend")]
    SelfFriendship(u64),
    /// A user tried to follow themselves.
    #[error("user {0} cannot follow themselves")]
    SelfFollow(u64),
    /// A follow that already exists.
    #[error("user {uid} already follows {target}")]
    AlreadyFollowing {
        /// The follower.
        uid: u64,
        /// The followee.
        target: u64,
    },
    /// An unfollow of someone not followed.
    #[error("user {uid} does not follow {target}")]
    NotFollowing {
        /// The would-be follower.
        uid: u64,
        /// The would-be followee.
        target: u64,
    },
    /// A record or request is larger than the store accepts.
    #[error("{what} of {got} exceeds the limit of {limit}")]
    TooLarge {
        /// What was too large, with its unit ("data block bytes", "friends page").
        what: &'static str,
        /// The size asked for.
        got: u64,
        /// The largest size accepted.
        limit: u64,
    },
    /// A request whose work would pass a per-request budget (friend-list entries a traversal
    /// reads, and the like): it is refused rather than left to run unbounded.
    #[error("{what} exceeds the budget of {limit}")]
    TooExpensive {
        /// What was counted ("friend-list entries read by shortest_path").
        what: &'static str,
        /// The budget.
        limit: u64,
    },
    /// A request that cannot be carried out as asked.
    #[error("{0}")]
    Invalid(String),
    /// A paging cursor from before a relayout.
    #[error(
        "cursor is from layout generation {cursor}, the store is now at {current}; start again without a cursor"
    )]
    StaleCursor {
        /// The cursor's generation.
        cursor: u32,
        /// The store's generation.
        current: u32,
    },
    /// The directory does not hold a kith store.
    #[error("{}: not a kith store ({reason})", path.display())]
    NotAStore {
        /// The directory.
        path: PathBuf,
        /// What is missing.
        reason: String,
    },
    /// The store was written by a newer kith.
    #[error(
        "{}: store format version {found} is newer than this kith supports ({supported}); upgrade kith",
        path.display()
    )]
    NewerFormat {
        /// The directory.
        path: PathBuf,
        /// The version found on disk.
        found: u32,
        /// The newest version this build reads.
        supported: u32,
    },
    /// `create` found something already there.
    #[error("{}: already exists and is not empty; pick a new directory", .0.display())]
    Exists(PathBuf),
    /// A record failed its checksum or does not decode.
    #[error("corrupt record at key {key}: {reason}")]
    Corrupt {
        /// The record's key, printed.
        key: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Layout metadata naming a method or weight model this build does not know.
    #[error(
        "{}the stored layout metadata names the {what} {value:?}, which this kith does not know",
        .store.as_ref().map(|p| format!("{}: ", p.display())).unwrap_or_default()
    )]
    UnknownLayout {
        /// The store, where known.
        store: Option<PathBuf>,
        /// `layout method` or `weight model`.
        what: &'static str,
        /// The stored name.
        value: String,
    },
    /// A stored post (in the feed database, a journal or a cache) that does not decode.
    #[error("corrupt {what}: {reason}")]
    CorruptPost {
        /// Which record, and where.
        what: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The layout could not be computed or read.
    #[error(transparent)]
    Layout(#[from] kith_layout::Error),
    /// The graph could not be read.
    #[error(transparent)]
    Graph(#[from] kith_graph::Error),
    /// RocksDB reported an error (corruption of an SST or the WAL among them).
    #[error("rocksdb: {0}")]
    Rocks(rocksdb::Error),
    /// The disk under the store is full: the write was not applied (nothing acknowledged is
    /// lost). Reads go on; writes work again without a reopen once space is freed (RocksDB
    /// polls every 5 s and resumes when a write buffer's worth, 64 MiB, is free).
    #[error("disk full: the write was not applied ({detail})")]
    DiskFull {
        /// RocksDB's message, naming the file it was writing.
        detail: String,
    },
    /// A distributed engine could not carry out the request at its consistency level: too
    /// few replicas alive or answering in time, or no node reachable. A write that fails
    /// with this was not acknowledged (it may or may not have been applied, so a retry, with
    /// the same idempotency key where there is one, is safe).
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// A storage engine other than RocksDB failed (a driver or server error that is neither
    /// the caller's nor an unavailability).
    #[error("{engine}: {detail}")]
    Backend {
        /// The engine ("cassandra").
        engine: &'static str,
        /// What failed.
        detail: String,
    },
    /// A file-system error outside RocksDB.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
}

impl From<rocksdb::Error> for Error {
    /// Tells a full disk (`ENOSPC`, which RocksDB reports as an I/O error with the system's
    /// message, also on later writes once it has stopped accepting them) from other errors.
    fn from(e: rocksdb::Error) -> Error {
        let message = e.as_ref().to_ascii_lowercase();
        if message.contains("no space left") || message.contains("nospace") {
            Error::DiskFull { detail: e.into_string() }
        } else {
            Error::Rocks(e)
        }
    }
}

impl Error {
    /// Names the store in an error that does not name it yet.
    pub(crate) fn in_store(self, path: &Path) -> Error {
        match self {
            Error::UnknownLayout { store: None, what, value } => {
                Error::UnknownLayout { store: Some(path.to_path_buf()), what, value }
            }
            e => e,
        }
    }

    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
        let context = context.into();
        move |source| match source.kind() {
            std::io::ErrorKind::StorageFull => {
                Error::DiskFull { detail: format!("{context}: {source}") }
            }
            _ => Error::Io { context, source },
        }
    }
}

/// The store's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
