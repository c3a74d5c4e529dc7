//! Durable fan-out: a post acknowledged just before a crash reaches every follower's Redis
//! timeline after the restart, although its fan-out never ran.
//!
//! The crash is in process: the feed runs on a runtime of its own, and dropping that runtime
//! cancels every task and loses every in-memory queue at once, as SIGKILL would; what
//! survives is exactly what SIGKILL leaves (the store's synced RocksDB, and Redis, which is
//! another process). Redis's writes are paused (`CLIENT PAUSE … WRITE`) while the post is
//! acknowledged, so its fan-out cannot have reached the timeline before the crash.

mod common;

use common::{feed_contents, open_feed, prefix, runtime, small_store};
use kith_feed::testing::RedisServer;
use kith_feed::{CacheMode, FeedConfig, Strategy};

fn config(redis: &RedisServer, prefix: &str, strategy: Strategy) -> FeedConfig {
    FeedConfig {
        strategy,
        cache: CacheMode::None,
        redis: Some(redis.url().to_string()),
        redis_prefix: prefix.into(),
        ..Default::default()
    }
}

fn crash_after_ack(strategy: Strategy) {
    let dir = tempfile::tempdir().unwrap();
    let store = small_store(dir.path(), 8);
    let redis = RedisServer::start();
    let prefix = prefix("crash");
    let rt = runtime();
    let feed = open_feed(&rt, &store, config(&redis, &prefix, strategy));
    for follower in 1..4 {
        rt.block_on(feed.follow(follower, vec![0])).unwrap();
    }
    rt.block_on(feed.post(0, "before".into())).unwrap();
    rt.block_on(feed.drain());
    // The followers' timelines now exist in Redis, complete down to floor 0.
    for follower in 1..4 {
        assert_eq!(feed_contents(&rt, &feed, follower), ["before"]);
    }
    redis.command(&["CLIENT", "PAUSE", "20000", "WRITE"]);
    rt.block_on(feed.post(0, "acknowledged".into())).unwrap();
    // Crash: every task and queue of this feed goes, nothing is flushed or drained.
    drop(feed);
    rt.shutdown_timeout(std::time::Duration::from_secs(10));
    redis.command(&["CLIENT", "UNPAUSE"]);

    let rt = runtime();
    let feed = open_feed(&rt, &store, config(&redis, &prefix, strategy));
    rt.block_on(feed.drain());
    for follower in 1..4 {
        assert_eq!(
            feed_contents(&rt, &feed, follower),
            ["acknowledged", "before"],
            "follower {follower}'s timeline after the crash ({strategy:?})"
        );
    }
    rt.block_on(feed.shutdown()).unwrap();
}

#[test]
fn an_acknowledged_push_post_reaches_timelines_after_a_crash() {
    crash_after_ack(Strategy::Push);
}

#[test]
fn an_acknowledged_hybrid_post_reaches_timelines_after_a_crash() {
    crash_after_ack(Strategy::Hybrid);
}

/// Cache-aside over Redis: a Redis failure after the post is durable (here, `DEL` refused)
/// no longer fails the write; the answer carries a warning, and the followers' timelines
/// still get the post.
#[test]
fn a_cache_failure_after_the_commit_is_a_warning_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = small_store(dir.path(), 4);
    let redis = RedisServer::start();
    let config =
        FeedConfig { cache: CacheMode::Aside, ..config(&redis, &prefix("aside"), Strategy::Push) };
    let rt = runtime();
    let feed = open_feed(&rt, &store, config);
    rt.block_on(feed.follow(1, vec![0])).unwrap();
    assert!(feed_contents(&rt, &feed, 1).is_empty());
    redis.command(&["ACL", "SETUSER", "default", "-del", "-unlink"]);
    let posted = rt.block_on(feed.post_with(kith_feed::PostRequest {
        author: 0,
        content: "stored".into(),
        ..Default::default()
    }));
    let posted = posted.expect("a durable post is acknowledged although Redis failed after");
    assert_eq!(posted.warnings.len(), 1, "{:?}", posted.warnings);
    rt.block_on(feed.drain());
    assert_eq!(feed_contents(&rt, &feed, 1), ["stored"]);
    rt.block_on(feed.shutdown()).unwrap();
}

