//! Parker's `exists`, users' data blocks as raw bytes (whole, or a byte range), and Bondhu's
//! "list all friends' data": each friend's first bytes, a page at a time, in the engine's
//! layout order.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use kith_store::{MAX_DATA_BYTES, MAX_PAGE};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{Path, Query};
use crate::state::AppState;
use crate::users::{engine_call, page_limit};

/// Whether a user exists.
#[derive(Debug, Serialize, ToSchema)]
pub struct ExistsJson {
    /// The user asked about.
    pub uid: u64,
    /// Whether the store has the user.
    pub exists: bool,
}

/// Whether the user exists: 200 either way (Parker's `exists`).
#[utoipa::path(get, path = "/users/{uid}/exists", tag = "users",
    params(("uid" = u64, Path, description = "User id")),
    responses((status = 200, body = ExistsJson)))]
pub async fn exists(
    State(s): State<AppState>,
    Path(uid): Path<u64>,
) -> ApiResult<axum::Json<ExistsJson>> {
    let exists = engine_call(&s, move |e| e.contains(uid)).await?;
    Ok(axum::Json(ExistsJson { uid, exists }))
}

/// A single byte range of `Range: bytes=...`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ByteRange {
    /// `a-b` or `a-` (to the end).
    From(u64, Option<u64>),
    /// `-n`: the last n bytes.
    Suffix(u64),
}

/// Parses a `Range` header. `Ok(None)` means "serve the whole block": no header, another
/// unit, or several ranges (which a server may ignore); a malformed byte range is an error.
fn parse_range(headers: &HeaderMap) -> ApiResult<Option<ByteRange>> {
    let Some(value) = headers.get(header::RANGE) else { return Ok(None) };
    let bad = || {
        ApiError::new(
            StatusCode::RANGE_NOT_SATISFIABLE,
            "range_not_satisfiable",
            format!("Range {value:?}: expected bytes=a-b, bytes=a- or bytes=-n"),
        )
    };
    let text = value.to_str().map_err(|_| bad())?.trim();
    let Some(spec) = text.strip_prefix("bytes=") else { return Ok(None) };
    if spec.contains(',') {
        return Ok(None);
    }
    let (a, b) = spec.trim().split_once('-').ok_or_else(bad)?;
    let num = |s: &str| s.trim().parse::<u64>().map_err(|_| bad());
    Ok(Some(match (a.trim().is_empty(), b.trim().is_empty()) {
        (true, true) => return Err(bad()),
        (true, false) => ByteRange::Suffix(num(b)?),
        (false, true) => ByteRange::From(num(a)?, None),
        (false, false) => {
            let (a, b) = (num(a)?, num(b)?);
            if b < a {
                return Err(bad());
            }
            ByteRange::From(a, Some(b))
        }
    }))
}

/// The bytes `first..=last` a range selects of a block of `len` bytes, or `None` if none.
fn resolve(range: ByteRange, len: u64) -> Option<(u64, u64)> {
    match range {
        ByteRange::From(a, _) if a >= len => None,
        ByteRange::From(a, b) => Some((a, b.map_or(len - 1, |b| b.min(len - 1)))),
        ByteRange::Suffix(0) => None,
        ByteRange::Suffix(_) if len == 0 => None,
        ByteRange::Suffix(n) => Some((len.saturating_sub(n), len - 1)),
    }
}

/// What a data read answers with.
enum Part {
    /// No range asked for: the whole block.
    Whole(Vec<u8>),
    /// The range's first byte, and its bytes.
    Range(u64, Vec<u8>),
    /// The range selects nothing of the block.
    Outside,
}

/// The data block as `application/octet-stream`; with `Range: bytes=a-b` (or `a-`, or
/// `-n`), 206 and those bytes. A range read reads the user's record for the block's length
/// and the block up to the range's end.
#[utoipa::path(get, path = "/users/{uid}/data", tag = "users",
    params(("uid" = u64, Path, description = "User id"),
        ("Range" = Option<String>, Header, description = "bytes=a-b, bytes=a- or bytes=-n")),
    responses((status = 200, description = "The whole block", content_type = "application/octet-stream"),
        (status = 206, description = "The range asked for", content_type = "application/octet-stream"),
        (status = 404, body = ErrorBody), (status = 416, body = ErrorBody)))]
