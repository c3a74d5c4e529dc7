//! The workload crate's error type.

use std::path::PathBuf;

/// Everything generating or reading a workload can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration that does not parse or is out of range.
    #[error("{origin}: {reason}")]
    Config {
        /// Where it came from (a file name).
        origin: String,
        /// What is wrong.
        reason: String,
    },
    /// A trace line that does not parse.
    #[error("{}:{line}: {reason}", path.display())]
    Trace {
        /// The trace file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong, with the offending text.
        reason: String,
    },
    /// A file-system error.
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

/// The workload crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
