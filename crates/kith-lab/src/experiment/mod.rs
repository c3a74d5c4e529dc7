//! `kith experiment ...`: the papers' experiments, each writing CSV tables and PNG charts.
//! Bondhu's layout figures on graphs (`bondhu.rs`) and on real stores (`store.rs`), and
//! Twibo's and Parker's service tables against live servers (`twibo.rs`, `parker.rs`, on
//! the set-up in `service.rs`).

mod bondhu;
mod parker;
mod parker_cluster;
mod service;
mod store;
mod twibo;

use anyhow::Result;
use clap::Subcommand;

pub(crate) use store::FIXED_BLOCKS;

// The variants are the command names (`bondhu-...`); other papers' experiments join later.
#[allow(clippy::enum_variant_names)]
#[derive(Debug, Subcommand)]
pub enum ExperimentCommand {
    /// Cost improvement over input order against the number of METIS communities, K = 2..1024
    /// (Bondhu Fig. 9).
    BondhuCommunities(bondhu::ExperimentArgs),
    /// Layouts built under each weight model, evaluated under all three (Bondhu Fig. 10).
    BondhuModels(bondhu::ExperimentArgs),
    /// A layout of the graph with 5–40 % of its edges or nodes removed, applied to the whole
    /// graph, against a fresh layout (Bondhu Fig. 11).
    BondhuEvolution(bondhu::ExperimentArgs),
    /// "List all friends" response time and device pages against data size, for stores of
    /// the same graph under different layouts, cold or warm, whole or partial blocks
    /// (Bondhu Figs. 3-8).
    BondhuDatasize(store::DatasizeArgs),
    /// Twibo's workload (a SONETOR trace over a follow graph) against pull, push, push +
    /// cache-aside, push + write-back and hybrid feeds, in-process and on Redis, swept over
    /// client counts (Twibo Tables 3 and 4).
    Twibo(service::ServiceArgs),
    /// Cache size against throughput, hit rate and store reads per feed read (Twibo Table 5).
    TwiboCache(service::ServiceArgs),
    /// Per-call latency of every Parker endpoint from one client (Parker Table 1).
    ParkerLatency(service::ServiceArgs),
    /// Parker's scaling on the store on Cassandra: read and write throughput and latency on
    /// 1, 3 and 5 nodes, and "list all friends' profiles" under hash and kith placement.
    ParkerCluster(parker_cluster::ParkerClusterArgs),
}

/// Runs one experiment.
pub fn run(command: ExperimentCommand) -> Result<()> {
    match command {
        ExperimentCommand::BondhuCommunities(a) => bondhu::communities(&a),
        ExperimentCommand::BondhuModels(a) => bondhu::models(&a),
        ExperimentCommand::BondhuEvolution(a) => bondhu::evolution(&a),
        ExperimentCommand::BondhuDatasize(a) => store::run(a),
        ExperimentCommand::Twibo(a) => twibo::twibo(a),
        ExperimentCommand::TwiboCache(a) => twibo::twibo_cache(a),
        ExperimentCommand::ParkerLatency(a) => parker::run(a),
        ExperimentCommand::ParkerCluster(a) => parker_cluster::run(a),
    }
}
