//! The feed database's bookkeeping beside follows and posts: the fan-out watermark, pending
//! re-pushes and idempotency records.
//!
//! Keys (in the feed database, see `feed_db.rs`):
//! - `W` — the fan-out watermark, a big-endian u64: every post with an id at or below it has
//!   been delivered to its followers' timelines. The feed redoes the fan-out of the posts
//!   above it when it starts; fan-out is idempotent, so a watermark that lags (a raise lost
//!   in a crash) only costs repeated work, never a missing post.
//! - `Q author` — a pending re-push: under hybrid feeds the author stopped being a celebrity
//!   (an unfollow brought its followers to the threshold), so its recent posts, pulled until
//!   then, must be added to its followers' timelines. Stored in the unfollow's own batch;
//!   the value is a token (u64, big-endian) that changes each time the marker is stored, so
//!   a re-push removes the marker only if no later crossing stored it again.
//! - `I key` — an idempotency record: the request's fingerprint (u64), when the record
//!   expires (u64 milliseconds since the Unix epoch) and the first result's bytes, the two
//!   integers little-endian. It is written in the same synced batch as the write it
//!   records, so after any crash a retry finds either both or neither.
//! - `E expiry key` — the same record indexed by expiry (big-endian), so expired records are
//!   found oldest first and removed a few at a time by later records' batches.

use rocksdb::{DB, Direction, IteratorMode, ReadOptions, WriteBatch, WriteOptions};

use crate::error::{Error, Result};

const WATERMARK: u8 = b'W';
const REPUSH: u8 = b'Q';
const RECORD: u8 = b'I';
const EXPIRY: u8 = b'E';

/// The longest idempotency key accepted, in bytes.
pub const MAX_IDEMPOTENCY_KEY_BYTES: usize = 255;
/// Expired records removed by each new record's batch, at most: enough to keep up with any
/// rate of new records, few enough to keep a write's batch small.
const EXPIRE_PER_WRITE: usize = 4;

/// What the first request under an idempotency key did, kept so a retry can be answered
/// with it instead of being applied again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdempotencyRecord {
    /// The client's key (1 to [`MAX_IDEMPOTENCY_KEY_BYTES`] bytes).
    pub key: String,
    /// A hash of the request (operation and arguments): a retry must match it.
    pub fingerprint: u64,
    /// When the record may be forgotten, milliseconds since the Unix epoch.
    pub expires_ms: u64,
    /// The first result, in the caller's encoding.
    pub result: Vec<u8>,
}

/// What one attempt of a keyed follow or unfollow checks before each edge it writes, when
/// other attempts of the request may run on other servers (see
/// [`Engine::follow_unless_answered`](crate::Engine::follow_unless_answered)).
#[derive(Clone, Copy, Debug)]
pub struct Fence<'a> {
    /// The request's idempotency key.
    pub key: &'a str,
    /// Whether a record found under the key is another attempt's answer.
    pub answered: fn(&IdempotencyRecord) -> bool,
    /// Whether such an answer is a refusal, which applied nothing.
    pub refused: fn(&IdempotencyRecord) -> bool,
    /// Whether this attempt took over from another that claimed the key and did not answer:
    /// a target found followed already then counts as that attempt's, not as a refusal.
    pub taken_over: bool,
}

fn record_key(key: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + key.len());
    k.push(RECORD);
    k.extend_from_slice(key.as_bytes());
    k
}

fn expiry_key(expires_ms: u64, key: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(9 + key.len());
    k.push(EXPIRY);
    k.extend_from_slice(&expires_ms.to_be_bytes());
    k.extend_from_slice(key.as_bytes());
    k
}

fn now_ms() -> u64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.map_or(0, |d| d.as_millis() as u64)
}

/// Adds `record` to `batch`, replacing an older record under the same key, and removes a
/// few records that expired before now.
pub(crate) fn add_record(
    db: &DB,
    batch: &mut WriteBatch,
    record: &IdempotencyRecord,
) -> Result<()> {
    if record.key.is_empty() || record.key.len() > MAX_IDEMPOTENCY_KEY_BYTES {
        return Err(Error::Invalid(format!(
            "an idempotency key must have 1 to {MAX_IDEMPOTENCY_KEY_BYTES} bytes, got {}",
            record.key.len()
        )));
    }
    if let Some(old) = idempotency_record(db, &record.key)? {
        batch.delete(expiry_key(old.expires_ms, &old.key));
    }
    let mut value = Vec::with_capacity(16 + record.result.len());
    value.extend_from_slice(&record.fingerprint.to_le_bytes());
    value.extend_from_slice(&record.expires_ms.to_le_bytes());
    value.extend_from_slice(&record.result);
    batch.put(record_key(&record.key), value);
    batch.put(expiry_key(record.expires_ms, &record.key), []);
    let mut read = ReadOptions::default();
    read.set_iterate_upper_bound(expiry_key(now_ms(), ""));
    let it = db.iterator_opt(IteratorMode::From(&[EXPIRY], Direction::Forward), read);
    for item in it.take(EXPIRE_PER_WRITE) {
        let (k, _) = item?;
        let key = &k[9..];
        if key != record.key.as_bytes() {
            batch.delete(&k);
            let mut rk = vec![RECORD];
            rk.extend_from_slice(key);
            batch.delete(rk);
        }
    }
    Ok(())
}

