//! Parker's graph reads over HTTP: a shortest friendship path, and a user's neighbourhood.

use axum::extract::State;
use kith_store::{MAX_NEIGHBORHOOD_HOPS, MAX_PATH_HOPS};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{Path, Query};
use crate::state::AppState;
use crate::users::{engine_call, page_limit};

/// Parameters of a shortest-path search.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PathQuery {
    /// From this user.
    pub from: u64,
    /// To this user.
    pub to: u64,
    /// Search at most this many hops (default 6, at most 6).
    pub max_hops: Option<u32>,
}

/// A shortest path.
#[derive(Debug, Serialize, ToSchema)]
pub struct PathJson {
    /// From.
    pub from: u64,
    /// To.
    pub to: u64,
    /// The hops searched.
    pub max_hops: u32,
    /// The users on a shortest path, both ends included; null if none within `max_hops`.
    pub path: Option<Vec<u64>>,
    /// The path's length in hops; null if none.
    pub hops: Option<u32>,
}

/// Parameters of a neighbourhood read.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct HoodQuery {
    /// Hops, 1 to 3.
    pub hops: u32,
    /// At most this many users (default 10,000, at most 100,000).
    pub limit: Option<u64>,
}

/// A user at some distance.
#[derive(Debug, Serialize, ToSchema)]
pub struct Near {
    /// The user.
    pub uid: u64,
    /// Hops from the centre.
    pub distance: u32,
}

/// A neighbourhood.
#[derive(Debug, Serialize, ToSchema)]
pub struct HoodJson {
    /// The centre.
    pub uid: u64,
    /// The hops asked for.
    pub hops: u32,
    /// Users within `hops`, by distance then id (the centre not included).
    pub users: Vec<Near>,
    /// Whether `limit` cut the list.
    pub truncated: bool,
}

/// The most users a neighbourhood read returns.
pub const MAX_NEIGHBORHOOD_USERS: u64 = 100_000;

/// A shortest friendship path (bidirectional BFS expanding the smaller frontier).
#[utoipa::path(get, path = "/paths/shortest", tag = "graph", params(PathQuery),
    responses((status = 200, body = PathJson), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn shortest_path(
    State(s): State<AppState>,
    Query(q): Query<PathQuery>,
) -> ApiResult<axum::Json<PathJson>> {
    let max_hops = q.max_hops.unwrap_or(MAX_PATH_HOPS);
    if max_hops > MAX_PATH_HOPS {
        return Err(ApiError::bad_parameter(format!(
            "max_hops {max_hops} exceeds the limit of {MAX_PATH_HOPS}"
        )));
    }
    let (from, to) = (q.from, q.to);
    let path = engine_call(&s, move |e| e.shortest_path(from, to, max_hops)).await?;
    let hops = path.as_ref().map(|p| p.len() as u32 - 1);
    Ok(axum::Json(PathJson { from, to, max_hops, path, hops }))
}

/// Users within `hops` of a user, with their distance.
#[utoipa::path(get, path = "/users/{uid}/neighborhood", tag = "graph",
    params(("uid" = u64, Path, description = "User id"), HoodQuery),
    responses((status = 200, body = HoodJson), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn neighborhood(
    State(s): State<AppState>,
    Path(uid): Path<u64>,
    Query(q): Query<HoodQuery>,
) -> ApiResult<axum::Json<HoodJson>> {
    if q.hops == 0 || q.hops > MAX_NEIGHBORHOOD_HOPS {
        return Err(ApiError::bad_parameter(format!(
            "hops must be 1 to {MAX_NEIGHBORHOOD_HOPS}, got {}",
            q.hops
        )));
    }
    let limit = page_limit(q.limit, 10_000, MAX_NEIGHBORHOOD_USERS, "limit")?;
    let hops = q.hops;
    let hood = engine_call(&s, move |e| e.neighborhood(uid, hops, limit)).await?;
    Ok(axum::Json(HoodJson {
        uid,
        hops,
        users: hood.users.into_iter().map(|(uid, distance)| Near { uid, distance }).collect(),
        truncated: hood.truncated,
    }))
}
