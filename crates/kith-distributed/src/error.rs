//! Errors of a distributed run: unreadable files, malformed hostfile lines (named by file
//! and line) and partition files, a cluster that cannot form or a worker that fails, and unacceptable arguments.

use std::path::PathBuf;

/// An error of a distributed run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// A hostfile line is malformed.
    #[error("{path}:{line}: {message}")]
    Hostfile {
        /// The hostfile.
        path: PathBuf,
        /// The line, from 1 (0: the file as a whole).
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// A partition's file is missing, malformed or inconsistent with the others.
    #[error("{path}: {message}")]
    Partition {
        /// The file (or directory).
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The cluster could not start or a worker failed.
    #[error("{0}")]
    Cluster(String),
    /// An argument the run cannot accept.
    #[error("{0}")]
    InvalidArgument(String),
}

/// A result with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
