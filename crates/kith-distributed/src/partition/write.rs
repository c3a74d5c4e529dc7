//! Writing a partition: `vertices.kpart`, then each part, then `meta.json` (so a directory
//! is a partition only once every file in it is complete and synced).

use std::io::{self, Write};
use std::path::Path;

use kith_analytics::InGraph;
use kith_graph::VertexId;
use kith_graph::durable::{Fs, write_atomic, write_text_atomic};
use xxhash_rust::xxh3::Xxh3;

use super::{
    FORMAT, Header, KIND_PART, KIND_VERTICES, MAX_PARTS, PartitionMeta, VERSION, invalid, io,
    is_partition, meta_path, part_path, vertices_path,
};
use crate::error::Result;
use crate::part::owner;

/// Writes `graph` (whose edge count is `edges`, made from `source`) into `dir` as `parts`
/// parts, calling `progress` with each part's number once it is written. `dir` is created
/// if missing; an existing partition in it is replaced (its `meta.json` removed first, so
/// a crash midway leaves no partition rather than a mixed one); any other non-empty
/// directory is refused.
///
/// # Errors
/// [`crate::Error::InvalidArgument`] for no parts or a directory that is not a partition,
/// [`crate::Error::Io`] for a file that cannot be written.
pub fn write_partition(
    fs: &dyn Fs,
    graph: &InGraph,
    edges: u64,
    source: &str,
    parts: usize,
    dir: &Path,
    mut progress: impl FnMut(usize),
) -> Result<PartitionMeta> {
    if parts == 0 || parts > MAX_PARTS {
        return Err(crate::Error::InvalidArgument(format!(
            "--parts must be between 1 and {MAX_PARTS}"
        )));
    }
    prepare_dir(fs, dir)?;
    let n = graph.num_vertices();
    let symmetric = graph.is_symmetric();
    let header = |kind, part: usize, vertices: usize, links: u64| Header {
        kind,
        part: part as u32,
        parts: parts as u32,
        symmetric,
        users: n as u64,
        vertices: vertices as u64,
        links,
    };
    let path = vertices_path(dir);
    write_kpart(fs, &path, &header(KIND_VERTICES, 0, n, 0), |w| {
        w.write_all(bytemuck::cast_slice(graph.original_ids()))?;
        let degrees: Vec<u32> = (0..n as VertexId).map(|v| graph.out_degree(v)).collect();
        w.write_all(bytemuck::cast_slice(&degrees))
    })?;
    let mut owned: Vec<Vec<VertexId>> = vec![Vec::new(); parts];
    for v in 0..n as VertexId {
        owned[owner(v, parts)].push(v);
    }
    let mut part_links = Vec::with_capacity(parts);
    for (w, locals) in owned.iter().enumerate() {
        let links: u64 = locals.iter().map(|&v| graph.in_links(v).len() as u64).sum();
        let path = part_path(dir, w);
        write_kpart(fs, &path, &header(KIND_PART, w, locals.len(), links), |out| {
            out.write_all(bytemuck::cast_slice(locals))?;
            let degrees: Vec<u32> =
                locals.iter().map(|&v| graph.in_links(v).len() as u32).collect();
            out.write_all(bytemuck::cast_slice(&degrees))?;
            for &v in locals {
                out.write_all(bytemuck::cast_slice(graph.in_links(v)))?;
            }
            Ok(())
        })?;
        part_links.push(links);
        progress(w);
    }
    let meta = PartitionMeta {
        format: FORMAT.to_owned(),
        version: VERSION,
        parts,
        users: n as u64,
        edges,
        in_links: graph.num_in_links() as u64,
        directed: !symmetric,
        part_links,
        source: source.to_owned(),
    };
    let text = serde_json::to_string_pretty(&meta).expect("the meta serializes");
    let path = meta_path(dir);
    write_text_atomic(fs, &path, |w| writeln!(w, "{text}")).map_err(|e| io(&path, e))?;
    Ok(meta)
}

/// Makes `dir` ready for a new partition: created (and its entry synced in its parent), or
/// emptied of an old partition's files. What counts as one: a `meta.json` that reads as a
/// kith partition, or (a write that stopped before its `meta.json`) nothing but files with a
/// partition's names and their temporary names. Anything else is refused untouched.
fn prepare_dir(fs: &dyn Fs, dir: &Path) -> Result<()> {
    if !dir.exists() {
        std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        let parent = match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        fs.sync_dir(parent).map_err(|e| io(parent, e))?;
    }
    let entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| io(dir, e))?
        .collect::<io::Result<_>>()
        .map_err(|e| io(dir, e))?;
    if entries.is_empty() {
        return Ok(());
    }
    let names: Vec<String> =
        entries.iter().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    let complete = is_partition(dir) && super::read_meta(dir).is_ok();
    let leftovers = names.iter().all(|n| n != "meta.json" && is_partition_file(n));
    if !complete && !leftovers {
        return Err(invalid(
            dir,
            "the directory is not empty and holds no kith partition; refusing to write into it",
        ));
    }
    let meta = meta_path(dir);
    if meta.exists() {
        fs.remove_file(&meta).map_err(|e| io(&meta, e))?;
        fs.sync_dir(dir).map_err(|e| io(dir, e))?;
    }
    for (entry, name) in entries.iter().zip(&names) {
        if name != "meta.json" && is_partition_file(name) {
            fs.remove_file(&entry.path()).map_err(|e| io(&entry.path(), e))?;
        }
    }
    Ok(())
}

/// Whether `name` is one a partition's writer makes: `meta.json`, `vertices.kpart`,
/// `part-<w>.kpart`, or one of their temporary names (`.<name>.tmp<pid>`).
fn is_partition_file(name: &str) -> bool {
    let name = match name.strip_prefix('.').and_then(|n| n.rsplit_once(".tmp")) {
        Some((base, pid)) if !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => name,
    };
    let part = name
        .strip_prefix("part-")
        .and_then(|n| n.strip_suffix(".kpart"))
        .is_some_and(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()));
    part || name == "meta.json" || name == "vertices.kpart"
}

/// Writes one `.kpart` file atomically: the header, what `body` writes, and the xxh3 of
/// both.
fn write_kpart(
    fs: &dyn Fs,
    path: &Path,
    header: &Header,
    body: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<()> {
    let expected = header.file_len();
    write_atomic(fs, path, |w| {
        let mut hashing = Hashing { inner: w, hasher: Xxh3::new(), written: 0 };
        hashing.write_all(&header.encode())?;
        body(&mut hashing)?;
        let Hashing { inner, hasher, written } = hashing;
        assert_eq!(written + 8, expected, "{}: the sections match the header", path.display());
        inner.write_all(&hasher.digest().to_le_bytes())
    })
    .map_err(|e| io(path, e))
}

/// A writer that hashes and counts what passes through it.
struct Hashing<'a> {
    inner: &'a mut dyn Write,
    hasher: Xxh3,
    written: u64,
}

impl Write for Hashing<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
