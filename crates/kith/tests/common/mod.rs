//! Helpers shared by the `kith` binary's integration tests: run the real binary and check
//! its output.

#![allow(dead_code)] // each test file uses its own subset

pub mod feeds;
pub mod service;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use reqwest::blocking::Client;
use serde_json::Value;

pub fn kith(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kith")).args(args).output().expect("run kith")
}

pub fn ok(args: &[&str]) -> String {
    let out = kith(args);
    assert!(out.status.success(), "kith {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// Runs a command that must fail; returns its one-line error message.
pub fn fails(args: &[&str]) -> String {
    let out = kith(args);
    assert!(!out.status.success(), "kith {args:?} succeeded");
    let stderr = String::from_utf8(out.stderr).expect("utf-8 stderr");
    assert_eq!(stderr.lines().count(), 1, "not one line: {stderr:?}");
    assert!(stderr.starts_with("kith: error: "), "{stderr:?}");
    stderr.trim_end().to_owned()
}

pub fn p(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

pub fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).expect("valid JSON")
}

/// Builds a store of `graph` with `kith store build` under a layout method, 40-byte data.
pub fn build_store(graph: &Path, store: &Path, method: &str) {
    ok(&["store", "build", p(graph), "--dir", p(store), "--method", method, "--data-bytes", "40"]);
}

/// Builds `graph` into a new keyspace of the test Cassandra cluster (runs of 16 users per
/// partition) and returns the keyspace.
pub fn build_cassandra(graph: &Path, method: &str) -> String {
    let hosts = kith_cassandra::testing::hosts().join(",");
    let keyspace = kith_cassandra::testing::keyspace(method);
    ok(&[
        "store",
        "build",
        p(graph),
        "--cassandra",
        &hosts,
        "--keyspace",
        &keyspace,
        "--method",
        method,
        "--partition-users",
        "16",
        "--data-bytes",
        "40",
    ]);
    keyspace
}

/// Drops a keyspace `build_cassandra` made, once its test is done with it: a test cluster
/// holding every keyspace of a run would keep thousands of tables in its nodes' small heaps.
pub fn drop_cassandra(keyspace: &str) {
    let hosts = kith_cassandra::testing::hosts().join(",");
    ok(&["store", "drop", "--cassandra", &hosts, "--keyspace", keyspace]);
}

/// Generates a seeded LFR graph of `nodes` users (ids 0..nodes) with `kith graph generate`.
pub fn lfr_graph(path: &Path, nodes: &str, avg_degree: &str, seed: &str) {
    ok(&[
        "graph",
        "generate",
        "--model",
        "lfr",
        "--nodes",
        nodes,
        "--avg-degree",
        avg_degree,
        "--seed",
        seed,
        "-o",
        p(path),
    ]);
}

/// A running `kith serve`; killed when dropped.
pub struct Server {
    pub child: Child,
    pub base: String,
}

impl Server {
    pub fn start(dir: &Path, extra: &[&str]) -> Server {
        let mut command = Command::new(env!("CARGO_BIN_EXE_kith"));
        command.args(["serve", "--dir", p(dir), "--addr", "127.0.0.1:0"]).args(extra);
        Server::spawn(command.stderr(Stdio::inherit()))
    }

    /// Serves the store in `keyspace` on the test Cassandra cluster, its write-back journal
    /// in `journal`.
    pub fn start_cassandra(keyspace: &str, journal: &Path, extra: &[&str]) -> Server {
        let hosts = kith_cassandra::testing::hosts().join(",");
        let mut command = Command::new(env!("CARGO_BIN_EXE_kith"));
        command
            .args(["serve", "--cassandra", &hosts, "--keyspace", keyspace])
            .args(["--journal-dir", p(journal), "--addr", "127.0.0.1:0"])
            .args(extra);
        Server::spawn(command.stderr(Stdio::inherit()))
    }

    /// Runs `command` (a `kith serve` on `127.0.0.1:0`, whatever binary and flags) and waits
    /// for the first line of its output, which names the address it serves.
    pub fn spawn(command: &mut Command) -> Server {
        let mut child = command.stdout(Stdio::piped()).spawn().expect("start kith serve");
        let mut line = String::new();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        out.read_line(&mut line).unwrap();
        // Keep reading, so the server's later output never meets a closed pipe.
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        let addr = line
            .split("http://")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        Server { child, base: format!("http://{addr}") }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Waits until the fan-out queue is empty.
    pub fn settle(&self, http: &Client) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let s: Value = http.get(self.url("/stats")).send().unwrap().json().unwrap();
            if s["fanout_queue_depth"] == 0 {
                return;
            }
            assert!(Instant::now() < deadline, "fan-out did not drain: {s}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    pub fn signal(&mut self, sig: &str) -> std::process::ExitStatus {
        Command::new("kill").args([sig, &self.child.id().to_string()]).status().unwrap();
        self.child.wait().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
