//! `kith-lab`: kith's harness, everything the `kith` command line runs that is not the
//! product. The benchmarks (`kith bench ...`, results as JSON under `bench/results/`), the
//! papers' experiments (`kith experiment ...`, CSV tables and PNG charts), the demo
//! (`kith demo`), the PNG charts they draw, and the machine description and child-process
//! timing their results record.
//!
//! It is not a library for other programs: it exposes the clap command types the binary
//! dispatches to ([`bench::BenchCommand`], [`experiment::ExperimentCommand`],
//! [`demo::DemoArgs`]) with their `run` functions, and in [`cli`] the argument groups and
//! helpers the product commands share with the harness (the graph input, layout options,
//! the layout comparison, spinners). The product's commands themselves live in the binary.
//! Errors are `anyhow`'s, as in the binary: every failure is reported by `main` as one line
//! naming what failed and where.
//!
//! ```
//! let machine = kith_lab::machine::Machine::describe();
//! assert!(machine.cores >= 1);
//! ```

pub mod bench;
pub mod cli;
pub mod demo;
pub mod experiment;
pub mod failover;
pub mod machine;
pub mod plot;
pub mod report;
pub mod trial;

mod processes;
mod rig;
