//! Graphs inside archives: an edge list in a zip file, and SNAP's ego-network tarballs.

use std::io::{BufRead, BufReader, Read, Seek};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;

use super::format::{Format, format_from_name, sniff};
use super::parse::{LineError, Separator, parse_lines, parse_one_id};
use super::text::{MAX_LINE_BYTES, RawEdges, chunk_lines, long_line};
use crate::error::{Error, Result};

const EDGE_LIST_ENDINGS: [&str; 5] = [".csv", ".txt", ".tsv", ".edges", ".mtx"];

/// Parses one member of a zip archive: `member` if given, otherwise the only member whose
/// name says it holds edges. The member is streamed (decompressed as it is parsed), never
/// held whole. `format` is the one asked for, if any; otherwise the member's name or its
/// first bytes say.
pub(crate) fn zip_member<R: Read + Seek + Send>(
    reader: R,
    path: &Path,
    member: Option<&str>,
    format: Option<Format>,
) -> Result<RawEdges> {
    let mut zip = zip::ZipArchive::new(reader)
        .map_err(|e| Error::input(path, format!("not a readable zip archive: {e}")))?;
    let files: Vec<String> =
        zip.file_names().filter(|n| !n.ends_with('/')).map(str::to_owned).collect();
    let listing = || files.join(", ");
    let name = match member {
        Some(m) if files.iter().any(|f| f == m) => m.to_owned(),
        Some(m) => {
            return Err(Error::input(
                path,
                format!("no member {m:?} in the archive; it holds {}", listing()),
            ));
        }
        None => {
            let looks_like_edges = |n: &&String| {
                let lower = n.to_ascii_lowercase();
                let lower = lower.strip_suffix(".gz").unwrap_or(&lower);
                let base = lower.rsplit('/').next().unwrap_or(lower);
                base.contains("edge") && EDGE_LIST_ENDINGS.iter().any(|e| base.ends_with(e))
            };
            let candidates: Vec<&String> = files.iter().filter(looks_like_edges).collect();
            match (candidates.as_slice(), files.as_slice()) {
                ([one], _) => (*one).clone(),
                (_, [only]) => only.clone(),
                _ => {
                    return Err(Error::input(
                        path,
                        format!(
                            "cannot tell which member holds the edge list; pass --member with one of: {}",
                            listing()
                        ),
                    ));
                }
            }
        }
    };
    let label = PathBuf::from(format!("{}:{name}", path.display()));
    let file =
        zip.by_name(&name).map_err(|e| Error::input(&label, format!("cannot extract: {e}")))?;
    let gz = name.to_ascii_lowercase().ends_with(".gz");
    let stream: Box<dyn Read + Send + '_> =
        if gz { Box::new(MultiGzDecoder::new(file)) } else { Box::new(file) };
    let mut reader: Box<dyn BufRead + Send + '_> =
        Box::new(BufReader::with_capacity(1 << 18, stream));
    let format = match format.or_else(|| format_from_name(&name)) {
        Some(f) => f,
        None => sniff(reader.fill_buf().map_err(|e| member_error(&label, e, gz))?),
    };
    super::parse(reader, &label, format, true)
}

/// A read error inside an archive member.
fn member_error(label: &Path, e: std::io::Error, gz: bool) -> Error {
    let what = if gz { "compressed stream" } else { "archive member" };
    Error::input(label, format!("{what} is truncated or corrupt: {e}"))
}

/// Reads a SNAP ego-network archive: for every ego `e`, the edges in `e.edges` and an edge from
/// `e` to every member of its network, listed in the first column of `e.feat`. (SNAP says the
/// ego "follows every node" of its network; `e.feat` lists members that have no edge in
/// `e.edges` too, and only with them does the union equal SNAP's combined graph.)
pub(crate) fn ego_networks(reader: Box<dyn BufRead + Send + '_>, name: &Path) -> Result<RawEdges> {
    let mut tar = tar::Archive::new(reader);
    let mut raw = RawEdges::default();
    let mut egos = 0;
    let entries =
        tar.entries().map_err(|e| Error::input(name, format!("not a tar archive: {e}")))?;
    for entry in entries {
        let mut entry = entry
            .map_err(|e| Error::input(name, format!("archive is truncated or corrupt: {e}")))?;
        let member = entry.path().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
        let base = member.rsplit('/').next().unwrap_or(&member).to_owned();
        let Some((stem, kind)) = base.rsplit_once('.') else { continue };
        if kind != "edges" && kind != "feat" {
            continue;
        }
        let label = PathBuf::from(format!("{}:{member}", name.display()));
        let ego: u64 = stem.parse().map_err(|_| {
            Error::input(
                &label,
                "ego-network members must be named <ego id>.edges or <ego id>.feat",
            )
        })?;
        let damaged =
            |(e, _)| Error::input(&label, format!("archive is truncated or corrupt: {e}"));
        // Members are streamed in chunks of whole lines, as a plain edge list is.
        let mut failure = None;
        if kind == "edges" {
            egos += 1;
            chunk_lines(&mut entry, 1, |chunk, line| {
                match parse_lines(&chunk, line, Separator::Whitespace, None, &mut raw.pairs) {
                    Ok(outcome) => raw.data_lines += outcome.data_lines,
                    Err(e) => failure = Some(e),
                }
                failure.is_none()
            })
            .map_err(damaged)?;
        } else {
            chunk_lines(&mut entry, 1, |chunk, line| {
                match feature_ids(&chunk, line, ego, &mut raw.pairs) {
                    Ok(n) => raw.data_lines += n,
                    Err(e) => failure = Some(e),
                }
                failure.is_none()
            })
            .map_err(damaged)?;
        }
        if let Some(e) = failure {
            return Err(Error::Parse { path: label, line: e.line, message: e.message });
        }
    }
    if egos == 0 {
        return Err(Error::input(name, "no <ego>.edges members: not a SNAP ego-network archive"));
    }
    Ok(raw)
}

/// The ego's edges to the members listed in a chunk of an `<ego>.feat` member: a feature
/// line is the member's id followed by 0/1 features, and only the id matters. Returns the
/// number of members.
fn feature_ids(
    chunk: &[u8],
    first_line: u64,
    ego: u64,
    out: &mut Vec<(u64, u64)>,
) -> Result<u64, LineError> {
    let mut n = 0;
    for (i, line) in chunk.split(|&c| c == b'\n').enumerate() {
        let line_no = first_line + i as u64;
        if line.len() > MAX_LINE_BYTES {
            return Err(LineError { line: line_no, message: long_line() });
        }
        let Some(first) = line.split(u8::is_ascii_whitespace).find(|t| !t.is_empty()) else {
            continue;
        };
        let id = parse_one_id(first).map_err(|message| LineError { line: line_no, message })?;
        out.push((ego, id));
        n += 1;
    }
    Ok(n)
}
