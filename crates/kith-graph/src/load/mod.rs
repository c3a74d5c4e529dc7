//! Reading graphs from files: SNAP, KONECT, MatrixMarket and CSV edge lists (plain, gzip or
//! inside a zip), SNAP ego-network archives, and `.kgraph` snapshots.

mod archive;
mod densify;
mod format;
mod parse;
mod text;

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek};
use std::path::Path;

use flate2::read::MultiGzDecoder;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressFinish, ProgressStyle};

use crate::error::{Error, Result};
use crate::graph::Graph;
use crate::snapshot;
use densify::densify;
use format::sniff;
use text::RawEdges;

pub use format::Format;
use format::format_from_name;

/// How to read a graph file.
#[derive(Clone, Debug, Default)]
pub struct LoadConfig {
    /// The format; `None` (the default) detects it from the file name and content.
    pub format: Option<Format>,
    /// Keep edge direction. Default `false`: friendship graphs are undirected, and an edge
    /// listed in both directions is one edge.
    pub directed: bool,
    /// The member to read from a zip archive; `None` (the default) picks the one edge list in it.
    pub member: Option<String>,
    /// Show a progress bar on stderr while reading (only drawn on a terminal). Default `false`.
    pub progress: bool,
}

/// Reads the graph in `path`.
///
/// # Errors
/// A missing, empty or unreadable file, a directory, a malformed line (with its file and line
/// number), a truncated compressed stream, or a damaged snapshot.
///
/// # Example
/// ```no_run
/// let graph = kith_graph::load("facebook_combined.txt.gz".as_ref(), &Default::default())?;
/// println!("{} nodes, {} edges", graph.num_nodes(), graph.num_edges());
/// # Ok::<(), kith_graph::Error>(())
/// ```
pub fn load(path: &Path, config: &LoadConfig) -> Result<Graph> {
    let (mut file, len) = open_file(path)?;
    let mut magic = [0u8; 8];
    let got = read_up_to(&mut file, &mut magic).map_err(|e| Error::io(path, e))?;
    file.rewind().map_err(|e| Error::io(path, e))?;
    let magic = &magic[..got];

    let snapshot_magic = magic.starts_with(snapshot::MAGIC);
    if config.format == Some(Format::Kgraph) || (config.format.is_none() && snapshot_magic) {
        let graph = snapshot::read(path)?;
        if config.directed && !graph.is_directed() {
            return Err(Error::input(
                path,
                "this snapshot holds an undirected graph; import the edge list again with --directed",
            ));
        }
        return Ok(graph);
    }

    let bar = progress_bar(config.progress, len, path);
    let counted = Counting { inner: file, bar: bar.clone() };
    let zipped = magic.starts_with(b"PK\x03\x04");
    if let (Some(member), false) = (&config.member, zipped) {
        return Err(Error::input(
            path,
            format!("not a zip archive, so there is no member {member:?} to read"),
        ));
    }
    let raw = if zipped {
        archive::zip_member(counted, path, config.member.as_deref(), config.format)?
    } else {
        let compressed = magic.starts_with(&[0x1f, 0x8b]);
        let stream: Box<dyn Read + Send> =
            if compressed { Box::new(MultiGzDecoder::new(counted)) } else { Box::new(counted) };
        let mut reader: Box<dyn BufRead + Send> =
            Box::new(BufReader::with_capacity(1 << 18, stream));
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let format = match config.format.or_else(|| format_from_name(&name)) {
            Some(f) => f,
            None => {
                let head = reader.fill_buf().map_err(|e| Error::io(path, e))?;
                if head.len() > 262 && &head[257..262] == b"ustar" {
                    Format::SnapEgo
                } else {
                    sniff(head)
                }
            }
        };
        parse(reader, path, format, compressed)?
    };
    if raw.pairs.is_empty() {
        bar.finish_and_clear();
        return Err(Error::input(
            path,
            "no edges found (the file has only comments or blank lines)",
        ));
    }
    bar.set_message(format!("building the graph from {} edge lines", raw.pairs.len()));
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    let graph = densify(raw.pairs, config.directed).map_err(|message| Error::input(path, message));
    bar.finish_and_clear();
    graph
}

fn parse(
    reader: Box<dyn BufRead + Send + '_>,
    name: &Path,
    format: Format,
    compressed: bool,
) -> Result<RawEdges> {
    match format {
        Format::SnapEgo => archive::ego_networks(reader, name),
        Format::Kgraph => Err(Error::input(name, "not a .kgraph snapshot (bad magic bytes)")),
        _ => text::parse_text(reader, name, format, compressed),
    }
}

/// Opens `path` for reading, turning the usual mistakes into clear messages.
fn open_file(path: &Path) -> Result<(File, u64)> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::input(path, "no such file"),
        _ => Error::io(path, e),
    })?;
    if meta.is_dir() {
        return Err(Error::input(path, "is a directory, not a graph file"));
    }
    if meta.len() == 0 {
        return Err(Error::input(path, "empty file"));
    }
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    Ok((file, meta.len()))
}

fn read_up_to(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}

fn progress_bar(show: bool, len: u64, path: &Path) -> ProgressBar {
    if !show {
        return ProgressBar::hidden();
    }
    // Cleared when the last handle drops, so an error leaves no half-drawn bar behind.
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr())
        .with_finish(ProgressFinish::AndClear);
    bar.set_style(
        ProgressStyle::with_template(
            "{msg} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar.set_message(format!("reading {}", path.display()));
    bar
}

/// Counts the bytes read from the file into a progress bar.
struct Counting<R> {
    inner: R,
    bar: ProgressBar,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bar.inc(n as u64);
        Ok(n)
    }
}

impl<R: Seek> Seek for Counting<R> {
    fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(pos)
    }
}
