//! A graph split ahead of time into the parts of LFGraph's hash partitioning, so that a
//! process of a cluster reads only its own workers' in-links rather than the whole graph.
//!
//! A partition is a directory (the byte layout is in `docs/partition-format.md`):
//! - `meta.json`: the part count, users, edges, in-links, direction, and the in-links of
//!   each part. Written last, so a directory without it is not a partition.
//! - `vertices.kpart`: every user's original id and whole-graph out-degree, by dense id
//!   (every process needs them: a replica's out-degree, the ids of the report).
//! - `part-<w>.kpart`, one per worker `w`: the vertices [`owner`](crate::part) assigns to
//!   `w` (ascending dense id), their in-degrees, and their in-links as dense ids.
//!
//! Each `.kpart` file has a 64-byte header (magic, version, kind, part, parts, counts) and
//! ends with the xxh3 of everything before it. A reader checks the header against
//! `meta.json` and the file's length before allocating, every value as it reads, and the
//! checksum at the end, and names the file and what is wrong.

mod read;
mod write;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use read::{read_meta, read_parts};
pub use write::write_partition;

use crate::error::Error;

/// The first eight bytes of every `.kpart` file.
const MAGIC: &[u8; 8] = b"KITHPART";
/// The version this build writes and the only one it reads.
const VERSION: u32 = 1;
const HEADER_BYTES: usize = 64;
const TRAILER_BYTES: u64 = 8;
/// The `kind` field of `vertices.kpart`.
const KIND_VERTICES: u32 = 1;
/// The `kind` field of `part-<w>.kpart`.
const KIND_PART: u32 = 2;
/// `meta.json`'s `format`.
const FORMAT: &str = "kith-partition";
/// The most parts a partition may have (workers of one run).
pub(crate) const MAX_PARTS: usize = 1 << 16;

/// What `meta.json` says of a partition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionMeta {
    /// Always `kith-partition`.
    pub format: String,
    /// The format version.
    pub version: u32,
    /// Parts: the workers (processes × threads) of the runs that read it.
    pub parts: usize,
    /// Users (vertices).
    pub users: u64,
    /// Edges of the graph it was made from (friendships count once).
    pub edges: u64,
    /// In-link entries over all parts (an undirected graph's edges count twice).
    pub in_links: u64,
    /// Whether edge direction was kept; an undirected partition's in-links are its
    /// out-links too.
    pub directed: bool,
    /// In-link entries of each part.
    pub part_links: Vec<u64>,
    /// The graph file it was made from, for the reader's information.
    pub source: String,
}

/// The file of part `w` in `dir`.
pub fn part_path(dir: &Path, w: usize) -> PathBuf {
    dir.join(format!("part-{w}.kpart"))
}

fn vertices_path(dir: &Path) -> PathBuf {
    dir.join("vertices.kpart")
}

fn meta_path(dir: &Path) -> PathBuf {
    dir.join("meta.json")
}

/// Whether `dir` is a partition (a directory with `meta.json`).
pub fn is_partition(dir: &Path) -> bool {
    dir.is_dir() && meta_path(dir).is_file()
}

/// The header of a `.kpart` file.
#[derive(Debug, PartialEq, Eq)]
struct Header {
    kind: u32,
    /// The part (0 for `vertices.kpart`).
    part: u32,
    parts: u32,
    symmetric: bool,
    users: u64,
    /// Vertices in the file: every user in `vertices.kpart`, the part's own in a part.
    vertices: u64,
    /// In-link entries (0 in `vertices.kpart`).
    links: u64,
}

impl Header {
    fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut h = [0u8; HEADER_BYTES];
        h[0..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&VERSION.to_le_bytes());
        h[12..16].copy_from_slice(&self.kind.to_le_bytes());
        h[16..20].copy_from_slice(&self.part.to_le_bytes());
        h[20..24].copy_from_slice(&self.parts.to_le_bytes());
        h[24..28].copy_from_slice(&u32::from(self.symmetric).to_le_bytes());
        h[32..40].copy_from_slice(&self.users.to_le_bytes());
        h[40..48].copy_from_slice(&self.vertices.to_le_bytes());
        h[48..56].copy_from_slice(&self.links.to_le_bytes());
        h
    }

    fn decode(h: &[u8; HEADER_BYTES]) -> Result<Header, String> {
        let u32_at = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().expect("4 bytes"));
        let u64_at = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().expect("8 bytes"));
        if &h[0..8] != MAGIC {
            return Err("not a kith partition file (bad magic)".into());
        }
        if u32_at(8) != VERSION {
            return Err(format!("format version {} (this build reads {VERSION})", u32_at(8)));
        }
        let flags = u32_at(24);
        if flags > 1 || h[28..32] != [0; 4] || h[56..64] != [0; 8] {
            return Err("unknown flags or reserved bytes set in the header".into());
        }
        Ok(Header {
            kind: u32_at(12),
            part: u32_at(16),
            parts: u32_at(20),
            symmetric: flags == 1,
            users: u64_at(32),
            vertices: u64_at(40),
            links: u64_at(48),
        })
    }

    /// The file's whole length: header, sections, checksum (saturating: counts from a
    /// damaged `meta.json` must not overflow, only fail to match the file).
    fn file_len(&self) -> u64 {
        let body = if self.kind == KIND_VERTICES {
            self.vertices.saturating_mul(12)
        } else {
            self.vertices.saturating_mul(8).saturating_add(self.links.saturating_mul(4))
        };
        body.saturating_add(HEADER_BYTES as u64 + TRAILER_BYTES)
    }
}

fn invalid(path: &Path, message: impl Into<String>) -> Error {
    Error::Partition { path: path.to_path_buf(), message: message.into() }
}

fn io(path: &Path, source: std::io::Error) -> Error {
    Error::Io { path: path.to_path_buf(), source }
}

#[cfg(test)]
mod tests;
