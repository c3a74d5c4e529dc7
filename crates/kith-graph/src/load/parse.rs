//! Parsing the data lines of a text edge list: two integer ids per line, comments and blank
//! lines skipped, any further columns (weights, signs, timestamps) ignored.

/// How the columns of a data line are separated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Separator {
    /// Spaces or tabs (SNAP, KONECT, MatrixMarket).
    Whitespace,
    /// Commas, optionally padded with spaces (CSV).
    Comma,
}

/// Optional bounds every id must respect, with the reason given when one does not.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IdBounds {
    pub min: u64,
    pub max: u64,
    pub why: &'static str,
}

/// What a chunk of lines held.
#[derive(Debug, Default)]
pub(crate) struct ChunkOutcome {
    pub data_lines: u64,
}

/// A problem on one line; the caller adds the file name.
#[derive(Debug)]
pub(crate) struct LineError {
    pub line: u64,
    pub message: String,
}

/// Parses every line of `chunk` (whole lines only), numbering them from `first_line`, and
/// appends one `(source, target)` pair per data line to `out`.
pub(crate) fn parse_lines(
    chunk: &[u8],
    first_line: u64,
    sep: Separator,
    bounds: Option<IdBounds>,
    out: &mut Vec<(u64, u64)>,
) -> Result<ChunkOutcome, LineError> {
    let mut outcome = ChunkOutcome::default();
    let mut line_no = first_line;
    let mut rest = chunk;
    while !rest.is_empty() {
        let end = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
        let line = &rest[..end];
        rest = if end < rest.len() { &rest[end + 1..] } else { &[] };
        if line.len() > super::text::MAX_LINE_BYTES {
            return Err(LineError { line: line_no, message: super::text::long_line() });
        }
        if let Some(pair) =
            parse_line(line, sep).map_err(|message| LineError { line: line_no, message })?
        {
            if let Some(b) = bounds {
                for id in [pair.0, pair.1] {
                    if id < b.min || id > b.max {
                        return Err(LineError {
                            line: line_no,
                            message: format!("id {id} outside {}..={} ({})", b.min, b.max, b.why),
                        });
                    }
                }
            }
            out.push(pair);
            outcome.data_lines += 1;
        }
        line_no += 1;
    }
    Ok(outcome)
}

/// Parses one line; `Ok(None)` for blank and comment lines.
pub(crate) fn parse_line(line: &[u8], sep: Separator) -> Result<Option<(u64, u64)>, String> {
    let line = trim(line);
    match line.first() {
        None | Some(b'#') | Some(b'%') => return Ok(None),
        _ => {}
    }
    let mut fields = Fields { rest: line, sep };
    let (Some(a), Some(b)) = (fields.next(), fields.next()) else {
        return Err(format!("expected two integer ids, found {}", quoted(line)));
    };
    let a = parse_id(a).map_err(|e| e.describe(line))?;
    let b = parse_id(b).map_err(|e| e.describe(line))?;
    Ok(Some((a, b)))
}

struct Fields<'a> {
    rest: &'a [u8],
    sep: Separator,
}

impl<'a> Iterator for Fields<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        match self.sep {
            Separator::Whitespace => {
                let start = self.rest.iter().position(|&c| c != b' ' && c != b'\t')?;
                let rest = &self.rest[start..];
                let end = rest.iter().position(|&c| c == b' ' || c == b'\t').unwrap_or(rest.len());
                self.rest = &rest[end..];
                Some(&rest[..end])
            }
            Separator::Comma => {
                if self.rest.is_empty() {
                    return None;
                }
                let end = memchr::memchr(b',', self.rest);
                let field = &self.rest[..end.unwrap_or(self.rest.len())];
                self.rest = end.map_or(&[][..], |e| &self.rest[e + 1..]);
                let field = trim(field);
                let field =
                    field.strip_prefix(b"\"").and_then(|f| f.strip_suffix(b"\"")).unwrap_or(field);
                Some(field)
            }
        }
    }
}

/// Parses a lone id (a column of its own, as in SNAP's `.feat` files).
pub(crate) fn parse_one_id(field: &[u8]) -> Result<u64, String> {
    parse_id(field).map_err(|e| match e {
        IdError::NotInteger => format!("expected an integer id, found {}", quoted(field)),
        other => other.describe(field),
    })
}

enum IdError {
    NotInteger,
    Negative,
    TooLarge,
}

