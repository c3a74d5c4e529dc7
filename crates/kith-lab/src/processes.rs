//! What the service benchmarks and experiments set up: a kith-layout store, and `kith serve`
//! on loopback, stopped (SIGTERM, then waited for) when dropped. Their `redis-server`s come
//! from the launcher the tests use too, `kith_feed::testing::RedisServer`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use anyhow::{Context, Result};

/// A child stopped with SIGTERM when dropped.
#[derive(Debug)]
pub(crate) struct ChildProcess(Child);

impl Drop for ChildProcess {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.0.id().to_string()]).status();
        let _ = self.0.wait();
    }
}

impl ChildProcess {
    /// Its process id.
    pub(crate) fn id(&self) -> u32 {
        self.0.id()
    }

    /// Kills it with SIGKILL, as a crash would, and waits for it.
    pub(crate) fn kill9(mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        std::mem::forget(self);
    }
}

/// Starts `kith serve --dir <store> --addr 127.0.0.1:0 <args>`; returns it and its URL.
pub(crate) fn start_server(store_dir: &Path, args: &[String]) -> Result<(ChildProcess, String)> {
    start_server_of(&std::env::current_exe()?, store_dir, args)
}

/// [`start_server`] with another kith binary.
pub(crate) fn start_server_of(
    exe: &Path,
    store_dir: &Path,
    args: &[String],
) -> Result<(ChildProcess, String)> {
    let mut command = Command::new(exe);
    command.args(["serve", "--dir"]).arg(store_dir);
    spawn_server(command, args, "127.0.0.1:0")
}

/// Starts `kith serve --cassandra <hosts> --keyspace <keyspace> --journal-dir <journal>
/// --addr <addr> <args>` (`addr` `127.0.0.1:0` for any free port); returns it and its URL.
///
/// How [`start_cassandra_server`] starts it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Launch<'a> {
    /// The kith binary (default: this one).
    pub exe: Option<&'a Path>,
    /// Its standard error goes here when given (appended), else to this process's.
    pub log: Option<&'a Path>,
    /// Its wall clock is read through this skewable clock file when given.
    pub clock: Option<&'a Path>,
}

pub(crate) fn start_cassandra_server(
    hosts: &str,
    keyspace: &str,
    journal: &Path,
    args: &[String],
    addr: &str,
    launch: Launch<'_>,
) -> Result<(ChildProcess, String)> {
    let Launch { exe, log, clock } = launch;
    let mut command = match exe {
        Some(exe) => Command::new(exe),
        None => Command::new(std::env::current_exe()?),
    };
    command.args(["serve", "--cassandra", hosts, "--keyspace", keyspace, "--journal-dir"]);
    command.arg(journal);
    if let Some(clock) = clock {
        kith_cassandra::local::clock::skew_command(&mut command, clock)?;
    }
    if let Some(log) = log {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .with_context(|| format!("opening {}", log.display()))?;
        command.stderr(file);
    }
    spawn_server(command, args, addr)
}

fn spawn_server(
    mut command: Command,
    args: &[String],
    addr: &str,
) -> Result<(ChildProcess, String)> {
    let mut child = command
        .args(["--addr", addr])
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .context("starting kith serve")?;
    let mut line = String::new();
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    stdout.read_line(&mut line)?;
    // Keep reading, so the server's later output never meets a closed pipe.
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    let server = ChildProcess(child);
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .with_context(|| format!("kith serve did not start: {line:?}"))?
        .to_string();
    Ok((server, format!("http://{addr}")))
}

/// Builds a store of `graph` (undirected) under kith's layout with 40-byte data blocks.
pub(crate) fn build_kith_store(graph: &kith_graph::Graph, dir: &Path, seed: u64) -> Result<()> {
    let config = kith_layout::LayoutConfig {
        method: kith_layout::Method::Kith,
        seed,
        progress: true,
        ..Default::default()
    };
    let layout = kith_layout::compute(graph, &config)?.layout;
    let options = kith_store::BuildOptions {
        data: kith_store::DataSpec::Fixed(40),
        seed,
        progress: true,
        ..Default::default()
    };
    drop(kith_store::build(dir, graph, &layout, kith_store::LayoutMeta::of(&config), &options)?);
    Ok(())
}
