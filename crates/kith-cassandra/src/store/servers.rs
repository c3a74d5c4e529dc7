//! Server numbers and their fan-out watermarks: several feed servers share one store, each
//! under a number it holds by a lease (a row of `servers` with a TTL, taken and renewed by
//! lightweight transactions, so two live servers never hold one number). A server hands
//! out post ids congruent to its number, so ids never collide, and keeps its own fan-out
//! watermark in `feed_state` (`fanout_watermark` for server 0, `fanout_watermark/<n>` for
//! the others). A number whose watermark is stored but whose lease lapsed is an orphan:
//! its server died with fan-out perhaps unfinished, and another server redoes it.

use std::time::Duration;

use kith_store::Result;

use super::rows::lwt_outcome;
use super::{CassandraStore, bad_rows, i};
use crate::error::driver;

/// Server numbers a store hands out (and the modulus of post ids).
pub(crate) const SLOTS: u16 = 64;

const WATERMARK: &str = "fanout_watermark";

/// The `feed_state` name of server `n`'s watermark.
fn watermark_name(n: u16) -> String {
    match n {
        0 => WATERMARK.to_string(),
        n => format!("{WATERMARK}/{n}"),
    }
}

/// Whole seconds of a lease (Cassandra's TTL), at least one.
fn ttl_s(lease: Duration) -> i32 {
    lease.as_secs().clamp(1, 630_720_000) as i32
}

impl CassandraStore {
    pub(crate) fn claim_server_impl(
        &self,
        owner: &str,
        lease: Duration,
        only: Option<u16>,
    ) -> Result<Option<u16>> {
        let candidates: Vec<u16> = match only {
            Some(n) if n < SLOTS => vec![n],
            Some(_) => return Ok(None),
            None => (0..SLOTS).collect(),
        };
        self.wait(async {
            let held = self.servers_held().await?;
            // A number this owner already holds is its own: an earlier claim of it timed
            // out but was applied (the caller tries again after such a timeout).
            if let Some(&(n, _)) = held.iter().find(|(n, o)| o == owner && candidates.contains(n)) {
                return Ok(Some(n));
            }
            let taken: Vec<u16> = held.iter().map(|&(n, _)| n).collect();
            for n in candidates.into_iter().filter(|n| !taken.contains(n)) {
                let rows = self
                    .session()
                    .execute_unpaged(&self.fixed.server_claim, (i32::from(n), owner, ttl_s(lease)))
                    .await
                    .map_err(|e| driver("claiming a server number", e))?
                    .into_rows_result()
                    .map_err(|e| bad_rows("server claim", e))?;
                if lwt_outcome(&rows, "n")?.0 {
                    return Ok(Some(n));
                }
            }
            Ok(None)
        })
    }

    pub(crate) fn renew_server_impl(&self, n: u16, owner: &str, lease: Duration) -> Result<bool> {
        self.wait(async {
            let rows = self
                .session()
                .execute_unpaged(
                    &self.fixed.server_renew,
                    (ttl_s(lease), owner, i32::from(n), owner),
                )
                .await
                .map_err(|e| driver("renewing a server number", e))?
                .into_rows_result()
                .map_err(|e| bad_rows("server renewal", e))?;
            Ok(lwt_outcome(&rows, "n")?.0)
        })
    }

    pub(crate) fn release_server_impl(&self, n: u16, owner: &str) -> Result<()> {
        self.wait(async {
            self.session()
                .execute_unpaged(&self.fixed.server_release, (i32::from(n), owner))
                .await
                .map_err(|e| driver("releasing a server number", e))?;
            Ok(())
        })
    }

    /// Numbers whose lease is live, with their owners (at most [`SLOTS`] rows: read
    /// unpaged).
    async fn servers_held(&self) -> Result<Vec<(u16, String)>> {
        let rows = self
            .session()
            .execute_unpaged(&self.fixed.servers_all, ())
            .await
            .map_err(|e| driver("reading server numbers", e))?
            .into_rows_result()
            .map_err(|e| bad_rows("servers", e))?;
        rows.rows::<(i32, Option<String>)>()
            .map_err(|e| bad_rows("servers", e))?
            .map(|r| {
                r.map(|(n, o)| (n as u16, o.unwrap_or_default()))
                    .map_err(|e| bad_rows("servers", e))
            })
            .collect()
    }

    pub(crate) fn orphaned_servers_impl(&self) -> Result<Vec<u16>> {
        self.wait(async {
            let held: Vec<u16> = self.servers_held().await?.into_iter().map(|(n, _)| n).collect();
            // A few rows: a watermark per server number that was ever used.
            let rows = self
                .session()
                .execute_unpaged(&self.fixed.state_all, ())
                .await
                .map_err(|e| driver("reading the feed's state", e))?
                .into_rows_result()
                .map_err(|e| bad_rows("feed state", e))?;
            let mut out = Vec::new();
            for row in rows.rows::<(String,)>().map_err(|e| bad_rows("feed state", e))? {
                let (name,) = row.map_err(|e| bad_rows("feed state", e))?;
                let n = match name.strip_prefix(WATERMARK) {
                    Some("") => 0,
                    Some(rest) => match rest.strip_prefix('/').and_then(|n| n.parse().ok()) {
                        Some(n) => n,
                        None => continue,
                    },
                    None => continue,
                };
                if !held.contains(&n) {
                    out.push(n);
                }
            }
            out.sort_unstable();
            Ok(out)
        })
    }

    pub(crate) fn fanout_watermark_impl(&self, n: u16) -> Result<Option<u64>> {
        self.wait(self.state(&watermark_name(n)))
    }

    pub(crate) fn set_fanout_watermark_impl(&self, n: u16, watermark: u64) -> Result<()> {
        self.wait(async {
            self.session()
                .execute_unpaged(&self.fixed.state_put, (watermark_name(n), i(watermark)))
                .await
                .map_err(|e| driver("storing the fan-out watermark", e))?;
            Ok(())
        })
    }

    pub(crate) fn drop_fanout_watermark_impl(&self, n: u16) -> Result<()> {
        self.wait(async {
            self.session()
                .execute_unpaged(&self.fixed.state_delete, (watermark_name(n),))
                .await
                .map_err(|e| driver("dropping a fan-out watermark", e))?;
            Ok(())
        })
    }
}
