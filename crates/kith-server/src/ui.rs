//! The dashboard at `/ui`: its page, script and style (embedded from `ui/src/`), the charting
//! library (Apache ECharts, fetched from npm by the build script and embedded, so nothing is
//! fetched at run time), and the JSON it polls under `/ui/api/`:
//!
//! - `metrics`: every route's request counts by status and latency histogram, and the feed's
//!   cache and queue figures, as they stand (the page turns two snapshots a second apart into
//!   rates and percentiles, so the server keeps no time series);
//! - `ego/{uid}`: a user and up to `limit` friends with the friendships among them;
//! - `status`, `matrix`, `pages/{uid}`, `relayout`: the layout's view, on an engine with a
//!   [`LayoutAdmin`] (the embedded store); elsewhere 501 `not_supported`.
//!
//! These routes are for the page, not part of the API's OpenAPI document. They read like any
//! `GET` (the token is needed when reads need it); `POST /ui/api/relayout` is a write, and
//! is refused unless the server has a token at all, so a dashboard cannot be used to make an
//! open server rewrite its store.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use kith_layout::metrics::{mean_pages_of, pages_touched_of};
use kith_layout::{Layout, LayoutConfig, Method};
use kith_store::{Engine, LayoutAdmin, Progress, ProgressSnapshot, RelayoutReport, StoreGraph};
use serde::{Deserialize, Serialize};

use crate::error::{ApiError, ApiResult};
use crate::extract::{Path, Query};
use crate::state::AppState;

const INDEX_HTML: &str = include_str!("../../../ui/src/index.html");
const APP_JS: &str = include_str!("../../../ui/src/app.js");
const APP_CSS: &str = include_str!("../../../ui/src/app.css");
const ECHARTS_JS: &[u8] = include_bytes!(env!("KITH_UI_ECHARTS"));

/// The most cells a side of the adjacency matrix may have.
pub const MAX_MATRIX_BINS: usize = 256;
/// The most friends `ego` draws.
pub const MAX_EGO_FRIENDS: usize = 200;
/// How long a read of the whole stored graph is reused (it is read again after a relayout).
const GRAPH_TTL: Duration = Duration::from_secs(10);
/// How long a computed status is reused unless `?fresh=true`.
const STATUS_TTL: Duration = Duration::from_secs(60);
/// How long a computed status is reused even with `?fresh=true` (a fresh status computes a
/// whole layout: a page, or anyone, asking again and again gets the last one).
const STATUS_FRESH_TTL: Duration = Duration::from_secs(10);
/// The most matrices kept per graph read (three orders at a few sizes).
const MATRICES_KEPT: usize = 12;
/// The seed of the random order the matrix and page counts compare against.
const RANDOM_SEED: u64 = 1;

/// The dashboard's own state: cached reads and the relayout job. Each cache is filled by one
/// task at a time (its lock held across the computation, in a task of its own so a client
/// that goes away does not cancel it), and holds the relayout epoch it was read in: a
/// relayout bumps the epoch, and an entry of an older one is read again.
#[derive(Debug, Default)]
pub(crate) struct UiState {
    epoch: AtomicU64,
    graph: tokio::sync::Mutex<Option<(Instant, u64, Arc<Orders>)>>,
    status: tokio::sync::Mutex<Option<(Instant, u64, StatusJson)>>,
    relayout: Mutex<Job>,
}

/// The stored graph with the three orders the layout view compares, and what was computed
/// from them.
#[derive(Debug)]
struct Orders {
    stored: StoreGraph,
    input: Layout,
    random: Layout,
    current: Layout,
    record_bytes: u64,
    page_bytes: u64,
    /// Mean pages per friend list in each order (input, random, current).
    pages_mean: [f64; 3],
    /// Matrices computed, by order and bins (at most [`MATRICES_KEPT`]).
    matrices: Mutex<HashMap<(Order, usize), Arc<MatrixJson>>>,
}

impl Order {
    fn index(self) -> usize {
        self as usize
    }
}

impl Orders {
    fn get(&self, order: Order) -> &Layout {
        match order {
            Order::Input => &self.input,
            Order::Random => &self.random,
            Order::Current => &self.current,
        }
    }
}

