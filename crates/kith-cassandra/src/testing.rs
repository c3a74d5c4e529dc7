//! Helpers for tests that need a Cassandra cluster (not part of the API).
//!
//! Tests share one cluster: `KITH_TEST_CASSANDRA` (hosts, as `--cassandra` takes them) names
//! it, as the test command does after `kith cluster up`; without it, the first test that asks
//! starts a 3-node cluster on 127.0.3.1–3 for the whole test process, killed when the process
//! exits. Each test works in a keyspace of its own.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::local::{ClusterConfig, LocalCluster};

static STARTED: OnceLock<Result<LocalCluster, String>> = OnceLock::new();

/// The test cluster's hosts.
///
/// # Panics
/// If no cluster is named and none can be started here (no Java, no Maven), saying why.
pub fn hosts() -> Vec<String> {
    if let Ok(hosts) = std::env::var("KITH_TEST_CASSANDRA") {
        return crate::parse_hosts(&hosts).expect("KITH_TEST_CASSANDRA names hosts");
    }
    let started = STARTED.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("kith-test-cluster-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let config = ClusterConfig {
            nodes: 3,
            dir,
            base: std::net::Ipv4Addr::new(127, 0, 3, 1),
            heap_mb: 512,
            progress: true,
            ..ClusterConfig::default()
        };
        let cluster = LocalCluster::up(&config).map_err(|e| e.to_string())?;
        // SAFETY: registers a plain extern "C" function with no preconditions.
        unsafe {
            libc::atexit(stop_at_exit);
        }
        Ok(cluster)
    });
    match started {
        Ok(cluster) => cluster.hosts(),
        Err(e) => {
            panic!("no test cluster (set KITH_TEST_CASSANDRA or let the test start one): {e}")
        }
    }
}

extern "C" fn stop_at_exit() {
    if let Some(Ok(cluster)) = STARTED.get() {
        for n in &cluster.nodes {
            if let Some(pid) = n.pid {
                // SAFETY: kill(2) on a process this test started.
                unsafe {
                    libc::kill(pid as i32, libc::SIGKILL);
                }
            }
        }
        let _ = std::fs::remove_dir_all(&cluster.dir);
    }
}

/// A keyspace name no other test of this process (or of another run) uses.
pub fn keyspace(tag: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("t_{tag}_{}_{}_{:x}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed), nanos)
}

/// Checks "list all friends' profiles" of every user of `store` against its own per-friend
/// reads and a brute-force count of the partitions it should read (friends in a partition
/// holding at most `friend_copies` of them, not the user's own, come from copies in the
/// user's partition), and that every copy it needed was there. Returns the copies read.
///
/// # Panics
/// On the first user that disagrees, naming it.
pub fn check_friends_profiles(store: &crate::CassandraStore) -> usize {
    use kith_store::Engine;
    let stored = store.graph().expect("reading the stored graph");
    let k = store.partition_users();
    let limit = store.friend_copies() as usize;
    let mut copies = 0;
    for v in 0..stored.graph.num_nodes() as u32 {
        let uid = stored.graph.original_id(v);
        let got = store.friends_profiles(uid).expect("friends' profiles");
        let mut want: Vec<(u64, u64, kith_store::Profile)> = stored
            .graph
            .neighbors(v)
            .iter()
            .map(|&f| {
                let f_uid = stored.graph.original_id(f);
                (stored.position[f as usize], f_uid, store.get_profile(f_uid).expect("profile"))
            })
            .collect();
        want.sort_by_key(|w| w.0);
        let want: Vec<(u64, kith_store::Profile)> = want.into_iter().map(|w| (w.1, w.2)).collect();
        assert_eq!(got.profiles, want, "friends' profiles of {uid}");
        let own = stored.position[v as usize] / k;
        let mut count = std::collections::BTreeMap::<u64, usize>::new();
        for &f in stored.graph.neighbors(v) {
            *count.entry(stored.position[f as usize] / k).or_default() += 1;
        }
        let mut read = std::collections::BTreeSet::new();
        let mut copied = 0;
        for (&q, &c) in &count {
            if q != own && c <= limit {
                read.insert(own);
                copied += c;
            } else {
                read.insert(q);
            }
        }
        assert_eq!(
            (got.partitions, got.copies, got.requests),
            (read.len(), copied, 1 + read.len()),
            "partitions, copies and requests of {uid}"
        );
        copies += got.copies;
    }
    copies
}

/// Runs one CQL statement on the test cluster, through a session of its own: for tests that
/// write by hand what a store would not.
///
/// # Panics
/// If the statement fails.
pub fn execute(cql: &str) {
    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    rt.block_on(async {
        let s = scylla::client::session_builder::SessionBuilder::new()
            .known_nodes(hosts())
            .build()
            .await
            .expect("a session on the test cluster");
        s.query_unpaged(cql, ()).await.unwrap_or_else(|e| panic!("{cql}: {e}"));
    });
}

/// A write timestamp (microseconds since the epoch) `ahead_s` seconds from now: what a clock
/// that far ahead gives.
pub fn micros_ahead(ahead_s: i64) -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map_or(0, |d| d.as_micros() as i64) + ahead_s * 1_000_000
}
