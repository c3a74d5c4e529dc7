//! The files a local job writes: spill runs, merge passes and round outputs all hold
//! records `key: u64, len: u32, len × u32`, little-endian, one after another; and the reduce
//! side's sink that writes a round's output.

use std::io::{BufWriter, Read, Write};
use std::path::PathBuf;

use super::contract::Emit;
use super::io::Tracked;

/// A file of records: `key: u64, len: u32, len × u32`, little-endian.
#[derive(Debug)]
pub(crate) struct RecordFile {
    pub(super) path: PathBuf,
}

/// The reduce side's sink: the round's output file.
pub(super) struct Output {
    pub(super) writer: BufWriter<Tracked>,
    pub(super) path: PathBuf,
    pub(super) records: u64,
    pub(super) error: Option<std::io::Error>,
}

impl Emit for Output {
    fn emit(&mut self, key: u64, value: &[u32]) {
        if self.error.is_none()
            && let Err(e) = write_record(&mut self.writer, key, value)
        {
            self.error = Some(e);
        }
        self.records += 1;
    }
}

/// Appends one record to `out`.
pub(super) fn write_record(out: &mut impl Write, key: u64, value: &[u32]) -> std::io::Result<()> {
    out.write_all(&key.to_le_bytes())?;
    out.write_all(&(value.len() as u32).to_le_bytes())?;
    if cfg!(target_endian = "little") {
        out.write_all(bytemuck::cast_slice(value))
    } else {
        value.iter().try_for_each(|v| out.write_all(&v.to_le_bytes()))
    }
}

/// Reads the next record into `value`; `None` at the end of the file.
pub(super) fn read_record(
    input: &mut impl Read,
    value: &mut Vec<u32>,
) -> std::io::Result<Option<u64>> {
    let mut head = [0u8; 12];
    match input.read_exact(&mut head[..8]) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    input.read_exact(&mut head[8..])?;
    let key = u64::from_le_bytes(head[..8].try_into().expect("8 bytes"));
    let len = u32::from_le_bytes(head[8..].try_into().expect("4 bytes")) as usize;
    value.resize(len, 0);
    input.read_exact(bytemuck::cast_slice_mut(value))?;
    for v in value.iter_mut() {
        *v = u32::from_le(*v);
    }
    Ok(Some(key))
}
