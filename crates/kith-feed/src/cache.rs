//! Cache and timeline backends: in-process (moka, bounded in bytes) or Redis.
//!
//! Both hold three kinds of entries: post bodies, friend lists (with a time to live, for
//! `consistency=eventual` reads) and push timelines. A timeline is a set of post ids with a
//! **floor**: every post of the followees with an id at or above the floor is in it, so a
//! read takes ids from the timeline down to the floor and pulls anything older from the
//! feed database. A timeline without a floor is being built (or was made by a push that
//! raced a build) and is not read. Trimming to the timeline length raises the floor. In
//! Redis the floor is a member of the same sorted set (`f<floor>`, score -1; `b`, score -2,
//! marks a build in progress), so eviction removes a timeline and its floor together.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use moka::Expiry;
use redis::AsyncCommands;
use redis::aio::MultiplexedConnection;

use crate::error::Result;
use crate::post::Post;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Key {
    Post(u64),
    Friends(u64),
    Timeline(u64),
}

#[derive(Clone, Debug)]
enum Val {
    Post(Arc<Post>),
    Friends(Arc<[u64]>),
    /// The timeline and the length it was weighed at (the weigher must not lock it).
    Timeline(Arc<Mutex<Timeline>>, usize),
}

#[derive(Debug, Default)]
struct Timeline {
    ids: BTreeSet<u64>,
    /// `None` while being built.
    floor: Option<u64>,
}

impl Timeline {
    /// Keeps the newest `cap` ids; returns whether any were dropped.
    fn trim(&mut self, cap: usize) -> bool {
        let mut trimmed = false;
        while self.ids.len() > cap {
            self.ids.pop_first();
            trimmed = true;
        }
        if trimmed && let (Some(f), Some(&oldest)) = (self.floor, self.ids.first()) {
            self.floor = Some(f.max(oldest));
        }
        trimmed
    }
}

fn weight(key: &Key, val: &Val) -> u32 {
    let _ = key;
    match val {
        Val::Post(p) => p.weight(),
        Val::Friends(f) => 48 + 8 * f.len().min(1 << 28) as u32,
        Val::Timeline(_, len) => 64 + 16 * (*len).min(1 << 27) as u32,
    }
}

struct Ttl(Duration);

impl Expiry<Key, Val> for Ttl {
    fn expire_after_create(&self, key: &Key, _: &Val, _: Instant) -> Option<Duration> {
        matches!(key, Key::Friends(_)).then_some(self.0)
    }
    fn expire_after_update(
        &self,
        key: &Key,
        _: &Val,
        _: Instant,
        left: Option<Duration>,
    ) -> Option<Duration> {
        if matches!(key, Key::Friends(_)) { Some(self.0) } else { left }
    }
}

/// The in-process backend.
#[derive(Clone)]
pub struct Local {
    cache: moka::sync::Cache<Key, Val>,
}

impl std::fmt::Debug for Local {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Local").field("bytes", &self.cache.weighted_size()).finish()
    }
}

/// The Redis backend: one multiplexed connection (requests from all tasks are pipelined on
/// it), keys under a prefix so several servers can share one Redis.
#[derive(Clone)]
pub struct RedisBackend {
    con: MultiplexedConnection,
    prefix: String,
    friends_ttl: Duration,
    read: redis::Script,
    begin: redis::Script,
    finish: redis::Script,
    add: redis::Script,
}

impl std::fmt::Debug for RedisBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBackend").field("prefix", &self.prefix).finish_non_exhaustive()
    }
}

/// Where caches and timelines live.
#[derive(Clone, Debug)]
pub enum Backend {
    /// In this process, bounded in bytes.
    Local(Local),
    /// In Redis.
    Redis(Box<RedisBackend>),
}

const LUA_HELPERS: &str = r"
local function markers(key) return redis.call('ZCOUNT', key, '-inf', 0) end
local function trim(key, cap)
  local nm = markers(key)
  local extra = redis.call('ZCARD', key) - nm - cap
  if extra > 0 then
    redis.call('ZREMRANGEBYRANK', key, nm, nm + extra - 1)
    return true
  end
  return false
end
local function oldest(key)
  local nm = markers(key)
  local r = redis.call('ZRANGE', key, nm, nm)
  return tonumber(r[1])
end
local function floor_of(key)
  local m = redis.call('ZRANGEBYSCORE', key, -1, -1)
  if #m == 0 then return nil end
  return tonumber(string.sub(m[1], 2))
end
local function set_floor(key, floor)
  redis.call('ZREMRANGEBYSCORE', key, -1, -1)
  redis.call('ZADD', key, -1, 'f' .. string.format('%.0f', floor))
end
";

