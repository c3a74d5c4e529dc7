//! The `Idempotency-Key` request header of the write endpoints, and the answer's
//! `Idempotent-Replayed` header that marks a retry answered from its first result.

use axum::http::{HeaderMap, HeaderName, HeaderValue};

use crate::error::{ApiError, ApiResult};

/// The request header naming a write's idempotency key (1 to 255 visible ASCII bytes): a
/// retry with the same key and request gets the first answer and changes nothing; the key
/// with a different request is 422 `idempotency_key_reused`. Keys are remembered for 24
/// hours by default (`FeedConfig::idempotency_ttl`), across restarts and crashes.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";
/// The answer header, `true` when the answer is a retry's, from the first result.
pub const REPLAYED: &str = "idempotent-replayed";

/// The request's idempotency key, if it has one.
pub fn idempotency_key(headers: &HeaderMap) -> ApiResult<Option<String>> {
    let Some(v) = headers.get(IDEMPOTENCY_KEY) else { return Ok(None) };
    match v.to_str() {
        Ok(s) => Ok(Some(s.to_string())),
        Err(_) => Err(ApiError::bad_parameter(
            "the Idempotency-Key header must be visible ASCII".to_string(),
        )),
    }
}

/// The answer headers: `Idempotent-Replayed: true` for a replayed retry.
pub fn replayed_headers(replayed: bool) -> HeaderMap {
    let mut h = HeaderMap::new();
    if replayed {
        h.insert(HeaderName::from_static(REPLAYED), HeaderValue::from_static("true"));
    }
    h
}
