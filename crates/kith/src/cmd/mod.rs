//! One module per top-level subcommand.

pub(crate) mod analyze;
pub(crate) mod analyze_comm;
pub(crate) mod analyze_dist;
pub(crate) mod analyze_mr;
pub(crate) mod analyze_mr_dist;
pub(crate) mod bench;
pub(crate) mod bench_analytics;
pub(crate) mod bench_analytics_plot;
pub(crate) mod bench_distributed;
pub(crate) mod bench_friends;
pub(crate) mod bench_http;
pub(crate) mod bench_layout;
pub(crate) mod bench_store;
pub(crate) mod demo;
pub(crate) mod demo_http;
pub(crate) mod experiment;
pub(crate) mod experiment_service;
pub(crate) mod experiment_store;
pub(crate) mod graph;
pub(crate) mod layout;
pub(crate) mod processes;
pub(crate) mod serve;
pub(crate) mod store;
pub(crate) mod workload;
pub(crate) mod workload_run;
