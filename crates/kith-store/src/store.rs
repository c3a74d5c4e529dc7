//! The store: opening (format check, stray generations dropped), the consistent
//! (generation, snapshot) views every read takes, the write primitives, and cold-mode cache
//! dropping. The read path is in `read.rs`, the writes in `write.rs`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError, RwLock};

use kith_layout::LayoutConfig;
use rocksdb::{Cache, DB, Options, ReadOptions, Snapshot, WriteBatch, WriteOptions};

use crate::error::{Error, Result};
use crate::feed_db::FeedDb;
use crate::keys;
use crate::meta::{FORMAT_VERSION, LayoutMeta, read_format, read_layout, read_u32};
use crate::options::{CacheMode, OpenOptions, db_options, default_cache_bytes};
use crate::record;
use crate::sync::lock;

/// Striped locks serialise read-modify-write of one user's friend list.
pub(crate) const STRIPES: usize = 1024;

/// The store. Cheap to share between threads (`&Store` is `Sync`).
pub struct Store {
    pub(crate) db: DB,
    pub(crate) path: PathBuf,
    pub(crate) options: Options,
    pub(crate) cache: Cache,
    cache_bytes: usize,
    mode: CacheMode,
    pub(crate) chunk_bytes: u32,
    sync: bool,
    /// The friend-list entries one traversal may read.
    pub(crate) traversal_budget: u64,
    /// The current generation. Readers take a snapshot while holding it for reading;
    /// relayout flips it while holding it for writing.
    pub(crate) generation: RwLock<u32>,
    /// Writers hold it shared; relayout holds it exclusively while it rewrites.
    pub(crate) writers: RwLock<()>,
    pub(crate) stripes: Box<[Mutex<()>]>,
    pub(crate) next_position: AtomicU64,
    /// How the current layout packs data entries into blocks, for reading friends' data in
    /// runs of adjacent blocks.
    pub(crate) shape: RwLock<BlockShape>,
    /// The feed database (follows and posts), opened on first use.
    feed: OnceLock<FeedDb>,
    /// Held while the feed database is being opened, so it is opened once.
    feed_opening: Mutex<()>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .field("mode", &self.mode)
            .field("generation", &self.generation())
            .field("chunk_bytes", &self.chunk_bytes)
            .finish_non_exhaustive()
    }
}

/// How a layout packs users' data entries into RocksDB blocks: `records` entries of
/// `entry_bytes` each per block, as the layout model was given them (see `PageModel`). The
/// read path groups friends whose entries lie in one block or in adjacent blocks and reads
/// each group with one request; `records` 1 (entries of a block or more, or a layout
/// computed without the store's model) reads every friend by its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BlockShape {
    pub(crate) records: u64,
    pub(crate) entry_bytes: u64,
}

impl BlockShape {
    pub(crate) fn of(meta: &LayoutMeta) -> BlockShape {
        match (meta.page_bytes, meta.record_bytes) {
            (page, record) if record > 0 && page > record => {
                BlockShape { records: page / record, entry_bytes: record }
            }
            _ => BlockShape { records: 1, entry_bytes: 0 },
        }
    }

    /// The blocks that hold positions `first..=last`, at least.
    pub(crate) fn blocks(self, first: u64, last: u64) -> u64 {
        last / self.records - first / self.records + 1
    }
}

/// One consistent view: a generation and a snapshot taken while it was current.
pub(crate) struct View<'s> {
    pub(crate) generation: u32,
    snapshot: Snapshot<'s>,
}

impl View<'_> {
    pub(crate) fn read_options(&self) -> ReadOptions {
        let mut r = ReadOptions::default();
        r.set_snapshot(&self.snapshot);
        r.set_verify_checksums(true);
        r
    }
}

