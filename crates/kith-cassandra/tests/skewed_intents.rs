//! Follow intents outlive no deletion, whatever the clocks of the nodes that coordinate their
//! writes: with one node's clock 30 s ahead (the test command's cluster, started with
//! `--skewable`), every intent of sixty follow edits is gone once the edits return. With
//! their coordinators' clocks, an intent written through that node outlived its deletion
//! through another, and every read of its target's followers settled its edge again for
//! two minutes (what made hybrid feeds slow under `skew-cassandra`).
//!
//! It skews the shared cluster's clock for a few seconds, in its own test binary, so no
//! other test runs meanwhile (Cargo runs test binaries one after another); the clock is
//! set right again even if the test fails. Without a shared cluster it starts a skewable
//! one of its own on 127.0.9.1–3 (Java, Maven and Debian's faketime, as
//! `scripts/cluster-deps.sh` installs them), stopped when the test ends: it never passes
//! without skewing a clock.

use std::time::Duration;

use kith_cassandra::local::{ClusterConfig, LocalCluster};
use kith_cassandra::{BuildConfig, CassandraOptions, build, testing};
use kith_graph::Graph;
use kith_layout::Layout;
use kith_store::{Engine, LayoutMeta};
use scylla::client::session_builder::SessionBuilder;

/// libfaketime re-reads a clock file at most a second after it changes.
const CLOCK_TAKES: Duration = Duration::from_secs(3);

/// Sets node 1's clock right when dropped.
struct Skewed<'a>(&'a LocalCluster);

impl Drop for Skewed<'_> {
    fn drop(&mut self) {
        let _ = self.0.set_clock(1, 0);
        std::thread::sleep(CLOCK_TAKES);
    }
}

/// A cluster this test started, stopped when dropped (also when the test fails).
struct Own(LocalCluster);

impl Drop for Own {
    fn drop(&mut self) {
        let _ = self.0.down(Duration::from_secs(10));
    }
}

/// The stored form of a uid (bigint, order kept).
fn key(uid: u64) -> i64 {
    (uid ^ (1 << 63)) as i64
}

#[test]
fn no_intent_outlives_its_deletion_with_a_node_clock_ahead() {
    let scratch = tempfile::tempdir().unwrap();
    let own;
    let shared;
    let cluster = match std::env::var("KITH_TEST_CLUSTER_DIR") {
        Ok(dir) => {
            shared = LocalCluster::open(std::path::Path::new(&dir)).unwrap();
            assert!(shared.skewable, "{dir}: start the test cluster with `--skewable`");
            &shared
        }
        Err(_) => {
            let config = ClusterConfig {
                dir: scratch.path().join("cluster"),
                base: std::net::Ipv4Addr::new(127, 0, 9, 1),
                heap_mb: 512,
                progress: true,
                skewable: true,
                ..ClusterConfig::default()
            };
            own = Own(LocalCluster::up(&config).expect("a skewable cluster of its own"));
            &own.0
        }
    };
    let hosts = cluster.hosts();
    let ks = testing::keyspace("skewintents");
    let options = CassandraOptions::new(hosts.clone(), &ks);
    let users: Vec<u64> = (1..=61).collect();
    let graph = Graph::from_edges(users, false, vec![(0, 1)]);
    let layout = Layout::identity(graph.num_nodes());
    let (store, _) =
        build(&options, &graph, &layout, LayoutMeta::default(), &BuildConfig::default()).unwrap();
    let author = 1u64;
    {
        cluster.set_clock(1, 30).unwrap();
        let _right_again = Skewed(cluster);
        std::thread::sleep(CLOCK_TAKES);
        for u in 2..=41u64 {
            store.follow(u, &[author]).unwrap();
        }
        for u in 2..=21u64 {
            store.unfollow(u, author, None).unwrap();
        }
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (by_target, logged) = rt.block_on(async {
        let s = SessionBuilder::new().known_nodes(&hosts).build().await.unwrap();
        let count = |cql: String| {
            let s = &s;
            async move {
                let rows = s.query_unpaged(cql, ()).await.unwrap().into_rows_result().unwrap();
                rows.single_row::<(i64,)>().unwrap().0
            }
        };
        let by_target = count(format!(
            "SELECT count(*) FROM {ks}.follow_intents_at WHERE target = {}",
            key(author)
        ))
        .await;
        let logged = count(format!("SELECT count(*) FROM {ks}.follow_intent_log")).await;
        (by_target, logged)
    });
    assert_eq!((by_target, logged), (0, 0), "intents left (by target, in the log)");
    assert_eq!(store.follow_degree(author).unwrap().followers, 20);
    let mut followers = store.followers(author, 0, 100).unwrap();
    followers.sort_unstable();
    assert_eq!(followers, (22..=41).collect::<Vec<u64>>());
}