pub async fn get_data(
    State(s): State<AppState>,
    Path(uid): Path<u64>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let range = parse_range(&headers)?;
    let (len, part) = engine_call(&s, move |e| {
        let Some(range) = range else {
            let data = e.get_data(uid, None)?;
            return Ok((data.len() as u64, Part::Whole(data)));
        };
        let len = e.get_user(uid)?.data_bytes;
        let Some((first, last)) = resolve(range, len) else { return Ok((len, Part::Outside)) };
        let mut data = e.get_data(uid, Some(last + 1))?;
        data.drain(..usize::try_from(first).unwrap_or(usize::MAX).min(data.len()));
        Ok((len, Part::Range(first, data)))
    })
    .await?;
    let octets = HeaderValue::from_static("application/octet-stream");
    let mut r = match part {
        Part::Whole(data) => (StatusCode::OK, data).into_response(),
        Part::Outside => {
            return Err(ApiError::range_not_satisfiable(
                format!("the range is outside user {uid}'s data block of {len} bytes"),
                len,
            ));
        }
        Part::Range(first, bytes) => {
            let last = first + (bytes.len() as u64).saturating_sub(1);
            let mut r = (StatusCode::PARTIAL_CONTENT, bytes).into_response();
            let value = format!("bytes {first}-{last}/{len}");
            r.headers_mut().insert(
                header::CONTENT_RANGE,
                HeaderValue::from_str(&value).expect("ASCII digits"),
            );
            r
        }
    };
    r.headers_mut().insert(header::CONTENT_TYPE, octets);
    r.headers_mut().insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    Ok(r)
}

/// What a data write did.
#[derive(Debug, Serialize, ToSchema)]
pub struct DataWritten {
    /// The user.
    pub uid: u64,
    /// The block's new length in bytes.
    pub data_bytes: u64,
}

/// Replaces the user's data block with the raw body (`application/octet-stream`, at most
/// 4 MiB); durable when answered.
#[utoipa::path(put, path = "/users/{uid}/data", tag = "users",
    params(("uid" = u64, Path, description = "User id")),
    request_body(content = Vec<u8>, content_type = "application/octet-stream"),
    responses((status = 200, body = DataWritten), (status = 404, body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 415, body = ErrorBody)))]
pub async fn put_data(
    State(s): State<AppState>,
    Path(uid): Path<u64>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<axum::Json<DataWritten>> {
    if let Some(ct) = headers.get(header::CONTENT_TYPE) {
        let essence = ct.to_str().unwrap_or("").split(';').next().unwrap_or("").trim();
        if !essence.eq_ignore_ascii_case("application/octet-stream") {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "bad_content_type",
                format!("a data block is sent as application/octet-stream, not {essence:?}"),
            ));
        }
    }
    let limit = usize::try_from(MAX_DATA_BYTES).unwrap_or(usize::MAX);
    let bytes = axum::body::to_bytes(body, limit).await.map_err(|e| {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            format!("a data block is at most {MAX_DATA_BYTES} bytes ({e})"),
        )
    })?;
    let data_bytes = bytes.len() as u64;
    engine_call(&s, move |e| e.put_data(uid, &bytes)).await?;
    Ok(axum::Json(DataWritten { uid, data_bytes }))
}

/// Parameters of a friends' data read.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct FriendsDataQuery {
    /// The first bytes of each friend's block to return (default 4096, at most 4 MiB).
    pub fetch_bytes: Option<u64>,
    /// Skip this many friends, in layout order (default 0).
    pub offset: Option<u64>,
    /// At most this many friends (default 100, at most 1000).
    pub limit: Option<u64>,
}

/// One friend's data.
#[derive(Debug, Serialize, ToSchema)]
pub struct FriendData {
    /// The friend.
    pub uid: u64,
    /// The first `fetch_bytes` of the friend's data block, base64.
    pub data_base64: String,
}

