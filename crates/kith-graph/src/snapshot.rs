//! The `.kgraph` binary snapshot: a versioned, checksummed, little-endian image of a [`Graph`]
//! that loads with a few large reads. The byte layout is documented in `docs/kgraph-format.md`.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use xxhash_rust::xxh3::{Xxh3, xxh3_64};

use crate::csr::{Csr, VertexId};
use crate::durable::{Fs, write_atomic};
use crate::error::{Error, Result};
use crate::graph::{Cleaning, Graph};

/// The first eight bytes of every snapshot.
pub const MAGIC: &[u8; 8] = b"KITHGRPH";
/// The snapshot version this build writes and the only one it reads.
pub const VERSION: u32 = 1;

// Sections are cast between typed vectors and their bytes as they are, which is the on-disk
// little-endian order only on a little-endian host.
#[cfg(target_endian = "big")]
compile_error!("the .kgraph reader and writer assume a little-endian host");

const HEADER_BYTES: usize = 128;
const FLAG_DIRECTED: u32 = 1;
/// Bytes read (and hashed) per call while loading a section.
const READ_PIECE: usize = 8 << 20;

struct Header {
    directed: bool,
    nodes: u64,
    out_entries: u64,
    in_entries: u64,
    cleaning: Cleaning,
    body_len: u64,
    body_checksum: u64,
}

impl Header {
    fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut h = [0u8; HEADER_BYTES];
        h[0..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&VERSION.to_le_bytes());
        let flags = if self.directed { FLAG_DIRECTED } else { 0 };
        h[12..16].copy_from_slice(&flags.to_le_bytes());
        let fields = [
            self.nodes,
            self.out_entries,
            self.in_entries,
            self.cleaning.self_loops_dropped,
            self.cleaning.duplicates_merged,
            self.body_len,
            self.body_checksum,
        ];
        for (i, f) in fields.iter().enumerate() {
            h[16 + 8 * i..24 + 8 * i].copy_from_slice(&f.to_le_bytes());
        }
        let check = xxh3_64(&h[..120]);
        h[120..128].copy_from_slice(&check.to_le_bytes());
        h
    }

    fn decode(h: &[u8; HEADER_BYTES], path: &Path) -> Result<Header> {
        if &h[0..8] != MAGIC {
            return Err(Error::snapshot(path, "not a .kgraph snapshot (bad magic bytes)"));
        }
        let version = u32::from_le_bytes(h[8..12].try_into().expect("4 bytes"));
        if version != VERSION {
            return Err(Error::snapshot(
                path,
                format!(
                    "unsupported .kgraph version {version} (this kith reads version {VERSION})"
                ),
            ));
        }
        let stored = u64::from_le_bytes(h[120..128].try_into().expect("8 bytes"));
        if stored != xxh3_64(&h[..120]) {
            return Err(Error::snapshot(path, "header checksum mismatch: the file is damaged"));
        }
        let field =
            |i: usize| u64::from_le_bytes(h[16 + 8 * i..24 + 8 * i].try_into().expect("8 bytes"));
        let flags = u32::from_le_bytes(h[12..16].try_into().expect("4 bytes"));
        Ok(Header {
            directed: flags & FLAG_DIRECTED != 0,
            nodes: field(0),
            out_entries: field(1),
            in_entries: field(2),
            cleaning: Cleaning { self_loops_dropped: field(3), duplicates_merged: field(4) },
            body_len: field(5),
            body_checksum: field(6),
        })
    }

    /// The body length the counts imply; a mismatch means a damaged header or file.
    fn implied_body_len(&self) -> Option<u64> {
        let csr = |entries: u64| -> Option<u64> {
            (self.nodes.checked_add(1)?.checked_mul(8)?)
                .checked_add(padded(entries.checked_mul(4)?))
        };
        let mut len = self.nodes.checked_mul(8)?.checked_add(csr(self.out_entries)?)?;
        if self.directed {
            len = len.checked_add(csr(self.in_entries)?)?;
        }
        Some(len)
    }
}

fn padded(bytes: u64) -> u64 {
    bytes.div_ceil(8) * 8
}

/// Writes `graph` to `path` as a snapshot through `fs`, with [`write_atomic`]: a crash leaves
/// either the old file or the complete new one.
///
/// # Errors
/// Any I/O error, with the path.
pub fn write(fs: &dyn Fs, graph: &Graph, path: &Path) -> Result<()> {
    let out = graph.out_csr();
    let inc = graph.is_directed().then(|| graph.in_csr());
    let mut sections: Vec<&[u8]> = vec![bytemuck::cast_slice(graph.original_ids())];
    for csr in std::iter::once(out).chain(inc) {
        sections.push(bytemuck::cast_slice(csr.offsets()));
        sections.push(bytemuck::cast_slice(csr.targets()));
    }

    let mut hasher = Xxh3::new();
    let mut body_len = 0u64;
    for s in &sections {
        hasher.update(s);
        let pad = padded(s.len() as u64) - s.len() as u64;
        hasher.update(&[0u8; 8][..pad as usize]);
        body_len += s.len() as u64 + pad;
    }
    let header = Header {
        directed: graph.is_directed(),
        nodes: graph.num_nodes() as u64,
        out_entries: out.num_entries() as u64,
        in_entries: inc.map_or(0, |c| c.num_entries() as u64),
        cleaning: graph.cleaning(),
        body_len,
        body_checksum: hasher.digest(),
    };

    write_atomic(fs, path, |w| {
        w.write_all(&header.encode())?;
        for s in &sections {
            w.write_all(s)?;
            let pad = padded(s.len() as u64) - s.len() as u64;
            w.write_all(&[0u8; 8][..pad as usize])?;
        }
        Ok(())
    })
    .map_err(|e| Error::io(path, e))
}

