//! `kith-server`: kith's HTTP/JSON service.
//!
//! What it is: Parker's social-graph API (users, profiles, friend lists, listings, shortest
//! paths, neighbourhoods) and Twibo's feeds (follows, posts, pull/push/hybrid feeds) over a
//! storage engine (`Arc<dyn kith_store::Engine>`), on axum. Engine calls run on tokio's
//! blocking pool ([`kith_feed::blocking`]), never on the executor; friendship writes and
//! friend-list reads go through the feed, which keeps its cache of friend lists in step. The OpenAPI document (`GET /openapi.json`) is generated from the handlers'
//! annotations. Every error is JSON with a code; bad input never gets a 500, and a 500's body
//! carries only an id under which the detail is logged. Writes can require a bearer token.
//! Every request's work is bounded: a header-read (and idle) timeout, a request timeout, a
//! cap on connections and on requests in progress (503 `overloaded` beyond them), body
//! limits, and a shutdown deadline ([`Limits`]); `Host` is checked against an allow-list
//! and writes a browser could send cross-site are refused (`guard`). `GET /metrics` is Prometheus text; `GET /stats` is JSON with the
//! cache hit rates. Shutdown stops accepting, finishes in-flight requests, runs the queued
//! fan-out, flushes write-back and lets go of the engine.
//!
//! What it is not: storage (`kith-store`) or the feed logic (`kith-feed`).

mod config;
mod data;
mod error;
mod extract;
mod feeds;
mod graph;
mod guard;
mod idempotency;
mod listen;
mod metrics;
mod state;
mod ui;
mod users;

#[cfg(test)]
mod tests;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use kith_feed::Feed;
use kith_store::Engine;
use prometheus::Registry;
use serde::Serialize;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use config::{Limits, Secret, ServerConfig};
pub use error::{Error, Result};

use error::{ApiError, ErrorBody};
use guard::Guard;
use metrics::HttpMetrics;
use state::AppState;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "kith",
        description = "Social-graph store and feeds: Parker's API and Twibo's feeds over a layout-aware store."
    ),
    components(schemas(ErrorBody)),
    modifiers(&BearerAuth)
)]
struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, api: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = api.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The body limit of routes that carry a data block: the largest block in base64 plus
/// `body_limit` for the rest of the body.
fn data_body_limit(body_limit: usize) -> usize {
    let block = usize::try_from(kith_store::MAX_DATA_BYTES).unwrap_or(usize::MAX);
    block.div_ceil(3).saturating_mul(4).saturating_add(body_limit)
}

/// The routes and their OpenAPI document. Every route has `body_limit`, except those that
/// carry a data block, which have [`data_body_limit`] (the innermost limit wins).
fn api_routes(body_limit: usize) -> (Router<AppState>, utoipa::openapi::OpenApi) {
    let data = OpenApiRouter::new()
        .routes(routes!(users::put_user))
        .layer(DefaultBodyLimit::max(data_body_limit(body_limit)));
    // A raw block: its own 4 MiB bound, read by the handler.
    let raw = OpenApiRouter::new()
        .routes(routes!(data::get_data, data::put_data))
        .layer(DefaultBodyLimit::disable());
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(users::list_users))
        .routes(routes!(users::random_users))
        .routes(routes!(users::get_user))
        .merge(data)
        .merge(raw)
        .routes(routes!(data::exists))
        .routes(routes!(data::friends_data))
        .routes(routes!(users::get_profile, users::put_profile))
        .routes(routes!(users::get_friends))
        .routes(routes!(users::add_friend, users::delete_friend))
        .routes(routes!(graph::shortest_path))
        .routes(routes!(graph::neighborhood))
        .routes(routes!(feeds::follow))
        .routes(routes!(feeds::unfollow))
        .routes(routes!(feeds::follows))
        .routes(routes!(feeds::create_post))
        .routes(routes!(feeds::get_post))
        .routes(routes!(feeds::feed))
        .split_for_parts()
}

/// Cache and queue figures.
#[derive(Debug, Serialize)]
struct Stats {
    feed: String,
    cache: String,
    backend: &'static str,
    cache_bytes_used: Option<u64>,
    hit_rate: serde_json::Value,
    fanout_queue_depth: i64,
    /// Posts this server handed out whose fan-out has not reached every timeline yet
    /// (queued, running, or failed and waiting for its retry).
    fanout_unfinished: usize,
    writeback_pending: usize,
    /// Posts of any server waiting in the shared write-back (Redis Cluster), if readable.
    writeback_waiting: Option<u64>,
    journal_appends: u64,
    journal_syncs: u64,
}

async fn stats(State(s): State<AppState>) -> axum::Json<Stats> {
    axum::Json(stats_of(&s).await)
}

/// `/stats` as a JSON value (the dashboard's metrics carry it).
pub(crate) async fn stats_json(s: &AppState) -> serde_json::Value {
    serde_json::to_value(stats_of(s).await).unwrap_or_default()
}

