//! Python exceptions for kith's errors: each names what was wrong and where (the file and
//! line of a malformed edge list, the argument out of range), as the Rust error does.

use pyo3::exceptions::{PyException, PyFileNotFoundError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::{PyErr, create_exception};

create_exception!(_kith, KithError, PyException, "The base of kith's own errors.");
create_exception!(
    _kith,
    ParseError,
    KithError,
    "A graph file that could not be read as the format it claims (names the file and line)."
);
create_exception!(
    _kith,
    VerificationError,
    KithError,
    "A result that differs from the sequential verifier's (only with `verify=True`)."
);

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("KithError", py.get_type::<KithError>())?;
    m.add("ParseError", py.get_type::<ParseError>())?;
    m.add("VerificationError", py.get_type::<VerificationError>())?;
    Ok(())
}

/// A graph error as the Python exception a caller would catch: a missing file as
/// `FileNotFoundError`, other I/O as `OSError`, bad arguments as `ValueError`, anything the
/// file itself got wrong as [`ParseError`].
pub(crate) fn graph_error(e: kith_graph::Error) -> PyErr {
    use kith_graph::Error;
    let message = e.to_string();
    match e {
        Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            PyFileNotFoundError::new_err(message)
        }
        Error::Io { .. } => PyOSError::new_err(message),
        // The loader names a missing file as bad input; Python callers catch it by type.
        Error::Input { path, .. } if !path.exists() => PyFileNotFoundError::new_err(message),
        Error::InvalidArgument(_) => PyValueError::new_err(message),
        _ => ParseError::new_err(message),
    }
}

/// A layout error: bad arguments as `ValueError`, the graph's errors as they map, the rest
/// as [`KithError`].
pub(crate) fn layout_error(e: kith_layout::Error) -> PyErr {
    match e {
        kith_layout::Error::InvalidArgument(_) => PyValueError::new_err(e.to_string()),
        kith_layout::Error::Graph(g) => graph_error(g),
        _ => KithError::new_err(e.to_string()),
    }
}

/// An analytics error (weights that do not fit the graph, say) as `ValueError`.
pub(crate) fn analytics_error(e: kith_analytics::Error) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// Raises [`VerificationError`] naming `what` unless `ok`.
pub(crate) fn verified(ok: bool, what: &str) -> PyResult<()> {
    if ok {
        Ok(())
    } else {
        Err(VerificationError::new_err(format!(
            "{what}: the result differs from the sequential verifier's"
        )))
    }
}