/// The fan-out watermark, `None` if none was ever stored.
pub(crate) fn fanout_watermark(db: &DB) -> Result<Option<u64>> {
    match db.get_pinned([WATERMARK])? {
        None => Ok(None),
        Some(v) => match <[u8; 8]>::try_from(&v[..]) {
            Ok(b) => Ok(Some(u64::from_be_bytes(b))),
            Err(_) => Err(Error::Corrupt {
                key: "W (the feed database's fan-out watermark)".into(),
                reason: format!("{} bytes, not 8", v.len()),
            }),
        },
    }
}

/// Stores the fan-out watermark; synced only when `sync` (lowering it must be durable
/// before the posts it uncovers are acknowledged; a lost raise only repeats work).
pub(crate) fn set_fanout_watermark(db: &DB, watermark: u64, sync: bool) -> Result<()> {
    let mut w = WriteOptions::default();
    w.set_sync(sync);
    Ok(db.put_opt([WATERMARK], watermark.to_be_bytes(), &w)?)
}

pub(crate) fn repush_key(author: u64) -> [u8; 9] {
    let mut k = [REPUSH; 9];
    k[1..].copy_from_slice(&author.to_be_bytes());
    k
}

fn repush_token(author: u64, v: &[u8]) -> Result<u64> {
    match <[u8; 8]>::try_from(v) {
        Ok(b) => Ok(u64::from_be_bytes(b)),
        Err(_) => Err(Error::Corrupt {
            key: format!("Q{author} (a pending re-push)"),
            reason: format!("{} bytes, not 8", v.len()),
        }),
    }
}

/// The token of the author's pending re-push, if one is stored.
pub(crate) fn pending_repush(db: &DB, author: u64) -> Result<Option<u64>> {
    match db.get_pinned(repush_key(author))? {
        None => Ok(None),
        Some(v) => repush_token(author, &v).map(Some),
    }
}

/// Every pending re-push's author, ascending.
pub(crate) fn pending_repushes(db: &DB) -> Result<Vec<u64>> {
    let mut read = ReadOptions::default();
    read.set_iterate_upper_bound(vec![REPUSH + 1]);
    let mut out = Vec::new();
    for item in db.iterator_opt(IteratorMode::From(&[REPUSH], Direction::Forward), read) {
        let (k, v) = item?;
        let author = match <[u8; 8]>::try_from(&k[1..]) {
            Ok(b) => u64::from_be_bytes(b),
            Err(_) => {
                return Err(Error::Corrupt {
                    key: format!("{k:?} (a pending re-push)"),
                    reason: format!("a {}-byte key, not 9", k.len()),
                });
            }
        };
        repush_token(author, &v)?;
        out.push(author);
    }
    Ok(out)
}

/// The record under `key`, expired or not (the caller compares `expires_ms` with its
/// clock, so expiry is exact however far the clean-up lags).
pub(crate) fn idempotency_record(db: &DB, key: &str) -> Result<Option<IdempotencyRecord>> {
    let Some(v) = db.get_pinned(record_key(key))? else { return Ok(None) };
    if v.len() < 16 {
        return Err(Error::Corrupt {
            key: format!("I{key:?} (an idempotency record)"),
            reason: format!("{} bytes, shorter than its 16-byte header", v.len()),
        });
    }
    let word = |i: usize| u64::from_le_bytes(v[i..i + 8].try_into().expect("8 bytes"));
    Ok(Some(IdempotencyRecord {
        key: key.to_string(),
        fingerprint: word(0),
        expires_ms: word(8),
        result: v[16..].to_vec(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feed_db::FeedDb;

    #[test]
    fn watermark_and_records_round_trip_and_expire() {
        let dir = tempfile::tempdir().unwrap();
        let db = FeedDb::open(dir.path()).unwrap();
        assert_eq!(db.fanout_watermark().unwrap(), None);
        db.set_fanout_watermark(42, true).unwrap();
        assert_eq!(db.fanout_watermark().unwrap(), Some(42));
        let rec = |key: &str, expires_ms: u64| IdempotencyRecord {
            key: key.into(),
            fingerprint: 7,
            expires_ms,
            result: vec![1, 2, 3],
        };
        db.put_idempotency_record(&rec("old", 1)).unwrap();
        assert_eq!(db.idempotency_record("old").unwrap(), Some(rec("old", 1)));
        let later = now_ms() + 60_000;
        db.put_idempotency_record(&rec("new", later)).unwrap();
        assert_eq!(db.idempotency_record("old").unwrap(), None, "expired, so removed");
        assert_eq!(db.idempotency_record("new").unwrap(), Some(rec("new", later)));
        let long = "k".repeat(MAX_IDEMPOTENCY_KEY_BYTES + 1);
        assert!(matches!(db.put_idempotency_record(&rec(&long, later)), Err(Error::Invalid(_))));
        drop(db);
        let db = FeedDb::open(dir.path()).unwrap();
        assert_eq!(db.fanout_watermark().unwrap(), Some(42));
        assert_eq!(db.idempotency_record("new").unwrap(), Some(rec("new", later)));
    }
}
