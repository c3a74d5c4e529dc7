//! How `kith store build|relayout` order users: a layout file, a layout method, or on
//! Cassandra the `hash` placement.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use kith_graph::{Graph, WeightModel};
use kith_lab::cli::model_parser;
use kith_layout::{Layout, LayoutConfig, Method, Objective, compute, read_layout};
use kith_store::LayoutMeta;

/// A `--method`: a layout, or Cassandra's hash placement.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Placement {
    Layout(Method),
    Hash,
}

fn placement_parser() -> impl clap::builder::TypedValueParser<Value = Placement> {
    use clap::builder::TypedValueParser;
    let mut names: Vec<&'static str> = Method::ALL.iter().map(|m| m.name()).collect();
    names.push("hash");
    clap::builder::PossibleValuesParser::new(names).map(|s| match s.as_str() {
        "hash" => Placement::Hash,
        name => Placement::Layout(name.parse::<Method>().expect("listed name")),
    })
}

/// How to order users: a layout file, or a method and its options.
#[derive(Clone, Debug, Args)]
pub(crate) struct LayoutChoice {
    /// A layout file (one user id per line, as `kith layout compute` writes).
    #[arg(long, conflicts_with = "method")]
    pub(crate) layout: Option<PathBuf>,
    /// The layout method (default: kith). On Cassandra, `hash` places one user per partition
    /// in input order: what a Cassandra user writes by default.
    #[arg(long, value_parser = placement_parser())]
    pub(crate) method: Option<Placement>,
    /// parcom: the number of METIS parts.
    #[arg(long, default_value_t = 64)]
    communities: usize,
    /// The edge-weight model.
    #[arg(long, default_value = "uniform", value_parser = model_parser())]
    model: WeightModel,
    /// kith: the record size packed into 4 KiB pages (default: the store's own entry and
    /// block sizes for the data, so that the layout's pages are the store's blocks).
    #[arg(long)]
    record_bytes: Option<u64>,
    /// Seed of the layout and of the synthetic data.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
}

impl LayoutChoice {
    /// The configuration, with the record and page sizes `paged` gives (the store's blocks)
    /// unless `--record-bytes` names a record size for 4 KiB pages.
    pub(crate) fn config(&self, paged: (u64, u64)) -> LayoutConfig {
        let (record_bytes, page_bytes) = match self.record_bytes {
            Some(r) => (r.max(1), kith_layout::metrics::PAGE_BYTES),
            None => paged,
        };
        LayoutConfig {
            method: match self.method {
                Some(Placement::Layout(m)) => m,
                Some(Placement::Hash) => Method::Input,
                None => Method::Kith,
            },
            communities: self.communities,
            model: self.model,
            record_bytes,
            page_bytes,
            // A store's cold reads pay per request as well as per block.
            objective: Objective::Requests,
            seed: self.seed,
            progress: true,
            ..LayoutConfig::default()
        }
    }

    /// The layout of `graph` and how it was made.
    pub(crate) fn resolve(&self, graph: &Graph, paged: (u64, u64)) -> Result<(Layout, LayoutMeta)> {
        let config = self.config(paged);
        if let Some(path) = &self.layout {
            let layout = read_layout(path, graph)?;
            let meta = LayoutMeta { method: "file".into(), ..LayoutMeta::of(&config) };
            return Ok((layout, meta));
        }
        let layout = compute(graph, &config)?.layout;
        Ok((layout, LayoutMeta::of(&config)))
    }
}
