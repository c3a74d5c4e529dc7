//! Idempotency keys for the feed's writes: a retry with the same key and request is
//! answered with the first result and applies nothing again, also across a restart or a
//! crash; the same key with a different request is refused.
//!
//! The record (the request's fingerprint, its expiry and the first result) lives in the
//! feed database. Posts (outside write-back), follows and unfollows store it in the same
//! synced batch as the write, so a retry finds both or neither. Write-back posts store it
//! just before their journal append, and a retry that finds a record but no post applies
//! the post under the recorded id. Friendships live in the user store, another database:
//! their record is stored just after the write, so a crash between the two makes the retry
//! apply the change again, which leaves the same friendships (adding an existing friend or
//! removing an absent one changes nothing) and answers `changed: false`. A key's lookup and
//! write run under its stripe of a lock, so concurrent requests with one key apply once.
//! Records are remembered for `FeedConfig::idempotency_ttl`.

use kith_store::{Fence, IdempotencyRecord, MAX_IDEMPOTENCY_KEY_BYTES};
use tokio::sync::Mutex as AsyncMutex;
use xxhash_rust::xxh3::xxh3_64;

use super::Feed;
use crate::error::{Error, Result};
use crate::post::now_ms;
use crate::task::blocking;

/// The result of a write that may have been a retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Applied<T> {
    /// The result (the first one, for a retry).
    pub value: T,
    /// Whether this answered a retry from its idempotency record, applying nothing.
    pub replayed: bool,
}

/// The result stored by a friendship write's claim before it applies: neither `changed`
/// (1) nor unchanged (0) yet. A nonce follows it, so that two attempts' claims differ.
const CLAIMED: u8 = 2;

/// The results of a keyed follow or unfollow the store refused (409 `already_following`,
/// 404 `not_following`), each followed by the target: recorded, so that every attempt with
/// the key gets the refusal and none applies the write later.
const REFUSED_FOLLOWING: u8 = 3;
const REFUSED_NOT_FOLLOWING: u8 = 4;

/// How long an attempt that finds another's claim of its follow or unfollow key waits for
/// that attempt's answer before doing the write itself.
const OTHER_ATTEMPT_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// What an attempt found claiming its key.
enum Claim {
    /// A finished record: the request was answered.
    Done,
    /// This attempt holds the key.
    Mine,
    /// Another attempt's claim (its result), not answered.
    Others(Vec<u8>),
}

/// A key an attempt of a follow or unfollow holds: its claim's result, and whether it took
/// the key over from another attempt that claimed it and did not answer.
pub(super) struct Held {
    pub(super) marker: Vec<u8>,
    pub(super) taken_over: bool,
}

/// How many take-overs by other attempts an attempt waits out before it answers 503.
const MAX_TAKE_OVERS: u32 = 3;

/// How a follow or unfollow guards against applying twice.
pub(super) enum Once {
    /// Not at all: no idempotency key.
    Free,
    /// By a record stored atomically with the write (one process serialises the key).
    Recorded(IdempotencyRecord),
    /// By the key's record, read before each edge write, where several servers share the
    /// store (see [`Fence`]).
    Fenced { key: String, taken_over: bool },
}

impl Once {
    pub(super) fn fence(key: &str, taken_over: bool) -> Fence<'_> {
        Fence { key, answered, refused: refusal_recorded, taken_over }
    }
}

/// The record of a refused follow or unfollow, if `e` is one.
fn refusal(e: &Error) -> Option<Vec<u8>> {
    let (tag, target) = match e {
        Error::Store(kith_store::Error::AlreadyFollowing { target, .. }) => {
            (REFUSED_FOLLOWING, target)
        }
        Error::Store(kith_store::Error::NotFollowing { target, .. }) => {
            (REFUSED_NOT_FOLLOWING, target)
        }
        _ => return None,
    };
    let mut r = vec![tag];
    r.extend_from_slice(&target.to_le_bytes());
    Some(r)
}

