//! Edge weights for weighted shortest paths, read from a text file of `source target weight`
//! lines (whitespace- or comma-separated, plain or gzip; `#` and `%` lines are comments, and
//! a first line that does not start with an id is a header). A KONECT or SNAP file whose
//! third column is a weight can be given as its own weight file.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use kith_graph::VertexId;

use crate::engine::InGraph;
use crate::error::{Error, Result};

/// What a weight file gave.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WeightSummary {
    /// Data lines read.
    pub lines: u64,
    /// In-links of the graph that got a weight from the file.
    pub weighted_links: u64,
    /// In-links that the file did not mention; they weigh 1.
    pub default_links: u64,
}

/// `graph` with the weights of `path` on its in-links. On an undirected graph a line
/// weighs both directions of its edge. Repeated lines for one edge keep the smallest weight
/// (parallel edges: a shortest path takes the cheapest); links the file does not mention
/// weigh 1.
///
/// # Errors
/// A file that cannot be read; a line without three columns, with a weight that is not a
/// finite number, with a negative weight (shortest paths need weights ≥ 0), or naming an
/// edge that is not in the graph — each named by file and line.
pub fn read_weights(
    graph: &InGraph,
    directed: bool,
    path: &Path,
) -> Result<(InGraph, WeightSummary)> {
    let dense: HashMap<u64, VertexId> =
        graph.original_ids().iter().enumerate().map(|(v, &id)| (id, v as VertexId)).collect();
    let mut file = BufReader::new(File::open(path).map_err(Error::io(path))?);
    let gz = file.fill_buf().map_err(Error::io(path))?.starts_with(&[0x1f, 0x8b]);
    let reader: Box<dyn BufRead> = if gz {
        Box::new(BufReader::new(flate2::read::MultiGzDecoder::new(file)))
    } else {
        Box::new(file)
    };
    let mut weights: HashMap<(VertexId, VertexId), f64> = HashMap::new();
    let mut summary = WeightSummary::default();
    let mut seen_data = false;
    for (index, line) in reader.lines().enumerate() {
        let line_no = index as u64 + 1;
        let line = line.map_err(Error::io(path))?;
        let bad = |message: String| Error::Parse { path: path.into(), line: line_no, message };
        let text = line.trim().trim_start_matches('\u{feff}');
        if text.is_empty() || text.starts_with('#') || text.starts_with('%') {
            continue;
        }
        let fields: Vec<&str> = text
            .split(|c: char| c == ',' || c.is_whitespace())
            .map(|f| f.trim().trim_matches('"'))
            .filter(|f| !f.is_empty())
            .collect();
        if !seen_data && !fields[0].starts_with(|c: char| c.is_ascii_digit()) {
            seen_data = true;
            continue; // a header row
        }
        seen_data = true;
        let [a, b, w, ..] = fields[..] else {
            return Err(bad(format!("expected `source target weight`, found {text:?}")));
        };
        let id = |f: &str| {
            f.parse::<u64>().map_err(|_| bad(format!("expected an integer id, found {f:?}")))
        };
        let (a, b) = (id(a)?, id(b)?);
        let weight: f64 =
            w.parse().map_err(|_| bad(format!("expected a number as the weight, found {w:?}")))?;
        if !weight.is_finite() {
            return Err(bad(format!("weight {w} of edge {a} -> {b} is not a finite number")));
        }
        if weight < 0.0 {
            return Err(bad(format!(
                "negative weight {w} on edge {a} -> {b}; shortest paths need weights >= 0"
            )));
        }
        let missing = || bad(format!("edge {a} -> {b} is not in the graph"));
        let (Some(&u), Some(&v)) = (dense.get(&a), dense.get(&b)) else {
            return Err(missing());
        };
        // An in-link of v from u must exist (either one, undirected).
        if graph.in_links(v).binary_search(&u).is_err() {
            return Err(missing());
        }
        let key = if directed { (u, v) } else { (u.min(v), u.max(v)) };
        let slot = weights.entry(key).or_insert(weight);
        *slot = slot.min(weight);
        summary.lines += 1;
    }
    let mut aligned = Vec::with_capacity(graph.num_in_links());
    for v in 0..graph.num_vertices() as VertexId {
        for &u in graph.in_links(v) {
            let key = if directed { (u, v) } else { (u.min(v), u.max(v)) };
            match weights.get(&key) {
                Some(&w) => {
                    aligned.push(w);
                    summary.weighted_links += 1;
                }
                None => {
                    aligned.push(1.0);
                    summary.default_links += 1;
                }
            }
        }
    }
    Ok((graph.clone().with_weights(aligned), summary))
}