/// The relayout job, as `GET /ui/api/relayout` reports it.
#[derive(Clone, Debug, Serialize)]
struct Job {
    /// `idle`, `running`, `done` or `failed`.
    state: &'static str,
    #[serde(skip)]
    progress: Option<Progress>,
    /// Where a running job is.
    #[serde(skip_serializing_if = "Option::is_none")]
    at: Option<ProgressSnapshot>,
    /// Seconds since it started.
    #[serde(skip_serializing_if = "Option::is_none")]
    seconds: Option<f64>,
    #[serde(skip)]
    started: Option<Instant>,
    #[serde(skip)]
    ended: Option<Instant>,
    /// What the last one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    report: Option<RelayoutReport>,
    /// Why the last one failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

impl Default for Job {
    fn default() -> Job {
        Job {
            state: "idle",
            progress: None,
            at: None,
            seconds: None,
            started: None,
            ended: None,
            report: None,
            error: None,
        }
    }
}

pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/ui", get(|| async { Redirect::permanent("/ui/") }))
        .route("/ui/", get(|| async { asset("text/html; charset=utf-8", INDEX_HTML.as_bytes()) }))
        .route(
            "/ui/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", APP_JS.as_bytes()) }),
        )
        .route(
            "/ui/app.css",
            get(|| async { asset("text/css; charset=utf-8", APP_CSS.as_bytes()) }),
        )
        .route(
            "/ui/echarts.min.js",
            get(|| async { asset("text/javascript; charset=utf-8", ECHARTS_JS) }),
        )
        .route("/ui/api/metrics", get(metrics))
        .route("/ui/api/ego/{uid}", get(ego))
        .route("/ui/api/status", get(status))
        .route("/ui/api/matrix", get(matrix))
        .route("/ui/api/pages/{uid}", get(pages))
        .route("/ui/api/relayout", get(relayout_state).post(relayout_start))
}

/// An embedded file, with a policy that lets the page load only its own scripts and data.
fn asset(content_type: &'static str, body: &'static [u8]) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; img-src 'self' data:; style-src 'self'; frame-ancestors 'none'",
            ),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
        .into_response()
}

fn unix_now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// One route's figures.
#[derive(Debug, Default, Serialize)]
struct RouteFigures {
    route: String,
    method: String,
    /// Requests answered, by status code.
    status: std::collections::BTreeMap<String, u64>,
    /// The latency histogram: `[upper bound in seconds, cumulative count]`, the last bound
    /// infinite (`null`).
    buckets: Vec<(Option<f64>, u64)>,
    /// Seconds spent in all.
    sum_s: f64,
}

#[derive(Debug, Serialize)]
struct MetricsJson {
    unix_s: f64,
    routes: Vec<RouteFigures>,
    stats: serde_json::Value,
}

async fn metrics(State(s): State<AppState>) -> axum::Json<MetricsJson> {
    let mut routes: std::collections::BTreeMap<(String, String), RouteFigures> =
        std::collections::BTreeMap::new();
    for family in s.registry.gather() {
        let name = family.name();
        if name != "kith_http_requests_total" && name != "kith_http_request_duration_seconds" {
            continue;
        }
        for m in family.get_metric() {
            let label = |key: &str| {
                m.get_label().iter().find(|l| l.name() == key).map(|l| l.value().to_string())
            };
            let (Some(route), Some(method)) = (label("route"), label("method")) else {
                continue;
            };
            let figures = routes
                .entry((route.clone(), method.clone()))
                .or_insert_with(|| RouteFigures { route, method, ..RouteFigures::default() });
            if name == "kith_http_requests_total" {
                let code = label("status").unwrap_or_default();
                // Counters hold whole numbers of requests.
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let n = m.get_counter().get_value() as u64;
                *figures.status.entry(code).or_default() += n;
            } else {
                let h = m.get_histogram();
                figures.buckets = h
                    .get_bucket()
                    .iter()
                    .map(|b| (Some(b.upper_bound()), b.cumulative_count()))
                    .collect();
                figures.buckets.push((None, h.get_sample_count()));
                figures.sum_s = h.get_sample_sum();
            }
        }
    }
    let stats = crate::stats_json(&s).await;
    axum::Json(MetricsJson { unix_s: unix_now(), routes: routes.into_values().collect(), stats })
}