/// The refusal a follow or unfollow record holds, if it holds one.
fn refused(uid: u64, first: &[u8]) -> Option<Error> {
    let (&tag, t) = first.split_first()?;
    let target = u64::from_le_bytes(t.try_into().ok()?);
    match tag {
        REFUSED_FOLLOWING => Some(kith_store::Error::AlreadyFollowing { uid, target }.into()),
        REFUSED_NOT_FOLLOWING => Some(kith_store::Error::NotFollowing { uid, target }.into()),
        _ => None,
    }
}

/// Whether `r` records a refused follow or unfollow.
pub(super) fn refusal_recorded(r: &IdempotencyRecord) -> bool {
    matches!(r.result.first(), Some(&REFUSED_FOLLOWING | &REFUSED_NOT_FOLLOWING))
}

/// Whether `r` is a live record of an attempt that answered (not a claim).
pub(super) fn answered(r: &IdempotencyRecord) -> bool {
    r.expires_ms > now_ms() && r.result.first() != Some(&CLAIMED)
}

/// A claim's result: [`CLAIMED`] and a nonce unique to the attempt.
fn claimed_marker() -> Vec<u8> {
    use std::hash::{BuildHasher, Hasher};
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    // RandomState is seeded randomly per process; the count tells this process's apart.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    let mut marker = vec![CLAIMED];
    marker.extend_from_slice(&h.finish().to_le_bytes());
    marker
}

/// A hash of a request's parts, each length-prefixed so that parts cannot run together.
pub(super) fn fingerprint(parts: &[&[u8]]) -> u64 {
    let mut bytes = Vec::new();
    for p in parts {
        bytes.extend_from_slice(&(p.len() as u64).to_le_bytes());
        bytes.extend_from_slice(p);
    }
    xxh3_64(&bytes)
}

/// Checks a client's key: 1 to 255 bytes of visible ASCII (as HTTP header values are).
fn check_key(key: &str) -> Result<()> {
    if key.is_empty() || key.len() > MAX_IDEMPOTENCY_KEY_BYTES {
        return Err(Error::Invalid(format!(
            "an idempotency key must have 1 to {MAX_IDEMPOTENCY_KEY_BYTES} bytes, got {}",
            key.len()
        )));
    }
    if !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Error::Invalid(format!(
            "idempotency key {key:?} has a byte that is not visible ASCII"
        )));
    }
    Ok(())
}

impl Feed {
    /// The lock stripe of a key, once the key is checked.
    pub(super) fn key_stripe(&self, key: &str) -> Result<&AsyncMutex<()>> {
        check_key(key)?;
        let i = xxh3_64(key.as_bytes()) as usize % self.key_stripes.len();
        Ok(&self.key_stripes[i])
    }

    /// The first result stored under `key` for this request, if a live record exists;
    /// `Error::IdempotencyKeyReused` if it is another request's.
    pub(super) async fn recorded(&self, key: &str, fingerprint: u64) -> Result<Option<Vec<u8>>> {
        let engine = self.engine.clone();
        let k = key.to_string();
        let Some(r) = blocking(move || engine.idempotency_record(&k)).await? else {
            return Ok(None);
        };
        if r.expires_ms <= now_ms() {
            return Ok(None);
        }
        if r.fingerprint != fingerprint {
            return Err(Error::IdempotencyKeyReused { key: key.to_string() });
        }
        Ok(Some(r.result))
    }

    /// Whether several servers share the store: then a key is claimed in the store before
    /// the write, since this process's stripe lock does not reach the others.
    pub(super) fn shared_store(&self) -> bool {
        self.engine.server_slots() > 1
    }

    /// Claims `record`'s key in the store for this request (see
    /// [`kith_store::Engine::claim_idempotency_record`]): `None` when this request holds
    /// it, else the result another attempt recorded (`Error::IdempotencyKeyReused` if that
    /// attempt was another request).
    pub(super) async fn claim(&self, record: IdempotencyRecord) -> Result<Option<Vec<u8>>> {
        let (key, fp) = (record.key.clone(), record.fingerprint);
        let engine = self.engine.clone();
        let Some(found) = blocking(move || engine.claim_idempotency_record(&record)).await? else {
            return Ok(None);
        };
        if found.fingerprint != fp {
            return Err(Error::IdempotencyKeyReused { key });
        }
        Ok(Some(found.result))
    }

