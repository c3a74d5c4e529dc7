//! A friendship change costs what it changes: adding friends to a user with a long friend
//! list writes a few bytes to the WAL each, not the whole list, and the lists still read
//! back whole, sorted and checked, before and after a reopen.

use std::time::Instant;

use kith_graph::Graph;
use kith_layout::Layout;
use kith_store::{
    BuildOptions, DataSpec, Histogram, LayoutMeta, OpenOptions, Store, Ticker, build,
};

/// A store where user 0 has `friends` friends (1..=friends) and users
/// `friends + 1 ..= friends + spare` have none.
fn hub_store(dir: &std::path::Path, friends: u64, spare: u64) -> Store {
    let n = friends + spare + 1;
    let edges = (1..=friends as u32).map(|v| (0, v)).collect();
    let graph = Graph::from_edges((0..n).collect(), false, edges);
    let options = BuildOptions { data: DataSpec::Fixed(4), ..BuildOptions::default() };
    build(dir, &graph, &Layout::identity(n as usize), LayoutMeta::default(), &options).unwrap()
}

/// Adds `count` new friends to user 0 (which has `friends`): (WAL bytes, seconds).
fn add_to_hub(store: &Store, friends: u64, count: u64) -> (u64, f64) {
    let wal = store.ticker(Ticker::WalFileBytes);
    let start = Instant::now();
    for v in friends + 1..=friends + count {
        assert!(store.add_friend(0, v).unwrap(), "0-{v} is new");
    }
    (store.ticker(Ticker::WalFileBytes) - wal, start.elapsed().as_secs_f64())
}

#[test]
fn adding_a_friend_to_a_long_list_writes_little() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s");
    let (friends, count) = (20_000, 100);
    let store = hub_store(&s, friends, count);
    let (wal, _) = add_to_hub(&store, friends, count);
    // Before: each add rewrote user 0's list of 20,000+ entries (320 KB) into the WAL.
    assert!(wal < count * 1024, "{count} adds wrote {wal} WAL bytes");
    // Read-your-writes, repeats and drops answer as before.
    let want: Vec<u64> = (1..=friends + count).collect();
    assert_eq!(store.get_all_friends(0).unwrap(), want);
    assert_eq!(store.get_all_friends(friends + 1).unwrap(), vec![0]);
    assert!(!store.add_friend(0, 5).unwrap());
    assert!(!store.add_friend(friends + 1, 0).unwrap());
    assert!(store.delete_friend(5, 0).unwrap());
    assert!(!store.delete_friend(0, 5).unwrap());
    assert!(store.add_friend(5, 0).unwrap());
    assert!(store.delete_friend(0, 7).unwrap());
    let page = store.get_friends_list(0, 0, 8).unwrap();
    assert_eq!((page.friends, page.total), (vec![1, 2, 3, 4, 5, 6, 8, 9], want.len() - 1));
    assert!(store.verify().unwrap().ok());
    // The changes are in the WAL, folded again on reopen.
    drop(store);
    let store = Store::open(&s, &OpenOptions::default()).unwrap();
    let mut want = want;
    want.retain(|&v| v != 7);
    assert_eq!(store.get_all_friends(0).unwrap(), want);
    assert_eq!(store.get_all_friends(7).unwrap(), Vec::<u64>::new());
    assert!(store.verify().unwrap().ok());
}

/// The measurement of the report: 1,000 adds to a user with 100,000 friends, WAL bytes and
/// time. Run with `--ignored --nocapture`.
#[test]
#[ignore]
fn measure_adds_to_a_hub() {
    let dir = tempfile::tempdir().unwrap();
    let (friends, count) = (100_000, 1000);
    let store = hub_store(&dir.path().join("s"), friends, count);
    let (wal, secs) = add_to_hub(&store, friends, count);
    println!(
        "{{\"friends\": {friends}, \"adds\": {count}, \"wal_bytes\": {wal}, \"seconds\": {secs:.3}, \"ms_per_add\": {:.3}}}",
        secs * 1000.0 / count as f64
    );
}

/// Changes to one list do not pile up for its readers: operands are folded into a value in
/// the memtable every few dozen (found when the HTTP fuzzer slowed down: 20,000 toggles of
/// one friendship made every read of the list fold 20,000 operands).
#[test]
fn toggling_a_friendship_keeps_reads_of_the_list_short() {
    let dir = tempfile::tempdir().unwrap();
    let store = hub_store(&dir.path().join("s"), 50, 2);
    for _ in 0..2000 {
        assert!(store.add_friend(51, 52).unwrap());
        assert!(store.delete_friend(51, 52).unwrap());
        assert!(store.add_friend(0, 51).unwrap());
        assert!(store.delete_friend(0, 51).unwrap());
    }
    for uid in [0, 51, 52] {
        store.get_all_friends(uid).unwrap();
    }
    // Every change reads both lists first, so this covers 8,000 reads of piled-up lists.
    let operands = store.histogram(Histogram::ReadNumMergeOperands);
    println!("merge operands per read: max {}, median {}", operands.max(), operands.median());
    assert!(operands.count() > 0, "no read counted");
    assert!(operands.max() <= 64.0, "a read folded {} operands", operands.max());
    assert!(store.get_all_friends(51).unwrap().is_empty());
    assert_eq!(store.get_all_friends(0).unwrap().len(), 50);
}
