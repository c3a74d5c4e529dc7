//! `Layout`: a permutation of a graph's vertices, and its text file format.
//!
//! A layout file lists one original node id per line in position order (first line =
//! position 0), optionally gzip-compressed; blank lines and lines starting with `#` are
//! skipped. Any tool can read it; kith checks on reading that it is a permutation of the
//! graph's ids and names the first offending line otherwise.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;

use flate2::read::MultiGzDecoder;
use kith_graph::durable::{Fs, StdFs, write_text_atomic};
use kith_graph::{Graph, VertexId};

use crate::error::{Error, Result};

/// A placement of `n` vertices on `n` consecutive slots.
///
/// **Invariant: `order` is a permutation of `0..n` and `position` its inverse.**
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    order: Vec<VertexId>,
    position: Vec<u32>,
}

impl Layout {
    /// The layout that places vertex `order[i]` at position `i`.
    ///
    /// # Errors
    /// `order` repeats a vertex or names one `>= order.len()`.
    pub fn from_order(order: Vec<VertexId>) -> Result<Layout> {
        let n = order.len();
        let mut position = vec![u32::MAX; n];
        for (i, &v) in order.iter().enumerate() {
            let slot = position.get_mut(v as usize).ok_or_else(|| {
                Error::InvalidArgument(format!("layout names vertex {v} of a {n}-vertex graph"))
            })?;
            if *slot != u32::MAX {
                return Err(Error::InvalidArgument(format!(
                    "layout places vertex {v} twice (positions {} and {i})",
                    *slot
                )));
            }
            *slot = i as u32;
        }
        Ok(Layout { order, position })
    }

    /// Vertex `i` at position `i`: the graph's input (original-id) order.
    pub fn identity(n: usize) -> Layout {
        let order: Vec<VertexId> = (0..n as VertexId).collect();
        Layout { position: order.clone(), order }
    }

    /// The number of vertices.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether the layout places no vertex.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The vertices in position order.
    pub fn order(&self) -> &[VertexId] {
        &self.order
    }

    /// The position of every vertex, indexed by vertex.
    pub fn positions(&self) -> &[u32] {
        &self.position
    }

    /// The position of vertex `v`.
    pub fn position(&self, v: VertexId) -> u32 {
        self.position[v as usize]
    }

    /// Consumes the layout, returning the order.
    pub fn into_order(self) -> Vec<VertexId> {
        self.order
    }
}

/// The inverse of a permutation `order` of `0..n`: the position of every vertex. Callers
/// guarantee `order` is a permutation ([`Layout::from_order`] checks one).
pub(crate) fn inverse(order: &[VertexId]) -> Vec<u32> {
    let mut position = vec![0u32; order.len()];
    for (i, &v) in order.iter().enumerate() {
        position[v as usize] = i as u32;
    }
    position
}

/// Writes `layout` as a layout file of `graph`'s original ids, gzip-compressed when the name
/// ends in `.gz`. The file is replaced atomically and durably
/// ([`write_atomic`](kith_graph::durable::write_atomic)): a reader never sees half a layout,
/// and a crash leaves the old file or the complete new one.
///
/// # Errors
/// Any I/O error, with the path.
pub fn write_layout(path: &Path, graph: &Graph, layout: &Layout) -> Result<()> {
    write_layout_with(&StdFs, path, graph, layout)
}

/// [`write_layout`] through the file-system seam `fs` (a
/// [`PowerCutFs`](kith_graph::durable::PowerCutFs) in the power-loss tests).
///
/// # Errors
/// As [`write_layout`].
pub fn write_layout_with(fs: &dyn Fs, path: &Path, graph: &Graph, layout: &Layout) -> Result<()> {
    if layout.len() != graph.num_nodes() {
        return Err(Error::InvalidArgument(format!(
            "layout of {} vertices for a graph of {}",
            layout.len(),
            graph.num_nodes()
        )));
    }
    let write = |out: &mut dyn Write| -> std::io::Result<()> {
        let mut line = String::new();
        for &v in layout.order() {
            line.clear();
            line.push_str(&graph.original_id(v).to_string());
            line.push('\n');
            out.write_all(line.as_bytes())?;
        }
        Ok(())
    };
    write_text_atomic(fs, path, write).map_err(|e| Error::io(path, e))
}

/// Reads a layout file for `graph`.
///
/// # Errors
/// A line that is not an id, an id the graph does not have, an id listed twice (both lines
/// named), or ids of the graph that the file misses (how many, and the first few).
pub fn read_layout(path: &Path, graph: &Graph) -> Result<Layout> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut reader = BufReader::new(file);
    let gz = reader.fill_buf().map_err(|e| Error::io(path, e))?.starts_with(&[0x1f, 0x8b]);
    let reader: Box<dyn BufRead> =
        if gz { Box::new(BufReader::new(MultiGzDecoder::new(reader))) } else { Box::new(reader) };
    read_from(reader, path, graph)
}

/// The longest line a layout file may have. A line holds one id (or a comment), so this is
/// generous; it bounds what a file without line breaks can make the reader hold.
const MAX_LINE_BYTES: usize = 64 << 10;