    pub(super) fn record(
        &self,
        key: String,
        fingerprint: u64,
        result: Vec<u8>,
    ) -> IdempotencyRecord {
        let ttl = self.config.idempotency_ttl.as_millis() as u64;
        IdempotencyRecord { key, fingerprint, expires_ms: now_ms().saturating_add(ttl), result }
    }

    /// The result another attempt of this request answered with, if one has (a refusal of a
    /// follow or unfollow is returned as the error it answered).
    pub(super) async fn answered_elsewhere(&self, key: &str, fp: u64, uid: u64) -> Result<bool> {
        let Some(first) = self.recorded(key, fp).await? else {
            return Ok(false);
        };
        if let Some(e) = refused(uid, &first) {
            return Err(e);
        }
        Ok(first.first() != Some(&CLAIMED))
    }

    /// Claims `key` (on a store several servers share; a process alone is serialised by the
    /// stripe lock the caller holds) unless a finished record is stored under it:
    /// `None` when one is (replay), `Some(true)` when another attempt claimed it but has not
    /// finished, `Some(false)` when this one holds it.
    pub(super) async fn claim_unless_done(&self, key: &str, fp: u64) -> Result<Option<bool>> {
        Ok(match self.claim_as(key, fp, &claimed_marker()).await? {
            Claim::Done => None,
            Claim::Others(_) => Some(true),
            Claim::Mine => Some(false),
        })
    }

    /// [`Feed::claim_unless_done`] with the claim's result `marker`, telling the marker of
    /// another attempt's claim.
    async fn claim_as(&self, key: &str, fp: u64, marker: &[u8]) -> Result<Claim> {
        let found = match self.recorded(key, fp).await? {
            None if !self.shared_store() => return Ok(Claim::Mine),
            None => match self.claim(self.record(key.to_string(), fp, marker.to_vec())).await? {
                None => return Ok(Claim::Mine),
                Some(first) => first,
            },
            Some(first) => first,
        };
        Ok(if found.first() == Some(&CLAIMED) { Claim::Others(found) } else { Claim::Done })
    }

