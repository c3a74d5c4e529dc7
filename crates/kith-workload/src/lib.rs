//! `kith-workload`: synthetic social-network traffic.
//!
//! What it is: SONETOR's session model (log-normal gaps between sessions and activities,
//! zipf session lengths and sessions per user, a Publish/Retrieve Markov chain, geometric
//! post sizes), generated deterministically in parallel from a seed and written as SONETOR's
//! TSV trace; the trace reader used to replay one.
//!
//! What it is not: the load driver that sends the traffic (the `kith workload run` command).

mod config;
mod error;
mod sonetor;
mod trace;

pub use config::{LogNorm, Markov, PostSize, SonetorConfig, Zipf};
pub use error::{Error, Result};
pub use sonetor::{Activity, BLOCK, Event, MAX_SESSIONS, Samples, generate, reduce};
pub use trace::{read_trace, write_trace};
