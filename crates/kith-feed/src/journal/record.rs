//! The journal's record format, and a streaming reader that finds the records of a segment
//! again after damage.
//!
//! Record (format 2): `magic: 4 bytes | len: u32 LE | crc32(magic, len, payload): u32 LE |
//! payload`, where the payload is [`kith_store::Post::encode`]. Because the checksum covers
//! the magic and the length, no run of zeros is a valid record (a crash can leave zeros
//! where unsynced bytes were), and a reader that lost its place can search forward for the
//! magic and check a candidate record completely before trusting it (what LevelDB's log gets
//! from its fixed blocks). A false match needs a 32-bit checksum to agree by chance.
//!
//! Format 1, written by earlier versions, is `len: u32 LE | crc32(payload): u32 LE |
//! payload`; it is still read. A segment is in format 2 exactly when it starts with the
//! magic (a format-1 record starts with a length below 2^24, whose fourth byte is 0, and the
//! magic's is not). Format 1 has no magic to search for, so after damage every offset is a
//! candidate; a payload shorter than a post's 24-byte header is never valid, so zeros are
//! not a record there either.

use std::io::{self, Read};

/// Opens every format-2 record.
pub(crate) const MAGIC: [u8; 4] = [0xC6, b'k', b'j', 0x02];
/// Magic, length and checksum.
pub(crate) const HEADER: usize = 12;
/// The largest payload accepted: a post's content is at most 64 KiB, so anything far
/// larger is damage, and a reader never buffers more than this (plus a read chunk).
pub(crate) const MAX_PAYLOAD: usize = 1 << 20;
/// A post's encoded header (id, author, time): no shorter payload is a post.
const MIN_PAYLOAD: usize = 24;
/// Bytes read from the file at a time.
const CHUNK: usize = 64 << 10;

/// Appends the record of `payload` to `out`.
pub(crate) fn encode(payload: &[u8], out: &mut Vec<u8>) {
    let len = (payload.len() as u32).to_le_bytes();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&len);
    out.extend_from_slice(&checksum(len, payload).to_le_bytes());
    out.extend_from_slice(payload);
}

fn checksum(len: [u8; 4], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&MAGIC);
    h.update(&len);
    h.update(payload);
    h.finalize()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    V1,
    V2,
}

/// What the reader found next.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// A valid record's payload at byte `at`.
    Record { at: u64, payload: Vec<u8> },
    /// `bytes` bytes at byte `at` that are no valid record. `resumed`: valid records follow
    /// (damage in the middle); otherwise the bytes run to the end of the segment (a torn
    /// tail, or damage at the end).
    Skipped { at: u64, bytes: u64, resumed: bool },
    /// The end of the segment.
    End,
}

/// Reads a segment's records one at a time, holding at most one record and a read chunk.
pub(crate) struct Reader<R> {
    src: R,
    buf: Vec<u8>,
    /// The file offset of `buf[0]`.
    start: u64,
    /// The file offset of the next record.
    pos: u64,
    eof: bool,
    format: Option<Format>,
    /// The largest the buffer has been, in bytes.
    pub(crate) peak: usize,
}

impl<R: Read> Reader<R> {
    pub(crate) fn new(src: R) -> Reader<R> {
        Reader { src, buf: Vec::new(), start: 0, pos: 0, eof: false, format: None, peak: 0 }
    }

