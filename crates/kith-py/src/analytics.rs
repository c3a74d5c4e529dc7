//! The analytics for Python: each runs with the GIL released on kith's parallel engine and
//! returns NumPy arrays by dense id; `verify=True` also runs the sequential verifier and
//! raises `VerificationError` on any difference, as the CLI's `--verify` reports it.

use kith_analytics::{Formulation, InGraph, PageRankConfig, Precision, UNREACHABLE};
use kith_graph::VertexId;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::error::{analytics_error, verified};
use crate::graph::PyGraph;

/// PageRank of every vertex, the steps it ran and the last step's L1 change. `tolerance` is
/// the L1 change to stop below (0: run all `iterations`).
#[pyfunction]
#[pyo3(signature = (graph, damping=0.85, iterations=100, tolerance=0.0,
    formulation="normalized", precision="f64", verify=false))]
#[allow(clippy::too_many_arguments)]
fn pagerank<'py>(
    py: Python<'py>,
    graph: &Bound<'py, PyGraph>,
    damping: f64,
    iterations: usize,
    tolerance: f64,
    formulation: &str,
    precision: &str,
    verify: bool,
) -> PyResult<(Bound<'py, PyArray1<f64>>, usize, f64)> {
    if !(damping > 0.0 && damping < 1.0) {
        return Err(PyValueError::new_err(format!("alpha must be in (0, 1), not {damping}")));
    }
    if iterations == 0 {
        return Err(PyValueError::new_err("max_iter must be at least 1"));
    }
    if !(tolerance >= 0.0 && tolerance.is_finite()) {
        return Err(PyValueError::new_err(format!("tol must be finite and >= 0, not {tolerance}")));
    }
    let formulation = match formulation {
        "normalized" => Formulation::Normalized,
        "lfgraph" => Formulation::LfGraph,
        other => {
            return Err(PyValueError::new_err(format!(
                "formulation must be 'normalized' or 'lfgraph', not {other:?}"
            )));
        }
    };
    let precision = match precision {
        "f64" => Precision::F64,
        "f32" => Precision::F32,
        other => {
            return Err(PyValueError::new_err(format!(
                "precision must be 'f64' or 'f32', not {other:?}"
            )));
        }
    };
    let config = PageRankConfig { formulation, damping, iterations, tolerance, precision };
    let pg = graph.get();
    // Building the in-links (on first use) runs without the GIL too.
    let ig = py.detach(|| pg.in_graph());
    let (ranks, steps, delta, ok) = py.detach(move || {
        let (ranks, stats, delta) = kith_analytics::pagerank(&ig, config);
        let ok = verify.then(|| {
            let want = kith_analytics::pagerank_sequential(&ig, config, stats.steps);
            let within = match precision {
                Precision::F64 => 1e-9 * ranks.len().max(1) as f64,
                Precision::F32 => 1e-6 * want.iter().sum::<f64>(),
            };
            ranks.iter().zip(&want).map(|(x, y)| (x - y).abs()).sum::<f64>() < within
        });
        (ranks, stats.steps, delta, ok)
    });
    verified(ok.unwrap_or(true), "pagerank")?;
    Ok((ranks.into_pyarray(py), steps, delta))
}

/// Triangles through every vertex and in total, on the undirected graph.
#[pyfunction]
#[pyo3(signature = (graph, verify=false))]
fn triangles<'py>(
    py: Python<'py>,
    graph: &Bound<'py, PyGraph>,
    verify: bool,
) -> PyResult<(Bound<'py, PyArray1<u64>>, u64)> {
    let pg = graph.get();
    let ig = py.detach(|| pg.undirected());
    let (per, total, ok) = py.detach(move || {
        let (per, total) = kith_analytics::triangles(&ig);
        let ok = verify.then(|| per == kith_analytics::triangles_sequential(&ig));
        (per, total, ok)
    });
    verified(ok.unwrap_or(true), "triangles")?;
    Ok((per.into_pyarray(py), total))
}