#[derive(Debug, Deserialize)]
struct EgoQuery {
    limit: Option<usize>,
}

#[derive(Debug, Serialize)]
struct EgoJson {
    uid: u64,
    /// The friends drawn (the first `limit` by uid).
    friends: Vec<u64>,
    /// Friends in all.
    friends_total: u64,
    /// Friendships among the user and the friends drawn, each once, smaller uid first.
    edges: Vec<(u64, u64)>,
}

async fn ego(
    State(s): State<AppState>,
    Path(uid): Path<u64>,
    Query(q): Query<EgoQuery>,
) -> ApiResult<axum::Json<EgoJson>> {
    let limit = q.limit.unwrap_or(60);
    if limit == 0 || limit > MAX_EGO_FRIENDS {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_parameter",
            format!("limit must be 1..={MAX_EGO_FRIENDS}, got {limit}"),
        ));
    }
    let engine = s.engine.clone();
    let ego = kith_feed::blocking(move || ego_of(engine.as_ref(), uid, limit)).await?;
    Ok(axum::Json(ego))
}

fn ego_of(engine: &dyn Engine, uid: u64, limit: usize) -> kith_store::Result<EgoJson> {
    let all = engine.get_all_friends(uid)?;
    let friends: Vec<u64> = all.iter().copied().take(limit).collect();
    let drawn: std::collections::HashSet<u64> = friends.iter().copied().collect();
    let mut edges: Vec<(u64, u64)> = friends.iter().map(|&f| (uid.min(f), uid.max(f))).collect();
    for &f in &friends {
        // A friend removed since the first read is simply not drawn.
        let theirs = match engine.get_all_friends(f) {
            Ok(list) => list,
            Err(kith_store::Error::UnknownUser(_)) => continue,
            Err(e) => return Err(e),
        };
        edges.extend(theirs.into_iter().filter(|g| *g > f && drawn.contains(g)).map(|g| (f, g)));
    }
    Ok(EgoJson { uid, friends, friends_total: all.len() as u64, edges })
}

/// 501 for an engine whose layout the service cannot administer.
fn admin_of(engine: &dyn Engine) -> ApiResult<&dyn LayoutAdmin> {
    engine.layout_admin().ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "not_supported",
            "this storage engine's layout is administered from the command line \
             (kith store status|relayout --cassandra), not from the service",
        )
    })
}

/// A task's failure to finish (a panic) as a 500.
fn task_failed(e: &tokio::task::JoinError) -> ApiError {
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", format!("dashboard task: {e}"))
}

/// The stored graph and its three orders, read at most every [`GRAPH_TTL`] and again after a
/// relayout.
async fn orders(s: &AppState) -> ApiResult<Arc<Orders>> {
    admin_of(s.engine.as_ref())?;
    let (engine, ui) = (s.engine.clone(), s.ui.clone());
    let task = tokio::spawn(async move {
        let mut cached = ui.graph.lock().await;
        let epoch = ui.epoch.load(AtomicOrdering::SeqCst);
        if let Some((at, e, o)) = cached.as_ref()
            && *e == epoch
            && at.elapsed() < GRAPH_TTL
        {
            return Ok(o.clone());
        }
        let o = Arc::new(kith_feed::blocking(move || read_orders(engine.as_ref())).await?);
        *cached = Some((Instant::now(), epoch, o.clone()));
        Ok::<_, ApiError>(o)
    });
    task.await.map_err(|e| task_failed(&e))?
}