    /// Makes the bytes up to file offset `end` available if the file has them; keeps only
    /// bytes from `keep` on.
    fn fill(&mut self, keep: u64, end: u64) -> io::Result<bool> {
        while self.start + (self.buf.len() as u64) < end && !self.eof {
            // Drops what is behind `keep` only when more must be read, so that a search
            // moving one byte at a time does not shift the buffer at every byte.
            let drop = (keep - self.start) as usize;
            self.buf.drain(..drop);
            self.start = keep;
            let have = self.buf.len();
            self.buf.resize(have + CHUNK, 0);
            let n = loop {
                match self.src.read(&mut self.buf[have..]) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    other => break other,
                }
            };
            let n = match n {
                Ok(n) => n,
                Err(e) => {
                    self.buf.truncate(have);
                    return Err(e);
                }
            };
            self.buf.truncate(have + n);
            self.peak = self.peak.max(self.buf.capacity());
            self.eof = n == 0;
        }
        Ok(self.start + self.buf.len() as u64 >= end)
    }

    fn bytes(&self, at: u64, n: usize) -> &[u8] {
        let from = (at - self.start) as usize;
        &self.buf[from..from + n]
    }

    /// The payload length of a valid record at `at`, if there is one.
    fn valid_at(&mut self, keep: u64, at: u64) -> io::Result<Option<usize>> {
        if !self.fill(keep, at + HEADER as u64)? {
            return Ok(None);
        }
        let word = |b: &[u8], i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4"));
        let (len, crc, payload_at) = match self.format {
            Some(Format::V2) => {
                let h = self.bytes(at, HEADER);
                if h[..4] != MAGIC {
                    return Ok(None);
                }
                (word(h, 4) as usize, word(h, 8), at + HEADER as u64)
            }
            _ => {
                let h = self.bytes(at, 8);
                (word(h, 0) as usize, word(h, 4), at + 8)
            }
        };
        if !(MIN_PAYLOAD..=MAX_PAYLOAD).contains(&len)
            || !self.fill(keep, payload_at + len as u64)?
        {
            return Ok(None);
        }
        let payload = self.bytes(payload_at, len);
        let ok = match self.format {
            Some(Format::V2) => checksum((len as u32).to_le_bytes(), payload) == crc,
            _ => crc32fast::hash(payload) == crc,
        };
        Ok(ok.then_some(len))
    }

    fn header_len(&self) -> u64 {
        if self.format == Some(Format::V2) { HEADER as u64 } else { 8 }
    }

    /// The next record, or the bytes skipped to reach it, or the end.
    pub(crate) fn next(&mut self) -> io::Result<Step> {
        if self.format.is_none() {
            if !self.fill(0, 1)? {
                return Ok(Step::End);
            }
            let starts_v2 = self.fill(0, 4)? && self.bytes(0, 4) == MAGIC;
            self.format = Some(if starts_v2 { Format::V2 } else { Format::V1 });
        }
        let at = self.pos;
        if !self.fill(at, at + 1)? {
            return Ok(Step::End);
        }
        if let Some(len) = self.valid_at(at, at)? {
            let from = at + self.header_len();
            let payload = self.bytes(from, len).to_vec();
            self.pos = from + len as u64;
            return Ok(Step::Record { at, payload });
        }
        // Damage: search forward for the next valid record.
        let mut q = at + 1;
        loop {
            if !self.fill(q, q + 1)? {
                self.pos = q;
                return Ok(Step::Skipped { at, bytes: q - at, resumed: false });
            }
            if self.valid_at(q, q)?.is_some() {
                self.pos = q;
                return Ok(Step::Skipped { at, bytes: q - at, resumed: true });
            }
            q += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(i: u8) -> Vec<u8> {
        vec![i; 30 + usize::from(i)]
    }

    fn read_all(bytes: &[u8]) -> Vec<Step> {
        let mut r = Reader::new(bytes);
        let mut out = Vec::new();
        loop {
            match r.next().unwrap() {
                Step::End => return out,
                s => out.push(s),
            }
        }
    }

    #[test]
    fn zeros_are_no_record_and_damage_is_skipped_to_the_next_record() {
        let mut seg = Vec::new();
        for i in 0..3 {
            encode(&payload(i), &mut seg);
        }
        let second = (HEADER + payload(0).len()) as u64;
        seg[second as usize + HEADER + 3] ^= 1;
        seg.extend_from_slice(&[0; 512]);
        let steps = read_all(&seg);
        assert_eq!(steps.len(), 4, "{steps:?}");
        assert_eq!(steps[0], Step::Record { at: 0, payload: payload(0) });
        let third = second + (HEADER + payload(1).len()) as u64;
        assert_eq!(steps[1], Step::Skipped { at: second, bytes: third - second, resumed: true });
        assert_eq!(steps[2], Step::Record { at: third, payload: payload(2) });
        assert!(matches!(steps[3], Step::Skipped { bytes: 512, resumed: false, .. }));
        assert!(read_all(&[0; 512]).iter().all(|s| !matches!(s, Step::Record { .. })));
    }

    #[test]
    fn format_1_segments_are_still_read() {
        let mut seg = Vec::new();
        for i in 0..2 {
            let p = payload(i);
            seg.extend_from_slice(&(p.len() as u32).to_le_bytes());
            seg.extend_from_slice(&crc32fast::hash(&p).to_le_bytes());
            seg.extend_from_slice(&p);
        }
        seg.extend_from_slice(&[0; 100]);
        let steps = read_all(&seg);
        assert_eq!(steps[0], Step::Record { at: 0, payload: payload(0) });
        assert!(matches!(&steps[1], Step::Record { payload: p, .. } if *p == payload(1)));
        assert!(matches!(steps[2], Step::Skipped { bytes: 100, resumed: false, .. }));
    }
}
