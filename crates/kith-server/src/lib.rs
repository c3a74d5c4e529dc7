//! `kith-server`: kith's HTTP/JSON service.
//!
//! What it is: Parker's social-graph API (users, profiles, friend lists, listings, shortest
//! paths, neighbourhoods) and Twibo's feeds (follows, posts, pull/push/hybrid feeds) over a
//! storage engine (`Arc<dyn kith_store::Engine>`), on axum. Engine calls run on tokio's
//! blocking pool ([`kith_feed::blocking`]), never on the executor; friendship writes and
//! friend-list reads go through the feed, which keeps its cache of friend lists in step. The OpenAPI document (`GET /openapi.json`) is generated from the handlers'
//! annotations. Every error is JSON with a code; bad input never gets a 500. Writes can
//! require a bearer token. `GET /metrics` is Prometheus text; `GET /stats` is JSON with the
//! cache hit rates. Shutdown stops accepting, finishes in-flight requests, runs the queued
//! fan-out, flushes write-back and lets go of the engine.
//!
//! What it is not: storage (`kith-store`) or the feed logic (`kith-feed`).

mod error;
mod extract;
mod feeds;
mod idempotency;
mod metrics;
mod state;
mod users;

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
use kith_feed::{Feed, FeedConfig};
use kith_store::Engine;
use prometheus::Registry;
use serde::Serialize;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use error::{Error, Result};

use error::{ApiError, ErrorBody};
use metrics::HttpMetrics;
use state::AppState;

/// The server's settings.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Where to listen.
    pub addr: SocketAddr,
    /// The largest request body in bytes.
    pub body_limit: usize,
    /// When set, writes need `Authorization: Bearer <token>`.
    pub token: Option<String>,
    /// Reads need the token too.
    pub token_reads: bool,
    /// The feed's settings.
    pub feed: FeedConfig,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            addr: SocketAddr::from(([127, 0, 0, 1], 7070)),
            body_limit: 1 << 20,
            token: None,
            token_reads: false,
            feed: FeedConfig::default(),
        }
    }
}

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

/// The routes and their OpenAPI document.
fn api_routes() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(users::list_users))
        .routes(routes!(users::random_users))
        .routes(routes!(users::get_user, users::put_user))
        .routes(routes!(users::get_profile, users::put_profile))
        .routes(routes!(users::get_friends))
        .routes(routes!(users::add_friend, users::delete_friend))
        .routes(routes!(users::shortest_path))
        .routes(routes!(users::neighborhood))
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
    writeback_pending: usize,
    journal_appends: u64,
    journal_syncs: u64,
}

async fn stats(State(s): State<AppState>) -> axum::Json<Stats> {
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
    axum::Json(Stats {
        feed: format!("{:?}", c.strategy).to_lowercase(),
        cache: format!("{:?}", c.cache).to_lowercase(),
        backend: s.feed.backend_name(),
        cache_bytes_used: s.feed.cache_bytes_used(),
        hit_rate: hit_rate.into(),
        fanout_queue_depth: s.feed.fanout_depth(),
        writeback_pending: s.feed.pending_posts(),
        journal_appends: s.feed.journal_counts().0,
        journal_syncs: s.feed.journal_counts().1,
    })
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
fn app(state: AppState, body_limit: usize, http: HttpMetrics) -> Router {
    let (api, doc) = api_routes();
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
    .fallback(not_found)
    .method_not_allowed_fallback(method_not_allowed)
    .layer(DefaultBodyLimit::max(body_limit))
    .layer(middleware::from_fn_with_state(state.clone(), auth))
    .route_layer(middleware::from_fn_with_state(http.clone(), metrics::track))
    .with_state(state)
}

/// What `serve` returns when it has shut down.
#[derive(Debug)]
pub struct Served {
    /// The address it listened on.
    pub addr: SocketAddr,
}

/// Serves `engine` until `shutdown` completes, then shuts down gracefully: stops accepting,
/// finishes in-flight requests, runs the queued fan-out, flushes write-back and closes the
/// journal. The feed's write-back journal lives in `journal_dir` (`kith serve` uses
/// `<store>/feed-journal`). `on_ready` gets the bound address (useful with port 0).
pub async fn serve(
    engine: Arc<dyn Engine>,
    journal_dir: PathBuf,
    config: ServerConfig,
    on_ready: impl FnOnce(SocketAddr) + Send,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<Served> {
    let registry = Registry::new();
    let feed = Feed::open(engine.clone(), journal_dir, config.feed.clone(), &registry).await?;
    let http = HttpMetrics::new(&registry);
    let state = AppState {
        engine,
        feed: feed.clone(),
        registry,
        token: config.token.as_deref().map(Arc::from),
        token_reads: config.token_reads,
    };
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .map_err(|source| Error::Listen { addr: config.addr, source })?;
    let addr = listener.local_addr()?;
    on_ready(addr);
    axum::serve(listener, app(state, config.body_limit, http))
        .with_graceful_shutdown(shutdown)
        .await?;
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
