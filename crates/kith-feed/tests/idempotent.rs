//! Idempotent writes: a retry under the same idempotency key (or a post under the same
//! client id) is answered with the first result and stores nothing again, also after a
//! crash; a key reused for another request, or a client id taken by another post, is
//! refused. On a real store; the crash drops the feed's runtime (see `durable_fanout.rs`).

mod common;

use common::{open_feed, runtime, small_store};
use kith_feed::{CacheMode, Error, FeedConfig, PostRequest};

fn keyed(author: u64, content: &str, key: &str) -> PostRequest {
    PostRequest {
        author,
        content: content.into(),
        idempotency_key: Some(key.into()),
        ..Default::default()
    }
}

fn posts_by(rt: &tokio::runtime::Runtime, feed: &kith_feed::Feed, reader: u64) -> Vec<String> {
    rt.block_on(feed.feed(reader, None, 100))
        .unwrap()
        .posts
        .iter()
        .map(|p| p.content.clone())
        .collect()
}

fn retried_posts_apply_once(cache: CacheMode) {
    let dir = tempfile::tempdir().unwrap();
    let store = small_store(dir.path(), 4);
    let config = FeedConfig { cache, ..Default::default() };
    let rt = runtime();
    let feed = open_feed(&rt, &store, config.clone());
    rt.block_on(feed.follow(1, vec![0])).unwrap();
    let first = rt.block_on(feed.post_with(keyed(0, "hello", "key-1"))).unwrap();
    assert!(!first.replayed);
    let again = rt.block_on(feed.post_with(keyed(0, "hello", "key-1"))).unwrap();
    assert_eq!((again.post.id, again.post.ts_ms), (first.post.id, first.post.ts_ms));
    assert!(again.replayed, "{cache:?}: a retry is answered from the first result");
    assert_eq!(posts_by(&rt, &feed, 1), ["hello"], "{cache:?}: posted once");
    let reused = rt.block_on(feed.post_with(keyed(0, "other", "key-1")));
    assert!(matches!(reused, Err(Error::IdempotencyKeyReused { .. })), "{reused:?}");
    // Crash and retry: the key survives with the post.
    drop(feed);
    rt.shutdown_timeout(std::time::Duration::from_secs(10));
    let rt = runtime();
    let feed = open_feed(&rt, &store, config);
    let after = rt.block_on(feed.post_with(keyed(0, "hello", "key-1"))).unwrap();
    assert_eq!(after.post.id, first.post.id);
    assert!(after.replayed);
    assert_eq!(posts_by(&rt, &feed, 1), ["hello"], "{cache:?}: still once after the crash");
    rt.block_on(feed.shutdown()).unwrap();
}

#[test]
fn a_retried_post_is_applied_once_across_a_crash() {
    retried_posts_apply_once(CacheMode::Aside);
}

#[test]
fn a_retried_write_back_post_is_applied_once_across_a_crash() {
    retried_posts_apply_once(CacheMode::WriteBack);
}

#[test]
fn client_ids_are_idempotent_and_not_taken_twice() {
    let dir = tempfile::tempdir().unwrap();
    let store = small_store(dir.path(), 4);
    let rt = runtime();
    let feed = open_feed(&rt, &store, FeedConfig::default());
    let id = 1 << 50;
    let with_id = |content: &str| PostRequest {
        author: 0,
        content: content.into(),
        id: Some(id),
        ts_ms: Some(1_700_000_000_000),
        ..Default::default()
    };
    let first = rt.block_on(feed.post_with(with_id("mine"))).unwrap();
    assert_eq!((first.post.id, first.post.ts_ms, first.replayed), (id, 1_700_000_000_000, false));
    let again = rt.block_on(feed.post_with(with_id("mine"))).unwrap();
    assert!(again.replayed);
    let taken = rt.block_on(feed.post_with(with_id("someone else's")));
    assert!(matches!(taken, Err(Error::PostIdTaken(i)) if i == id), "{taken:?}");
    let next = rt.block_on(feed.post(0, "generated".into())).unwrap();
    assert!(next.id > id, "generated ids stay above client ids");
    for bad in [0, 1 << 53] {
        let r = rt.block_on(feed.post_with(PostRequest { id: Some(bad), ..with_id("x") }));
        assert!(matches!(r, Err(Error::Invalid(_))), "{r:?}");
    }
    rt.block_on(feed.shutdown()).unwrap();
}

#[test]
fn retried_follows_and_friend_changes_apply_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = small_store(dir.path(), 4);
    let rt = runtime();
    let feed = open_feed(&rt, &store, FeedConfig::default());
    let key = |k: &str| Some(k.to_string());
    let f = rt.block_on(feed.follow_keyed(1, vec![2], key("f"))).unwrap();
    assert!(!f.replayed);
    // Without the key, the retry would be 409 already_following.
    assert!(rt.block_on(feed.follow_keyed(1, vec![2], key("f"))).unwrap().replayed);
    let reused = rt.block_on(feed.follow_keyed(1, vec![3], key("f")));
    assert!(matches!(reused, Err(Error::IdempotencyKeyReused { .. })), "{reused:?}");
    assert!(!rt.block_on(feed.unfollow_keyed(1, 2, key("u"))).unwrap().replayed);
    assert!(rt.block_on(feed.unfollow_keyed(1, 2, key("u"))).unwrap().replayed);
    let add = rt.block_on(feed.friend_keyed(1, 2, true, key("a"))).unwrap();
    assert_eq!((add.value, add.replayed), (true, false));
    rt.block_on(feed.delete_friend(1, 2)).unwrap();
    // A retry of the add after a delete is the first add's answer, and adds nothing.
    let retry = rt.block_on(feed.friend_keyed(1, 2, true, key("a"))).unwrap();
    assert_eq!((retry.value, retry.replayed), (true, true));
    let friends = rt.block_on(feed.friends(1, 0, 10, kith_feed::Consistency::Strong)).unwrap();
    assert!(friends.friends.is_empty(), "{friends:?}");
    for bad in ["", "has space", &"k".repeat(256)] {
        let r = rt.block_on(feed.follow_keyed(1, vec![3], key(bad)));
        assert!(matches!(r, Err(Error::Invalid(_))), "{bad:?}: {r:?}");
    }
    rt.block_on(feed.shutdown()).unwrap();
}
