//! Twibo's API: follows, posts and feeds.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use kith_feed::{MAX_FEED_PAGE, PostRequest};
use kith_store::{MAX_FOLLOW_TARGETS, Post};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::{Json, Path, Query};
use crate::idempotency::{idempotency_key, replayed_headers};
use crate::state::AppState;
use crate::users::page_limit;

/// Whom to follow.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FollowBody {
    /// Users to follow (1 to 1000, none already followed; all or nothing).
    pub targets: Vec<u64>,
}

/// The result of a follow change.
#[derive(Debug, Serialize, ToSchema)]
pub struct FollowJson {
    /// The follower.
    pub uid: u64,
    /// Followees added or removed.
    pub targets: Vec<u64>,
    /// The follower's followee count now.
    pub followees: u64,
}

/// Paging of follow lists.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct FollowsQuery {
    /// Skip this many of each list (default 0).
    pub offset: Option<u64>,
    /// At most this many of each (default 100, at most 1000).
    pub limit: Option<u64>,
}

/// A user's follow lists.
#[derive(Debug, Serialize, ToSchema)]
pub struct FollowsJson {
    /// The user.
    pub uid: u64,
    /// Whom the user follows (a page, ascending).
    pub followees: Vec<u64>,
    /// Who follows the user (a page, ascending).
    pub followers: Vec<u64>,
    /// How many the user follows.
    pub followee_count: u64,
    /// How many follow the user.
    pub follower_count: u64,
}

/// A new post.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewPost {
    /// The author.
    pub author: u64,
    /// The text (1 byte to 64 KiB).
    pub content: String,
    /// A client-chosen id (1 to 2^53 - 1; Twibo's option): posting the same author and
    /// content under it again answers with the stored post; an id another post has is 409
    /// `post_id_taken`.
    pub id: Option<u64>,
    /// The client's time for its `id`, milliseconds since the Unix epoch (now if absent;
    /// only with `id`).
    pub ts_ms: Option<u64>,
}

/// A post.
#[derive(Debug, Serialize, ToSchema)]
pub struct PostJson {
    /// Time-ordered id (larger is newer).
    pub id: u64,
    /// The author.
    pub author: u64,
    /// Milliseconds since the Unix epoch.
    pub ts_ms: u64,
    /// The text.
    pub content: String,
    /// What failed after the post was stored, without undoing it (a cache that could not
    /// be updated, for instance); absent when nothing did. The post stands: do not retry.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl From<&Post> for PostJson {
    fn from(p: &Post) -> Self {
        PostJson {
            id: p.id,
            author: p.author,
            ts_ms: p.ts_ms,
            content: p.content.clone(),
            warnings: Vec::new(),
        }
    }
}

/// Paging of a feed.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct FeedQuery {
    /// At most this many posts (default 50, at most 1000).
    pub limit: Option<u64>,
    /// The `next_cursor` of the previous page.
    pub before: Option<String>,
}

/// A page of a feed.
#[derive(Debug, Serialize, ToSchema)]
pub struct FeedJson {
    /// The reader.
    pub uid: u64,
    /// Posts by the users the reader follows, newest first.
    pub posts: Vec<PostJson>,
    /// Pass as `before` for older posts; absent when there are none.
    pub next_cursor: Option<String>,
}

/// Follows users.
#[utoipa::path(post, path = "/users/{uid}/follow", tag = "feeds",
    params(("uid" = u64, Path, description = "The follower"),
        ("Idempotency-Key" = Option<String>, Header, description = "A retry with the same key and body gets the first answer (header Idempotent-Replayed: true) and follows nothing again")),
    request_body = FollowBody,
    responses((status = 200, body = FollowJson), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "Already following", body = ErrorBody),
        (status = 422, description = "Self-follow, or an idempotency key reused for another request", body = ErrorBody)))]
pub async fn follow(
    State(s): State<AppState>,
    Path(uid): Path<u64>,
    headers: HeaderMap,
    Json(body): Json<FollowBody>,
) -> ApiResult<(HeaderMap, axum::Json<FollowJson>)> {
    if body.targets.is_empty() || body.targets.len() > MAX_FOLLOW_TARGETS {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_body",
            format!(
                "targets must name 1 to {MAX_FOLLOW_TARGETS} users, got {}",
                body.targets.len()
            ),
        ));
    }
    let key = idempotency_key(&headers)?;
    let (feed, targets) = (s.feed.clone(), body.targets.clone());
    let applied =
        kith_feed::detached(async move { feed.follow_keyed(uid, targets, key).await }).await?;
    let followees = s.feed.follows(uid, 0, 0).await?.degree.followees;
    let json = FollowJson { uid, targets: body.targets, followees };
    Ok((replayed_headers(applied.replayed), axum::Json(json)))
}

