//! One node of a local Redis Cluster: its process and the one-off commands that ask it
//! about the cluster (bounded in time), and the waiting and reporting helpers the cluster
//! uses.

use std::time::{Duration, Instant};

use super::{ClusterError, RedisNode, Result, fail};

impl RedisNode {
    /// `address:port`.
    pub fn endpoint(&self) -> String {
        format!("{}:{}", self.address, self.port)
    }

    /// Whether its process runs (a `redis-server`: a pid recorded before a reboot may
    /// name another process since).
    pub fn alive(&self) -> bool {
        self.pid.is_some_and(|p| {
            pid_alive(p)
                && std::fs::read(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| c.windows(12).any(|w| w == b"redis-server"))
        })
    }

    /// Sends one command on a connection of its own (5 s bounds) and returns the reply as
    /// text.
    pub fn query(&self, args: &[&str]) -> Result<String> {
        command(self, args).map_err(|e| ClusterError(format!("{} {args:?}: {e}", self.endpoint())))
    }

    pub(super) fn signal(&self, signal: i32) {
        if let Some(pid) = self.pid.filter(|_| self.alive()) {
            // SAFETY: kill(2) with a pid this cluster started and a valid signal number.
            unsafe {
                libc::kill(pid as i32, signal);
            }
        }
    }
}

pub(super) fn ping(n: &RedisNode) -> redis::RedisResult<String> {
    command(n, &["PING"])
}

pub(super) fn cluster_ok(n: &RedisNode) -> bool {
    command(n, &["CLUSTER", "INFO"]).is_ok_and(|info| info.contains("cluster_state:ok"))
}

/// A master, or a replica whose link to its master is up (its initial sync done).
pub(super) fn synced(n: &RedisNode) -> bool {
    command(n, &["INFO", "replication"])
        .is_ok_and(|info| info.contains("role:master") || info.contains("master_link_status:up"))
}

pub(super) fn known_nodes(n: &RedisNode) -> Option<usize> {
    let info = command(n, &["CLUSTER", "INFO"]).ok()?;
    info.lines()
        .find_map(|l| l.strip_prefix("cluster_known_nodes:"))
        .and_then(|v| v.trim().parse().ok())
}

/// `master` or `replica`, from a `CLUSTER NODES` line's flags.
pub(super) fn role_of(line: &str) -> &'static str {
    match line.split(' ').nth(2) {
        Some(flags) if flags.split(',').any(|f| f == "master") => "master",
        Some(flags) if flags.split(',').any(|f| f == "slave") => "replica",
        _ => "-",
    }
}

/// How many slots a `CLUSTER NODES` line's ranges cover.
pub(super) fn slots_of(line: &str) -> u32 {
    line.split(' ')
        .skip(8)
        .filter(|r| !r.starts_with('['))
        .map(|r| match r.split_once('-') {
            Some((lo, hi)) => {
                hi.parse::<u32>().unwrap_or(0).saturating_sub(lo.parse().unwrap_or(0)) + 1
            }
            None => u32::from(r.parse::<u32>().is_ok()),
        })
        .sum()
}

/// One command on a fresh connection, bounded by 5 s, its reply as text.
pub(super) fn command(n: &RedisNode, args: &[&str]) -> redis::RedisResult<String> {
    let bound = Duration::from_secs(5);
    let client = redis::Client::open(format!("redis://{}", n.endpoint()))?;
    let mut con = client.get_connection_with_timeout(bound)?;
    con.set_read_timeout(Some(bound))?;
    con.set_write_timeout(Some(bound))?;
    let (name, rest) = args.split_first().expect("a command");
    let mut cmd = redis::cmd(name);
    for a in rest {
        cmd.arg(*a);
    }
    Ok(match cmd.query::<redis::Value>(&mut con)? {
        redis::Value::Okay => "OK".into(),
        redis::Value::Nil => String::new(),
        redis::Value::Int(i) => i.to_string(),
        redis::Value::SimpleString(s) => s,
        redis::Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
        redis::Value::VerbatimString { text, .. } => text,
        other => format!("{other:?}"),
    })
}

pub(super) fn wait_for(
    deadline: Instant,
    mut done: impl FnMut() -> bool,
    what: impl Fn() -> String,
) -> Result<()> {
    loop {
        if done() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return fail(what());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub(super) fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

/// Whether a process with this id runs and is not a zombie (reaping it if it was ours).
pub(super) fn pid_alive(pid: u32) -> bool {
    let mut status = 0;
    // SAFETY: waitpid(2) with a valid pointer; WNOHANG never blocks.
    unsafe {
        libc::waitpid(pid as i32, &mut status, libc::WNOHANG);
    }
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| s.rsplit_once(')').is_some_and(|(_, r)| !r.trim_start().starts_with('Z')))
}
