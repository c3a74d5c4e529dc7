//! How a store is opened: warm or cold reads, the block cache, WAL syncing, and the RocksDB
//! options every store (and every generation written for it) uses.

use rocksdb::{BlockBasedOptions, Cache, DBCompressionType, Options};
use serde::{Deserialize, Serialize};

/// Data blocks are split into chunks of this many bytes unless the store was built otherwise.
pub const DEFAULT_CHUNK_BYTES: u32 = 4096;
/// RocksDB's data block size: one 4 KiB page, as in Bondhu's model.
pub const BLOCK_BYTES: usize = 4096;

/// How the store uses memory for reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheMode {
    /// Buffered reads and a large block cache: what a service runs with.
    Warm,
    /// Reads that really reach the device: direct I/O (no OS page cache), a tiny block
    /// cache, and [`Store::drop_caches`](crate::Store::drop_caches) to empty it and
    /// `posix_fadvise(DONTNEED)` the files.
    Cold,
}

/// Options for [`Store::open`](crate::Store::open).
#[derive(Clone, Debug)]
pub struct OpenOptions {
    /// Warm or cold reads.
    pub mode: CacheMode,
    /// Block-cache capacity; `None` takes 256 MiB warm, 4 MiB cold.
    pub block_cache_bytes: Option<usize>,
    /// Sync the WAL before acknowledging a write (default true). Only benchmarks turn it off.
    pub sync: bool,
    /// The most friend-list entries one `shortest_path` or `neighborhood` reads before it is
    /// refused as too expensive (default
    /// [`DEFAULT_TRAVERSAL_BUDGET`](crate::DEFAULT_TRAVERSAL_BUDGET), 4 × 2^20).
    pub traversal_budget: u64,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            mode: CacheMode::Warm,
            block_cache_bytes: None,
            sync: true,
            traversal_budget: crate::paths::DEFAULT_TRAVERSAL_BUDGET,
        }
    }
}

/// The most friend-list operands a list keeps in the memtable before they are folded.
pub(crate) const MAX_SUCCESSIVE_MERGES: usize = 32;

pub(crate) fn db_options(mode: CacheMode, cache: &Cache) -> Options {
    let mut o = Options::default();
    o.set_compression_type(DBCompressionType::None);
    o.set_max_open_files(-1);
    o.set_paranoid_checks(true);
    // Friendship changes are merge operands folded into the friend list (`friend_ops.rs`).
    o.set_merge_operator(
        crate::friend_ops::NAME,
        crate::friend_ops::full_merge,
        crate::friend_ops::partial_merge,
    );
    // Without a cap, every change to one user's list waits in the memtable as an operand
    // until a flush, and each read of the list folds them all: 20,000 changes made a read
    // cost 1.2 ms and kept growing. At the cap RocksDB folds the operands into a value in the
    // memtable (the WAL keeps the small operands).
    o.set_max_successive_merges(MAX_SUCCESSIVE_MERGES);
    o.enable_statistics();
    let mut t = BlockBasedOptions::default();
    t.set_block_size(BLOCK_BYTES);
    // Every entry a restart point: no key delta encoding, so entries of the same size are
    // the same size on disk and a block holds a fixed number of them (see `PageModel`).
    t.set_block_restart_interval(1);
    t.set_block_cache(cache);
    t.set_bloom_filter(10.0, false);
    // Index and filter blocks live with the open table, not in the block cache, so the
    // blocks a query reads are the data blocks the layout places.
    t.set_cache_index_and_filter_blocks(false);
    o.set_block_based_table_factory(&t);
    if mode == CacheMode::Cold {
        o.set_use_direct_reads(true);
    }
    o
}

pub(crate) fn default_cache_bytes(mode: CacheMode) -> usize {
    match mode {
        CacheMode::Warm => 256 << 20,
        CacheMode::Cold => 4 << 20,
    }
}
