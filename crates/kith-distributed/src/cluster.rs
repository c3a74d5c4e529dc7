//! Processes and their addresses: hostfiles, free loopback ports for local clusters, and
//! starting timely so that a cluster that cannot form, or loses a process, fails on every
//! process with a clear message instead of hanging.
//!
//! timely connects process `i` to every lower process (retrying forever) and waits for the
//! higher ones, printing its progress on stdout. While the cluster forms, this process's
//! stdout is a pipe read by a thread that keeps who has connected and the last error for
//! each peer; a watchdog ends the process with that list when the cluster has not formed
//! in time. Once formed, a connection that breaks makes timely's network thread panic with
//! "timely communication error"; the panic hook turns any panic into a message and exit.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::net::ToSocketAddrs;
use std::os::fd::FromRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::part::ExchangeMode;

/// Where this process is in a cluster, and how the run behaves.
#[derive(Clone, Debug)]
pub struct Cluster {
    /// Worker threads per process.
    pub threads: usize,
    /// This process, from 0.
    pub process: usize,
    /// Every process's `host:port`, in process order.
    pub addresses: Vec<String>,
    /// How values travel.
    pub mode: ExchangeMode,
    /// How long the processes may take to connect.
    pub connect_timeout: Duration,
    /// How long a worker waits for the others in one round.
    pub wait_timeout: Duration,
}

impl Cluster {
    /// Processes.
    pub fn processes(&self) -> usize {
        self.addresses.len()
    }

    /// Workers: threads × processes.
    pub fn workers(&self) -> usize {
        self.threads * self.processes()
    }
}

/// Reads a hostfile: one `host:port` per process, in process order (blank lines and `#`
/// comments skipped).
///
/// # Errors
/// A line that is not `host:port`, an address that does not resolve, the same address
/// twice, or no address; named by file and line.
pub fn read_hostfile(path: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
    let bad = |line: usize, message: String| Error::Hostfile {
        path: path.to_path_buf(),
        line: line as u64,
        message,
    };
    let mut addresses = Vec::new();
    let mut seen: Vec<(std::net::SocketAddr, usize)> = Vec::new();
    let mut names = HashSet::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let (host, port) = line
            .rsplit_once(':')
            .ok_or_else(|| bad(i + 1, format!("{line:?} is not host:port")))?;
        if host.is_empty() || port.parse::<u16>().is_err() {
            return Err(bad(i + 1, format!("{line:?} is not host:port with a port 0-65535")));
        }
        let resolved: Vec<_> = line
            .to_socket_addrs()
            .map_err(|e| bad(i + 1, format!("{line} does not resolve: {e}")))?
            .collect();
        if !names.insert(line.to_string()) {
            return Err(bad(i + 1, format!("{line} is listed twice; each process needs its own")));
        }
        if let Some((addr, first)) = seen.iter().find(|(a, _)| resolved.contains(a)) {
            return Err(bad(
                i + 1,
                format!(
                    "{line} is {addr}, the address of line {first}; each process needs its own"
                ),
            ));
        }
        seen.extend(resolved.into_iter().map(|a| (a, i + 1)));
        addresses.push(line.to_string());
    }
    if addresses.is_empty() {
        return Err(bad(0, "no addresses".into()));
    }
    Ok(addresses)
}

/// `count` free loopback addresses (ports the kernel hands out; another program could take
/// one before the cluster binds it, which then fails with "address in use").
///
/// # Errors
/// No free port.
pub fn loopback_addresses(count: usize) -> Result<Vec<String>> {
    let listeners = (0..count)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(|e| Error::Cluster(format!("no free loopback port: {e}")))?;
    listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.to_string()))
        .collect::<std::io::Result<_>>()
        .map_err(|e| Error::Cluster(format!("no free loopback port: {e}")))
}

