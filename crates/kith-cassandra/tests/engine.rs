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
    // Partitions of 4 positions with friend copies, and data blocks over several 64 KiB
    // chunks for some users.
    let config = BuildConfig {
        partition_users: 4,
        friend_copies: 1,
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
    // The copies followed every profile write and friendship change of the contract.
    testing::check_friends_profiles(&store);
    drop(store);
    drop_store(&options).unwrap();
}

#[test]
fn friends_profiles_read_lone_friends_from_copies() {
    let options = CassandraOptions::new(testing::hosts(), &testing::keyspace("copies"));
    let graph = small_graph();
    let layout = Layout::identity(graph.num_nodes());
    let config = BuildConfig { partition_users: 8, friend_copies: 2, ..BuildConfig::default() };
    let (store, report) = build(&options, &graph, &layout, LayoutMeta::default(), &config).unwrap();
    assert!(report.copies > 0);
    let copies = testing::check_friends_profiles(&store);
    assert!(copies > 0, "no friend was read from a copy");
    // Profile writes reach the copies; friendships made and dropped make the copies they need.
    let uids: Vec<u64> = graph.original_ids().to_vec();
    let mut rng = Pcg64Mcg::seed_from_u64(9);
    for step in 0..60 {
        let (a, b) = (uids[rng.random_range(0..uids.len())], uids[rng.random_range(0..uids.len())]);
        match step % 3 {
            0 => store.put_profile(a, &kith_store::synthetic_profile(a, step)).unwrap(),
            1 if a != b => drop(store.add_friend(a, b).unwrap()),
            _ if a != b => drop(store.delete_friend(a, b).unwrap()),
            _ => {}
        }
    }
    testing::check_friends_profiles(&store);
    drop(store);
    drop_store(&options).unwrap();
}

/// Two handles (two servers) race, round after round: one rewrites a user's profile while
/// the other befriends it to someone in another partition (which copies the profile). The
/// copy must end equal to the profile whichever finishes first.
#[test]
fn copies_stay_exact_under_two_concurrent_writers() {
    let options = CassandraOptions::new(testing::hosts(), &testing::keyspace("copyrace"));
    let graph = small_graph();
    let layout = Layout::identity(graph.num_nodes());
    // Every friend outside the user's partition is read from a copy.
    let config = BuildConfig { partition_users: 4, friend_copies: 40, ..BuildConfig::default() };
    let (store, _) = build(&options, &graph, &layout, LayoutMeta::default(), &config).unwrap();
    let other = kith_cassandra::CassandraStore::open(&options).unwrap();
    let uids: Vec<u64> = graph.original_ids().to_vec();
    let mut rng = Pcg64Mcg::seed_from_u64(1);
    let barrier = std::sync::Barrier::new(2);
    let mut stale = Vec::new();
    for round in 0..150u64 {
        let (i, j) = (rng.random_range(0..uids.len()), rng.random_range(0..uids.len()));
        if i / 4 == j / 4 {
            continue;
        }
        let (a, b) = (uids[i], uids[j]);
        other.delete_friend(a, b).unwrap();
        let profile = kith_store::synthetic_profile(b, 1000 + round);
        // The profile write starts anywhere in the friendship's course.
        let delay = std::time::Duration::from_micros(rng.random_range(0..12_000));
        std::thread::scope(|s| {
            s.spawn(|| {
                barrier.wait();
                std::thread::sleep(delay);
                store.put_profile(b, &profile).unwrap();
            });
            s.spawn(|| {
                barrier.wait();
                other.add_friend(a, b).unwrap();
            });
        });
        let listed = store.friends_profiles(a).unwrap();
        let copy = listed.profiles.iter().find(|(f, _)| *f == b).map(|(_, p)| p.clone());
        if copy.as_ref() != Some(&profile) {
            stale.push((round, a, b));
        }
    }
    assert!(stale.is_empty(), "stale copies (round, user, friend): {stale:?}");
    testing::check_friends_profiles(&store);
    drop((store, other));
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
