//! Friend copies: a user's lone friends, read from the user's own partition.
//!
//! A layout puts most of a user's friends in a few partitions, but a social graph also has
//! friendships that cross communities, and each of those friends sits in a partition of its
//! own as far as "list all friends" is concerned: one request for one profile. With
//! `friend_copies = t`, a partition that holds at most `t` of a user's friends (not the
//! user's own) is read from copies of those friends' profiles kept in the user's partition,
//! at the friends' own positions (outside the partition's run of positions, so a copy never
//! collides with a user placed there). Which friends are copies is a function of the user's
//! position and its friends' positions alone, so a reader knows it from the index row.
//!
//! The cost is write amplification: a profile write also writes every copy, in the same
//! logged batch. A good layout needs few copies, because few friendships leave the
//! community; under `hash` (one user per partition) `t >= 1` copies every friend.
//!
//! Copies are kept exact across processes without locks:
//!
//! - a user's index row lists the partitions holding its copies (`copied_to`);
//! - a profile write stamps its batch (the profile and the copies `copied_to` named) with
//!   one client timestamp, then reads `copied_to` again and writes any copy added meanwhile
//!   with that same timestamp;
//! - a new copy is added to `copied_to` first, then the profile is read with its write time
//!   and copied `USING TIMESTAMP` that time. A concurrent profile write either read
//!   `copied_to` again after the addition and wrote the copy itself (with its newer stamp,
//!   which wins), or read it before the addition finished, and then its own write had
//!   finished before the profile was read here (a quorum read that starts after a quorum
//!   write finished sees it). Equal timestamps carry equal values.
//!
//! A copy that is missing (a copy interrupted between its two writes, or copy upkeep that
//! failed after its friendship change was written, which fails the call as any write that
//! may or may not have applied) is read from the friend's own partition instead. A profile write that fails after its batch applied and
//! before its second look at `copied_to` may leave a new copy stale until the write is
//! retried, as any failed write must be.
//!
//! Copies are never dropped while a generation lasts (a copy no longer needed is still kept
//! up to date); a relayout makes exactly the needed ones.

use std::collections::{BTreeMap, BTreeSet};

use kith_graph::{Graph, VertexId};
use kith_store::Result;

use futures_util::{StreamExt, TryStreamExt, stream};

use super::rows::{FAN, corrupt, key, uid};
use super::{CassandraStore, Gen, Writes, bad_rows, i};
use crate::error::driver;

/// The partitions, other than `own`, that hold at most `limit` of the friends whose
/// partitions `friend_parts` lists: those friends are read from copies in `own`.
pub(crate) fn copied_parts(
    own: i64,
    friend_parts: impl IntoIterator<Item = i64>,
    limit: u32,
) -> BTreeSet<i64> {
    if limit == 0 {
        return BTreeSet::new();
    }
    let mut count: BTreeMap<i64, u32> = BTreeMap::new();
    for q in friend_parts {
        if q != own {
            *count.entry(q).or_default() += 1;
        }
    }
    count.into_iter().filter(|&(_, c)| c <= limit).map(|(q, _)| q).collect()
}

/// Every copy a placement needs: for each position, the partitions that must hold a copy of
/// the profile of the user placed there. `order` lists the users by position and `position`
/// gives any user's.
pub(crate) fn needed_copies(
    graph: &Graph,
    order: &[VertexId],
    position: impl Fn(VertexId) -> u64,
    partition_users: u64,
    limit: u32,
) -> Vec<Vec<i64>> {
    let mut copied_to: Vec<Vec<i64>> = vec![Vec::new(); order.len()];
    if limit == 0 {
        return copied_to;
    }
    let part = |p: u64| (p / partition_users) as i64;
    for (p, &v) in order.iter().enumerate() {
        let own = part(p as u64);
        let friends = graph.neighbors(v);
        let parts = copied_parts(own, friends.iter().map(|&f| part(position(f))), limit);
        if parts.is_empty() {
            continue;
        }
        for &f in friends {
            let at = position(f);
            if parts.contains(&part(at)) {
                copied_to[at as usize].push(own);
            }
        }
    }
    for c in &mut copied_to {
        c.sort_unstable();
        c.dedup();
    }
    copied_to
}

impl CassandraStore {
    /// Adds `uid`'s profile to `w`: at its position and in every partition of `copied_to`,
    /// with the batch's timestamp (`Writes::at`, the write's one stamp), and the clock of
    /// `uid`'s index row.
    pub(crate) fn push_profile(
        w: &mut Writes,
        g: &Gen,
        uid: u64,
        pos: u64,
        copied_to: &[i64],
        encoded: &[u8],
    ) {
        w.push(&g.st.index_clock, (key(uid),));
        w.push(&g.st.user_put, (g.part(pos), i(pos), key(uid), encoded.to_vec()));
        for &part in copied_to {
            w.push(&g.st.user_put, (part, i(pos), key(uid), encoded.to_vec()));
        }
    }

    /// After a profile write stamped `stamp` that wrote the copies in `written`: writes the
    /// copies added to the user's `copied_to` since, with the same stamp.
    pub(crate) async fn copies_since(
        &self,
        g: &Gen,
        uid: u64,
        pos: u64,
        written: &[i64],
        encoded: &[u8],
        stamp: i64,
    ) -> Result<()> {
        if g.friend_copies == 0 {
            return Ok(());
        }
        let now = self.copied_to(g, uid).await?;
        for part in now.into_iter().filter(|p| written.binary_search(p).is_err()) {
            self.session()
                .execute_unpaged(
                    &g.st.user_put_at,
                    (part, i(pos), key(uid), encoded.to_vec(), stamp),
                )
                .await
                .map_err(|e| driver("writing a friend copy", e))?;
        }
        Ok(())
    }

