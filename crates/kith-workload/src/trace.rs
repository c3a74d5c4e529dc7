//! SONETOR's trace format: one activity per line, `ts<TAB>Publish|Retrieve<TAB>user<TAB>attr`,
//! sorted by `ts` (seconds).

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use crate::error::{Error, Result};
use crate::sonetor::{Activity, Event};

/// Writes a trace (times with millisecond precision).
pub fn write_trace(path: &Path, events: &[Event]) -> Result<()> {
    let context = || format!("writing {}", path.display());
    let file = File::create(path).map_err(Error::io(context()))?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    for e in events {
        writeln!(w, "{:.3}\t{}\t{}\t{}", e.ts, e.activity.name(), e.user, e.attr)
            .map_err(Error::io(context()))?;
    }
    w.flush().map_err(Error::io(context()))
}

/// Reads a trace; a malformed line is reported with its file and line number.
pub fn read_trace(path: &Path) -> Result<Vec<Event>> {
    let file = File::open(path).map_err(Error::io(format!("opening {}", path.display())))?;
    let mut events = Vec::new();
    let mut last = f64::NEG_INFINITY;
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(Error::io(format!("reading {}", path.display())))?;
        let bad = |reason: String| Error::Trace { path: path.to_path_buf(), line: i + 1, reason };
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        if fields.len() != 4 {
            return Err(bad(format!(
                "expected 4 tab-separated fields, found {}: {line:?}",
                fields.len()
            )));
        }
        let ts: f64 = fields[0]
            .parse()
            .ok()
            .filter(|t: &f64| t.is_finite() && *t >= 0.0)
            .ok_or_else(|| bad(format!("bad time {:?}", fields[0])))?;
        if ts < last {
            return Err(bad(format!("time {ts} is before the previous line's {last}: not sorted")));
        }
        last = ts;
        let activity = match fields[1] {
            "Publish" => Activity::Publish,
            "Retrieve" => Activity::Retrieve,
            other => {
                return Err(bad(format!("activity must be Publish or Retrieve, got {other:?}")));
            }
        };
        let user = fields[2].parse().map_err(|_| bad(format!("bad user id {:?}", fields[2])))?;
        let attr = fields[3].parse().map_err(|_| bad(format!("bad attr {:?}", fields[3])))?;
        events.push(Event { ts, activity, user, attr });
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_errors_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.tsv");
        let events = vec![
            Event { ts: 0.5, activity: Activity::Publish, user: 3, attr: 80 },
            Event { ts: 2.25, activity: Activity::Retrieve, user: 4, attr: 20 },
        ];
        write_trace(&p, &events).unwrap();
        assert_eq!(read_trace(&p).unwrap(), events);
        for (text, want) in [
            ("1.0\tPublish\t3\n", "t.tsv:1: expected 4"),
            ("1.0\tPublish\t3\t8\nx\tRetrieve\t3\t8\n", "t.tsv:2: bad time"),
            ("1.0\tPost\t3\t8\n", "t.tsv:1: activity must be"),
            ("2.0\tPublish\t3\t8\n1.0\tPublish\t3\t8\n", "t.tsv:2: time 1 is before"),
            ("1.0\tPublish\t-3\t8\n", "t.tsv:1: bad user id"),
        ] {
            std::fs::write(&p, text).unwrap();
            let e = read_trace(&p).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
    }
}
