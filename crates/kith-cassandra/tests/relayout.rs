//! A relayout on the cluster: readers (in this process and in another store handle, as
//! another server would be) keep reading while the users are copied into the next generation
//! in a new order and partition size; afterwards every user reads back the same, the
//! friends' profiles follow the new placement, and a cursor of the old generation is refused.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use kith_cassandra::{BuildConfig, CassandraOptions, CassandraStore, build, drop_store, testing};
use kith_graph::Graph;
use kith_layout::Layout;
use kith_store::{Engine, Error, LayoutMeta, NewLayout};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

#[test]
fn readers_keep_reading_through_a_relayout() {
    let options = CassandraOptions::new(testing::hosts(), &testing::keyspace("relayout"));
    let mut rng = Pcg64Mcg::seed_from_u64(5);
    let n = 120u32;
    let edges = (0..400).map(|_| (rng.random_range(0..n), rng.random_range(0..n))).collect();
    let graph = Graph::from_edges((0..u64::from(n)).map(|i| 1000 + 7 * i).collect(), false, edges);
    let layout = Layout::identity(graph.num_nodes());
    let config = BuildConfig { partition_users: 4, ..BuildConfig::default() };
    let (store, _) = build(&options, &graph, &layout, LayoutMeta::default(), &config).unwrap();
    let store = Arc::new(store);
    let other = Arc::new(CassandraStore::open(&options).unwrap());
    let uids: Vec<u64> = graph.original_ids().to_vec();
    let before: Vec<(Vec<u64>, Vec<u8>)> = uids
        .iter()
        .map(|&u| (store.get_all_friends(u).unwrap(), store.get_data(u, None).unwrap()))
        .collect();
    let (first_page, cursor) = store.users_page(None, 10).unwrap();
    assert_eq!(first_page.len(), 10);

    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = [store.clone(), other.clone()]
        .into_iter()
        .enumerate()
        .map(|(k, s)| {
            let (stop, reads, uids, before) =
                (stop.clone(), reads.clone(), uids.clone(), before.clone());
            std::thread::spawn(move || {
                let mut rng = Pcg64Mcg::seed_from_u64(k as u64);
                while !stop.load(Ordering::Relaxed) {
                    let i = rng.random_range(0..uids.len());
                    assert_eq!(
                        s.get_all_friends(uids[i]).unwrap(),
                        before[i].0,
                        "friends of {}",
                        uids[i]
                    );
                    let profiles = s.friends_profiles(uids[i]).unwrap();
                    assert_eq!(profiles.profiles.len(), before[i].0.len());
                    assert_eq!(s.get_data(uids[i], None).unwrap(), before[i].1);
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let mut order: Vec<u32> = (0..n).collect();
    order.shuffle(&mut rng);
    let shuffled = Layout::from_order(order).unwrap();
    let meta = LayoutMeta { method: "random".into(), ..LayoutMeta::default() };
    let report =
        store.relayout(NewLayout::Given(&shuffled, meta), Some(8), Some(1), false).unwrap();
    assert_eq!((report.from_generation, report.to_generation, report.users), (1, 2, u64::from(n)));
    std::thread::sleep(Duration::from_millis(1500));
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().expect("a reader failed during the relayout");
    }
    assert!(reads.load(Ordering::Relaxed) > 20, "only {} reads", reads.load(Ordering::Relaxed));

    // The other handle noticed the switch within a second; both read the new placement.
    for s in [&store, &other] {
        assert_eq!((s.generation(), s.partition_users()), (2, 8));
        for (i, &u) in uids.iter().enumerate() {
            assert_eq!(s.get_all_friends(u).unwrap(), before[i].0);
            assert_eq!(s.get_data(u, None).unwrap(), before[i].1);
        }
    }
    // The new generation made the friend copies its placement needs.
    assert!(report.copies > 0);
    assert!(testing::check_friends_profiles(&other) > 0, "no friend read from a copy");
    assert!(matches!(
        store.users_page(cursor, 10),
        Err(Error::StaleCursor { cursor: 1, current: 2 })
    ));
    // Every copied cell of a user carries one timestamp, its index row's clock's: a write
    // after the switch reads that clock and stamps past it, so it wins over every copy,
    // whatever the coordinators' clocks (each request stamped by its coordinator gave
    // each a timestamp of its own).
    let writetimes = |cql: String| -> Vec<(i64, i64)> {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let s = scylla::client::session_builder::SessionBuilder::new()
                .known_nodes(testing::hosts())
                .build()
                .await
                .unwrap();
            s.query_unpaged(cql, ())
                .await
                .unwrap()
                .into_rows_result()
                .unwrap()
                .rows::<(i64, i64)>()
                .unwrap()
                .map(Result::unwrap)
                .collect()
        })
    };
    let ks = options.keyspace.clone();
    let clocks: std::collections::HashMap<i64, i64> =
        writetimes(format!("SELECT uid, writetime(clock) FROM {ks}.index_g2"))
            .into_iter()
            .collect();
    let copies = writetimes(format!("SELECT uid, writetime(profile) FROM {ks}.users_g2"));
    assert_eq!(clocks.len(), n as usize);
    assert!(copies.len() > n as usize, "friend copies among the profiles");
    for (uid, at) in copies {
        assert_eq!(Some(&at), clocks.get(&uid), "a copied profile's timestamp, stored uid {uid}");
    }
    // Writes go to the new generation.
    store.add_friend(uids[0], uids[1]).unwrap();
    assert!(other.get_all_friends(uids[1]).unwrap().contains(&uids[0]));
    let stored = store.graph().unwrap();
    assert_eq!(stored.graph.num_nodes(), n as usize);
    drop((store, other));
    drop_store(&options).unwrap();
}
