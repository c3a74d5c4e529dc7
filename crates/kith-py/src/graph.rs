//! Graphs for Python: read from any format the CLI reads, generated (LFR, R-MAT,
//! Barabási–Albert), or built from arrays of user ids; exposed as CSR arrays.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use kith_analytics::InGraph;
use kith_graph::generate::{BaConfig, LfrConfig, RmatConfig};
use kith_graph::{Format, Graph, LoadConfig, VertexId};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;

use crate::error::graph_error;

/// A social graph: dense vertex ids `0..n` in ascending order of the users' own ids, with
/// sorted neighbour lists. Immutable, so it is shared freely between threads.
#[pyclass(name = "Graph", module = "kith._kith", frozen)]
pub(crate) struct PyGraph {
    pub(crate) graph: Arc<Graph>,
    /// The in-links as vertex programs see them, built on first use.
    in_graph: OnceLock<Arc<InGraph>>,
    /// The same of the undirected graph (the friendships), for the algorithms that run on it.
    undirected: OnceLock<Arc<InGraph>>,
}

impl PyGraph {
    pub(crate) fn new(graph: Graph) -> PyGraph {
        PyGraph { graph: Arc::new(graph), in_graph: OnceLock::new(), undirected: OnceLock::new() }
    }

    /// The graph's in-links (built once, then shared).
    pub(crate) fn in_graph(&self) -> Arc<InGraph> {
        Arc::clone(self.in_graph.get_or_init(|| Arc::new(InGraph::new(&self.graph))))
    }

    /// The in-links of the undirected graph: the graph's own when it is undirected.
    pub(crate) fn undirected(&self) -> Arc<InGraph> {
        if !self.graph.is_directed() {
            return self.in_graph();
        }
        let build = || Arc::new(InGraph::new(&self.graph.to_undirected()));
        Arc::clone(self.undirected.get_or_init(build))
    }

    /// The dense id of user `uid`, or `KeyError` naming it.
    pub(crate) fn vertex(&self, uid: u64) -> PyResult<VertexId> {
        self.graph
            .dense_id(uid)
            .ok_or_else(|| PyKeyError::new_err(format!("user {uid} is not in the graph")))
    }
}

#[pymethods]
impl PyGraph {
    /// Builds a graph from edges between user ids (`sources[i]` to `targets[i]`), with
    /// `nodes` naming users without edges too. Self-loops are dropped and repeats merged.
    #[staticmethod]
    #[pyo3(signature = (sources, targets, directed=false, nodes=None))]
    fn from_edge_ids(
        py: Python<'_>,
        sources: PyReadonlyArray1<'_, u64>,
        targets: PyReadonlyArray1<'_, u64>,
        directed: bool,
        nodes: Option<PyReadonlyArray1<'_, u64>>,
    ) -> PyResult<PyGraph> {
        let (s, t) = (sources.as_slice()?, targets.as_slice()?);
        if s.len() != t.len() {
            return Err(PyValueError::new_err(format!(
                "sources has {} entries and targets {}: one of each per edge",
                s.len(),
                t.len()
            )));
        }
        let (s, t) = (s.to_vec(), t.to_vec());
        let extra = match &nodes {
            Some(n) => n.as_slice()?.to_vec(),
            None => Vec::new(),
        };
        py.detach(move || build_from_ids(s, t, extra, directed)).map(PyGraph::new)
    }

    /// The number of users.
    fn number_of_nodes(&self) -> usize {
        self.graph.num_nodes()
    }

    /// The number of edges (each friendship once in an undirected graph).
    fn number_of_edges(&self) -> u64 {
        self.graph.num_edges()
    }

    fn __len__(&self) -> usize {
        self.graph.num_nodes()
    }

    /// Whether edges have a direction.
    fn is_directed(&self) -> bool {
        self.graph.is_directed()
    }

    /// The users' own ids, indexed by dense id (ascending).
    fn ids<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u64>> {
        PyArray1::from_slice(py, self.graph.original_ids())
    }

    /// The out-adjacency (all adjacency when undirected) as CSR: `(offsets, targets)`, the
    /// neighbours of dense id `v` being `targets[offsets[v]:offsets[v + 1]]`, ascending.
    fn out_csr<'py>(
        &self,
        py: Python<'py>,
    ) -> (Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<VertexId>>) {
        let csr = self.graph.out_csr();
        (PyArray1::from_slice(py, csr.offsets()), PyArray1::from_slice(py, csr.targets()))
    }

    /// The in-adjacency as CSR; for an undirected graph the same as `out_csr()`.
    fn in_csr<'py>(
        &self,
        py: Python<'py>,
    ) -> (Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<VertexId>>) {
        let csr = self.graph.in_csr();
        (PyArray1::from_slice(py, csr.offsets()), PyArray1::from_slice(py, csr.targets()))
    }

    /// The dense id of user `uid` (`KeyError` if absent).
    fn dense_id(&self, uid: u64) -> PyResult<VertexId> {
        self.vertex(uid)
    }

    /// Whether user `uid` is in the graph.
    fn __contains__(&self, uid: u64) -> bool {
        self.graph.dense_id(uid).is_some()
    }

    /// The users `uid` links to (all friends when undirected), by their own ids, ascending.
    fn neighbors<'py>(&self, py: Python<'py>, uid: u64) -> PyResult<Bound<'py, PyArray1<u64>>> {
        let v = self.vertex(uid)?;
        let ids = self.graph.original_ids();
        let out: Vec<u64> = self.graph.neighbors(v).iter().map(|&w| ids[w as usize]).collect();
        Ok(out.into_pyarray(py))
    }

    /// Self-loops dropped and repeated edges merged when the graph was built.
    fn cleaning(&self) -> (u64, u64) {
        let c = self.graph.cleaning();
        (c.self_loops_dropped, c.duplicates_merged)
    }

    /// The undirected graph: an edge wherever this one has one in either direction.
    fn to_undirected(&self, py: Python<'_>) -> PyGraph {
        let g = Arc::clone(&self.graph);
        PyGraph::new(py.detach(move || g.to_undirected()))
    }

    /// Writes the graph as a `.kgraph` snapshot, durably (the CLI and `kith.read` read it).
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let g = Arc::clone(&self.graph);
        py.detach(move || kith_graph::save(&g, &path)).map_err(graph_error)
    }

    fn __repr__(&self) -> String {
        let kind = if self.graph.is_directed() { "directed" } else { "undirected" };
        format!(
            "<kith.Graph, {kind}, {} users, {} edges>",
            self.graph.num_nodes(),
            self.graph.num_edges()
        )
    }
}

