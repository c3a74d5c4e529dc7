//! Reading a partition: `meta.json`, `vertices.kpart`, and the parts a process owns, into
//! one [`InGraph`] holding every user but only those parts' in-links.

use std::fs::File;
use std::io::{BufReader, Read};
use std::ops::Range;
use std::path::{Path, PathBuf};

use kith_analytics::InGraph;
use kith_graph::VertexId;
use xxhash_rust::xxh3::Xxh3;

use super::{
    FORMAT, HEADER_BYTES, Header, KIND_PART, KIND_VERTICES, MAX_PARTS, PartitionMeta, VERSION,
    invalid, io, meta_path, part_path, vertices_path,
};
use crate::error::Result;
use crate::part::owner;

/// Bytes read (and hashed) per call.
const READ_PIECE: usize = 8 << 20;

/// Reads and checks `dir/meta.json`.
///
/// # Errors
/// [`crate::Error::Partition`] naming the file when it is missing, malformed or
/// inconsistent.
pub fn read_meta(dir: &Path) -> Result<PartitionMeta> {
    let path = meta_path(dir);
    if !dir.is_dir() {
        return Err(invalid(dir, "not a directory, so not a partition"));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| {
        invalid(&path, format!("{e}: not a partition (make one with `kith graph partition`)"))
    })?;
    let meta: PartitionMeta =
        serde_json::from_str(&text).map_err(|e| invalid(&path, format!("malformed: {e}")))?;
    let bad = |m: String| Err(invalid(&path, m));
    if meta.format != FORMAT {
        return bad(format!("format is {:?}, not {FORMAT:?}", meta.format));
    }
    if meta.version != VERSION {
        return bad(format!("version {} (this build reads {VERSION})", meta.version));
    }
    if meta.parts == 0 || meta.parts > MAX_PARTS {
        return bad(format!("parts is {} (1 to {MAX_PARTS})", meta.parts));
    }
    if meta.users >= u64::from(VertexId::MAX) {
        return bad(format!("{} users is more than a vertex id can name", meta.users));
    }
    if meta.part_links.len() != meta.parts {
        return bad(format!(
            "part_links has {} entries for {} parts",
            meta.part_links.len(),
            meta.parts
        ));
    }
    if meta.part_links.iter().try_fold(0u64, |s, &l| s.checked_add(l)) != Some(meta.in_links) {
        return bad(format!("part_links do not add up to in_links ({})", meta.in_links));
    }
    Ok(meta)
}

/// The graph as the workers of `parts` see it: every user's id and out-degree, and the
/// in-links of the users those parts own (the other users have none stored). With every
/// part, it is the whole graph.
///
/// # Errors
/// [`crate::Error::Partition`] naming the file for a missing, truncated, damaged or
/// inconsistent file; [`crate::Error::InvalidArgument`] for parts out of range.
pub fn read_parts(dir: &Path, meta: &PartitionMeta, parts: Range<usize>) -> Result<InGraph> {
    if parts.is_empty() || parts.end > meta.parts || meta.part_links.len() != meta.parts {
        return Err(crate::Error::InvalidArgument(format!(
            "parts {}..{} of a partition of {} parts",
            parts.start, parts.end, meta.parts
        )));
    }
    let n = meta.users as usize;
    let header = |kind, part: usize, vertices: u64, links: u64| Header {
        kind,
        part: part as u32,
        parts: meta.parts as u32,
        symmetric: !meta.directed,
        users: meta.users,
        vertices,
        links,
    };
    let path = vertices_path(dir);
    let mut file = KpartReader::open(&path, &header(KIND_VERTICES, 0, meta.users, 0))?;
    let ids = file.read_all::<u64>("original ids", n, |ids| {
        match ids.windows(2).position(|p| p[0] >= p[1]) {
            Some(i) => Err(format!("not strictly ascending at dense id {}", i + 1)),
            None => Ok(()),
        }
    })?;
    let mut sum = 0u64;
    let out_degree = file.read_all::<u32>("out-degrees", n, |piece| {
        sum += piece.iter().map(|&d| u64::from(d)).sum::<u64>();
        Ok(())
    })?;
    file.finish()?;
    if sum != meta.in_links {
        return Err(invalid(&path, format!("out-degrees add up to {sum}, not {}", meta.in_links)));
    }
    // Each part's own vertices and their in-degrees first, then one array for all their
    // in-links, which each part's lists are read straight into.
    let mut opened = Vec::new();
    let mut in_degree = vec![0u32; n];
    // How many users `owner` gives each part read, in one pass.
    let mut owned = vec![0u64; parts.len()];
    for v in 0..n as VertexId {
        let w = owner(v, meta.parts);
        if parts.contains(&w) {
            owned[w - parts.start] += 1;
        }
    }
    for w in parts.clone() {
        let path = part_path(dir, w);
        let expect = owned[w - parts.start];
        let mut file = KpartReader::open(&path, &header(KIND_PART, w, expect, meta.part_links[w]))?;
        let mut last: Option<VertexId> = None;
        let locals = file.read_all::<VertexId>("own vertices", expect as usize, |piece| {
            for &v in piece {
                if (v as usize) >= n || owner(v, meta.parts) != w || last.is_some_and(|l| l >= v) {
                    return Err(format!("vertex {v} is out of order or not this part's"));
                }
                last = Some(v);
            }
            Ok(())
        })?;
        let degrees = file.read_all::<u32>("in-degrees", locals.len(), |_| Ok(()))?;
        let links: u64 = degrees.iter().map(|&d| u64::from(d)).sum();
        if links != meta.part_links[w] {
            return Err(invalid(
                &path,
                format!("in-degrees add up to {links}, not {}", meta.part_links[w]),
            ));
        }
        for (&v, &d) in locals.iter().zip(&degrees) {
            in_degree[v as usize] = d;
        }
        opened.push((file, locals));
    }
    let mut offsets = Vec::with_capacity(n + 1);
    offsets.push(0u64);
    for &d in &in_degree {
        offsets.push(offsets[offsets.len() - 1] + u64::from(d));
    }
    drop(in_degree);
    let total = offsets[n] as usize;
    let mut sources: Vec<VertexId> = Vec::new();
    sources
        .try_reserve_exact(total)
        .map_err(|e| invalid(dir, format!("cannot allocate {total} in-links: {e}")))?;
    sources.resize(total, 0);
    for (mut file, locals) in opened {
        for &v in &locals {
            let range = offsets[v as usize] as usize..offsets[v as usize + 1] as usize;
            file.read_into("in-links", &mut sources[range], |list| {
                if list.iter().any(|&u| u as usize >= n) {
                    return Err(format!("an in-link of vertex {v} names no user"));
                }
                if list.windows(2).any(|p| p[0] >= p[1]) {
                    return Err(format!("the in-links of vertex {v} are not ascending"));
                }
                Ok(())
            })?;
        }
        file.finish()?;
    }
    Ok(InGraph::from_csr(offsets, sources, out_degree, ids, !meta.directed))
}