/// Triangles in the undirected graph, each once: the count alone, without the per-vertex
/// credits.
#[pyfunction]
#[pyo3(signature = (graph, verify=false))]
fn triangle_count(py: Python<'_>, graph: &Bound<'_, PyGraph>, verify: bool) -> PyResult<u64> {
    let pg = graph.get();
    let ig = py.detach(|| pg.undirected());
    let (total, ok) = py.detach(move || {
        let total = kith_analytics::triangle_count(&ig);
        let ok = verify
            .then(|| kith_analytics::triangles_sequential(&ig).iter().sum::<u64>() == 3 * total);
        (total, ok)
    });
    verified(ok.unwrap_or(true), "triangle_count")?;
    Ok(total)
}

/// Local clustering coefficients and their average, on the undirected graph.
#[pyfunction]
#[pyo3(signature = (graph, verify=false))]
fn clustering<'py>(
    py: Python<'py>,
    graph: &Bound<'py, PyGraph>,
    verify: bool,
) -> PyResult<(Bound<'py, PyArray1<f64>>, f64)> {
    let pg = graph.get();
    let ig = py.detach(|| pg.undirected());
    let (local, average, ok) = py.detach(move || {
        let (per, _) = kith_analytics::triangles(&ig);
        let (local, average) = kith_analytics::clustering(&ig, &per);
        let ok = verify.then(|| {
            let (want, _) =
                kith_analytics::clustering(&ig, &kith_analytics::triangles_sequential(&ig));
            want == local
        });
        (local, average, ok)
    });
    verified(ok.unwrap_or(true), "clustering")?;
    Ok((local.into_pyarray(py), average))
}

/// Component labels (the smallest dense id in each weakly connected component).
#[pyfunction]
#[pyo3(signature = (graph, method="union-find", verify=false))]
fn components<'py>(
    py: Python<'py>,
    graph: &Bound<'py, PyGraph>,
    method: &str,
    verify: bool,
) -> PyResult<Bound<'py, PyArray1<u32>>> {
    let propagate = match method {
        "union-find" => false,
        "label-propagation" => true,
        other => {
            return Err(PyValueError::new_err(format!(
                "method must be 'union-find' or 'label-propagation', not {other:?}"
            )));
        }
    };
    let pg = graph.get();
    let ig = py.detach(|| pg.undirected());
    let (labels, ok) = py.detach(move || {
        let labels = if propagate {
            kith_analytics::components_label_propagation(&ig).0
        } else {
            kith_analytics::components_union_find(&ig)
        };
        let ok = verify.then(|| labels == kith_analytics::components_union_find(&ig));
        (labels, ok)
    });
    verified(ok.unwrap_or(true), "components")?;
    Ok(labels.into_pyarray(py))
}

/// Hop distances from dense vertex `source` along edge direction (`UNREACHABLE` where none),
/// or with `weights` (one per in-link, in `in_csr()` order) the weighted distances (`inf`).
#[pyfunction]
#[pyo3(signature = (graph, source, weights=None, verify=false))]
fn sssp<'py>(
    py: Python<'py>,
    graph: &Bound<'py, PyGraph>,
    source: VertexId,
    weights: Option<PyReadonlyArray1<'py, f64>>,
    verify: bool,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let g = graph.get();
    if source as usize >= g.graph.num_nodes() {
        return Err(PyValueError::new_err(format!("source {source} is not a vertex")));
    }
    let ig = py.detach(|| g.in_graph());
    let dist = match weights {
        None => {
            let (hops, ok) = py.detach(move || {
                let (hops, _) = kith_analytics::sssp(&ig, source);
                let ok = verify.then(|| hops == kith_analytics::sssp_sequential(&ig, source));
                (hops, ok)
            });
            verified(ok.unwrap_or(true), "sssp")?;
            let as_f64 = |h: u32| if h == UNREACHABLE { f64::INFINITY } else { f64::from(h) };
            hops.into_iter().map(as_f64).collect::<Vec<f64>>()
        }
        Some(w) => {
            let w = w.as_slice()?.to_vec();
            if w.len() != ig.num_in_links() {
                return Err(PyValueError::new_err(format!(
                    "{} weights for {} in-links: one per in-link, in in_csr() order",
                    w.len(),
                    ig.num_in_links()
                )));
            }
            let (dist, ok) = py.detach(move || -> PyResult<_> {
                let weighted: InGraph = (*ig).clone().with_weights(w);
                let (dist, _) =
                    kith_analytics::sssp_weighted(&weighted, source).map_err(analytics_error)?;
                let ok = verify.then(|| {
                    kith_analytics::sssp_weighted_sequential(&weighted, source)
                        .is_ok_and(|want| want == dist)
                });
                Ok((dist, ok))
            })?;
            verified(ok.unwrap_or(true), "sssp")?;
            dist
        }
    };
    Ok(dist.into_pyarray(py))
}