/// A page of "list all friends' data".
#[derive(Debug, Serialize, ToSchema)]
pub struct FriendsDataJson {
    /// The user.
    pub uid: u64,
    /// Friends in layout order from `offset`, each with the start of its block.
    pub friends: Vec<FriendData>,
    /// How many friends the user has.
    pub total: u64,
    /// Where this page starts.
    pub offset: u64,
    /// The bytes asked for per friend.
    pub fetch_bytes: u64,
}

/// The most bytes one friends' data page may return, in blocks: 64 MiB.
const MAX_FRIENDS_DATA_BYTES: u64 = 64 << 20;

/// Bondhu's "list all friends' data": the first `fetch_bytes` of each friend's data block,
/// a page of friends at a time in the store's layout order (the order it reads them in).
#[utoipa::path(get, path = "/users/{uid}/friends/data", tag = "users",
    params(("uid" = u64, Path, description = "User id"), FriendsDataQuery),
    responses((status = 200, body = FriendsDataJson), (status = 400, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn friends_data(
    State(s): State<AppState>,
    Path(uid): Path<u64>,
    Query(q): Query<FriendsDataQuery>,
) -> ApiResult<axum::Json<FriendsDataJson>> {
    let limit = page_limit(q.limit, 100, MAX_PAGE as u64, "limit")?;
    let fetch_bytes = q.fetch_bytes.unwrap_or(4096);
    if fetch_bytes > MAX_DATA_BYTES {
        return Err(ApiError::bad_parameter(format!(
            "fetch_bytes {fetch_bytes} exceeds a data block's {MAX_DATA_BYTES} bytes"
        )));
    }
    if fetch_bytes.saturating_mul(limit as u64) > MAX_FRIENDS_DATA_BYTES {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "too_expensive",
            format!(
                "limit {limit} × fetch_bytes {fetch_bytes} passes the {MAX_FRIENDS_DATA_BYTES} bytes one page may return; ask for fewer friends per page"
            ),
        ));
    }
    let offset = q.offset.unwrap_or(0);
    let off = usize::try_from(offset).unwrap_or(usize::MAX);
    let page =
        engine_call(&s, move |e| e.list_friends_data(uid, Some(fetch_bytes), off, limit)).await?;
    let b64 = base64::engine::general_purpose::STANDARD;
    Ok(axum::Json(FriendsDataJson {
        uid,
        friends: page
            .friends
            .into_iter()
            .map(|(f, data)| FriendData { uid: f, data_base64: b64.encode(data) })
            .collect(),
        total: page.total as u64,
        offset,
        fetch_bytes,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(v: &str) -> ApiResult<Option<ByteRange>> {
        let mut h = HeaderMap::new();
        h.insert(header::RANGE, HeaderValue::from_str(v).unwrap());
        parse_range(&h)
    }

    #[test]
    fn byte_ranges_parse_and_resolve_against_the_block() {
        assert_eq!(range("bytes=2-5").unwrap(), Some(ByteRange::From(2, Some(5))));
        assert_eq!(range("bytes=7-").unwrap(), Some(ByteRange::From(7, None)));
        assert_eq!(range("bytes=-3").unwrap(), Some(ByteRange::Suffix(3)));
        assert_eq!(range("items=1-2").unwrap(), None, "another unit is ignored");
        assert_eq!(range("bytes=1-2,4-5").unwrap(), None, "several ranges: the whole block");
        for bad in ["bytes=5-2", "bytes=-", "bytes=x-1", "bytes=1"] {
            assert_eq!(range(bad).unwrap_err().status, StatusCode::RANGE_NOT_SATISFIABLE, "{bad}");
        }
        assert_eq!(resolve(ByteRange::From(2, Some(5)), 10), Some((2, 5)));
        assert_eq!(resolve(ByteRange::From(2, Some(50)), 10), Some((2, 9)));
        assert_eq!(resolve(ByteRange::From(10, None), 10), None);
        assert_eq!(resolve(ByteRange::Suffix(3), 10), Some((7, 9)));
        assert_eq!(resolve(ByteRange::Suffix(30), 10), Some((0, 9)));
        assert_eq!(resolve(ByteRange::Suffix(3), 0), None);
        assert_eq!(resolve(ByteRange::Suffix(0), 10), None);
    }
}
