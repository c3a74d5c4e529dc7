//! A trial's history: every request a client sent, as it was invoked and as it completed
//! (ok, failed, or unknown when the client gave up or the server hung up), on which server,
//! and what it wrote or read. Attempts of one logical operation (a write sent again with its
//! `Idempotency-Key`) share its number; [`fold`] makes them one [`Op`] for the checker.

use serde::{Deserialize, Serialize};

/// What a request asked for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "f", rename_all = "kebab-case")]
pub enum Call {
    /// `POST /posts`, with the client's own id when `id` is given.
    Post { author: u64, content: String, id: Option<u64> },
    /// `POST /users/{u}/friends/{v}`.
    AddFriend { u: u64, v: u64 },
    /// `DELETE /users/{u}/friends/{v}`.
    DeleteFriend { u: u64, v: u64 },
    /// `PUT /users/{uid}`: the profile's name and the whole friend list.
    PutUser { uid: u64, name: String, friends: Vec<u64> },
    /// `PUT /users/{uid}/profile`.
    PutProfile { uid: u64, name: String },
    /// `POST /users/{uid}/follow`.
    Follow { uid: u64, target: u64 },
    /// `DELETE /users/{uid}/follow/{target}`.
    Unfollow { uid: u64, target: u64 },
    /// `GET /users/{uid}/friends`, strong or eventual.
    Friends { uid: u64, strong: bool },
    /// `GET /users/{uid}/profile`, strong or eventual.
    Profile { uid: u64, strong: bool },
    /// `GET /users/{uid}/feed`.
    Feed { uid: u64 },
    /// `GET /users/{uid}/follows`.
    Follows { uid: u64 },
    /// `GET /posts/{id}`.
    GetPost { id: u64 },
}

impl Call {
    /// Whether it changes anything.
    pub fn is_write(&self) -> bool {
        matches!(
            self,
            Call::Post { .. }
                | Call::AddFriend { .. }
                | Call::DeleteFriend { .. }
                | Call::PutUser { .. }
                | Call::PutProfile { .. }
                | Call::Follow { .. }
                | Call::Unfollow { .. }
        )
    }

    /// Whether it takes an `Idempotency-Key` (every write but the two `PUT`s, which set a
    /// whole value and need none).
    pub fn takes_key(&self) -> bool {
        self.is_write() && !matches!(self, Call::PutUser { .. } | Call::PutProfile { .. })
    }

    /// The operation's name in reports.
    pub fn name(&self) -> &'static str {
        match self {
            Call::Post { id: None, .. } => "post",
            Call::Post { id: Some(_), .. } => "post-client-id",
            Call::AddFriend { .. } => "add-friend",
            Call::DeleteFriend { .. } => "delete-friend",
            Call::PutUser { .. } => "put-user",
            Call::PutProfile { .. } => "put-profile",
            Call::Follow { .. } => "follow",
            Call::Unfollow { .. } => "unfollow",
            Call::Friends { strong: true, .. } => "friends-strong",
            Call::Friends { strong: false, .. } => "friends-eventual",
            Call::Profile { strong: true, .. } => "profile-strong",
            Call::Profile { strong: false, .. } => "profile-eventual",
            Call::Feed { .. } => "feed",
            Call::Follows { .. } => "follows",
            Call::GetPost { .. } => "get-post",
        }
    }
}

/// What an answer carried, as far as the checker needs it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "v", rename_all = "kebab-case")]
pub enum Value {
    /// A stored post's id.
    PostId { id: u64 },
    /// A friend list (whole, ascending).
    Friends { friends: Vec<u64> },
    /// A profile's name.
    Profile { name: String },
    /// A feed page's post ids, as returned.
    Feed { ids: Vec<u64> },
    /// Followees and followers (whole lists) and the counts beside them.
    Follows { followees: Vec<u64>, followers: Vec<u64>, followee_count: u64, follower_count: u64 },
    /// A post read by id.
    Post { author: u64, content: String },
    /// 404: no such post.
    NotFound,
}

/// How an attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// A success (for a follow that existed or an unfollow of nothing, the answer that the
    /// state already was as asked: 409 `already_following`, 404 `not_following`).
    Ok,
    /// A refusal that changed nothing: 4xx, 503 (overloaded, shutting down), 507, or no
    /// connection at all.
    Fail,
    /// No answer (the client gave up, the connection broke) or one that does not say
    /// whether the write happened (500, 504, 503 `store_unavailable`).
    Unknown,
}

impl Outcome {
    /// The outcome of an answer with HTTP status `status` to `call`.
    pub fn of_status(call: &Call, status: u16) -> Outcome {
        match (call, status) {
            (_, 200..=299) => Outcome::Ok,
            (Call::Follow { .. }, 409) | (Call::Unfollow { .. }, 404) => Outcome::Ok,
            (Call::GetPost { .. }, 404) => Outcome::Ok,
            (_, 400..=499 | 503 | 507) => Outcome::Fail,
            _ => Outcome::Unknown,
        }
    }
}

