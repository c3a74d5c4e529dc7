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
use crate::snapshot_check::{check_ids, check_no_self_loops, check_symmetric, check_transpose};

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
/// Header bytes after the seven fields and before the header checksum: zero in version 1.
const RESERVED: std::ops::Range<usize> = 72..120;
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
        if flags & !FLAG_DIRECTED != 0 {
            return Err(Error::snapshot(
                path,
                format!("header field flags: unknown bits {:#x} set", flags & !FLAG_DIRECTED),
            ));
        }
        if let Some(at) = h[RESERVED].iter().position(|&b| b != 0) {
            return Err(Error::snapshot(
                path,
                format!("header byte {}: reserved, must be zero", RESERVED.start + at),
            ));
        }
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
                .checked_add(checked_padded(entries.checked_mul(4)?)?)
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

/// [`padded`] for lengths read from a file, `None` where it would overflow.
fn checked_padded(bytes: u64) -> Option<u64> {
    bytes.div_ceil(8).checked_mul(8)
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

    let n = header.nodes as usize;
    let mut reader = SectionReader { file: &mut file, hasher: Xxh3::new(), path };
    let ids: Vec<u64> = reader.read("original ids", n, check_ids)?;
    let out = reader.read_csr("out-adjacency", n, header.out_entries)?;
    let inc = if header.directed {
        Some(reader.read_csr("in-adjacency", n, header.in_entries)?)
    } else {
        None
    };
    if reader.hasher.digest() != header.body_checksum {
        return Err(Error::snapshot(path, "body checksum mismatch: the file is damaged"));
    }
    // A checksum can be forged as easily as the contents: the structure is checked too.
    let invalid = |what: String| Error::snapshot(path, format!("invalid contents: {what}"));
    for (name, csr) in
        std::iter::once(("out-adjacency", &out)).chain(inc.iter().map(|c| ("in-adjacency", c)))
    {
        csr.validate().map_err(|e| invalid(format!("{name}: {e}")))?;
        check_no_self_loops(csr).map_err(|e| invalid(format!("{name}: {e}")))?;
    }
    match &inc {
        None => check_symmetric(&out)
            .map_err(|e| invalid(format!("out-adjacency of an undirected graph: {e}")))?,
        Some(inc) => {
            if inc.num_entries() != out.num_entries() {
                return Err(invalid(
                    "in- and out-adjacency hold different numbers of edges".into(),
                ));
            }
            check_transpose(&out, inc).map_err(|e| {
                invalid(format!("in-adjacency is not the out-adjacency reversed: {e}"))
            })?;
        }
    }
    Ok(Graph::from_parts(header.directed, ids, out, inc, header.cleaning))
}

struct SectionReader<'a> {
    file: &'a mut File,
    hasher: Xxh3,
    path: &'a Path,
}

