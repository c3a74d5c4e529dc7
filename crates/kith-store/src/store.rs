//! The store: opening, the read path, cold-mode cache dropping. Writes are in `write.rs`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock};

use rand::Rng;
use rand::seq::SliceRandom;
use rocksdb::{
    BlockBasedOptions, Cache, DB, DBCompressionType, Direction, IteratorMode, Options, ReadOptions,
    Snapshot, WriteBatch, WriteOptions,
};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::keys;
use crate::record::{self, Friend, MAX_PAGE, Profile, User};

/// The on-disk format this build writes and the newest it reads.
pub const FORMAT_VERSION: u32 = 1;
/// Data blocks are split into chunks of this many bytes unless the store was built otherwise.
pub const DEFAULT_CHUNK_BYTES: u32 = 4096;
/// RocksDB's data block size: one 4 KiB page, as in Bondhu's model.
pub const BLOCK_BYTES: usize = 4096;
/// Striped locks serialise read-modify-write of one user's friend list.
pub(crate) const STRIPES: usize = 1024;

/// How the store uses memory for reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheMode {
    /// Buffered reads and a large block cache: what a service runs with.
    Warm,
    /// Reads that really reach the device: direct I/O (no OS page cache), a tiny block
    /// cache, and [`Store::drop_caches`] to empty it and `posix_fadvise(DONTNEED)` the files.
    Cold,
}

/// Options for [`Store::open`].
#[derive(Clone, Debug)]
pub struct OpenOptions {
    /// Warm or cold reads.
    pub mode: CacheMode,
    /// Block-cache capacity; `None` takes 256 MiB warm, 4 MiB cold.
    pub block_cache_bytes: Option<usize>,
    /// Sync the WAL before acknowledging a write (default true). Only benchmarks turn it off.
    pub sync: bool,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions { mode: CacheMode::Warm, block_cache_bytes: None, sync: true }
    }
}

/// How the current layout was made, kept in the store's metadata.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LayoutMeta {
    /// The method's name, or "file" for a layout read from a file.
    pub method: String,
    /// parcom's part count.
    pub communities: usize,
    /// The weight model's name.
    pub model: String,
    /// The record size the layout was computed for.
    pub record_bytes: u64,
    /// The page size it packed them into (0 in stores written before it was kept: 4 KiB).
    #[serde(default)]
    pub page_bytes: u64,
    /// The seed.
    pub seed: u64,
    /// Users placed by this layout; later users were appended after them.
    pub users: u64,
    /// Seconds since the Unix epoch when it was written.
    pub written_unix: u64,
}

impl LayoutMeta {
    /// How `config` makes a layout.
    pub fn of(config: &kith_layout::LayoutConfig) -> LayoutMeta {
        LayoutMeta {
            method: config.method.to_string(),
            communities: config.communities,
            model: config.model.to_string(),
            record_bytes: config.record_bytes,
            page_bytes: config.page_bytes,
            seed: config.seed,
            ..LayoutMeta::default()
        }
    }

    /// The configuration that makes this layout afresh (a layout read from a file is
    /// recomputed by kith's method).
    pub fn config(&self) -> kith_layout::LayoutConfig {
        let d = kith_layout::LayoutConfig::default();
        kith_layout::LayoutConfig {
            method: self.method.parse().unwrap_or(kith_layout::Method::Kith),
            communities: if self.communities == 0 { d.communities } else { self.communities },
            model: self.model.parse().unwrap_or_default(),
            record_bytes: self.record_bytes.max(1),
            page_bytes: if self.page_bytes == 0 { BLOCK_BYTES as u64 } else { self.page_bytes },
            seed: self.seed,
            ..d
        }
    }
}

/// A page of a friend list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FriendsPage {
    /// Friends' uids, ascending, from `offset`.
    pub friends: Vec<u64>,
    /// The user's friend count.
    pub total: usize,
}

/// A page of users, (uid, profile), and the cursor of the next page if there is one.
pub type UsersPage = (Vec<(u64, Profile)>, Option<UsersCursor>);

/// Where a page of [`Store::users_page`] ended: the layout generation and the last position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UsersCursor {
    /// The layout generation the cursor belongs to.
    pub generation: u32,
    /// The last position returned.
    pub after: u64,
}