/// Stops following a user.
#[utoipa::path(delete, path = "/users/{uid}/follow/{target}", tag = "feeds",
    params(("uid" = u64, Path, description = "The follower"), ("target" = u64, Path, description = "The followee"),
        ("Idempotency-Key" = Option<String>, Header, description = "A retry with the same key gets the first answer (header Idempotent-Replayed: true) instead of 404 not_following")),
    responses((status = 200, body = FollowJson), (status = 404, body = ErrorBody),
        (status = 422, description = "An idempotency key reused for another request", body = ErrorBody)))]
pub async fn unfollow(
    State(s): State<AppState>,
    Path((uid, target)): Path<(u64, u64)>,
    headers: HeaderMap,
) -> ApiResult<(HeaderMap, axum::Json<FollowJson>)> {
    let key = idempotency_key(&headers)?;
    let feed = s.feed.clone();
    let applied =
        kith_feed::detached(async move { feed.unfollow_keyed(uid, target, key).await }).await?;
    let followees = s.feed.follows(uid, 0, 0).await?.degree.followees;
    let json = FollowJson { uid, targets: vec![target], followees };
    Ok((replayed_headers(applied.replayed), axum::Json(json)))
}

/// Followees and followers.
#[utoipa::path(get, path = "/users/{uid}/follows", tag = "feeds",
    params(("uid" = u64, Path, description = "User id"), FollowsQuery),
    responses((status = 200, body = FollowsJson), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub async fn follows(
    State(s): State<AppState>,
    Path(uid): Path<u64>,
    Query(q): Query<FollowsQuery>,
) -> ApiResult<axum::Json<FollowsJson>> {
    let limit = page_limit(q.limit, 100, 1000, "limit")?;
    let offset = usize::try_from(q.offset.unwrap_or(0)).unwrap_or(usize::MAX);
    let f = s.feed.follows(uid, offset, limit).await?;
    Ok(axum::Json(FollowsJson {
        uid,
        followees: f.followees,
        followers: f.followers,
        followee_count: f.degree.followees,
        follower_count: f.degree.followers,
    }))
}

/// Publishes a post; acknowledged once durable. Once it is, a cache failure no longer fails
/// the request: the answer is 201 with `warnings`, and followers' timelines get the post
/// through the fan-out, which retries and is redone after a crash.
#[utoipa::path(post, path = "/posts", tag = "feeds", request_body = NewPost,
    params(("Idempotency-Key" = Option<String>, Header, description = "A retry with the same key and body gets the first answer (header Idempotent-Replayed: true) and stores nothing, also after a restart or crash")),
    responses((status = 201, body = PostJson), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, description = "The client's id is another post's", body = ErrorBody),
        (status = 413, body = ErrorBody),
        (status = 422, description = "Invalid, or an idempotency key reused for another request", body = ErrorBody)))]
pub async fn create_post(
    State(s): State<AppState>,
    headers: HeaderMap,
    Json(body): Json<NewPost>,
) -> ApiResult<(StatusCode, HeaderMap, axum::Json<PostJson>)> {
    let req = PostRequest {
        author: body.author,
        content: body.content,
        id: body.id,
        ts_ms: body.ts_ms,
        idempotency_key: idempotency_key(&headers)?,
    };
    let feed = s.feed.clone();
    let posted = kith_feed::detached(async move { feed.post_with(req).await }).await?;
    let mut json: PostJson = posted.post.as_ref().into();
    json.warnings = posted.warnings;
    Ok((StatusCode::CREATED, replayed_headers(posted.replayed), axum::Json(json)))
}

/// One post.
#[utoipa::path(get, path = "/posts/{id}", tag = "feeds",
    params(("id" = u64, Path, description = "Post id")),
    responses((status = 200, body = PostJson), (status = 404, body = ErrorBody)))]
pub async fn get_post(
    State(s): State<AppState>,
    Path(id): Path<u64>,
) -> ApiResult<axum::Json<PostJson>> {
    Ok(axum::Json(s.feed.get_post(id).await?.as_ref().into()))
}

/// The user's feed, newest first.
#[utoipa::path(get, path = "/users/{uid}/feed", tag = "feeds",
    params(("uid" = u64, Path, description = "The reader"), FeedQuery),
    responses((status = 200, body = FeedJson), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 422, description = "too_expensive: the reader follows more users than one read merges (2,000 by default)", body = ErrorBody)))]
pub async fn feed(
    State(s): State<AppState>,
    Path(uid): Path<u64>,
    Query(q): Query<FeedQuery>,
) -> ApiResult<axum::Json<FeedJson>> {
    let limit = page_limit(q.limit, 50, MAX_FEED_PAGE as u64, "limit")?;
    let before = match &q.before {
        None => None,
        Some(c) => {
            Some(kith_feed::decode_cursor(c).map_err(|e| ApiError::bad_parameter(e.to_string()))?)
        }
    };
    let page = s.feed.feed(uid, before, limit).await?;
    Ok(axum::Json(FeedJson {
        uid,
        posts: page.posts.iter().map(|p| p.as_ref().into()).collect(),
        next_cursor: page.next.map(kith_feed::encode_cursor),
    }))
}
