//! The store against Bondhu's example, a reference model, concurrent readers during
//! relayouts, bad input and damaged files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use kith_graph::Graph;
use kith_layout::{Layout, LayoutConfig, Method, paper_example};
use kith_store::{
    BuildOptions, CacheMode, DataSpec, Error, LayoutMeta, NewLayout, OpenOptions, Profile, Store,
    build, synthetic_data,
};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

fn built(dir: &Path, graph: &Graph, layout: &Layout, data: DataSpec) -> Store {
    let options = BuildOptions { data, chunk_bytes: 64, seed: 3, progress: false };
    build(
        dir,
        graph,
        layout,
        LayoutMeta { method: "default".into(), ..LayoutMeta::default() },
        &options,
    )
    .expect("build")
}

fn random_graph(n: usize, m: usize, seed: u64) -> Graph {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let edges =
        (0..m).map(|_| (rng.random_range(0..n as u32), rng.random_range(0..n as u32))).collect();
    // Sparse, non-contiguous uids.
    Graph::from_edges((0..n as u64).map(|i| 10 + 7 * i).collect(), false, edges)
}

#[test]
fn bondhu_example_reads_back_in_layout_order() {
    let dir = tempfile::tempdir().unwrap();
    let g = paper_example();
    // The paper's layout {2,1,3,5,7,6,4}.
    let order = [2u64, 1, 3, 5, 7, 6, 4].iter().map(|&u| g.dense_id(u).unwrap()).collect();
    let layout = Layout::from_order(order).unwrap();
    let store = built(&dir.path().join("s"), &g, &layout, DataSpec::Fixed(100));
    let all: Vec<u64> = store.get_all_users().map(|r| r.unwrap().0).collect();
    assert_eq!(all, [2, 1, 3, 5, 7, 6, 4], "records are stored in layout order");
    let user = store.get_user(4).unwrap();
    assert_eq!(user.friends, [2, 3, 6, 7]);
    assert_eq!(user.data_bytes, 100);
    assert_eq!(user.profile.name, "user 4");
    assert_eq!(store.get_data(4, None).unwrap(), synthetic_data(4, 100, 3));
    // 100 bytes in 64-byte chunks: the first 10 bytes come from chunk 0 alone.
    assert_eq!(store.get_data(4, Some(10)).unwrap(), synthetic_data(4, 100, 3)[..10]);
    assert_eq!(store.get_data(4, Some(70)).unwrap(), synthetic_data(4, 100, 3)[..70]);
    let page = store.get_friends_list(3, 1, 2).unwrap();
    assert_eq!((page.friends, page.total), (vec![2, 4], 4));
    let listed = store.list_friends_data(4, Some(8)).unwrap();
    // Friends of 4 in layout order: 3 (position 2), 7 (4), 6 (5), 2 (0) -> 2, 3, 7, 6.
    assert_eq!(listed.iter().map(|(u, _)| *u).collect::<Vec<_>>(), [2, 3, 7, 6]);
    assert!(listed.iter().all(|(u, d)| *d == synthetic_data(*u, 100, 3)[..8]));
    let status = store.status(None).unwrap();
    assert_eq!((status.users, status.friendships, status.layout_cost), (7, 9, 20));
    assert!(store.verify().unwrap().ok());
}

#[test]
fn bad_input_gets_named_errors_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let g = paper_example();
    let store = built(&dir.path().join("s"), &g, &Layout::identity(7), DataSpec::Fixed(4));
    assert!(matches!(store.get_user(99), Err(Error::UnknownUser(99))));
    assert_eq!(store.get_profile(99).unwrap_err().to_string(), "user 99 not found");
    assert!(matches!(store.add_friend(1, 99), Err(Error::UnknownUser(99))));
    assert!(matches!(store.add_friend(3, 3), Err(Error::SelfFriendship(3))));
    let err = store.get_friends_list(1, 0, 5000).unwrap_err().to_string();
    assert!(err.contains("friends page of 5000 exceeds the limit of 1000"), "{err}");
    let err = store.put_data(1, &vec![0; 5 << 20]).unwrap_err().to_string();
    assert!(err.contains("limit of 4194304"), "{err}");
    let err = store.put_user(50, &Profile::default(), &[1, 77], None).unwrap_err();
    assert!(matches!(err, Error::UnknownUser(77)), "{err}");
    assert!(matches!(store.contains(50), Ok(false)), "a failed put_user leaves nothing behind");
    assert!(store.verify().unwrap().ok());
    assert_eq!(store.get_user(1).unwrap().friends, [2, 3, 5]);
}

