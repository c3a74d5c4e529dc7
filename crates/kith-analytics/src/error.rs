//! Errors of kith-analytics: files that cannot be read or written, malformed lines (named
//! by file and line), and arguments a computation cannot accept.

use std::path::PathBuf;

/// An analytics error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file or directory could not be read, written or created.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// A line of an input file is malformed or not acceptable.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: u64,
        /// What is wrong with it.
        message: String,
    },
    /// An argument the computation cannot accept.
    #[error("{0}")]
    InvalidArgument(String),
    /// The engine running a job failed (e.g. a distributed engine lost a worker).
    #[error("{0}")]
    Engine(String),
}

/// A result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::Io { path, source }
    }
}
