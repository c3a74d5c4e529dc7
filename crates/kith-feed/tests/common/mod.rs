//! What the feed's integration tests share: a small real store, and feeds opened on runtimes
//! of their own so that a test can crash one by dropping its runtime. Their private Redis is
//! `kith_feed::testing::RedisServer`.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use kith_feed::{Feed, FeedConfig};
use kith_graph::Graph;
use kith_layout::Layout;
use kith_store::{BuildOptions, DataSpec, Engine, LayoutMeta, OpenOptions, Store, build};

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
