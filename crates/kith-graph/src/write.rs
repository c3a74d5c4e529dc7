//! Writing graphs and communities as text, and choosing the output format by file name.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use flate2::Compression;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;

use crate::{Error, Graph, Result, VertexId, snapshot};

/// Saves `graph` to `path`: a `.kgraph` snapshot when the name ends in `.kgraph`, otherwise a
/// SNAP edge list (gzip-compressed when the name ends in `.gz`) with original ids, each
/// undirected edge written once.
///
/// # Errors
/// Any I/O error, with the path.
pub fn save(graph: &Graph, path: &Path) -> Result<()> {
    if path.extension().is_some_and(|e| e == "kgraph") {
        return snapshot::write(graph, path);
    }
    write_text(path, |w| {
        let kind = if graph.is_directed() { "directed" } else { "undirected" };
        writeln!(
            w,
            "# kith edge list: {kind}, {} nodes, {} edges",
            graph.num_nodes(),
            graph.num_edges()
        )?;
        writeln!(w, "# FromNodeId\tToNodeId")?;
        for u in 0..graph.num_nodes() as VertexId {
            let from = graph.original_id(u);
            for &v in graph.neighbors(u) {
                if graph.is_directed() || u < v {
                    writeln!(w, "{from}\t{}", graph.original_id(v))?;
                }
            }
        }
        Ok(())
    })
}

/// Writes communities in SNAP's `.cmty.txt` format: one community per line, its members'
/// ids separated by tabs. Gzip-compressed when the name ends in `.gz`.
///
/// # Errors
/// Any I/O error, with the path.
pub fn write_communities(path: &Path, communities: &[Vec<u64>]) -> Result<()> {
    write_text(path, |w| {
        for members in communities {
            let line: Vec<String> = members.iter().map(u64::to_string).collect();
            writeln!(w, "{}", line.join("\t"))?;
        }
        Ok(())
    })
}

/// Reads communities in SNAP's `.cmty.txt` format (plain or gzip): one community per line,
/// member ids separated by tabs or spaces; blank and `#` lines skipped.
///
/// # Errors
/// A missing file or a line with something other than ids, with its line number.
pub fn read_communities(path: &Path) -> Result<Vec<Vec<u64>>> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let gz = path.extension().is_some_and(|e| e == "gz");
    let reader: Box<dyn BufRead> = if gz {
        Box::new(BufReader::new(MultiGzDecoder::new(file)))
    } else {
        Box::new(BufReader::new(file))
    };
    let mut communities = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line =
            line.map_err(|e| Error::input(path, format!("read failed after line {i}: {e}")))?;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let members = line
            .split_whitespace()
            .map(|t| {
                t.parse::<u64>().map_err(|_| Error::Parse {
                    path: path.to_path_buf(),
                    line: i as u64 + 1,
                    message: format!("expected community member ids, found {t:?}"),
                })
            })
            .collect::<Result<Vec<u64>>>()?;
        communities.push(members);
    }
    Ok(communities)
}

/// Creates `path` and hands a buffered (and, for `.gz`, compressing) writer to `body`.
fn write_text(path: &Path, body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<()> {
    let io = |e| Error::io(path, e);
    let file = BufWriter::with_capacity(1 << 20, File::create(path).map_err(io)?);
    if path.extension().is_some_and(|e| e == "gz") {
        let mut gz = GzEncoder::new(file, Compression::fast());
        body(&mut gz).map_err(io)?;
        gz.finish().map_err(io)?.flush().map_err(io)
    } else {
        let mut file = file;
        body(&mut file).map_err(io)?;
        file.flush().map_err(io)
    }
}