impl IdError {
    fn describe(self, line: &[u8]) -> String {
        match self {
            IdError::NotInteger => format!("expected two integer ids, found {}", quoted(line)),
            IdError::Negative => format!("negative id in {}; ids must be >= 0", quoted(line)),
            IdError::TooLarge => {
                format!("id beyond the largest supported id {} in {}", u64::MAX, quoted(line))
            }
        }
    }
}

fn parse_id(field: &[u8]) -> Result<u64, IdError> {
    let digits = match field.first() {
        Some(b'-') if field.len() > 1 && field[1..].iter().all(u8::is_ascii_digit) => {
            return Err(IdError::Negative);
        }
        Some(b'+') => &field[1..],
        _ => field,
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(IdError::NotInteger);
    }
    if digits.len() < 20 {
        // At most 19 digits always fit in a u64.
        return Ok(digits.iter().fold(0u64, |acc, &d| acc * 10 + u64::from(d - b'0')));
    }
    digits
        .iter()
        .try_fold(0u64, |acc, &d| acc.checked_mul(10)?.checked_add(u64::from(d - b'0')))
        .ok_or(IdError::TooLarge)
}

/// Strips white space and a UTF-8 byte-order mark (which Windows tools put before the first
/// line).
fn trim(line: &[u8]) -> &[u8] {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let is_space = |c: &u8| matches!(c, b' ' | b'\t' | b'\r' | b'\n');
    let start = line.iter().position(|c| !is_space(c)).unwrap_or(line.len());
    let end = line.iter().rposition(|c| !is_space(c)).map_or(start, |e| e + 1);
    &line[start..end]
}

/// The offending text, quoted and cut to a readable length.
pub(crate) fn quoted(text: &[u8]) -> String {
    const MAX: usize = 80;
    let text = String::from_utf8_lossy(trim(text));
    if text.chars().count() > MAX {
        format!("{:?}...", text.chars().take(MAX).collect::<String>())
    } else {
        format!("{text:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(line: &str) -> Result<Option<(u64, u64)>, String> {
        parse_line(line.as_bytes(), Separator::Whitespace)
    }

    #[test]
    fn accepts_snap_and_konect_lines() {
        assert_eq!(ws("1\t2"), Ok(Some((1, 2))));
        assert_eq!(ws("  3 4 \r"), Ok(Some((3, 4))));
        assert_eq!(ws("5 6 1 1234567"), Ok(Some((5, 6))));
        assert_eq!(ws("7\t8\t-1"), Ok(Some((7, 8))));
        assert_eq!(ws("# comment"), Ok(None));
        assert_eq!(ws("% comment"), Ok(None));
        assert_eq!(ws("\r"), Ok(None));
        assert_eq!(ws("\u{feff}9 10"), Ok(Some((9, 10))));
        assert_eq!(ws(&format!("0 {}", u64::MAX)), Ok(Some((0, u64::MAX))));
    }

    #[test]
    fn names_the_offending_text() {
        assert_eq!(ws("12 abc").unwrap_err(), r#"expected two integer ids, found "12 abc""#);
        assert_eq!(ws("12").unwrap_err(), r#"expected two integer ids, found "12""#);
        assert!(ws("-5 3").unwrap_err().starts_with("negative id"));
        assert!(ws("18446744073709551616 3").unwrap_err().starts_with("id beyond"));
        assert!(ws("1.5 3").unwrap_err().starts_with("expected two integer ids"));
    }

    #[test]
    fn csv_fields() {
        let csv = |l: &str| parse_line(l.as_bytes(), Separator::Comma);
        assert_eq!(csv("1,2"), Ok(Some((1, 2))));
        assert_eq!(csv(" 1 , \"2\" ,x"), Ok(Some((1, 2))));
        assert!(csv("1;2").is_err());
    }

    #[test]
    fn numbers_lines_and_checks_bounds() {
        let mut out = Vec::new();
        let text = b"% c\n1 2\n\n3 4\n";
        let got = parse_lines(text, 10, Separator::Whitespace, None, &mut out).unwrap();
        assert_eq!(got.data_lines, 2);
        assert_eq!(out, vec![(1, 2), (3, 4)]);
        let bounds = IdBounds { min: 1, max: 3, why: "test" };
        let err = parse_lines(text, 10, Separator::Whitespace, Some(bounds), &mut out).unwrap_err();
        assert_eq!(err.line, 13);
    }
}