fn read_orders(engine: &dyn Engine) -> kith_store::Result<Orders> {
    let admin = engine.layout_admin().expect("checked by the caller");
    let stored = admin.stored_graph()?;
    let (record_bytes, page_bytes) = admin.paging()?;
    let n = stored.graph.num_nodes();
    let current = Layout::from_order(stored.order.clone())?;
    let random_config =
        LayoutConfig { method: Method::Random, seed: RANDOM_SEED, ..LayoutConfig::default() };
    let random = kith_layout::compute(&stored.graph, &random_config)?.layout;
    let input = Layout::identity(n);
    let pages = |l: &Layout| mean_pages_of(&stored.graph, l, record_bytes, page_bytes);
    let pages_mean = [pages(&input), pages(&random), pages(&current)];
    Ok(Orders {
        stored,
        input,
        random,
        current,
        record_bytes,
        page_bytes,
        pages_mean,
        matrices: Mutex::default(),
    })
}

#[derive(Clone, Debug, Serialize)]
struct StatusJson {
    /// When it was computed (Unix seconds).
    computed_unix_s: f64,
    #[serde(flatten)]
    status: kith_store::Status,
}

#[derive(Debug, Deserialize)]
struct StatusQuery {
    #[serde(default)]
    fresh: bool,
}

async fn status(
    State(s): State<AppState>,
    Query(q): Query<StatusQuery>,
) -> ApiResult<axum::Json<StatusJson>> {
    admin_of(s.engine.as_ref())?;
    let (engine, ui) = (s.engine.clone(), s.ui.clone());
    let task = tokio::spawn(async move {
        // One computation at a time; those who asked meanwhile get its result.
        let mut cached = ui.status.lock().await;
        let epoch = ui.epoch.load(AtomicOrdering::SeqCst);
        let max_age = if q.fresh { STATUS_FRESH_TTL } else { STATUS_TTL };
        if let Some((at, e, st)) = cached.as_ref()
            && *e == epoch
            && at.elapsed() < max_age
        {
            return Ok(st.clone());
        }
        let status =
            kith_feed::blocking(move || engine.layout_admin().expect("checked").status()).await?;
        let st = StatusJson { computed_unix_s: unix_now(), status };
        *cached = Some((Instant::now(), epoch, st.clone()));
        Ok::<_, ApiError>(st)
    });
    Ok(axum::Json(task.await.map_err(|e| task_failed(&e))??))
}

/// The orders the layout view compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
enum Order {
    /// By uid: the order users came in.
    Input,
    /// A seeded random permutation.
    Random,
    /// The store's layout.
    Current,
}

#[derive(Debug, Deserialize)]
struct MatrixQuery {
    order: Order,
    bins: Option<usize>,
}

#[derive(Clone, Debug, Serialize)]
struct MatrixJson {
    order: Order,
    users: u64,
    bins: usize,
    /// `cells[i * bins + j]`: friendships between the users at positions in bin `i` and in
    /// bin `j` (both directions, so the matrix is symmetric).
    cells: Vec<u64>,
    /// Mean pages per "list all friends" in this order.
    pages_mean: f64,
    record_bytes: u64,
    page_bytes: u64,
}

async fn matrix(
    State(s): State<AppState>,
    Query(q): Query<MatrixQuery>,
) -> ApiResult<axum::Json<MatrixJson>> {
    let bins = q.bins.unwrap_or(128);
    if !(1..=MAX_MATRIX_BINS).contains(&bins) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_parameter",
            format!("bins must be 1..={MAX_MATRIX_BINS}, got {bins}"),
        ));
    }
    let o = orders(&s).await?;
    let order = q.order;
    let n = o.stored.graph.num_nodes().max(1);
    let key = (order, bins.min(n));
    if let Some(m) = o.matrices.lock().unwrap_or_else(PoisonError::into_inner).get(&key) {
        return Ok(axum::Json(MatrixJson::clone(m)));
    }
    let computed = o.clone();
    let m = kith_feed::blocking(move || -> kith_store::Result<MatrixJson> {
        Ok(matrix_of(&computed, order, bins))
    })
    .await?;
    let m = Arc::new(m);
    let mut kept = o.matrices.lock().unwrap_or_else(PoisonError::into_inner);
    if kept.len() >= MATRICES_KEPT {
        kept.clear();
    }
    kept.insert(key, m.clone());
    Ok(axum::Json(MatrixJson::clone(&m)))
}

