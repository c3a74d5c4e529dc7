//! The feed's reads and bookkeeping on the cluster: pages of the follow lists, the fan-out
//! watermark and idempotency records. Follow edits are in `follows`.

use futures_util::StreamExt;
use kith_store::{Error as StoreError, IdempotencyRecord, MAX_IDEMPOTENCY_KEY_BYTES, Result};

use super::intents::now_ms;
use super::rows::{key, uid};
use super::{CassandraStore, Writes, bad_rows, i, u};
use crate::error::driver;

/// The longest TTL a record gets: Cassandra's largest (20 years), but short enough that its
/// cells expire before 2038-01-19, while a deletion time still fits a signed 32-bit count of
/// seconds. Past that, Cassandra 5.0 counts the size of a Paxos prepare response carrying
/// such a cell wrongly and drops it (`InvalidSerializedSizeException` in its log), so a
/// second claim of the key times out every time: with 20-year TTLs the engine test's race
/// of two servers failed within 8 to 19 rounds, with this cap it passes.
fn max_ttl_s() -> u64 {
    const MARGIN_S: u64 = 86_400;
    (i32::MAX as u64).saturating_sub(now_ms() / 1000 + MARGIN_S).clamp(60, 630_720_000)
}

impl CassandraStore {
    pub(super) fn next_token(&self) -> u64 {
        self.next_token.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    pub(crate) fn push_record(&self, w: &mut Writes, r: &IdempotencyRecord) -> Result<()> {
        let (key, ttl) = self.record_key_ttl(r)?;
        w.push(
            &self.fixed.record_put,
            (key, i(r.fingerprint), i(r.expires_ms), r.result.clone(), ttl),
        );
        Ok(())
    }

    /// A record's key, checked, and its time to live: kept a minute past its expiry (the
    /// caller compares the expiry itself), then Cassandra drops it.
    fn record_key_ttl(&self, r: &IdempotencyRecord) -> Result<(String, i32)> {
        if r.key.is_empty() || r.key.len() > MAX_IDEMPOTENCY_KEY_BYTES {
            return Err(StoreError::Invalid(format!(
                "an idempotency key must have 1 to {MAX_IDEMPOTENCY_KEY_BYTES} bytes, got {}",
                r.key.len()
            )));
        }
        let ttl = (r.expires_ms.saturating_sub(now_ms()) / 1000 + 60).min(max_ttl_s()) as i32;
        Ok((r.key.clone(), ttl))
    }

    /// A page (offset, limit) of `uid`'s followees or followers, ascending.
    async fn follow_page(
        &self,
        followers: bool,
        uid: u64,
        from: u64,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<u64>> {
        let statement =
            if followers { &self.fixed.followers_from } else { &self.fixed.followees_from };
        let want = offset.saturating_add(limit).min(i32::MAX as usize) as i32;
        if limit == 0 {
            return Ok(Vec::new());
        }
        if followers {
            self.finish_pending(uid).await?;
        }
        let pager = self
            .session()
            .execute_iter(statement.clone(), (key(uid), key(from), want))
            .await
            .map_err(|e| StoreError::Unavailable(format!("reading follows: {e}")))?;
        let mut rows = pager.rows_stream::<(i64,)>().map_err(|e| bad_rows("follows", e))?;
        let mut out = Vec::new();
        let mut skipped = 0;
        while let Some(row) = rows.next().await {
            let (k,) = row.map_err(|e| StoreError::Unavailable(format!("reading follows: {e}")))?;
            if skipped < offset {
                skipped += 1;
                continue;
            }
            out.push(self::uid(k));
            if out.len() == limit {
                break;
            }
        }
        Ok(out)
    }

    pub(crate) fn followees_impl(&self, uid: u64, offset: usize, limit: usize) -> Result<Vec<u64>> {
        self.wait(self.follow_page(false, uid, 0, offset, limit))
    }

    pub(crate) fn followers_impl(&self, uid: u64, offset: usize, limit: usize) -> Result<Vec<u64>> {
        self.wait(self.follow_page(true, uid, 0, offset, limit))
    }

    pub(crate) fn followers_from_impl(
        &self,
        uid: u64,
        from: u64,
        limit: usize,
    ) -> Result<Vec<u64>> {
        self.wait(self.follow_page(true, uid, from, 0, limit))
    }

    pub(crate) fn idempotency_record_impl(&self, key: &str) -> Result<Option<IdempotencyRecord>> {
        self.wait(self.stored_record(key))
    }

    /// The idempotency record under `key` (QUORUM), if one is stored.
    pub(super) async fn stored_record(&self, key: &str) -> Result<Option<IdempotencyRecord>> {
        let rows = self
            .session()
            .execute_unpaged(&self.fixed.record_get, (key,))
            .await
            .map_err(|e| driver("reading an idempotency record", e))?
            .into_rows_result()
            .map_err(|e| bad_rows("idempotency record", e))?;
        Ok(rows
            .maybe_first_row::<(Option<i64>, Option<i64>, Option<Vec<u8>>)>()
            .map_err(|e| bad_rows("idempotency record", e))?
            .map(|(f, e, r)| IdempotencyRecord {
                key: key.to_string(),
                fingerprint: f.map_or(0, u),
                expires_ms: e.map_or(0, u),
                result: r.unwrap_or_default(),
            }))
    }

    /// Stores `record` with a lightweight transaction unless a record is stored under its
    /// key (one Paxos round: every server sees one winner); returns the one found. A found
    /// record past its expiry is replaced by another lightweight transaction, conditioned on
    /// that expiry, so that of two attempts finding it one replaces it.
    ///
    /// A Paxos round that times out may or may not have applied (two claims of one key
    /// contend, and a slow replica delays the commit), so it is sent again for up to
    /// [`CLAIM_WITHIN`]: a later round completes an earlier one left in progress, and finding
    /// this very record (its expiry is the attempt's own clock reading, and its result holds
    /// the attempt's id or nonce) means an earlier round applied it.
    pub(crate) fn claim_idempotency_record_impl(
        &self,
        record: &IdempotencyRecord,
    ) -> Result<Option<IdempotencyRecord>> {
        let (key, ttl) = self.record_key_ttl(record)?;
        let (fp, expires) = (i(record.fingerprint), i(record.expires_ms));
        self.wait(async {
            let deadline = tokio::time::Instant::now() + CLAIM_WITHIN;
            let mut pause = std::time::Duration::from_millis(50);
            loop {
                let sent = async {
                    let rows = self
                        .session()
                        .execute_unpaged(
                            &self.fixed.record_claim,
                            (&key, fp, expires, &record.result, ttl),
                        )
                        .await
                        .map_err(|e| driver("claiming an idempotency key", e))?
                        .into_rows_result()
                        .map_err(|e| bad_rows("idempotency claim", e))?;
                    let found = lwt_record(&rows, &record.key)?;
                    let Some(old) = found.clone().filter(|r| r.expires_ms <= now_ms()) else {
                        return Ok(found);
                    };
                    let rows = self
                        .session()
                        .execute_unpaged(
                            &self.fixed.record_replace,
                            (ttl, fp, expires, &record.result, &key, i(old.expires_ms)),
                        )
                        .await
                        .map_err(|e| driver("replacing an expired idempotency record", e))?
                        .into_rows_result()
                        .map_err(|e| bad_rows("idempotency record replacement", e))?;
                    // Not applied: another attempt replaced it first; claim again.
                    Ok(if super::rows::lwt_outcome(&rows, "expires_ms")?.0 {
                        None
                    } else {
                        Some(old)
                    })
                }
                .await;
                match sent {
                    Err(StoreError::Unavailable(_))
                        if tokio::time::Instant::now() + pause < deadline =>
                    {
                        tokio::time::sleep(pause).await;
                        pause *= 2;
                    }
                    // This very record: an earlier round of this attempt applied it (sent
                    // again here, or by the driver through another coordinator).
                    Ok(Some(r)) if r == *record => return Ok(None),
                    // Another attempt replaced the expired record first: claim again (within
                    // the same bound, should the servers' clocks disagree on expiry).
                    Ok(Some(r))
                        if r.expires_ms <= now_ms() && tokio::time::Instant::now() < deadline => {}
                    sent => return sent,
                }
            }
        })
    }

    /// Stores `record` by a lightweight transaction conditioned on the key's result being
    /// `expected` (see [`kith_store::Engine::swap_idempotency_record`]). Sent once: a round
    /// that times out is unknown, and answered as unavailable.
    pub(crate) fn swap_idempotency_record_impl(
        &self,
        expected: &[u8],
        record: &IdempotencyRecord,
    ) -> Result<bool> {
        let (key, ttl) = self.record_key_ttl(record)?;
        let values =
            (ttl, i(record.fingerprint), i(record.expires_ms), &record.result, &key, expected);
        self.wait(async {
            let rows = self
                .session()
                .execute_unpaged(&self.fixed.record_swap, values)
                .await
                .map_err(|e| driver("swapping an idempotency record", e))?
                .into_rows_result()
                .map_err(|e| bad_rows("idempotency record swap", e))?;
            Ok(super::rows::lwt_outcome(&rows, "result")?.0)
        })
    }

    /// Stores a finished record over whatever is under its key, the claim included. The
    /// claim was written by a lightweight transaction at its Paxos ballot's timestamp, from
    /// its coordinator's clock: a record written at this coordinator's clock would lose to
    /// a claim made through a node whose clock ran ahead, and every later attempt would
    /// find the key still claimed and apply the write again (a follow undone by a late
    /// second unfollow, in `skew-cassandra` trials). So it is written just past the
    /// stored cell's timestamp when that is ahead of this server's clock.
    pub(crate) fn put_idempotency_record_impl(&self, record: &IdempotencyRecord) -> Result<()> {
        let (key, ttl) = self.record_key_ttl(record)?;
        self.wait(async {
            let rows = self
                .session()
                .execute_unpaged(&self.fixed.record_written, (&key,))
                .await
                .map_err(|e| driver("reading an idempotency record's timestamp", e))?
                .into_rows_result()
                .map_err(|e| bad_rows("idempotency record", e))?;
            let stored = rows
                .maybe_first_row::<(Option<i64>,)>()
                .map_err(|e| bad_rows("idempotency record", e))?
                .and_then(|(t,)| t);
            let at = record_timestamp(stored, now_us());
            let values =
                (&key, i(record.fingerprint), i(record.expires_ms), &record.result, at, ttl);
            self.session()
                .execute_unpaged(&self.fixed.record_put_at, values)
                .await
                .map_err(|e| driver("storing an idempotency record", e))?;
            Ok(())
        })
    }
}

/// The write timestamp (µs) of a record stored over a cell written at `stored`: this
/// server's clock, or just past the cell when that is ahead.
fn record_timestamp(stored: Option<i64>, now_us: i64) -> i64 {
    stored.map_or(now_us, |t| now_us.max(t.saturating_add(1)))
}

/// This server's clock in microseconds since the epoch.
fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// How long a claim of an idempotency key goes on sending Paxos rounds that time out (see
/// `claim_idempotency_record_impl`), 50 ms, 100 ms, 200 ms, … apart.
const CLAIM_WITHIN: std::time::Duration = std::time::Duration::from_secs(8);

/// The record a lightweight transaction on the idempotency table found (`None`: it applied).
fn lwt_record(
    rows: &scylla::response::query_result::QueryRowsResult,
    key: &str,
) -> Result<Option<IdempotencyRecord>> {
    use scylla::value::CqlValue;
    let row =
        rows.first_row::<scylla::value::Row>().map_err(|e| bad_rows("idempotency claim", e))?;
    let specs = rows.column_specs();
    let col = |name: &str| specs.get_by_name(name).and_then(|(k, _)| row.columns[k].as_ref());
    match col("[applied]") {
        Some(CqlValue::Boolean(true)) => return Ok(None),
        Some(CqlValue::Boolean(false)) => {}
        _ => return Err(bad_rows("idempotency claim", "no [applied] column")),
    }
    let big = |name: &str| match col(name) {
        Some(CqlValue::BigInt(v)) => u(*v),
        _ => 0,
    };
    let result = match col("result") {
        Some(CqlValue::Blob(b)) => b.clone(),
        _ => Vec::new(),
    };
    Ok(Some(IdempotencyRecord {
        key: key.to_string(),
        fingerprint: big("fingerprint"),
        expires_ms: big("expires_ms"),
        result,
    }))
}

#[cfg(test)]
mod tests {
    use super::{max_ttl_s, now_ms, record_timestamp};

    #[test]
    fn a_record_is_stamped_past_a_claim_from_a_clock_ahead() {
        assert_eq!(record_timestamp(None, 1_000), 1_000);
        assert_eq!(record_timestamp(Some(400), 1_000), 1_000);
        assert_eq!(record_timestamp(Some(60_000_000), 1_000), 60_000_001);
        assert_eq!(record_timestamp(Some(i64::MAX), 1_000), i64::MAX);
    }

    #[test]
    fn records_expire_before_deletion_times_overflow_32_bits() {
        let ttl = max_ttl_s();
        assert!(now_ms() / 1000 + ttl < i32::MAX as u64, "a {ttl} s TTL ends past 2038");
        assert!(ttl >= 60);
    }
}
