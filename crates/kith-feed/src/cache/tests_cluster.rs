//! Redis Cluster under faults, on a cluster of each test's own (three masters with a
//! replica each, on addresses of its own): a master killed, paused, flagged failed with no replica to
//! take over. Every call is bounded, as in `tests_faults.rs`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Backend;
use super::tests::build;
use super::tests_faults::{bounded, settings};
use crate::post::Post;

/// A Redis Cluster of this test's own (three masters, a replica each, on 127.0.`net`.x: each
/// test its own addresses, as the tests run at once), taken down when the guard drops, and a
/// backend over it.
async fn own_cluster(
    net: u8,
    node_timeout: Duration,
) -> (crate::redis_cluster::LocalRedisCluster, Down, Backend) {
    use crate::redis_cluster::{LocalRedisCluster, RedisClusterConfig};

    let dir = tempfile::tempdir().unwrap();
    let base = std::net::Ipv4Addr::new(127, 0, net, 1);
    let cluster = LocalRedisCluster::up(&RedisClusterConfig {
        dir: dir.path().to_path_buf(),
        base,
        port: crate::testing::free_port_on(base, 6).unwrap(),
        node_timeout,
        ..RedisClusterConfig::default()
    })
    .unwrap();
    let down = Down { cluster: cluster.clone(), _dir: dir };
    let urls: Vec<String> = cluster.urls().split(',').map(str::to_string).collect();
    let b = Backend::redis_at(super::Target::Cluster(&urls), &settings()).await.unwrap();
    (cluster, down, b)
}

