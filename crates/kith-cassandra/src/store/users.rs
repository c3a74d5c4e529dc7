//! Users on the cluster: index rows, profiles and data blocks by placement, friendships on
//! both users in one logged batch, positions from a lightweight-transaction allocator.

use std::collections::{BTreeMap, HashMap};

use futures_util::{StreamExt, TryStreamExt, stream};
use kith_store::{Error as StoreError, MAX_DATA_BYTES, MAX_PAGE, Profile, Result, User, UserWrite};

use super::{CassandraStore, DATA_CHUNK_BYTES, Gen, MAX_BATCH_CHANGES, Writes, bad_rows, i, u};
use crate::error::driver;

/// How many requests one call keeps in flight.
pub(crate) const FAN: usize = 32;

/// Cassandra's bigint is signed; uids are stored with the top bit flipped, so that signed
/// order is the uids' unsigned order (clustering columns list them ascending).
pub(crate) fn key(uid: u64) -> i64 {
    (uid ^ (1 << 63)) as i64
}

/// The uid stored as `key(uid)`.
pub(crate) fn uid(key: i64) -> u64 {
    (key as u64) ^ (1 << 63)
}

/// A user's index row.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub pos: u64,
    /// `None` while the user is only claimed: a creation that did not finish (the user does
    /// not exist yet; its position is kept for the retry).
    pub data_bytes: Option<u64>,
    /// (friend uid, friend position), ascending by uid.
    pub friends: Vec<(u64, u64)>,
}

/// What a probe of one user's row tells about one friend.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Probe {
    pub pos: u64,
    pub has: bool,
    pub count: usize,
}

/// A user's friends' profiles as one "list all friends" read them, with what it cost.
#[derive(Clone, Debug, Default)]
pub struct FriendsProfiles {
    /// (friend uid, profile), ascending by layout position.
    pub profiles: Vec<(u64, Profile)>,
    /// Partitions of the profile table read (one request each), besides the user's own row.
    pub partitions: usize,
    /// Requests sent in all: the user's index row, then one per partition.
    pub requests: usize,
}

fn unknown(uid: u64) -> StoreError {
    StoreError::UnknownUser(uid)
}

fn too_large(what: &'static str, got: usize, limit: usize) -> StoreError {
    StoreError::TooLarge { what, got: got as u64, limit: limit as u64 }
}

fn corrupt(key: String, reason: String) -> StoreError {
    StoreError::Corrupt { key, reason }
}

impl CassandraStore {
    /// The user's index row (claimed-only rows included), `None` if there is none.
    pub(crate) async fn entry(&self, g: &Gen, uid: u64) -> Result<Option<Entry>> {
        let rows = self
            .session()
            .execute_unpaged(&g.st.index_get, (key(uid),))
            .await
            .map_err(|e| driver("reading a user's index row", e))?
            .into_rows_result()
            .map_err(|e| bad_rows("index row", e))?;
        let row = rows
            .maybe_first_row::<(Option<i64>, Option<i64>, Option<BTreeMap<i64, i64>>)>()
            .map_err(|e| bad_rows("index row", e))?;
        let Some((pos, data_bytes, friends)) = row else { return Ok(None) };
        let pos =
            pos.ok_or_else(|| corrupt(format!("index row of user {uid}"), "no position".into()))?;
        let mut friends: Vec<(u64, u64)> =
            friends.unwrap_or_default().into_iter().map(|(k, p)| (self::uid(k), u(p))).collect();
        friends.sort_unstable();
        Ok(Some(Entry { pos: u(pos), data_bytes: data_bytes.map(u), friends }))
    }

    /// The user's row, refusing a user that does not exist (or is only claimed).
    pub(crate) async fn existing(&self, g: &Gen, uid: u64) -> Result<Entry> {
        match self.entry(g, uid).await? {
            Some(e) if e.data_bytes.is_some() => Ok(e),
            _ => Err(unknown(uid)),
        }
    }

    /// `uid`'s position, friend count and whether it lists `friend`, reading one map entry
    /// (Cassandra 5's element selection), not the list. `None` if the user does not exist.
    pub(crate) async fn probe(&self, g: &Gen, uid: u64, friend: u64) -> Result<Option<Probe>> {
        let rows = self
            .session()
            .execute_unpaged(&g.st.index_probe, (key(friend), key(uid)))
            .await
            .map_err(|e| driver("probing a user's friend list", e))?
            .into_rows_result()
            .map_err(|e| bad_rows("index probe", e))?;
        let row = rows
            .maybe_first_row::<(Option<i64>, Option<i64>, Option<i64>, Option<i32>)>()
            .map_err(|e| bad_rows("index probe", e))?;
        Ok(match row {
            Some((Some(pos), Some(_), entry, count)) => Some(Probe {
                pos: u(pos),
                has: entry.is_some(),
                count: count.unwrap_or(0).max(0) as usize,
            }),
            _ => None,
        })
    }

