//! The product's commands, one module per top-level subcommand (a folder where a command
//! has several files).

pub(crate) mod analyze;
pub(crate) mod cluster;
pub(crate) mod graph;
pub(crate) mod layout;
pub(crate) mod serve;
pub(crate) mod shell;
pub(crate) mod store;
pub(crate) mod workload;
