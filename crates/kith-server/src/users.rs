//! Parker's API: users, profiles, friend lists, listings, paths and neighbourhoods.
//! Friendship writes and friend-list reads go through the feed (which keeps its cache of
//! friend lists in step); everything else is one engine call.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::StatusCode;
use base64::Engine as _;
use kith_store::{Engine, MAX_DATA_BYTES, MAX_PAGE};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{Json, Path, Query};
use crate::state::AppState;

/// Runs one engine call on the blocking pool, off the async executor.
pub(crate) async fn engine_call<T: Send + 'static>(
    s: &AppState,
    f: impl FnOnce(&dyn Engine) -> kith_store::Result<T> + Send + 'static,
) -> ApiResult<T> {
    let engine = s.engine.clone();
    Ok(kith_feed::blocking(move || f(engine.as_ref())).await?)
}

/// A profile.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileJson {
    /// Display name.
    pub name: String,
    /// Age in years.
    #[serde(default)]
    pub age: Option<u32>,
    /// Any other fields.
    #[serde(default)]
    pub fields: BTreeMap<String, String>,
}

impl From<kith_store::Profile> for ProfileJson {
    fn from(p: kith_store::Profile) -> Self {
        ProfileJson { name: p.name, age: p.age, fields: p.fields }
    }
}

impl From<ProfileJson> for kith_store::Profile {
    fn from(p: ProfileJson) -> Self {
        kith_store::Profile { name: p.name, age: p.age, fields: p.fields }
    }
}

/// A user.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserJson {
    /// The id.
    pub uid: u64,
    /// The profile.
    pub profile: ProfileJson,
    /// The first friends' ids, ascending: at most [`USER_FRIENDS_PAGE`] of them; the rest
    /// are read a page at a time from `GET /users/{uid}/friends?offset=100`.
    pub friends: Vec<u64>,
    /// How many friends the user has.
    pub friends_total: u64,
    /// Size of the data block in bytes.
    pub data_bytes: u64,
}

/// The most friends a user's representation lists: a user may have up to 2^20 friends,
/// and one response must stay small.
pub const USER_FRIENDS_PAGE: usize = 100;

impl From<kith_store::User> for UserJson {
    fn from(u: kith_store::User) -> Self {
        let friends_total = u.friends.len() as u64;
        let mut friends = u.friends;
        friends.truncate(USER_FRIENDS_PAGE);
        UserJson {
            uid: u.uid,
            profile: u.profile.into(),
            friends,
            friends_total,
            data_bytes: u.data_bytes,
        }
    }
}

/// A whole user, as `PUT /users/{uid}` takes it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutUser {
    /// The profile.
    pub profile: ProfileJson,
    /// Friends' ids (each must exist); the friendships change on both sides.
    #[serde(default)]
    pub friends: Vec<u64>,
    /// The data block, base64 (standard alphabet); left as it is when absent.
    #[serde(default)]
    pub data_base64: Option<String>,
}

/// Parameters of a friend-list read.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct FriendsQuery {
    /// Skip this many friends (default 0).
    pub offset: Option<u64>,
    /// At most this many (default 100, at most 1000).
    pub limit: Option<u64>,
    /// `strong` (default) reflects every acknowledged write; `eventual` may be served from
    /// the cache, at most its time to live behind.
    pub consistency: Option<Consistency>,
}

/// Parameters of a user or profile read.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ReadQuery {
    /// `strong` (default) reflects every acknowledged write; `eventual` lets the nearest
    /// copy answer alone: on the store on Cassandra a read at consistency ONE (faster, and
    /// served while a minority of replicas is up, but it may miss a write that has not
    /// reached that replica); on RocksDB, which keeps one copy, the same read as `strong`.
    pub consistency: Option<Consistency>,
}

impl ReadQuery {
    fn level(&self) -> kith_store::ReadLevel {
        match self.consistency {
            Some(Consistency::Eventual) => kith_store::ReadLevel::One,
            Some(Consistency::Strong) | None => kith_store::ReadLevel::Strong,
        }
    }
}

/// Read consistency.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Consistency {
    /// Read-your-writes.
    Strong,
    /// May be served from cache.
    Eventual,
}

impl From<Consistency> for kith_feed::Consistency {
    fn from(c: Consistency) -> Self {
        match c {
            Consistency::Strong => kith_feed::Consistency::Strong,
            Consistency::Eventual => kith_feed::Consistency::Eventual,
        }
    }
}

/// A page of a friend list.
#[derive(Debug, Serialize, ToSchema)]
pub struct FriendsJson {
    /// The user.
    pub uid: u64,
    /// Friends' ids, ascending, from `offset`.
    pub friends: Vec<u64>,
    /// The user's friend count.
    pub total: u64,
    /// The offset asked for.
    pub offset: u64,
    /// How it was read.
    pub consistency: Consistency,
}