    /// After `x`'s (at `x_pos`) friends in the partitions `changed` were added or dropped:
    /// makes sure every friend of `x` read from a copy has one in `x`'s partition. Changes
    /// inside `x`'s own partition need nothing, and nothing is read for them.
    pub(crate) async fn ensure_copies(
        &self,
        g: &Gen,
        x: u64,
        x_pos: u64,
        changed: &BTreeSet<i64>,
    ) -> Result<()> {
        if g.friend_copies == 0 || changed.iter().all(|&q| q == g.part(x_pos)) {
            return Ok(());
        }
        let Some(e) = self.entry(g, x).await? else { return Ok(()) };
        let copied = g.copied_parts(e.pos, &e.friends);
        let own = g.part(e.pos);
        stream::iter(e.friends.iter().copied().filter(|&(_, p)| {
            let q = g.part(p);
            changed.contains(&q) && copied.contains(&q)
        }))
        .map(|(y, ypos)| async move {
            if self.copied_to(g, y).await?.binary_search(&own).is_err() {
                self.make_copy(g, y, ypos, own).await?;
            }
            Ok::<_, kith_store::Error>(())
        })
        .buffer_unordered(FAN)
        .try_collect::<()>()
        .await
    }

    /// Copies `y`'s profile (at `ypos`) into partition `into`: `copied_to` first, then the
    /// profile as read, stamped with its own write time (see the module).
    async fn make_copy(&self, g: &Gen, y: u64, ypos: u64, into: i64) -> Result<()> {
        self.session()
            .execute_unpaged(&g.st.index_copy_add, (vec![into], key(y)))
            .await
            .map_err(|e| driver("recording a friend copy", e))?;
        let at = || format!("profile at position {ypos} of generation {}", g.generation);
        let rows = self
            .session()
            .execute_unpaged(&g.st.user_stamped, (g.part(ypos), i(ypos)))
            .await
            .map_err(|e| driver("reading a profile to copy", e))?
            .into_rows_result()
            .map_err(|e| bad_rows("profile", e))?;
        let Some((k, profile, Some(stamp))) = rows
            .maybe_first_row::<(i64, Vec<u8>, Option<i64>)>()
            .map_err(|e| bad_rows("profile", e))?
        else {
            // Not visible yet (its user's creation is still being applied): the copy stays
            // missing, read from the friend's own partition, until the next profile write
            // makes it (`copied_to` names it now).
            return Ok(());
        };
        if uid(k) != y {
            return Err(corrupt(at(), format!("holds uid {}, the index says {y}", uid(k))));
        }
        self.session()
            .execute_unpaged(&g.st.user_put_at, (into, i(ypos), k, profile, stamp))
            .await
            .map_err(|e| driver("writing a friend copy", e))?;
        Ok(())
    }

    /// The partitions holding a copy of `uid`'s profile, ascending.
    async fn copied_to(&self, g: &Gen, uid: u64) -> Result<Vec<i64>> {
        let rows = self
            .session()
            .execute_unpaged(&g.st.index_copied, (key(uid),))
            .await
            .map_err(|e| driver("reading where a profile is copied", e))?
            .into_rows_result()
            .map_err(|e| bad_rows("index row", e))?;
        Ok(rows
            .maybe_first_row::<(Option<BTreeSet<i64>>,)>()
            .map_err(|e| bad_rows("index row", e))?
            .and_then(|r| r.0)
            .map(|s| s.into_iter().collect())
            .unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_friends_are_copied_and_the_own_partition_never_is() {
        // Own partition 0; partition 1 holds two friends, 2 one, 3 three.
        let parts = [0, 1, 1, 2, 3, 3, 3, 0];
        assert!(copied_parts(0, parts, 0).is_empty());
        assert_eq!(copied_parts(0, parts, 1), BTreeSet::from([2]));
        assert_eq!(copied_parts(0, parts, 2), BTreeSet::from([1, 2]));
        assert_eq!(copied_parts(0, parts, 3), BTreeSet::from([1, 2, 3]));
    }

    #[test]
    fn needed_copies_match_a_brute_force_count() {
        // A path 0-1-2-3-4-5 plus 0-5, two users per partition: partitions {0,1} {2,3} {4,5}.
        let edges = vec![(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (0, 5)];
        let graph = Graph::from_edges((0..6).collect(), false, edges);
        let order: Vec<VertexId> = (0..6).collect();
        let got = needed_copies(&graph, &order, u64::from, 2, 1);
        // User 0 (part 0) reads friend 5 (part 2, alone there) from a copy in part 0; user 1
        // reads 2 from part 0; user 2 reads 1 in part 1; 3 reads 4 in part 1; 4 reads 3 in
        // part 2; 5 reads 0 in part 2.
        let want: Vec<Vec<i64>> = vec![vec![2], vec![1], vec![0], vec![2], vec![1], vec![0]];
        assert_eq!(got, want);
        assert_eq!(needed_copies(&graph, &order, u64::from, 2, 0), vec![Vec::<i64>::new(); 6]);
    }
}