/// Turns every panic of this process (a worker's, or timely's network thread's when a
/// connection breaks) into one message on stderr and exit status 3, so the other
/// processes see their connections close and stop too.
fn install_panic_hook(process: usize, processes: usize) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            if message.contains("timely communication error") {
                eprintln!(
                    "kith: error: process {process} of {processes}: lost a connection to another \
                     process ({message}); it exited or was killed, so this run stops"
                );
            } else {
                let at = info.location().map(|l| format!(" at {l}")).unwrap_or_default();
                let hint = if at.contains("timely_communication") {
                    "; this happens when the processes were started with different --threads \
                     or different hostfiles: every process needs the same"
                } else {
                    ""
                };
                eprintln!(
                    "kith: error: process {process} of {processes}: a worker failed: {message}{at}{hint}"
                );
            }
            std::process::exit(3);
        }));
    });
}

/// What timely said about connecting, by peer process.
#[derive(Debug, Default)]
struct Formation {
    connected: HashSet<usize>,
    last_error: Vec<Option<String>>,
}

impl Formation {
    fn read(&mut self, line: &str) {
        let Some((_, rest)) = line.split_once('\t') else { return };
        let number = |s: &str| s.split(|c: char| !c.is_ascii_digit()).next()?.parse::<usize>().ok();
        if let Some(r) = rest.strip_prefix("connection to worker ") {
            self.connected.extend(number(r));
        } else if let Some(r) = rest.strip_prefix("connection from worker ") {
            self.connected.extend(number(r));
        } else if let Some(r) = rest.strip_prefix("error connecting to worker ")
            && let Some(peer) = number(r)
            && let Some(slot) = self.last_error.get_mut(peer)
        {
            let error = r.split_once(": ").map_or(r, |x| x.1).trim_end_matches("; retrying");
            *slot = Some(error.to_string());
        }
    }

    fn missing(&self, me: usize, addresses: &[String]) -> String {
        let mut out = Vec::new();
        for (peer, addr) in addresses.iter().enumerate() {
            if peer == me || self.connected.contains(&peer) {
                continue;
            }
            out.push(match (&self.last_error[peer], peer < me) {
                (Some(e), _) => format!("process {peer} at {addr}: {e}"),
                (None, true) => format!("process {peer} at {addr}: not reached yet"),
                (None, false) => format!("process {peer} at {addr} never connected to this one"),
            });
        }
        out.join("; ")
    }
}

