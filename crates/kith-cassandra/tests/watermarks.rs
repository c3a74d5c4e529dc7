//! Fan-out watermarks on a real cluster keep the order their writers gave them, whatever the
//! Cassandra nodes' clocks say: a cell left stamped ahead (what a write through a node whose
//! clock was set ahead leaves) neither hides a lowered watermark nor outlives a drop.

use std::time::Duration;

use kith_cassandra::{BuildConfig, CassandraOptions, CassandraStore, build, testing};
use kith_graph::Graph;
use kith_layout::Layout;
use kith_store::{Engine, LayoutMeta};

/// Writes `value` to server `n`'s watermark by hand, stamped `ahead_s` seconds ahead of now.
fn stamped_ahead(ks: &str, n: u16, value: i64, ahead_s: i64) {
    let at = testing::micros_ahead(ahead_s);
    testing::execute(&format!(
        "INSERT INTO {ks}.feed_state (name, value) VALUES ('fanout_watermark/{n}', {value}) \
         USING TIMESTAMP {at}"
    ));
}

#[test]
fn a_watermark_stamped_ahead_neither_hides_a_lowering_nor_outlives_a_drop() {
    let ks = testing::keyspace("watermarks");
    let options = CassandraOptions::new(testing::hosts(), &ks);
    let graph = Graph::from_edges(vec![1, 2], false, vec![(0, 1)]);
    let layout = Layout::identity(graph.num_nodes());
    let (holder, _) =
        build(&options, &graph, &layout, LayoutMeta::default(), &BuildConfig::default()).unwrap();
    let lease = Duration::from_millis(1);
    holder.set_fanout_watermark(5, 100, false).unwrap();
    assert_eq!(holder.fanout_watermark(5).unwrap(), Some(100));

    // Raised through a node 30 s ahead; the holder, told another writer may have been there,
    // lowers it (a post opened below it): the lowered value is the one read.
    stamped_ahead(&ks, 5, 200, 30);
    holder.set_fanout_watermark(5, 150, true).unwrap();
    assert_eq!(holder.fanout_watermark(5).unwrap(), Some(150));
    // Its later writes follow its own.
    holder.set_fanout_watermark(5, 120, false).unwrap();
    assert_eq!(holder.fanout_watermark(5).unwrap(), Some(120));
    // No server holds number 5: an orphan, for any server to redo.
    let taker = CassandraStore::open(&options).unwrap();
    assert!(taker.orphaned_servers(lease).unwrap().contains(&5));

    // Stamped ahead again, then dropped by the server that took it over: gone for good, and
    // no longer an orphan (before, the drop lost to the cell and the fan-out was redone again).
    stamped_ahead(&ks, 5, 300, 40);
    taker.drop_fanout_watermark(5).unwrap();
    for store in [&holder, &taker] {
        assert_eq!(store.fanout_watermark(5).unwrap(), None);
        assert!(!store.orphaned_servers(lease).unwrap().contains(&5));
    }

    // A server that takes the number next stores its first watermark over the drop.
    let next = CassandraStore::open(&options).unwrap();
    next.set_fanout_watermark(5, 7, false).unwrap();
    assert_eq!(taker.fanout_watermark(5).unwrap(), Some(7));
    assert!(taker.orphaned_servers(lease).unwrap().contains(&5));
}