fn read_from(mut reader: Box<dyn BufRead>, path: &Path, graph: &Graph) -> Result<Layout> {
    let n = graph.num_nodes();
    // The line each vertex was placed on, 0 while unplaced.
    let mut line_of = vec![0u64; n];
    let mut order = Vec::with_capacity(n);
    let mut buf = Vec::new();
    let mut line = 0u64;
    loop {
        buf.clear();
        let read = (&mut reader)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| Error::io(path, e))?;
        if read == 0 {
            break;
        }
        line += 1;
        if buf.len() > MAX_LINE_BYTES {
            return Err(Error::layout_file(
                path,
                line,
                format!("line is longer than {MAX_LINE_BYTES} bytes; a layout line holds one id"),
            ));
        }
        let text = std::str::from_utf8(&buf)
            .map_err(|_| Error::layout_file(path, line, "not UTF-8 text"))?;
        let text = text.trim_start_matches('\u{feff}').trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let id: u64 = text.parse().map_err(|_| {
            Error::layout_file(path, line, format!("expected one node id, found {text:?}"))
        })?;
        let v = graph.dense_id(id).ok_or_else(|| {
            Error::layout_file(path, line, format!("node id {id} is not in the graph"))
        })?;
        let seen = &mut line_of[v as usize];
        if *seen != 0 {
            return Err(Error::layout_file(
                path,
                line,
                format!("node id {id} repeats (first on line {})", *seen),
            ));
        }
        *seen = line;
        order.push(v);
    }
    if order.len() < n {
        let missing: Vec<String> = (0..n)
            .filter(|&v| line_of[v] == 0)
            .take(5)
            .map(|v| graph.original_id(v as VertexId).to_string())
            .collect();
        return Err(Error::layout_file(
            path,
            0,
            format!(
                "the layout misses {} of the graph's {n} node ids (first: {})",
                n - order.len(),
                missing.join(", ")
            ),
        ));
    }
    Layout::from_order(order)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph() -> Graph {
        Graph::from_edges(vec![10, 20, 30, 40], false, vec![(0, 1), (1, 2), (2, 3)])
    }

    fn read_text(text: &str) -> Result<Layout> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.txt");
        std::fs::write(&path, text).unwrap();
        read_layout(&path, &graph())
    }

    #[test]
    fn round_trip_plain_and_gzip() {
        let g = graph();
        let layout = Layout::from_order(vec![2, 0, 3, 1]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        for name in ["l.txt", "l.txt.gz"] {
            let path = dir.path().join(name);
            write_layout(&path, &g, &layout).unwrap();
            assert_eq!(read_layout(&path, &g).unwrap(), layout);
        }
        let text = std::fs::read_to_string(dir.path().join("l.txt")).unwrap();
        assert_eq!(text, "30\n10\n40\n20\n");
    }

    /// Power lost at any step of replacing a layout file leaves the old layout or the new
    /// one, complete, and the reader accepts it.
    #[test]
    fn layout_files_survive_power_loss_at_every_step() {
        use kith_graph::durable::PowerCutFs;
        let n = 3000u64;
        let g = Graph::from_edges((0..n).collect(), false, vec![(0, 1)]);
        let old = Layout::identity(n as usize);
        let new = Layout::from_order((0..n as u32).rev().collect()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        for name in ["l.txt", "l.txt.gz"] {
            let path = dir.path().join(name);
            let write_old =
                |fs: &dyn Fs| write_layout_with(fs, &path, &g, &old).map_err(std::io::Error::other);
            let write_new =
                |fs: &dyn Fs| write_layout_with(fs, &path, &g, &new).map_err(std::io::Error::other);
            let accept = |p: &Path| match read_layout(p, &g) {
                Ok(l) if l == old || l == new => Ok(()),
                Ok(_) => Err("a third layout".to_string()),
                Err(e) => Err(e.to_string()),
            };
            let cuts = PowerCutFs::check_every_cut(&path, Some(&write_old), &write_new, &accept)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(cuts > 3, "{name}: {cuts} cut points");
        }
    }

    #[test]
    fn comments_and_blank_lines_are_skipped() {
        let layout = read_text("# layout\n\n40\n30\n20\n10\n").unwrap();
        assert_eq!(layout.order(), &[3, 2, 1, 0]);
        assert_eq!(layout.position(3), 0);
    }

    #[test]
    fn bad_files_name_the_line() {
        let err = read_text("10\n20\n20\n30\n40\n").unwrap_err().to_string();
        assert!(err.ends_with("l.txt:3: node id 20 repeats (first on line 2)"), "{err}");
        let err = read_text("10\n99\n").unwrap_err().to_string();
        assert!(err.ends_with("l.txt:2: node id 99 is not in the graph"), "{err}");
        let err = read_text("10\nx1\n").unwrap_err().to_string();
        assert!(err.ends_with("l.txt:2: expected one node id, found \"x1\""), "{err}");
        let err = read_text("10\n30\n").unwrap_err().to_string();
        assert!(err.ends_with("the layout misses 2 of the graph's 4 node ids (first: 20, 40)"));
    }

    #[test]
    fn a_line_without_end_is_refused_by_its_length() {
        let err = read_text(&format!("10\n{}", "7".repeat(3 << 20))).unwrap_err().to_string();
        assert!(
            err.ends_with("l.txt:2: line is longer than 65536 bytes; a layout line holds one id")
        );
        assert!(err.len() < 300, "the message quotes {} bytes", err.len());
    }

    #[test]
    fn from_order_rejects_non_permutations() {
        assert!(Layout::from_order(vec![0, 0]).is_err());
        assert!(Layout::from_order(vec![0, 2]).is_err());
        assert_eq!(Layout::from_order(vec![1, 0]).unwrap().positions(), &[1, 0]);
    }
}
