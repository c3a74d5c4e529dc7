//! The feed's rules for posts: 53-bit time-ordered ids, content limits, and the opaque
//! cursors of feed pages. The post value and its stored form are the engine's
//! ([`kith_store::Post`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

pub(crate) use kith_store::Post;

use crate::error::{Error, Result};

/// The largest post content in bytes.
pub const MAX_CONTENT_BYTES: usize = 64 << 10;
/// Post ids and times are below this (2^53), so they are exact as JSON numbers and as Redis
/// sorted-set scores.
pub const POST_ID_LIMIT: u64 = 1 << 53;
/// Ids count milliseconds from 2025-01-01T00:00:00Z.
const EPOCH_MS: u64 = 1_735_689_600_000;
/// Low bits of an id that order posts within one millisecond.
const SEQ_BITS: u32 = 14;

/// Checks a post's content.
pub fn check_content(content: &str) -> Result<()> {
    if content.is_empty() {
        return Err(Error::Invalid("post content is empty".into()));
    }
    if content.len() > MAX_CONTENT_BYTES {
        return Err(Error::TooLarge {
            what: "post content bytes",
            got: content.len() as u64,
            limit: MAX_CONTENT_BYTES as u64,
        });
    }
    Ok(())
}

/// Checks a client-supplied post id and time: both within 1 to 2^53 - 1.
pub fn check_client_id(id: u64, ts_ms: u64) -> Result<()> {
    for (what, v) in [("post id", id), ("post ts_ms", ts_ms)] {
        if v == 0 || v >= POST_ID_LIMIT {
            return Err(Error::Invalid(format!(
                "{what} {v} is outside the id space 1 to {}",
                POST_ID_LIMIT - 1
            )));
        }
    }
    Ok(())
}

/// Now, in milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Hands out strictly increasing ids: the current millisecond in the high bits, or the
/// next one after the last id when the clock has not moved on (or moved back). With several
/// servers on one store, server `n` of `slots` hands out only ids congruent to `n` modulo
/// `slots`, so no two servers hand out one id.
#[derive(Debug)]
pub struct IdGen {
    last: AtomicU64,
    server: u64,
    slots: u64,
}

impl IdGen {
    /// Starts above `last`, the largest id already used, for server `server` of `slots`.
    pub fn new(last: u64, server: u16, slots: u16) -> IdGen {
        let slots = u64::from(slots.max(1));
        IdGen { last: AtomicU64::new(last), server: u64::from(server) % slots, slots }
    }

    /// Makes every later id larger than `id` (an id handed out elsewhere, such as a
    /// client's).
    pub fn observe(&self, id: u64) {
        self.last.fetch_max(id, Ordering::AcqRel);
    }

    /// The next id.
    pub fn next(&self) -> u64 {
        let from_clock = now_ms().saturating_sub(EPOCH_MS) << SEQ_BITS;
        let mut last = self.last.load(Ordering::Relaxed);
        loop {
            let at_least = from_clock.max(last + 1);
            let id = at_least + (self.server + self.slots - at_least % self.slots) % self.slots;
            match self.last.compare_exchange_weak(last, id, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return id,
                Err(seen) => last = seen,
            }
        }
    }
}

/// The opaque feed cursor for "older than this post".
pub fn encode_cursor(id: u64) -> String {
    format!("p{id:x}")
}

/// Reads a cursor made by [`encode_cursor`].
pub fn decode_cursor(cursor: &str) -> Result<u64> {
    cursor
        .strip_prefix('p')
        .and_then(|h| u64::from_str_radix(h, 16).ok())
        .filter(|&id| id > 0)
        .ok_or_else(|| Error::Invalid(format!("malformed feed cursor {cursor:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_increase_and_fit_53_bits() {
        let ids = IdGen::new(0, 0, 1);
        let mut last = 0;
        for _ in 0..100_000 {
            let id = ids.next();
            assert!(id > last && id < 1 << 53);
            last = id;
        }
        let ahead = IdGen::new(u64::from(u32::MAX) << 20, 0, 1);
        assert_eq!(ahead.next(), (u64::from(u32::MAX) << 20) + 1);
        ahead.observe(u64::from(u32::MAX) << 21);
        assert_eq!(ahead.next(), (u64::from(u32::MAX) << 21) + 1);
        // Server 5 of 64: every id congruent to 5, still increasing; another server's never.
        let (five, six) = (IdGen::new(1000, 5, 64), IdGen::new(1000, 6, 64));
        let mut last = 1000;
        for _ in 0..10_000 {
            let (a, b) = (five.next(), six.next());
            assert!(a > last && a % 64 == 5 && b % 64 == 6);
            last = a;
        }
        assert!(check_client_id(1, 1).is_ok());
        assert!(check_client_id(0, 1).is_err());
        assert!(check_client_id(1, POST_ID_LIMIT).is_err());
        assert!(check_client_id(POST_ID_LIMIT - 1, 5).is_ok());
    }

    #[test]
    fn cursors_round_trip_and_content_is_checked() {
        assert_eq!(decode_cursor(&encode_cursor(12345)).unwrap(), 12345);
        for bad in ["", "p", "pzz", "12", "p0"] {
            assert!(decode_cursor(bad).is_err(), "{bad}");
        }
        assert!(check_content("").is_err());
        assert!(check_content(&"x".repeat(MAX_CONTENT_BYTES + 1)).is_err());
    }
}