/// Stdout redirected into a pipe read by a thread, until dropped.
struct Captured {
    saved: libc::c_int,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Captured {
    fn start(formation: Arc<Mutex<Formation>>) -> std::io::Result<Captured> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` has room for the two descriptors `pipe` writes.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        // SAFETY: duplicating and replacing descriptor 1, which this process owns; the
        // pipe's write end is closed once descriptor 1 refers to it.
        let saved = unsafe {
            let saved = libc::dup(1);
            libc::dup2(fds[1], 1);
            libc::close(fds[1]);
            saved
        };
        // SAFETY: `fds[0]` is the pipe's read end, owned only by this `File` from here on.
        let read_end = unsafe { std::fs::File::from_raw_fd(fds[0]) };
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(read_end).lines() {
                let Ok(line) = line else { break };
                formation.lock().expect("formation lock").read(&line);
            }
        });
        Ok(Captured { saved, reader: Some(reader) })
    }
}

impl Drop for Captured {
    fn drop(&mut self) {
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        // SAFETY: restores descriptor 1 from the copy taken in `start`; that closes the
        // pipe's last write end, so the reader sees the end of its input.
        unsafe {
            libc::dup2(self.saved, 1);
            libc::close(self.saved);
        }
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

/// Starts timely for `cluster` and runs `work` on every worker of this process; returns
/// what a worker returned as `Some` (worker 0's result on process 0), or the first error.
pub(crate) fn execute<T, F>(cluster: &Cluster, work: F) -> Result<Option<T>>
where
    T: Send + 'static,
    F: Fn(&mut timely::worker::Worker) -> Result<Option<T>, String> + Send + Sync + 'static,
{
    let processes = cluster.processes();
    if cluster.threads == 0 {
        return Err(Error::InvalidArgument("a cluster needs at least one thread".into()));
    }
    if cluster.process >= processes {
        return Err(Error::InvalidArgument(format!(
            "process {} is not in a cluster of {processes} processes",
            cluster.process
        )));
    }
    let communication = if processes == 1 {
        timely::CommunicationConfig::Process(cluster.threads)
    } else {
        timely::CommunicationConfig::Cluster {
            threads: cluster.threads,
            process: cluster.process,
            addresses: cluster.addresses.clone(),
            report: true,
            zerocopy: false,
        }
    };
    let config = timely::Config { communication, worker: timely::WorkerConfig::default() };
    let formation =
        Arc::new(Mutex::new(Formation { last_error: vec![None; processes], ..Default::default() }));
    let formed = Arc::new(AtomicBool::new(false));
    let captured = if processes > 1 {
        install_panic_hook(cluster.process, processes);
        let watched = (Arc::clone(&formation), Arc::clone(&formed));
        let (me, addresses, limit) =
            (cluster.process, cluster.addresses.clone(), cluster.connect_timeout);
        std::thread::spawn(move || {
            let start = Instant::now();
            while !watched.1.load(Ordering::Acquire) {
                if start.elapsed() > limit {
                    let missing = watched.0.lock().expect("formation lock").missing(me, &addresses);
                    eprintln!(
                        "kith: error: process {me} of {}: the cluster did not form within {} s: {missing}",
                        addresses.len(),
                        limit.as_secs()
                    );
                    std::process::exit(2);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        Some(Captured::start(formation).map_err(|e| Error::Cluster(e.to_string()))?)
    } else {
        None
    };
    let started = timely::execute(config, work);
    formed.store(true, Ordering::Release);
    drop(captured);
    let guards = started.map_err(|e| {
        Error::Cluster(format!(
            "process {} could not join the cluster at {}: {e}",
            cluster.process, cluster.addresses[cluster.process]
        ))
    })?;
    let mut output = None;
    for joined in guards.join() {
        let result = joined.map_err(|e| Error::Cluster(format!("a worker failed: {e}")))?;
        if let Some(o) = result.map_err(Error::Cluster)? {
            output = Some(o);
        }
    }
    Ok(output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostfiles_are_checked_line_by_line() {
        let dir = tempfile::tempdir().unwrap();
        let write = |text: &str| {
            let path = dir.path().join("hosts");
            std::fs::write(&path, text).unwrap();
            path
        };
        let ok = read_hostfile(&write("# cluster\n127.0.0.1:2101\n\nlocalhost:2102\n")).unwrap();
        assert_eq!(ok, ["127.0.0.1:2101", "localhost:2102"]);
        for (text, want) in [
            ("127.0.0.1:2101\n127.0.0.1:2101\n", "hosts:2: 127.0.0.1:2101 is listed twice"),
            ("127.0.0.1:2101\nlocalhost:2101\n", "the address of line 1"),
            ("127.0.0.1\n", "hosts:1: \"127.0.0.1\" is not host:port"),
            ("127.0.0.1:99999\n", "port 0-65535"),
            ("# nothing\n", "no addresses"),
        ] {
            let err = read_hostfile(&write(text)).unwrap_err().to_string();
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }

    #[test]
    fn formation_names_the_peers_that_did_not_connect() {
        let addresses: Vec<String> = (0..4).map(|i| format!("127.0.0.1:{}", 2100 + i)).collect();
        let mut f = Formation { last_error: vec![None; 4], ..Default::default() };
        f.read("worker 2:\tconnection to worker 0");
        f.read(
            "worker 2:\terror connecting to worker 1: Connection refused (os error 111); retrying",
        );
        let missing = f.missing(2, &addresses);
        assert_eq!(
            missing,
            "process 1 at 127.0.0.1:2101: Connection refused (os error 111); \
             process 3 at 127.0.0.1:2103 never connected to this one"
        );
    }
}
