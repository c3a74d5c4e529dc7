//! The file formats kith reads graphs from, their command-line names, and how a format is
//! recognised: from the file name first, then from the first line of the content.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// The file formats kith reads graphs from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// SNAP edge list: `#` comments, two ids per line separated by tabs or spaces; further
    /// columns (such as a sign) are ignored.
    Snap,
    /// KONECT `out.*` file: `%` comments, two ids per line, weight and timestamp columns ignored.
    Konect,
    /// MatrixMarket coordinate file, with or without its `%%MatrixMarket` banner and size line.
    Mtx,
    /// Comma-separated values with a header row; the first two columns are the endpoints.
    Csv,
    /// A SNAP ego-network archive (`.tar.gz` of `<ego>.edges` and `<ego>.feat` files): the
    /// edges of every ego network plus an edge from each ego to each member of its network.
    SnapEgo,
    /// kith's binary snapshot (see `docs/kgraph-format.md`).
    Kgraph,
}

impl Format {
    /// Every format, in the order they are documented.
    pub const ALL: [Format; 6] =
        [Format::Snap, Format::Konect, Format::Mtx, Format::Csv, Format::SnapEgo, Format::Kgraph];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Snap => "snap",
            Format::Konect => "konect",
            Format::Mtx => "mtx",
            Format::Csv => "csv",
            Format::SnapEgo => "snap-ego",
            Format::Kgraph => "kgraph",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = Error;

    fn from_str(s: &str) -> Result<Format> {
        Format::ALL.into_iter().find(|f| f.name() == s).ok_or_else(|| {
            let names: Vec<_> = Format::ALL.iter().map(|f| f.name()).collect();
            Error::InvalidArgument(format!(
                "unknown format {s:?}; expected one of {}",
                names.join(", ")
            ))
        })
    }
}

/// The format a file name implies, if it implies one.
pub(crate) fn format_from_name(name: &str) -> Option<Format> {
    let lower = name.to_ascii_lowercase();
    if lower.ends_with(".tgz") || lower.ends_with(".tar.gz") || lower.ends_with(".tar") {
        return Some(Format::SnapEgo);
    }
    let stem = lower.strip_suffix(".gz").unwrap_or(&lower);
    let base = stem.rsplit('/').next().unwrap_or(stem);
    if stem.ends_with(".kgraph") {
        Some(Format::Kgraph)
    } else if stem.ends_with(".mtx") {
        Some(Format::Mtx)
    } else if stem.ends_with(".csv") {
        Some(Format::Csv)
    } else if base.starts_with("out.") {
        Some(Format::Konect)
    } else {
        None
    }
}

/// Guesses a text format from the first non-blank line.
pub(crate) fn sniff(head: &[u8]) -> Format {
    let first = head
        .split(|&c| c == b'\n')
        .map(|l| l.trim_ascii())
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    if first.starts_with(b"%%MatrixMarket") {
        Format::Mtx
    } else if first.starts_with(b"%") {
        Format::Konect
    } else if !first.starts_with(b"#") && first.contains(&b',') {
        Format::Csv
    } else {
        Format::Snap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_imply_formats() {
        assert_eq!(format_from_name("soc-brightkite.mtx.gz"), Some(Format::Mtx));
        assert_eq!(format_from_name("out.ego-twitter.gz"), Some(Format::Konect));
        assert_eq!(format_from_name("edges.CSV"), Some(Format::Csv));
        assert_eq!(format_from_name("facebook.tar.gz"), Some(Format::SnapEgo));
        assert_eq!(format_from_name("g.kgraph"), Some(Format::Kgraph));
        assert_eq!(format_from_name("wiki-Vote.txt.gz"), None);
    }

    #[test]
    fn content_implies_formats() {
        assert_eq!(sniff(b"\n%%MatrixMarket matrix coordinate"), Format::Mtx);
        assert_eq!(sniff(b"% sym unweighted\n1 2"), Format::Konect);
        assert_eq!(sniff(b"# Directed graph\n1\t2"), Format::Snap);
        assert_eq!(sniff(b"id_1,id_2\n0,1"), Format::Csv);
        assert_eq!(sniff(b"0 1\n"), Format::Snap);
    }

    #[test]
    fn format_names_round_trip() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>().unwrap(), f);
        }
        assert!("gml".parse::<Format>().is_err());
    }
}
