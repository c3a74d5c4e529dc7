//! The graph-input argument group (`<graph> --format --directed --member`) every
//! graph-taking command flattens in, and the table `kith graph stats` and the demo print.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use kith_graph::{DegreeSummary, Format, Graph, GraphStats, LoadConfig};

/// Where a graph comes from: a file and how to read it. Every command that takes a graph
/// flattens this in.
#[derive(Debug, Args)]
pub struct GraphInput {
    /// An edge list (SNAP, KONECT, MatrixMarket or CSV; plain, gzip or zip), a SNAP ego-network
    /// archive, or a .kgraph snapshot.
    pub graph: PathBuf,
    /// The input format; detected from the file name and content when omitted.
    #[arg(long, value_parser = format_parser())]
    pub format: Option<Format>,
    /// Keep edge direction (friendship graphs are undirected by default).
    #[arg(long)]
    pub directed: bool,
    /// The member of a zip archive to read (default: the one edge list in it).
    #[arg(long)]
    pub member: Option<String>,
}

impl GraphInput {
    /// An undirected graph file read with its format detected.
    pub fn file(graph: PathBuf) -> GraphInput {
        GraphInput { graph, format: None, directed: false, member: None }
    }

    /// The arguments that name this input again, for a child `kith` process.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = vec![self.graph.display().to_string()];
        if let Some(format) = self.format {
            args.extend(["--format".into(), format.name().into()]);
        }
        if self.directed {
            args.push("--directed".into());
        }
        if let Some(member) = &self.member {
            args.extend(["--member".into(), member.clone()]);
        }
        args
    }

    /// Loads the graph as friendships: a directed graph is symmetrised.
    pub fn load_undirected(&self) -> Result<Graph> {
        let graph = self.load()?;
        Ok(if graph.is_directed() { graph.to_undirected() } else { graph })
    }

    /// Loads the graph as given, with a progress bar on a terminal.
    pub fn load(&self) -> Result<Graph> {
        let config = LoadConfig {
            format: self.format,
            directed: self.directed,
            member: self.member.clone(),
            progress: true,
        };
        Ok(kith_graph::load(&self.graph, &config)?)
    }
}

fn format_parser() -> impl TypedValueParser<Value = Format> {
    let names: Vec<&'static str> = Format::ALL.iter().map(|f| f.name()).collect();
    PossibleValuesParser::new(names).map(|s| s.parse::<Format>().expect("listed name"))
}

/// A graph's statistics as the aligned two-column table `kith graph stats` prints.
pub fn stats_table(s: &GraphStats) -> String {
    let summary = |d: &DegreeSummary| {
        format!(
            "min {}, median {}, mean {:.2}, p90 {}, p99 {}, max {}",
            d.min, d.median, d.mean, d.p90, d.p99, d.max
        )
    };
    let mut rows = vec![
        ("nodes", s.nodes.to_string()),
        ("edges", format!("{}{}", s.edges, if s.directed { " (directed)" } else { "" })),
        ("self-loops dropped", s.self_loops_dropped.to_string()),
        ("duplicates merged", s.duplicates_merged.to_string()),
        ("degree", summary(&s.degree)),
    ];
    if let (Some(out), Some(inc)) = (&s.out_degree, &s.in_degree) {
        rows.push(("out-degree", summary(out)));
        rows.push(("in-degree", summary(inc)));
    }
    let kind = if s.directed { "weak components" } else { "components" };
    rows.push((kind, format!("{} (largest: {} nodes)", s.components, s.largest_component)));
    rows.iter().map(|(k, v)| format!("{k:<20}{v}\n")).collect()
}
