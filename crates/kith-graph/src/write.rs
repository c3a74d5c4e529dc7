//! Writing graphs and communities as text, and choosing the output format by file name.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use flate2::read::MultiGzDecoder;

use crate::csr::VertexId;
use crate::durable::{Fs, StdFs, write_text_atomic};
use crate::error::{Error, Result};
use crate::graph::Graph;
use crate::snapshot;

/// Saves `graph` to `path`, choosing the format by name: `.kgraph` writes a snapshot, `.csv`
/// a CSV edge list with a `source,target` header, anything else a SNAP edge list. Text is
/// gzip-compressed when the name ends in `.gz`, uses original ids, and lists each undirected
/// edge once. The file is replaced atomically and durably
/// ([`write_atomic`](crate::durable::write_atomic)): a crash leaves the old file or the
/// complete new one.
///
/// # Errors
/// A MatrixMarket name (`.mtx`), which would need ids relabelled from 1; any I/O error, with
/// the path.
pub fn save(graph: &Graph, path: &Path) -> Result<()> {
    save_with(&StdFs, graph, path)
}

/// [`save`] through the file-system seam `fs` (a [`PowerCutFs`](crate::durable::PowerCutFs)
/// in the power-loss tests).
///
/// # Errors
/// As [`save`].
pub fn save_with(fs: &dyn Fs, graph: &Graph, path: &Path) -> Result<()> {
    let name =
        path.file_name().map(|n| n.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    let stem = name.strip_suffix(".gz").unwrap_or(&name);
    if stem.ends_with(".kgraph") {
        return snapshot::write(fs, graph, path);
    }
    if stem.ends_with(".mtx") {
        return Err(Error::InvalidArgument(format!(
            "{}: kith does not write MatrixMarket; use .kgraph, .txt or .csv",
            path.display()
        )));
    }
    let csv = stem.ends_with(".csv");
    write_text(fs, path, |w| {
        let kind = if graph.is_directed() { "directed" } else { "undirected" };
        if csv {
            writeln!(w, "source,target")?;
        } else {
            writeln!(
                w,
                "# kith edge list: {kind}, {} nodes, {} edges",
                graph.num_nodes(),
                graph.num_edges()
            )?;
            writeln!(w, "# FromNodeId\tToNodeId")?;
        }
        let sep = if csv { ',' } else { '\t' };
        for u in 0..graph.num_nodes() as VertexId {
            let from = graph.original_id(u);
            for &v in graph.neighbors(u) {
                if graph.is_directed() || u < v {
                    writeln!(w, "{from}{sep}{}", graph.original_id(v))?;
                }
            }
        }
        Ok(())
    })
}

/// Writes communities in SNAP's `.cmty.txt` format: one community per line, its members'
/// ids separated by tabs. Gzip-compressed when the name ends in `.gz`. Replaced atomically
/// and durably, as [`save`] does.
///
/// # Errors
/// Any I/O error, with the path.
pub fn write_communities(path: &Path, communities: &[Vec<u64>]) -> Result<()> {
    write_text(&StdFs, path, |w| {
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

/// Replaces `path` with what `body` writes through a buffered (and, for `.gz`, compressing)
/// writer, with [`write_text_atomic`].
fn write_text(
    fs: &dyn Fs,
    path: &Path,
    body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    write_text_atomic(fs, path, body).map_err(|e| Error::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::{LoadConfig, load};

    #[test]
    fn every_text_format_reads_back_to_the_same_graph() -> Result<()> {
        let dir = tempfile::tempdir().unwrap();
        for directed in [false, true] {
            let g = Graph::from_edges(
                vec![0, 7, 9, 1 << 40],
                directed,
                vec![(0, 1), (1, 2), (3, 0), (2, 1)],
            );
            for name in ["g.txt", "g.txt.gz", "g.csv", "g.csv.gz", "g.kgraph", "g"] {
                let path = dir.path().join(name);
                save(&g, &path)?;
                let back = load(&path, &LoadConfig { directed, ..Default::default() })?;
                assert_eq!(back.original_ids(), g.original_ids(), "{name}");
                assert_eq!(back.out_csr(), g.out_csr(), "{name}");
            }
        }
        let g = Graph::from_edges(vec![0, 1], false, vec![(0, 1)]);
        assert!(save(&g, &dir.path().join("g.mtx")).is_err());
        Ok(())
    }

    #[test]
    fn communities_round_trip() -> Result<()> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.cmty.txt.gz");
        let communities = vec![vec![1, 5, 9], vec![2], vec![u64::MAX, 0]];
        write_communities(&path, &communities)?;
        assert_eq!(read_communities(&path)?, communities);
        Ok(())
    }
}
