//! A user's rows on the cluster: its index row (position, data size, friends with their
//! positions), a probe of one friend in it, its profile and data block by placement, the
//! position allocator and the claim of a new user's row (lightweight transactions).

use std::collections::{BTreeMap, BTreeSet};

use kith_store::{Error as StoreError, Profile, ReadLevel, Result};

use super::{CassandraStore, DATA_CHUNK_BYTES, Gen, bad_rows, i, u};
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
    /// Partitions holding a copy of the user's profile, ascending.
    pub copied_to: Vec<i64>,
    /// The timestamp of the last write to the user (its row's `clock`), 0 if none.
    pub clock: i64,
}

/// What a probe of one user's row tells about one friend.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Probe {
    pub pos: u64,
    pub has: bool,
    pub count: usize,
    /// As [`Entry::clock`].
    pub clock: i64,
}

pub(crate) fn unknown(uid: u64) -> StoreError {
    StoreError::UnknownUser(uid)
}

pub(crate) fn too_large(what: &'static str, got: usize, limit: usize) -> StoreError {
    StoreError::TooLarge { what, got: got as u64, limit: limit as u64 }
}

pub(crate) fn corrupt(key: String, reason: String) -> StoreError {
    StoreError::Corrupt { key, reason }
}
impl CassandraStore {
    /// The user's index row (claimed-only rows included), `None` if there is none.
    pub(crate) async fn entry(&self, g: &Gen, uid: u64) -> Result<Option<Entry>> {
        self.entry_at(g, uid, ReadLevel::Strong).await
    }

    /// [`Self::entry`] at a read level (ONE for `ReadLevel::One`).
    pub(crate) async fn entry_at(
        &self,
        g: &Gen,
        uid: u64,
        level: ReadLevel,
    ) -> Result<Option<Entry>> {
        let statement = match level {
            ReadLevel::Strong => &g.st.index_get,
            ReadLevel::One => &g.one.index_get,
        };
        let rows = self
            .session()
            .execute_unpaged(statement, (key(uid),))
            .await
            .map_err(|e| driver("reading a user's index row", e))?
            .into_rows_result()
            .map_err(|e| bad_rows("index row", e))?;
        let row = rows
            .maybe_first_row::<(
                Option<i64>,
                Option<i64>,
                Option<BTreeMap<i64, i64>>,
                Option<BTreeSet<i64>>,
                Option<i64>,
            )>()
            .map_err(|e| bad_rows("index row", e))?;
        let Some((pos, data_bytes, friends, copied_to, clock)) = row else { return Ok(None) };
        let pos =
            pos.ok_or_else(|| corrupt(format!("index row of user {uid}"), "no position".into()))?;
        let mut friends: Vec<(u64, u64)> =
            friends.unwrap_or_default().into_iter().map(|(k, p)| (self::uid(k), u(p))).collect();
        friends.sort_unstable();
        Ok(Some(Entry {
            pos: u(pos),
            data_bytes: data_bytes.map(u),
            friends,
            copied_to: copied_to.unwrap_or_default().into_iter().collect(),
            clock: clock.unwrap_or(0),
        }))
    }

    /// The user's row, refusing a user that does not exist (or is only claimed).
    pub(crate) async fn existing(&self, g: &Gen, uid: u64) -> Result<Entry> {
        self.existing_at(g, uid, ReadLevel::Strong).await
    }