async fn stats_of(s: &AppState) -> Stats {
    let kinds = ["post", "friends", "timeline"];
    let mut hit_rate = serde_json::Map::new();
    for k in kinds {
        let h = s.feed.hit_rate(k);
        hit_rate.insert(
            k.to_string(),
            serde_json::json!({"hits": h.hits, "misses": h.misses, "rate": h.rate()}),
        );
    }
    let c = s.feed.config();
    Stats {
        feed: format!("{:?}", c.strategy).to_lowercase(),
        cache: format!("{:?}", c.cache).to_lowercase(),
        backend: s.feed.backend_name(),
        cache_bytes_used: s.feed.cache_bytes_used(),
        hit_rate: hit_rate.into(),
        fanout_queue_depth: s.feed.fanout_depth(),
        fanout_unfinished: s.feed.fanout_unfinished(),
        writeback_pending: s.feed.pending_posts(),
        writeback_waiting: s.feed.waiting_posts().await.ok(),
        journal_appends: s.feed.journal_counts().0,
        journal_syncs: s.feed.journal_counts().1,
    }
}

async fn metrics_text(State(s): State<AppState>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        metrics::render(&s.registry),
    )
        .into_response()
}

/// Liveness and the cache's state. Always 200 while the service answers: with Redis down,
/// paused or refusing writes every request is still answered correctly from the store, so
/// the answer is `{"status":"degraded","cache":"unavailable",...}` with 200. A 503 would
/// make a load balancer take every server sharing the failed Redis out at once, turning a
/// slower service into none.
async fn health(State(s): State<AppState>) -> axum::Json<serde_json::Value> {
    let backend = s.feed.backend_name();
    axum::Json(match s.feed.cache_failure() {
        None => serde_json::json!({"status": "ok", "cache": "ok", "backend": backend}),
        Some(error) => serde_json::json!({
            "status": "degraded", "cache": "unavailable", "backend": backend, "error": error,
        }),
    })
}

async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such route")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "method not allowed on this route",
    )
}

/// Compares without an early exit, so timing does not reveal how much of a guess was right.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn auth(State(s): State<AppState>, req: Request, next: Next) -> Response {
    if let Some(token) = &s.token {
        let token = token.expose();
        let read = matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
        if !read || s.token_reads {
            let given = req
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "));
            if !given.is_some_and(|g| same(g.as_bytes(), token.as_bytes())) {
                let what =
                    if given.is_some() { "wrong bearer token" } else { "missing bearer token" };
                return ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", what)
                    .into_response();
            }
        }
    }
    next.run(req).await
}

/// The whole application.
fn app(state: AppState, body_limit: usize, http: HttpMetrics, guard: Guard) -> Router {
    let (api, doc) = api_routes(body_limit);
    let doc = Arc::new(doc);
    api.route(
        "/openapi.json",
        get(move || {
            let doc = doc.clone();
            async move { axum::Json(doc.as_ref().clone()) }
        }),
    )
    .route("/metrics", get(metrics_text))
    .route("/stats", get(stats))
    .route("/health", get(health))
    .merge(ui::routes())
    .fallback(not_found)
    .method_not_allowed_fallback(method_not_allowed)
    .layer(DefaultBodyLimit::max(body_limit))
    .layer(middleware::from_fn_with_state(state.clone(), auth))
    .layer(middleware::from_fn_with_state(guard, guard::guard))
    .route_layer(middleware::from_fn_with_state(http.clone(), metrics::track))
    .with_state(state)
}

/// What `serve` returns when it has shut down.
#[derive(Debug)]
pub struct Served {
    /// The address it listened on.
    pub addr: SocketAddr,
}

/// Builds the whole application over `engine` without binding a port: the router (every
/// route, guard, limit and metric `serve` has) and the feed behind it, which the caller
/// must [`Feed::shutdown`] when done. For driving requests in-process, e.g. a fuzz target
/// through `tower::ServiceExt::oneshot`. The feed's write-back journal lives in
/// `journal_dir`.
#[doc(hidden)]
pub async fn router(
    engine: Arc<dyn Engine>,
    journal_dir: PathBuf,
    config: &ServerConfig,
) -> Result<(Router, Arc<Feed>)> {
    let registry = Registry::new();
    let feed = Feed::open(engine.clone(), journal_dir, config.feed.clone(), &registry).await?;
    let http = HttpMetrics::new(&registry);
    let state = AppState {
        engine,
        feed: feed.clone(),
        registry,
        token: config.token.clone().map(Arc::new),
        token_reads: config.token_reads,
        ui: Arc::default(),
    };
    let guard = Guard {
        allowed_hosts: config.allowed_hosts.iter().map(|h| h.trim().to_ascii_lowercase()).collect(),
        loopback: config.addr.ip().is_loopback(),
        in_flight: Arc::new(tokio::sync::Semaphore::new(config.limits.max_concurrent_requests)),
        request_timeout: config.limits.request_timeout,
    };
    Ok((app(state, config.body_limit, http, guard), feed))
}

/// Serves `engine` until `shutdown` completes, then shuts down gracefully: stops accepting,
/// finishes in-flight requests (dropping those still running after
/// `config.limits.shutdown_timeout`), runs the queued fan-out, flushes write-back and
/// closes the journal. The feed's write-back journal lives in `journal_dir` (`kith serve`
/// uses `<store>/feed-journal`). `on_ready` gets the bound address (useful with port 0).
pub async fn serve(
    engine: Arc<dyn Engine>,
    journal_dir: PathBuf,
    config: ServerConfig,
    on_ready: impl FnOnce(SocketAddr) + Send,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<Served> {
    let (app, feed) = router(engine, journal_dir, &config).await?;
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .map_err(|source| Error::Listen { addr: config.addr, source })?;
    let addr = listener.local_addr()?;
    on_ready(addr);
    listen::run(listener, app, &config.limits, shutdown).await;
    feed.shutdown().await?;
    Ok(Served { addr })
}

/// Completes on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}
