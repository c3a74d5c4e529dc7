//! Pending re-pushes on a real cluster keep the order their writers gave them, whatever the
//! clocks that wrote them before said: a clearing stamped ahead (a server whose clock was
//! set ahead, or a coordinator's under the old deletes) neither hides a ticket stored after
//! it, nor does a ticket stamped ahead survive its clearing.

use kith_cassandra::{BuildConfig, CassandraOptions, CassandraStore, build, testing};
use kith_graph::Graph;
use kith_layout::Layout;
use kith_store::{Engine, LayoutMeta};

/// The stored form of a uid (bigint, order kept).
fn key(uid: u64) -> i64 {
    (uid ^ (1 << 63)) as i64
}

/// Writes `ticket` under `author` by hand, stamped `ahead_s` seconds ahead of now.
fn stamped_ahead(ks: &str, author: u64, ticket: i64, ahead_s: i64) {
    let at = testing::micros_ahead(ahead_s);
    testing::execute(&format!(
        "INSERT INTO {ks}.repushes (author, ticket) VALUES ({}, {ticket}) USING TIMESTAMP {at}",
        key(author)
    ));
}

#[test]
fn a_re_push_stamped_ahead_neither_hides_a_later_one_nor_outlives_its_clearing() {
    let ks = testing::keyspace("repushes");
    let options = CassandraOptions::new(testing::hosts(), &ks);
    let graph = Graph::from_edges(vec![1, 2, 3], false, vec![(0, 1), (1, 2)]);
    let layout = Layout::identity(graph.num_nodes());
    let (store, _) =
        build(&options, &graph, &layout, LayoutMeta::default(), &BuildConfig::default()).unwrap();
    let (author, a, b) = (1u64, 2u64, 3u64);
    store.follow(a, &[author]).unwrap();
    store.follow(b, &[author]).unwrap();

    // Down from two followers to one, at a threshold of one: the author is pushed again.
    store.unfollow(a, author, Some(1)).unwrap();
    let first = store.pending_repush(author).unwrap().expect("a re-push is pending");
    assert_eq!(store.pending_repushes().unwrap(), [author]);

    // Its clearing was written by a server whose clock is 30 s ahead (before, a delete
    // through a coordinator whose clock was). A later crossing's ticket, written by this
    // server, is still the one read: before, it stayed hidden for those 30 s, and a re-push
    // cut short by a crash then was never redone.
    stamped_ahead(&ks, author, i64::MIN, 30);
    assert_eq!(store.pending_repush(author).unwrap(), None);
    assert!(store.pending_repushes().unwrap().is_empty());
    store.unfollow(b, author, Some(0)).unwrap();
    let second = store.pending_repush(author).unwrap().expect("the second re-push is pending");
    assert_ne!(second, first);
    assert_eq!(store.pending_repushes().unwrap(), [author]);
    // Seen by another server too.
    let other = CassandraStore::open(&options).unwrap();
    assert_eq!(other.pending_repush(author).unwrap(), Some(second));

    // A clearing with a stale token leaves it; with its own, clears it.
    other.repush_done(author, first).unwrap();
    assert_eq!(store.pending_repush(author).unwrap(), Some(second));
    other.repush_done(author, second).unwrap();
    assert_eq!(store.pending_repush(author).unwrap(), None);

    // A ticket stamped 40 s ahead (a server whose clock is) is cleared by a server whose
    // clock is not: before, the delete lost to it and the re-push was redone for 40 s.
    stamped_ahead(&ks, author, 77, 40);
    assert_eq!(other.pending_repush(author).unwrap(), Some(77));
    store.repush_done(author, 77).unwrap();
    for s in [&store, &other] {
        assert_eq!(s.pending_repush(author).unwrap(), None);
        assert!(s.pending_repushes().unwrap().is_empty());
    }
}
