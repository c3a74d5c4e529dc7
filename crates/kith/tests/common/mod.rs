//! Helpers shared by the `kith` binary's integration tests: run the real binary and check
//! its output.

#![allow(dead_code)] // each test file uses its own subset

use std::path::Path;
use std::process::{Command, Output};

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
