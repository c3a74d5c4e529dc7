//! The Cassandra store keeps the engine contract (the same random operations and oracles as
//! the RocksDB store), on a real 3-node cluster; and "list all friends' profiles" reads one
//! request per partition and agrees with the per-friend reads.

use kith_cassandra::{BuildConfig, CassandraOptions, build, drop_store, testing};
use kith_graph::Graph;
use kith_layout::Layout;
use kith_store::{DataSpec, Engine, LayoutMeta};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

fn small_graph() -> Graph {
    let mut rng = Pcg64Mcg::seed_from_u64(3);
    let n = 40u32;
    let edges = (0..90).map(|_| (rng.random_range(0..n), rng.random_range(0..n))).collect();
    Graph::from_edges((0..u64::from(n)).map(|i| 5 + 3 * i).collect(), false, edges)
}

#[test]
fn the_cassandra_store_keeps_the_contract() {
    let options = CassandraOptions::new(testing::hosts(), &testing::keyspace("contract"));
    let graph = small_graph();
    let layout = Layout::identity(graph.num_nodes());
    // Partitions of 4 positions, and data blocks over several 64 KiB chunks for some users.
    let config = BuildConfig {
        partition_users: 4,
        data: DataSpec::PowerLaw { min: 1, max: 200_000 },
        ..BuildConfig::default()
    };
    let (store, report) = build(&options, &graph, &layout, LayoutMeta::default(), &config).unwrap();
    assert_eq!((report.users, report.partitions), (40, 10));
    for v in 0..graph.num_nodes() as u32 {
        let uid = graph.original_id(v);
        let want =
            kith_store::synthetic_data(uid, config.data.size_of(uid, config.seed), config.seed);
        assert_eq!(store.get_data(uid, None).unwrap(), want, "data block of {uid}");
    }
    kith_store::testing::contract(&store);
    drop(store);
    drop_store(&options).unwrap();
}

#[test]
fn friends_profiles_read_one_partition_per_run() {
    let options = CassandraOptions::new(testing::hosts(), &testing::keyspace("friends"));
    let graph = small_graph();
    let layout = Layout::identity(graph.num_nodes());
    let config = BuildConfig { partition_users: 8, ..BuildConfig::default() };
    let (store, _) = build(&options, &graph, &layout, LayoutMeta::default(), &config).unwrap();
    for v in 0..graph.num_nodes() as u32 {
        let uid = graph.original_id(v);
        let got = store.friends_profiles(uid).unwrap();
        let mut want: Vec<(u64, kith_store::Profile)> = graph
            .neighbors(v)
            .iter()
            .map(|&f| (graph.original_id(f), store.get_profile(graph.original_id(f)).unwrap()))
            .collect();
        want.sort_by_key(|(f, _)| layout.position(graph.dense_id(*f).unwrap()));
        assert_eq!(got.profiles, want, "friends of {uid}");
        let parts: std::collections::BTreeSet<u32> =
            graph.neighbors(v).iter().map(|&f| layout.position(f) / 8).collect();
        assert_eq!(
            (got.partitions, got.requests),
            (parts.len(), 1 + parts.len()),
            "partitions of {uid}"
        );
    }
    // An unknown user is named.
    assert!(matches!(store.friends_profiles(1), Err(kith_store::Error::UnknownUser(1))));
    drop(store);
    drop_store(&options).unwrap();
}