const LUA_READ: &str = r"
local floor = floor_of(KEYS[1])
if floor == nil then return false end
local lo = floor
if lo < 1 then lo = 1 end
local ids = redis.call('ZREVRANGEBYSCORE', KEYS[1], ARGV[1], lo, 'LIMIT', 0, tonumber(ARGV[2]))
return {string.format('%.0f', floor), ids}
";

const LUA_BEGIN: &str = r"
redis.call('ZADD', KEYS[1], 'NX', -2, 'b')
return 1
";

const LUA_FINISH: &str = r"
for i = 3, #ARGV do redis.call('ZADD', KEYS[1], ARGV[i], ARGV[i]) end
redis.call('ZREM', KEYS[1], 'b')
local floor = tonumber(ARGV[2])
if trim(KEYS[1], tonumber(ARGV[1])) then
  local o = oldest(KEYS[1])
  if o ~= nil and o > floor then floor = o end
end
set_floor(KEYS[1], floor)
return 1
";

const LUA_ADD: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local floor = floor_of(KEYS[1])
for i = 2, #ARGV do
  local id = tonumber(ARGV[i])
  if floor == nil or id >= floor then redis.call('ZADD', KEYS[1], id, ARGV[i]) end
end
if trim(KEYS[1], tonumber(ARGV[1])) and floor ~= nil then
  local o = oldest(KEYS[1])
  if o ~= nil and o > floor then set_floor(KEYS[1], o) end
end
return 1
";

fn script(body: &str) -> redis::Script {
    redis::Script::new(&format!("{LUA_HELPERS}\n{body}"))
}

fn friends_bytes(list: &[u64]) -> Vec<u8> {
    list.iter().flat_map(|f| f.to_le_bytes()).collect()
}

impl Backend {
    /// An in-process backend of at most `bytes`.
    pub fn local(bytes: u64, friends_ttl: Duration) -> Backend {
        let cache = moka::sync::Cache::builder()
            .max_capacity(bytes)
            .weigher(weight)
            .expire_after(Ttl(friends_ttl))
            .build();
        Backend::Local(Local { cache })
    }

    /// Connects to Redis at `url` (checked with a PING).
    pub async fn redis(url: &str, prefix: &str, friends_ttl: Duration) -> Result<Backend> {
        let client = redis::Client::open(url)?;
        let mut con = client.get_multiplexed_async_connection().await?;
        let _: String = redis::cmd("PING").query_async(&mut con).await?;
        Ok(Backend::Redis(Box::new(RedisBackend {
            con,
            prefix: prefix.to_string(),
            friends_ttl,
            read: script(LUA_READ),
            begin: script(LUA_BEGIN),
            finish: script(LUA_FINISH),
            add: script(LUA_ADD),
        })))
    }

