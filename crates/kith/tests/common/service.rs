//! What the `kith serve` tests share: an HTTP client, JSON responses, a Redis, and a store
//! of a generated graph to serve (copied per configuration).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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

/// A Redis for the tests: the one the test command started (`KITH_TEST_REDIS`), or a
/// private `redis-server` on a free port.
pub struct Redis {
    pub url: String,
    _child: Option<Child>,
}

impl Redis {
    pub fn get() -> Redis {
        if let Ok(url) = std::env::var("KITH_TEST_REDIS") {
            return Redis { url, _child: None };
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server not found: install it (apt-get install redis-server) or set KITH_TEST_REDIS");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Redis { url: format!("redis://127.0.0.1:{port}"), _child: Some(child) }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        if let Some(c) = &mut self._child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
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