#[test]
fn opening_what_is_not_a_store_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let err = Store::open(&dir.path().join("nope"), &OpenOptions::default()).unwrap_err();
    assert!(err.to_string().contains("not a kith store (no such directory)"), "{err}");
    let err = Store::open(dir.path(), &OpenOptions::default()).unwrap_err();
    assert!(err.to_string().contains("not a kith store (no RocksDB CURRENT file)"), "{err}");
    // A RocksDB database that kith did not write.
    let raw = dir.path().join("raw");
    {
        let mut o = rocksdb::Options::default();
        o.create_if_missing(true);
        let db = rocksdb::DB::open(&o, &raw).unwrap();
        db.put(b"hello", b"world").unwrap();
    }
    let err = Store::open(&raw, &OpenOptions::default()).unwrap_err();
    assert!(err.to_string().contains("without kith's metadata"), "{err}");
    // A store from a newer kith.
    let s = dir.path().join("s");
    drop(built(&s, &paper_example(), &Layout::identity(7), DataSpec::Fixed(4)));
    {
        let db = rocksdb::DB::open_default(&s).unwrap();
        db.put(b"mformat", 99u32.to_le_bytes()).unwrap();
    }
    let err = Store::open(&s, &OpenOptions::default()).unwrap_err();
    assert!(err.to_string().contains("store format version 99 is newer"), "{err}");
    // A store of format 1 (before friend-list merge operands) opens, and is marked 2 so
    // that a kith of format 1 refuses it by name rather than failing on a merge operand.
    {
        let db = rocksdb::DB::open_default(&s).unwrap();
        db.put(b"mformat", 1u32.to_le_bytes()).unwrap();
    }
    drop(Store::open(&s, &OpenOptions::default()).unwrap());
    {
        let db = rocksdb::DB::open_default(&s).unwrap();
        assert_eq!(db.get(b"mformat").unwrap(), Some(2u32.to_le_bytes().to_vec()));
    }
    // Building over an existing store is refused.
    let err = build(
        &s,
        &paper_example(),
        &Layout::identity(7),
        LayoutMeta::default(),
        &BuildOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(err, Error::Exists(_)), "{err}");
}

#[test]
fn a_damaged_sst_is_detected_by_verify_and_by_reads() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s");
    let g = random_graph(300, 900, 5);
    drop(built(&s, &g, &Layout::identity(300), DataSpec::Fixed(200)));
    // Find user 10 + 7*150's data in an SST file and flip one of its bytes.
    let uid = 10 + 7 * 150;
    let needle = synthetic_data(uid, 200, 3)[20..52].to_vec();
    let mut hit = false;
    for e in std::fs::read_dir(&s).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "sst") {
            let mut bytes = std::fs::read(e.path()).unwrap();
            if let Some(at) = bytes.windows(needle.len()).position(|w| w == needle) {
                bytes[at + 5] ^= 0x40;
                std::fs::write(e.path(), bytes).unwrap();
                hit = true;
            }
        }
    }
    assert!(hit, "the data block was found in an SST file");
    let store = Store::open(&s, &OpenOptions::default()).unwrap();
    let err = store.get_data(uid, None).unwrap_err().to_string();
    assert!(err.to_lowercase().contains("corrupt") || err.contains("checksum"), "{err}");
    assert!(store.verify().is_err_and(|e| e.to_string().to_lowercase().contains("corrupt")));
    // Users in other blocks still read.
    assert!(store.get_user(10).is_ok());
}

