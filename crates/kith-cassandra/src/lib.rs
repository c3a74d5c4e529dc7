//! `kith-cassandra`: Parker's store on Apache Cassandra, and local Cassandra clusters.
//!
//! What it is: a second [`kith_store::Engine`], [`CassandraStore`], over a sharded,
//! replicated Cassandra 5 cluster reached with the `scylla` driver. Writes are QUORUM (each
//! replica syncs its commit log first), reads are QUORUM, a friendship changes on both users in
//! one logged batch. Users' profiles and data blocks are partitioned by runs of consecutive
//! **layout positions** and clustered by position, so Bondhu's layout is physical inside the
//! cluster: "list all friends" reads a few partition slices instead of one partition per
//! friend. [`build`] writes a store from a graph and a layout; [`local`] starts, stops, kills
//! and grows clusters on loopback addresses for tests, trials and demos.
//!
//! What it is not: a replication or consensus protocol (Cassandra's), a cache (`kith-feed`),
//! or a server (`kith-server` serves any engine).
//!
//! The schema is in `docs/cassandra.md` and [`schema`](self).
//!
//! # Example
//! ```no_run
//! use kith_cassandra::{BuildConfig, CassandraOptions, build};
//! use kith_store::Engine;
//! let graph = kith_layout::paper_example();
//! let layout = kith_layout::Layout::identity(graph.num_nodes());
//! let options = CassandraOptions::new(vec!["127.0.0.1:9042".into()], "example");
//! let config = BuildConfig { partition_users: 4, ..BuildConfig::default() };
//! let (store, _report) = build(&options, &graph, &layout, Default::default(), &config)?;
//! assert_eq!(store.get_all_friends(4)?, vec![2, 3, 6, 7]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod build;
mod error;
pub mod local;
mod overtaken;
mod progress;
mod retries;
mod schema;
mod store;
#[doc(hidden)]
pub mod testing;
pub mod trials;

pub use build::{BuildConfig, BuildReport, build, drop_store};
pub use error::{Error, Result};
pub use schema::{DEFAULT_KEYSPACE, Level, check_keyspace, create_keyspace, parse_hosts};
pub use store::listing::FriendsProfiles;
pub use store::{
    CassandraOptions, CassandraStore, DATA_CHUNK_BYTES, MAX_BATCH_CHANGES, RelayoutReport,
    StoredGraph,
};
