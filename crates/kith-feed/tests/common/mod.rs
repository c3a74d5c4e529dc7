//! What the feed's integration tests share: a small real store, a private Redis, and feeds
//! opened on runtimes of their own so that a test can crash one by dropping its runtime.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kith_feed::{Feed, FeedConfig};
use kith_graph::Graph;
use kith_layout::Layout;
use kith_store::{BuildOptions, DataSpec, Engine, LayoutMeta, OpenOptions, Store, build};

/// A private `redis-server` on a free loopback port, stopped on drop (also when the test
/// fails). Private, not the shared `KITH_TEST_REDIS`, because the crash tests pause its
/// writes, which would stall every other test sharing it.
pub struct PrivateRedis {
    pub url: String,
    child: Child,
}

impl PrivateRedis {
    pub fn start() -> PrivateRedis {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let port_arg = port.to_string();
        let args = ["--port", &port_arg, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"];
        let child = Command::new("redis-server")
            .args(args)
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server not found: install it");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server on port {port} did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        PrivateRedis { url: format!("redis://127.0.0.1:{port}"), child }
    }

    /// Runs one command on a connection of its own.
    pub fn command(&self, args: &[&str]) {
        let client = redis::Client::open(self.url.as_str()).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let mut con = client.get_multiplexed_async_connection().await.unwrap();
            let mut cmd = redis::cmd(args[0]);
            for a in &args[1..] {
                cmd.arg(*a);
            }
            cmd.query_async::<()>(&mut con).await.unwrap();
        });
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A store of `n` users (uids 0..n) with no friendships, built in `dir`.
pub fn small_store(dir: &Path, n: u32) -> PathBuf {
    let graph = Graph::from_edges((0..u64::from(n)).collect(), false, Vec::new());
    let options = BuildOptions { data: DataSpec::Fixed(8), ..Default::default() };
    let path = dir.join("store");
    build(&path, &graph, &Layout::identity(n as usize), LayoutMeta::default(), &options).unwrap();
    path
}

/// A multi-threaded runtime of the test's own.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// Opens the store and a feed over it on `rt`.
pub fn open_feed(rt: &tokio::runtime::Runtime, store: &Path, config: FeedConfig) -> Arc<Feed> {
    let engine: Arc<dyn Engine> = Arc::new(Store::open(store, &OpenOptions::default()).unwrap());
    let journal = store.join("journal");
    let registry = prometheus::Registry::new();
    rt.block_on(Feed::open(engine, journal, config, &registry)).unwrap()
}

/// A Redis key prefix no other test uses.
pub fn prefix(test: &str) -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
    format!("kith-feed-test-{}-{nanos}-{test}", std::process::id())
}

/// The contents of a feed page, newest first.
pub fn feed_contents(rt: &tokio::runtime::Runtime, feed: &Feed, uid: u64) -> Vec<String> {
    let page = rt.block_on(feed.feed(uid, None, 100)).unwrap();
    page.posts.iter().map(|p| p.content.clone()).collect()
}
