//! A local Redis Cluster on loopback: formed by `redis-cli --cluster create`, every slot
//! served, a killed master replaced by its replica within the node timeout, and the killed
//! node rejoining as a replica.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use kith_feed::redis_cluster::{LocalRedisCluster, RedisClusterConfig};

#[test]
fn forms_fails_over_and_rejoins() {
    let dir = tempfile::tempdir().unwrap();
    let base = Ipv4Addr::new(127, 0, 6, 1);
    let config = RedisClusterConfig {
        masters: 3,
        replicas: 1,
        dir: dir.path().to_path_buf(),
        base,
        port: kith_feed::testing::free_port_on(base, 6).unwrap(),
        node_timeout: Duration::from_millis(1000),
        timeout: Duration::from_secs(60),
        progress: false,
    };
    let mut cluster = LocalRedisCluster::up(&config).expect("cluster up");
    let guard = Down(cluster.clone());
    let status = cluster.status();
    assert_eq!(status.len(), 6);
    assert!(status.iter().all(|n| n.state == "up"), "{status:?}");
    assert_eq!(status.iter().filter(|n| n.role == "master").count(), 3, "{status:?}");
    assert_eq!(status.iter().map(|n| n.slots).sum::<u32>(), 16384, "{status:?}");

    // Kill the master of one key's slot: a replica takes its slots over.
    let victim = cluster.master_of_key("kith:{42}:t").unwrap();
    let t = Instant::now();
    cluster.kill(victim).unwrap();
    let replaced = loop {
        if let Ok(m) = cluster.master_of_key("kith:{42}:t")
            && m != victim
            && cluster.status().iter().map(|n| n.slots).sum::<u32>() == 16384
        {
            break m;
        }
        if t.elapsed() > Duration::from_secs(20) {
            panic!("no failover in 20 s:\n{}", describe(&cluster));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_ne!(replaced, victim);
    // Node timeout 1 s; election and promotion add about as much again.
    assert!(t.elapsed() < Duration::from_secs(10), "failover took {:?}", t.elapsed());

    cluster.restart(victim, Duration::from_secs(30)).unwrap();
    let back = cluster.status().into_iter().find(|n| n.index == victim).unwrap();
    assert_eq!((back.state, back.role.as_str()), ("up", "replica"), "{back:?}");
    assert!(cluster.urls().split(',').count() == 6);
    drop(guard);
    let after = LocalRedisCluster::open(dir.path()).unwrap();
    assert!(after.nodes.iter().all(|n| !n.alive()));
}

/// Stops the cluster however the test ends.
struct Down(LocalRedisCluster);

impl Drop for Down {
    fn drop(&mut self) {
        let _ = LocalRedisCluster::open(&self.0.dir).map(|mut c| c.down(Duration::from_secs(5)));
    }
}

/// Every live node's view and the tail of every log, for a failure message.
fn describe(cluster: &LocalRedisCluster) -> String {
    let view =
        cluster.nodes.iter().find_map(|n| n.query(&["CLUSTER", "NODES"]).ok()).unwrap_or_default();
    let logs: Vec<String> = cluster
        .nodes
        .iter()
        .map(|n| {
            let log = std::fs::read_to_string(n.dir.join("redis.log")).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            format!("node {}:\n{}", n.index, lines[lines.len().saturating_sub(8)..].join("\n"))
        })
        .collect();
    format!("{view}\n{}", logs.join("\n"))
}
