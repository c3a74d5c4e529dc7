//! Streaming, parallel parsing of one text edge list.
//!
//! A reader thread cuts the (possibly decompressed) byte stream into chunks of whole lines and
//! numbers them; worker threads parse chunks as they come. With gzip input this overlaps
//! decompression with parsing, which is what two cores can do for an import.

use std::io::{BufRead, Read};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, mpsc};

use super::format::Format;
use super::parse::{IdBounds, LineError, Separator, parse_line, parse_lines, quoted};
use crate::error::{Error, Result};

const CHUNK_BYTES: usize = 4 << 20;
/// The longest line an edge list may have: far more than any edge line needs, and what
/// bounds the memory a file without line breaks can take (a chunk and one line).
pub(crate) const MAX_LINE_BYTES: usize = 1 << 20;

/// The edges of one text file, in original ids, as they were listed.
#[derive(Debug, Default)]
pub(crate) struct RawEdges {
    /// One pair per data line, self-loops and duplicates included: an id that only has a
    /// self-loop is still a vertex.
    pub pairs: Vec<(u64, u64)>,
    /// The number of data lines (comments, blank lines and headers excluded).
    pub data_lines: u64,
}

/// What the first lines of a file declared.
#[derive(Debug, Default)]
struct Prologue {
    bounds: Option<IdBounds>,
    declared_entries: Option<u64>,
    lines_consumed: u64,
    pairs: Vec<(u64, u64)>,
}

/// Parses a whole text edge list of `format` from `reader`. `name` is what errors call the file.
pub(crate) fn parse_text(
    mut reader: Box<dyn BufRead + Send + '_>,
    name: &Path,
    format: Format,
    compressed: bool,
) -> Result<RawEdges> {
    let sep = if format == Format::Csv { Separator::Comma } else { Separator::Whitespace };
    let prologue = read_prologue(&mut reader, name, format, compressed)?;
    let mut raw = parse_body(reader, name, sep, &prologue, compressed)?;
    raw.data_lines += prologue.pairs.len() as u64;
    raw.pairs.extend(prologue.pairs);
    if let Some(declared) = prologue.declared_entries
        && declared != raw.data_lines
    {
        return Err(Error::input(
            name,
            format!(
                "the MatrixMarket size line declares {declared} entries, but the file has {}",
                raw.data_lines
            ),
        ));
    }
    Ok(raw)
}

/// Handles what comes before the data lines: the MatrixMarket banner and size line, or a CSV
/// header row. A first line that turns out to be data is parsed here, not pushed back.
fn read_prologue(
    reader: &mut Box<dyn BufRead + Send + '_>,
    name: &Path,
    format: Format,
    compressed: bool,
) -> Result<Prologue> {
    let mut prologue = Prologue::default();
    let mut line = Vec::new();
    let mut next_line = |p: &mut Prologue, line: &mut Vec<u8>| -> Result<bool> {
        line.clear();
        let n = (&mut *reader)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', line)
            .map_err(|e| read_error(name, e, p.lines_consumed, compressed))?;
        p.lines_consumed += u64::from(n > 0);
        if line.len() > MAX_LINE_BYTES {
            return Err(Error::Parse {
                path: name.to_path_buf(),
                line: p.lines_consumed,
                message: long_line(),
            });
        }
        Ok(n > 0)
    };
    let parse_err = |line_no: u64, message: String| Error::Parse {
        path: name.to_path_buf(),
        line: line_no,
        message,
    };
    match format {
        Format::Mtx => {
            // The banner must be the very first line; without one the file is plain pairs.
            if !next_line(&mut prologue, &mut line)? {
                return Ok(prologue);
            }
            if !line.starts_with(b"%%MatrixMarket") {
                let sep = Separator::Whitespace;
                if let Some(pair) = parse_line(&line, sep).map_err(|m| parse_err(1, m))? {
                    prologue.pairs.push(pair);
                }
                return Ok(prologue);
            }
            let banner = String::from_utf8_lossy(&line).to_lowercase();
            let words: Vec<&str> = banner.split_whitespace().collect();
            if words.get(1) != Some(&"matrix") || words.get(2) != Some(&"coordinate") {
                return Err(parse_err(
                    1,
                    format!(
                        "only 'matrix coordinate' MatrixMarket files hold edge lists, found {}",
                        quoted(&line)
                    ),
                ));
            }
            while next_line(&mut prologue, &mut line)? {
                let text = String::from_utf8_lossy(&line);
                let text = text.trim();
                if text.is_empty() || text.starts_with('%') {
                    continue;
                }
                let nums: Vec<u64> =
                    text.split_whitespace().map_while(|w| w.parse().ok()).collect();
                let [rows, cols, entries] = nums[..] else {
                    return Err(parse_err(
                        prologue.lines_consumed,
                        format!(
                            "expected the MatrixMarket size line 'rows cols entries', found {}",
                            quoted(&line)
                        ),
                    ));
                };
                prologue.bounds = Some(IdBounds {
                    min: 1,
                    max: rows.max(cols),
                    why: "MatrixMarket ids run from 1 to the declared size",
                });
                prologue.declared_entries = Some(entries);
                break;
            }
        }
        Format::Csv => {
            while next_line(&mut prologue, &mut line)? {
                match parse_line(&line, Separator::Comma) {
                    Ok(None) => continue,
                    Ok(Some(pair)) => prologue.pairs.push(pair),
                    Err(_) => {} // The header row.
                }
                break;
            }
        }
        _ => {}
    }
    Ok(prologue)
}

