//! The launcher behind `--processes P` (for `kith analyze <algorithm>` and `kith analyze
//! mr <job>`): it picks free loopback ports, writes a hostfile and starts P copies of this
//! command as the cluster's processes, watching them; a process that fails makes the
//! launcher stop the others and say which one failed.

use std::ffi::OsString;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail, ensure};

/// Starts `processes` copies of this command on loopback and waits for them. Process 0's
/// stdout is this one's; every process's stderr is this one's.
pub(super) fn launch(processes: usize) -> Result<()> {
    ensure!(processes >= 1, "--processes must be at least 1");
    let addresses = kith_distributed::loopback_addresses(processes)?;
    let dir = tempfile::tempdir().context("a directory for the hostfile")?;
    let hostfile = dir.path().join("hosts");
    std::fs::write(&hostfile, addresses.join("\n") + "\n")
        .with_context(|| format!("writing {}", hostfile.display()))?;
    let mut args: Vec<OsString> = Vec::new();
    let mut skip = false;
    for arg in std::env::args_os().skip(1) {
        if std::mem::take(&mut skip) {
            continue;
        }
        match arg.to_str() {
            Some("--processes") => skip = true,
            Some(a) if a.starts_with("--processes=") => {}
            _ => args.push(arg),
        }
    }
    let exe = std::env::current_exe()?;
    let mut children = Vec::new();
    // A measuring parent (`KITH_PEAK_RSS_OUT`) learns every process's peak, not only the
    // launcher's: process i writes its own beside the launcher's.
    let peak_out = std::env::var_os(kith_lab::machine::PEAK_RSS_ENV);
    for (i, address) in addresses.iter().enumerate() {
        let mut command = Command::new(&exe);
        if let Some(path) = &peak_out {
            command.env(
                kith_lab::machine::PEAK_RSS_ENV,
                kith_lab::machine::process_peak_path(path, i),
            );
        }
        let child = command
            .args(&args)
            .arg("--hostfile")
            .arg(&hostfile)
            .args(["--process", &i.to_string()])
            .stdin(Stdio::null())
            .stdout(if i == 0 { Stdio::inherit() } else { Stdio::null() })
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting process {i}"))?;
        eprintln!("kith: process {i} of {processes} is pid {} at {address}", child.id());
        children.push(child);
    }
    // Each process's outcome; after the first failure the others get a grace period to
    // see their connections close and stop by themselves, then they are killed.
    let mut outcomes: Vec<Option<std::process::ExitStatus>> = vec![None; processes];
    let mut failed_at: Option<Instant> = None;
    while outcomes.iter().any(Option::is_none) {
        for (i, child) in children.iter_mut().enumerate() {
            if outcomes[i].is_none()
                && let Some(status) = child.try_wait()?
            {
                outcomes[i] = Some(status);
                if !status.success() {
                    failed_at.get_or_insert_with(Instant::now);
                }
            }
        }
        if failed_at.is_some_and(|at| at.elapsed() > Duration::from_secs(10)) {
            for (i, child) in children.iter_mut().enumerate() {
                if outcomes[i].is_none() {
                    let _ = child.kill();
                    outcomes[i] = child.wait().ok();
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut failures: Vec<(bool, String)> = Vec::new();
    for (i, (status, child)) in outcomes.iter().zip(&children).enumerate() {
        let Some(status) = status.filter(|s| !s.success()) else { continue };
        use std::os::unix::process::ExitStatusExt as _;
        let pid = child.id();
        failures.push(match status.signal() {
            Some(signal) => {
                (true, format!("process {i} (pid {pid}) was killed by signal {signal}"))
            }
            None => (false, format!("process {i} (pid {pid}) failed with {status}")),
        });
    }
    // The processes killed from outside first: the others failed because of them.
    failures.sort_by_key(|f| !f.0);
    if !failures.is_empty() {
        let what: Vec<String> = failures.into_iter().map(|f| f.1).collect();
        bail!("the distributed run failed: {}", what.join("; "));
    }
    Ok(())
}
