//! Reading what the checker judges against: the state of the users a run touches, from the
//! store itself (QUORUM reads through the engine, not through a kith server), before the
//! load and once everything is quiet; and, once quiet, every user's first feed page on
//! every server, beside a pull of the same followees' posts read from the store.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{Context, Result};
use kith_store::Engine;

use super::check::{Follows, State};
use super::client::{FEED_PAGE, PAGE, send};
use super::history::{Call, Op, Outcome, Value};

/// Reads friend lists (of `users` and of everyone in them or in `also`), profiles and
/// follows of `users` from the store.
pub fn users(engine: &dyn Engine, users: &[u64], also: &BTreeSet<u64>) -> Result<State> {
    let mut state = State::default();
    let mut everyone: BTreeSet<u64> = also.clone();
    for &u in users {
        let mut friends = engine.get_all_friends(u).with_context(|| format!("friends of {u}"))?;
        friends.sort_unstable();
        everyone.extend(&friends);
        state.friends.insert(u, friends);
        let profile = engine.get_profile(u).with_context(|| format!("profile of {u}"))?;
        state.profiles.insert(u, profile.name);
        let degree = engine.follow_degree(u)?;
        state.follows.insert(
            u,
            Follows {
                followees: engine.followees(u, 0, PAGE * 10)?,
                followers: engine.followers(u, 0, PAGE * 10)?,
                followee_count: degree.followees,
                follower_count: degree.followers,
            },
        );
    }
    for u in everyone {
        if let std::collections::btree_map::Entry::Vacant(e) = state.friends.entry(u) {
            let mut friends =
                engine.get_all_friends(u).with_context(|| format!("friends of {u}"))?;
            friends.sort_unstable();
            e.insert(friends);
        }
    }
    Ok(state)
}

/// Adds the run's posts to `state`: every author's posts in the store's author index (with
/// their content) and every acknowledged id read by id.
pub fn posts(engine: &dyn Engine, ops: &[Op], state: &mut State) -> Result<()> {
    let mut authors = BTreeSet::new();
    let mut ids = BTreeSet::new();
    for op in ops {
        if let Call::Post { author, .. } = op.call {
            authors.insert(author);
            ids.extend(op.ids.iter().copied());
        }
    }
    for author in authors {
        let mut list = Vec::new();
        let mut before = u64::MAX;
        loop {
            let page = engine.author_posts(author, before, 1000)?;
            let Some(&last) = page.last() else { break };
            for (id, post) in page.iter().zip(engine.get_posts(&page)?) {
                // An entry whose post has another author now lost its post to another one
                // under the same id (judged by id); it is no copy of that other post.
                let content =
                    post.filter(|p| p.author == author).map_or_else(String::new, |p| p.content);
                list.push((*id, content));
            }
            before = last;
        }
        state.author_posts.insert(author, list);
    }
    let ids: Vec<u64> = ids.into_iter().collect();
    for chunk in ids.chunks(500) {
        for (id, post) in chunk.iter().zip(engine.get_posts(chunk)?) {
            state.posts.insert(*id, post.map(|p| (p.author, p.content)));
        }
    }
    Ok(())
}

/// A pull of each of `users`' followees' newest posts, from the store: the first feed page
/// every strategy must converge to.
pub fn pulls(engine: &dyn Engine, users: &[u64], state: &mut State) -> Result<()> {
    for &u in users {
        let followees = engine.followees(u, 0, PAGE * 10)?;
        let mut ids = Vec::new();
        for f in followees {
            ids.extend(engine.author_posts(f, u64::MAX, FEED_PAGE)?);
        }
        ids.sort_unstable_by(|a, b| b.cmp(a));
        ids.dedup();
        ids.truncate(FEED_PAGE);
        state.pulls.insert(u, ids);
    }
    Ok(())
}

/// Waits until no server has background work left (fan-out queued, running or waiting for
/// a retry; posts pending or waiting in write-back), polling `/stats`, for at most `limit`.
/// Returns how long that took, or `None` if work was left at the limit (or a server never
/// answered), which the feeds' verdicts then show.
pub async fn background_done(servers: &[String], limit: Duration) -> Option<f64> {
    let http = reqwest::Client::new();
    let start = std::time::Instant::now();
    loop {
        let mut all_idle = true;
        for base in servers {
            let stats: Option<serde_json::Value> =
                match http.get(format!("{base}/stats")).timeout(limit).send().await {
                    Ok(r) => r.json().await.ok(),
                    Err(_) => None,
                };
            all_idle &= stats.is_some_and(|s| idle(&s));
        }
        if all_idle {
            return Some(start.elapsed().as_secs_f64());
        }
        if start.elapsed() >= limit {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Whether a server's `/stats` show no background work left. Every count must read zero:
/// one the server could not read (`writeback_waiting` is null while the shared write-back
/// is unreadable) is work that may be left.
fn idle(stats: &serde_json::Value) -> bool {
    ["fanout_queue_depth", "fanout_unfinished", "writeback_pending", "writeback_waiting"]
        .iter()
        .all(|k| stats[k].as_u64() == Some(0))
}

/// Each server's first feed page of each of `users`. A read that fails is tried again a
/// few times; one that never succeeds is kept in `state.unavailable` (the checker counts
/// it), and the run goes on.
pub async fn feeds(servers: &[String], users: &[u64], state: &mut State) -> Result<()> {
    let http = reqwest::Client::new();
    let timeout = Duration::from_secs(20);
    for (server, base) in servers.iter().enumerate() {
        let mut pages = BTreeMap::new();
        for &uid in users {
            let call = Call::Feed { uid };
            let mut tries = 0;
            loop {
                let a = send(&http, base, &call, None, timeout).await;
                match (a.outcome, a.value) {
                    (Outcome::Ok, Some(Value::Feed { ids })) => {
                        pages.insert(uid, ids);
                        break;
                    }
                    (o, _) if tries >= 5 => {
                        eprintln!(
                            "trial: {base}: the feed of {uid} once quiet: {o:?} ({:?})",
                            a.status
                        );
                        state.unavailable.push((server, uid, format!("{o:?} ({:?})", a.status)));
                        break;
                    }
                    _ => {
                        tries += 1;
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                }
            }
        }
        state.feeds.push(pages);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn a_server_is_idle_only_when_every_count_reads_zero() {
        let stats = |waiting: serde_json::Value| {
            json!({"fanout_queue_depth": 0, "fanout_unfinished": 0, "writeback_pending": 0,
                   "writeback_waiting": waiting})
        };
        assert!(super::idle(&stats(json!(0))));
        assert!(!super::idle(&stats(json!(2))));
        // A shared write-back the server could not read may hold posts not yet stored.
        assert!(!super::idle(&stats(serde_json::Value::Null)));
        assert!(!super::idle(&json!({"fanout_queue_depth": 0})));
    }
}