/// Core numbers (k-core decomposition), on the undirected graph.
#[pyfunction]
#[pyo3(signature = (graph, verify=false))]
fn kcore<'py>(
    py: Python<'py>,
    graph: &Bound<'py, PyGraph>,
    verify: bool,
) -> PyResult<Bound<'py, PyArray1<u32>>> {
    let pg = graph.get();
    let ig = py.detach(|| pg.undirected());
    let (cores, ok) = py.detach(move || {
        let (cores, _) = kith_analytics::core_numbers(&ig);
        let ok = verify.then(|| cores == kith_analytics::core_numbers_sequential(&ig));
        (cores, ok)
    });
    verified(ok.unwrap_or(true), "kcore")?;
    Ok(cores.into_pyarray(py))
}

/// The mutual friends of every friendship `(a, b)`, `a < b` by dense id: the pairs as an
/// `(m, 2)` array, and the common friends of pair `i` as `common[offsets[i]:offsets[i+1]]`.
#[pyfunction]
#[pyo3(signature = (graph, verify=false))]
#[allow(clippy::type_complexity)]
fn mutual_friends<'py>(
    py: Python<'py>,
    graph: &Bound<'py, PyGraph>,
    verify: bool,
) -> PyResult<(Bound<'py, PyArray2<u32>>, Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u32>>)> {
    let pg = graph.get();
    let ig = py.detach(|| pg.undirected());
    let (pairs, offsets, common, ok) = py.detach(move || {
        let (mf, _) = kith_analytics::mutual_friends(&ig);
        let ok = verify.then(|| mf == kith_analytics::mutual_friends_sequential(&ig));
        let mut pairs = Vec::with_capacity(2 * mf.len());
        let mut offsets = Vec::with_capacity(mf.len() + 1);
        let mut common = Vec::with_capacity(mf.total() as usize);
        offsets.push(0u64);
        for ((a, b), list) in mf.iter() {
            pairs.extend([a, b]);
            common.extend_from_slice(list);
            offsets.push(common.len() as u64);
        }
        (pairs, offsets, common, ok)
    });
    verified(ok.unwrap_or(true), "mutual_friends")?;
    let m = offsets.len() - 1;
    let pairs = pairs.into_pyarray(py).reshape([m, 2])?;
    Ok((pairs, offsets.into_pyarray(py), common.into_pyarray(py)))
}

/// People-you-may-know for dense vertex `user`: the `k` non-friends sharing the most friends
/// with them, most first (ties by smaller id), with those counts.
#[pyfunction]
#[pyo3(signature = (graph, user, k=10, verify=false))]
fn people_you_may_know(
    py: Python<'_>,
    graph: &Bound<'_, PyGraph>,
    user: VertexId,
    k: usize,
    verify: bool,
) -> PyResult<Vec<(VertexId, u32)>> {
    let g = graph.get();
    if user as usize >= g.graph.num_nodes() {
        return Err(PyValueError::new_err(format!("user {user} is not a vertex")));
    }
    let ig = py.detach(|| g.undirected());
    let (ranked, ok) = py.detach(move || {
        let ranked = kith_analytics::people_you_may_know(&ig, user, k);
        let ok =
            verify.then(|| ranked == kith_analytics::people_you_may_know_sequential(&ig, user, k));
        (ranked, ok)
    });
    verified(ok.unwrap_or(true), "people_you_may_know")?;
    Ok(ranked)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(pagerank, m)?)?;
    m.add_function(wrap_pyfunction!(triangles, m)?)?;
    m.add_function(wrap_pyfunction!(triangle_count, m)?)?;
    m.add_function(wrap_pyfunction!(clustering, m)?)?;
    m.add_function(wrap_pyfunction!(components, m)?)?;
    m.add_function(wrap_pyfunction!(sssp, m)?)?;
    m.add_function(wrap_pyfunction!(kcore, m)?)?;
    m.add_function(wrap_pyfunction!(mutual_friends, m)?)?;
    m.add_function(wrap_pyfunction!(people_you_may_know, m)?)?;
    m.add("UNREACHABLE", UNREACHABLE)?;
    Ok(())
}
