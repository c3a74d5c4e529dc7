//! The checks every request passes before it reaches a handler: its `Host` is one this
//! server answers to (DNS rebinding), a write is not one a browser could send cross-site
//! without a preflight (CSRF), the server is not already working on as many requests as it
//! allows (load shedding), and the request finishes within its time: 408 when its body was
//! still arriving (a slow client), 504 when the server itself took too long (a slow store).
//!
//! Why these: with no token a page on another site could otherwise add friendships with a
//! plain form POST, and a page under a rebound DNS name could read every user through the
//! visitor's browser. Requests with JSON bodies or no body, no `Origin` and no
//! `Sec-Fetch-Site` (what `curl`, scripts and the benchmarks send) pass unchanged.

use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::Semaphore;

use crate::error::ApiError;

/// What the checks need.
#[derive(Clone, Debug)]
pub(crate) struct Guard {
    /// Extra host names (lowercase, each with or without a port) this server answers to.
    pub(crate) allowed_hosts: Arc<[String]>,
    /// Whether the server listens on a loopback address: then only loopback names and
    /// `allowed_hosts` are accepted in `Host`.
    pub(crate) loopback: bool,
    /// One permit per request in progress.
    pub(crate) in_flight: Arc<Semaphore>,
    /// The most a request may take, body included.
    pub(crate) request_timeout: Duration,
}

/// Content types a browser form (or `fetch` without a preflight) can send cross-site.
const SIMPLE_TYPES: [&str; 3] =
    ["application/x-www-form-urlencoded", "multipart/form-data", "text/plain"];

/// Splits `host[:port]` (with `[v6]` brackets) into its lowercase name and the whole.
fn host_name(authority: &str) -> String {
    let a = authority.trim().to_ascii_lowercase();
    if let Some(rest) = a.strip_prefix('[') {
        return rest.split(']').next().map_or(a.clone(), |v6| format!("[{v6}]"));
    }
    match a.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name.to_string(),
        _ => a,
    }
}

/// Whether `authority` is an IP address, with or without a port: what clients of a server
/// on an address send. Checked without allocating, before the general case.
fn is_address(authority: &str) -> bool {
    let name = match authority.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => match authority.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
            _ => authority,
        },
    };
    name.parse::<IpAddr>().is_ok()
}

impl Guard {
    /// Whether `authority` (a `Host` value or an origin's host and port) names this server.
    fn allowed(&self, authority: &str) -> bool {
        if is_address(authority.trim()) {
            return true;
        }
        let name = host_name(authority);
        // An address cannot be rebound to another site, only names can.
        let literal = name.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>().is_ok();
        if literal || name == "localhost" {
            return true;
        }
        let whole = authority.trim().to_ascii_lowercase();
        if self.allowed_hosts.iter().any(|h| *h == name || *h == whole) {
            return true;
        }
        !self.loopback && self.allowed_hosts.is_empty()
    }

    /// Why a write could have come from another site's page, if it could.
    fn cross_site(&self, headers: &HeaderMap, host: Option<&str>) -> Option<String> {
        let text = |name| headers.get(name).and_then(|v: &header::HeaderValue| v.to_str().ok());
        if let Some(site) = text("sec-fetch-site")
            && (site.eq_ignore_ascii_case("cross-site") || site.eq_ignore_ascii_case("same-site"))
        {
            return Some(format!("a write from another site (Sec-Fetch-Site: {site})"));
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("");
            let authority = origin.split_once("://").map(|(_, a)| a.trim_end_matches('/'));
            let same = match (authority, host) {
                (Some(a), Some(h)) => a.eq_ignore_ascii_case(h.trim()),
                _ => false,
            };
            if !same
                && !authority.is_some_and(|a| self.allowed_hosts.contains(&a.to_ascii_lowercase()))
            {
                return Some(format!("a write from another origin (Origin: {origin:?})"));
            }
        }
        if let Some(ct) = text(header::CONTENT_TYPE.as_str()) {
            let essence = ct.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
            if SIMPLE_TYPES.contains(&essence.as_str()) {
                return Some(format!(
                    "a write with Content-Type {essence}, which any web page can send; send application/json or no body"
                ));
            }
        }
        None
    }
}

/// The middleware: host, cross-site, load and time checks, in that order.
pub(crate) async fn guard(State(g): State<Guard>, req: Request, next: Next) -> Response {
    if let Some(refused) = g.refuse(&req) {
        return refused;
    }
    let Ok(_permit) = g.in_flight.clone().try_acquire_owned() else {
        return overloaded("requests in progress").into_response();
    };
    let received = Arc::new(AtomicBool::new(req.body().is_end_stream()));
    let req = req.map(|inner| Body::new(Watched { inner, received: received.clone() }));
    match tokio::time::timeout(g.request_timeout, next.run(req)).await {
        Ok(response) => response,
        Err(_) if !received.load(Ordering::Acquire) => ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "request_timeout",
            format!(
                "the request's body did not arrive within {} ms",
                g.request_timeout.as_millis()
            ),
        )
        .into_response(),
        Err(_) => ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            "server_timeout",
            format!(
                "the server did not finish the request within {} ms; a write may or may not \
                 have been applied (retry it with the same Idempotency-Key)",
                g.request_timeout.as_millis()
            ),
        )
        .into_response(),
    }
}

