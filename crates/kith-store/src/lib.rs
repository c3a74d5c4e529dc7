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
//! What it is not: a server (that is `kith-server`) or a cache.
//!
//! The key space and its invariants are described in `docs/store.md` and [`keys`](self).
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
mod crash;
mod device;
mod error;
mod generation;
mod io;
mod keys;
mod page_model;
mod paths;
mod record;
mod status;
mod store;
mod verify;
mod write;

pub use bench::{FriendsBench, FriendsReport, FriendsSummary, UserRun, quantile, sample_users};
pub use crash::{CrashCheck, NEW_USER_BASE, check_crash_log, crash_writer};
pub use device::{DeviceModel, Hdd, Head, Ssd};
pub use error::{Error, Result};
pub use generation::{
    BuildOptions, DataSpec, NewLayout, RelayoutReport, build, synthetic_data, synthetic_profile,
};
pub use io::{
    DeviceMap, DeviceRead, IoCounters, PAGE_BYTES, RawRead, fadvise_dontneed_dir, measure,
};
pub use page_model::{PageModel, paged_config};
pub use paths::{MAX_NEIGHBORHOOD_HOPS, MAX_PATH_HOPS, Neighborhood};
pub use record::{
    MAX_DATA_BYTES, MAX_FRIENDS, MAX_PAGE, MAX_PROFILE_BYTES, PROFILE_SCHEMA, Profile, User,
};
pub use status::{Status, StoreGraph, dir_bytes};
pub use store::{
    BLOCK_BYTES, CacheMode, DEFAULT_CHUNK_BYTES, FORMAT_VERSION, FriendsPage, LayoutMeta,
    OpenOptions, Store, UsersCursor, UsersPage,
};
pub use verify::VerifyReport;

/// RocksDB's statistics tickers, for [`Store::ticker`].
pub use rocksdb::statistics::Ticker;
