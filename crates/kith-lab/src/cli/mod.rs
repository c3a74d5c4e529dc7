//! What the product commands in the `kith` binary share with the harness: the graph-input
//! argument group, the layout options and parsers, the layout comparison that times each
//! method in a child process, the JSON of a MapReduce job's report, the graph-stats table
//! and the spinner. Written once here because the harness cannot depend on the binary.

mod graph;
mod layout;
mod mr;
mod progress;

pub use graph::{GraphInput, stats_table};
pub use layout::{
    CommunityJson, CompareRow, ComputeReport, MethodOptions, PagesAt, compare_methods,
    method_parser, model_parser,
};
pub use mr::mr_report_json;
pub use progress::spinner;
