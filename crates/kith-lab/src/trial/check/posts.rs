//! Posts: every post of a run has content of its own, so the store's author index and the
//! posts read by id say how many times each was stored and under which id. An acknowledged
//! post must be there once, under the id it was given, with its content; an unknown one at
//! most once; a refused one never; no two posts may share an id; and a read by id during
//! the run must return what was acknowledged under that id.

use std::collections::{BTreeMap, HashMap};

use super::{Anomalies, State};
use crate::trial::history::{Call, Op, Outcome, Value};

/// Judges the run's posts.
pub fn check(ops: &[Op], quiet: &State, found: &mut Anomalies) {
    let posts: Vec<&Op> = ops.iter().filter(|o| matches!(o.call, Call::Post { .. })).collect();
    let content_of = |o: &Op| match &o.call {
        Call::Post { content, .. } => content.clone(),
        _ => unreachable!(),
    };
    // How often each content is in its author's index, and under which ids.
    let mut indexed: HashMap<&str, Vec<u64>> = HashMap::new();
    for list in quiet.author_posts.values() {
        for (id, content) in list {
            indexed.entry(content.as_str()).or_default().push(*id);
        }
    }
    // Acknowledged posts by id.
    let mut by_id: BTreeMap<u64, Vec<&Op>> = BTreeMap::new();
    for &o in &posts {
        if o.ids.len() > 1 {
            found.add("applied-twice", || format!("post op {} answered ids {:?}", o.id, o.ids));
        }
        for &id in &o.ids {
            by_id.entry(id).or_default().push(o);
        }
    }
    for (id, os) in &by_id {
        let mut contents: Vec<String> = os.iter().map(|&o| content_of(o)).collect();
        contents.sort();
        contents.dedup();
        for _ in 1..contents.len() {
            found.add("id-shared", || format!("post id {id} acknowledged for {contents:?}"));
        }
    }
    for &o in &posts {
        let content = content_of(o);
        let stored = indexed.get(content.as_str()).map_or(&[][..], |v| v.as_slice());
        match o.outcome {
            Outcome::Fail if !stored.is_empty() => found.add("failed-applied", || {
                format!("refused post op {} stored as {stored:?} (answers {:?})", o.id, o.answers)
            }),
            Outcome::Fail => {}
            _ if stored.len() > 1 => {
                found.add("applied-twice", || format!("post op {} stored as {stored:?}", o.id))
            }
            Outcome::Unknown => {}
            Outcome::Ok => {
                let id = o.ids[0];
                let by_id = quiet.posts.get(&id);
                match (stored.is_empty(), by_id) {
                    (_, Some(Some((_, c)))) if *c != content => found.add("overwritten", || {
                        format!("post {id} (op {}) reads {c:?}, acknowledged {content:?}", o.id)
                    }),
                    (true, Some(Some(_))) => found.add("partial", || {
                        format!("post {id} (op {}) readable by id, not in its author's posts", o.id)
                    }),
                    (false, Some(None)) => found.add("partial", || {
                        format!("post {id} (op {}) in its author's posts, not readable by id", o.id)
                    }),
                    (true, Some(None)) => found.add("lost", || {
                        format!("post {id} (op {}) acknowledged, not stored", o.id)
                    }),
                    _ if !stored.contains(&id) => found.add("overwritten", || {
                        format!("post op {} acknowledged as {id}, stored as {stored:?}", o.id)
                    }),
                    _ => {}
                }
            }
        }
    }
    reads(ops, &by_id, found);
}

/// Reads by id during the run against what was acknowledged under each id.
fn reads(ops: &[Op], by_id: &BTreeMap<u64, Vec<&Op>>, found: &mut Anomalies) {
    for op in ops {
        let (Call::GetPost { id }, Some(value)) = (&op.call, &op.value) else { continue };
        let acked = by_id.get(id).map_or(&[][..], |v| v.as_slice());
        match value {
            Value::NotFound => {
                if let Some(w) = acked.iter().find(|w| w.complete.is_some_and(|c| c < op.invoke)) {
                    found.add("stale-strong", || {
                        format!(
                            "post {id} not found at {:.0} ms, acknowledged at {:.0} ms",
                            op.invoke,
                            w.complete.unwrap_or(0.0)
                        )
                    });
                }
            }
            Value::Post { content, .. } => {
                let known = acked
                    .iter()
                    .any(|w| matches!(&w.call, Call::Post { content: c, .. } if c == content));
                if !acked.is_empty() && !known {
                    found.add("overwritten", || {
                        format!("post {id} read as {content:?} at {:.0} ms", op.invoke)
                    });
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{op, read};
    use super::*;

    fn post(id: u64, content: &str, outcome: Outcome, got: Option<u64>) -> Op {
        let call = Call::Post { author: 1, content: content.into(), id: None };
        let complete = (outcome == Outcome::Ok).then_some(5.0);
        op(id, call, (0.0, complete), outcome, got.map(|id| Value::PostId { id }))
    }

    fn stored(posts: &[(u64, &str)], by_id: &[(u64, Option<&str>)]) -> State {
        State {
            author_posts: [(1, posts.iter().map(|(i, c)| (*i, c.to_string())).collect())].into(),
            posts: by_id.iter().map(|(i, c)| (*i, c.map(|c| (1, c.to_string())))).collect(),
            ..State::default()
        }
    }

    #[test]
    fn posts_stored_once_as_acknowledged_pass() {
        let ops = [post(1, "a", Outcome::Ok, Some(10)), post(2, "b", Outcome::Unknown, None)];
        let mut found = Anomalies::default();
        check(&ops, &stored(&[(10, "a")], &[(10, Some("a"))]), &mut found);
        assert_eq!(found.total(), 0, "{found:?}");
    }

    #[test]
    fn lost_twice_shared_and_refused_posts_are_reported() {
        let ops = [
            post(1, "a", Outcome::Ok, Some(10)),
            post(2, "b", Outcome::Ok, Some(10)),
            post(3, "c", Outcome::Unknown, None),
            post(4, "d", Outcome::Fail, None),
            post(5, "e", Outcome::Ok, Some(12)),
        ];
        let quiet =
            stored(&[(10, "b"), (13, "c"), (14, "c"), (15, "d")], &[(10, Some("b")), (12, None)]);
        let mut found = Anomalies::default();
        check(&ops, &quiet, &mut found);
        assert_eq!(found.count("id-shared"), 1);
        assert_eq!(found.count("overwritten"), 1, "a's id reads b: {found:?}");
        assert_eq!(found.count("applied-twice"), 1);
        assert_eq!(found.count("failed-applied"), 1);
        assert_eq!(found.count("lost"), 1);
    }

    #[test]
    fn a_read_by_id_must_find_an_acknowledged_post() {
        let ops = [
            post(1, "a", Outcome::Ok, Some(10)),
            read(2, Call::GetPost { id: 10 }, (6.0, 7.0), Value::NotFound),
            read(3, Call::GetPost { id: 10 }, (1.0, 2.0), Value::NotFound),
            read(
                4,
                Call::GetPost { id: 10 },
                (6.0, 7.0),
                Value::Post { author: 1, content: "x".into() },
            ),
        ];
        let mut found = Anomalies::default();
        check(&ops, &stored(&[(10, "a")], &[(10, Some("a"))]), &mut found);
        assert_eq!(found.count("stale-strong"), 1);
        assert_eq!(found.count("overwritten"), 1);
    }
}