/// A Redis Cluster master killed: calls to its slots fail fast (answered from the store by
/// the feed), its replica takes over, and the backend then drops every timeline and friend
/// list on the new master, which may lack pushes and invalidations the old one took.
#[tokio::test]
async fn a_cluster_failover_drops_what_the_new_master_may_hold_stale() {
    let (mut cluster, _down, b) = own_cluster(21, Duration::from_millis(1000)).await;
    // Users on every master: a timeline, a friend list and a followee list each.
    let users: Vec<u64> = (1..=30).collect();
    for &u in &users {
        build(&b, u, &[100 + u], 0, 10).await;
        let version = b.friends_version(u).await.unwrap();
        b.put_friends(u, Arc::from([u + 1]), &version).await.unwrap();
        let version = b.followees_version(u).await.unwrap();
        b.put_followees(u, &[u + 2], &version).await.unwrap();
    }
    let victim = cluster.master_of_key("kith-fault-test:t:{1}").unwrap();
    // Let the replicas take the writes, so losing them is the backend's doing.
    tokio::time::sleep(Duration::from_millis(300)).await;
    cluster.kill(victim).unwrap();
    let t = Instant::now();
    // Calls to the dead master's slots fail, and fast; the others may go on.
    let (got, took) =
        bounded(Duration::from_secs(5), "timeline read", b.timeline_read(1, u64::MAX, 10)).await;
    assert!(took < Duration::from_secs(3), "{took:?}: {got:?}");
    // Once the replica serves the slots (and the circuit closed), user 1's entries are gone,
    // while a user on a master that did not change keeps them.
    let kept = users
        .iter()
        .copied()
        .find(|&u| {
            cluster.master_of_key(&format!("kith-fault-test:t:{{{u}}}")).is_ok_and(|m| m != victim)
        })
        .unwrap();
    loop {
        let read = b.timeline_read(1, u64::MAX, 10).await;
        let friends = b.get_friends(1).await;
        let followees = b.get_followees(1).await;
        if matches!((&read, &friends, &followees), (Ok(None), Ok(None), Ok(None))) {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(20), "still {read:?} {friends:?} {followees:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!("entries on the new master dropped {:?} after the kill", t.elapsed());
    assert_eq!(b.timeline_read(kept, u64::MAX, 10).await.unwrap(), Some((vec![100 + kept], 0)));
    assert_eq!(b.get_followees(kept).await.unwrap().as_deref(), Some(&[kept + 2][..]));
    // Rebuilt as usual afterwards.
    build(&b, 1, &[101], 0, 10).await;
    assert_eq!(b.timeline_read(1, u64::MAX, 10).await.unwrap(), Some((vec![101], 0)));
}

/// Stops a cluster however the test ends.
/// Takes its cluster down, then removes the cluster's directory.
struct Down {
    cluster: crate::redis_cluster::LocalRedisCluster,
    _dir: tempfile::TempDir,
}

impl Drop for Down {
    fn drop(&mut self) {
        let _ = self.cluster.clone().down(Duration::ZERO);
    }
}

/// One waiting post of `author` per queue shard (so that some wait on every master), each
/// confirmed by a replica: their ids, ascending.
async fn waiting_on_every_master(r: &super::redis::Redis, author: u64) -> Vec<u64> {
    let ids: Vec<u64> = (1_000..1_000 + super::SHARDS).collect();
    for &id in &ids {
        let post = Post { id, author, ts_ms: id, content: format!("waiting {id}") };
        // Until the slot map lists the replicas and they have synced (a new cluster).
        let t = Instant::now();
        while !r.wb_put(&post).await.unwrap() {
            assert!(t.elapsed() < Duration::from_secs(10), "post {id}: no replica confirms");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    ids
}

/// Reads `author`'s waiting posts `ids` by the author's index and by id until both answer,
/// and checks they are all there; fails the test after 10 s.
async fn read_all(r: &super::redis::Redis, author: u64, ids: &[u64]) -> Duration {
    let newest_first: Vec<u64> = ids.iter().rev().copied().collect();
    let t = Instant::now();
    loop {
        let index = r.wb_author_posts(&[author], u64::MAX, 100).await;
        let got = r.wb_get(ids).await;
        match (index, got) {
            (Ok(index), Ok(got)) => {
                assert_eq!(index, vec![newest_first]);
                let got: Vec<u64> = got.iter().map(|p| p.as_ref().unwrap().id).collect();
                assert_eq!(got, ids);
                return t.elapsed();
            }
            (index, got) => {
                let failed = format!("{:?} {:?}", index.err(), got.err());
                assert!(t.elapsed() < Duration::from_secs(10), "still failing: {failed}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Shared write-back on a Redis Cluster whose master of an author's waiting posts is
/// paused, then killed, with a node timeout long enough that no failover comes meanwhile:
/// the waiting posts are read from the replica within the deadline, where the reads failed
/// until a failover.
#[tokio::test]
async fn waiting_posts_are_read_from_the_replica_while_their_master_is_out() {
    let (mut cluster, _down, b) = own_cluster(22, Duration::from_secs(60)).await;
    let r = b.shared_writeback().unwrap();
    let author = 7;
    let ids = waiting_on_every_master(r, author).await;
    let victim = cluster.master_of_key(&format!("kith-fault-test:wa:{{{author}}}")).unwrap();
    let pid = cluster.nodes[victim - 1].pid.unwrap();
    // Every waiting post, by the index and by id, within 10 s (no failover comes for 60 s).
    read_all(r, author, &ids).await;
    // The watcher's next round makes the connections to the replicas.
    tokio::time::sleep(super::redis::WATCH_INTERVAL * 2).await;
    // SAFETY: a signal to the test's own Redis child, whose pid the cluster recorded.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGSTOP) }, 0);
    for _ in 0..3 {
        read_all(r, author, &ids).await;
    }
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGCONT) }, 0);
    cluster.kill(victim).unwrap();
    for _ in 0..3 {
        read_all(r, author, &ids).await;
    }
}

/// The same master paused until the other nodes flag it failed, with its replica told not to
/// take over: the window between a master's failure and its replacement, held open. The
/// cluster goes on serving what it covers (`cluster-require-full-coverage no`, set by
/// `redis_cluster`): the waiting posts on the other masters are read from them, the paused
/// master's from its replica. With the setting's default, every node refuses every command
/// (CLUSTERDOWN) until a replica takes over, and here none does.
#[tokio::test]
async fn waiting_posts_are_read_while_their_master_is_flagged_failed_and_not_replaced() {
    let (cluster, _down, b) = own_cluster(23, Duration::from_millis(1000)).await;
    let r = b.shared_writeback().unwrap();
    let author = 7;
    let ids = waiting_on_every_master(r, author).await;
    let victim = cluster.master_of_key(&format!("kith-fault-test:wa:{{{author}}}")).unwrap();
    let node = &cluster.nodes[victim - 1];
    let id = node.query(&["CLUSTER", "MYID"]).unwrap();
    let others: Vec<_> = cluster.nodes.iter().filter(|n| n.index != victim).collect();
    let replicas: Vec<_> = others
        .iter()
        .filter(|n| {
            n.query(&["CLUSTER", "NODES"])
                .unwrap()
                .lines()
                .any(|l| l.contains("myself") && l.split(' ').nth(3) == Some(id.as_str()))
        })
        .collect();
    assert!(!replicas.is_empty(), "master {victim} has no replica");
    for n in &replicas {
        assert_eq!(
            n.query(&["CONFIG", "SET", "cluster-replica-no-failover", "yes"]).unwrap(),
            "OK"
        );
    }
    read_all(r, author, &ids).await;
    tokio::time::sleep(super::redis::WATCH_INTERVAL * 2).await;
    let pid = node.pid.unwrap();
    // SAFETY: a signal to the test's own Redis child, whose pid the cluster recorded.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGSTOP) }, 0);
    let t = Instant::now();
    // Flagged `fail` (not `fail?`, suspected by one node) in a node's view.
    let flagged = |n: &crate::redis_cluster::RedisNode| {
        n.query(&["CLUSTER", "NODES"]).is_ok_and(|view| {
            view.lines().any(|l| {
                let mut fields = l.split(' ');
                fields.next() == Some(id.as_str())
                    && fields.nth(1).is_some_and(|flags| flags.split(',').any(|f| f == "fail"))
            })
        })
    };
    while !others.iter().all(|n| flagged(n)) {
        assert!(t.elapsed() < Duration::from_secs(15), "master {victim} never flagged failed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!("master {victim} flagged failed {:?} after the pause", t.elapsed());
    for _ in 0..3 {
        read_all(r, author, &ids).await;
    }
    // Still the window: no replica took over.
    assert!(others.iter().all(|n| flagged(n)), "master {victim} no longer flagged failed");
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGCONT) }, 0);
}

/// A Redis Cluster master paused (not killed) and replaced by its replica: the circuit
/// closes while the old master stays paused. A paused node accepts connections and never
/// answers, so nothing the probe waits on may go to it (the cluster connections the probe
/// makes before it closes the circuit included).
#[tokio::test]
async fn the_circuit_closes_once_a_paused_master_is_replaced_while_it_stays_paused() {
    let (cluster, _down, b) = own_cluster(24, Duration::from_millis(1000)).await;
    build(&b, 1, &[101], 0, 10).await;
    let victim = cluster.master_of_key("kith-fault-test:t:{1}").unwrap();
    let pid = cluster.nodes[victim - 1].pid.unwrap() as i32;
    tokio::time::sleep(super::redis::WATCH_INTERVAL * 2).await;
    // SAFETY: a signal to the test's own Redis child, whose pid the cluster recorded.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
    let t = Instant::now();
    while b.health().is_none() {
        let _ = bounded(Duration::from_secs(5), "timeline read", b.timeline_read(1, u64::MAX, 10))
            .await;
        assert!(t.elapsed() < Duration::from_secs(10), "the circuit never opened");
    }
    let closed = loop {
        let (read, _) =
            bounded(Duration::from_secs(5), "timeline read", b.timeline_read(1, u64::MAX, 10))
                .await;
        if b.health().is_none() && read.is_ok() {
            break t.elapsed();
        }
        assert!(t.elapsed() < Duration::from_secs(20), "still open: {:?}", b.health());
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    eprintln!("the circuit closed {closed:?} after the pause, the old master still paused");
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGCONT) }, 0);
}