    /// [`Self::existing`] at a read level.
    pub(crate) async fn existing_at(&self, g: &Gen, uid: u64, level: ReadLevel) -> Result<Entry> {
        match self.entry_at(g, uid, level).await? {
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
            .maybe_first_row::<(Option<i64>, Option<i64>, Option<i64>, Option<i32>, Option<i64>)>()
            .map_err(|e| bad_rows("index probe", e))?;
        Ok(match row {
            Some((Some(pos), Some(_), entry, count, clock)) => Some(Probe {
                pos: u(pos),
                has: entry.is_some(),
                count: count.unwrap_or(0).max(0) as usize,
                clock: clock.unwrap_or(0),
            }),
            _ => None,
        })
    }

    /// The profile stored at `pos`, with the uid it names.
    pub(crate) async fn profile_at(&self, g: &Gen, pos: u64) -> Result<Option<(u64, Profile)>> {
        self.profile_at_level(g, pos, ReadLevel::Strong).await
    }

    /// [`Self::profile_at`] at a read level.
    pub(crate) async fn profile_at_level(
        &self,
        g: &Gen,
        pos: u64,
        level: ReadLevel,
    ) -> Result<Option<(u64, Profile)>> {
        let statement = match level {
            ReadLevel::Strong => &g.st.user_get,
            ReadLevel::One => &g.one.user_get,
        };
        let rows = self
            .session()
            .execute_unpaged(statement, (g.part(pos), i(pos)))
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
    pub(crate) async fn profile_of(&self, g: &Gen, uid: u64, pos: u64) -> Result<Profile> {
        self.profile_of_at(g, uid, pos, ReadLevel::Strong).await
    }

    /// [`Self::profile_of`] at a read level.
    pub(crate) async fn profile_of_at(
        &self,
        g: &Gen,
        uid: u64,
        pos: u64,
        level: ReadLevel,
    ) -> Result<Profile> {
        let found = self.profile_at_level(g, pos, level).await?;
        // At ONE the index row and the profile row may come from different replicas, one of
        // which has not seen a new user's write yet: ask a quorum before calling it corrupt.
        let found = match found {
            Some((stored, _)) if stored == uid => found,
            _ if level == ReadLevel::One => {
                self.profile_at_level(g, pos, ReadLevel::Strong).await?
            }
            _ => found,
        };
        match found {
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
    pub(crate) async fn data_at(
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
    pub(crate) async fn allocate(&self, g: &Gen) -> Result<u64> {
        loop {
            let next = self.stored_next_pos(g).await?.ok_or_else(|| {
                corrupt(format!("generation {}", g.generation), "no position allocator".into())
            })?;
            let next = i(next);
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
    pub(crate) async fn claim(&self, g: &Gen, uid: u64, pos: u64) -> Result<Option<u64>> {
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

    /// The allocator's next position in generation `g` (every user's position is below it).
    pub(crate) async fn next_pos(&self, g: &Gen) -> Result<u64> {
        Ok(self.stored_next_pos(g).await?.unwrap_or(0))
    }

    /// The allocator row's next position, if the row has one.
    async fn stored_next_pos(&self, g: &Gen) -> Result<Option<u64>> {
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
            .map(u))
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
    let (applied, value) = lwt_column(rows, column)?;
    let value = match value {
        Some(CqlValue::BigInt(v)) => Some(v),
        Some(CqlValue::Int(v)) => Some(i64::from(v)),
        _ => None,
    };
    Ok((applied, value))
}

/// As [`lwt_outcome`], for a text column.
pub(crate) fn lwt_text(
    rows: &scylla::response::query_result::QueryRowsResult,
    column: &str,
) -> Result<(bool, Option<String>)> {
    use scylla::value::CqlValue;
    let (applied, value) = lwt_column(rows, column)?;
    let value = match value {
        Some(CqlValue::Text(v) | CqlValue::Ascii(v)) => Some(v),
        _ => None,
    };
    Ok((applied, value))
}

/// Whether a lightweight transaction applied, and the named column of the row it found.
fn lwt_column(
    rows: &scylla::response::query_result::QueryRowsResult,
    column: &str,
) -> Result<(bool, Option<scylla::value::CqlValue>)> {
    use scylla::value::CqlValue;
    let mut row = rows
        .first_row::<scylla::value::Row>()
        .map_err(|e| bad_rows("lightweight transaction", e))?;
    let specs = rows.column_specs();
    let at = |name: &str| specs.get_by_name(name).map(|(k, _)| k);
    let applied = match at("[applied]").and_then(|k| row.columns[k].as_ref()) {
        Some(CqlValue::Boolean(b)) => *b,
        _ => return Err(bad_rows("lightweight transaction", "no [applied] column")),
    };
    Ok((applied, at(column).and_then(|k| row.columns[k].take())))
}