/// A request body that notes when its last byte has arrived, so that a request past its
/// time is told from a slow client (408) or a slow server (504).
struct Watched {
    inner: Body,
    received: Arc<AtomicBool>,
}

impl HttpBody for Watched {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) || self.inner.is_end_stream() {
            self.received.store(true, Ordering::Release);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Guard {
    /// The host and cross-site checks, borrowing the request's headers (nothing is
    /// allocated for a request that passes with an address in `Host`).
    fn refuse(&self, req: &Request) -> Option<Response> {
        let from_uri;
        let host = match req.headers().get(header::HOST) {
            Some(v) => Some(v.to_str().unwrap_or("\u{fffd}")),
            None => {
                from_uri = req.uri().authority().map(|a| a.as_str().to_string());
                from_uri.as_deref()
            }
        };
        if let Some(h) = host
            && !self.allowed(h)
        {
            let message =
                format!("Host {h:?} is not one this server answers to (see --allowed-host)");
            let e = ApiError::new(StatusCode::MISDIRECTED_REQUEST, "unknown_host", message);
            return Some(e.into_response());
        }
        let write = !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
        if write && let Some(why) = self.cross_site(req.headers(), host) {
            let e = ApiError::new(StatusCode::FORBIDDEN, "cross_site", format!("refused {why}"));
            return Some(e.into_response());
        }
        None
    }
}

/// 503 `overloaded`: a limit on `what` is reached; the client should retry later.
pub(crate) fn overloaded(what: &str) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "overloaded",
        format!("the server is at its limit of {what}; retry later"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(loopback: bool, allowed: &[&str]) -> Guard {
        Guard {
            allowed_hosts: allowed.iter().map(|s| s.to_string()).collect(),
            loopback,
            in_flight: Arc::new(Semaphore::new(1)),
            request_timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn hosts() {
        let g = guard(true, &["kith.example"]);
        for ok in ["localhost:7070", "127.0.0.1:1", "[::1]:80", "LOCALHOST", "kith.example:9"] {
            assert!(g.allowed(ok), "{ok}");
        }
        for bad in ["evil.example", "evil.example:7070", "localhost.evil.example"] {
            assert!(!g.allowed(bad), "{bad}");
        }
        assert!(guard(false, &[]).allowed("anything.example"));
        assert!(!guard(false, &["kith.example"]).allowed("anything.example"));
    }

    #[test]
    fn cross_site_writes() {
        let g = guard(true, &[]);
        let headers = |pairs: &[(&'static str, &'static str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(*k, v.parse().unwrap());
            }
            h
        };
        let host = Some("127.0.0.1:7070");
        assert!(g.cross_site(&headers(&[]), host).is_none());
        assert!(g.cross_site(&headers(&[("content-type", "application/json")]), host).is_none());
        assert!(g.cross_site(&headers(&[("origin", "http://127.0.0.1:7070")]), host).is_none());
        assert!(g.cross_site(&headers(&[("sec-fetch-site", "same-origin")]), host).is_none());
        for bad in [
            headers(&[("origin", "https://evil.example")]),
            headers(&[("origin", "null")]),
            headers(&[("sec-fetch-site", "cross-site")]),
            headers(&[("content-type", "application/x-www-form-urlencoded")]),
            headers(&[("content-type", "text/plain; charset=utf-8")]),
        ] {
            assert!(g.cross_site(&bad, host).is_some(), "{bad:?}");
        }
    }

    /// A body whose bytes never arrive.
    struct Stalled;

    impl HttpBody for Stalled {
        type Data = Bytes;
        type Error = axum::Error;
        fn poll_frame(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
            Poll::Pending
        }
    }

    async fn status_of(body: Body, path: &str) -> (StatusCode, String) {
        use tower::ServiceExt;
        let mut g = guard(true, &[]);
        g.request_timeout = Duration::from_millis(200);
        let app = axum::Router::new()
            .route(
                "/slow",
                axum::routing::post(|body: Body| async move {
                    let _ = axum::body::to_bytes(body, 1 << 20).await;
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    "late"
                }),
            )
            .route(
                "/echo",
                axum::routing::post(|body: Body| async move {
                    axum::body::to_bytes(body, 1 << 20)
                        .await
                        .map(|b| b.len().to_string())
                        .unwrap_or_default()
                }),
            )
            .layer(axum::middleware::from_fn_with_state(g, super::guard));
        let req = Request::post(path).header("host", "127.0.0.1:7070").body(body).unwrap();
        let res = app.oneshot(req).await.unwrap();
        let status = res.status();
        let bytes = axum::body::to_bytes(res.into_body(), 1 << 20).await.unwrap();
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    #[tokio::test]
    async fn a_request_past_its_time_is_a_slow_client_or_a_slow_server() {
        let (status, text) = status_of(Body::new(Stalled), "/echo").await;
        assert_eq!(status, StatusCode::REQUEST_TIMEOUT, "{text}");
        assert!(text.contains("request_timeout"), "{text}");
        // The whole body arrived (or there was none), and the handler took the time.
        for body in [Body::from("{}"), Body::empty()] {
            let (status, text) = status_of(body, "/slow").await;
            assert_eq!(status, StatusCode::GATEWAY_TIMEOUT, "{text}");
            assert!(text.contains("server_timeout"), "{text}");
        }
        let (status, text) = status_of(Body::from("abc"), "/echo").await;
        assert_eq!((status, text.as_str()), (StatusCode::OK, "3"));
    }
}
