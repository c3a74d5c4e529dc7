//! Graphs inside archives: an edge list in a zip file, and SNAP's ego-network tarballs.

use std::io::{BufRead, Read, Seek};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;

use super::parse::{Separator, parse_lines, parse_one_id};
use super::text::RawEdges;
use crate::error::{Error, Result};

const EDGE_LIST_ENDINGS: [&str; 5] = [".csv", ".txt", ".tsv", ".edges", ".mtx"];

/// Reads one member of a zip archive: `member` if given, otherwise the only member whose name
/// says it holds edges. Returns its (decompressed) bytes and its name.
pub(crate) fn zip_member<R: Read + Seek>(
    reader: R,
    path: &Path,
    member: Option<&str>,
) -> Result<(Vec<u8>, String)> {
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
    let mut bytes = Vec::new();
    zip.by_name(&name)
        .and_then(|mut f| f.read_to_end(&mut bytes).map_err(Into::into))
        .map_err(|e| Error::input(&label, format!("cannot extract: {e}")))?;
    if name.to_ascii_lowercase().ends_with(".gz") {
        let mut plain = Vec::new();
        MultiGzDecoder::new(bytes.as_slice()).read_to_end(&mut plain).map_err(|e| {
            Error::input(&label, format!("compressed stream is truncated or corrupt: {e}"))
        })?;
        bytes = plain;
    }
    Ok((bytes, name))
}

/// Reads a SNAP ego-network archive: for every ego `e`, the edges in `e.edges` and an edge from
/// `e` to every member of its network, listed in the first column of `e.feat`. (SNAP says the
/// ego "follows every node" of its network; `e.feat` lists members that have no edge in
/// `e.edges` too, and only with them does the union equal SNAP's combined graph.)
pub(crate) fn ego_networks(reader: Box<dyn BufRead + Send>, name: &Path) -> Result<RawEdges> {
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
        let mut bytes = Vec::new();
        entry
            .read_to_end(&mut bytes)
            .map_err(|e| Error::input(&label, format!("archive is truncated or corrupt: {e}")))?;
        if kind == "edges" {
            egos += 1;
            let outcome =
                parse_lines(&bytes, 1, Separator::Whitespace, None, &mut raw.pairs).map_err(
                    |e| Error::Parse { path: label.clone(), line: e.line, message: e.message },
                )?;
            raw.data_lines += outcome.data_lines;
        } else {
            for (i, line) in bytes.split(|&c| c == b'\n').enumerate() {
                // A feature line is the member's id followed by 0/1 features; only the id matters.
                let Some(first) = line.split(u8::is_ascii_whitespace).find(|t| !t.is_empty())
                else {
                    continue;
                };
                let id = parse_one_id(first).map_err(|message| Error::Parse {
                    path: label.clone(),
                    line: i as u64 + 1,
                    message,
                })?;
                raw.pairs.push((ego, id));
                raw.data_lines += 1;
            }
        }
    }
    if egos == 0 {
        return Err(Error::input(name, "no <ego>.edges members: not a SNAP ego-network archive"));
    }
    Ok(raw)
}