    /// "in-process" or "redis".
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Local(_) => "in-process",
            Backend::Redis(_) => "redis",
        }
    }

    /// Bytes held (in-process only).
    pub fn bytes(&self) -> Option<u64> {
        match self {
            Backend::Local(l) => {
                l.cache.run_pending_tasks();
                Some(l.cache.weighted_size())
            }
            Backend::Redis(_) => None,
        }
    }

    /// Cached posts, in the order of `ids`.
    pub async fn get_posts(&self, ids: &[u64]) -> Result<Vec<Option<Arc<Post>>>> {
        match self {
            Backend::Local(l) => Ok(ids
                .iter()
                .map(|&id| match l.cache.get(&Key::Post(id)) {
                    Some(Val::Post(p)) => Some(p),
                    _ => None,
                })
                .collect()),
            Backend::Redis(r) => {
                if ids.is_empty() {
                    return Ok(Vec::new());
                }
                let keys: Vec<String> = ids.iter().map(|&id| r.post_key(id)).collect();
                let mut con = r.con.clone();
                let got: Vec<Option<Vec<u8>>> =
                    redis::cmd("MGET").arg(&keys).query_async(&mut con).await?;
                got.into_iter()
                    .zip(ids)
                    .map(|(v, &id)| match v {
                        None => Ok(None),
                        Some(b) => Ok(Some(Arc::new(Post::decode(&b, || {
                            format!("cached post {id} in redis")
                        })?))),
                    })
                    .collect()
            }
        }
    }

    /// Caches posts.
    pub async fn put_posts(&self, posts: &[Arc<Post>]) -> Result<()> {
        match self {
            Backend::Local(l) => {
                for p in posts {
                    l.cache.insert(Key::Post(p.id), Val::Post(p.clone()));
                }
                Ok(())
            }
            Backend::Redis(r) => {
                if posts.is_empty() {
                    return Ok(());
                }
                let mut pipe = redis::pipe();
                for p in posts {
                    pipe.set(r.post_key(p.id), p.encode()).ignore();
                }
                let mut con = r.con.clone();
                pipe.query_async::<()>(&mut con).await?;
                Ok(())
            }
        }
    }

    /// Drops cached posts.
    pub async fn del_posts(&self, ids: &[u64]) -> Result<()> {
        match self {
            Backend::Local(l) => {
                for &id in ids {
                    l.cache.invalidate(&Key::Post(id));
                }
                Ok(())
            }
            Backend::Redis(r) => {
                if ids.is_empty() {
                    return Ok(());
                }
                let keys: Vec<String> = ids.iter().map(|&id| r.post_key(id)).collect();
                let mut con = r.con.clone();
                con.del::<_, ()>(keys).await?;
                Ok(())
            }
        }
    }

    /// A cached friend list.
    pub async fn get_friends(&self, uid: u64) -> Result<Option<Arc<[u64]>>> {
        match self {
            Backend::Local(l) => Ok(match l.cache.get(&Key::Friends(uid)) {
                Some(Val::Friends(f)) => Some(f),
                _ => None,
            }),
            Backend::Redis(r) => {
                let mut con = r.con.clone();
                let got: Option<Vec<u8>> = con.get(r.friends_key(uid)).await?;
                Ok(got.map(|b| {
                    b.chunks_exact(8)
                        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                        .collect()
                }))
            }
        }
    }

    /// Caches a friend list for the time to live.
    pub async fn put_friends(&self, uid: u64, list: Arc<[u64]>) -> Result<()> {
        match self {
            Backend::Local(l) => {
                l.cache.insert(Key::Friends(uid), Val::Friends(list));
                Ok(())
            }
            Backend::Redis(r) => {
                let mut con = r.con.clone();
                let ttl = r.friends_ttl.as_millis().max(1) as u64;
                redis::cmd("SET")
                    .arg(r.friends_key(uid))
                    .arg(friends_bytes(&list))
                    .arg("PX")
                    .arg(ttl)
                    .query_async::<()>(&mut con)
                    .await?;
                Ok(())
            }
        }
    }

    /// Drops cached friend lists.
    pub async fn del_friends(&self, uids: &[u64]) -> Result<()> {
        match self {
            Backend::Local(l) => {
                for &u in uids {
                    l.cache.invalidate(&Key::Friends(u));
                }
                Ok(())
            }
            Backend::Redis(r) => {
                if uids.is_empty() {
                    return Ok(());
                }
                let keys: Vec<String> = uids.iter().map(|&u| r.friends_key(u)).collect();
                let mut con = r.con.clone();
                con.del::<_, ()>(keys).await?;
                Ok(())
            }
        }
    }

    /// Up to `limit` ids of the timeline below `before`, at or above its floor, newest
    /// first, and the floor; `None` when there is no complete timeline.
    pub async fn timeline_read(
        &self,
        uid: u64,
        before: u64,
        limit: usize,
    ) -> Result<Option<(Vec<u64>, u64)>> {
        match self {
            Backend::Local(l) => Ok(l.timeline(uid).and_then(|(t, _)| {
                let t = t.lock().unwrap_or_else(PoisonError::into_inner);
                let floor = t.floor?;
                let ids = if floor < before {
                    t.ids.range(floor..before).rev().take(limit).copied().collect()
                } else {
                    Vec::new()
                };
                Some((ids, floor))
            })),
            Backend::Redis(r) => {
                let mut con = r.con.clone();
                let max = if before > 1 << 53 { "+inf".to_string() } else { format!("({before}") };
                let got: Option<(String, Vec<String>)> = r
                    .read
                    .key(r.timeline_key(uid))
                    .arg(max)
                    .arg(limit)
                    .invoke_async(&mut con)
                    .await?;
                Ok(got.map(|(floor, ids)| {
                    let ids = ids.iter().filter_map(|s| s.parse().ok()).collect();
                    (ids, floor.parse().unwrap_or(u64::MAX))
                }))
            }
        }
    }

    /// Marks a timeline as being built, so pushes land in it while the build reads.
    pub async fn timeline_begin(&self, uid: u64) -> Result<()> {
        match self {
            Backend::Local(l) => {
                l.cache
                    .entry(Key::Timeline(uid))
                    .or_insert_with(|| Val::Timeline(Arc::default(), 0));
                Ok(())
            }
            Backend::Redis(r) => {
                let mut con = r.con.clone();
                r.begin.key(r.timeline_key(uid)).invoke_async::<()>(&mut con).await?;
                Ok(())
            }
        }
    }

    /// Completes a build: adds `ids` (the newest posts, complete down to `floor`; 0 = all),
    /// trims to `cap` and sets the floor.
    pub async fn timeline_finish(
        &self,
        uid: u64,
        ids: &[u64],
        floor: u64,
        cap: usize,
    ) -> Result<()> {
        match self {
            Backend::Local(l) => {
                let (t, weighed) = l.timeline_or_new(uid);
                let mut g = t.lock().unwrap_or_else(PoisonError::into_inner);
                g.ids.extend(ids);
                g.floor = Some(floor);
                g.trim(cap);
                let len = g.ids.len();
                drop(g);
                l.reweigh(uid, &t, weighed, len);
                Ok(())
            }
            Backend::Redis(r) => {
                let mut con = r.con.clone();
                let mut inv = r.finish.key(r.timeline_key(uid));
                inv.arg(cap).arg(floor);
                for id in ids {
                    inv.arg(id);
                }
                inv.invoke_async::<()>(&mut con).await?;
                Ok(())
            }
        }
    }

    /// Adds `ids` to each of these users' timelines that exists (complete or being built);
    /// users without one are skipped (their timeline is built when they read). Pipelined.
    pub async fn timeline_add(&self, uids: &[u64], ids: &[u64], cap: usize) -> Result<()> {
        match self {
            Backend::Local(l) => {
                for &u in uids {
                    if let Some((t, weighed)) = l.timeline(u) {
                        let mut g = t.lock().unwrap_or_else(PoisonError::into_inner);
                        let floor = g.floor;
                        g.ids.extend(ids.iter().filter(|&&id| floor.is_none_or(|f| id >= f)));
                        g.trim(cap);
                        let len = g.ids.len();
                        drop(g);
                        l.reweigh(u, &t, weighed, len);
                    }
                }
                Ok(())
            }
            Backend::Redis(r) => {
                let mut con = r.con.clone();
                // Load once; EVALSHA in a pipeline then needs no script text.
                let hash = r.add.get_hash().to_string();
                for chunk in uids.chunks(512) {
                    let mut pipe = redis::pipe();
                    for &u in chunk {
                        let mut cmd = redis::cmd("EVALSHA");
                        cmd.arg(&hash).arg(1).arg(r.timeline_key(u)).arg(cap);
                        for id in ids {
                            cmd.arg(id);
                        }
                        pipe.add_command(cmd).ignore();
                    }
                    match pipe.query_async::<()>(&mut con).await {
                        Err(e) if e.kind() == redis::ErrorKind::NoScriptError => {
                            redis::cmd("SCRIPT")
                                .arg("LOAD")
                                .arg(format!("{LUA_HELPERS}\n{LUA_ADD}"))
                                .query_async::<String>(&mut con)
                                .await?;
                            pipe.query_async::<()>(&mut con).await?;
                        }
                        other => other?,
                    }
                }
                Ok(())
            }
        }
    }

    /// Removes ids from a user's timeline.
    pub async fn timeline_remove(&self, uid: u64, ids: &[u64]) -> Result<()> {
        match self {
            Backend::Local(l) => {
                if let Some((t, _)) = l.timeline(uid) {
                    let mut g = t.lock().unwrap_or_else(PoisonError::into_inner);
                    for id in ids {
                        g.ids.remove(id);
                    }
                }
                Ok(())
            }
            Backend::Redis(r) => {
                if ids.is_empty() {
                    return Ok(());
                }
                let mut con = r.con.clone();
                let members: Vec<String> = ids.iter().map(u64::to_string).collect();
                con.zrem::<_, _, ()>(r.timeline_key(uid), members).await?;
                Ok(())
            }
        }
    }
}

