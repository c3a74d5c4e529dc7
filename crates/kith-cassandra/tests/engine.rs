//! The Cassandra store keeps the engine contract (the same random operations and oracles as
//! the RocksDB store), on a real 3-node cluster; and "list all friends' profiles" reads one
//! request per partition and agrees with the per-friend reads.

use kith_cassandra::{BuildConfig, CassandraOptions, build, drop_store, testing};
use kith_graph::Graph;
use kith_layout::Layout;
use kith_store::{DataSpec, Engine, LayoutMeta};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// The tests that load the cluster most run one at a time: on two cores beside three nodes,
/// running them together timed out QUORUM reads and Paxos rounds (5 s and 2 s).
static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn heavy() -> std::sync::MutexGuard<'static, ()> {
    HEAVY.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs CQL statements directly on the test cluster, one after another.
fn cql(statements: &[String]) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let session = scylla::client::session_builder::SessionBuilder::new()
            .known_nodes(testing::hosts())
            .build()
            .await
            .unwrap();
        for statement in statements {
            session.query_unpaged(statement.as_str(), ()).await.unwrap();
        }
    });
}

fn small_graph() -> Graph {
    let mut rng = Pcg64Mcg::seed_from_u64(3);
    let n = 40u32;
    let edges = (0..90).map(|_| (rng.random_range(0..n), rng.random_range(0..n))).collect();
    Graph::from_edges((0..u64::from(n)).map(|i| 5 + 3 * i).collect(), false, edges)
}

#[test]
fn the_cassandra_store_keeps_the_contract() {
    let _one = heavy();
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
    a_finished_record_replaces_a_claim_stamped_ahead(&store, &options.keyspace);
    drop(store);
    drop_store(&options).unwrap();
}

