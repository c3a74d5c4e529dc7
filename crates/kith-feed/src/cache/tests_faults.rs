//! The Redis backend under faults, each against a private `redis-server` the test starts,
//! breaks and stops (never the shared `KITH_TEST_REDIS`, which other tests use): killed and
//! restarted empty, paused with SIGSTOP, refusing writes. Every call is bounded by an outer
//! timeout, so a backend that hangs fails the test instead of hanging it.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Backend;
use super::tests::build;
use crate::config::FeedConfig;
use crate::post::Post;
use crate::testing::RedisServer;

/// The settings the tests run with: the defaults, but probing every 100 ms, and no copies in
/// this process (every call goes to Redis).
pub(super) fn settings() -> FeedConfig {
    FeedConfig {
        redis_prefix: "kith-fault-test".into(),
        friends_ttl: Duration::from_secs(600),
        redis_probe_interval: Duration::from_millis(100),
        near_bytes: 0,
        ..FeedConfig::default()
    }
}

async fn connect(url: &str) -> Backend {
    Backend::redis(url, &settings()).await.unwrap()
}

/// Runs `f`, failing the test if it takes longer than `limit`; returns what it returned and
/// how long it took.
pub(super) async fn bounded<T>(
    limit: Duration,
    what: &str,
    f: impl Future<Output = T>,
) -> (T, Duration) {
    let t = Instant::now();
    match tokio::time::timeout(limit, f).await {
        Ok(v) => (v, t.elapsed()),
        Err(_) => panic!("{what}: no answer within {limit:?}"),
    }
}

