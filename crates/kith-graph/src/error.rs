use std::path::PathBuf;

/// Everything that can go wrong in `kith-graph`.
///
/// Each variant names the file (and, for parse errors, the line) it concerns, so that a
/// message can be shown to a user as it is.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The operating system refused an operation on `path`.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },

    /// A line of a text edge list could not be understood.
    #[error("{}:{line}: {message}", path.display())]
    Parse { path: PathBuf, line: u64, message: String },

    /// The file as a whole is unusable (empty, truncated, wrong kind of file, ...).
    #[error("{}: {message}", path.display())]
    Input { path: PathBuf, message: String },

    /// A `.kgraph` snapshot is damaged or of a version this build cannot read.
    #[error("{}: {message}", path.display())]
    Snapshot { path: PathBuf, message: String },

    /// A caller asked for something impossible (e.g. more edges than a simple graph holds).
    #[error("{0}")]
    InvalidArgument(String),
}

/// The result type of `kith-graph`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }

    pub(crate) fn input(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Error::Input { path: path.into(), message: message.into() }
    }

    pub(crate) fn snapshot(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Error::Snapshot { path: path.into(), message: message.into() }
    }
}
