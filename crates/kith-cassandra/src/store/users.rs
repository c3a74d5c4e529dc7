//! Users on the cluster: index rows, profiles and data blocks by placement, friendships on
//! both users in one logged batch, positions from a lightweight-transaction allocator.

use kith_store::price::{Price, step};
use std::collections::{BTreeMap, BTreeSet, HashMap};

use futures_util::{StreamExt, TryStreamExt, stream};
use kith_store::{
    Error as StoreError, IdempotencyRecord, MAX_DATA_BYTES, Profile, ReadLevel, Result, User,
    UserWrite,
};

use super::{CassandraStore, DATA_CHUNK_BYTES, Gen, MAX_BATCH_CHANGES, Writes, i};

use super::rows::{Entry, FAN, Probe, key, too_large, unknown};

/// A keyed write's check (see [`CassandraStore::change_friendship`]): its idempotency key,
/// and which records under it are finished ones.
type Unless<'a> = Option<(&'a str, fn(&IdempotencyRecord) -> bool)>;

impl CassandraStore {
    pub(crate) fn put_user_impl(
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
        if friends.len() > MAX_BATCH_CHANGES {
            return Err(too_large(
                "friend list (one put_user on Cassandra)",
                friends.len(),
                MAX_BATCH_CHANGES,
            ));
        }
        if friends.contains(&uid) {
            return Err(StoreError::SelfFriendship(uid));
        }
        let mut wanted = friends.to_vec();
        wanted.sort_unstable();
        wanted.dedup();
        let _w = self.writer_guard();
        let g = self.generation_now()?;
        // Lock the user, its current friends and its new ones; the current ones are known
        // only after a read, so read, lock and re-check until the set is stable.
        let mut known_old: Vec<u64> = Vec::new();
        loop {
            let _locks = self.lock_users(
                std::iter::once(uid).chain(known_old.iter().copied()).chain(wanted.iter().copied()),
            );
            let found = self.wait(self.entry(&g, uid))?;
            let old: Vec<(u64, u64)> = match &found {
                Some(e) if e.data_bytes.is_some() => e.friends.clone(),
                _ => Vec::new(),
            };
            if old.iter().any(|(f, _)| known_old.binary_search(f).is_err()) {
                known_old = old.iter().map(|&(f, _)| f).collect();
                continue;
            }
            let done = self.wait(self.put_user_locked(
                &g,
                uid,
                &encoded,
                &wanted,
                data,
                found.as_ref(),
                &old,
            ))?;
            match done {
                Some(w) => return Ok(w),
                // Another process claimed the new user first: read it again.
                None => continue,
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn put_user_locked(
        &self,
        g: &Gen,
        uid: u64,
        encoded_profile: &[u8],
        wanted: &[u64],
        data: Option<&[u8]>,
        found: Option<&Entry>,
        old: &[(u64, u64)],
    ) -> Result<Option<UserWrite>> {
        // Each friend, old or new: position and whether it lists `uid`.
        let mut others: Vec<u64> = wanted.to_vec();
        others.extend(old.iter().map(|&(f, _)| f));
        others.sort_unstable();
        others.dedup();
        let probes: HashMap<u64, Probe> = stream::iter(others.iter().copied())
            .map(|f| async move { self.probe(g, f, uid).await.map(|p| (f, p)) })
            .buffer_unordered(FAN)
            .try_filter_map(|(f, p)| async move { Ok(p.map(|p| (f, p))) })
            .try_collect()
            .await?;
        if let Some(&f) = wanted.iter().find(|f| !probes.contains_key(f)) {
            return Err(unknown(f));
        }
        let created = !matches!(found, Some(e) if e.data_bytes.is_some());
        let pos = match found {
            Some(e) => e.pos,
            None => {
                let pos = {
                    let _one = self.allocating.lock().await;
                    self.allocate(g).await?
                };
                if self.claim(g, uid, pos).await?.is_some() {
                    return Ok(None);
                }
                pos
            }
        };
        let me = key(uid);
        let seen = probes.values().map(|p| p.clock).chain(found.map(|e| e.clock)).max();
        let stamp = self.stamp_after(seen.unwrap_or(0));
        let mut w = Writes::logged().at(stamp);
        let map: BTreeMap<i64, i64> = wanted.iter().map(|&f| (key(f), i(probes[&f].pos))).collect();
        let mut touched = vec![uid];
        // Partitions whose friends changed, seen from `uid`, and the friends whose friends
        // in `uid`'s partition changed: their copies are checked after the write.
        let mut changed_parts = std::collections::BTreeSet::new();
        let removed = old.iter().map(|&(f, _)| f).filter(|f| wanted.binary_search(f).is_err());
        let added =
            wanted.iter().copied().filter(|f| old.binary_search_by_key(f, |&(o, _)| o).is_err());
        // Each changed friendship is written on the friend's side even when that side already
        // reads as wanted: an earlier write that failed after its batch was logged is replayed
        // later with its older timestamp, and only a newer write of the wanted state wins.
        for (f, add) in removed.map(|f| (f, false)).chain(added.map(|f| (f, true))) {
            let p = probes[&f];
            if add && !p.has && p.count >= kith_store::MAX_FRIENDS {
                return Err(too_large("friend list", p.count + 1, kith_store::MAX_FRIENDS));
            }
            // Both sides, entry by entry: rewriting the user's whole map would undo a
            // friendship another server changed since the read above on this side only.
            if add {
                w.push(&g.st.friend_add, (me, i(pos), key(f)));
                w.push(&g.st.friend_add, (key(f), i(p.pos), me));
            } else {
                w.push(&g.st.friend_del, (BTreeSet::from([key(f)]), me));
                w.push(&g.st.friend_del, (BTreeSet::from([me]), key(f)));
            }
            touched.push(f);
            changed_parts.insert(g.part(p.pos));
        }
        if touched.len() - 1 > MAX_BATCH_CHANGES {
            return Err(too_large(
                "friendship changes (one put_user on Cassandra)",
                touched.len() - 1,
                MAX_BATCH_CHANGES,
            ));
        }
        touched.sort_unstable();
        let copied_to: &[i64] = found.map_or(&[], |e| &e.copied_to);
        CassandraStore::push_profile(&mut w, g, uid, pos, copied_to, encoded_profile);
        match (data, created) {
            // A new user's whole map: nobody else can have written it yet.
            (d, true) => {
                let d = d.unwrap_or(&[]);
                w.push(&g.st.index_put, (i(d.len() as u64), map, me));
                push_data(&mut w, g, pos, d);
            }
            (Some(d), false) => {
                w.push(&g.st.index_bytes, (i(d.len() as u64), me));
                push_data(&mut w, g, pos, d);
            }
            (None, false) => {}
        }
        w.run(self.session(), "put_user").await?;
        self.copies_since(g, uid, pos, copied_to, encoded_profile, stamp).await?;
        self.ensure_copies(g, uid, pos, &changed_parts).await?;
        let mine = std::collections::BTreeSet::from([g.part(pos)]);
        stream::iter(touched.iter().copied().filter(|&f| f != uid))
            .map(|f| self.ensure_copies(g, f, probes[&f].pos, &mine))
            .buffer_unordered(FAN)
            .try_collect::<()>()
            .await?;
        Ok(Some(UserWrite { created, touched }))
    }

    /// Adds or drops u–v on whichever side lacks or has it, both sides in one logged batch;
    /// whether either side changed. With `unless` (an idempotency key, and which of its
    /// records are finished ones): `None`, writing nothing, when the key's record is finished
    /// once the batch's timestamp is chosen (see [`Engine::change_friendship_unless_finished`]).
    ///
    /// [`Engine::change_friendship_unless_finished`]: kith_store::Engine::change_friendship_unless_finished
    pub(crate) fn change_friendship(
        &self,
        u: u64,
        v: u64,
        add: bool,
        unless: Unless<'_>,
    ) -> Result<Option<bool>> {
        if u == v {
            return Err(StoreError::SelfFriendship(u));
        }
        let _w = self.writer_guard();
        let g = self.generation_now()?;
        let _locks = self.lock_users([u, v]);
        self.wait(async {
            let (pu, pv) = futures_util::try_join!(self.probe(&g, u, v), self.probe(&g, v, u))?;
            let pu = pu.ok_or_else(|| unknown(u))?;
            let pv = pv.ok_or_else(|| unknown(v))?;
            // Both sides are written even when they already read as wanted: an earlier write
            // that failed after its batch was logged may still be replayed, with its older
            // timestamp; only a newer write of the wanted state makes this answer hold. (The
            // fault trials found an acknowledged "already deleted" undone by such a replay.)
            let mut w = Writes::logged().at(self.stamp_after(pu.clock.max(pv.clock)));
            // Read after the stamp: another attempt that answers after this read answers
            // after the stamp too, so the client's next write is stamped later and wins.
            if let Some((key, finished)) = unless
                && {
                    let _s = step(Price::KeyRead);
                    self.stored_record(key).await?.is_some_and(|r| finished(&r))
                }
            {
                return Ok(None);
            }
            for (who, p, friend, friend_pos) in [(u, pu, v, pv.pos), (v, pv, u, pu.pos)] {
                if add && !p.has && p.count >= kith_store::MAX_FRIENDS {
                    return Err(too_large("friend list", p.count + 1, kith_store::MAX_FRIENDS));
                }
                if add {
                    w.push(&g.st.friend_add, (key(friend), i(friend_pos), key(who)));
                } else {
                    w.push(&g.st.friend_del, (BTreeSet::from([key(friend)]), key(who)));
                }
            }
            let changed = pu.has != add || pv.has != add;
            w.run(self.session(), if add { "add_friend" } else { "delete_friend" }).await?;
            self.ensure_copies(&g, u, pu.pos, &[g.part(pv.pos)].into()).await?;
            self.ensure_copies(&g, v, pv.pos, &[g.part(pu.pos)].into()).await?;
            Ok(Some(changed))
        })
    }

    pub(crate) fn get_user_impl(&self, uid: u64, level: ReadLevel) -> Result<User> {
        let g = self.generation_at(level)?;
        self.wait(async {
            let e = self.existing_at(&g, uid, level).await?;
            let profile = self.profile_of_at(&g, uid, e.pos, level).await?;
            Ok(User {
                uid,
                profile,
                friends: e.friends.iter().map(|&(f, _)| f).collect(),
                data_bytes: e.data_bytes.unwrap_or(0),
            })
        })
    }

    pub(crate) fn get_profile_impl(&self, uid: u64, level: ReadLevel) -> Result<Profile> {
        let g = self.generation_at(level)?;
        self.wait(async {
            let e = self.existing_at(&g, uid, level).await?;
            self.profile_of_at(&g, uid, e.pos, level).await
        })
    }

    pub(crate) fn put_profile_impl(&self, uid: u64, profile: &Profile) -> Result<()> {
        let encoded = profile.encode()?;
        let _w = self.writer_guard();
        let g = self.generation_now()?;
        let _locks = self.lock_users([uid]);
        self.wait(async {
            let e = self.existing(&g, uid).await?;
            let stamp = self.stamp_after(e.clock);
            let mut w = Writes::logged().at(stamp);
            CassandraStore::push_profile(&mut w, &g, uid, e.pos, &e.copied_to, &encoded);
            w.run(self.session(), "put_profile").await?;
            self.copies_since(&g, uid, e.pos, &e.copied_to, &encoded, stamp).await
        })
    }

    pub(crate) fn get_data_impl(&self, uid: u64, max_bytes: Option<u64>) -> Result<Vec<u8>> {
        let g = self.generation_now()?;
        self.wait(async {
            let e = self.existing(&g, uid).await?;
            self.data_at(&g, uid, e.pos, e.data_bytes.unwrap_or(0), max_bytes).await
        })
    }

    pub(crate) fn put_data_impl(&self, uid: u64, data: &[u8]) -> Result<()> {
        check_data(data)?;
        let _w = self.writer_guard();
        let g = self.generation_now()?;
        let _locks = self.lock_users([uid]);
        self.wait(async {
            let e = self.existing(&g, uid).await?;
            let mut w = Writes::logged().at(self.stamp_after(e.clock));
            w.push(&g.st.index_bytes, (i(data.len() as u64), key(uid)));
            push_data(&mut w, &g, e.pos, data);
            w.run(self.session(), "put_data").await
        })
    }

    pub(crate) fn get_all_friends_impl(&self, uid: u64) -> Result<Vec<u64>> {
        let g = self.generation_now()?;
        let e = self.wait(self.existing(&g, uid))?;
        Ok(e.friends.into_iter().map(|(f, _)| f).collect())
    }

    pub(crate) fn contains_impl(&self, uid: u64) -> Result<bool> {
        let g = self.generation_now()?;
        Ok(matches!(self.wait(self.entry(&g, uid))?, Some(e) if e.data_bytes.is_some()))
    }
}

/// Writes `data` as the block at `pos`: its chunks, and a range deletion of any chunks past
/// them left by a longer block before.
fn push_data(w: &mut Writes, g: &Gen, pos: u64, data: &[u8]) {
    let mut n = 0i32;
    for chunk in data.chunks(DATA_CHUNK_BYTES) {
        w.push(&g.st.data_put, (g.part(pos), i(pos), n, chunk.to_vec()));
        n += 1;
    }
    w.push(&g.st.data_trim, (g.part(pos), i(pos), n));
}

fn check_data(data: &[u8]) -> Result<()> {
    if data.len() as u64 > MAX_DATA_BYTES {
        return Err(StoreError::TooLarge {
            what: "data block bytes",
            got: data.len() as u64,
            limit: MAX_DATA_BYTES,
        });
    }
    Ok(())
}