impl Local {
    fn timeline(&self, uid: u64) -> Option<(Arc<Mutex<Timeline>>, usize)> {
        match self.cache.get(&Key::Timeline(uid)) {
            Some(Val::Timeline(t, len)) => Some((t, len)),
            _ => None,
        }
    }

    fn timeline_or_new(&self, uid: u64) -> (Arc<Mutex<Timeline>>, usize) {
        match self
            .cache
            .entry(Key::Timeline(uid))
            .or_insert_with(|| Val::Timeline(Arc::default(), 0))
            .into_value()
        {
            Val::Timeline(t, len) => (t, len),
            _ => unreachable!("timeline keys hold timelines"),
        }
    }

    /// Re-inserts a timeline whose length has doubled (or shrunk to a quarter) since it was
    /// weighed, so the byte bound keeps counting it right.
    fn reweigh(&self, uid: u64, t: &Arc<Mutex<Timeline>>, weighed: usize, len: usize) {
        if len >= 2 * weighed.max(8) || len * 4 < weighed {
            self.cache.insert(Key::Timeline(uid), Val::Timeline(t.clone(), len));
        }
    }
}

impl RedisBackend {
    fn post_key(&self, id: u64) -> String {
        format!("{}:p:{id}", self.prefix)
    }
    fn friends_key(&self, uid: u64) -> String {
        format!("{}:f:{uid}", self.prefix)
    }
    fn timeline_key(&self, uid: u64) -> String {
        format!("{}:t:{uid}", self.prefix)
    }
}

#[cfg(test)]
mod tests;
