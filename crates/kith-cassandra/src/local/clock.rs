//! Skewable clocks for the trials: a process started under Debian's libfaketime with a
//! clock file reads the wall clock shifted by the offset the file holds, re-read within a
//! few seconds, so a running node's or server's clock can be set ahead, behind, or stepped.
//! Monotonic clocks (timeouts, intervals) are left alone: faking them too would turn a step
//! into a stall (timers set on the old clock), and libfaketime 0.9.10's fix for waits on a
//! faked monotonic clock (`FAKETIME_FORCE_MONOTONIC_FIX`) makes a JVM's timed waits spin
//! (two cores busy for an idle JVM), so it is turned off.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};

/// Where Debian's `faketime` package puts the library, by architecture.
const LIBRARY_DIRS: [&str; 3] = [
    "/usr/lib/x86_64-linux-gnu/faketime",
    "/usr/lib/aarch64-linux-gnu/faketime",
    "/usr/lib/faketime",
];

/// The libfaketime library, or an error saying how to install it.
pub fn library() -> Result<PathBuf> {
    LIBRARY_DIRS
        .iter()
        .map(|d| Path::new(d).join("libfaketime.so.1"))
        .find(|p| p.exists())
        .ok_or_else(|| {
            Error::Cluster(format!(
                "libfaketime.so.1 not found in {}: a skewable clock needs Debian's faketime \
                 (apt-get install faketime, or scripts/cluster-deps.sh)",
                LIBRARY_DIRS.join(", ")
            ))
        })
}

/// Makes `command` read its wall clock through `file` (created at offset 0 if missing).
pub fn skew_command(command: &mut Command, file: &Path) -> Result<()> {
    if !file.exists() {
        set_offset(file, 0)?;
    }
    command
        .env("LD_PRELOAD", library()?)
        .env("FAKETIME_TIMESTAMP_FILE", file)
        .env("FAKETIME_CACHE_DURATION", "1")
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        .env("FAKETIME_FORCE_MONOTONIC_FIX", "0");
    Ok(())
}

/// Sets the offset (seconds, ahead when positive) the processes reading `file` see, within
/// a few seconds (libfaketime re-reads the file when its cache of it expires). Written to a temporary file and renamed, so no reader sees half of it.
pub fn set_offset(file: &Path, offset_s: i64) -> Result<()> {
    let tmp = file.with_extension("tmp");
    std::fs::write(&tmp, format!("{offset_s:+}\n"))
        .and_then(|()| std::fs::rename(&tmp, file))
        .map_err(Error::io(format!("writing clock file {}", file.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skewed_process_reads_the_offset_and_follows_a_step() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("clock");
        set_offset(&file, 3600).unwrap();
        let read = |file: &Path| {
            let mut c = Command::new("date");
            c.arg("+%s");
            skew_command(&mut c, file).unwrap();
            let out = c.output().unwrap();
            String::from_utf8(out.stdout).unwrap().trim().parse::<i64>().unwrap()
        };
        let now = || {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
                as i64
        };
        let ahead = read(&file) - now();
        assert!((3598..=3602).contains(&ahead), "an hour ahead, read {ahead} s");
        set_offset(&file, -60).unwrap();
        let behind = read(&file) - now();
        assert!((-62..=-58).contains(&behind), "a minute behind, read {behind} s");
    }
}
