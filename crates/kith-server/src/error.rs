//! Errors: the crate's [`Error`] (what `serve` can fail with), and every error the API
//! returns, JSON `{"error": "<code>", "message": "..."}` with a status that says whose fault
//! it is. This is the one place engine, feed and extractor errors become statuses and codes.
//! Bad input is never a 500; a failed blocking task always is.

use std::net::SocketAddr;

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

/// Everything serving can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The feed could not open (its journal, the engine's follows and posts, the backend)
    /// or shut down cleanly.
    #[error(transparent)]
    Feed(#[from] kith_feed::Error),
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// Why not.
        source: std::io::Error,
    },
    /// The listener failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The server's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The body of every error response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// A stable machine-readable code, e.g. `unknown_user`, `bad_parameter`.
    pub error: String,
    /// What went wrong, for people.
    pub message: String,
    /// On a 500 only: the id under which the server logged the details.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// An error on its way to becoming a response.
#[derive(Debug)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The code.
    pub code: &'static str,
    /// The message.
    pub message: String,
    /// On a 416: the block's length, sent as `Content-Range: bytes */<len>`.
    pub unsatisfied_len: Option<u64>,
}

impl ApiError {
    /// A new error.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError { status, code, message: message.into(), unsatisfied_len: None }
    }

    /// 416 for a byte range that does not fit a data block of `len` bytes.
    pub fn range_not_satisfiable(message: impl Into<String>, len: u64) -> ApiError {
        ApiError {
            unsatisfied_len: Some(len),
            ..ApiError::new(StatusCode::RANGE_NOT_SATISFIABLE, "range_not_satisfiable", message)
        }
    }

    /// 400 for a query or path parameter.
    pub fn bad_parameter(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_parameter", message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = if self.status.is_server_error()
            && (self.status != StatusCode::SERVICE_UNAVAILABLE || self.code == "store_unavailable")
        {
            // The detail of a server fault (RocksDB's or the OS's text, file paths) is for
            // the operator, not the client: the log gets it under an id the client sees.
            let id = format!("{:016x}", rand::random::<u64>());
            eprintln!("kith serve: error {id} ({}): {}", self.code, self.message);
            let what = match self.status {
                StatusCode::INSUFFICIENT_STORAGE => {
                    "the server's disk is full and the write was not applied"
                }
                StatusCode::SERVICE_UNAVAILABLE => {
                    "too few storage replicas answered; nothing was acknowledged, retry later (a write with the same Idempotency-Key)"
                }
                _ => "internal error",
            };
            let message = format!("{what}; the server's log has the details under id {id}");
            ErrorBody { error: self.code.to_string(), message, id: Some(id) }
        } else {
            ErrorBody { error: self.code.to_string(), message: self.message, id: None }
        };
        let mut r = (self.status, axum::Json(body)).into_response();
        if let Some(len) = self.unsatisfied_len
            && let Ok(v) = axum::http::HeaderValue::from_str(&format!("bytes */{len}"))
        {
            r.headers_mut().insert(axum::http::header::CONTENT_RANGE, v);
        }
        if self.status == StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        r
    }
}

impl From<kith_store::Error> for ApiError {
    fn from(e: kith_store::Error) -> ApiError {
        use kith_store::Error as E;
        let (status, code) = match &e {
            E::UnknownUser(_) => (StatusCode::NOT_FOUND, "unknown_user"),
            E::SelfFriendship(_) => (StatusCode::UNPROCESSABLE_ENTITY, "self_friendship"),
            E::TooLarge { .. } => (StatusCode::PAYLOAD_TOO_LARGE, "too_large"),
            E::Invalid(_) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid"),
            E::StaleCursor { .. } => (StatusCode::CONFLICT, "stale_cursor"),
            E::SelfFollow(_) => (StatusCode::UNPROCESSABLE_ENTITY, "self_follow"),
            E::AlreadyFollowing { .. } => (StatusCode::CONFLICT, "already_following"),
            E::NotFollowing { .. } => (StatusCode::NOT_FOUND, "not_following"),
            E::TooExpensive { .. } => (StatusCode::UNPROCESSABLE_ENTITY, "too_expensive"),
            E::DiskFull { .. } => (StatusCode::INSUFFICIENT_STORAGE, "disk_full"),
            E::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "store_unavailable"),
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        ApiError::new(status, code, e.to_string())
    }
}

