//! Pending re-pushes (hybrid feeds): an unfollow that makes its author a pushed one again
//! stores a ticket under the author in `repushes`, in the same logged batch as its index
//! row, and the fan-out job that re-pushes the author's recent posts clears it when done. A
//! ticket still stored when a server opens is a re-push a crash may have cut short.
//!
//! As for the fan-out watermarks (`watermarks.rs`), every write of a ticket carries a
//! client timestamp strictly after the one its writer read on the cell, never its
//! coordinator's clock, and clearing writes [`DONE`] the same way instead of deleting.
//! With the coordinator's clock, a clearing made through a node whose clock was set ahead
//! hid the tickets stored after it by as much: a re-push cut short by a crash in that
//! window was never redone.

use futures_util::StreamExt;
use kith_store::{Error as StoreError, Result};

use super::rows::{key, uid};
use super::{CassandraStore, bad_rows, u};
use crate::error::driver;

/// The ticket of a cleared re-push: no token is that low.
const DONE: i64 = i64::MIN;

/// How long a cleared ticket is kept (a day, in seconds): long after any write that read
/// the cell before it, and then dropped, so the table holds the authors pending, not every
/// one ever re-pushed.
const DONE_TTL_S: i32 = 86_400;

/// A ticket's cell: its value (`DONE` when cleared) and its write's timestamp.
type Cell = (Option<i64>, Option<i64>);

impl CassandraStore {
    pub(crate) fn pending_repush_impl(&self, author: u64) -> Result<Option<u64>> {
        self.wait(async { Ok(pending(self.repush_cell(author).await?)) })
    }

    pub(crate) fn pending_repushes_impl(&self) -> Result<Vec<u64>> {
        self.wait(async {
            let pager =
                self.session().execute_iter(self.fixed.repush_all.clone(), ()).await.map_err(
                    |e| StoreError::Unavailable(format!("reading pending re-pushes: {e}")),
                )?;
            let mut rows =
                pager.rows_stream::<(i64, Option<i64>)>().map_err(|e| bad_rows("re-pushes", e))?;
            let mut out = Vec::new();
            while let Some(row) = rows.next().await {
                let (k, ticket) = row.map_err(|e| {
                    StoreError::Unavailable(format!("reading pending re-pushes: {e}"))
                })?;
                if ticket.is_some_and(|t| t != DONE) {
                    out.push(uid(k));
                }
            }
            out.sort_unstable();
            Ok(out)
        })
    }

    /// Clears the re-push if its token is unchanged. Under the author's follow stripe, as
    /// unfollows store re-pushes, so no new token of this process lands between the read and
    /// the clearing.
    pub(crate) fn repush_done_impl(&self, author: u64, token: u64) -> Result<()> {
        let _locks = self.lock_followed([author]);
        self.wait(async {
            let cell = self.repush_cell(author).await?;
            if pending(cell) == Some(token) {
                let at = self.stamp_after(cell.and_then(|(_, at)| at).unwrap_or(0));
                self.session()
                    .execute_unpaged(&self.fixed.repush_clear, (key(author), DONE, at, DONE_TTL_S))
                    .await
                    .map_err(|e| driver("clearing a done re-push", e))?;
            }
            Ok(())
        })
    }

    /// The timestamp a new ticket of `author` is stored at: after the cell's.
    pub(super) async fn repush_stamp(&self, author: u64) -> Result<i64> {
        let seen = self.repush_cell(author).await?.and_then(|(_, at)| at).unwrap_or(0);
        Ok(self.stamp_after(seen))
    }

    /// `author`'s ticket cell, `None` without a row.
    async fn repush_cell(&self, author: u64) -> Result<Option<Cell>> {
        let rows = self
            .session()
            .execute_unpaged(&self.fixed.repush_get, (key(author),))
            .await
            .map_err(|e| driver("reading a pending re-push", e))?
            .into_rows_result()
            .map_err(|e| bad_rows("re-push", e))?;
        rows.maybe_first_row::<Cell>().map_err(|e| bad_rows("re-push", e))
    }
}

/// The pending token in a ticket cell, if one is.
fn pending(cell: Option<Cell>) -> Option<u64> {
    cell.and_then(|(t, _)| t).filter(|&t| t != DONE).map(u)
}
