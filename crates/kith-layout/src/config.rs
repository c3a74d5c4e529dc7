//! The configuration of a layout computation: which [`Method`], which [`Objective`] the
//! page-aware method minimises, and the [`LayoutConfig`] that carries them with every other
//! knob. Pure data: nothing here computes a layout, so both the dispatcher (`compute.rs`) and
//! the methods themselves can depend on it.

use std::fmt;
use std::str::FromStr;

use kith_graph::WeightModel;

use crate::error::{Error, Result};
use crate::metrics::PAGE_BYTES;

/// A way of computing a layout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Method {
    /// Input order (ascending original id, which is dense-id order).
    ///
    /// Its command-line and stored name is `"default"`, the Bondhu paper's name for it, which
    /// stores and benchmark JSON carry; parsing also accepts `"input"`. The enum's own
    /// [`Default`] is [`Method::Kith`], not this variant.
    Input,
    /// A seeded random permutation.
    Random,
    /// Descending degree.
    Degree,
    /// Organ-pipe: highest degree in the middle, alternating sides (Bondhu thesis §5.8).
    OrganPipe,
    /// Breadth-first from the highest-degree vertex.
    Bfs,
    /// Reverse Cuthill–McKee.
    Rcm,
    /// Gorder (Wei et al., SIGMOD 2016), window 5.
    Gorder,
    /// Bondhu: METIS k-way communities, then the greedy arrangement.
    Parcom,
    /// Bondhu: Louvain communities, then the greedy arrangement.
    Modcom,
    /// kith's own page-aware method (`pageaware/`), optimising pages per friend list (or
    /// the linear-arrangement cost).
    #[default]
    Kith,
}

impl Method {
    /// Every method, baselines first.
    pub const ALL: [Method; 10] = [
        Method::Input,
        Method::Random,
        Method::Degree,
        Method::OrganPipe,
        Method::Bfs,
        Method::Rcm,
        Method::Gorder,
        Method::Parcom,
        Method::Modcom,
        Method::Kith,
    ];

    /// The name used on the command line, in stores and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Method::Input => "default",
            Method::Random => "random",
            Method::Degree => "degree",
            Method::OrganPipe => "organ-pipe",
            Method::Bfs => "bfs",
            Method::Rcm => "rcm",
            Method::Gorder => "gorder",
            Method::Parcom => "parcom",
            Method::Modcom => "modcom",
            Method::Kith => "kith",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Method {
    type Err = Error;

    /// Accepts every [`Method::name`], and `"input"` for [`Method::Input`].
    fn from_str(s: &str) -> Result<Method> {
        if s == "input" {
            return Ok(Method::Input);
        }
        Method::ALL.into_iter().find(|m| m.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Method::ALL.iter().map(|m| m.name()).collect();
            Error::InvalidArgument(format!(
                "unknown layout method {s:?}; expected one of {}",
                names.join(", ")
            ))
        })
    }
}

/// What the `kith` method minimises.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Objective {
    /// Expected pages read by "list all friends" for the configured record size.
    #[default]
    Pages,
    /// The linear-arrangement cost (Bondhu eq. 2).
    La,
    /// Expected cold read time of "list all friends" in a store: the pages objective, then a
    /// refinement that prices each run of adjacent pages (one read request) at many pages,
    /// since a store's reader merges only adjacent blocks (`pageaware/requests.rs`). Stores
    /// lay out by this objective.
    Requests,
}

impl FromStr for Objective {
    type Err = Error;

    fn from_str(s: &str) -> Result<Objective> {
        match s {
            "pages" => Ok(Objective::Pages),
            "la" => Ok(Objective::La),
            "requests" => Ok(Objective::Requests),
            _ => Err(Error::InvalidArgument(format!(
                "unknown objective {s:?}; expected pages, la or requests"
            ))),
        }
    }
}

impl fmt::Display for Objective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Objective::Pages => "pages",
            Objective::La => "la",
            Objective::Requests => "requests",
        })
    }
}

/// How to compute a layout. Every field has a documented default.
#[derive(Clone, Debug)]
pub struct LayoutConfig {
    /// The method; default `kith`.
    pub method: Method,
    /// `parcom`'s number of communities (METIS parts); default 64.
    pub communities: usize,
    /// `modcom`'s Louvain level, 0 = finest; default the last (coarsest).
    pub level: Option<usize>,
    /// The edge-weight model for community detection and the greedy; default uniform.
    pub model: WeightModel,
    /// The record size the `kith` method packs into pages; default 40 bytes.
    pub record_bytes: u64,
    /// The page size the `kith` method packs records into; default 4 KiB. A store whose
    /// blocks hold a whole number N of fixed-size entries of E bytes sets E and N·E here, so
    /// that the model's pages are its blocks exactly.
    pub page_bytes: u64,
    /// What the `kith` method minimises; default pages.
    pub objective: Objective,
    /// Seed of every random choice; default 1.
    pub seed: u64,
    /// Show a spinner on stderr; default false.
    pub progress: bool,
}

impl Default for LayoutConfig {
    fn default() -> Self {
        LayoutConfig {
            method: Method::default(),
            communities: 64,
            level: None,
            model: WeightModel::Uniform,
            record_bytes: 40,
            page_bytes: PAGE_BYTES,
            objective: Objective::Pages,
            seed: 1,
            progress: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_order_keeps_the_name_default_and_also_parses_as_input() {
        assert_eq!(Method::Input.name(), "default");
        assert_eq!(Method::Input.to_string(), "default");
        assert_eq!("default".parse::<Method>().unwrap(), Method::Input);
        assert_eq!("input".parse::<Method>().unwrap(), Method::Input);
        assert_eq!(Method::default(), Method::Kith);
        for m in Method::ALL {
            assert_eq!(m.name().parse::<Method>().unwrap(), m);
        }
        let err = "nope".parse::<Method>().unwrap_err().to_string();
        assert!(err.contains("expected one of default, random"), "{err}");
    }
}
