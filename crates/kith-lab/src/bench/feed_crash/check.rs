//! The feed crash trial's check after a restart: every expected follow, friendship and
//! profile, and every post acknowledged since the last restart (all of them at the end), by
//! id and at its place in a follower's feed.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use anyhow::{Result, bail};
use serde_json::Value;

use super::{Known, Lost, Part, Server, client};

/// The numbers of a JSON array.
fn ids(list: &Value) -> Vec<u64> {
    list.as_array().map(|l| l.iter().filter_map(Value::as_u64).collect()).unwrap_or_default()
}

/// Checks every expected state after a restart; returns the number of checks made.
pub(super) fn check(
    server: &Server,
    parts: &[Part],
    lost: &mut Lost,
    every: &[(u64, u64, String)],
) -> Result<u64> {
    let http = client();
    server.settle(&http)?;
    let mut checks = 0;
    let get = |path: String| -> Result<Value> {
        let r = http.get(server.url(&path)).send()?;
        let status = r.status();
        let v: Value = r.json()?;
        if !status.is_success() {
            bail!("GET {path}: {status} {v}");
        }
        Ok(v)
    };
    let mut followees: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for part in parts.iter() {
        for (&(u, t), &k) in &part.follows {
            if k == Known::Either {
                continue;
            }
            let list = match followees.entry(u) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => {
                    let v = get(format!("/users/{u}/follows?limit=1000"))?;
                    e.insert(ids(&v["followees"]))
                }
            };
            checks += 1;
            if list.contains(&t) != (k == Known::Yes) {
                lost.follows += 1;
                eprintln!("follow {u} -> {t}: expected {k:?}");
            }
        }
        let mut friends: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for (&(u, v), &k) in &part.friends {
            if k == Known::Either {
                continue;
            }
            let list = match friends.entry(u) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => {
                    let got = get(format!("/users/{u}/friends?limit=1000&consistency=strong"))?;
                    e.insert(ids(&got["friends"]))
                }
            };
            checks += 1;
            if list.contains(&v) != (k == Known::Yes) {
                lost.friendships += 1;
                eprintln!("friendship {u} - {v}: expected {k:?}");
            }
        }
        for (&u, (acked, tried)) in &part.profiles {
            let name =
                get(format!("/users/{u}/profile"))?["name"].as_str().unwrap_or("").to_string();
            checks += 1;
            let ok = acked.as_ref() == Some(&name) || tried.contains(&name);
            if !ok {
                lost.profiles += 1;
                eprintln!("profile {u}: {name:?}, expected {acked:?} or one of {tried:?}");
            }
        }
    }
    let mut posts: Vec<&(u64, u64, String)> = parts.iter().flat_map(|p| &p.new_posts).collect();
    posts.extend(every);
    // A post's place in a feed: a user who follows its author (as last acknowledged) sees it
    // first on the page just below it.
    let mut follower: BTreeMap<u64, u64> = BTreeMap::new();
    for (&(f, t), &k) in parts.iter().flat_map(|p| &p.follows) {
        if k == Known::Yes {
            follower.insert(t, f);
        }
    }
    for (id, author, content) in posts {
        let r = http.get(server.url(&format!("/posts/{id}"))).send()?;
        let status = r.status().as_u16();
        let v: Value = r.json().unwrap_or(Value::Null);
        checks += 1;
        if status != 200
            || v["content"].as_str() != Some(content)
            || v["author"].as_u64() != Some(*author)
        {
            lost.posts += 1;
            eprintln!("post {id}: {status} {v}");
            continue;
        }
        if let Some(&f) = follower.get(author) {
            let cursor = kith_feed::encode_cursor(id + 1);
            let page = get(format!("/users/{f}/feed?limit=1&before={cursor}"))?;
            checks += 1;
            if page["posts"][0]["id"].as_u64() != Some(*id) {
                lost.feed_position += 1;
                eprintln!("post {id} by {author} not at its place in {f}'s feed: {page}");
            }
        }
    }
    Ok(checks)
}
