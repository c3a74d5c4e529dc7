//! Fan-out watermarks: each server number's in `feed_state` (`fanout_watermark` for
//! number 0, `fanout_watermark/<n>` for the others). A number whose watermark is stored
//! but whose lease lapsed is an orphan: its server died with fan-out perhaps unfinished,
//! and another server redoes it from the watermark, then drops it.
//!
//! Every write of a watermark carries a client timestamp strictly after the one its
//! writer last saw on the cell (`CassandraStore::stamp_after`), never its coordinator's
//! clock, and a drop writes [`DROPPED`] the same way instead of deleting. With the
//! coordinator's clock, a write made through a node whose clock was set ahead outlived
//! the writes after it by as much: a lowered watermark (a post opened below it, which
//! must be redone if its server dies) could read as the higher one before it, and a
//! dropped one came back as an orphan whose fan-out was redone again. A holder reads the
//! cell's timestamp on its first write and on every synced one (`sync`: a lowering, rare,
//! or the first after another server may have written it); its other writes follow its
//! own last one.

use std::time::Duration;

use kith_store::Result;

use super::{CassandraStore, bad_rows, i, u};
use crate::error::driver;

const WATERMARK: &str = "fanout_watermark";

/// The value of a dropped watermark: no id is that high.
const DROPPED: i64 = i64::MIN;

/// The `feed_state` name of server `n`'s watermark.
fn watermark_name(n: u16) -> String {
    match n {
        0 => WATERMARK.to_string(),
        n => format!("{WATERMARK}/{n}"),
    }
}

/// The number whose watermark `name` is, if it is one.
fn number_of(name: &str) -> Option<u16> {
    match name.strip_prefix(WATERMARK)? {
        "" => Some(0),
        rest => rest.strip_prefix('/')?.parse().ok(),
    }
}

impl CassandraStore {
    pub(crate) fn orphaned_servers_impl(&self, lease: Duration) -> Result<Vec<u16>> {
        self.wait(async {
            let held: Vec<u16> = self
                .servers_watched(lease)
                .await?
                .into_iter()
                .filter(|r| !r.lapsed)
                .map(|r| r.n)
                .collect();
            // A few rows: a watermark per server number that was ever used.
            let rows = self
                .session()
                .execute_unpaged(&self.fixed.state_all, ())
                .await
                .map_err(|e| driver("reading the feed's state", e))?
                .into_rows_result()
                .map_err(|e| bad_rows("feed state", e))?;
            let mut out = Vec::new();
            for row in
                rows.rows::<(String, Option<i64>)>().map_err(|e| bad_rows("feed state", e))?
            {
                let (name, value) = row.map_err(|e| bad_rows("feed state", e))?;
                let Some(n) = number_of(&name) else { continue };
                if value.is_some_and(|v| v != DROPPED) && !held.contains(&n) {
                    out.push(n);
                }
            }
            out.sort_unstable();
            Ok(out)
        })
    }

    pub(crate) fn fanout_watermark_impl(&self, n: u16) -> Result<Option<u64>> {
        self.wait(async {
            let cell = self.watermark_cell(n).await?;
            Ok(cell.and_then(|(v, _)| v).filter(|&v| v != DROPPED).map(u))
        })
    }

    pub(crate) fn set_fanout_watermark_impl(
        &self,
        n: u16,
        watermark: u64,
        sync: bool,
    ) -> Result<()> {
        self.wait(async {
            let known = self.watermark_stamps().get(&n).copied();
            let seen = match known {
                Some(at) if !sync => at,
                _ => self.watermark_cell(n).await?.and_then(|(_, at)| at).unwrap_or(0),
            };
            self.write_watermark(n, i(watermark), seen, "storing the fan-out watermark").await
        })
    }

    pub(crate) fn drop_fanout_watermark_impl(&self, n: u16) -> Result<()> {
        self.wait(async {
            let seen = self.watermark_cell(n).await?.and_then(|(_, at)| at).unwrap_or(0);
            self.write_watermark(n, DROPPED, seen, "dropping a fan-out watermark").await?;
            self.watermark_stamps().remove(&n);
            Ok(())
        })
    }

    /// Writes `value` to `n`'s watermark at a timestamp after `seen` and after every one
    /// this process gave, and remembers it as the cell's.
    async fn write_watermark(&self, n: u16, value: i64, seen: i64, what: &str) -> Result<()> {
        let at = self.stamp_after(seen);
        self.session()
            .execute_unpaged(&self.fixed.state_put, (watermark_name(n), value, at))
            .await
            .map_err(|e| driver(what, e))?;
        self.watermark_stamps().insert(n, at);
        Ok(())
    }

    /// `n`'s watermark cell: its value and its write's timestamp, `None` without a row.
    async fn watermark_cell(&self, n: u16) -> Result<Option<(Option<i64>, Option<i64>)>> {
        let rows = self
            .session()
            .execute_unpaged(&self.fixed.state_get, (watermark_name(n),))
            .await
            .map_err(|e| driver("reading the feed's state", e))?
            .into_rows_result()
            .map_err(|e| bad_rows("feed state", e))?;
        rows.maybe_first_row::<(Option<i64>, Option<i64>)>().map_err(|e| bad_rows("feed state", e))
    }

    fn watermark_stamps(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<u16, i64>> {
        self.watermark_stamps.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_numbers_round_trip() {
        for n in [0, 1, 63] {
            assert_eq!(number_of(&watermark_name(n)), Some(n));
        }
        assert_eq!(number_of("fanout_watermark/x"), None);
        assert_eq!(number_of("fanout_watermarks"), None);
        assert_eq!(number_of("other"), None);
    }
}