impl From<kith_feed::Error> for ApiError {
    fn from(e: kith_feed::Error) -> ApiError {
        use kith_feed::Error as E;
        let (status, code) = match &e {
            E::Store(_) => {
                let E::Store(inner) = e else { unreachable!() };
                return inner.into();
            }
            E::UnknownPost(_) => (StatusCode::NOT_FOUND, "unknown_post"),
            E::TooLarge { .. } => (StatusCode::PAYLOAD_TOO_LARGE, "too_large"),
            E::Invalid(_) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid"),
            E::ShuttingDown => (StatusCode::SERVICE_UNAVAILABLE, "shutting_down"),
            E::Redis(_) => (StatusCode::SERVICE_UNAVAILABLE, "cache_unavailable"),
            E::TooExpensive { .. } => (StatusCode::UNPROCESSABLE_ENTITY, "too_expensive"),
            E::IdempotencyKeyReused { .. } => {
                (StatusCode::UNPROCESSABLE_ENTITY, "idempotency_key_reused")
            }
            E::PostIdTaken(_) => (StatusCode::CONFLICT, "post_id_taken"),
            E::Io { source, .. } if source.kind() == std::io::ErrorKind::StorageFull => {
                (StatusCode::INSUFFICIENT_STORAGE, "disk_full")
            }
            E::TaskFailed(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        ApiError::new(status, code, e.to_string())
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> ApiError {
        let status = r.status();
        let code = match &r {
            JsonRejection::JsonSyntaxError(_) => "bad_json",
            JsonRejection::JsonDataError(_) => "bad_body",
            JsonRejection::MissingJsonContentType(_) => "bad_content_type",
            _ if status == StatusCode::PAYLOAD_TOO_LARGE => "too_large",
            _ => "bad_body",
        };
        // Wrong types and missing fields are a bad body (400), like bad syntax.
        let status = match status {
            StatusCode::UNPROCESSABLE_ENTITY => StatusCode::BAD_REQUEST,
            s => s,
        };
        ApiError::new(status, code, r.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> ApiError {
        ApiError::bad_parameter(r.body_text())
    }
}

impl From<PathRejection> for ApiError {
    fn from(r: PathRejection) -> ApiError {
        ApiError::bad_parameter(r.body_text())
    }
}

/// The API's result type.
pub type ApiResult<T> = std::result::Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_failed_blocking_task_is_a_500_and_bad_input_is_not() {
        let failed = kith_feed::blocking(|| -> kith_store::Result<()> { panic!("in a test") });
        let e = ApiError::from(failed.await.unwrap_err());
        assert_eq!((e.status, e.code), (StatusCode::INTERNAL_SERVER_ERROR, "internal"));
        type Make = fn() -> kith_store::Error;
        let cases: [(Make, StatusCode, &str); 5] = [
            (
                || kith_store::Error::TooExpensive { what: "vertices visited", limit: 10 },
                StatusCode::UNPROCESSABLE_ENTITY,
                "too_expensive",
            ),
            (|| kith_store::Error::UnknownUser(3), StatusCode::NOT_FOUND, "unknown_user"),
            (|| kith_store::Error::SelfFollow(3), StatusCode::UNPROCESSABLE_ENTITY, "self_follow"),
            (
                || kith_store::Error::AlreadyFollowing { uid: 1, target: 2 },
                StatusCode::CONFLICT,
                "already_following",
            ),
            (
                || kith_store::Error::NotFollowing { uid: 1, target: 2 },
                StatusCode::NOT_FOUND,
                "not_following",
            ),
        ];
        for (make, status, code) in cases {
            // Straight from the engine or through the feed: one mapping either way.
            let direct = ApiError::from(make());
            let wrapped = ApiError::from(kith_feed::Error::from(make()));
            assert_eq!((direct.status, direct.code), (status, code));
            assert_eq!((wrapped.status, wrapped.code), (status, code));
        }
        let feed = ApiError::from(kith_feed::Error::TooExpensive { what: "followees", limit: 5 });
        assert_eq!((feed.status, feed.code), (StatusCode::UNPROCESSABLE_ENTITY, "too_expensive"));
        assert_eq!(feed.message, "followees exceeds the budget of 5");
    }

    #[tokio::test]
    async fn a_500_body_names_no_file_and_no_library_text() {
        let source = std::io::Error::other("rocksdb: IO error: No space left on device");
        let e = kith_store::Error::Io {
            context: "writing /srv/secret/store/000042.sst".into(),
            source,
        };
        let response = ApiError::from(e).into_response();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16).await.unwrap();
        let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let text = body.to_string();
        assert!(!text.contains("/srv/secret") && !text.contains("rocksdb"), "{text}");
        assert_eq!(body["error"], "internal");
        let id = body["id"].as_str().unwrap();
        assert!(body["message"].as_str().unwrap().contains(id), "{text}");
    }
}
