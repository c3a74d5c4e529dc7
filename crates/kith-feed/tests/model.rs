//! Model-based test of the feed: random sequences of posts, follows, unfollows, feed reads
//! (with their next page) and crashes, against a brute-force feed (every post of every
//! followee, newest first), for pull, push and hybrid, cache-aside and write-back, on the
//! in-process backend over a real RocksDB store.
//!
//! A crash drops the feed without [`Feed::shutdown`]: the feed lives in its own tokio
//! runtime, which is dropped with it, so its flusher and fan-out tasks die where they are,
//! unflushed write-back posts stay only in the journal, and in-process timelines are lost.
//! Then the store is reopened and the feed opened over the same store and journal
//! directory. (The journal thread finishes writing what it was given, as the kernel would
//! after a process crash; power loss is the journal's own test, over a simulated disk.)
//!
//! `KITH_MODEL_CASES` sets the cases per configuration (default 8).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use kith_feed::{CacheMode, Feed, FeedConfig, Strategy as Assembly};
use kith_store::{BuildOptions, DataSpec, Engine, LayoutMeta, OpenOptions, Store};
use proptest::prelude::*;

/// Users 1..=USERS (the paper's example graph).
const USERS: u64 = 7;

#[derive(Clone, Debug)]
enum Op {
    Post(u64),
    Follow(u64, u64),
    Unfollow(u64, u64),
    Read(u64, usize),
    Crash,
}

fn op() -> impl Strategy<Value = Op> {
    let user = 1..=USERS;
    prop_oneof![
        4 => user.clone().prop_map(Op::Post),
        3 => (user.clone(), 1..=USERS).prop_map(|(u, t)| Op::Follow(u, t)),
        1 => (user.clone(), 1..=USERS).prop_map(|(u, t)| Op::Unfollow(u, t)),
        3 => (user, 1..6usize).prop_map(|(u, l)| Op::Read(u, l)),
        1 => Just(Op::Crash),
    ]
}

/// The brute-force feed.
#[derive(Default)]
struct Model {
    follows: BTreeSet<(u64, u64)>,
    /// (id, author) of every acknowledged post.
    posts: Vec<(u64, u64)>,
}

impl Model {
    /// Every post of `uid`'s followees, newest first.
    fn feed(&self, uid: u64) -> Vec<u64> {
        let mut ids: Vec<u64> = self
            .posts
            .iter()
            .filter(|(_, a)| self.follows.contains(&(uid, *a)))
            .map(|&(id, _)| id)
            .collect();
        ids.sort_unstable_by(|a, b| b.cmp(a));
        ids
    }
}

/// One life of the feed: its runtime, the feed, and the store under it.
struct Life {
    rt: tokio::runtime::Runtime,
    feed: Arc<Feed>,
}

fn open(store: &Path, journal: &Path, config: &FeedConfig) -> Life {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let engine: Arc<dyn Engine> =
        Arc::new(Store::open(store, &OpenOptions::default()).expect("reopen the store"));
    let registry = prometheus::Registry::new();
    let feed = rt
        .block_on(Feed::open(engine, journal.to_path_buf(), config.clone(), &registry))
        .expect("open the feed");
    Life { rt, feed }
}