fn matrix_of(o: &Orders, order: Order, bins: usize) -> MatrixJson {
    let graph = &o.stored.graph;
    let n = graph.num_nodes().max(1);
    let bins = bins.min(n);
    let pos = o.get(order).positions();
    let bin = |v: u32| pos[v as usize] as usize * bins / n;
    let mut cells = vec![0u64; bins * bins];
    for v in 0..graph.num_nodes() as u32 {
        let bv = bin(v);
        for &w in graph.neighbors(v) {
            cells[bv * bins + bin(w)] += 1;
        }
    }
    MatrixJson {
        order,
        users: graph.num_nodes() as u64,
        bins,
        cells,
        pages_mean: o.pages_mean[order.index()],
        record_bytes: o.record_bytes,
        page_bytes: o.page_bytes,
    }
}

#[derive(Debug, Serialize)]
struct PagesJson {
    uid: u64,
    friends: u64,
    /// Pages read by "list all friends" of the user (the pages holding the user's record or
    /// a friend's), by order.
    input: u64,
    random: u64,
    current: u64,
    record_bytes: u64,
    page_bytes: u64,
}

async fn pages(
    State(s): State<AppState>,
    Path(uid): Path<u64>,
) -> ApiResult<axum::Json<PagesJson>> {
    let o = orders(&s).await?;
    let graph = &o.stored.graph;
    let v =
        graph.dense_id(uid).ok_or_else(|| ApiError::from(kith_store::Error::UnknownUser(uid)))?;
    let mut scratch = Vec::new();
    let mut count = |order| {
        pages_touched_of(graph, o.get(order), v, o.record_bytes, o.page_bytes, &mut scratch)
    };
    Ok(axum::Json(PagesJson {
        uid,
        friends: graph.neighbors(v).len() as u64,
        input: count(Order::Input),
        random: count(Order::Random),
        current: count(Order::Current),
        record_bytes: o.record_bytes,
        page_bytes: o.page_bytes,
    }))
}

fn job_snapshot(job: &Job) -> Job {
    let mut j = job.clone();
    j.at = job.progress.as_ref().map(Progress::snapshot);
    j.seconds =
        job.started.map(|t| job.ended.unwrap_or_else(Instant::now).duration_since(t).as_secs_f64());
    j
}

async fn relayout_state(State(s): State<AppState>) -> ApiResult<axum::Json<Job>> {
    admin_of(s.engine.as_ref())?;
    let job = s.ui.relayout.lock().unwrap_or_else(PoisonError::into_inner);
    Ok(axum::Json(job_snapshot(&job)))
}

async fn relayout_start(State(s): State<AppState>) -> ApiResult<(StatusCode, axum::Json<Job>)> {
    admin_of(s.engine.as_ref())?;
    if s.token.is_none() {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "token_required",
            "a relayout rewrites the whole store: start the server with a token (--token-file) to allow it",
        ));
    }
    let progress = Progress::terminal(false);
    {
        let mut job = s.ui.relayout.lock().unwrap_or_else(PoisonError::into_inner);
        if job.state == "running" {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "relayout_running",
                "a relayout is already running; GET /ui/api/relayout shows how far it is",
            ));
        }
        *job = Job {
            state: "running",
            progress: Some(progress.clone()),
            started: Some(Instant::now()),
            ..Job::default()
        };
    }
    let (engine, ui) = (s.engine.clone(), s.ui.clone());
    tokio::spawn(async move {
        let result = kith_feed::blocking(move || {
            engine.layout_admin().expect("checked").relayout(&progress)
        })
        .await;
        // Every cached read is of the old layout now.
        ui.epoch.fetch_add(1, AtomicOrdering::SeqCst);
        let mut job = ui.relayout.lock().unwrap_or_else(PoisonError::into_inner);
        job.ended = Some(Instant::now());
        match result {
            Ok(report) => {
                job.state = "done";
                job.report = Some(report);
            }
            Err(e) => {
                eprintln!("kith serve: relayout failed: {e}");
                job.state = "failed";
                job.error = Some(e.to_string());
            }
        }
    });
    let job = job_snapshot(&s.ui.relayout.lock().unwrap_or_else(PoisonError::into_inner));
    Ok((StatusCode::ACCEPTED, axum::Json(job)))
}