#[test]
fn a_damaged_record_is_reported_not_returned() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s");
    drop(built(&s, &paper_example(), &Layout::identity(7), DataSpec::Fixed(10)));
    {
        // Overwrite user 3's index entry (tag i, generation 1, uid 3) with bytes whose
        // checksum cannot match.
        let db = rocksdb::DB::open_default(&s).unwrap();
        let mut key = vec![b'i'];
        key.extend_from_slice(&1u32.to_be_bytes());
        key.extend_from_slice(&3u64.to_be_bytes());
        let mut value = db.get(&key).unwrap().unwrap();
        value[9] ^= 1;
        db.put(&key, &value).unwrap();
    }
    let store = Store::open(&s, &OpenOptions::default()).unwrap();
    let err = store.get_friends_list(3, 0, 10).unwrap_err().to_string();
    assert!(err.contains("corrupt record at key index/gen 1/uid 3: checksum mismatch"), "{err}");
    assert!(store.add_friend(3, 6).is_err(), "no write builds on a damaged record");
    let report = store.verify().unwrap();
    assert!(!report.ok());
    assert!(
        report.problems.iter().any(|p| p.contains("index/gen 1/uid 3")),
        "{:?}",
        report.problems
    );
    // Everyone else still reads.
    assert_eq!(store.get_friends_list(7, 0, 10).unwrap().friends, [4]);
}

/// The reference: what the store should hold.
#[derive(Default)]
struct Model {
    friends: BTreeMap<u64, BTreeSet<u64>>,
    profile: BTreeMap<u64, Profile>,
    data: BTreeMap<u64, Vec<u8>>,
}

#[test]
fn random_operations_agree_with_a_reference_across_relayouts_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s");
    let g = random_graph(60, 150, 9);
    let mut model = Model::default();
    for v in 0..60u32 {
        let uid = g.original_id(v);
        model.friends.insert(uid, g.neighbors(v).iter().map(|&w| g.original_id(w)).collect());
        model.profile.insert(uid, kith_store::synthetic_profile(uid, 3));
        model.data.insert(uid, synthetic_data(uid, 30, 3));
    }
    let mut store = Some(built(&s, &g, &Layout::identity(60), DataSpec::Fixed(30)));
    let mut rng = Pcg64Mcg::seed_from_u64(17);
    let mut next_uid = 100_000u64;
    for step in 0..1500 {
        let st = store.as_ref().unwrap();
        let uids: Vec<u64> = model.friends.keys().copied().collect();
        let u = uids[rng.random_range(0..uids.len())];
        let v = uids[rng.random_range(0..uids.len())];
        match rng.random_range(0..100) {
            0..35 => {
                let r = st.add_friend(u, v);
                if u == v {
                    assert!(matches!(r, Err(Error::SelfFriendship(_))));
                } else {
                    let new = model.friends.get_mut(&u).unwrap().insert(v);
                    model.friends.get_mut(&v).unwrap().insert(u);
                    assert_eq!(r.unwrap(), new, "add_friend({u}, {v}) reports whether it was new");
                }
            }
            35..55 => {
                if u != v {
                    let existed = model.friends.get_mut(&u).unwrap().remove(&v);
                    model.friends.get_mut(&v).unwrap().remove(&u);
                    assert_eq!(st.delete_friend(u, v).unwrap(), existed);
                }
            }
            55..65 => {
                let len = rng.random_range(0..300);
                let d: Vec<u8> = (0..len).map(|_| rng.random()).collect();
                st.put_data(u, &d).unwrap();
                model.data.insert(u, d);
            }
            65..72 => {
                let mut p =
                    Profile { name: format!("n{step}"), age: Some(step), ..Profile::default() };
                p.fields.insert("k".into(), format!("v{step}"));
                st.put_profile(u, &p).unwrap();
                model.profile.insert(u, p);
            }
            72..82 => {
                // A whole user, new or replaced, with a few friends.
                let uid = if rng.random_bool(0.5) { next_uid } else { u };
                next_uid += 1;
                let fs: BTreeSet<u64> = (0..rng.random_range(0..4))
                    .map(|_| uids[rng.random_range(0..uids.len())])
                    .filter(|&f| f != uid)
                    .collect();
                let p = Profile { name: format!("whole {uid}"), ..Profile::default() };
                let d = vec![step as u8; rng.random_range(0..200)];
                st.put_user(uid, &p, &fs.iter().copied().collect::<Vec<_>>(), Some(&d)).unwrap();
                for old in model.friends.get(&uid).cloned().unwrap_or_default() {
                    model.friends.get_mut(&old).unwrap().remove(&uid);
                }
                for &f in &fs {
                    model.friends.get_mut(&f).unwrap().insert(uid);
                }
                model.friends.insert(uid, fs);
                model.profile.insert(uid, p);
                model.data.insert(uid, d);
            }
            82..86 => {
                let methods = [Method::Random, Method::Bfs, Method::Kith, Method::Input];
                let config = LayoutConfig {
                    method: methods[step as usize % 4],
                    seed: step.into(),
                    ..LayoutConfig::default()
                };
                st.relayout(NewLayout::Compute(config), false).unwrap();
            }
            86..88 => {
                drop(store.take());
                store = Some(Store::open(&s, &OpenOptions::default()).unwrap());
            }
            _ => {
                let user = st.get_user(u).unwrap();
                assert_eq!(user.friends, model.friends[&u].iter().copied().collect::<Vec<_>>());
                assert_eq!(user.profile, model.profile[&u]);
                assert_eq!(st.get_data(u, None).unwrap(), model.data[&u]);
                let some = st.get_data(u, Some(70)).unwrap();
                assert_eq!(some, model.data[&u][..model.data[&u].len().min(70)]);
            }
        }
    }
    let st = store.unwrap();
    for (&uid, fs) in &model.friends {
        let user = st.get_user(uid).unwrap();
        assert_eq!(user.friends, fs.iter().copied().collect::<Vec<_>>(), "user {uid}");
        assert_eq!(st.get_data(uid, None).unwrap(), model.data[&uid]);
        assert_eq!(st.get_profile(uid).unwrap(), model.profile[&uid]);
    }
    let report = st.verify().unwrap();
    assert!(report.ok(), "{:?}", report.problems);
    assert_eq!(report.users as usize, model.friends.len());
    let all: BTreeSet<u64> = st.get_all_users().map(|r| r.unwrap().0).collect();
    assert_eq!(all, model.friends.keys().copied().collect());
    let mut rng = Pcg64Mcg::seed_from_u64(1);
    let sample = st.get_random_users(10, &mut rng).unwrap();
    assert_eq!(sample.iter().map(|s| s.0).collect::<BTreeSet<_>>().len(), 10);
}