/// A `.kpart` file being read: its header checked against what the reader expects and its
/// length against the header before anything is allocated, every byte hashed.
struct KpartReader {
    path: PathBuf,
    file: BufReader<File>,
    hasher: Xxh3,
}

impl KpartReader {
    fn open(path: &Path, expect: &Header) -> Result<KpartReader> {
        let file = File::open(path).map_err(|e| io(path, e))?;
        let len = file.metadata().map_err(|e| io(path, e))?.len();
        let mut file = BufReader::with_capacity(1 << 20, file);
        let mut h = [0u8; HEADER_BYTES];
        file.read_exact(&mut h).map_err(|_| invalid(path, "shorter than a header"))?;
        let header = Header::decode(&h).map_err(|m| invalid(path, m))?;
        if header != *expect {
            return Err(invalid(
                path,
                format!("header {header:?} does not match meta.json (expected {expect:?})"),
            ));
        }
        if len != header.file_len() {
            return Err(invalid(
                path,
                format!(
                    "{len} bytes, but its header says {} (truncated or damaged)",
                    header.file_len()
                ),
            ));
        }
        let mut hasher = Xxh3::new();
        hasher.update(&h);
        Ok(KpartReader { path: path.to_path_buf(), file, hasher })
    }

    /// Reads `len` values of a section, each piece checked by `check`.
    fn read_all<T: bytemuck::Pod + Default>(
        &mut self,
        name: &str,
        len: usize,
        check: impl FnMut(&[T]) -> std::result::Result<(), String>,
    ) -> Result<Vec<T>> {
        let mut values = vec![T::default(); len];
        self.read_into(name, &mut values, check)?;
        Ok(values)
    }

    /// Fills `values` from the file in pieces, hashing and checking each.
    fn read_into<T: bytemuck::Pod>(
        &mut self,
        name: &str,
        values: &mut [T],
        mut check: impl FnMut(&[T]) -> std::result::Result<(), String>,
    ) -> Result<()> {
        let per_piece = (READ_PIECE / size_of::<T>()).max(1);
        for piece in values.chunks_mut(per_piece) {
            let bytes: &mut [u8] = bytemuck::cast_slice_mut(piece);
            self.file.read_exact(bytes).map_err(|e| io(&self.path, e))?;
            self.hasher.update(bytes);
        }
        // Checked whole (a list that crosses pieces is still one list).
        check(values).map_err(|m| invalid(&self.path, format!("{name}: {m}")))
    }

    /// Reads the checksum at the end and compares it with what was read.
    fn finish(mut self) -> Result<()> {
        let mut sum = [0u8; 8];
        self.file.read_exact(&mut sum).map_err(|e| io(&self.path, e))?;
        if u64::from_le_bytes(sum) != self.hasher.digest() {
            return Err(invalid(&self.path, "checksum mismatch: the file is damaged"));
        }
        Ok(())
    }
}
