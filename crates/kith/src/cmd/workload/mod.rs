//! `kith workload ...`: synthetic traffic. `generate` writes a SONETOR trace for the users
//! of a graph; `run` drives a trace or a mix against a kith server.

mod generate;
mod run;

use anyhow::Result;
use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub(crate) enum WorkloadCommand {
    /// Writes a SONETOR trace (ts, Publish|Retrieve, user, attr; sorted by ts) for every user
    /// of a graph.
    Generate(generate::GenerateArgs),
    /// Drives a trace or a request mix against a kith server over HTTP: closed loop with
    /// each client count, or open loop at a rate; per-operation throughput and latency.
    Run(run::RunArgs),
}

pub(crate) fn run(command: WorkloadCommand) -> Result<()> {
    match command {
        WorkloadCommand::Generate(a) => generate::run(a),
        WorkloadCommand::Run(a) => run::run(a),
    }
}