impl UsersCursor {
    /// The cursor as an opaque token.
    pub fn encode(&self) -> String {
        format!("g{:x}.{:x}", self.generation, self.after)
    }

    /// Reads a token made by [`UsersCursor::encode`].
    pub fn decode(token: &str) -> Option<UsersCursor> {
        let (g, p) = token.strip_prefix('g')?.split_once('.')?;
        Some(UsersCursor {
            generation: u32::from_str_radix(g, 16).ok()?,
            after: u64::from_str_radix(p, 16).ok()?,
        })
    }
}

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
    /// The current generation. Readers take a snapshot while holding it for reading;
    /// relayout flips it while holding it for writing.
    pub(crate) generation: RwLock<u32>,
    /// Writers hold it shared; relayout holds it exclusively while it rewrites.
    pub(crate) writers: RwLock<()>,
    pub(crate) stripes: Box<[Mutex<()>]>,
    pub(crate) next_position: AtomicU64,
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

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

pub(crate) fn db_options(mode: CacheMode, cache: &Cache) -> Options {
    let mut o = Options::default();
    o.set_compression_type(DBCompressionType::None);
    o.set_max_open_files(-1);
    o.set_paranoid_checks(true);
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

fn default_cache_bytes(mode: CacheMode) -> usize {
    match mode {
        CacheMode::Warm => 256 << 20,
        CacheMode::Cold => 4 << 20,
    }
}

/// The format version is stored as 4 plain bytes, without the checksum every other value
/// carries, so that any kith can read it whatever later versions change.
fn read_format(db: &DB) -> Result<Option<u32>> {
    let key = keys::meta("format");
    match db.get(&key)? {
        None => Ok(None),
        Some(v) => {
            let bytes: [u8; 4] = v
                .as_slice()
                .try_into()
                .map_err(|_| record::corrupt(&key, format!("{} bytes, not 4", v.len())))?;
            Ok(Some(u32::from_le_bytes(bytes)))
        }
    }
}

pub(crate) fn meta_format() -> (Vec<u8>, Vec<u8>) {
    (keys::meta("format"), FORMAT_VERSION.to_le_bytes().to_vec())
}

fn read_u32(db: &DB, name: &str) -> Result<Option<u32>> {
    let key = keys::meta(name);
    match db.get(&key)? {
        None => Ok(None),
        Some(v) => {
            let payload = record::unseal(&key, &v)?;
            let bytes: [u8; 4] = payload
                .try_into()
                .map_err(|_| record::corrupt(&key, format!("{} bytes, not 4", payload.len())))?;
            Ok(Some(u32::from_le_bytes(bytes)))
        }
    }
}

pub(crate) fn meta_u32(name: &str, value: u32) -> (Vec<u8>, Vec<u8>) {
    let key = keys::meta(name);
    let value = record::seal(&key, value.to_le_bytes().to_vec());
    (key, value)
}

pub(crate) fn meta_layout(meta: &LayoutMeta) -> (Vec<u8>, Vec<u8>) {
    let key = keys::meta("layout");
    let value = record::seal(&key, serde_json::to_vec(meta).expect("plain struct"));
    (key, value)
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
        std::hint::black_box(crate::io::keep_symbols());
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
        let missing =
            |name: &str| Error::Corrupt { key: format!("meta/{name}"), reason: "missing".into() };
        let generation = read_u32(&db, "generation")?.ok_or_else(|| missing("generation"))?;
        let chunk_bytes = read_u32(&db, "chunk_bytes")?.ok_or_else(|| missing("chunk_bytes"))?;
        if chunk_bytes == 0 {
            return Err(record::corrupt(&keys::meta("chunk_bytes"), "zero".into()));
        }
        let store = Store {
            db,
            path: dir.to_path_buf(),
            options: db_opts,
            cache,
            cache_bytes,
            mode: options.mode,
            chunk_bytes,
            sync: options.sync,
            generation: RwLock::new(generation),
            writers: RwLock::new(()),
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            next_position: AtomicU64::new(0),
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
        let key = keys::meta("layout");
        let value = self.db.get(&key)?.ok_or_else(|| Error::Corrupt {
            key: "meta/layout".into(),
            reason: "missing".into(),
        })?;
        let payload = record::unseal(&key, &value)?;
        serde_json::from_slice(payload).map_err(|e| record::corrupt(&key, e.to_string()))
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

    /// The index entry of `uid` in generation `generation`: position and friends.
    pub(crate) fn entry_in(
        &self,
        generation: u32,
        uid: u64,
        read: &ReadOptions,
    ) -> Result<Option<(u64, Vec<Friend>)>> {
        let key = keys::index(generation, uid);
        let Some(value) = self.get(&key, read)? else { return Ok(None) };
        Ok(Some(record::decode_entry(&key, &value)?))
    }

    /// As [`Store::entry_in`], with an unknown uid an error.
    pub(crate) fn entry(
        &self,
        generation: u32,
        uid: u64,
        read: &ReadOptions,
    ) -> Result<(u64, Vec<Friend>)> {
        self.entry_in(generation, uid, read)?.ok_or(Error::UnknownUser(uid))
    }

    pub(crate) fn put_entry(
        batch: &mut WriteBatch,
        generation: u32,
        uid: u64,
        pos: u64,
        friends: &[Friend],
    ) {
        let key = keys::index(generation, uid);
        batch.put(key, record::encode_entry(&key, pos, friends));
    }

    pub(crate) fn header_at(
        &self,
        generation: u32,
        position: u64,
        read: &ReadOptions,
    ) -> Result<Option<(u64, Profile)>> {
        let key = keys::profile(generation, position);
        match self.get(&key, read)? {
            None => Ok(None),
            Some(v) => Ok(Some(record::decode_header(&key, &v)?)),
        }
    }

    /// Whether a user exists.
    pub fn contains(&self, uid: u64) -> Result<bool> {
        let view = self.view();
        Ok(self.entry_in(view.generation, uid, &view.read_options())?.is_some())
    }

    /// The whole user: profile, friends, data size.
    pub fn get_user(&self, uid: u64) -> Result<User> {
        let view = self.view();
        let read = view.read_options();
        let (pos, friends) = self.entry(view.generation, uid, &read)?;
        let key = keys::profile(view.generation, pos);
        let (stored, profile) = self
            .header_at(view.generation, pos, &read)?
            .ok_or_else(|| record::corrupt(&key, "indexed user has no profile".into()))?;
        if stored != uid {
            return Err(record::corrupt(&key, format!("holds uid {stored}, index says {uid}")));
        }
        let (data_bytes, _) = self.first_chunk(view.generation, pos, &read)?;
        Ok(User { uid, profile, friends: friends.iter().map(|f| f.uid).collect(), data_bytes })
    }

    /// The profile.
    pub fn get_profile(&self, uid: u64) -> Result<Profile> {
        let view = self.view();
        let read = view.read_options();
        let (pos, _) = self.entry(view.generation, uid, &read)?;
        let key = keys::profile(view.generation, pos);
        let (_, profile) = self
            .header_at(view.generation, pos, &read)?
            .ok_or_else(|| record::corrupt(&key, "indexed user has no profile".into()))?;
        Ok(profile)
    }

    /// Friends' uids from `offset`, at most `limit` (≤ [`MAX_PAGE`]), ascending.
    pub fn get_friends_list(&self, uid: u64, offset: usize, limit: usize) -> Result<FriendsPage> {
        if limit > MAX_PAGE {
            return Err(Error::TooLarge {
                what: "friends page",
                got: limit as u64,
                limit: MAX_PAGE as u64,
            });
        }
        let view = self.view();
        let read = view.read_options();
        let (_, friends) = self.entry(view.generation, uid, &read)?;
        let total = friends.len();
        let page = friends.iter().skip(offset).take(limit).map(|f| f.uid).collect::<Vec<u64>>();
        Ok(FriendsPage { friends: page, total })
    }

    /// The user's whole friend list, ascending (at most [`crate::MAX_FRIENDS`]).
    pub fn get_all_friends(&self, uid: u64) -> Result<Vec<u64>> {
        let view = self.view();
        let (_, friends) = self.entry(view.generation, uid, &view.read_options())?;
        Ok(friends.iter().map(|f| f.uid).collect())
    }

    pub(crate) fn first_chunk(
        &self,
        generation: u32,
        pos: u64,
        read: &ReadOptions,
    ) -> Result<(u64, Vec<u8>)> {
        let key = keys::data(generation, pos, 0);
        let value = self
            .get(&key, read)?
            .ok_or_else(|| record::corrupt(&key, "indexed user has no data chunk 0".into()))?;
        let (len, bytes) = record::decode_first_chunk(&key, &value)?;
        Ok((len, bytes.to_vec()))
    }

    /// Reads the first `max_bytes` of the data blocks at `positions` (each `None` = all),
    /// touching only the chunks those bytes are in. Positions are read in ascending order.
    pub(crate) fn read_data_at(
        &self,
        generation: u32,
        positions: &[u64],
        max_bytes: Option<u64>,
        read: &ReadOptions,
    ) -> Result<Vec<Vec<u8>>> {
        let chunk = u64::from(self.chunk_bytes);
        let firsts =
            self.db.multi_get_opt(positions.iter().map(|&p| keys::data(generation, p, 0)), read);
        let mut out = Vec::with_capacity(positions.len());
        let mut more: Vec<(usize, u64, u32)> = Vec::new();
        for (i, (got, &pos)) in firsts.into_iter().zip(positions).enumerate() {
            let key = keys::data(generation, pos, 0);
            let value = got?.ok_or_else(|| record::corrupt(&key, "missing data chunk 0".into()))?;
            let (len, bytes) = record::decode_first_chunk(&key, &value)?;
            let want = max_bytes.map_or(len, |m| m.min(len));
            let mut data = bytes[..(want.min(bytes.len() as u64) as usize)].to_vec();
            data.reserve(want as usize - data.len());
            for c in 1..want.div_ceil(chunk) as u32 {
                more.push((i, pos, c));
            }
            out.push(data);
        }
        if !more.is_empty() {
            let rest = self.db.multi_get_opt(
                more.iter().map(|&(_, pos, c)| keys::data(generation, pos, c)),
                read,
            );
            for (got, &(i, pos, c)) in rest.into_iter().zip(&more) {
                let key = keys::data(generation, pos, c);
                let value =
                    got?.ok_or_else(|| record::corrupt(&key, "missing data chunk".into()))?;
                let bytes = record::unseal(&key, &value)?;
                let want = max_bytes.unwrap_or(u64::MAX);
                let room = (want as usize).saturating_sub(out[i].len());
                out[i].extend_from_slice(&bytes[..bytes.len().min(room)]);
            }
        }
        Ok(out)
    }

    /// The first `max_bytes` of the user's data block (all of it for `None`).
    pub fn get_data(&self, uid: u64, max_bytes: Option<u64>) -> Result<Vec<u8>> {
        let view = self.view();
        let read = view.read_options();
        let (pos, _) = self.entry(view.generation, uid, &read)?;
        let mut data = self.read_data_at(view.generation, &[pos], max_bytes, &read)?;
        Ok(data.pop().expect("one position"))
    }

    /// Bondhu's query, "list all friends": the user's friend list, then the first
    /// `max_bytes` of every friend's data block (all of it for `None`), read in layout order.
    /// Returns (friend uid, bytes) ascending by position.
    pub fn list_friends_data(
        &self,
        uid: u64,
        max_bytes: Option<u64>,
    ) -> Result<Vec<(u64, Vec<u8>)>> {
        let view = self.view();
        let read = view.read_options();
        let (_, mut friends) = self.entry(view.generation, uid, &read)?;
        friends.sort_unstable_by_key(|f| f.position);
        let positions: Vec<u64> = friends.iter().map(|f| f.position).collect();
        let data = self.read_data_at(view.generation, &positions, max_bytes, &read)?;
        Ok(friends.iter().map(|f| f.uid).zip(data).collect())
    }

    /// Every user, (uid, profile), in layout order, streamed from one consistent view.
    pub fn get_all_users(&self) -> impl Iterator<Item = Result<(u64, Profile)>> + '_ {
        let generation = self.generation.read().unwrap_or_else(PoisonError::into_inner);
        let mut read = ReadOptions::default();
        read.set_verify_checksums(true);
        read.set_iterate_upper_bound(keys::range_end(keys::PROFILE, *generation).to_vec());
        // A RocksDB iterator reads one implicit snapshot taken now, while the generation
        // cannot change; a later relayout's deletions are invisible to it.
        let start = keys::range_start(keys::PROFILE, *generation);
        let it = self.db.iterator_opt(IteratorMode::From(&start, Direction::Forward), read);
        drop(generation);
        it.map(|item| {
            let (k, v) = item?;
            record::decode_header(&k, &v)
        })
    }

    /// One page of every user, (uid, profile), in layout order: the first `limit` users
    /// after `cursor` (`None` = from the start). Returns the page and the cursor of the next
    /// one, if any. A cursor belongs to one layout generation: after a relayout it is
    /// refused (`Error::StaleCursor`) rather than skipping or repeating users.
    pub fn users_page(&self, cursor: Option<UsersCursor>, limit: usize) -> Result<UsersPage> {
        if limit > MAX_PAGE {
            return Err(Error::TooLarge {
                what: "users page",
                got: limit as u64,
                limit: MAX_PAGE as u64,
            });
        }
        let view = self.view();
        let start = match cursor {
            Some(c) if c.generation != view.generation => {
                return Err(Error::StaleCursor { cursor: c.generation, current: view.generation });
            }
            Some(c) => keys::profile(view.generation, c.after.saturating_add(1)).to_vec(),
            None => keys::range_start(keys::PROFILE, view.generation).to_vec(),
        };
        if cursor.is_some_and(|c| c.after == u64::MAX) {
            return Ok((Vec::new(), None));
        }
        let mut read = view.read_options();
        read.set_iterate_upper_bound(keys::range_end(keys::PROFILE, view.generation).to_vec());
        let mut out = Vec::with_capacity(limit.min(1024));
        let mut last = None;
        for item in self.db.iterator_opt(IteratorMode::From(&start, Direction::Forward), read) {
            let (k, v) = item?;
            if out.len() == limit {
                let next = last.map(|after| UsersCursor { generation: view.generation, after });
                return Ok((out, next));
            }
            let (_, _, pos, _) =
                keys::parse(&k).ok_or_else(|| record::corrupt(&k, "bad profile key".into()))?;
            out.push(record::decode_header(&k, &v)?);
            last = Some(pos);
        }
        Ok((out, None))
    }

    /// Up to `n` distinct users drawn uniformly at random, (uid, profile).
    pub fn get_random_users<R: Rng>(&self, n: usize, rng: &mut R) -> Result<Vec<(u64, Profile)>> {
        let view = self.view();
        let read = view.read_options();
        let end = self.next_position.load(Ordering::SeqCst);
        let mut out = Vec::with_capacity(n.min(end as usize));
        if (n as u64).saturating_mul(3) >= end {
            // Most of the store: read it all, then sample.
            let mut all: Vec<u64> = (0..end).collect();
            all.shuffle(rng);
            for pos in all {
                if out.len() == n {
                    break;
                }
                if let Some(h) = self.header_at(view.generation, pos, &read)? {
                    out.push(h);
                }
            }
            return Ok(out);
        }
        let mut seen = HashSet::new();
        // Positions are dense but for the rare hole a failed insert leaves.
        let mut misses = 0u64;
        while out.len() < n && misses < 64 + 4 * n as u64 {
            let pos = rng.random_range(0..end);
            if !seen.insert(pos) {
                continue;
            }
            match self.header_at(view.generation, pos, &read)? {
                Some(h) => out.push(h),
                None => misses += 1,
            }
        }
        Ok(out)
    }

    /// The number of users (a scan of the index).
    pub fn count_users(&self) -> Result<u64> {
        let view = self.view();
        let mut read = view.read_options();
        read.set_iterate_upper_bound(keys::range_end(keys::INDEX, view.generation).to_vec());
        let start = keys::range_start(keys::INDEX, view.generation);
        let mut n = 0;
        for item in self.db.iterator_opt(IteratorMode::From(&start, Direction::Forward), read) {
            item?;
            n += 1;
        }
        Ok(n)
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
}
