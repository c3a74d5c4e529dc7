//! One request of a trial over HTTP, and what its answer says: the outcome, the status and
//! the value the checker needs. Every attempt is recorded by the caller, answered or not.

use std::time::Duration;

use serde_json::{Value as Json, json};

use crate::trial::history::{Call, Outcome, Value};

/// What one attempt came back with.
#[derive(Debug)]
pub struct Answer {
    pub outcome: Outcome,
    pub status: Option<u16>,
    pub value: Option<Value>,
    pub warned: bool,
    /// The answer's `Server-Timing` header: where the server spent the time.
    pub timing: Option<String>,
}

/// The largest page the reads ask for (friend lists and follows are read whole).
pub const PAGE: usize = 1000;
/// A feed read's page.
pub const FEED_PAGE: usize = 50;

/// Sends `call` to the server at `base` with `key` as its `Idempotency-Key` (writes that
/// take one), giving up after `timeout` (then the outcome is unknown).
pub async fn send(
    http: &reqwest::Client,
    base: &str,
    call: &Call,
    key: Option<&str>,
    timeout: Duration,
) -> Answer {
    let (method, path, body) = request(call);
    let mut builder = http.request(method, format!("{base}{path}")).timeout(timeout);
    if let Some(k) = key.filter(|_| call.takes_key()) {
        builder = builder.header("Idempotency-Key", k);
    }
    if let Some(b) = body {
        builder = builder.json(&b);
    }
    let unknown = Answer {
        outcome: Outcome::Unknown,
        status: None,
        value: None,
        warned: false,
        timing: None,
    };
    let r = match builder.send().await {
        Ok(r) => r,
        // No connection: the request never reached the server.
        Err(e) if e.is_connect() => return Answer { outcome: Outcome::Fail, ..unknown },
        Err(_) => return unknown,
    };
    let status = r.status().as_u16();
    let timing = r.headers().get("server-timing").and_then(|v| v.to_str().ok()).map(String::from);
    let Ok(bytes) = r.bytes().await else { return Answer { status: Some(status), ..unknown } };
    let json: Json = serde_json::from_slice(&bytes).unwrap_or(Json::Null);
    let outcome = match (status, json["error"].as_str()) {
        // Too few replicas answered in time: the write may have been applied.
        (503, Some("store_unavailable")) => Outcome::Unknown,
        // The server gave up on its own request (`server_timeout`): likewise.
        (504, _) => Outcome::Unknown,
        _ => Outcome::of_status(call, status),
    };
    let warned = json["warnings"].as_array().is_some_and(|w| !w.is_empty());
    let value = if outcome == Outcome::Ok { value_of(call, status, &json) } else { None };
    // A success whose body does not say what the checker needs is not a known outcome.
    let outcome = match (outcome, &value, needs_value(call)) {
        (Outcome::Ok, None, true) => Outcome::Unknown,
        (o, _, _) => o,
    };
    Answer { outcome, status: Some(status), value, warned, timing }
}

fn needs_value(call: &Call) -> bool {
    matches!(call, Call::Post { .. }) || !call.is_write()
}

fn request(call: &Call) -> (reqwest::Method, String, Option<Json>) {
    use reqwest::Method as M;
    let consistency = |strong: bool| if strong { "strong" } else { "eventual" };
    match call {
        Call::Post { author, content, id } => {
            let mut b = json!({"author": author, "content": content});
            if let Some(id) = id {
                b["id"] = json!(id);
            }
            (M::POST, "/posts".into(), Some(b))
        }
        Call::AddFriend { u, v } => (M::POST, format!("/users/{u}/friends/{v}"), None),
        Call::DeleteFriend { u, v } => (M::DELETE, format!("/users/{u}/friends/{v}"), None),
        Call::PutUser { uid, name, friends } => {
            let b = json!({"profile": {"name": name}, "friends": friends});
            (M::PUT, format!("/users/{uid}"), Some(b))
        }
        Call::PutProfile { uid, name } => {
            (M::PUT, format!("/users/{uid}/profile"), Some(json!({"name": name})))
        }
        Call::Follow { uid, target } => {
            (M::POST, format!("/users/{uid}/follow"), Some(json!({"targets": [target]})))
        }
        Call::Unfollow { uid, target } => {
            (M::DELETE, format!("/users/{uid}/follow/{target}"), None)
        }
        Call::Friends { uid, strong } => (
            M::GET,
            format!("/users/{uid}/friends?limit={PAGE}&consistency={}", consistency(*strong)),
            None,
        ),
        Call::Profile { uid, strong } => {
            (M::GET, format!("/users/{uid}/profile?consistency={}", consistency(*strong)), None)
        }
        Call::Feed { uid } => (M::GET, format!("/users/{uid}/feed?limit={FEED_PAGE}"), None),
        Call::Follows { uid } => (M::GET, format!("/users/{uid}/follows?limit={PAGE}"), None),
        Call::GetPost { id } => (M::GET, format!("/posts/{id}"), None),
    }
}

fn ids(v: &Json) -> Option<Vec<u64>> {
    v.as_array()?.iter().map(|x| x.as_u64()).collect()
}

fn value_of(call: &Call, status: u16, j: &Json) -> Option<Value> {
    Some(match call {
        Call::Post { .. } => Value::PostId { id: j["id"].as_u64()? },
        Call::Friends { .. } => {
            let mut friends = ids(&j["friends"])?;
            // A list longer than a page cannot be judged whole.
            if j["total"].as_u64()? as usize != friends.len() {
                return None;
            }
            friends.sort_unstable();
            Value::Friends { friends }
        }
        Call::Profile { .. } => Value::Profile { name: j["name"].as_str()?.to_string() },
        Call::Feed { .. } => {
            let posts = j["posts"].as_array()?;
            Value::Feed { ids: posts.iter().map(|p| p["id"].as_u64()).collect::<Option<_>>()? }
        }
        Call::Follows { .. } => Value::Follows {
            followees: ids(&j["followees"])?,
            followers: ids(&j["followers"])?,
            followee_count: j["followee_count"].as_u64()?,
            follower_count: j["follower_count"].as_u64()?,
        },
        Call::GetPost { .. } if status == 404 => Value::NotFound,
        Call::GetPost { .. } => Value::Post {
            author: j["author"].as_u64()?,
            content: j["content"].as_str()?.to_string(),
        },
        _ => return None,
    })
}
