//! What the `kith serve` tests share: an HTTP client, JSON responses, and a store
//! of a generated graph to serve (copied per configuration).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use reqwest::blocking::{Client, Response};
use serde_json::Value;

use super::p;

pub fn client() -> Client {
    Client::builder().timeout(Duration::from_secs(30)).build().unwrap()
}

/// A response's status and JSON body (a body that is not JSON fails the test).
pub fn body(r: Response) -> (u16, Value) {
    let status = r.status().as_u16();
    let text = r.text().unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON ({status}): {text:?}")),
    )
}

/// A store of `nodes` LFR users (ids 0..nodes), built once per test.
pub fn store(dir: &Path, nodes: &str) -> PathBuf {
    let graph = dir.join("g.kgraph");
    super::lfr_graph(&graph, nodes, "8", "3");
    let store = dir.join("store");
    super::build_store(&graph, &store, "kith");
    store
}

/// Copies a store directory, so that each configuration starts from the same data.
pub fn copy_dir(from: &Path, to: &Path) {
    let status = Command::new("cp").args(["-r", p(from), p(to)]).status().unwrap();
    assert!(status.success());
}