/// Calls `get_posts` until it succeeds; fails the test after `limit`.
async fn until_healthy(b: &Backend, limit: Duration) -> Duration {
    let t = Instant::now();
    loop {
        let got = bounded(Duration::from_secs(5), "get_posts", b.get_posts(&[1])).await.0;
        match got {
            Ok(_) => return t.elapsed(),
            Err(e) => assert!(t.elapsed() < limit, "still failing after {limit:?}: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn post(id: u64) -> Arc<Post> {
    Arc::new(Post { id, author: 1, ts_ms: 1_000 + id, content: format!("post {id}") })
}

#[tokio::test]
async fn reconnects_after_redis_is_killed_and_restarted_empty() {
    let mut server = RedisServer::start();
    let b = connect(server.url()).await;
    b.put_posts(&[post(1)]).await.unwrap();
    server.kill();
    let (down, _) = bounded(Duration::from_secs(5), "get_posts", b.get_posts(&[1])).await;
    assert!(down.is_err(), "a read from a killed Redis succeeded: {down:?}");
    server.restart();
    let took = until_healthy(&b, Duration::from_secs(5)).await;
    // Restarted empty: the post is a miss now, and the cache takes writes again.
    assert_eq!(b.get_posts(&[1]).await.unwrap(), vec![None]);
    b.put_posts(&[post(2)]).await.unwrap();
    assert_eq!(b.get_posts(&[2]).await.unwrap(), vec![Some(post(2))]);
    eprintln!("healthy again {took:?} after the restart");
}

/// Calls `get_posts` on a paused Redis until one fails at once (the circuit open); returns
/// how long that took and how many calls waited for Redis.
async fn until_open(b: &Backend) -> (Duration, usize) {
    let t = Instant::now();
    let mut waited = 0;
    loop {
        let (got, took) = bounded(Duration::from_secs(5), "get_posts", b.get_posts(&[1])).await;
        assert!(got.is_err(), "a paused Redis answered: {got:?}");
        if took < Duration::from_millis(50) {
            return (t.elapsed(), waited);
        }
        waited += 1;
        assert!(t.elapsed() < Duration::from_secs(5), "no circuit after {waited} timeouts");
    }
}

#[tokio::test]
async fn a_paused_redis_fails_fast_and_recovers_when_continued() {
    let server = RedisServer::start();
    let b = connect(server.url()).await;
    b.put_posts(&[post(1)]).await.unwrap();
    server.pause();
    // Calls time out until timeouts have kept coming for twice the response timeout; then
    // the circuit opens and further calls do not wait for Redis at all.
    let response = FeedConfig::default().redis_response_timeout;
    let (took, waited) = until_open(&b).await;
    assert!(took < response * 6, "the circuit opened after {took:?} ({waited} calls waited)");
    assert!(waited >= 2, "opened on the first timeout");
    for _ in 0..20 {
        let (got, took) = bounded(Duration::from_secs(5), "get_posts", b.get_posts(&[1])).await;
        assert!(got.is_err(), "{got:?}");
        assert!(took < Duration::from_millis(50), "a call with the circuit open took {took:?}");
    }
    server.resume();
    let took = until_healthy(&b, Duration::from_secs(5)).await;
    assert_eq!(b.get_posts(&[1]).await.unwrap(), vec![Some(post(1))]);
    eprintln!("healthy again {took:?} after SIGCONT");
}

/// A Redis, a backend `b` with `config`, another server's backend sharing the cache, and user
/// 1's timeline built with post 10.
async fn timeline_of_ten(config: &FeedConfig) -> (RedisServer, Backend, Backend) {
    let server = RedisServer::start();
    let b = Backend::redis(server.url(), config).await.unwrap();
    let other = connect(server.url()).await;
    build(&b, 1, &[10], 0, 100).await;
    (server, b, other)
}

/// The push of post 11 to user 1's timeline times out on a paused Redis, which is then
/// continued: one timeout, so the circuit stays closed.
async fn push_timed_out(server: &RedisServer, b: &Backend) {
    server.pause();
    let (add, _) =
        bounded(Duration::from_secs(5), "timeline_add", b.timeline_add(&[1], &[11], 100)).await;
    assert!(add.is_err(), "a paused Redis took a push: {add:?}");
    server.resume();
    assert_eq!(b.health(), None, "the circuit opened on one timeout");
}

/// A pause shorter than the window (a stall of this process or of the machine) fails the
/// calls it caught, not the next ones; a push it caught is marked and the probe deletes that
/// timeline from Redis, so no server sharing the cache serves it.
#[tokio::test]
async fn a_slow_moment_fails_only_the_calls_it_caught() {
    let (server, b, other) = timeline_of_ten(&settings()).await;
    b.put_posts(&[post(1)]).await.unwrap();
    push_timed_out(&server, &b).await;
    let (got, _) = bounded(Duration::from_secs(5), "get_posts", b.get_posts(&[1])).await;
    assert_eq!(got.unwrap(), vec![Some(post(1))], "a call after the slow moment failed");
    let (read, _) =
        bounded(Duration::from_secs(5), "timeline_read", b.timeline_read(1, u64::MAX, 10)).await;
    assert!(!matches!(read, Ok(Some(_))), "served a timeline that missed a push: {read:?}");
    let t = Instant::now();
    while server.command(&["EXISTS", "kith-fault-test:t:{1}"]) != "0" {
        assert!(t.elapsed() < Duration::from_secs(5), "the probe never deleted the timeline");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(other.timeline_read(1, u64::MAX, 10).await.unwrap(), None);
    build(&b, 1, &[11, 10], 0, 100).await;
    assert_eq!(b.timeline_read(1, u64::MAX, 10).await.unwrap(), Some((vec![11, 10], 0)));
}

/// User 5's friend list cached, then Redis made read-only (a replica of a master that does
/// not exist keeps its data and serves reads, but refuses every write with READONLY): the
/// list's invalidation fails, and is marked.
async fn friend_list_made_read_only(server: &RedisServer, b: &Backend) {
    let version = b.friends_version(5).await.unwrap();
    b.put_friends(5, Arc::from([1, 2]), &version).await.unwrap();
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    assert_eq!(server.command(&["REPLICAOF", "127.0.0.1", &dead.to_string()]), "OK");
    let (del, _) = bounded(Duration::from_secs(5), "del_friends", b.del_friends(&[5])).await;
    assert!(del.is_err(), "a replica took a DEL: {del:?}");
}

#[tokio::test]
async fn a_failed_friend_invalidation_is_never_served_stale() {
    let server = RedisServer::start();
    let b = connect(server.url()).await;
    friend_list_made_read_only(&server, &b).await;
    let (got, _) = bounded(Duration::from_secs(5), "get_friends", b.get_friends(5)).await;
    assert!(!matches!(got, Ok(Some(_))), "served a list whose invalidation failed: {got:?}");
    // Writable again: the recovery drops the stale list before anything reads it.
    assert_eq!(server.command(&["REPLICAOF", "NO", "ONE"]), "OK");
    until_healthy(&b, Duration::from_secs(5)).await;
    assert_eq!(server.command(&["EXISTS", "kith-fault-test:f:{5}"]), "0");
    assert_eq!(b.get_friends(5).await.unwrap(), None);
    let version = b.friends_version(5).await.unwrap();
    b.put_friends(5, Arc::from([2]), &version).await.unwrap();
    assert_eq!(b.get_friends(5).await.unwrap().as_deref(), Some(&[2][..]));
}

/// A change made through a server whose circuit is open (its probe far off) still drops
/// the list from Redis, past the breaker, so another server sharing the cache stops
/// serving the old list at once rather than when the first server's probe gets there.
#[tokio::test]
async fn a_change_made_while_the_circuit_is_open_drops_the_list_for_the_others() {
    let server = RedisServer::start();
    let config = FeedConfig { redis_probe_interval: Duration::from_secs(60), ..settings() };
    let a = Backend::redis(server.url(), &config).await.unwrap();
    let b = connect(server.url()).await;
    let version = b.friends_version(5).await.unwrap();
    b.put_friends(5, Arc::from([1, 2]), &version).await.unwrap();
    server.pause();
    until_open(&a).await;
    server.resume();
    let (del, _) = bounded(Duration::from_secs(5), "del_friends", a.del_friends(&[5])).await;
    assert!(del.is_err(), "a change's drop went through an open circuit: {del:?}");
    let t = Instant::now();
    while b.get_friends(5).await.unwrap().is_some() {
        assert!(t.elapsed() < Duration::from_secs(2), "the other server serves the old list");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(a.health().is_some(), "the circuit closed without its probe");
}

#[tokio::test]
async fn a_timeline_that_missed_a_push_is_a_miss_until_rebuilt() {
    // `other`, another server sharing the cache, knows nothing of `b`'s failed push.
    let (server, b, other) = timeline_of_ten(&settings()).await;
    // Out of memory with noeviction: Redis refuses writes that grow the data, so the push
    // of post 11 is lost while the timeline still reads as complete.
    assert_eq!(server.command(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]), "OK");
    assert_eq!(server.command(&["CONFIG", "SET", "maxmemory", "1"]), "OK");
    let (add, _) =
        bounded(Duration::from_secs(5), "timeline_add", b.timeline_add(&[1], &[11], 100)).await;
    assert!(add.is_err(), "an out-of-memory Redis took a push: {add:?}");
    let (read, _) =
        bounded(Duration::from_secs(5), "timeline_read", b.timeline_read(1, u64::MAX, 10)).await;
    assert!(!matches!(read, Ok(Some(_))), "served a timeline that missed a push: {read:?}");
    assert_eq!(server.command(&["CONFIG", "SET", "maxmemory", "0"]), "OK");
    until_healthy(&b, Duration::from_secs(5)).await;
    // Redis serves again; the probe deleted that timeline before closing the circuit, so
    // no server serves it, and it is a miss until a build begins.
    assert_eq!(server.command(&["EXISTS", "kith-fault-test:t:{1}"]), "0");
    assert_eq!(other.timeline_read(1, u64::MAX, 10).await.unwrap(), None);
    assert_eq!(b.timeline_read(1, u64::MAX, 10).await.unwrap(), None);
    build(&b, 1, &[11, 10], 0, 100).await;
    assert_eq!(b.timeline_read(1, u64::MAX, 10).await.unwrap(), Some((vec![11, 10], 0)));
}

/// A build of a timeline that missed a push deletes it first: a build that never finishes
/// (its pull failed, say) then leaves nothing that misses the post for any server to serve.
/// The probe is slowed down here so that the build, not the probe, does the deletion.
#[tokio::test]
async fn a_build_of_a_timeline_that_missed_a_push_starts_from_nothing() {
    let slow_probe = FeedConfig { redis_probe_interval: Duration::from_secs(30), ..settings() };
    let (server, b, other) = timeline_of_ten(&slow_probe).await;
    // Whether Redis runs the timed-out push once continued or not, the timeline in Redis is
    // made to miss post 11.
    push_timed_out(&server, &b).await;
    server.command(&["ZREM", "kith-fault-test:t:{1}", "11"]);
    assert_eq!(other.timeline_read(1, u64::MAX, 10).await.unwrap(), Some((vec![10], 0)));
    let build = b.timeline_begin(1).await.unwrap();
    // The build never finishes: no server may serve the old timeline.
    assert_eq!(other.timeline_read(1, u64::MAX, 10).await.unwrap(), None);
    assert_eq!(b.timeline_read(1, u64::MAX, 10).await.unwrap(), None);
    b.timeline_finish(1, build, &[11, 10], 0, 100).await.unwrap();
    assert_eq!(other.timeline_read(1, u64::MAX, 10).await.unwrap(), Some((vec![11, 10], 0)));
}

#[tokio::test]
async fn reports_its_health() {
    let server = RedisServer::start();
    let b = connect(server.url()).await;
    assert_eq!(b.health(), None);
    server.pause();
    until_open(&b).await;
    let unhealthy = b.health().expect("unavailable while paused");
    assert!(unhealthy.contains("timed out"), "{unhealthy}");
    server.resume();
    until_healthy(&b, Duration::from_secs(5)).await;
    assert_eq!(b.health(), None);
    assert_eq!(Backend::local(1 << 20, Duration::from_secs(1)).health(), None);
}

/// A list whose drop keeps failing in the repair (refused here by an ACL on the list keys)
/// does not hold back the repair of the timelines: one that missed a push is deleted all
/// the same, while the circuit stays open for the list.
#[tokio::test]
async fn a_failing_list_repair_does_not_hold_back_the_timelines() {
    let (server, b, other) = timeline_of_ten(&settings()).await;
    // The push fails too, and is marked.
    friend_list_made_read_only(&server, &b).await;
    let (add, _) =
        bounded(Duration::from_secs(5), "timeline_add", b.timeline_add(&[1], &[11], 100)).await;
    assert!(add.is_err(), "a replica took a push: {add:?}");
    // Writable again, but not the list keys: every repair pass fails on the list.
    let only = ["~kith-fault-test:t:*", "~kith-fault-test:probe", "%R~*"];
    let acl = [&["ACL", "SETUSER", "default", "resetkeys"][..], &only[..]].concat();
    assert_eq!(server.command(&acl), "OK");
    assert_eq!(server.command(&["REPLICAOF", "NO", "ONE"]), "OK");
    let t = Instant::now();
    while server.command(&["EXISTS", "kith-fault-test:t:{1}"]) != "0" {
        assert!(t.elapsed() < Duration::from_secs(5), "the list held back the timeline repair");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(b.health().is_some(), "the circuit closed with a list still stale");
    assert_eq!(other.timeline_read(1, u64::MAX, 10).await.unwrap(), None);
    assert_eq!(server.command(&["ACL", "SETUSER", "default", "allkeys"]), "OK");
    until_healthy(&b, Duration::from_secs(5)).await;
    assert_eq!(server.command(&["EXISTS", "kith-fault-test:f:{5}"]), "0");
}