/// One attempt, as the client saw it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Entry {
    /// The logical operation (attempts of one write share it).
    pub op: u64,
    /// 0 for the first attempt.
    pub attempt: u32,
    pub client: u32,
    /// The server it was sent to (0-based).
    pub server: u32,
    /// Milliseconds from the start of the run.
    pub invoke_ms: f64,
    /// When the answer (or the failure) was seen.
    pub complete_ms: f64,
    pub call: Call,
    pub outcome: Outcome,
    /// The HTTP status, when there was an answer.
    pub status: Option<u16>,
    pub value: Option<Value>,
    /// The answer listed warnings (stored, but a cache update failed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warned: bool,
    /// The answer's `Server-Timing` (store, cache and total milliseconds on the server), to
    /// tell time spent in the store from time spent waiting in the server or the network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<String>,
}

/// A logical operation: its attempts folded.
#[derive(Clone, Debug)]
pub struct Op {
    pub id: u64,
    pub call: Call,
    /// The first attempt's invocation.
    pub invoke: f64,
    /// When the first successful attempt completed; `None` unless the outcome is `Ok`
    /// (an unknown write may take effect at any time after its invocation).
    pub complete: Option<f64>,
    pub outcome: Outcome,
    /// The first successful attempt's value.
    pub value: Option<Value>,
    pub warned: bool,
    /// Distinct post ids that successful attempts returned (more than one: applied twice).
    pub ids: Vec<u64>,
    /// Each attempt's answer in order, `status@server` (`-@server`: none), for examples.
    pub answers: Vec<String>,
}

/// Folds attempts into logical operations, in order of invocation.
pub fn fold(entries: &[Entry]) -> Vec<Op> {
    let mut by_op: std::collections::BTreeMap<u64, Vec<&Entry>> = Default::default();
    for e in entries {
        by_op.entry(e.op).or_default().push(e);
    }
    let mut ops: Vec<Op> = by_op
        .into_iter()
        .map(|(id, mut es)| {
            es.sort_by(|a, b| a.invoke_ms.total_cmp(&b.invoke_ms));
            let first_ok = es
                .iter()
                .filter(|e| e.outcome == Outcome::Ok)
                .min_by(|a, b| a.complete_ms.total_cmp(&b.complete_ms));
            let outcome = if first_ok.is_some() {
                Outcome::Ok
            } else if es.iter().any(|e| e.outcome == Outcome::Unknown) {
                Outcome::Unknown
            } else {
                Outcome::Fail
            };
            let mut ids: Vec<u64> = es
                .iter()
                .filter_map(|e| match &e.value {
                    Some(Value::PostId { id }) if e.outcome == Outcome::Ok => Some(*id),
                    _ => None,
                })
                .collect();
            ids.sort_unstable();
            ids.dedup();
            Op {
                id,
                call: es[0].call.clone(),
                invoke: es[0].invoke_ms,
                complete: first_ok.map(|e| e.complete_ms),
                outcome,
                value: first_ok.and_then(|e| e.value.clone()),
                warned: es.iter().any(|e| e.warned),
                ids,
                answers: es
                    .iter()
                    .map(|e| {
                        let status = e.status.map_or("-".to_string(), |s| s.to_string());
                        format!("{status}@{}", e.server)
                    })
                    .collect(),
            }
        })
        .collect();
    ops.sort_by(|a, b| a.invoke.total_cmp(&b.invoke));
    ops
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(op: u64, attempt: u32, t: (f64, f64), outcome: Outcome, id: Option<u64>) -> Entry {
        Entry {
            op,
            attempt,
            client: 0,
            server: attempt,
            invoke_ms: t.0,
            complete_ms: t.1,
            call: Call::Post { author: 1, content: "x".into(), id: None },
            outcome,
            status: None,
            value: id.map(|id| Value::PostId { id }),
            warned: false,
            timing: None,
        }
    }

    #[test]
    fn attempts_fold_into_one_operation() {
        let es = [
            entry(7, 0, (1.0, 5.0), Outcome::Unknown, None),
            entry(7, 1, (5.0, 9.0), Outcome::Ok, Some(70)),
            entry(3, 0, (2.0, 3.0), Outcome::Fail, None),
            entry(4, 0, (0.5, 8.0), Outcome::Unknown, None),
        ];
        let ops = fold(&es);
        assert_eq!(ops.iter().map(|o| o.id).collect::<Vec<_>>(), [4, 7, 3]);
        let o7 = &ops[1];
        assert_eq!((o7.outcome, o7.invoke, o7.complete), (Outcome::Ok, 1.0, Some(9.0)));
        assert_eq!(o7.ids, [70]);
        assert_eq!((ops[2].outcome, ops[2].complete), (Outcome::Fail, None));
        assert_eq!((ops[0].outcome, ops[0].complete), (Outcome::Unknown, None));
    }

    #[test]
    fn two_ids_for_one_key_are_kept() {
        let es = [
            entry(1, 0, (1.0, 2.0), Outcome::Ok, Some(10)),
            entry(1, 1, (1.5, 3.0), Outcome::Ok, Some(11)),
        ];
        assert_eq!(fold(&es)[0].ids, [10, 11]);
    }

    #[test]
    fn statuses_map_to_outcomes() {
        let follow = Call::Follow { uid: 1, target: 2 };
        let post = Call::Post { author: 1, content: String::new(), id: Some(5) };
        assert_eq!(Outcome::of_status(&follow, 409), Outcome::Ok);
        assert_eq!(Outcome::of_status(&post, 409), Outcome::Fail);
        assert_eq!(Outcome::of_status(&post, 503), Outcome::Fail);
        assert_eq!(Outcome::of_status(&post, 500), Outcome::Unknown);
        assert_eq!(Outcome::of_status(&post, 201), Outcome::Ok);
    }
}