/// Fan-out that Redis refuses (here, scripts denied) is kept and retried with backoff, and
/// holds the watermark back meanwhile; once Redis takes it, the timeline has the post.
#[test]
fn failed_fan_out_is_retried_until_redis_takes_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = small_store(dir.path(), 4);
    let redis = RedisServer::start();
    let rt = runtime();
    let feed = open_feed(&rt, &store, config(&redis, &prefix("retry"), Strategy::Push));
    rt.block_on(feed.follow(1, vec![0])).unwrap();
    assert!(feed_contents(&rt, &feed, 1).is_empty());
    redis.command(&["ACL", "SETUSER", "default", "-evalsha", "-eval"]);
    rt.block_on(feed.post(0, "retried".into())).unwrap();
    rt.block_on(feed.drain());
    assert_eq!(feed.fanout_unfinished(), 1, "the failed fan-out is kept, not dropped");
    redis.command(&["ACL", "SETUSER", "default", "+evalsha", "+eval"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while feed.fanout_unfinished() > 0 {
        assert!(std::time::Instant::now() < deadline, "the fan-out was not retried");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(feed_contents(&rt, &feed, 1), ["retried"]);
    rt.block_on(feed.shutdown()).unwrap();
}

/// Hybrid feeds: an unfollow that ends an author's celebrity owes its followers the author's
/// recent posts (pulled until then, never pushed). That re-push is stored with the unfollow,
/// so a crash before it ran (here, Redis's writes paused) does not lose it: after the restart
/// the followers' timelines have the post.
#[test]
fn a_re_push_owed_by_an_unfollow_survives_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let store = small_store(dir.path(), 8);
    let redis = RedisServer::start();
    let prefix = prefix("repush");
    let config = FeedConfig { celebrity_threshold: 2, ..config(&redis, &prefix, Strategy::Hybrid) };
    let rt = runtime();
    let feed = open_feed(&rt, &store, config.clone());
    rt.block_on(feed.follow(1, vec![0])).unwrap();
    rt.block_on(feed.follow(2, vec![0])).unwrap();
    rt.block_on(feed.post(0, "early".into())).unwrap();
    rt.block_on(feed.drain());
    // A third follower makes 0 a celebrity: its next post is pulled by readers, not pushed.
    rt.block_on(feed.follow(3, vec![0])).unwrap();
    rt.block_on(feed.post(0, "pulled".into())).unwrap();
    rt.block_on(feed.drain());
    for follower in 1..3 {
        assert_eq!(feed_contents(&rt, &feed, follower), ["pulled", "early"]);
    }
    redis.command(&["CLIENT", "PAUSE", "20000", "WRITE"]);
    // Back to 2 followers: 0's posts are pushed again, and "pulled" is owed to 1 and 2.
    rt.block_on(feed.unfollow(3, 0)).unwrap();
    drop(feed);
    rt.shutdown_timeout(std::time::Duration::from_secs(10));
    redis.command(&["CLIENT", "UNPAUSE"]);

    let rt = runtime();
    let feed = open_feed(&rt, &store, config);
    rt.block_on(feed.drain());
    for follower in 1..3 {
        assert_eq!(
            feed_contents(&rt, &feed, follower),
            ["pulled", "early"],
            "follower {follower}'s timeline after the crash"
        );
    }
    rt.block_on(feed.shutdown()).unwrap();
}

/// A follow whose backfill and followee-list invalidation Redis refuses (scripts denied: not
/// an outage) leaves nothing stale for another server sharing the cache: the server that
/// failed stops trusting Redis until it has deleted the follower's timeline and list, and
/// the other builds them again from the store.
#[test]
fn a_follow_whose_backfill_failed_leaves_no_timeline_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = small_store(dir.path(), 4);
    let redis = RedisServer::start();
    let config = FeedConfig {
        cache: CacheMode::Aside,
        ..config(&redis, &prefix("backfill"), Strategy::Push)
    };
    let rt = runtime();
    let engine: std::sync::Arc<dyn kith_store::Engine> = std::sync::Arc::new(
        kith_store::Store::open(&path, &kith_store::OpenOptions::default()).unwrap(),
    );
    let registry = prometheus::Registry::new();
    let open = |journal: &str| {
        let (engine, journal) = (engine.clone(), dir.path().join(journal));
        rt.block_on(kith_feed::Feed::open(engine, journal, config.clone(), &registry)).unwrap()
    };
    let (a, b) = (open("journal-a"), open("journal-b"));
    rt.block_on(a.post(0, "earlier".into())).unwrap();
    rt.block_on(a.drain());
    // Server b builds 1's timeline (empty: 1 follows nobody yet).
    assert!(feed_contents(&rt, &b, 1).is_empty());
    redis.command(&["ACL", "SETUSER", "default", "-evalsha", "-eval"]);
    rt.block_on(a.follow(1, vec![0])).expect("the follow is stored; the backfill is the cache's");
    // Server a no longer trusts the entries it failed to update, and says so until it has
    // deleted them from Redis.
    assert!(a.cache_failure().is_some(), "a trusts a cache that refused its updates");
    redis.command(&["ACL", "SETUSER", "default", "+evalsha", "+eval"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while a.cache_failure().is_some() {
        assert!(std::time::Instant::now() < deadline, "a never trusted Redis again");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(feed_contents(&rt, &b, 1), ["earlier"], "served the timeline without the backfill");
    rt.block_on(a.shutdown()).unwrap();
    rt.block_on(b.shutdown()).unwrap();
}

/// An unfollow whose timeline removal Redis refuses leaves the unfollowed author's posts in
/// the follower's timeline: a feed read leaves them out and fills the page from below, so
/// the page is not short, however many there are above (a read took at most 4 rounds of
/// what it still wanted: 12 such posts left a page of 3 empty).
#[test]
fn a_feed_page_is_filled_past_posts_of_someone_no_longer_followed() {
    let dir = tempfile::tempdir().unwrap();
    let store = small_store(dir.path(), 4);
    let redis = RedisServer::start();
    let config =
        FeedConfig { cache: CacheMode::Aside, ..config(&redis, &prefix("stray"), Strategy::Push) };
    let rt = runtime();
    let feed = open_feed(&rt, &store, config);
    rt.block_on(feed.follow(1, vec![0, 2])).unwrap();
    for content in ["a1", "a2", "a3"] {
        rt.block_on(feed.post(0, content.into())).unwrap();
    }
    for k in 1..=12 {
        rt.block_on(feed.post(2, format!("b{k}"))).unwrap();
    }
    rt.block_on(feed.drain());
    let page = |limit| -> Vec<String> {
        let page = rt.block_on(feed.feed(1, None, limit)).unwrap();
        page.posts.iter().map(|p| p.content.clone()).collect()
    };
    assert_eq!(page(3), ["b12", "b11", "b10"]);
    redis.command(&["ACL", "SETUSER", "default", "-zrem"]);
    rt.block_on(feed.unfollow(1, 2)).expect("the unfollow is stored; the removal is the cache's");
    redis.command(&["ACL", "SETUSER", "default", "+zrem"]);
    assert_eq!(page(3), ["a3", "a2", "a1"], "a short page");
    assert_eq!(page(2), ["a3", "a2"]);
    rt.block_on(feed.shutdown()).unwrap();
}

/// A feed read that took its followee list before a follow, and reads the timeline after
/// the follow's backfill, leaves the new followee's posts out of its page but not out of the
/// timeline: the next read shows them. (Before, it removed them from the timeline as posts
/// of someone not followed, for every later read.)
#[test]
fn a_feed_read_with_a_followee_list_older_than_a_follow_keeps_its_posts_in_the_timeline() {
    use redis::Commands;
    let dir = tempfile::tempdir().unwrap();
    let store = small_store(dir.path(), 4);
    let redis = RedisServer::start();
    let prefix = prefix("racedfollow");
    let config = FeedConfig { cache: CacheMode::Aside, ..config(&redis, &prefix, Strategy::Push) };
    let rt = runtime();
    let feed = open_feed(&rt, &store, config);
    rt.block_on(feed.follow(1, vec![0, 2])).unwrap();
    for (author, content) in [(0, "a1"), (0, "a2"), (2, "b1"), (2, "b2")] {
        rt.block_on(feed.post(author, content.into())).unwrap();
    }
    rt.block_on(feed.drain());
    let page = || -> Vec<String> {
        let page = rt.block_on(feed.feed(1, None, 10)).unwrap();
        page.posts.iter().map(|p| p.content.clone()).collect()
    };
    assert_eq!(page(), ["b2", "b1", "a2", "a1"]);
    // The list as a read begun before the follow of 2 holds it: [cap, followees...].
    let key = format!("{prefix}:g:{{1}}");
    let stale: Vec<u8> = [u64::MAX, 0].iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut con = redis::Client::open(redis.url()).unwrap().get_connection().unwrap();
    let _: () = con.set(&key, stale).unwrap();
    assert_eq!(page(), ["a2", "a1"], "that read's page leaves 2's posts out");
    let _: () = con.del(&key).unwrap();
    assert_eq!(page(), ["b2", "b1", "a2", "a1"], "and the timeline still holds them");
    rt.block_on(feed.shutdown()).unwrap();
}
