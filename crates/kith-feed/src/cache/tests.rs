//! The same scenarios on every backend, so the in-process timelines and the Lua scripts keep
//! the same floor rules: in process, on one Redis (`KITH_TEST_REDIS` or, when that is not
//! set, a private `redis-server`) and on a Redis Cluster (`testing::test_redis_cluster`).
//! Then what only one backend has: the byte bound and its accounting in process, the key
//! layout and markers in Redis, the friend-list versions shared by servers.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::Backend;
use crate::config::FeedConfig;
use crate::post::Post;
use crate::testing::TestRedis;

const TTL: Duration = Duration::from_secs(600);

/// Both backends with one friends time to live; the Redis one under a prefix of its own (a
/// shared Redis may serve other tests at the same time), whose keys are deleted on drop.
struct Backends {
    local: Backend,
    redis: Backend,
    cluster: Backend,
    prefix: String,
    server: TestRedis,
    cluster_urls: Vec<String>,
}

impl Backends {
    async fn new(test: &str, friends_ttl: Duration) -> Backends {
        let server = TestRedis::get();
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
        let prefix = format!("kith-cache-test-{}-{nanos}-{test}", std::process::id());
        let config =
            FeedConfig { redis_prefix: prefix.clone(), friends_ttl, ..FeedConfig::default() };
        let redis = Backend::redis(server.url(), &config).await.unwrap();
        let cluster_urls = crate::testing::test_redis_cluster();
        let cluster =
            Backend::redis_at(super::Target::Cluster(&cluster_urls), &config).await.unwrap();
        Backends {
            local: Backend::local(1 << 30, friends_ttl),
            redis,
            cluster,
            prefix,
            server,
            cluster_urls,
        }
    }

    fn both(&self) -> [&Backend; 3] {
        [&self.local, &self.redis, &self.cluster]
    }

    async fn raw(&self) -> redis::aio::MultiplexedConnection {
        let client = redis::Client::open(self.server.url()).unwrap();
        client.get_multiplexed_async_connection().await.unwrap()
    }
}

impl Drop for Backends {
    /// Deletes the test's keys on the Redis and on every node of the cluster (replicas
    /// refuse, and follow their masters).
    fn drop(&mut self) {
        let urls = std::iter::once(self.server.url().to_string()).chain(self.cluster_urls.clone());
        for url in urls {
            let Ok(mut con) = redis::Client::open(url)
                .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(5)))
            else {
                continue;
            };
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg(format!("{}:*", self.prefix))
                .query(&mut con)
                .unwrap_or_default();
            for k in keys {
                let _: redis::RedisResult<()> = redis::cmd("DEL").arg(k).query(&mut con);
            }
        }
    }
}

/// Caches a list as a fill does: its version first.
async fn fill(b: &Backend, uid: u64, list: &[u64]) {
    let version = b.friends_version(uid).await.unwrap();
    b.put_friends(uid, Arc::from(list), &version).await.unwrap();
}

fn post(id: u64) -> Arc<Post> {
    Arc::new(Post { id, author: id % 7, ts_ms: 1_000 + id, content: format!("post {id}") })
}

type Read = Option<(Vec<u64>, u64)>;

async fn read(b: &Backend, uid: u64, before: u64, limit: usize) -> Read {
    b.timeline_read(uid, before, limit).await.unwrap()
}

/// A whole build: begun and finished at once.
pub(super) async fn build(b: &Backend, uid: u64, ids: &[u64], floor: u64, cap: usize) {
    let build = b.timeline_begin(uid).await.unwrap();
    b.timeline_finish(uid, build, ids, floor, cap).await.unwrap();
}

#[tokio::test]
async fn posts_in_order_with_gaps() {
    let all = Backends::new("posts", TTL).await;
    for b in all.both() {
        let name = b.name();
        assert!(b.get_posts(&[]).await.unwrap().is_empty(), "{name}");
        b.put_posts(&[]).await.unwrap();
        b.del_posts(&[]).await.unwrap();
        b.put_posts(&[post(1), post(2), post(3)]).await.unwrap();
        let got = b.get_posts(&[3, 9, 1]).await.unwrap();
        assert_eq!(got, vec![Some(post(3)), None, Some(post(1))], "{name}");
        b.del_posts(&[1, 3, 8]).await.unwrap();
        assert_eq!(b.get_posts(&[1, 2, 3]).await.unwrap(), vec![None, Some(post(2)), None]);
    }
}

