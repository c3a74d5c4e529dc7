//! One module per top-level subcommand.

pub(crate) mod bench;
pub(crate) mod bench_layout;
pub(crate) mod demo;
pub(crate) mod experiment;
pub(crate) mod graph;
pub(crate) mod layout;
