use std::path::PathBuf;

/// Everything that can go wrong in `kith-layout`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or checking the graph failed in `kith-graph`.
    #[error(transparent)]
    Graph(#[from] kith_graph::Error),

    /// The operating system refused an operation on `path`.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },

    /// A layout file is not a permutation of the graph's ids; `line` is 0 when the problem is
    /// the file as a whole (ids missing).
    #[error("{}{}: {message}", path.display(), if *line > 0 { format!(":{line}") } else { String::new() })]
    LayoutFile { path: PathBuf, line: u64, message: String },

    /// METIS refused the graph or failed while partitioning it.
    #[error("METIS failed: {0}")]
    Metis(String),

    /// A caller asked for something impossible (e.g. more communities than vertices).
    #[error("{0}")]
    InvalidArgument(String),
}

/// The result type of `kith-layout`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }

    pub(crate) fn layout_file(
        path: &std::path::Path,
        line: u64,
        message: impl Into<String>,
    ) -> Self {
        Error::LayoutFile { path: path.to_owned(), line, message: message.into() }
    }
}