    /// [`Feed::claim_unless_done`] for a follow or unfollow: a recorded refusal is answered
    /// again (`Err`), and a claim another attempt holds is waited on for its answer, up to
    /// [`OTHER_ATTEMPT_WAIT`], so that all attempts with one key answer alike. Past that,
    /// this attempt takes the key over: it swaps that claim for its own, so that the other
    /// attempt, should it run on, can no longer store its answer over this one's.
    pub(super) async fn claim_or_answer(
        &self,
        key: &str,
        fp: u64,
        uid: u64,
    ) -> Result<Option<Held>> {
        let marker = claimed_marker();
        let mut deadline = tokio::time::Instant::now() + OTHER_ATTEMPT_WAIT;
        let mut swaps = 0;
        loop {
            let theirs = match self.claim_as(key, fp, &marker).await? {
                Claim::Mine => return Ok(Some(Held { marker, taken_over: false })),
                Claim::Done => {
                    let first = self.recorded(key, fp).await?.unwrap_or_default();
                    if let Some(e) = refused(uid, &first) {
                        return Err(e);
                    }
                    return Ok(None);
                }
                Claim::Others(theirs) => theirs,
            };
            if tokio::time::Instant::now() >= deadline {
                if !self.shared_store() {
                    return Ok(Some(Held { marker: theirs, taken_over: true }));
                }
                let engine = self.engine.clone();
                let mine = self.record(key.to_string(), fp, marker.clone());
                if blocking(move || engine.swap_idempotency_record(&theirs, &mine)).await? {
                    return Ok(Some(Held { marker, taken_over: true }));
                }
                // Answered or taken over by a third attempt since: wait for that one, a
                // few times at most.
                swaps += 1;
                if swaps >= MAX_TAKE_OVERS {
                    return Err(kith_store::Error::Unavailable(format!(
                        "other attempts of the request under idempotency key {key:?} kept \
                         taking it over without answering; retry with the key"
                    ))
                    .into());
                }
                deadline = tokio::time::Instant::now() + OTHER_ATTEMPT_WAIT;
                continue;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// Stores the refusal `e` of a follow or unfollow over this attempt's claim `marker`
    /// (see [`Feed::answer_over_claim`]), and answers it, or the answer to give instead.
    pub(super) async fn refusal_over_claim(
        &self,
        key: &str,
        fp: u64,
        uid: u64,
        marker: &[u8],
        e: Error,
    ) -> Result<Applied<()>> {
        let Some(r) = refusal(&e) else {
            return Err(e);
        };
        match self.answer_over_claim(key, fp, uid, marker, r).await? {
            None => Err(e),
            Some(instead) => Ok(instead),
        }
    }

    /// Stores `result` as the request's answer over this attempt's claim `marker`, by a
    /// compare-and-set, unless another attempt has taken the key over since: then the
    /// request's answer is that attempt's, and this one must neither replace it nor be lost
    /// under it (a plain write could be, to a take-over stamped later). `None` when stored,
    /// else the answer to give instead: the other attempt's, or 503 while it has not
    /// answered.
    pub(super) async fn answer_over_claim(
        &self,
        key: &str,
        fp: u64,
        uid: u64,
        marker: &[u8],
        result: Vec<u8>,
    ) -> Result<Option<Applied<()>>> {
        let (engine, theirs) = (self.engine.clone(), marker.to_vec());
        let record = self.record(key.to_string(), fp, result);
        if blocking(move || engine.swap_idempotency_record(&theirs, &record)).await? {
            return Ok(None);
        }
        if self.answered_elsewhere(key, fp, uid).await? {
            return Ok(Some(Applied { value: (), replayed: true }));
        }
        Err(kith_store::Error::Unavailable(format!(
            "the request under idempotency key {key:?} was taken over by another attempt, \
             which has not answered yet; retry with the key for its answer"
        ))
        .into())
    }

    /// Records `e`, if it is a refusal, under the key, so later attempts answer it too.
    pub(super) async fn record_refusal(&self, key: &str, fp: u64, e: &Error) -> Result<()> {
        if let Some(r) = refusal(e) {
            self.finish(self.record(key.to_string(), fp, r)).await?;
        }
        Ok(())
    }

    /// Stores a write's finished record over its claim.
    pub(super) async fn finish(&self, record: IdempotencyRecord) -> Result<()> {
        let engine = self.engine.clone();
        blocking(move || engine.put_idempotency_record(&record)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_separate_parts_and_keys_are_checked() {
        assert_ne!(fingerprint(&[b"ab", b"c"]), fingerprint(&[b"a", b"bc"]));
        assert_eq!(fingerprint(&[b"ab", b"c"]), fingerprint(&[b"ab", b"c"]));
        assert!(check_key("retry-1").is_ok());
        assert!(check_key("").is_err());
        assert!(check_key("a b").is_err());
        assert!(check_key(&"k".repeat(256)).is_err());
    }

    #[test]
    fn refusals_are_recorded_and_answered_again() {
        let e: Error = kith_store::Error::AlreadyFollowing { uid: 1, target: 9 }.into();
        let r = refusal(&e).unwrap();
        assert!(matches!(
            refused(1, &r),
            Some(Error::Store(kith_store::Error::AlreadyFollowing { uid: 1, target: 9 }))
        ));
        let e: Error = kith_store::Error::NotFollowing { uid: 1, target: u64::MAX }.into();
        assert!(matches!(
            refused(1, &refusal(&e).unwrap()),
            Some(Error::Store(kith_store::Error::NotFollowing { target: u64::MAX, .. }))
        ));
        // Successes and claims are not refusals.
        assert!(refused(1, &[]).is_none());
        assert!(refused(1, &claimed_marker()).is_none());
        assert!(refusal(&kith_store::Error::UnknownUser(3).into()).is_none());
    }
}