/// The result of a friendship change.
#[derive(Debug, Serialize, ToSchema)]
pub struct FriendshipJson {
    /// One side.
    pub uid: u64,
    /// The other side.
    pub fid: u64,
    /// Whether anything changed (false when it already was so).
    pub changed: bool,
}

/// A user in a listing.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserSummary {
    /// The id.
    pub uid: u64,
    /// The profile.
    pub profile: ProfileJson,
}

/// A page of users.
#[derive(Debug, Serialize, ToSchema)]
pub struct UsersJson {
    /// Users in layout order.
    pub users: Vec<UserSummary>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

/// Parameters of the user listing.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct UsersQuery {
    /// Where the previous page ended (its `next_cursor`).
    pub cursor: Option<String>,
    /// At most this many (default 100, at most 1000).
    pub limit: Option<u64>,
}

/// Parameters of the random sample.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RandomQuery {
    /// How many distinct users (default 10, at most 1000).
    pub n: Option<u64>,
}

pub(crate) fn page_limit(
    limit: Option<u64>,
    default: u64,
    max: u64,
    name: &str,
) -> ApiResult<usize> {
    match limit.unwrap_or(default) {
        0 => Err(ApiError::bad_parameter(format!("{name} must be at least 1"))),
        l if l > max => {
            Err(ApiError::bad_parameter(format!("{name} {l} exceeds the limit of {max}")))
        }
        l => Ok(l as usize),
    }
}

/// The user: profile, data size, friend count and the first page of friends.
#[utoipa::path(get, path = "/users/{uid}", tag = "users",
    params(("uid" = u64, Path, description = "User id"), ReadQuery),
    responses((status = 200, body = UserJson), (status = 400, body = ErrorBody),
        (status = 404, body = ErrorBody)))]
pub async fn get_user(
    State(s): State<AppState>,
    Path(uid): Path<u64>,
    Query(q): Query<ReadQuery>,
) -> ApiResult<axum::Json<UserJson>> {
    let level = q.level();
    Ok(axum::Json(engine_call(&s, move |e| e.get_user_at(uid, level)).await?.into()))
}

/// Creates or replaces a whole user: profile, friends and optionally the data block.
#[utoipa::path(put, path = "/users/{uid}", tag = "users",
    params(("uid" = u64, Path, description = "User id")), request_body = PutUser,
    responses((status = 200, body = UserJson), (status = 400, body = ErrorBody),
        (status = 404, description = "A friend does not exist", body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn put_user(
    State(s): State<AppState>,
    Path(uid): Path<u64>,
    Json(body): Json<PutUser>,
) -> ApiResult<axum::Json<UserJson>> {
    let data = match &body.data_base64 {
        None => None,
        Some(b) => {
            let bytes = base64::engine::general_purpose::STANDARD.decode(b).map_err(|e| {
                ApiError::new(StatusCode::BAD_REQUEST, "bad_body", format!("data_base64: {e}"))
            })?;
            if bytes.len() as u64 > MAX_DATA_BYTES {
                return Err(kith_store::Error::TooLarge {
                    what: "data block bytes",
                    got: bytes.len() as u64,
                    limit: MAX_DATA_BYTES,
                }
                .into());
            }
            Some(bytes)
        }
    };
    let feed = s.feed.clone();
    let put = async move { feed.put_user(uid, body.profile.into(), body.friends, data).await };
    Ok(axum::Json(kith_feed::detached(put).await?.into()))
}

/// The profile.
#[utoipa::path(get, path = "/users/{uid}/profile", tag = "users",
    params(("uid" = u64, Path, description = "User id"), ReadQuery),
    responses((status = 200, body = ProfileJson), (status = 400, body = ErrorBody),
        (status = 404, body = ErrorBody)))]
pub async fn get_profile(
    State(s): State<AppState>,
    Path(uid): Path<u64>,
    Query(q): Query<ReadQuery>,
) -> ApiResult<axum::Json<ProfileJson>> {
    let level = q.level();
    Ok(axum::Json(engine_call(&s, move |e| e.get_profile_at(uid, level)).await?.into()))
}

/// Replaces the profile.
#[utoipa::path(put, path = "/users/{uid}/profile", tag = "users",
    params(("uid" = u64, Path, description = "User id")), request_body = ProfileJson,
    responses((status = 200, body = ProfileJson), (status = 400, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 413, body = ErrorBody)))]
pub async fn put_profile(
    State(s): State<AppState>,
    Path(uid): Path<u64>,
    Json(body): Json<ProfileJson>,
) -> ApiResult<axum::Json<ProfileJson>> {
    let profile: kith_store::Profile = body.into();
    let p = engine_call(&s, move |e| {
        e.put_profile(uid, &profile)?;
        e.get_profile(uid)
    })
    .await?;
    Ok(axum::Json(p.into()))
}

