//! Local clustering coefficients from per-vertex triangle counts: the fraction of a
//! vertex's pairs of friends who are friends (0 below two friends), and their average.

use crate::engine::InGraph;

/// Local coefficients (by id) and their average over all vertices, from [`crate::triangles`].
pub fn clustering(graph: &InGraph, triangles: &[u64]) -> (Vec<f64>, f64) {
    let local: Vec<f64> = triangles
        .iter()
        .enumerate()
        .map(|(v, &t)| {
            let d = graph.in_links(v as u32).len() as f64;
            if d < 2.0 { 0.0 } else { 2.0 * t as f64 / (d * (d - 1.0)) }
        })
        .collect();
    let average =
        if local.is_empty() { 0.0 } else { local.iter().sum::<f64>() / local.len() as f64 };
    (local, average)
}