#[tokio::test]
async fn friend_lists_keep_their_order() {
    let all = Backends::new("friends", TTL).await;
    for b in all.both() {
        let name = b.name();
        assert_eq!(b.get_friends(5).await.unwrap(), None, "{name}");
        fill(b, 5, &[3, 1, 2]).await;
        fill(b, 6, &[]).await;
        assert_eq!(b.get_friends(5).await.unwrap().as_deref(), Some(&[3, 1, 2][..]), "{name}");
        assert_eq!(b.get_friends(6).await.unwrap().as_deref(), Some(&[][..]), "{name}");
        fill(b, 5, &[4]).await;
        assert_eq!(b.get_friends(5).await.unwrap().as_deref(), Some(&[4][..]), "{name}");
        b.del_friends(&[]).await.unwrap();
        b.del_friends(&[5, 7]).await.unwrap();
        assert_eq!(b.get_friends(5).await.unwrap(), None, "{name}");
        assert!(b.get_friends(6).await.unwrap().is_some(), "{name}");
    }
}

#[tokio::test]
async fn only_friend_lists_expire() {
    let all = Backends::new("ttl", Duration::from_millis(150)).await;
    for b in all.both() {
        fill(b, 5, &[1, 2]).await;
        b.put_posts(&[post(1)]).await.unwrap();
        build(b, 1, &[1], 0, 10).await;
        assert!(b.get_friends(5).await.unwrap().is_some(), "{}", b.name());
    }
    tokio::time::sleep(Duration::from_millis(600)).await;
    for b in all.both() {
        let name = b.name();
        assert_eq!(b.get_friends(5).await.unwrap(), None, "{name}");
        assert_eq!(b.get_posts(&[1]).await.unwrap(), vec![Some(post(1))], "{name}");
        assert_eq!(read(b, 1, u64::MAX, 10).await, Some((vec![1], 0)), "{name}");
    }
}

#[tokio::test]
async fn timelines_keep_their_floor() {
    let all = Backends::new("floor", TTL).await;
    for b in all.both() {
        let name = b.name();
        // No timeline: reads miss and pushes skip it.
        assert_eq!(read(b, 1, u64::MAX, 10).await, None, "{name}");
        b.timeline_add(&[1], &[5], 3).await.unwrap();
        assert_eq!(read(b, 1, u64::MAX, 10).await, None, "{name}");
        // Being built: pushes land, reads still miss.
        b.timeline_begin(1).await.unwrap();
        b.timeline_add(&[1], &[20], 3).await.unwrap();
        assert_eq!(read(b, 1, u64::MAX, 10).await, None, "{name}");
        // Trimming to three drops 10..=13, which raises the floor to the oldest kept.
        build(b, 1, &[15, 14, 13, 12, 11, 10], 10, 3).await;
        assert_eq!(read(b, 1, u64::MAX, 10).await, Some((vec![20, 15, 14], 14)), "{name}");
        // A push below the floor is not taken; one above trims and raises the floor.
        b.timeline_add(&[1], &[13], 3).await.unwrap();
        assert_eq!(read(b, 1, u64::MAX, 10).await, Some((vec![20, 15, 14], 14)), "{name}");
        b.timeline_add(&[1], &[21], 3).await.unwrap();
        assert_eq!(read(b, 1, u64::MAX, 10).await, Some((vec![21, 20, 15], 15)), "{name}");
        // `before` is exclusive, `limit` counts from the newest, the floor comes back anyway.
        assert_eq!(read(b, 1, 21, 10).await, Some((vec![20, 15], 15)), "{name}");
        assert_eq!(read(b, 1, 21, 1).await, Some((vec![20], 15)), "{name}");
        assert_eq!(read(b, 1, 15, 10).await, Some((vec![], 15)), "{name}");
        assert_eq!(read(b, 1, 3, 10).await, Some((vec![], 15)), "{name}");
        // Removal leaves the floor where it is.
        b.timeline_remove(1, &[]).await.unwrap();
        b.timeline_remove(1, &[20, 99]).await.unwrap();
        assert_eq!(read(b, 1, u64::MAX, 10).await, Some((vec![21, 15], 15)), "{name}");
        // Beginning again keeps a complete timeline readable; finishing never lowers the
        // floor: pushes since the first build skipped ids below it.
        let again = b.timeline_begin(1).await.unwrap();
        assert_eq!(read(b, 1, u64::MAX, 10).await, Some((vec![21, 15], 15)), "{name}");
        b.timeline_finish(1, again, &[16, 2], 0, 3).await.unwrap();
        assert_eq!(read(b, 1, u64::MAX, 10).await, Some((vec![21, 16, 15], 15)), "{name}");
    }
}