/// Reads a snapshot, verifying its checksums and the graph invariants.
///
/// # Errors
/// A file that is not a snapshot, of another version, truncated, damaged (checksum), or whose
/// contents break the graph invariants.
pub fn read(path: &Path) -> Result<Graph> {
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let file_len = file.metadata().map_err(|e| Error::io(path, e))?.len();
    let mut raw = [0u8; HEADER_BYTES];
    file.read_exact(&mut raw).map_err(|_| {
        Error::snapshot(
            path,
            format!("truncated: {file_len} bytes, less than the {HEADER_BYTES}-byte header"),
        )
    })?;
    let header = Header::decode(&raw, path)?;
    if header.implied_body_len() != Some(header.body_len)
        || file_len != HEADER_BYTES as u64 + header.body_len
    {
        return Err(Error::snapshot(
            path,
            format!(
                "size mismatch: the header describes {} body bytes but the file has {}",
                header.body_len,
                file_len.saturating_sub(HEADER_BYTES as u64)
            ),
        ));
    }
    if header.nodes > u64::from(VertexId::MAX) {
        return Err(Error::snapshot(path, "more vertices than dense ids can name"));
    }

    let mut reader = SectionReader { file: &mut file, hasher: Xxh3::new(), path };
    let n = header.nodes as usize;
    let ids: Vec<u64> = reader.read(n)?;
    let out = reader.read_csr(n, header.out_entries as usize)?;
    let inc =
        if header.directed { Some(reader.read_csr(n, header.in_entries as usize)?) } else { None };
    if reader.hasher.digest() != header.body_checksum {
        return Err(Error::snapshot(path, "body checksum mismatch: the file is damaged"));
    }

    let invalid = |what: String| Error::snapshot(path, format!("invalid contents: {what}"));
    if ids.windows(2).any(|w| w[0] >= w[1]) {
        return Err(invalid("original ids are not strictly ascending".into()));
    }
    for csr in std::iter::once(&out).chain(&inc) {
        csr.validate().map_err(invalid)?;
    }
    if !header.directed && out.num_entries() % 2 != 0 {
        return Err(invalid("an undirected graph with an odd number of adjacency entries".into()));
    }
    if inc.as_ref().is_some_and(|i| i.num_entries() != out.num_entries()) {
        return Err(invalid("in- and out-adjacency hold different numbers of edges".into()));
    }
    Ok(Graph::from_parts(header.directed, ids, out, inc, header.cleaning))
}

struct SectionReader<'a> {
    file: &'a mut File,
    hasher: Xxh3,
    path: &'a Path,
}

impl SectionReader<'_> {
    /// Reads `len` little-endian values straight into their final vector, hashing as it goes.
    fn read<T: bytemuck::Pod + Default + Clone>(&mut self, len: usize) -> Result<Vec<T>> {
        let mut values = vec![T::default(); len];
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut values);
        let pad = (padded(bytes.len() as u64) - bytes.len() as u64) as usize;
        for piece in bytes.chunks_mut(READ_PIECE) {
            self.file.read_exact(piece).map_err(|e| Error::io(self.path, e))?;
            self.hasher.update(piece);
        }
        let mut zeros = [0u8; 8];
        self.file.read_exact(&mut zeros[..pad]).map_err(|e| Error::io(self.path, e))?;
        self.hasher.update(&zeros[..pad]);
        if cfg!(target_endian = "big") {
            return Err(Error::snapshot(
                self.path,
                "snapshots are read on little-endian hosts only",
            ));
        }
        Ok(values)
    }

    fn read_csr(&mut self, n: usize, entries: usize) -> Result<Csr> {
        let offsets = self.read::<u64>(n + 1)?;
        let targets = self.read::<VertexId>(entries)?;
        Ok(Csr { offsets, targets })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(directed: bool) -> Graph {
        Graph::from_edges(
            vec![2, 5, 11, 40],
            directed,
            vec![(0, 1), (1, 2), (2, 0), (3, 1), (3, 3)],
        )
    }

    #[test]
    fn round_trips_both_kinds() -> Result<()> {
        let dir = tempfile::tempdir().unwrap();
        for directed in [false, true] {
            let path = dir.path().join(format!("g{directed}.kgraph"));
            let g = sample(directed);
            write(&crate::durable::StdFs, &g, &path)?;
            assert_eq!(read(&path)?, g);
        }
        Ok(())
    }

    #[test]
    fn rejects_damage_and_unknown_versions() -> Result<()> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.kgraph");
        write(&crate::durable::StdFs, &sample(true), &path)?;
        let good = std::fs::read(&path).unwrap();
        let expect = |bytes: &[u8], needle: &str| {
            std::fs::write(&path, bytes).unwrap();
            let err = read(&path).unwrap_err().to_string();
            assert!(err.contains(needle), "{err:?} lacks {needle:?}");
        };
        let mut flipped = good.clone();
        *flipped.last_mut().unwrap() ^= 1;
        expect(&flipped, "body checksum mismatch");
        let mut version = good.clone();
        version[8] = 9;
        expect(&version, "unsupported .kgraph version 9");
        let mut header = good.clone();
        header[20] ^= 1;
        expect(&header, "header checksum mismatch");
        expect(&good[..good.len() - 8], "size mismatch");
        expect(&good[..50], "truncated");
        expect(&[b'x'; 200], "bad magic");
        Ok(())
    }
}
