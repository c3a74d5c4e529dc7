//! `kith._kith`: the native half of the `kith` Python package (`python/`).
//!
//! What it is: thin PyO3 bindings over the crates below it. Graphs are read, generated and
//! built from arrays here ([`graph`]); the analytics ([`analytics`]) and layouts
//! ([`layout`]) run with the GIL released and return NumPy arrays indexed by dense vertex id.
//! The Python layer (`python/kith/`) maps dense ids to the users' own ids, converts to and
//! from networkx and SciPy, and carries the docstrings and type stubs.
//!
//! What it is not: a store or a service client. It links neither RocksDB nor the server, so
//! `pip install ./python` compiles in minutes; the service is reached over HTTP by
//! `kith.Client`, in Python.

mod analytics;
mod error;
mod graph;
mod layout;

use pyo3::prelude::*;

/// The module's own (Rust) allocations come from mimalloc, as the `kith` binary's do. Under
/// glibc's allocator every call mapped its large arrays afresh, 4 KiB page by page (a
/// process reading a 1 M-user graph and counting its triangles twice took ~120 k page
/// faults, ~14 k with mimalloc), and ran slower than the same code in the CLI. Python's own
/// objects keep Python's allocator; a NumPy array made from a Rust vector is freed by this
/// module, so by mimalloc.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The native module: registered under `kith._kith`.
#[pymodule]
fn _kith(m: &Bound<'_, PyModule>) -> PyResult<()> {
    error::register(m)?;
    graph::register(m)?;
    analytics::register(m)?;
    layout::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
