//! Server numbers: several feed servers share one store, each under a number it holds by a
//! lease (a row of `servers`, taken and renewed by lightweight transactions and judged
//! lapsed by watching it, `leases.rs`, so two live servers never hold one number). A server
//! hands out post ids congruent to its number, so ids never collide, and keeps its own
//! fan-out watermark (`watermarks.rs`).

use std::time::{Duration, Instant};

use kith_store::Result;

use super::leases::{Watch, Watched, split, stamp};
use super::rows::lwt_text;
use super::{CassandraStore, bad_rows};
use crate::error::driver;

/// Server numbers a store hands out (and the modulus of post ids).
pub(crate) const SLOTS: u16 = 64;

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
            let mut rows = self.servers_watched(lease).await?;
            for watched_again in [false, true] {
                if watched_again {
                    // Every number has a row, none yet watched for the lease: rows of
                    // servers that stopped without releasing theirs lapse once watched
                    // that long, so a claim for any number watches once more.
                    tokio::time::sleep(lease).await;
                    rows = self.servers_watched(lease).await?;
                }
                if let Some(n) = self.claim_among(owner, &candidates, &rows).await? {
                    return Ok(Some(n));
                }
                if only.is_some() || rows.iter().any(|r| r.lapsed) {
                    break;
                }
            }
            Ok(None)
        })
    }

    /// One pass of a claim over the rows as watched: a number this owner already holds
    /// (an earlier claim of it timed out but was applied: the caller tries again after
    /// such a timeout), then numbers no one holds, then those whose holder stopped
    /// renewing. Each success writes a value of its own, after the caller's deadline began.
    async fn claim_among(
        &self,
        owner: &str,
        candidates: &[u16],
        rows: &[Watched],
    ) -> Result<Option<u16>> {
        let candidate = |r: &&Watched| candidates.contains(&r.n);
        for r in rows.iter().filter(candidate).filter(|r| split(&r.value).0 == owner) {
            if self.switch_server(r.n, owner, &r.value).await? {
                return Ok(Some(r.n));
            }
        }
        for &n in candidates.iter().filter(|&&n| !rows.iter().any(|r| r.n == n)) {
            let value = stamp(owner, self.watch().next_beat());
            let got = self
                .session()
                .execute_unpaged(&self.fixed.server_claim, (i32::from(n), &value))
                .await
                .map_err(|e| driver("claiming a server number", e))?
                .into_rows_result()
                .map_err(|e| bad_rows("server claim", e))?;
            if lwt_text(&got, "owner")?.0 {
                self.watch().hold(n, value);
                return Ok(Some(n));
            }
        }
        for r in rows.iter().filter(candidate).filter(|r| r.lapsed) {
            if self.switch_server(r.n, owner, &r.value).await? {
                return Ok(Some(r.n));
            }
        }
        Ok(None)
    }

    pub(crate) fn renew_server_impl(&self, n: u16, owner: &str, lease: Duration) -> Result<bool> {
        self.wait(async {
            let Some(held) = self.held_value(n, owner, lease).await? else { return Ok(false) };
            self.switch_server(n, owner, &held).await
        })
    }

    /// The value `owner` holds `n` by: the one this process last wrote, else the row's if
    /// it is `owner`'s.
    async fn held_value(&self, n: u16, owner: &str, lease: Duration) -> Result<Option<String>> {
        if let Some(v) = self.watch().mine(n, owner) {
            return Ok(Some(v));
        }
        Ok(self
            .servers_watched(lease)
            .await?
            .into_iter()
            .find(|r| r.n == n && split(&r.value).0 == owner)
            .map(|r| r.value))
    }

    /// Sets `n`'s value to a new one of `owner`'s if it still holds `from`; true if `n` is
    /// `owner`'s afterwards. Another value of `owner`'s (a renewal whose answer was lost,
    /// applied all the same) is renewed from in turn; each round writes a beat never
    /// written before, so the value read back is this round's only if it is its own.
    async fn switch_server(&self, n: u16, owner: &str, from: &str) -> Result<bool> {
        let mut from = from.to_string();
        for _ in 0..2 {
            let value = stamp(owner, self.watch().next_beat());
            let rows = self
                .session()
                .execute_unpaged(&self.fixed.server_switch, (&value, i32::from(n), &from))
                .await
                .map_err(|e| driver("renewing a server number", e))?
                .into_rows_result()
                .map_err(|e| bad_rows("server renewal", e))?;
            match lwt_text(&rows, "owner")? {
                (true, _) => {
                    self.watch().hold(n, value);
                    return Ok(true);
                }
                (false, Some(now)) if now == value => {
                    self.watch().hold(n, value);
                    return Ok(true);
                }
                (false, Some(now)) if split(&now).0 == owner => from = now,
                (false, _) => break,
            }
        }
        self.watch().let_go(n);
        Ok(false)
    }

    pub(crate) fn release_server_impl(&self, n: u16, owner: &str) -> Result<()> {
        self.wait(async {
            let Some(mut value) = self.held_value(n, owner, Duration::ZERO).await? else {
                return Ok(());
            };
            // A renewal that landed after the value was read: release from its value.
            for _ in 0..2 {
                let rows = self
                    .session()
                    .execute_unpaged(&self.fixed.server_release, (i32::from(n), &value))
                    .await
                    .map_err(|e| driver("releasing a server number", e))?
                    .into_rows_result()
                    .map_err(|e| bad_rows("server release", e))?;
                match lwt_text(&rows, "owner")? {
                    (false, Some(now)) if split(&now).0 == owner && now != value => value = now,
                    _ => break,
                }
            }
            self.watch().let_go(n);
            Ok(())
        })
    }

    fn watch(&self) -> std::sync::MutexGuard<'_, Watch> {
        self.leases.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every row of `servers`, watched ([`Watch::observe`]).
    pub(super) async fn servers_watched(&self, lease: Duration) -> Result<Vec<Watched>> {
        let rows = self.servers_held().await?;
        Ok(self.watch().observe(&rows, Instant::now(), lease))
    }

    /// Every row of `servers`: numbers held or once held by a server that did not release
    /// them, with their values (at most [`SLOTS`] rows: read unpaged).
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
}