#[tokio::test]
async fn timelines_being_built_and_finished_without_begin() {
    let all = Backends::new("build", TTL).await;
    for b in all.both() {
        let name = b.name();
        // A timeline being built has no floor to raise when pushes trim it.
        let two = b.timeline_begin(2).await.unwrap();
        b.timeline_add(&[2], &[1, 2, 3, 4], 2).await.unwrap();
        b.timeline_finish(2, two, &[], 0, 2).await.unwrap();
        assert_eq!(read(b, 2, u64::MAX, 10).await, Some((vec![4, 3], 0)), "{name}");
        // A build finishes nothing if its timeline was dropped (or evicted) meanwhile:
        // pushes made since then skipped it, so the build's ids may lack them.
        // Nor once another build has begun since the drop: only that build's read has
        // the posts pushed between the drop and its begin (a trial lost a post so).
        let stale = b.timeline_begin(3).await.unwrap();
        b.timeline_drop(3).await;
        b.timeline_add(&[3], &[9], 5).await.unwrap();
        let fresh = b.timeline_begin(3).await.unwrap();
        assert_ne!(stale, fresh, "{name}");
        b.timeline_finish(3, stale, &[8, 7], 7, 5).await.unwrap();
        assert_eq!(read(b, 3, u64::MAX, 10).await, None, "{name}");
        b.timeline_finish(3, fresh, &[9, 8, 7], 7, 5).await.unwrap();
        assert_eq!(read(b, 3, u64::MAX, 10).await, Some((vec![9, 8, 7], 7)), "{name}");
        // Builds begun together share the mark: the first to finish completes the
        // timeline, the other finishes nothing.
        b.timeline_drop(3).await;
        let first = b.timeline_begin(3).await.unwrap();
        let joined = b.timeline_begin(3).await.unwrap();
        assert_eq!(first, joined, "{name}");
        b.timeline_finish(3, first, &[9, 8], 0, 5).await.unwrap();
        b.timeline_finish(3, joined, &[10], 10, 5).await.unwrap();
        assert_eq!(read(b, 3, u64::MAX, 10).await, Some((vec![9, 8], 0)), "{name}");
        b.timeline_drop(3).await;
        assert_eq!(read(b, 3, u64::MAX, 10).await, None, "{name}");
        // An unfollow's removal while a build is under way drops the timeline: the build
        // may have read the removed posts before, and would put them back.
        let five = b.timeline_begin(5).await.unwrap();
        b.timeline_remove(5, &[8]).await.unwrap();
        b.timeline_finish(5, five, &[9, 8, 7], 7, 5).await.unwrap();
        assert_eq!(read(b, 5, u64::MAX, 10).await, None, "{name}");
        build(b, 5, &[9, 8, 7], 7, 5).await;
        b.timeline_remove(5, &[8]).await.unwrap();
        assert_eq!(read(b, 5, u64::MAX, 10).await, Some((vec![9, 7], 7)), "{name}");
        // An empty complete timeline is a hit with its floor.
        build(b, 4, &[], 50, 5).await;
        assert_eq!(read(b, 4, u64::MAX, 10).await, Some((vec![], 50)), "{name}");
    }
}