/// Dense ids are the ranks of the sorted, distinct user ids.
fn build_from_ids(
    sources: Vec<u64>,
    targets: Vec<u64>,
    nodes: Vec<u64>,
    directed: bool,
) -> PyResult<Graph> {
    let mut ids: Vec<u64> = sources.iter().chain(&targets).chain(&nodes).copied().collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.len() > VertexId::MAX as usize {
        return Err(PyValueError::new_err(format!(
            "{} users: kith's dense ids are 32-bit, at most {}",
            ids.len(),
            VertexId::MAX
        )));
    }
    let rank = |u: &u64| ids.binary_search(u).map_or(0, |i| i as VertexId);
    let edges = sources.iter().zip(&targets).map(|(s, t)| (rank(s), rank(t))).collect();
    Ok(Graph::from_edges(ids, directed, edges))
}

/// Reads a graph file of any format the CLI reads (SNAP, KONECT, MatrixMarket, CSV, plain,
/// gzip or zip; SNAP ego archives; `.kgraph` snapshots), detected from its name and content
/// unless `format` names one.
#[pyfunction]
#[pyo3(signature = (path, directed=false, format=None, member=None))]
fn read(
    py: Python<'_>,
    path: PathBuf,
    directed: bool,
    format: Option<&str>,
    member: Option<String>,
) -> PyResult<PyGraph> {
    let format = format.map(str::parse::<Format>).transpose().map_err(graph_error)?;
    let config = LoadConfig { format, directed, member, progress: false };
    py.detach(move || kith_graph::load(&path, &config)).map(PyGraph::new).map_err(graph_error)
}

/// An LFR graph and the planted community of every vertex (by dense id).
#[pyfunction]
#[pyo3(signature = (nodes, avg_degree=20.0, max_degree=None, mu=0.2, tau1=2.5, tau2=1.5,
    min_community=None, max_community=None, seed=1))]
#[allow(clippy::too_many_arguments)]
fn generate_lfr<'py>(
    py: Python<'py>,
    nodes: usize,
    avg_degree: f64,
    max_degree: Option<usize>,
    mu: f64,
    tau1: f64,
    tau2: f64,
    min_community: Option<usize>,
    max_community: Option<usize>,
    seed: u64,
) -> PyResult<(PyGraph, Bound<'py, PyArray1<u32>>)> {
    let config = LfrConfig {
        nodes,
        avg_degree,
        max_degree,
        mu,
        tau1,
        tau2,
        min_community,
        max_community,
        seed,
        progress: false,
    };
    let lfr = py.detach(move || kith_graph::generate::lfr(&config)).map_err(graph_error)?;
    Ok((PyGraph::new(lfr.graph), lfr.membership.into_pyarray(py)))
}

/// An R-MAT graph (Graph500's quadrant probabilities by default).
#[pyfunction]
#[pyo3(signature = (nodes, avg_degree=32.0, probabilities=(0.57, 0.19, 0.19, 0.05),
    directed=false, seed=1))]
fn generate_rmat(
    py: Python<'_>,
    nodes: usize,
    avg_degree: f64,
    probabilities: (f64, f64, f64, f64),
    directed: bool,
    seed: u64,
) -> PyResult<PyGraph> {
    let (a, b, c, d) = probabilities;
    let config = RmatConfig {
        nodes,
        avg_degree,
        probabilities: [a, b, c, d],
        directed,
        seed,
        progress: false,
    };
    py.detach(move || kith_graph::generate::rmat(&config)).map(PyGraph::new).map_err(graph_error)
}

/// A Barabási–Albert graph: each new vertex attaches to `round(avg_degree / 2)` others.
#[pyfunction]
#[pyo3(signature = (nodes, avg_degree=10.0, seed=1))]
fn generate_ba(py: Python<'_>, nodes: usize, avg_degree: f64, seed: u64) -> PyResult<PyGraph> {
    let config = BaConfig { nodes, avg_degree, seed, progress: false };
    py.detach(move || kith_graph::generate::barabasi_albert(&config))
        .map(PyGraph::new)
        .map_err(graph_error)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyGraph>()?;
    m.add_function(wrap_pyfunction!(read, m)?)?;
    m.add_function(wrap_pyfunction!(generate_lfr, m)?)?;
    m.add_function(wrap_pyfunction!(generate_rmat, m)?)?;
    m.add_function(wrap_pyfunction!(generate_ba, m)?)?;
    Ok(())
}
