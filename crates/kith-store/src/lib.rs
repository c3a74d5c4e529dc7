//! `kith-store`: a durable, layout-aware embedded store of social-graph users on RocksDB.
//!
//! What it is: Parker's data model (uid, profile with a schema version, friend list, data
//! block) stored under keys that begin with each user's **layout position**, so RocksDB's
//! sorted files are the layout on disk and friends' records share pages. Writes are
//! acknowledged only after the WAL is synced (RocksDB's group commit shares one fsync between
//! concurrent writers). A relayout rewrites every record in a new order through
//! SstFileWriter and switches generations atomically while readers keep reading. Reads can be
//! measured: blocks and bytes from RocksDB's perf context, and the device addresses of the
//! reads, which the HDD and SSD models replay.
//!
//! The storage seam is [`Engine`]: Parker's API (users, profiles, data blocks, friend lists,
//! listings, random users, shortest paths, neighbourhoods) and the feed's follows and posts as
//! Rust methods, object safe, so the service and the feeds hold an `Arc<dyn Engine>`.
//! [`Store`] implements it; its follows and posts live in a RocksDB of their own in
//! `<store>/feed`, opened on first use. `tests/engine.rs` holds every engine to one contract.
//!
//! What it is not: a server (that is `kith-server`), a cache, or the feed logic (ids,
//! timelines, fan-out: `kith-feed`).
//!
//! The key space and its invariants are described in `docs/store.md` and [`keys`](self).
//!
//! # Features
//!
//! - `io-trace` (off by default): [`measure`] also records the file, offset and length of
//!   every `pread` the process issues, mapped to device addresses with `FIEMAP`, which the
//!   HDD and SSD models of [`Store::bench_friends`] replay. It works by defining the C
//!   symbols `pread` and `pread64` in the final binary (they forward to the system call), so
//!   it changes every `pread` of the process: only a binary that wants device traces (the
//!   benchmark harness) enables it. Without it, `measure` still counts RocksDB's blocks and
//!   bytes, the trace and the device pages counted from it are empty, and a benchmark that
//!   asks for a device model is refused with an error naming the feature.
//!
//! # Example
//! ```
//! use kith_store::{BuildOptions, DataSpec, LayoutMeta};
//! let dir = tempfile::tempdir()?;
//! let graph = kith_layout::paper_example();
//! let layout = kith_layout::Layout::identity(graph.num_nodes());
//! let options = BuildOptions { data: DataSpec::Fixed(40), ..BuildOptions::default() };
//! let store = kith_store::build(&dir.path().join("s"), &graph, &layout, LayoutMeta::default(), &options)?;
//! assert_eq!(store.get_friends_list(4, 0, 10)?.friends, vec![2, 3, 6, 7]);
//! store.add_friend(1, 7)?;
//! assert!(store.get_friends_list(7, 0, 10)?.friends.contains(&1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod bench;
mod build;
mod crash;
mod device;
mod device_map;
mod engine;
mod error;
mod feed_db;
mod feed_log;
mod friend_ops;
#[doc(hidden)]
pub mod fuzzing;
mod generation;
mod io;
mod keys;
mod meta;
mod options;
mod page;
mod page_model;
mod paths;
mod post;
pub mod price;
mod progress;
mod read;
mod record;
mod relayout;
mod rocks;
mod status;
mod store;
mod sync;
#[doc(hidden)]
pub mod testing;
mod trace;
mod verify;
mod write;

// The storage seam and the values in its signatures.
pub use engine::{Engine, FriendsData, LayoutAdmin, ReadLevel};
pub use error::{Error, Result};
pub use feed_db::{Degree, MAX_FOLLOW_TARGETS, check_follow_targets};
pub use feed_log::{Fence, IdempotencyRecord, MAX_IDEMPOTENCY_KEY_BYTES};
pub use page::{FriendsPage, UsersCursor, UsersPage, friends_page};
pub use paths::{DEFAULT_TRAVERSAL_BUDGET, MAX_NEIGHBORHOOD_HOPS, MAX_PATH_HOPS, Neighborhood};
pub use post::Post;
pub use record::{MAX_DATA_BYTES, MAX_FRIENDS, MAX_PAGE, Profile, User};
pub use write::UserWrite;

// The RocksDB store: opening, building, relayout, benchmarks and the crash test.
pub use bench::{FriendsBench, FriendsQuery, FriendsReport, bench_friends_interleaved};
pub use build::{
    BuildOptions, DataSpec, MAX_CHUNK_BYTES, build, synthetic_data, synthetic_profile,
};
pub use crash::{check_crash_log, crash_writer};
pub use device::{DeviceModel, DeviceRead, Hdd, Head};
pub use io::measure;
pub use meta::LayoutMeta;
pub use options::{CacheMode, DEFAULT_CHUNK_BYTES, OpenOptions};
pub use page_model::paged_config;
pub use progress::{Progress, ProgressSnapshot};
pub use relayout::{NewLayout, RelayoutReport, relayout_order};
pub use status::{Status, StoreGraph, dir_bytes};
pub use store::Store;

/// RocksDB's statistics tickers and histograms, for [`Store::ticker`] and [`Store::histogram`].
pub use rocksdb::statistics::{Histogram, HistogramData, Ticker};