#[tokio::test]
async fn fan_out_to_many_timelines() {
    let all = Backends::new("fanout", TTL).await;
    // More users than one pipeline takes.
    let followers: Vec<u64> = (0..1_200).collect();
    for b in all.both() {
        let name = b.name();
        for uid in [100, 700, 1_199] {
            build(b, uid, &[uid], 0, 4).await;
        }
        b.timeline_add(&followers, &[5_000, 5_001], 4).await.unwrap();
        for uid in [100, 700, 1_199] {
            let want = Some((vec![5_001, 5_000, uid], 0));
            assert_eq!(read(b, uid, u64::MAX, 10).await, want, "{name} {uid}");
        }
        assert_eq!(read(b, 300, u64::MAX, 10).await, None, "{name}");
    }
}

#[tokio::test]
async fn in_process_bytes_are_weighed() {
    let b = Backend::local(1 << 20, TTL);
    assert_eq!(b.name(), "in-process");
    assert_eq!(b.bytes(), Some(0));
    b.put_posts(&[post(1)]).await.unwrap();
    let post_bytes = 64 + "post 1".len() as u64;
    assert_eq!(b.bytes(), Some(post_bytes));
    fill(&b, 5, &[1, 2, 3]).await;
    assert_eq!(b.bytes(), Some(post_bytes + 48 + 3 * 8));
    b.timeline_begin(9).await.unwrap();
    assert_eq!(b.bytes(), Some(post_bytes + 72 + 64));
    // Twenty ids are more than twice what the empty timeline was weighed at.
    let ids: Vec<u64> = (1..=20).collect();
    build(&b, 9, &ids, 1, 100).await;
    assert_eq!(b.bytes(), Some(post_bytes + 72 + 64 + 16 * 20));
    // Growing by less than double keeps the old weight.
    b.timeline_add(&[9], &[21, 22, 23], 100).await.unwrap();
    assert_eq!(b.bytes(), Some(post_bytes + 72 + 64 + 16 * 20));
    b.del_posts(&[1]).await.unwrap();
    b.del_friends(&[5]).await.unwrap();
    assert_eq!(b.bytes(), Some(64 + 16 * 20));
}

#[tokio::test]
async fn in_process_stays_within_its_bytes() {
    let b = Backend::local(2_000, TTL);
    let posts: Vec<Arc<Post>> = (1..=200).map(post).collect();
    b.put_posts(&posts).await.unwrap();
    assert!(b.bytes().unwrap() <= 2_000, "{:?}", b.bytes());
    let ids: Vec<u64> = (1..=200).collect();
    let kept = b.get_posts(&ids).await.unwrap().iter().filter(|p| p.is_some()).count();
    assert!(kept < 200 && kept * 70 <= 2_000, "{kept} posts kept");
}

#[tokio::test]
async fn redis_keys_scores_and_markers() {
    use redis::AsyncCommands;

    let all = Backends::new("keys", TTL).await;
    let (b, p) = (&all.redis, &all.prefix);
    assert_eq!((b.name(), b.bytes()), ("redis", None));
    b.put_posts(&[post(7)]).await.unwrap();
    fill(b, 5, &[1, 258]).await;
    b.timeline_begin(1).await.unwrap();
    let mut con = all.raw().await;
    let stored: Vec<u8> = con.get(format!("{p}:p:7")).await.unwrap();
    assert_eq!(stored, post(7).encode());
    let friends: Vec<u8> = con.get(format!("{p}:f:{{5}}")).await.unwrap();
    assert_eq!(friends, [1u64, 258].iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<_>>());
    let ttl: i64 = con.pttl(format!("{p}:f:{{5}}")).await.unwrap();
    assert!(ttl > 0 && ttl <= TTL.as_millis() as i64, "{ttl}");
    // A change bumps the version (which outlives any fill) and drops the list.
    b.del_friends(&[5]).await.unwrap();
    let version: String = con.get(format!("{p}:fv:{{5}}")).await.unwrap();
    assert_eq!(version, "1");
    let ttl: i64 = con.pttl(format!("{p}:fv:{{5}}")).await.unwrap();
    assert!(ttl > TTL.as_millis() as i64 / 2, "{ttl}");
    let t = format!("{p}:t:{{1}}");
    let members: Vec<(String, f64)> = con.zrange_withscores(&t, 0, -1).await.unwrap();
    assert!(
        matches!(&members[..], [(m, -2.0)] if m.len() == 17 && m.starts_with('b')),
        "{members:?}"
    );
    build(b, 1, &[12, 11, 10], 10, 2).await;
    let members: Vec<(String, f64)> = con.zrange_withscores(&t, 0, -1).await.unwrap();
    let want = [("f11", -1.0), ("11", 11.0), ("12", 12.0)];
    assert_eq!(members, want.map(|(m, s)| (m.to_string(), s)).to_vec());
    // A cached post that does not decode is an error naming it.
    let _: () = con.set(format!("{p}:p:9"), &[1u8, 2, 3][..]).await.unwrap();
    let err = b.get_posts(&[9]).await.unwrap_err().to_string();
    assert!(err.contains("cached post 9 in redis"), "{err}");
    // Ids past 2^53 read the whole timeline.
    assert_eq!(read(b, 1, u64::MAX, 10).await, Some((vec![12, 11], 11)));
}