fn run(strategy: Assembly, cache: CacheMode, ops: &[Op]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().expect("tempdir");
    let store: PathBuf = dir.path().join("store");
    let journal = dir.path().join("journal");
    let graph = kith_layout::paper_example();
    let layout = kith_layout::Layout::identity(graph.num_nodes());
    let options = BuildOptions { data: DataSpec::Fixed(8), ..BuildOptions::default() };
    drop(
        kith_store::build(&store, &graph, &layout, LayoutMeta::default(), &options).expect("build"),
    );
    // A small celebrity threshold, so hybrid pushes some authors and pulls others.
    let config = FeedConfig {
        strategy,
        cache,
        celebrity_threshold: 2,
        flush_interval: std::time::Duration::from_millis(5),
        ..FeedConfig::default()
    };
    let mut model = Model::default();
    let mut life = Some(open(&store, &journal, &config));
    for (step, op) in ops.iter().enumerate() {
        let Life { rt, feed } = life.as_ref().expect("open");
        match *op {
            Op::Post(author) => {
                let content = format!("step {step} by {author}");
                let post = rt.block_on(feed.post(author, content)).expect("post");
                model.posts.push((post.id, author));
            }
            Op::Follow(u, t) => {
                let got = rt.block_on(feed.follow(u, vec![t]));
                let valid = u != t && !model.follows.contains(&(u, t));
                prop_assert_eq!(got.is_ok(), valid, "step {}: follow {} {}: {:?}", step, u, t, got);
                if valid {
                    model.follows.insert((u, t));
                }
            }
            Op::Unfollow(u, t) => {
                let got = rt.block_on(feed.unfollow(u, t));
                let valid = model.follows.remove(&(u, t));
                prop_assert_eq!(
                    got.is_ok(),
                    valid,
                    "step {}: unfollow {} {}: {:?}",
                    step,
                    u,
                    t,
                    got
                );
            }
            Op::Read(uid, limit) => {
                // Fan-out is asynchronous: a read after it settles must be exact.
                rt.block_on(feed.drain());
                let want = model.feed(uid);
                let page = rt.block_on(feed.feed(uid, None, limit)).expect("feed");
                let got: Vec<u64> = page.posts.iter().map(|p| p.id).collect();
                prop_assert_eq!(
                    &got[..],
                    &want[..want.len().min(limit)],
                    "step {}: feed of {}",
                    step,
                    uid
                );
                if let Some(before) = page.next {
                    let page = rt.block_on(feed.feed(uid, Some(before), limit)).expect("page 2");
                    let got: Vec<u64> = page.posts.iter().map(|p| p.id).collect();
                    let rest: Vec<u64> = want.iter().copied().filter(|&id| id < before).collect();
                    prop_assert_eq!(
                        &got[..],
                        &rest[..rest.len().min(limit)],
                        "step {}: page 2",
                        step
                    );
                }
            }
            Op::Crash => {
                let Life { rt, feed } = life.take().expect("open");
                drop(feed);
                // Cancels the flusher and fan-out tasks where they are; the feed, its
                // journal and the store go with the last of them.
                drop(rt);
                life = Some(open(&store, &journal, &config));
            }
        }
    }
    // Every acknowledged post is readable by id at the end, after one more crash.
    drop(life.take());
    let Life { rt, feed } = open(&store, &journal, &config);
    for &(id, author) in &model.posts {
        let post = rt.block_on(feed.get_post(id));
        prop_assert!(post.as_ref().is_ok_and(|p| p.author == author), "post {}: {:?}", id, post);
    }
    rt.block_on(feed.shutdown()).expect("shutdown");
    Ok(())
}

fn cases() -> u32 {
    std::env::var("KITH_MODEL_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(8)
}

macro_rules! model_test {
    ($name:ident, $strategy:expr, $cache:expr) => {
        proptest! {
            #![proptest_config(ProptestConfig {
                cases: cases(),
                failure_persistence: None,
                ..ProptestConfig::default()
            })]
            #[test]
            fn $name(ops in proptest::collection::vec(op(), 1..40)) {
                run($strategy, $cache, &ops)?;
            }
        }
    };
}

model_test!(pull_aside, Assembly::Pull, CacheMode::Aside);
model_test!(pull_write_back, Assembly::Pull, CacheMode::WriteBack);
model_test!(push_aside, Assembly::Push, CacheMode::Aside);
model_test!(push_write_back, Assembly::Push, CacheMode::WriteBack);
model_test!(hybrid_aside, Assembly::Hybrid, CacheMode::Aside);
model_test!(hybrid_write_back, Assembly::Hybrid, CacheMode::WriteBack);
