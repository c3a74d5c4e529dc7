//! What benchmarks record about where and when they ran (machine, UTC date, commit), how
//! they time child `kith` processes, where the datasets are, and how results files are
//! written.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use serde::Serialize;

/// The machine a benchmark ran on.
#[derive(Debug, Serialize)]
pub struct Machine {
    pub hostname: String,
    pub cpu: String,
    pub cores: usize,
    pub memory_gib: f64,
    pub os: String,
}

impl Machine {
    /// This machine, from `/proc` (fields left empty or zero where it cannot be read).
    pub fn describe() -> Machine {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let cpu = cpuinfo
            .lines()
            .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split(':').nth(1)))
            .map_or_else(|| "unknown".to_owned(), |s| s.trim().to_owned());
        let meminfo = read("/proc/meminfo");
        let mem_kib: f64 = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|r| r.split_whitespace().next()?.parse().ok())
            .unwrap_or(0.0);
        Machine {
            hostname: read("/proc/sys/kernel/hostname").trim().to_owned(),
            cpu,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_gib: (mem_kib / 1024.0 / 1024.0 * 10.0).round() / 10.0,
            os: read("/proc/sys/kernel/osrelease").trim().to_owned(),
        }
    }
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_now() -> String {
    format_utc(SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()))
}

fn format_utc(secs: u64) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The commit the benchmark ran from, if this is a git checkout, marked `-dirty` when the work
/// tree has uncommitted changes.
pub fn git_commit() -> Option<String> {
    let git = |args: &[&str]| {
        let out = Command::new("git").args(args).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let commit = git(&["rev-parse", "--short", "HEAD"])?;
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    Some(if dirty { format!("{commit}-dirty") } else { commit })
}

/// How long a child process ran and the most memory it held.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ChildRun {
    pub seconds: f64,
    pub peak_rss_mb: f64,
    /// When the child launched a local cluster (`--processes P`): each process's peak, in
    /// process order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub process_peak_rss_mb: Vec<f64>,
    /// What the child printed on stdout.
    #[serde(skip)]
    pub stdout: String,
}

/// The environment variable through which a benchmarked `kith` process reports its peak
/// resident memory: the path of a file to write it to, in KiB.
///
/// The peak has to come from the child itself: `ru_maxrss` from `wait4` also counts the
/// parent's memory, because the kernel records the high-water mark of the address space the
/// child had before `exec`, which a `vfork`-style spawn shares with the parent.
pub const PEAK_RSS_ENV: &str = "KITH_PEAK_RSS_OUT";

/// Called by `main` on the way out: writes this process's peak resident memory (`VmHWM`) where
/// `KITH_PEAK_RSS_OUT` says, if it is set.
pub fn report_peak_rss() {
    let Some(path) = std::env::var_os(PEAK_RSS_ENV) else { return };
    // Best effort: a benchmark that cannot read the file reports the failure itself.
    let _ = std::fs::write(path, peak_rss_kib().to_string());
}

/// This process's peak resident memory (`VmHWM`), in KiB; 0 if `/proc` does not say.
pub fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Where process `i` of a local cluster reports its peak when the launcher's is `path`.
pub fn process_peak_path(path: &std::ffi::OsStr, i: usize) -> std::ffi::OsString {
    let mut p = path.to_os_string();
    p.push(format!(".{i}"));
    p
}

/// Runs this executable with `args` and returns its wall time and peak memory. Fails if the
/// child fails, with its stderr.
pub(crate) fn run_self(args: &[&str]) -> Result<ChildRun> {
    let exe = std::env::current_exe().context("cannot locate the kith executable")?;
    let stderr = tempfile::NamedTempFile::new()?;
    let stdout = tempfile::NamedTempFile::new()?;
    let peak = tempfile::NamedTempFile::new()?;
    let start = Instant::now();
    let status = Command::new(&exe)
        .args(args)
        .env(PEAK_RSS_ENV, peak.path())
        .stdout(stdout.reopen()?)
        .stderr(stderr.reopen()?)
        .status()
        .with_context(|| format!("cannot start {}", exe.display()))?;
    let seconds = start.elapsed().as_secs_f64();
    // A local cluster's processes write theirs beside it: read, then remove, on every path.
    let process_peaks = take_process_peaks(peak.path());
    if !status.success() {
        let message = std::fs::read_to_string(stderr.path()).unwrap_or_default();
        bail!("`kith {}` failed: {}", args.join(" "), message.trim());
    }
    let kib: f64 = std::fs::read_to_string(peak.path())?
        .trim()
        .parse()
        .context("the child did not report its peak memory")?;
    let stdout = std::fs::read_to_string(stdout.path())?;
    let process_peak_rss_mb = process_peaks?;
    Ok(ChildRun { seconds, peak_rss_mb: kib / 1024.0, process_peak_rss_mb, stdout })
}

/// The peaks, in MB by process, that a local cluster's processes wrote beside `path`
/// ([`process_peak_path`]); the files are removed. Fails if a process in the middle of the
/// range wrote none or garbage.
fn take_process_peaks(path: &Path) -> Result<Vec<f64>> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return Ok(Vec::new());
    };
    let mut found: Vec<(usize, Result<f64>)> = Vec::new();
    for entry in std::fs::read_dir(dir)?.flatten() {
        let file = entry.file_name();
        let Some(i) = file
            .to_str()
            .and_then(|f| f.strip_prefix(name)?.strip_prefix('.')?.parse::<usize>().ok())
        else {
            continue;
        };
        let kib = std::fs::read_to_string(entry.path())
            .map_err(anyhow::Error::from)
            .and_then(|t| t.trim().parse::<f64>().context("not a number"))
            .with_context(|| format!("process {i}'s peak memory"));
        let _ = std::fs::remove_file(entry.path());
        found.push((i, kib.map(|k| k / 1024.0)));
    }
    found.sort_by_key(|f| f.0);
    if let Some(gap) = found.iter().enumerate().find(|(at, f)| *at != f.0) {
        bail!("process {} did not report its peak memory", gap.0);
    }
    found.into_iter().map(|f| f.1).collect()
}

/// The datasets directory: `$KITH_DATASETS`, else `shared/datasets` beside the checkout.
pub(crate) fn datasets_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("KITH_DATASETS") {
        return PathBuf::from(dir);
    }
    // Beside the checkout as cargo gives it at run time (`cargo test`, `cargo run`), as it was
    // at compile time, or beside the current directory (the README's commands run from the
    // checkout's root).
    let candidates = [
        std::env::var_os("CARGO_MANIFEST_DIR")
            .map(|m| PathBuf::from(m).join("../../../shared/datasets")),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/datasets")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|d| d.is_dir())
        .unwrap_or_else(|| PathBuf::from("../shared/datasets"))
}

/// Writes a benchmark's results as pretty JSON to `path`, creating its directory; with
/// `--json` ([`crate::report::json`]) the same document is printed on stdout too.
pub(crate) fn write_json(path: &Path, value: &impl Serialize) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("{}: cannot create", dir.display()))?;
    }
    let text = serde_json::to_string_pretty(value)? + "\n";
    std::fs::write(path, &text).with_context(|| format!("{}: cannot write", path.display()))?;
    if crate::report::json() {
        print!("{text}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_utc_dates() {
        assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(format_utc(1_795_391_000), "2026-11-22T23:43:20Z");
    }
}
