//! Layouts for Python: compute one by any method the CLI offers and evaluate it, with the
//! figures `kith layout compute --json` and `kith layout eval --json` print, computed by the
//! same functions. Layouts run on the undirected graph, as the CLI's do.

use std::time::Instant;

use kith_graph::{VertexId, WeightModel, edge_weights};
use kith_layout::metrics::{PAGE_BYTES, gaps_and_pages};
use kith_layout::{Layout, LayoutConfig, Method, Objective, compute, evaluate, la_cost};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde_json::json;

use crate::error::{graph_error, layout_error};
use crate::graph::PyGraph;

/// A layout of `graph`: the dense ids in position order, with the report of
/// `kith layout compute --json` as a JSON string (and, for the community methods, every
/// vertex's community).
#[pyfunction]
#[pyo3(signature = (graph, method="kith", record_bytes=40, page_bytes=PAGE_BYTES,
    objective="pages", communities=64, level=None, model="uniform", seed=1))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn layout<'py>(
    py: Python<'py>,
    graph: &Bound<'py, PyGraph>,
    method: &str,
    record_bytes: u64,
    page_bytes: u64,
    objective: &str,
    communities: usize,
    level: Option<usize>,
    model: &str,
    seed: u64,
) -> PyResult<(Bound<'py, PyArray1<VertexId>>, String, Option<Bound<'py, PyArray1<u32>>>)> {
    let method: Method = method.parse().map_err(value_error)?;
    let objective: Objective = objective.parse().map_err(value_error)?;
    let model: WeightModel = model.parse().map_err(|e: kith_graph::Error| value_error(e))?;
    if record_bytes == 0 || page_bytes < record_bytes {
        return Err(PyValueError::new_err(format!(
            "record_bytes must be at least 1 and at most page_bytes ({page_bytes}), not {record_bytes}"
        )));
    }
    if communities == 0 {
        return Err(PyValueError::new_err("communities must be at least 1"));
    }
    let config = LayoutConfig {
        method,
        communities,
        level,
        model,
        record_bytes,
        page_bytes,
        objective,
        seed,
        progress: false,
    };
    let pg = graph.get();
    let g = py.detach(|| undirected(pg));
    let (computed, report) = py.detach(move || -> PyResult<_> {
        let start = Instant::now();
        let computed = compute(&g, &config).map_err(layout_error)?;
        let seconds = start.elapsed().as_secs_f64();
        let (log_gap_cost, pages) = gaps_and_pages(&g, &computed.layout, config.record_bytes);
        let communities = computed.communities.as_ref().map(|c| {
            json!({"count": c.count, "modularity": c.modularity, "level": c.level,
                "levels": c.levels})
        });
        let report = json!({
            "method": method.to_string(), "objective": objective.to_string(),
            "model": model.to_string(), "record_bytes": record_bytes, "page_bytes": page_bytes,
            "nodes": g.num_nodes(), "edges": g.num_edges(), "seconds": seconds,
            "cost": la_cost(&g, &computed.layout), "log_gap_cost": log_gap_cost, "pages": pages,
            "communities": communities,
        });
        Ok((computed, report.to_string()))
    })?;
    let membership = computed.partition.map(|p| p.membership().to_vec().into_pyarray(py));
    Ok((computed.layout.into_order().into_pyarray(py), report, membership))
}

/// Evaluates a layout (dense ids in position order) against a baseline (another such order,
/// or the name of a method whose default layout to compute): the report of
/// `kith layout eval --json` as a JSON string.
#[pyfunction]
#[pyo3(signature = (graph, order, baseline=None, baseline_method="default", model="uniform"))]
fn layout_eval(
    py: Python<'_>,
    graph: &Bound<'_, PyGraph>,
    order: PyReadonlyArray1<'_, VertexId>,
    baseline: Option<PyReadonlyArray1<'_, VertexId>>,
    baseline_method: &str,
    model: &str,
) -> PyResult<String> {
    let model: WeightModel = model.parse().map_err(|e: kith_graph::Error| value_error(e))?;
    let layout = Layout::from_order(order.as_slice()?.to_vec()).map_err(value_error)?;
    let baseline = match baseline {
        Some(b) => Err(Layout::from_order(b.as_slice()?.to_vec()).map_err(value_error)?),
        None => Ok(baseline_method.parse::<Method>().map_err(value_error)?),
    };
    let pg = graph.get();
    let g = py.detach(|| undirected(pg));
    if layout.len() != g.num_nodes() {
        return Err(PyValueError::new_err(format!(
            "the layout places {} users and the graph has {}",
            layout.len(),
            g.num_nodes()
        )));
    }
    py.detach(move || -> PyResult<String> {
        let (baseline, name) = match baseline {
            Err(layout) => (layout, "given".to_string()),
            Ok(method) => {
                let config = LayoutConfig { method, ..Default::default() };
                (compute(&g, &config).map_err(layout_error)?.layout, method.to_string())
            }
        };
        if baseline.len() != g.num_nodes() {
            return Err(PyValueError::new_err(format!(
                "the baseline places {} users and the graph has {}",
                baseline.len(),
                g.num_nodes()
            )));
        }
        let weights = edge_weights(&g, model).map_err(graph_error)?;
        let e = evaluate(&g, &layout, &weights, &baseline);
        let mut value =
            serde_json::to_value(&e).map_err(|e| PyValueError::new_err(e.to_string()))?;
        value["baseline"] = name.into();
        value["model"] = model.name().into();
        Ok(value.to_string())
    })
}

/// The graph layouts run on: the friendships (a directed graph symmetrised).
fn undirected(graph: &PyGraph) -> std::sync::Arc<kith_graph::Graph> {
    let g = &graph.graph;
    if g.is_directed() { std::sync::Arc::new(g.to_undirected()) } else { std::sync::Arc::clone(g) }
}

fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(layout, m)?)?;
    m.add_function(wrap_pyfunction!(layout_eval, m)?)?;
    m.add("PAGE_BYTES", PAGE_BYTES)?;
    Ok(())
}
