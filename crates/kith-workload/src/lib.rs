//! `kith-workload`: synthetic social-network traffic.
//!
//! What it is: SONETOR's session model (log-normal gaps between sessions and activities,
//! zipf session lengths and sessions per user, a Publish/Retrieve Markov chain, geometric
//! post sizes), generated deterministically in parallel from a seed and written as SONETOR's
//! TSV trace; the trace reader used to replay one.
//!
//! Also: the request sources (a trace replayed, a LinkBench-like mix over Parker's API,
//! Bondhu's friend-access workloads) and the load driver that sends them to a kith server
//! over HTTP, closed or open loop, with HdrHistogram latencies per operation.

mod config;
mod driver;
mod error;
mod mix;
mod sonetor;
mod trace;

pub use config::{Preset, SonetorConfig};
pub use driver::{
    DOWN_FOR, OpReport, RunConfig, RunReport, Sent, ServerTimes, Servers, check_target,
    check_targets, parse_server_timing, run, send,
};
pub use error::{Error, Result};
pub use mix::{FriendAccess, LinkBench, ParkerCalls, Request, Source, TraceSource};
pub use sonetor::{Activity, Event, generate};
pub use trace::{read_trace, write_trace};