    /// The profile stored at `pos`, with the uid it names.
    pub(crate) async fn profile_at(&self, g: &Gen, pos: u64) -> Result<Option<(u64, Profile)>> {
        let rows = self
            .session()
            .execute_unpaged(&g.st.user_get, (g.part(pos), i(pos)))
            .await
            .map_err(|e| driver("reading a profile", e))?
            .into_rows_result()
            .map_err(|e| bad_rows("profile", e))?;
        match rows.maybe_first_row::<(i64, Vec<u8>)>().map_err(|e| bad_rows("profile", e))? {
            None => Ok(None),
            Some((k, bytes)) => {
                let profile =
                    Profile::decode_stored(&bytes, &format!("profile at position {pos}"))?;
                Ok(Some((uid(k), profile)))
            }
        }
    }

    /// `uid`'s profile at `pos`, which its index row names.
    async fn profile_of(&self, g: &Gen, uid: u64, pos: u64) -> Result<Profile> {
        match self.profile_at(g, pos).await? {
            Some((stored, p)) if stored == uid => Ok(p),
            Some((stored, _)) => Err(corrupt(
                format!("profile at position {pos} of generation {}", g.generation),
                format!("holds uid {stored}, the index says {uid}"),
            )),
            None => Err(corrupt(
                format!("profile at position {pos} of generation {}", g.generation),
                format!("missing for indexed user {uid}"),
            )),
        }
    }

    /// The first `max_bytes` of the block at `pos` (of `len` bytes).
    async fn data_at(
        &self,
        g: &Gen,
        uid: u64,
        pos: u64,
        len: u64,
        max_bytes: Option<u64>,
    ) -> Result<Vec<u8>> {
        let want = max_bytes.map_or(len, |m| m.min(len));
        if want == 0 {
            return Ok(Vec::new());
        }
        let chunks = want.div_ceil(DATA_CHUNK_BYTES as u64) as i32;
        let rows = self
            .session()
            .execute_unpaged(&g.st.data_get, (g.part(pos), i(pos), chunks))
            .await
            .map_err(|e| driver("reading a data block", e))?
            .into_rows_result()
            .map_err(|e| bad_rows("data block", e))?;
        let mut out = Vec::with_capacity(want as usize);
        for row in rows.rows::<(Vec<u8>,)>().map_err(|e| bad_rows("data block", e))? {
            out.extend_from_slice(&row.map_err(|e| bad_rows("data block", e))?.0);
        }
        if (out.len() as u64) < want {
            return Err(corrupt(
                format!("data block of user {uid}"),
                format!("{} bytes stored, the index says {len}", out.len()),
            ));
        }
        out.truncate(want as usize);
        Ok(out)
    }

    /// A new position for a user in generation `g`: the allocator row's next position,
    /// advanced by a lightweight transaction (safe across processes).
    async fn allocate(&self, g: &Gen) -> Result<u64> {
        loop {
            let rows = self
                .session()
                .execute_unpaged(&self.fixed.next_pos_get, (g.generation as i32,))
                .await
                .map_err(|e| driver("reading the position allocator", e))?
                .into_rows_result()
                .map_err(|e| bad_rows("allocator", e))?;
            let next = rows
                .maybe_first_row::<(Option<i64>,)>()
                .map_err(|e| bad_rows("allocator", e))?
                .and_then(|r| r.0)
                .ok_or_else(|| {
                    corrupt(format!("generation {}", g.generation), "no position allocator".into())
                })?;
            let rows = self
                .session()
                .execute_unpaged(&self.fixed.next_pos_cas, (next + 1, g.generation as i32, next))
                .await
                .map_err(|e| driver("advancing the position allocator", e))?
                .into_rows_result()
                .map_err(|e| bad_rows("allocator", e))?;
            if lwt_outcome(&rows, "next_pos")?.0 {
                return Ok(u(next));
            }
        }
    }

