//! The store's durable writes: friendships on both users in one batch, profiles, data blocks
//! and whole users, each under striped per-user locks and acknowledged after the WAL sync.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{MutexGuard, PoisonError};

use rocksdb::{ReadOptions, WriteBatch};

use crate::error::{Error, Result};
use crate::friend_ops;
use crate::keys;
use crate::record::{self, Friend, MAX_DATA_BYTES, MAX_FRIENDS, Profile, chunk_count};
use crate::store::{STRIPES, Store};
use crate::sync::lock;

/// What [`Store::put_user`] changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserWrite {
    /// Whether the user did not exist before.
    pub created: bool,
    /// The user and every user whose friend list changed (a friendship added or dropped),
    /// ascending: the lists a cache of friend lists must drop.
    pub touched: Vec<u64>,
}

impl Store {
    /// Locks the stripes of `uids` in ascending stripe order.
    fn lock_users(&self, uids: impl IntoIterator<Item = u64>) -> Vec<MutexGuard<'_, ()>> {
        let mut stripes: Vec<usize> = uids
            .into_iter()
            .map(|u| (xxhash_rust::xxh3::xxh3_64(&u.to_le_bytes()) % STRIPES as u64) as usize)
            .collect();
        stripes.sort_unstable();
        stripes.dedup();
        stripes.into_iter().map(|s| lock(&self.stripes[s])).collect()
    }

    fn writer_guard(&self) -> std::sync::RwLockReadGuard<'_, ()> {
        self.writers.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds the friendship u–v, on both users in one atomic batch. Returns whether it was new.
    pub fn add_friend(&self, u: u64, v: u64) -> Result<bool> {
        self.change_friendship(u, v, true)
    }

    /// Removes the friendship u–v from both users. Returns whether it existed.
    pub fn delete_friend(&self, u: u64, v: u64) -> Result<bool> {
        self.change_friendship(u, v, false)
    }

    /// Adds or drops u–v on whichever side lacks or has it. Each side is written as a merge
    /// operand of a few bytes (`friend_ops.rs`), so the change costs what it changes, not
    /// a rewrite of the list; the lists are only probed (checksum and binary search).
    fn change_friendship(&self, u: u64, v: u64, add: bool) -> Result<bool> {
        if u == v {
            return Err(Error::SelfFriendship(u));
        }
        let _w = self.writer_guard();
        let generation = self.generation();
        let _locks = self.lock_users([u, v]);
        let read = ReadOptions::default();
        let (pu, nu, u_has_v) = self.probe(generation, u, v, &read)?;
        let (pv, nv, v_has_u) = self.probe(generation, v, u, &read)?;
        let mut batch = WriteBatch::default();
        let mut changed = false;
        for (uid, count, has, friend) in [
            (u, nu, u_has_v, Friend { uid: v, position: pv }),
            (v, nv, v_has_u, Friend { uid: u, position: pu }),
        ] {
            if has == add {
                continue;
            }
            if add && count >= MAX_FRIENDS {
                return Err(too_many_friends(count));
            }
            merge_change(&mut batch, generation, uid, friend, add);
            changed = true;
        }
        if changed {
            self.write(batch)?;
        }
        Ok(changed)
    }

    /// Replaces the profile of an existing user.
    pub fn put_profile(&self, uid: u64, profile: &Profile) -> Result<()> {
        let encoded = profile.encode()?;
        let _w = self.writer_guard();
        let generation = self.generation();
        let _locks = self.lock_users([uid]);
        let (pos, _, _) = self.probe(generation, uid, uid, &ReadOptions::default())?;
        let key = keys::profile(generation, pos);
        let mut batch = WriteBatch::default();
        batch.put(key, record::encode_header(&key, uid, &encoded));
        self.write(batch)
    }

    /// Replaces the data block of an existing user (at most [`MAX_DATA_BYTES`]).
    pub fn put_data(&self, uid: u64, data: &[u8]) -> Result<()> {
        check_data(data)?;
        let _w = self.writer_guard();
        let generation = self.generation();
        let _locks = self.lock_users([uid]);
        let read = ReadOptions::default();
        let (pos, _, _) = self.probe(generation, uid, uid, &read)?;
        let mut batch = WriteBatch::default();
        self.put_data_into(&mut batch, generation, pos, data, &read)?;
        self.write(batch)
    }

    fn put_data_into(
        &self,
        batch: &mut WriteBatch,
        generation: u32,
        pos: u64,
        data: &[u8],
        read: &ReadOptions,
    ) -> Result<()> {
        let old = match self.get(&keys::data(generation, pos, 0), read)? {
            Some(v) => record::decode_first_chunk(&keys::data(generation, pos, 0), &v)?.0,
            None => 0,
        };
        let new_chunks = record::encode_chunks(generation, pos, data, self.chunk_bytes);
        for c in new_chunks.len() as u32..chunk_count(old, self.chunk_bytes) {
            batch.delete(keys::data(generation, pos, c));
        }
        for (k, v) in new_chunks {
            batch.put(k, v);
        }
        Ok(())
    }

    /// Creates or replaces a whole user: profile, friends (each must exist; the friendships
    /// change on both sides in the same batch) and, if given, the data block. A new user is
    /// appended after the last position. Returns whether the user is new and whose friend
    /// lists changed, as read under the users' locks.
    pub fn put_user(
        &self,
        uid: u64,
        profile: &Profile,
        friends: &[u64],
        data: Option<&[u8]>,
    ) -> Result<UserWrite> {
        let encoded = profile.encode()?;
        if let Some(d) = data {
            check_data(d)?;
        }
        if friends.len() > MAX_FRIENDS {
            return Err(Error::TooLarge {
                what: "friend list",
                got: friends.len() as u64,
                limit: MAX_FRIENDS as u64,
            });
        }
        if friends.contains(&uid) {
            return Err(Error::SelfFriendship(uid));
        }
        let mut wanted: Vec<u64> = friends.to_vec();
        wanted.sort_unstable();
        wanted.dedup();
        let _w = self.writer_guard();
        let generation = self.generation();
        let read = ReadOptions::default();
        // Lock the user, its current friends and its new ones. The current friends are only
        // known after a read, so read, lock, and re-check until the set is stable.
        let mut known_old: Vec<u64> = Vec::new();
        loop {
            let _locks = self.lock_users(
                std::iter::once(uid).chain(known_old.iter().copied()).chain(wanted.iter().copied()),
            );
            let found = self.entry_in(generation, uid, &read)?;
            let existing = found.as_ref().map(|(pos, _)| *pos);
            let old: Vec<Friend> = found.map(|(_, f)| f).unwrap_or_default();
            let old_uids: Vec<u64> = old.iter().map(|f| f.uid).collect();
            if old_uids.iter().any(|u| known_old.binary_search(u).is_err()) {
                known_old = old_uids;
                continue;
            }
            return self.put_user_locked(uid, &encoded, &wanted, data, generation, existing, &old);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn put_user_locked(
        &self,
        uid: u64,
        encoded_profile: &[u8],
        wanted: &[u64],
        data: Option<&[u8]>,
        generation: u32,
        existing: Option<u64>,
        old: &[Friend],
    ) -> Result<UserWrite> {
        let read = ReadOptions::default();
        // Each friend, old or new: (position, friend count, whether it lists `uid`), probed
        // without copying its list.
        let mut entries = BTreeMap::new();
        for &f in wanted.iter().chain(old.iter().map(|f| &f.uid)) {
            if let std::collections::btree_map::Entry::Vacant(slot) = entries.entry(f) {
                slot.insert(self.probe(generation, f, uid, &read)?);
            }
        }
        let mut batch = WriteBatch::default();
        let pos = match existing {
            Some(p) => p,
            None => self.next_position.fetch_add(1, Ordering::SeqCst),
        };
        let pk = keys::profile(generation, pos);
        batch.put(pk, record::encode_header(&pk, uid, encoded_profile));
        let list: Vec<Friend> =
            wanted.iter().map(|&f| Friend { uid: f, position: entries[&f].0 }).collect();
        put_entry(&mut batch, generation, uid, pos, &list);
        // The other side of every friendship that changes.
        let me = Friend { uid, position: pos };
        let removed = old.iter().filter(|f| wanted.binary_search(&f.uid).is_err());
        let added = list.iter().filter(|f| old.binary_search_by_key(&f.uid, |o| o.uid).is_err());
        let mut touched = vec![uid];
        for (f, add) in removed.map(|f| (f, false)).chain(added.map(|f| (f, true))) {
            let (_, count, has) = entries[&f.uid];
            if has != add {
                if add && count >= MAX_FRIENDS {
                    return Err(too_many_friends(count));
                }
                merge_change(&mut batch, generation, f.uid, me, add);
            }
            touched.push(f.uid);
        }
        touched.sort_unstable();
        match data {
            Some(d) => self.put_data_into(&mut batch, generation, pos, d, &read)?,
            None if existing.is_none() => {
                for (k, v) in record::encode_chunks(generation, pos, &[], self.chunk_bytes) {
                    batch.put(k, v);
                }
            }
            None => {}
        }
        self.write(batch)?;
        Ok(UserWrite { created: existing.is_none(), touched })
    }
}

/// Writes `uid`'s index entry (position and friend list) into `batch`.
fn put_entry(batch: &mut WriteBatch, generation: u32, uid: u64, pos: u64, friends: &[Friend]) {
    let key = keys::index(generation, uid);
    batch.put(key, record::encode_entry(&key, pos, friends));
}

/// Writes one side of a friendship change into `batch`: a merge operand on `uid`'s list.
fn merge_change(batch: &mut WriteBatch, generation: u32, uid: u64, friend: Friend, add: bool) {
    let key = keys::index(generation, uid);
    let op = if add { friend_ops::add(&key, friend) } else { friend_ops::drop(&key, friend.uid) };
    batch.merge(key, op);
}

fn check_data(data: &[u8]) -> Result<()> {
    if data.len() as u64 > MAX_DATA_BYTES {
        return Err(Error::TooLarge {
            what: "data block bytes",
            got: data.len() as u64,
            limit: MAX_DATA_BYTES,
        });
    }
    Ok(())
}

/// The error for one friend more than a list may hold, on a list of `count`.
fn too_many_friends(count: usize) -> Error {
    Error::TooLarge { what: "friend list", got: count as u64 + 1, limit: MAX_FRIENDS as u64 }
}
