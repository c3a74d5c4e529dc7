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
use crate::store::Store;

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