/// A page of the friend list.
#[utoipa::path(get, path = "/users/{uid}/friends", tag = "users",
    params(("uid" = u64, Path, description = "User id"), FriendsQuery),
    responses((status = 200, body = FriendsJson), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn get_friends(
    State(s): State<AppState>,
    Path(uid): Path<u64>,
    Query(q): Query<FriendsQuery>,
) -> ApiResult<axum::Json<FriendsJson>> {
    let limit = page_limit(q.limit, 100, MAX_PAGE as u64, "limit")?;
    let offset = q.offset.unwrap_or(0);
    let consistency = q.consistency.unwrap_or(Consistency::Strong);
    let off = usize::try_from(offset).unwrap_or(usize::MAX);
    let page = s.feed.friends(uid, off, limit, consistency.into()).await?;
    let (friends, total) = (page.friends, page.total as u64);
    Ok(axum::Json(FriendsJson { uid, friends, total, offset, consistency }))
}

/// Adds the friendship (both sides, atomically; idempotent).
#[utoipa::path(post, path = "/users/{uid}/friends/{fid}", tag = "users",
    params(("uid" = u64, Path, description = "User id"), ("fid" = u64, Path, description = "Friend id"),
        ("Idempotency-Key" = Option<String>, Header, description = "A retry with the same key gets the first answer (header Idempotent-Replayed: true) and changes nothing")),
    responses((status = 200, body = FriendshipJson), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn add_friend(
    State(s): State<AppState>,
    Path((uid, fid)): Path<(u64, u64)>,
    headers: axum::http::HeaderMap,
) -> ApiResult<(axum::http::HeaderMap, axum::Json<FriendshipJson>)> {
    let key = crate::idempotency::idempotency_key(&headers)?;
    let feed = s.feed.clone();
    let applied =
        kith_feed::detached(async move { feed.friend_keyed(uid, fid, true, key).await }).await?;
    let json = FriendshipJson { uid, fid, changed: applied.value };
    Ok((crate::idempotency::replayed_headers(applied.replayed), axum::Json(json)))
}

/// Removes the friendship (both sides; idempotent).
#[utoipa::path(delete, path = "/users/{uid}/friends/{fid}", tag = "users",
    params(("uid" = u64, Path, description = "User id"), ("fid" = u64, Path, description = "Friend id"),
        ("Idempotency-Key" = Option<String>, Header, description = "A retry with the same key gets the first answer (header Idempotent-Replayed: true) and changes nothing")),
    responses((status = 200, body = FriendshipJson), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
pub async fn delete_friend(
    State(s): State<AppState>,
    Path((uid, fid)): Path<(u64, u64)>,
    headers: axum::http::HeaderMap,
) -> ApiResult<(axum::http::HeaderMap, axum::Json<FriendshipJson>)> {
    let key = crate::idempotency::idempotency_key(&headers)?;
    let feed = s.feed.clone();
    let applied =
        kith_feed::detached(async move { feed.friend_keyed(uid, fid, false, key).await }).await?;
    let json = FriendshipJson { uid, fid, changed: applied.value };
    Ok((crate::idempotency::replayed_headers(applied.replayed), axum::Json(json)))
}

/// All users, a page at a time, in layout order.
#[utoipa::path(get, path = "/users", tag = "users", params(UsersQuery),
    responses((status = 200, body = UsersJson), (status = 400, body = ErrorBody),
        (status = 409, description = "The cursor is from before a relayout", body = ErrorBody)))]
pub async fn list_users(
    State(s): State<AppState>,
    Query(q): Query<UsersQuery>,
) -> ApiResult<axum::Json<UsersJson>> {
    let limit = page_limit(q.limit, 100, MAX_PAGE as u64, "limit")?;
    let cursor = match &q.cursor {
        None => None,
        Some(c) => Some(
            kith_store::UsersCursor::decode(c)
                .ok_or_else(|| ApiError::bad_parameter(format!("malformed cursor {c:?}")))?,
        ),
    };
    let (users, next) = engine_call(&s, move |e| e.users_page(cursor, limit)).await?;
    Ok(axum::Json(UsersJson {
        users: users.into_iter().map(|(uid, p)| UserSummary { uid, profile: p.into() }).collect(),
        next_cursor: next.map(|c| c.encode()),
    }))
}

/// Distinct users drawn uniformly at random.
#[utoipa::path(get, path = "/users/random", tag = "users", params(RandomQuery),
    responses((status = 200, body = UsersJson), (status = 400, body = ErrorBody)))]
pub async fn random_users(
    State(s): State<AppState>,
    Query(q): Query<RandomQuery>,
) -> ApiResult<axum::Json<UsersJson>> {
    let n = page_limit(q.n, 10, MAX_PAGE as u64, "n")?;
    let users = engine_call(&s, move |e| e.random_users(n, &mut rand::rng())).await?;
    Ok(axum::Json(UsersJson {
        users: users.into_iter().map(|(uid, p)| UserSummary { uid, profile: p.into() }).collect(),
        next_cursor: None,
    }))
}