/// A claim made through a Cassandra node whose clock ran a minute ahead (its Paxos ballot
/// stamps the cell), written here directly at that timestamp: the finished record stored
/// after it must replace it. Written at the server's own clock, it lost, and every later
/// attempt with the key found it still claimed and applied the write again.
fn a_finished_record_replaces_a_claim_stamped_ahead(
    store: &kith_cassandra::CassandraStore,
    ks: &str,
) {
    let ahead_us =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros()
            as i64
            + 60_000_000;
    cql(&[format!(
        "INSERT INTO {ks}.idempotency (key, fingerprint, expires_ms, result) \
         VALUES ('ahead', 9, {}, 0x02) USING TIMESTAMP {ahead_us} AND TTL 600",
        i64::MAX / 4
    )]);
    let finished = kith_store::IdempotencyRecord {
        key: "ahead".into(),
        fingerprint: 9,
        expires_ms: u64::MAX / 4,
        result: vec![1],
    };
    store.put_idempotency_record(&finished).unwrap();
    assert_eq!(store.idempotency_record("ahead").unwrap(), Some(finished));
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
    let _one = heavy();
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

/// Two processes' stores (two servers) racing on one store: idempotency keys claimed at once,
/// the same follows and unfollows sent through both, and a whole friend list replaced through
/// one while the other changes one of its friendships. Each was a check followed by a write,
/// per process, before: both claims won, both follows counted, and the replaced list undid
/// the other's change on one side.
#[test]
fn two_servers_racing_apply_each_write_once() {
    let _one = heavy();
    let options = CassandraOptions::new(testing::hosts(), &testing::keyspace("race"));
    let graph = small_graph();
    let layout = Layout::identity(graph.num_nodes());
    let (one, _) =
        build(&options, &graph, &layout, LayoutMeta::default(), &BuildConfig::default()).unwrap();
    let two = kith_cassandra::CassandraStore::open(&options).unwrap();
    let uids: Vec<u64> = graph.original_ids().to_vec();
    let barrier = std::sync::Barrier::new(2);
    let mut rng = Pcg64Mcg::seed_from_u64(5);
    for round in 0..40u64 {
        let record = |result: u8| kith_store::IdempotencyRecord {
            key: format!("race-{round}"),
            fingerprint: 1,
            expires_ms: u64::MAX / 4,
            result: vec![result],
        };
        // Each server claims until it gets an answer, as a client retrying would; for a
        // minute at most, so a store that never answers fails the test instead of hanging it.
        let claim = |store: &kith_cassandra::CassandraStore, result: u8| {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            loop {
                match store.claim_idempotency_record(&record(result)) {
                    Ok(found) => return found,
                    Err(e) if std::time::Instant::now() > deadline => {
                        panic!("round {round}: no claim answered within a minute: {e}")
                    }
                    Err(_) => {}
                }
            }
        };
        let (a, b) = std::thread::scope(|s| {
            let a = s.spawn(|| {
                barrier.wait();
                claim(&one, 1)
            });
            let b = s.spawn(|| {
                barrier.wait();
                claim(&two, 2)
            });
            (a.join().unwrap(), b.join().unwrap())
        });
        // One record is stored; a claim either stored it or found it, never both.
        let stored = one.idempotency_record(&format!("race-{round}")).unwrap().unwrap();
        assert!(!(a.is_none() && b.is_none()), "round {round}: both claims won");
        for (got, mine) in [(&a, 1), (&b, 2)] {
            match got {
                None => assert_eq!(stored.result, [mine], "round {round}"),
                Some(found) => assert_eq!(found, &stored, "round {round}"),
            }
        }
        let (u, t) = (uids[rng.random_range(0..8)], uids[8 + rng.random_range(0..8)]);
        for follow in [true, false] {
            let applied = std::thread::scope(|s| {
                let runs = [&one, &two].map(|store| {
                    let barrier = &barrier;
                    s.spawn(move || {
                        barrier.wait();
                        // One of the two finds it done: 409 or 404 (the other read the edge
                        // before it changed, and reads it again); either may time out.
                        if follow {
                            store.follow(u, &[t])
                        } else {
                            store.unfollow(u, t, None).map(|_| ())
                        }
                    })
                });
                runs.map(|r| r.join().unwrap().is_ok())
            });
            assert!(!(applied[0] && applied[1]), "round {round}: both {follow} switches applied");
        }
    }
    // A write that timed out may have changed an edge and not its follower row; its intent
    // is repaired once its 2 s bucket of the intent log is 1.5 s old. Then every count is its
    // list's length.
    std::thread::sleep(std::time::Duration::from_millis(3_600));
    one.repair_follows().unwrap();
    for &u in &uids {
        let d = one.follow_degree(u).unwrap();
        let (out, inn) = (one.followees(u, 0, 1000).unwrap(), one.followers(u, 0, 1000).unwrap());
        assert_eq!(d.followees, out.len() as u64, "followees of {u}");
        assert_eq!(d.followers, inn.len() as u64, "followers of {u}");
        for t in out {
            assert!(one.followers(t, 0, 1000).unwrap().contains(&u), "{u} -> {t} one-sided");
        }
    }
    // A whole list replaced through one server while the other adds one of its friendships.
    let mut one_sided = Vec::new();
    for round in 0..30usize {
        let (u, v, w) = (uids[20 + round % 10], uids[30 + round % 5], uids[35 + round % 5]);
        two.delete_friend(u, v).unwrap();
        let (put, added) = std::thread::scope(|s| {
            let put = s.spawn(|| {
                barrier.wait();
                one.put_user(u, &kith_store::synthetic_profile(u, 1), &[w], None)
            });
            let added = s.spawn(|| {
                barrier.wait();
                two.add_friend(u, v)
            });
            (put.join().unwrap(), added.join().unwrap())
        });
        // A write that failed may still be applied by its batch log later: not judged.
        if put.is_err() || added.is_err() {
            continue;
        }
        let (fu, fv) = (one.get_all_friends(u).unwrap(), one.get_all_friends(v).unwrap());
        if fu.contains(&v) != fv.contains(&u) {
            one_sided.push((round, u, v));
        }
    }
    assert!(one_sided.is_empty(), "friendships on one side (round, u, v): {one_sided:?}");
    drop((one, two));
    drop_store(&options).unwrap();
}

/// Every one of the 64 numbers held by a server that stopped without releasing it (rows
/// written here directly, as those servers' claims left them): a claim for any number finds
/// none lapsed at first (none has been watched for a lease yet), watches once more for a
/// lease, and takes one.
#[test]
fn a_claim_when_every_number_is_held_waits_one_lease_and_takes_a_lapsed_one() {
    let options = CassandraOptions::new(testing::hosts(), &testing::keyspace("numbers"));
    let graph = small_graph();
    let layout = Layout::identity(graph.num_nodes());
    let (store, _) =
        build(&options, &graph, &layout, LayoutMeta::default(), &BuildConfig::default()).unwrap();
    let slots = store.server_slots();
    let ks = &options.keyspace;
    let rows: Vec<String> = (0..i32::from(slots))
        .map(|n| format!("INSERT INTO {ks}.servers (n, owner) VALUES ({n}, 'stopped-{n}@1')"))
        .collect();
    cql(&rows);
    let lease = std::time::Duration::from_secs(3);
    assert_eq!(store.claim_server("late", lease, Some(5)).unwrap(), None, "held");
    // A server started now: it has watched no row yet.
    let starting = kith_cassandra::CassandraStore::open(&options).unwrap();
    let t = std::time::Instant::now();
    let late = starting.claim_server("late", lease, None).unwrap();
    assert!(late.is_some(), "no number taken although every holder stopped");
    assert!(t.elapsed() >= lease, "a number taken before its lease was watched out");
    drop((store, starting));
    drop_store(&options).unwrap();
}
