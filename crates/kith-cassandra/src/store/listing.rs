//! Reads over many users: "list all friends' profiles" by partition, the user listing
//! partition by partition, random users and the count.

use std::collections::BTreeMap;

use futures_util::{StreamExt, TryStreamExt, stream};
use kith_store::{Error as StoreError, MAX_PAGE, Profile, Result};

use super::{CassandraStore, Gen, bad_rows, i, u};
use crate::error::driver;

use super::rows::{FAN, corrupt, too_large, uid};

/// A user's friends' profiles as one "list all friends" read them, with what it cost.
#[derive(Clone, Debug, Default)]
pub struct FriendsProfiles {
    /// (friend uid, profile), ascending by layout position.
    pub profiles: Vec<(u64, Profile)>,
    /// Partitions of the profile table read (one request each), besides the user's own row.
    pub partitions: usize,
    /// Friends read from copies in the user's own partition.
    pub copies: usize,
    /// Requests sent in all: the user's index row, one per partition, and one per copy that
    /// was not there yet.
    pub requests: usize,
}

impl CassandraStore {
    /// Bondhu's "list all friends" on the cluster: the user's index row (its friends with
    /// their positions), then every friend's profile, one request per partition holding any
    /// (`pos IN (…)` inside it), in flight together. Friends read from copies (see
    /// [`super::copies`]) are asked of the user's own partition; a copy not there is read
    /// from the friend's own partition after.
    pub fn friends_profiles(&self, uid: u64) -> Result<FriendsProfiles> {
        let g = self.generation_now()?;
        self.wait(async {
            let e = self.existing(&g, uid).await?;
            let copied = g.copied_parts(e.pos, &e.friends);
            let own = g.part(e.pos);
            let mut by_part: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
            let mut copies = 0;
            for &(_, pos) in &e.friends {
                let q = g.part(pos);
                let from = if copied.contains(&q) {
                    copies += 1;
                    own
                } else {
                    q
                };
                by_part.entry(from).or_default().push(i(pos));
            }
            let partitions = by_part.len();
            let g = &g;
            let mut rows: Vec<(u64, u64, Profile)> = stream::iter(by_part)
                .map(|(part, positions)| async move { self.profiles_in(g, part, positions).await })
                .buffer_unordered(FAN)
                .try_concat()
                .await?;
            rows.sort_unstable_by_key(|r| r.0);
            let mut requests = 1 + partitions;
            if rows.len() != e.friends.len() {
                // Copies not made yet: read those friends where they live.
                let mut missing = Vec::new();
                let got: std::collections::BTreeSet<u64> = rows.iter().map(|r| r.0).collect();
                for &(f, pos) in e.friends.iter().filter(|(_, p)| !got.contains(p)) {
                    if copied.contains(&g.part(pos)) {
                        missing.push((f, pos));
                    } else {
                        return Err(corrupt(
                            format!("profile at position {pos} of generation {}", g.generation),
                            format!("missing for indexed user {f}"),
                        ));
                    }
                }
                requests += missing.len();
                let found: Vec<(u64, u64, Profile)> =
                    stream::iter(missing)
                        .map(|(f, pos)| async move {
                            self.profile_of(g, f, pos).await.map(|p| (pos, f, p))
                        })
                        .buffer_unordered(FAN)
                        .try_collect()
                        .await?;
                rows.extend(found);
                rows.sort_unstable_by_key(|r| r.0);
            }
            Ok(FriendsProfiles {
                profiles: rows.into_iter().map(|(_, f, p)| (f, p)).collect(),
                partitions,
                copies,
                requests,
            })
        })
    }

    /// The profiles at `positions` in partition `part` (the users placed there, or copies),
    /// as (position, uid, profile).
    async fn profiles_in(
        &self,
        g: &Gen,
        part: i64,
        positions: Vec<i64>,
    ) -> Result<Vec<(u64, u64, Profile)>> {
        let rows = self
            .session()
            .execute_unpaged(&g.st.users_in, (part, positions))
            .await
            .map_err(|e| driver("reading friends' profiles", e))?
            .into_rows_result()
            .map_err(|e| bad_rows("profiles", e))?;
        let mut out = Vec::new();
        for row in rows.rows::<(i64, i64, Vec<u8>)>().map_err(|e| bad_rows("profiles", e))? {
            let (pos, k, bytes) = row.map_err(|e| bad_rows("profiles", e))?;
            let p = Profile::decode_stored(&bytes, &format!("profile at position {pos}"))?;
            out.push((u(pos), self::uid(k), p));
        }
        Ok(out)
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
                    // Only the partition's own run: copies of other users sit outside it.
                    let lo = if part == first { from } else { part * g.partition_users };
                    let hi = (part + 1) * g.partition_users;
                    let want = (limit - out.len()) as i32;
                    async move {
                        let rows = self
                            .session()
                            .execute_unpaged(
                                &g.st.users_after,
                                (part as i64, i(lo) - 1, i(hi), want),
                            )
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