/// Two servers sharing one Redis or one cluster: a fill that read the store before another
/// server's change is not cached, whichever server does what.
#[tokio::test]
async fn a_fill_that_raced_another_servers_change_is_not_cached() {
    let all = Backends::new("race", TTL).await;
    let config = FeedConfig { redis_prefix: all.prefix.clone(), ..FeedConfig::default() };
    let other_redis = Backend::redis(all.server.url(), &config).await.unwrap();
    let other_cluster =
        Backend::redis_at(super::Target::Cluster(&all.cluster_urls), &config).await.unwrap();
    for (this, other) in [(&all.redis, &other_redis), (&all.cluster, &other_cluster)] {
        // This server misses and reads the store (old list); the other changes the list.
        let version = this.friends_version(8).await.unwrap();
        other.del_friends(&[8]).await.unwrap();
        this.put_friends(8, Arc::from([1, 2]), &version).await.unwrap();
        assert_eq!(other.get_friends(8).await.unwrap(), None, "stale fill cached");
        assert_eq!(this.get_friends(8).await.unwrap(), None, "stale fill cached");
        // A fill after the change is cached, and seen by both.
        fill(this, 8, &[1]).await;
        assert_eq!(other.get_friends(8).await.unwrap().as_deref(), Some(&[1][..]));
    }
}

/// Followee lists (for feed reads) are cached apart from friend lists of the same user, and
/// under the same rule: a fill that raced a follow or unfollow (another server's, or in
/// process another request's) is not cached.
#[tokio::test]
async fn followee_lists_apart_from_friend_lists_and_never_older_than_a_change() {
    let all = Backends::new("followees", TTL).await;
    let config = FeedConfig { redis_prefix: all.prefix.clone(), ..FeedConfig::default() };
    let other_redis = Backend::redis(all.server.url(), &config).await.unwrap();
    let other_cluster =
        Backend::redis_at(super::Target::Cluster(&all.cluster_urls), &config).await.unwrap();
    // In process: cached apart from the friend list; a change drops it; a fill whose version
    // was read before a change (of this user, or of another in the same stripe) is not
    // cached; a fill after it is.
    let local = &all.local;
    fill(local, 3, &[7, 8]).await;
    let v = local.followees_version(3).await.unwrap();
    local.put_followees(3, &[5, 4], &v).await.unwrap();
    assert_eq!(local.get_followees(3).await.unwrap().as_deref(), Some(&[5, 4][..]));
    local.del_followees(3).await.unwrap();
    assert_eq!(local.get_followees(3).await.unwrap(), None);
    assert_eq!(local.get_friends(3).await.unwrap().as_deref(), Some(&[7, 8][..]));
    for changed in [3, 3 + 4096] {
        let v = local.followees_version(3).await.unwrap();
        local.del_followees(changed).await.unwrap();
        local.put_followees(3, &[5, 4], &v).await.unwrap();
        assert_eq!(local.get_followees(3).await.unwrap(), None, "stale fill cached");
    }
    let v = local.followees_version(3).await.unwrap();
    local.put_followees(3, &[5], &v).await.unwrap();
    assert_eq!(local.get_followees(3).await.unwrap().as_deref(), Some(&[5][..]));
    local.del_followees(3).await.unwrap();
    for (this, other) in [(&all.redis, &other_redis), (&all.cluster, &other_cluster)] {
        let name = this.name();
        fill(this, 3, &[7, 8]).await;
        let v = this.followees_version(3).await.unwrap();
        this.put_followees(3, &[5, 4], &v).await.unwrap();
        assert_eq!(other.get_followees(3).await.unwrap().as_deref(), Some(&[5, 4][..]), "{name}");
        assert_eq!(other.get_friends(3).await.unwrap().as_deref(), Some(&[7, 8][..]), "{name}");
        // A follow on the other server drops the list, not the friend list.
        other.del_followees(3).await.unwrap();
        assert_eq!(this.get_followees(3).await.unwrap(), None, "{name}");
        assert!(this.get_friends(3).await.unwrap().is_some(), "{name}");
        // A fill that read the store before a change elsewhere is not cached.
        let v = this.followees_version(3).await.unwrap();
        other.del_followees(3).await.unwrap();
        this.put_followees(3, &[5, 4], &v).await.unwrap();
        assert_eq!(other.get_followees(3).await.unwrap(), None, "{name}: stale fill cached");
        let v = this.followees_version(3).await.unwrap();
        this.put_followees(3, &[5], &v).await.unwrap();
        assert_eq!(other.get_followees(3).await.unwrap().as_deref(), Some(&[5][..]), "{name}");
    }
}