impl SectionReader<'_> {
    /// Reads the section `name` of `len` little-endian values, hashing as it goes, each piece
    /// handed to `check` with the value before it. The vector holds the first piece, and only
    /// once that has passed its check is it reserved whole ([`read`] has checked that the
    /// file holds every section the header claims), a failed reservation being an error: so a
    /// forged header over a sparse file is refused by what is read, not by allocating what it
    /// claims, and a real section is not copied as it grows (growing it by doubling took
    /// several times as long as reading a 35 M-edge graph).
    fn read<T: bytemuck::Pod + Default + Clone>(
        &mut self,
        name: &str,
        len: usize,
        mut check: impl FnMut(&[T], Option<&T>) -> Result<(), String>,
    ) -> Result<Vec<T>> {
        let size = std::mem::size_of::<T>();
        let per_piece = READ_PIECE / size;
        let mut values: Vec<T> = Vec::new();
        while values.len() < len {
            let take = per_piece.min(len - values.len());
            let room = if values.is_empty() { take } else { len - values.len() };
            values.try_reserve_exact(room).map_err(|e| {
                Error::snapshot(
                    self.path,
                    format!("section {name}: cannot allocate {len} values: {e}"),
                )
            })?;
            let at = values.len();
            values.resize(at + take, T::default());
            let piece: &mut [u8] = bytemuck::cast_slice_mut(&mut values[at..]);
            self.file.read_exact(piece).map_err(|e| Error::io(self.path, e))?;
            self.hasher.update(piece);
            let (before, piece) = values.split_at(at);
            check(piece, before.last()).map_err(|e| {
                Error::snapshot(self.path, format!("invalid contents: {name}: {e}"))
            })?;
        }
        let bytes = len * size;
        let pad = (padded(bytes as u64) - bytes as u64) as usize;
        let mut zeros = [0u8; 8];
        self.file.read_exact(&mut zeros[..pad]).map_err(|e| Error::io(self.path, e))?;
        self.hasher.update(&zeros[..pad]);
        Ok(values)
    }

    /// Reads a CSR section: offsets (from 0, never decreasing, at most `entries`) checked as
    /// they come, and only then the `entries` targets.
    fn read_csr(&mut self, name: &str, n: usize, entries: u64) -> Result<Csr> {
        let offsets = self.read::<u64>(name, n + 1, |piece, before| {
            let mut prev = before.copied();
            for (i, &o) in piece.iter().enumerate() {
                match prev {
                    None if o != 0 => return Err("offsets do not start at 0".into()),
                    Some(p) if o < p => {
                        return Err(format!("offsets decrease (entry {i} of a piece)"));
                    }
                    _ if o > entries => {
                        return Err(format!(
                            "offset {o} beyond the {entries} entries of the header"
                        ));
                    }
                    _ => prev = Some(o),
                }
            }
            Ok(())
        })?;
        if offsets.last() != Some(&entries) {
            return Err(Error::snapshot(
                self.path,
                format!(
                    "invalid contents: {name}: offsets do not end at the header's {entries} entries"
                ),
            ));
        }
        // Their number is now known to be what the offsets say; they are checked after the
        // body checksum, with the rest of the structure.
        let targets = self.read::<VertexId>(name, entries as usize, |_, _| Ok(()))?;
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

    /// Writes a snapshot of the given sections with valid checksums, whatever they hold:
    /// what a forger can do. `patch` edits the header before its checksum is computed.
    fn forge(
        path: &Path,
        nodes: u64,
        ids: &[u64],
        csrs: &[(&[u64], &[VertexId])],
        patch: impl FnOnce(&mut [u8; HEADER_BYTES]),
    ) {
        let mut body = Vec::new();
        body.extend_from_slice(bytemuck::cast_slice(ids));
        for (offsets, targets) in csrs {
            body.extend_from_slice(bytemuck::cast_slice(offsets));
            body.extend_from_slice(bytemuck::cast_slice(targets));
            body.resize(padded(body.len() as u64) as usize, 0);
        }
        let header = Header {
            directed: csrs.len() == 2,
            nodes,
            out_entries: csrs[0].1.len() as u64,
            in_entries: csrs.get(1).map_or(0, |c| c.1.len() as u64),
            cleaning: Cleaning::default(),
            body_len: body.len() as u64,
            body_checksum: xxh3_64(&body),
        };
        let mut h = header.encode();
        patch(&mut h);
        let check = xxh3_64(&h[..120]);
        h[120..128].copy_from_slice(&check.to_le_bytes());
        std::fs::write(path, [&h[..], &body].concat()).unwrap();
    }

    #[test]
    fn forged_checksums_over_bad_structure_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.kgraph");
        let ids = [1u64, 2, 3];
        let expect = |needle: &str| {
            let err = read(&path).unwrap_err().to_string();
            assert!(err.starts_with(&path.display().to_string()), "{err}");
            assert!(err.contains(needle), "{err:?} lacks {needle:?}");
        };
        // Undirected, but 0 -> 1 without 1 -> 0 (and an even count: 0->1, 0->2, 2->0, 2->1).
        forge(&path, 3, &ids, &[(&[0, 2, 2, 4], &[1, 2, 0, 1])], |_| {});
        expect("the edge 0 -> 1 has no 1 -> 0");
        // Every entry above the diagonal mirrored, but two below it without a mirror.
        forge(&path, 4, &[1, 2, 3, 4], &[(&[0, 1, 2, 3, 4], &[1, 0, 0, 0])], |_| {});
        expect("1 entries u -> v with u < v but 3 with u > v");
        // A self loop on vertex 1, symmetric otherwise.
        forge(&path, 3, &ids, &[(&[0, 1, 3, 4], &[1, 0, 1, 1])], |_| {});
        expect("vertex 1 is its own neighbour");
        // Directed: the in-adjacency is not the out-adjacency reversed.
        forge(&path, 3, &ids, &[(&[0, 1, 1, 1], &[1]), (&[0, 0, 0, 1], &[0])], |_| {});
        expect("in-adjacency is not the out-adjacency reversed");
        // Offsets beyond the entries.
        forge(&path, 3, &ids, &[(&[0, 9, 2, 2], &[1, 0])], |_| {});
        expect("offset 9 beyond the 2 entries");
        // Unknown flags and reserved bytes.
        forge(&path, 3, &ids, &[(&[0, 1, 2, 2], &[1, 0])], |h| h[13] = 1);
        expect("header field flags: unknown bits 0x100 set");
        forge(&path, 3, &ids, &[(&[0, 1, 2, 2], &[1, 0])], |h| h[100] = 7);
        expect("header byte 100: reserved, must be zero");
        // An entry count whose padded byte length overflows (found by fuzzing: it panicked
        // with overflow checks on, and without them wrapped to a length the file matched).
        forge(&path, 3, &ids, &[(&[0, 0, 0, 0], &[])], |h| {
            h[24..32].copy_from_slice(&0x3fff_ffff_ffff_ffffu64.to_le_bytes());
        });
        expect("size mismatch");
        // And the same, untouched, reads.
        forge(&path, 3, &ids, &[(&[0, 1, 2, 2], &[1, 0])], |_| {});
        assert_eq!(read(&path).unwrap().num_edges(), 1);
    }

    /// A sparse file whose header claims four billion vertices (32 GB of ids): the reader
    /// must refuse it by what it reads, not allocate what it claims. Run in a child process
    /// limited to 1 GB of address space, so an allocation of the claim fails there.
    #[test]
    fn a_sparse_snapshot_claiming_billions_is_refused_without_allocating() {
        if let Ok(path) = std::env::var("KITH_SPARSE_SNAPSHOT") {
            let err = read(Path::new(&path)).unwrap_err();
            println!("refused: {err}");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sparse.kgraph");
        let nodes: u64 = 4_000_000_000;
        let header = Header {
            directed: false,
            nodes,
            out_entries: 0,
            in_entries: 0,
            cleaning: Cleaning::default(),
            body_len: nodes * 8 + (nodes + 1) * 8,
            body_checksum: 0,
        };
        assert_eq!(header.implied_body_len(), Some(header.body_len));
        let file = File::create(&path).unwrap();
        std::io::Write::write_all(&mut &file, &header.encode()).unwrap();
        file.set_len(HEADER_BYTES as u64 + header.body_len).unwrap();
        let me = std::env::current_exe().unwrap();
        let out = std::process::Command::new("prlimit")
            .arg("--as=1000000000")
            .arg(me)
            .args(["--exact", "snapshot::tests::a_sparse_snapshot_claiming_billions_is_refused_without_allocating"])
            .args(["--nocapture", "--test-threads=1"])
            .env("KITH_SPARSE_SNAPSHOT", &path)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "the child failed ({}): {text}", out.status);
        assert!(text.contains("invalid contents: original ids: not strictly ascending"), "{text}");
    }
}