#[test]
fn readers_never_see_a_partial_relayout() {
    let dir = tempfile::tempdir().unwrap();
    let g = random_graph(400, 2000, 21);
    let store = built(&dir.path().join("s"), &g, &Layout::identity(400), DataSpec::Fixed(150));
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for t in 0..2u64 {
            let (store, g, done) = (&store, &g, &done);
            scope.spawn(move || {
                let mut rng = Pcg64Mcg::seed_from_u64(t);
                let mut reads = 0;
                while !done.load(Ordering::SeqCst) || reads < 200 {
                    let v = rng.random_range(0..400u32);
                    let uid = g.original_id(v);
                    let want: Vec<u64> = g.neighbors(v).iter().map(|&w| g.original_id(w)).collect();
                    let got = store.list_friends_data(uid, None).expect("read during relayout");
                    let mut got_uids: Vec<u64> = got.iter().map(|(u, _)| *u).collect();
                    got_uids.sort_unstable();
                    assert_eq!(got_uids, want);
                    for (f, d) in &got {
                        assert_eq!(d, &synthetic_data(*f, 150, 3));
                    }
                    reads += 1;
                }
            });
        }
        for i in 0..4 {
            let config =
                LayoutConfig { method: Method::Random, seed: i, ..LayoutConfig::default() };
            store.relayout(NewLayout::Compute(config), false).unwrap();
        }
        done.store(true, Ordering::SeqCst);
    });
    assert_eq!(store.generation(), 5);
    assert!(store.verify().unwrap().ok());
}