    /// Claims `pos` for new user `uid` (a lightweight transaction on its index row): `None`
    /// if claimed, else the position the row already has.
    async fn claim(&self, g: &Gen, uid: u64, pos: u64) -> Result<Option<u64>> {
        let rows = self
            .session()
            .execute_unpaged(&g.st.index_claim, (key(uid), i(pos)))
            .await
            .map_err(|e| driver("claiming a new user's row", e))?
            .into_rows_result()
            .map_err(|e| bad_rows("claim", e))?;
        lwt_outcome(&rows, "pos")
            .map(|(applied, pos)| if applied { None } else { Some(pos.map_or(0, u)) })
    }

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
        let mut w = Writes::logged();
        let map: BTreeMap<i64, i64> = wanted.iter().map(|&f| (key(f), i(probes[&f].pos))).collect();
        let mut touched = vec![uid];
        let removed = old.iter().map(|&(f, _)| f).filter(|f| wanted.binary_search(f).is_err());
        let added =
            wanted.iter().copied().filter(|f| old.binary_search_by_key(f, |&(o, _)| o).is_err());
        for (f, add) in removed.map(|f| (f, false)).chain(added.map(|f| (f, true))) {
            let p = probes[&f];
            if p.has != add {
                if add && p.count >= kith_store::MAX_FRIENDS {
                    return Err(too_large("friend list", p.count + 1, kith_store::MAX_FRIENDS));
                }
                if add {
                    w.push(&g.st.friend_add, (me, i(pos), key(f)));
                } else {
                    w.push(&g.st.friend_del, (me, key(f)));
                }
            }
            touched.push(f);
        }
        if w.len() > MAX_BATCH_CHANGES {
            return Err(too_large(
                "friendship changes (one put_user on Cassandra)",
                w.len(),
                MAX_BATCH_CHANGES,
            ));
        }
        touched.sort_unstable();
        w.push(&g.st.user_put, (g.part(pos), i(pos), me, encoded_profile.to_vec()));
        match data {
            Some(d) => {
                w.push(&g.st.index_put, (i(d.len() as u64), map, me));
                push_data(&mut w, g, pos, d);
            }
            None if created => {
                w.push(&g.st.index_put, (0i64, map, me));
                push_data(&mut w, g, pos, &[]);
            }
            None => w.push(&g.st.index_friends, (map, me)),
        }
        w.run(self.session(), "put_user").await?;
        Ok(Some(UserWrite { created, touched }))
    }

    /// Adds or drops u–v on whichever side lacks or has it, both sides in one logged batch.
    pub(crate) fn change_friendship(&self, u: u64, v: u64, add: bool) -> Result<bool> {
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
            let mut w = Writes::logged();
            for (who, p, friend, friend_pos) in [(u, pu, v, pv.pos), (v, pv, u, pu.pos)] {
                if p.has == add {
                    continue;
                }
                if add && p.count >= kith_store::MAX_FRIENDS {
                    return Err(too_large("friend list", p.count + 1, kith_store::MAX_FRIENDS));
                }
                if add {
                    w.push(&g.st.friend_add, (key(friend), i(friend_pos), key(who)));
                } else {
                    w.push(&g.st.friend_del, (key(friend), key(who)));
                }
            }
            let changed = w.len() > 0;
            w.run(self.session(), if add { "add_friend" } else { "delete_friend" }).await?;
            Ok(changed)
        })
    }

    pub(crate) fn get_user_impl(&self, uid: u64) -> Result<User> {
        let g = self.generation_now()?;
        self.wait(async {
            let e = self.existing(&g, uid).await?;
            let profile = self.profile_of(&g, uid, e.pos).await?;
            Ok(User {
                uid,
                profile,
                friends: e.friends.iter().map(|&(f, _)| f).collect(),
                data_bytes: e.data_bytes.unwrap_or(0),
            })
        })
    }

    pub(crate) fn get_profile_impl(&self, uid: u64) -> Result<Profile> {
        let g = self.generation_now()?;
        self.wait(async {
            let e = self.existing(&g, uid).await?;
            self.profile_of(&g, uid, e.pos).await
        })
    }

    pub(crate) fn put_profile_impl(&self, uid: u64, profile: &Profile) -> Result<()> {
        let encoded = profile.encode()?;
        let _w = self.writer_guard();
        let g = self.generation_now()?;
        let _locks = self.lock_users([uid]);
        self.wait(async {
            let e = self.existing(&g, uid).await?;
            let mut w = Writes::logged();
            w.push(&g.st.user_put, (g.part(e.pos), i(e.pos), key(uid), encoded));
            w.run(self.session(), "put_profile").await
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
            let mut w = Writes::logged();
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

    /// Bondhu's "list all friends" on the cluster: the user's index row (its friends with
    /// their positions), then every friend's profile, one request per partition holding any
    /// (`pos IN (…)` inside it), in flight together.
    pub fn friends_profiles(&self, uid: u64) -> Result<FriendsProfiles> {
        let g = self.generation_now()?;
        self.wait(async {
            let e = self.existing(&g, uid).await?;
            let mut by_part: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
            for &(_, pos) in &e.friends {
                by_part.entry(g.part(pos)).or_default().push(i(pos));
            }
            let partitions = by_part.len();
            let g = &g;
            let mut rows: Vec<(u64, u64, Profile)> = stream::iter(by_part)
                .map(|(part, positions)| async move {
                    let rows = self
                        .session()
                        .execute_unpaged(&g.st.users_in, (part, positions))
                        .await
                        .map_err(|e| driver("reading friends' profiles", e))?
                        .into_rows_result()
                        .map_err(|e| bad_rows("profiles", e))?;
                    let mut out = Vec::new();
                    for row in
                        rows.rows::<(i64, i64, Vec<u8>)>().map_err(|e| bad_rows("profiles", e))?
                    {
                        let (pos, k, bytes) = row.map_err(|e| bad_rows("profiles", e))?;
                        let p =
                            Profile::decode_stored(&bytes, &format!("profile at position {pos}"))?;
                        out.push((u(pos), self::uid(k), p));
                    }
                    Ok::<_, StoreError>(out)
                })
                .buffer_unordered(FAN)
                .try_concat()
                .await?;
            rows.sort_unstable_by_key(|r| r.0);
            if rows.len() != e.friends.len() {
                return Err(corrupt(
                    format!("friends of user {uid}"),
                    format!(
                        "{} friends indexed, {} profiles found at their positions",
                        e.friends.len(),
                        rows.len()
                    ),
                ));
            }
            Ok(FriendsProfiles {
                profiles: rows.into_iter().map(|(_, f, p)| (f, p)).collect(),
                partitions,
                requests: 1 + partitions,
            })
        })
    }

    /// The allocator's next position in generation `g` (every user's position is below it).
    pub(crate) async fn next_pos(&self, g: &Gen) -> Result<u64> {
        let rows = self
            .session()
            .execute_unpaged(&self.fixed.next_pos_get, (g.generation as i32,))
            .await
            .map_err(|e| driver("reading the position allocator", e))?
            .into_rows_result()
            .map_err(|e| bad_rows("allocator", e))?;
        Ok(rows
            .maybe_first_row::<(Option<i64>,)>()
            .map_err(|e| bad_rows("allocator", e))?
            .and_then(|r| r.0)
            .map_or(0, u))
    }

    /// Users (position, uid, profile) at positions above `after` (all from the start for
    /// `None`), ascending, at most `limit`: partition by partition.
    pub(crate) async fn users_from(
        &self,
        g: &Gen,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<(u64, u64, Profile)>> {
        let end = self.next_pos(g).await?;
        let mut out = Vec::new();
        let mut from = after.map_or(0, |a| a + 1);
        while out.len() < limit && from < end {
            // The partitions that could hold the next `limit` users, read together.
            let first = from / g.partition_users;
            let last = (from + (limit - out.len()) as u64).min(end - 1) / g.partition_users;
            let parts: Vec<u64> = (first..=last).collect();
            let chunks: Vec<Vec<(u64, u64, Profile)>> = stream::iter(parts.iter().copied())
                .map(|part| {
                    let bound = if part == first { i(from) - 1 } else { -1 };
                    let want = (limit - out.len()) as i32;
                    async move {
                        let rows = self
                            .session()
                            .execute_unpaged(&g.st.users_after, (part as i64, bound, want))
                            .await
                            .map_err(|e| driver("listing users", e))?
                            .into_rows_result()
                            .map_err(|e| bad_rows("users", e))?;
                        let mut got = Vec::new();
                        for row in
                            rows.rows::<(i64, i64, Vec<u8>)>().map_err(|e| bad_rows("users", e))?
                        {
                            let (pos, k, bytes) = row.map_err(|e| bad_rows("users", e))?;
                            let p = Profile::decode_stored(
                                &bytes,
                                &format!("profile at position {pos}"),
                            )?;
                            got.push((u(pos), uid(k), p));
                        }
                        Ok::<_, StoreError>(got)
                    }
                })
                .buffered(FAN)
                .try_collect()
                .await?;
            for chunk in chunks {
                for row in chunk {
                    if out.len() < limit {
                        out.push(row);
                    }
                }
            }
            from = (last + 1) * g.partition_users;
        }
        Ok(out)
    }

    pub(crate) fn users_page_impl(
        &self,
        cursor: Option<kith_store::UsersCursor>,
        limit: usize,
    ) -> Result<kith_store::UsersPage> {
        if limit > MAX_PAGE {
            return Err(too_large("users page", limit, MAX_PAGE));
        }
        let g = self.generation_now()?;
        if let Some(c) = cursor
            && c.generation != g.generation
        {
            return Err(StoreError::StaleCursor { cursor: c.generation, current: g.generation });
        }
        let mut rows = self.wait(self.users_from(&g, cursor.map(|c| c.after), limit + 1))?;
        let more = rows.len() > limit;
        rows.truncate(limit);
        let next = match rows.last() {
            Some(&(pos, _, _)) if more => {
                Some(kith_store::UsersCursor { generation: g.generation, after: pos })
            }
            _ => None,
        };
        Ok((rows.into_iter().map(|(_, uid, p)| (uid, p)).collect(), next))
    }

    pub(crate) fn random_users_impl(
        &self,
        n: usize,
        rng: &mut dyn rand::RngCore,
    ) -> Result<Vec<(u64, Profile)>> {
        use rand::Rng;
        if n > MAX_PAGE {
            return Err(too_large("random users", n, MAX_PAGE));
        }
        let g = self.generation_now()?;
        let end = self.wait(self.next_pos(&g))?;
        if n == 0 || end == 0 {
            return Ok(Vec::new());
        }
        if n as u64 * 2 >= end {
            // Most of the store: read it all and pick.
            let mut all = self.wait(self.users_from(&g, None, end as usize))?;
            let mut out = Vec::new();
            while out.len() < n && !all.is_empty() {
                let k = rng.random_range(0..all.len());
                let (_, uid, p) = all.swap_remove(k);
                out.push((uid, p));
            }
            return Ok(out);
        }
        // Distinct positions drawn uniformly; a position that holds no user (a creation that
        // never finished) is drawn again, so every user is equally likely.
        let mut tried = std::collections::HashSet::new();
        let mut out = Vec::with_capacity(n);
        while out.len() < n && (tried.len() as u64) < end {
            let mut batch = Vec::new();
            while batch.len() < n - out.len() && (tried.len() as u64) < end {
                let p = rng.random_range(0..end);
                if tried.insert(p) {
                    batch.push(p);
                }
            }
            let g = &g;
            let found: Vec<Option<(u64, Profile)>> = self.wait(
                stream::iter(batch)
                    .map(|p| async move { self.profile_at(g, p).await })
                    .buffered(FAN)
                    .try_collect(),
            )?;
            out.extend(found.into_iter().flatten());
        }
        Ok(out)
    }

    pub(crate) fn count_users_impl(&self) -> Result<u64> {
        let g = self.generation_now()?;
        self.wait(async {
            let pager = self
                .session()
                .execute_iter(g.st.index_scan.clone(), ())
                .await
                .map_err(|e| StoreError::Unavailable(format!("counting users: {e}")))?;
            let mut rows =
                pager.rows_stream::<(i64, Option<i64>)>().map_err(|e| bad_rows("index scan", e))?;
            let mut n = 0u64;
            while let Some(row) = rows.next().await {
                let (_, bytes) =
                    row.map_err(|e| StoreError::Unavailable(format!("counting users: {e}")))?;
                n += u64::from(bytes.is_some());
            }
            Ok(n)
        })
    }
}

/// A lightweight transaction's outcome: whether it applied and, if not, the named bigint
/// (or int) column of the row it found (the result's columns are `[applied]` and, when it did not
/// apply, the existing row's).
pub(crate) fn lwt_outcome(
    rows: &scylla::response::query_result::QueryRowsResult,
    column: &str,
) -> Result<(bool, Option<i64>)> {
    use scylla::value::CqlValue;
    let row = rows
        .first_row::<scylla::value::Row>()
        .map_err(|e| bad_rows("lightweight transaction", e))?;
    let specs = rows.column_specs();
    let at = |name: &str| specs.get_by_name(name).map(|(k, _)| k);
    let applied = match at("[applied]").and_then(|k| row.columns[k].as_ref()) {
        Some(CqlValue::Boolean(b)) => *b,
        _ => return Err(bad_rows("lightweight transaction", "no [applied] column")),
    };
    let value = match at(column).and_then(|k| row.columns[k].as_ref()) {
        Some(CqlValue::BigInt(v)) => Some(*v),
        Some(CqlValue::Int(v)) => Some(i64::from(*v)),
        _ => None,
    };
    Ok((applied, value))
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
