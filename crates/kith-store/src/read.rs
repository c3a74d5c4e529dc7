//! The read path: users, profiles, friend lists, data blocks, listings, random users and
//! counts, each under one (generation, snapshot) view.

use std::collections::HashSet;
use std::sync::PoisonError;
use std::sync::atomic::Ordering;

use rand::Rng;
use rand::seq::SliceRandom;
use rocksdb::{Direction, IteratorMode, ReadOptions};

use crate::error::{Error, Result};
use crate::keys;
use crate::page::{FriendsPage, UsersCursor, UsersPage, check_limit, page_range};
use crate::record::{self, Friend, Profile, User};
use crate::store::{BlockShape, Store, View};

/// The most entries `get_random_users` reserves room for up front.
const MAX_RANDOM_PREALLOC: usize = 1024;

impl Store {
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

    /// `uid`'s position, friend count and whether `friend` is a friend, read without copying
    /// the list out; an unknown uid is an error.
    pub(crate) fn probe(
        &self,
        generation: u32,
        uid: u64,
        friend: u64,
        read: &ReadOptions,
    ) -> Result<(u64, usize, bool)> {
        let key = keys::index(generation, uid);
        let value = self.get_pinned(&key, read)?.ok_or(Error::UnknownUser(uid))?;
        record::probe_entry(&key, &value, friend)
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

    /// Friends' uids from `offset`, at most `limit` (≤ [`MAX_PAGE`](crate::MAX_PAGE)),
    /// ascending. Only the page's uids are copied out of the stored list.
    pub fn get_friends_list(&self, uid: u64, offset: usize, limit: usize) -> Result<FriendsPage> {
        check_limit("friends page", limit)?;
        let view = self.view();
        let (_, friends) = self.entry(view.generation, uid, &view.read_options())?;
        let page = page_range(friends.len(), offset, limit);
        Ok(FriendsPage {
            friends: friends[page].iter().map(|f| f.uid).collect(),
            total: friends.len(),
        })
    }

    /// The user's whole friend list, ascending (at most `MAX_FRIENDS`, 2^20).
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
    ///
    /// First chunks whose entries lie in one block or in adjacent blocks (by the layout's
    /// [`BlockShape`](crate::store::BlockShape)) are read together by one scan that
    /// prefetches the whole run of blocks in one request. RocksDB's `MultiGet` merges adjacent
    /// blocks only within a batch of 32 keys, so a friend list with many friends in a few
    /// blocks would otherwise cost a request per block; the rest go through `MultiGet`.
    pub(crate) fn read_data_at(
        &self,
        view: &View<'_>,
        positions: &[u64],
        max_bytes: Option<u64>,
    ) -> Result<Vec<Vec<u8>>> {
        let (generation, read) = (view.generation, &view.read_options());
        let chunk = u64::from(self.chunk_bytes);
        let shape = *self.shape.read().unwrap_or_else(PoisonError::into_inner);
        let mut firsts: Vec<Option<Vec<u8>>> = vec![None; positions.len()];
        let mut singles: Vec<usize> = Vec::new();
        let mut start = 0;
        while start < positions.len() {
            let mut end = start + 1;
            if shape.records > 1 {
                while end < positions.len()
                    && positions[end] >= positions[end - 1]
                    && shape.blocks(positions[end - 1], positions[end]) <= 2
                {
                    end += 1;
                }
            }
            if end - start > 1 {
                self.scan_firsts(view, &positions[start..end], shape, &mut firsts[start..end])?;
            } else {
                singles.push(start);
            }
            start = end;
        }
        let got = self
            .db
            .multi_get_opt(singles.iter().map(|&i| keys::data(generation, positions[i], 0)), read);
        for (value, &i) in got.into_iter().zip(&singles) {
            firsts[i] = value?;
        }
        let mut out = Vec::with_capacity(positions.len());
        let mut more: Vec<(usize, u64, u32)> = Vec::new();
        for (i, (got, &pos)) in firsts.into_iter().zip(positions).enumerate() {
            let key = keys::data(generation, pos, 0);
            let value = got.ok_or_else(|| record::corrupt(&key, "missing data chunk 0".into()))?;
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

    /// The first chunks at `positions` (ascending, their entries in a run of adjacent
    /// blocks) into `out`, by one forward scan whose readahead covers the run's blocks, so
    /// that a cold read fetches them in one request.
    fn scan_firsts(
        &self,
        view: &View<'_>,
        positions: &[u64],
        shape: BlockShape,
        out: &mut [Option<Vec<u8>>],
    ) -> Result<()> {
        let generation = view.generation;
        let (first, last) = (positions[0], positions[positions.len() - 1]);
        let mut options = view.read_options();
        let blocks = shape.blocks(first, last);
        // A block is `records` entries plus its restart array and trailer.
        let block_bytes = shape.records * shape.entry_bytes + 64;
        options.set_readahead_size((blocks * block_bytes) as usize);
        // The readahead is sized here; RocksDB's own tuning would look blocks up in the cache
        // ahead of the scan, which counts as misses of blocks the query never reads.
        options.set_auto_readahead_size(false);
        options.set_iterate_upper_bound(keys::data(generation, last.saturating_add(1), 0).to_vec());
        let mut it = self.db.raw_iterator_opt(options);
        it.seek(keys::data(generation, first, 0));
        for (slot, &p) in out.iter_mut().zip(positions) {
            let want = keys::data(generation, p, 0);
            loop {
                let Some(key) = it.key() else {
                    it.status()?;
                    break;
                };
                match key.cmp(want.as_slice()) {
                    std::cmp::Ordering::Less => {
                        // Step within the run; seek past another user's later chunks.
                        let later_chunk = keys::parse(key).is_some_and(|(_, _, _, c)| c != Some(0));
                        if later_chunk { it.seek(want) } else { it.next() }
                    }
                    std::cmp::Ordering::Equal => {
                        *slot = it.value().map(<[u8]>::to_vec);
                        break;
                    }
                    std::cmp::Ordering::Greater => break,
                }
            }
        }
        it.status()?;
        Ok(())
    }

    /// The first `max_bytes` of the user's data block (all of it for `None`).
    pub fn get_data(&self, uid: u64, max_bytes: Option<u64>) -> Result<Vec<u8>> {
        let view = self.view();
        let read = view.read_options();
        let (pos, _) = self.entry(view.generation, uid, &read)?;
        let mut data = self.read_data_at(&view, &[pos], max_bytes)?;
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
        let data = self.read_data_at(&view, &positions, max_bytes)?;
        Ok(friends.iter().map(|f| f.uid).zip(data).collect())
    }

    /// [`Store::list_friends_data`] a page at a time: friends `offset..offset + limit` in
    /// layout order, read from one view; and how many friends the user has.
    pub fn list_friends_data_page(
        &self,
        uid: u64,
        max_bytes: Option<u64>,
        offset: usize,
        limit: usize,
    ) -> Result<crate::FriendsData> {
        crate::page::check_limit("friends page", limit)?;
        let view = self.view();
        let read = view.read_options();
        let (_, mut friends) = self.entry(view.generation, uid, &read)?;
        let total = friends.len();
        friends.sort_unstable_by_key(|f| f.position);
        let page = &friends[crate::page::page_range(total, offset, limit)];
        let positions: Vec<u64> = page.iter().map(|f| f.position).collect();
        let data = self.read_data_at(&view, &positions, max_bytes)?;
        Ok(crate::FriendsData { friends: page.iter().map(|f| f.uid).zip(data).collect(), total })
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
        check_limit("users page", limit)?;
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
    ///
    /// The work is bounded by `n`, whatever the store holds: at most `64 + 4n` positions are
    /// drawn (a repeated draw counts too), so a store whose positions are mostly holes (what
    /// failed inserts leave) answers with fewer users rather than searching on.
    pub fn get_random_users<R: Rng>(&self, n: usize, rng: &mut R) -> Result<Vec<(u64, Profile)>> {
        let view = self.view();
        let read = view.read_options();
        let end = self.next_position.load(Ordering::SeqCst);
        let mut out = Vec::with_capacity(n.min(end as usize).min(MAX_RANDOM_PREALLOC));
        let draws = 64 + 4 * n as u64;
        if draws >= end {
            // Fewer positions than draws: visit each once, in random order.
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
        for _ in 0..draws {
            if out.len() == n {
                break;
            }
            let pos = rng.random_range(0..end);
            if seen.insert(pos)
                && let Some(h) = self.header_at(view.generation, pos, &read)?
            {
                out.push(h);
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
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use rand::SeedableRng;

    use crate::{BuildOptions, DataSpec, LayoutMeta, build};

    /// Friends in a run of adjacent blocks are read by one request, friends elsewhere by
    /// their own, and every friend gets exactly its own data, cold and warm, also a friend in
    /// the middle of a run whose data grew to several chunks.
    #[test]
    fn runs_of_adjacent_blocks_are_read_by_one_request_each() {
        use crate::OpenOptions;
        use crate::options::CacheMode;
        use crate::page_model::PageModel;
        let dir = tempfile::tempdir().unwrap();
        let n = 700u64;
        let model = PageModel::for_data(40, crate::DEFAULT_CHUNK_BYTES);
        let per = model.records_per_block;
        // User 0's friends: most of blocks 1 to 3 (one run), two in block 8 and one in 12.
        let mut friends: Vec<u64> = (per..4 * per).step_by(2).collect();
        friends.extend([8 * per + 1, 8 * per + 5, 12 * per + 3]);
        let edges = friends.iter().map(|&f| (0, f as u32)).collect();
        let graph = kith_graph::Graph::from_edges((0..n).collect(), false, edges);
        let layout = kith_layout::Layout::identity(n as usize);
        let meta = LayoutMeta {
            record_bytes: model.entry_bytes,
            page_bytes: model.page_bytes(),
            ..LayoutMeta::default()
        };
        let options = BuildOptions { data: DataSpec::Fixed(40), ..BuildOptions::default() };
        drop(build(&dir.path().join("s"), &graph, &layout, meta, &options).unwrap());
        for mode in [CacheMode::Cold, CacheMode::Warm] {
            let opts = OpenOptions { mode, ..OpenOptions::default() };
            let store = crate::Store::open(&dir.path().join("s"), &opts).unwrap();
            let expected = |store: &crate::Store| -> Vec<(u64, Vec<u8>)> {
                friends.iter().map(|&f| (f, store.get_data(f, None).unwrap())).collect()
            };
            let want = expected(&store);
            store.drop_caches().unwrap();
            let view = store.view();
            let (got, io) =
                crate::io::measure(|| store.read_data_at(&view, &friends, None).unwrap());
            drop(view);
            assert_eq!(got, want.iter().map(|w| w.1.clone()).collect::<Vec<_>>(), "{mode:?}");
            if mode == CacheMode::Cold {
                // Blocks 1-3, block 8, block 12.
                assert_eq!(io.reads.len(), 3, "{mode:?}: {:?}", io.reads);
            }
            // A friend inside the run now has data of several chunks.
            let big: Vec<u8> = (0..3 * crate::DEFAULT_CHUNK_BYTES).map(|i| i as u8).collect();
            let grown = friends[friends.len() / 3];
            store.put_data(grown, &big).unwrap();
            let listed = store.list_friends_data(0, None).unwrap();
            assert_eq!(listed, expected(&store), "{mode:?}");
            assert_eq!(listed.iter().find(|l| l.0 == grown).unwrap().1, big);
            store.put_data(grown, &want.iter().find(|w| w.0 == grown).unwrap().1).unwrap();
        }
    }

    /// A store of 31 positions of which 29 are holes: 10 random users cannot be found, and
    /// the search must end anyway, with the two users there are.
    #[test]
    fn random_users_end_on_a_store_of_holes() {
        let dir = tempfile::tempdir().unwrap();
        let graph = kith_graph::Graph::from_edges((0..31).collect(), false, vec![(0, 30)]);
        let layout = kith_layout::Layout::identity(31);
        let options = BuildOptions { data: DataSpec::Fixed(4), ..BuildOptions::default() };
        let store =
            build(&dir.path().join("s"), &graph, &layout, LayoutMeta::default(), &options).unwrap();
        for pos in 1..30 {
            store.db.delete(super::keys::profile(store.generation(), pos)).unwrap();
        }
        let store = std::sync::Arc::new(store);
        let (tx, rx) = mpsc::channel();
        let s = store.clone();
        std::thread::spawn(move || {
            let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
            let _ = tx.send(s.get_random_users(10, &mut rng).map(|u| u.len()));
        });
        let got = rx.recv_timeout(Duration::from_secs(10));
        assert!(matches!(got, Ok(Ok(2))), "get_random_users did not end in 10 s: {got:?}");
    }
}
