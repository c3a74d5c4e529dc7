//! `kith analyze ...`: graph analytics. Each algorithm is one function in its own module
//! (what it computes, verifies and reports); `runner.rs` runs any of them on this machine or
//! on a cluster of processes (`cluster.rs`, `launcher.rs`) and writes the output. The
//! MapReduce jobs (`mr.rs`) and the communication model (`comm.rs`) are commands of their
//! own.

mod cc;
mod cluster;
mod comm;
mod kcore;
mod launcher;
mod mr;
mod mutual;
mod pagerank;
mod partitioned;
mod runner;
mod sssp;
mod triangles;

use anyhow::Result;
use clap::Subcommand;

use self::runner::run as run_algorithm;

#[derive(Debug, Subcommand)]
pub(crate) enum AnalyzeCommand {
    /// PageRank (the normalised formulation with dangling mass, or LFGraph's).
    Pagerank(pagerank::PageRankArgs),
    /// Hop distances from one user along edge direction.
    Sssp(sssp::SsspArgs),
    /// Connected components (weakly connected for a directed graph).
    Cc(cc::CcArgs),
    /// Triangles, in total and through each user (on the undirected graph).
    Triangles(triangles::TriangleArgs),
    /// Mutual friends of every friendship, and people-you-may-know for a user (on the
    /// undirected graph).
    MutualFriends(mutual::MutualArgs),
    /// Local clustering coefficients and their average (on the undirected graph).
    Clustering(runner::CommonArgs),
    /// Core numbers, k-core decomposition (on the undirected graph).
    Kcore(runner::CommonArgs),
    /// The MapReduce formulations (map, shuffle with spilled sorted runs, merge, reduce),
    /// with per-phase times, an I/O profile and a storage recommendation.
    #[command(subcommand)]
    Mr(mr::MrJob),
    /// LFGraph's communication model: values sent per vertex per iteration under Pregel,
    /// GraphLab, PowerGraph and LFGraph, and computation balance, for 2…256 servers.
    CommOverhead(comm::CommArgs),
}

pub(crate) fn run(command: AnalyzeCommand) -> Result<()> {
    match command {
        AnalyzeCommand::Pagerank(a) => {
            run_algorithm(&a.common, &pagerank::PAGERANK, |job| pagerank::pagerank(job, &a))
        }
        AnalyzeCommand::Sssp(a) => {
            run_algorithm(&a.common, &a.algorithm(), |job| sssp::sssp(job, &a))
        }
        AnalyzeCommand::Cc(a) => run_algorithm(&a.common, &a.algorithm(), |job| cc::cc(job, &a)),
        AnalyzeCommand::Triangles(a) => {
            run_algorithm(&a.common, &triangles::TRIANGLES, |job| triangles::triangles(job, &a))
        }
        AnalyzeCommand::MutualFriends(a) => {
            run_algorithm(&a.common, &a.algorithm(), |job| mutual::mutual_friends(job, &a))
        }
        AnalyzeCommand::Clustering(a) => {
            run_algorithm(&a, &triangles::CLUSTERING, triangles::clustering)
        }
        AnalyzeCommand::Kcore(a) => run_algorithm(&a, &kcore::KCORE, kcore::kcore),
        AnalyzeCommand::Mr(job) => mr::run(job),
        AnalyzeCommand::CommOverhead(a) => comm::run(&a),
    }
}