#[test]
fn new_users_are_appended_and_status_sees_the_drift() {
    let dir = tempfile::tempdir().unwrap();
    let g = random_graph(200, 800, 2);
    let config = LayoutConfig { method: Method::Bfs, ..LayoutConfig::default() };
    let layout = kith_layout::compute(&g, &config).unwrap().layout;
    let meta = LayoutMeta { method: "bfs".into(), record_bytes: 40, ..LayoutMeta::default() };
    let options = BuildOptions { data: DataSpec::Fixed(40), ..BuildOptions::default() };
    let store = build(&dir.path().join("s"), &g, &layout, meta, &options).unwrap();
    let fresh = store.status(None).unwrap();
    assert!(fresh.degradation.abs() < 1e-9, "as built, the layout is the fresh one");
    let mut rng = Pcg64Mcg::seed_from_u64(4);
    for i in 0..50u64 {
        let friends: Vec<u64> = (0..4).map(|_| g.original_id(rng.random_range(0..200))).collect();
        let mut f = friends.clone();
        f.sort_unstable();
        f.dedup();
        store.put_user(1_000_000 + i, &Profile::default(), &f, None).unwrap();
    }
    let all: Vec<u64> = store.get_all_users().map(|r| r.unwrap().0).collect();
    assert_eq!(
        &all[200..],
        (1_000_000..1_000_050).collect::<Vec<_>>(),
        "appended in arrival order"
    );
    let drifted = store.status(None).unwrap();
    assert_eq!((drifted.users, drifted.appended_since_layout), (250, 50));
    assert!(drifted.degradation > 0.01, "{}", drifted.degradation);
    store.relayout(NewLayout::Compute(config), false).unwrap();
    let after = store.status(None).unwrap();
    assert!(after.degradation.abs() < 1e-9);
    assert_eq!(after.appended_since_layout, 0);
}

#[test]
fn cold_reads_count_device_pages() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s");
    let g = random_graph(2000, 8000, 8);
    drop(built(&s, &g, &Layout::identity(2000), DataSpec::Fixed(400)));
    let store =
        Store::open(&s, &OpenOptions { mode: CacheMode::Cold, ..OpenOptions::default() }).unwrap();
    let uid = g.original_id(7);
    store.drop_caches().unwrap();
    let (got, io) = kith_store::measure(|| store.list_friends_data(uid, None));
    let friends = got.unwrap().len() as u64;
    assert!(io.blocks >= 2, "the friend list and the friends' blocks come from the device: {io:?}");
    assert!(io.pages() >= io.blocks.min(friends), "{io:?}");
    // Warm again: the same query a second time without dropping caches reads nothing.
    let (_, again) = kith_store::measure(|| store.list_friends_data(uid, None));
    assert_eq!(again.blocks, 0, "{again:?}");
    store.drop_caches().unwrap();
    let (_, third) = kith_store::measure(|| store.list_friends_data(uid, None));
    assert_eq!(third.blocks, io.blocks);
}

#[test]
fn a_benchmark_of_given_friends_reads_only_them_and_refuses_strangers() {
    let dir = tempfile::tempdir().unwrap();
    let g = paper_example();
    let store =
        built(&dir.path().join("s"), &g, &Layout::identity(g.num_nodes()), DataSpec::Fixed(100));
    let bench = |queries: Vec<(u64, Vec<u64>)>| {
        let bench = kith_store::FriendsBench {
            repeat: 1,
            queries: Some(std::sync::Arc::new(queries)),
            ..kith_store::FriendsBench::default()
        };
        store.bench_friends(&bench)
    };
    let report = bench(vec![(4, vec![2, 6]), (1, vec![3])]).unwrap();
    let friends: Vec<(u64, usize)> = report.runs.iter().map(|r| (r.uid, r.friends)).collect();
    assert_eq!(friends, [(4, 2), (1, 1)]);
    // 5 is not a friend of 4 (its friends are 2, 3, 6, 7).
    let err = bench(vec![(4, vec![2, 5])]).unwrap_err().to_string();
    assert!(err.contains("5 is not a friend of 4"), "{err}");
}