/// Copies in this process: posts always (they never change), friend lists only when asked
/// for, and then stale after another server's change for at most their time to live, while
/// this server's own changes drop its copy at once.
#[tokio::test]
async fn near_copies_of_posts_and_of_friend_lists_within_their_bound() {
    let all = Backends::new("near", TTL).await;
    let ttl = Duration::from_millis(400);
    let config = FeedConfig {
        redis_prefix: all.prefix.clone(),
        near_friends_ttl: ttl,
        ..FeedConfig::default()
    };
    for target in [super::Target::One(all.server.url()), super::Target::Cluster(&all.cluster_urls)]
    {
        let this = Backend::redis_at(target, &config).await.unwrap();
        let other = Backend::redis_at(target, &config).await.unwrap();
        // A post read once is served here even once Redis has lost it.
        this.put_posts(&[post(41)]).await.unwrap();
        assert_eq!(other.get_posts(&[41]).await.unwrap(), vec![Some(post(41))]);
        let mut raw = all.raw().await;
        if let super::Target::One(_) = target {
            let _: () = redis::cmd("DEL")
                .arg(format!("{}:p:41", all.prefix))
                .query_async(&mut raw)
                .await
                .unwrap();
            assert_eq!(other.get_posts(&[41, 42]).await.unwrap(), vec![Some(post(41)), None]);
        }
        this.del_posts(&[41]).await.unwrap();
        // Friend lists: the other server's copy outlives this server's change by at most
        // the time to live; this server's own reads see its change at once.
        fill(&this, 9, &[1, 2]).await;
        assert_eq!(other.get_friends(9).await.unwrap().as_deref(), Some(&[1, 2][..]));
        assert_eq!(this.get_friends(9).await.unwrap().as_deref(), Some(&[1, 2][..]));
        let changed = Instant::now();
        this.del_friends(&[9]).await.unwrap();
        assert_eq!(this.get_friends(9).await.unwrap(), None);
        loop {
            let got = other.get_friends(9).await.unwrap();
            if got.is_none() {
                break;
            }
            assert!(
                changed.elapsed() <= ttl,
                "a copy served {:?} after the change",
                changed.elapsed()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Followee lists are never copied: another server's change is seen at once.
        let v = this.followees_version(9).await.unwrap();
        this.put_followees(9, &[3], &v).await.unwrap();
        assert!(other.get_followees(9).await.unwrap().is_some());
        this.del_followees(9).await.unwrap();
        assert_eq!(other.get_followees(9).await.unwrap(), None);
    }
}