impl Store {
    /// Opens an existing store.
    ///
    /// Fails clearly on a directory that is not a kith store or one written by a newer kith.
    pub fn open(dir: &Path, options: &OpenOptions) -> Result<Store> {
        if !dir.join("CURRENT").is_file() {
            let reason = if dir.is_dir() {
                "no RocksDB CURRENT file".to_string()
            } else {
                "no such directory".to_string()
            };
            return Err(Error::NotAStore { path: dir.to_path_buf(), reason });
        }
        // With the device trace compiled in, every binary that opens a store must keep the
        // interposed `pread` symbols, which nothing else in Rust refers to.
        #[cfg(feature = "io-trace")]
        std::hint::black_box(crate::trace::keep_symbols());
        let cache_bytes = options.block_cache_bytes.unwrap_or(default_cache_bytes(options.mode));
        let cache = Cache::new_lru_cache(cache_bytes);
        let db_opts = db_options(options.mode, &cache);
        let db = DB::open(&db_opts, dir)?;
        let format = read_format(&db)?.ok_or_else(|| Error::NotAStore {
            path: dir.to_path_buf(),
            reason: "a RocksDB database without kith's metadata".into(),
        })?;
        if format > FORMAT_VERSION {
            return Err(Error::NewerFormat {
                path: dir.to_path_buf(),
                found: format,
                supported: FORMAT_VERSION,
            });
        }
        if format < FORMAT_VERSION {
            // Format 1 differs only in lacking merge operands, which this kith may write.
            let (key, value) = crate::meta::meta_format();
            let mut w = WriteOptions::default();
            w.set_sync(true);
            db.put_opt(key, value, &w)?;
        }
        let missing =
            |name: &str| Error::Corrupt { key: format!("meta/{name}"), reason: "missing".into() };
        let generation = read_u32(&db, "generation")?.ok_or_else(|| missing("generation"))?;
        let chunk_bytes = read_u32(&db, "chunk_bytes")?.ok_or_else(|| missing("chunk_bytes"))?;
        if chunk_bytes == 0 {
            return Err(record::corrupt(&keys::meta("chunk_bytes"), "zero".into()));
        }
        let shape = BlockShape::of(&read_layout(&db)?);
        let store = Store {
            db,
            path: dir.to_path_buf(),
            options: db_opts,
            cache,
            cache_bytes,
            mode: options.mode,
            chunk_bytes,
            sync: options.sync,
            traversal_budget: options.traversal_budget,
            generation: RwLock::new(generation),
            writers: RwLock::new(()),
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            next_position: AtomicU64::new(0),
            shape: RwLock::new(shape),
            feed: OnceLock::new(),
            feed_opening: Mutex::new(()),
        };
        store.drop_other_generations(generation)?;
        let next = store.last_position(generation)?.map_or(0, |p| p + 1);
        store.next_position.store(next, Ordering::SeqCst);
        Ok(store)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Warm or cold.
    pub fn mode(&self) -> CacheMode {
        self.mode
    }

    /// The data chunk size this store was built with.
    pub fn chunk_bytes(&self) -> u32 {
        self.chunk_bytes
    }

    /// The current generation (1 after build, +1 per relayout).
    pub fn generation(&self) -> u32 {
        *self.generation.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// The layout metadata of the current generation.
    pub fn layout_meta(&self) -> Result<LayoutMeta> {
        read_layout(&self.db)
    }

    /// The configuration that makes the current layout afresh ([`LayoutMeta::config`]),
    /// with this store named in its errors.
    pub fn layout_config(&self) -> Result<LayoutConfig> {
        self.layout_meta()?.config().map_err(|e| e.in_store(&self.path))
    }

    /// Removes keys of any generation but the current one: what a relayout that crashed
    /// before or after its flip leaves behind.
    fn drop_other_generations(&self, generation: u32) -> Result<()> {
        for tag in keys::GENERATION_TAGS {
            let ranges = [
                (keys::range_start(tag, 0), keys::range_start(tag, generation)),
                (keys::range_end(tag, generation), [tag + 1, 0, 0, 0, 0]),
            ];
            for (lo, hi) in ranges {
                if lo >= hi {
                    continue;
                }
                let mut it = self.db.raw_iterator();
                it.seek(lo);
                if it.valid() && it.key().is_some_and(|k| k < hi.as_slice()) {
                    let mut batch = WriteBatch::default();
                    batch.delete_range(lo, hi);
                    self.write(batch)?;
                    self.db.compact_range(Some(lo), Some(hi));
                }
                it.status()?;
            }
        }
        Ok(())
    }

    fn last_position(&self, generation: u32) -> Result<Option<u64>> {
        let mut it = self.db.raw_iterator();
        it.seek_for_prev(keys::range_end(keys::PROFILE, generation));
        let found = match it.key().and_then(keys::parse) {
            Some((keys::PROFILE, g, pos, _)) if g == generation => Some(pos),
            _ => None,
        };
        it.status()?;
        Ok(found)
    }

    pub(crate) fn view(&self) -> View<'_> {
        let generation = self.generation.read().unwrap_or_else(PoisonError::into_inner);
        View { generation: *generation, snapshot: self.db.snapshot() }
    }

    fn write_options(&self) -> WriteOptions {
        let mut w = WriteOptions::default();
        w.set_sync(self.sync);
        w
    }

    pub(crate) fn write(&self, batch: WriteBatch) -> Result<()> {
        Ok(self.db.write_opt(batch, &self.write_options())?)
    }

    pub(crate) fn get(&self, key: &[u8], read: &ReadOptions) -> Result<Option<Vec<u8>>> {
        Ok(self.db.get_opt(key, read)?)
    }

    pub(crate) fn get_pinned(
        &self,
        key: &[u8],
        read: &ReadOptions,
    ) -> Result<Option<rocksdb::DBPinnableSlice<'_>>> {
        Ok(self.db.get_pinned_opt(key, read)?)
    }

    /// The feed database: follow edges both ways and posts, a RocksDB of its own in
    /// `<store>/feed`. It is opened on the first call that needs it (a follow or post call
    /// through [`Engine`](crate::Engine)), so a store used only for users never creates it;
    /// the feed service makes that call when it opens. Opening it counts the follow edges
    /// once to rebuild the in-memory follower counts.
    pub(crate) fn feed_db(&self) -> Result<&FeedDb> {
        if let Some(db) = self.feed.get() {
            return Ok(db);
        }
        let _opening = lock(&self.feed_opening);
        if let Some(db) = self.feed.get() {
            return Ok(db);
        }
        let db = FeedDb::open(&self.path.join("feed"))?;
        Ok(self.feed.get_or_init(|| db))
    }

    /// Cold mode's reset between queries: empties the block cache and asks the kernel to
    /// drop the store's files from the page cache (`posix_fadvise(DONTNEED)`).
    pub fn drop_caches(&self) -> Result<()> {
        let mut cache = self.cache.clone();
        cache.set_capacity(0);
        cache.set_capacity(self.cache_bytes);
        crate::io::fadvise_dontneed_dir(&self.path)
    }

    /// A RocksDB statistics ticker (for fsync counts and the like).
    pub fn ticker(&self, ticker: rocksdb::statistics::Ticker) -> u64 {
        self.options.get_ticker_count(ticker)
    }

    /// A RocksDB statistics histogram since the store was opened (merge operands per read
    /// and the like).
    pub fn histogram(
        &self,
        histogram: rocksdb::statistics::Histogram,
    ) -> rocksdb::statistics::HistogramData {
        self.options.get_histogram_data(histogram)
    }
}