fn parse_body(
    reader: Box<dyn BufRead + Send + '_>,
    name: &Path,
    sep: Separator,
    prologue: &Prologue,
    compressed: bool,
) -> Result<RawEdges> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8);
    let (tx, rx) = mpsc::sync_channel::<(Vec<u8>, u64)>(workers * 2);
    let rx = Mutex::new(rx);
    let failed = AtomicBool::new(false);
    let first_line = prologue.lines_consumed + 1;
    let bounds = prologue.bounds;

    std::thread::scope(|scope| {
        let failed_ref = &failed;
        // The sender moves into the reader thread, so the channel closes when it ends.
        let reader_thread = scope.spawn(move || {
            chunk_lines(reader, first_line, |chunk, line| {
                !failed_ref.load(Ordering::Relaxed) && tx.send((chunk, line)).is_ok()
            })
        });
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| -> Result<RawEdges, LineError> {
                    let mut raw = RawEdges::default();
                    let mut error = None;
                    loop {
                        let next = rx.lock().map(|r| r.recv()).ok().and_then(|r| r.ok());
                        let Some((chunk, line)) = next else { break };
                        if error.is_some() {
                            // Keep draining so the reader is never left blocked on a full
                            // channel; it stops soon after seeing `failed`.
                            continue;
                        }
                        match parse_lines(&chunk, line, sep, bounds, &mut raw.pairs) {
                            Ok(outcome) => raw.data_lines += outcome.data_lines,
                            Err(e) => {
                                failed.store(true, Ordering::Relaxed);
                                error = Some(e);
                            }
                        }
                    }
                    error.map_or(Ok(raw), Err)
                })
            })
            .collect();
        let results: Vec<_> =
            handles.into_iter().map(|h| h.join().expect("parser panicked")).collect();
        let read_result = reader_thread.join().expect("reader panicked");
        let mut first_error: Option<LineError> = None;
        let mut parts = Vec::with_capacity(results.len());
        for r in results {
            match r {
                Ok(raw) => parts.push(raw),
                Err(e) if first_error.as_ref().is_none_or(|f| e.line < f.line) => {
                    first_error = Some(e)
                }
                Err(_) => {}
            }
        }
        if let Some(e) = first_error {
            return Err(Error::Parse {
                path: name.to_path_buf(),
                line: e.line,
                message: e.message,
            });
        }
        if let Err((e, line)) = read_result {
            return Err(read_error(name, e, line, compressed));
        }
        let mut raw = RawEdges::default();
        raw.pairs.reserve_exact(parts.iter().map(|p| p.pairs.len()).sum());
        for part in parts {
            raw.data_lines += part.data_lines;
            raw.pairs.extend_from_slice(&part.pairs);
        }
        Ok(raw)
    })
}

/// Reads `reader` to the end, handing `send` chunks that end at a line break together with
/// the number of their first line; `send` answers whether to go on. A line longer than
/// [`MAX_LINE_BYTES`] is handed on as soon as it is known to be, unfinished, for the parser
/// to refuse by its number, so no more than a chunk and a line are ever held. A read error
/// comes with the number of complete lines read before it.
pub(crate) fn chunk_lines(
    mut reader: impl Read,
    mut line: u64,
    mut send: impl FnMut(Vec<u8>, u64) -> bool,
) -> Result<(), (std::io::Error, u64)> {
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let mut buf = std::mem::take(&mut carry);
        let mut eof = false;
        while buf.len() < CHUNK_BYTES {
            let got =
                match (&mut reader).take((CHUNK_BYTES - buf.len()) as u64).read_to_end(&mut buf) {
                    Ok(got) => got,
                    Err(e) => {
                        let complete = line - 1 + memchr::memchr_iter(b'\n', &buf).count() as u64;
                        return Err((e, complete));
                    }
                };
            if got == 0 {
                eof = true;
                break;
            }
        }
        if !eof {
            let start = memchr::memrchr(b'\n', &buf).map_or(0, |cut| cut + 1);
            if buf.len() - start <= MAX_LINE_BYTES {
                carry = buf.split_off(start);
            }
            // Otherwise the unfinished last line is already too long: send it as it is.
        }
        let lines = memchr::memchr_iter(b'\n', &buf).count() as u64;
        if !buf.is_empty() && !send(buf, line) {
            return Ok(());
        }
        line += lines;
        if eof {
            return Ok(());
        }
    }
}

/// What the parser says of a line over [`MAX_LINE_BYTES`].
pub(crate) fn long_line() -> String {
    format!("line is longer than {MAX_LINE_BYTES} bytes; an edge list has short lines")
}

fn read_error(name: &Path, e: std::io::Error, complete_lines: u64, compressed: bool) -> Error {
    use std::io::ErrorKind::{InvalidData, InvalidInput, UnexpectedEof};
    let at =
        if complete_lines > 0 { format!(" after line {complete_lines}") } else { String::new() };
    if compressed && matches!(e.kind(), UnexpectedEof | InvalidInput | InvalidData) {
        Error::input(name, format!("compressed stream is truncated or corrupt{at}: {e}"))
    } else {
        Error::input(name, format!("read failed{at}: {e}"))
    }
}
