//! The Redis backend: one multiplexed connection (requests from all tasks are pipelined on
//! it), keys under a prefix so several servers can share one Redis.
//!
//! Keys: `<prefix>:p:<id>` holds a post's stored form, `<prefix>:f:<uid>` a friend list
//! (little-endian `u64`s, expiring after the time to live) and `<prefix>:t:<uid>` a timeline:
//! a sorted set of post ids scored by themselves (exact, ids are below 2^53). The floor is a
//! member of the same set (`f<floor>`, score -1; `b`, score -2, marks a build in progress),
//! so eviction removes a timeline and its floor together. Every timeline step that reads
//! the floor is a Lua script, so it is atomic against concurrent pushes and builds.

use std::sync::Arc;
use std::time::Duration;

use redis::AsyncCommands;
use redis::aio::MultiplexedConnection;

use crate::error::Result;
use crate::post::Post;

/// The Redis backend.
#[derive(Clone)]
pub struct Redis {
    con: MultiplexedConnection,
    prefix: String,
    friends_ttl: Duration,
    read: redis::Script,
    begin: redis::Script,
    finish: redis::Script,
    add: redis::Script,
}

impl std::fmt::Debug for Redis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redis").field("prefix", &self.prefix).finish_non_exhaustive()
    }
}

/// Functions every script starts with. Markers score at most 0 and sort first, so the ids
/// start at rank `markers(key)`.
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

/// KEYS[1] the timeline; ARGV: the exclusive upper score (`(id` or `+inf`), the limit.
/// Returns false without a floor, else the floor and the ids, newest first.
const LUA_READ: &str = r"
local floor = floor_of(KEYS[1])
if floor == nil then return false end
local lo = floor
if lo < 1 then lo = 1 end
local ids = redis.call('ZREVRANGEBYSCORE', KEYS[1], ARGV[1], lo, 'LIMIT', 0, tonumber(ARGV[2]))
return {string.format('%.0f', floor), ids}
";

/// KEYS[1] the timeline. Creates it (with the build marker) if missing.
const LUA_BEGIN: &str = r"
redis.call('ZADD', KEYS[1], 'NX', -2, 'b')
return 1
";

/// KEYS[1] the timeline; ARGV: cap, floor, then the ids.
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

/// KEYS[1] the timeline; ARGV: cap, then the ids. Does nothing to a missing timeline.
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

/// A script's full text: the helpers, then its body.
fn script_text(body: &str) -> String {
    format!("{LUA_HELPERS}\n{body}")
}

/// Users whose pushes go in one pipeline.
const ADD_PIPELINE: usize = 512;

impl Redis {
    pub(super) const NAME: &'static str = "redis";

    /// Connects to `url`, checked with a PING.
    pub(super) async fn connect(url: &str, prefix: &str, friends_ttl: Duration) -> Result<Redis> {
        let client = redis::Client::open(url)?;
        let mut con = client.get_multiplexed_async_connection().await?;
        let _: String = redis::cmd("PING").query_async(&mut con).await?;
        let script = |body| redis::Script::new(&script_text(body));
        Ok(Redis {
            con,
            prefix: prefix.to_string(),
            friends_ttl,
            read: script(LUA_READ),
            begin: script(LUA_BEGIN),
            finish: script(LUA_FINISH),
            add: script(LUA_ADD),
        })
    }

    fn post_key(&self, id: u64) -> String {
        format!("{}:p:{id}", self.prefix)
    }

    fn friends_key(&self, uid: u64) -> String {
        format!("{}:f:{uid}", self.prefix)
    }

    fn timeline_key(&self, uid: u64) -> String {
        format!("{}:t:{uid}", self.prefix)
    }

    /// One MGET.
    pub(super) async fn get_posts(&self, ids: &[u64]) -> Result<Vec<Option<Arc<Post>>>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = ids.iter().map(|&id| self.post_key(id)).collect();
        let mut con = self.con.clone();
        let got: Vec<Option<Vec<u8>>> = redis::cmd("MGET").arg(&keys).query_async(&mut con).await?;
        got.into_iter()
            .zip(ids)
            .map(|(v, &id)| match v {
                None => Ok(None),
                Some(b) => {
                    Ok(Some(Arc::new(Post::decode(&b, || format!("cached post {id} in redis"))?)))
                }
            })
            .collect()
    }

    /// One pipeline of SETs.
    pub(super) async fn put_posts(&self, posts: &[Arc<Post>]) -> Result<()> {
        if posts.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        for p in posts {
            pipe.set(self.post_key(p.id), p.encode()).ignore();
        }
        let mut con = self.con.clone();
        pipe.query_async::<()>(&mut con).await?;
        Ok(())
    }

    pub(super) async fn del_posts(&self, ids: &[u64]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let keys: Vec<String> = ids.iter().map(|&id| self.post_key(id)).collect();
        let mut con = self.con.clone();
        con.del::<_, ()>(keys).await?;
        Ok(())
    }

    pub(super) async fn get_friends(&self, uid: u64) -> Result<Option<Arc<[u64]>>> {
        let mut con = self.con.clone();
        let got: Option<Vec<u8>> = con.get(self.friends_key(uid)).await?;
        Ok(got.map(|b| {
            b.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect()
        }))
    }

    /// SET with PX, at least one millisecond (zero would be refused).
    pub(super) async fn put_friends(&self, uid: u64, list: &[u64]) -> Result<()> {
        let mut con = self.con.clone();
        let ttl = self.friends_ttl.as_millis().max(1) as u64;
        let bytes: Vec<u8> = list.iter().flat_map(|f| f.to_le_bytes()).collect();
        redis::cmd("SET")
            .arg(self.friends_key(uid))
            .arg(bytes)
            .arg("PX")
            .arg(ttl)
            .query_async::<()>(&mut con)
            .await?;
        Ok(())
    }

    pub(super) async fn del_friends(&self, uids: &[u64]) -> Result<()> {
        if uids.is_empty() {
            return Ok(());
        }
        let keys: Vec<String> = uids.iter().map(|&u| self.friends_key(u)).collect();
        let mut con = self.con.clone();
        con.del::<_, ()>(keys).await?;
        Ok(())
    }

    /// `before` past 2^53 (no post id is that large) reads from the newest.
    pub(super) async fn timeline_read(
        &self,
        uid: u64,
        before: u64,
        limit: usize,
    ) -> Result<Option<(Vec<u64>, u64)>> {
        let mut con = self.con.clone();
        let max = if before > 1 << 53 { "+inf".to_string() } else { format!("({before}") };
        let got: Option<(String, Vec<String>)> = self
            .read
            .key(self.timeline_key(uid))
            .arg(max)
            .arg(limit)
            .invoke_async(&mut con)
            .await?;
        Ok(got.map(|(floor, ids)| {
            let ids = ids.iter().filter_map(|s| s.parse().ok()).collect();
            (ids, floor.parse().unwrap_or(u64::MAX))
        }))
    }

    pub(super) async fn timeline_begin(&self, uid: u64) -> Result<()> {
        let mut con = self.con.clone();
        self.begin.key(self.timeline_key(uid)).invoke_async::<()>(&mut con).await?;
        Ok(())
    }

    pub(super) async fn timeline_finish(
        &self,
        uid: u64,
        ids: &[u64],
        floor: u64,
        cap: usize,
    ) -> Result<()> {
        let mut con = self.con.clone();
        let mut inv = self.finish.key(self.timeline_key(uid));
        inv.arg(cap).arg(floor);
        for id in ids {
            inv.arg(id);
        }
        inv.invoke_async::<()>(&mut con).await?;
        Ok(())
    }

    /// EVALSHA of the add script per user, [`ADD_PIPELINE`] users per pipeline; a Redis
    /// that does not know the script yet (NOSCRIPT) gets it loaded and the pipeline again.
    pub(super) async fn timeline_add(&self, uids: &[u64], ids: &[u64], cap: usize) -> Result<()> {
        let mut con = self.con.clone();
        let hash = self.add.get_hash().to_string();
        for chunk in uids.chunks(ADD_PIPELINE) {
            let mut pipe = redis::pipe();
            for &u in chunk {
                let mut cmd = redis::cmd("EVALSHA");
                cmd.arg(&hash).arg(1).arg(self.timeline_key(u)).arg(cap);
                for id in ids {
                    cmd.arg(id);
                }
                pipe.add_command(cmd).ignore();
            }
            match pipe.query_async::<()>(&mut con).await {
                Err(e) if e.kind() == redis::ErrorKind::NoScriptError => {
                    redis::cmd("SCRIPT")
                        .arg("LOAD")
                        .arg(script_text(LUA_ADD))
                        .query_async::<String>(&mut con)
                        .await?;
                    pipe.query_async::<()>(&mut con).await?;
                }
                other => other?,
            }
        }
        Ok(())
    }

    /// One ZREM; the floor and build markers are not ids, so they stay.
    pub(super) async fn timeline_remove(&self, uid: u64, ids: &[u64]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut con = self.con.clone();
        let members: Vec<String> = ids.iter().map(u64::to_string).collect();
        con.zrem::<_, _, ()>(self.timeline_key(uid), members).await?;
        Ok(())
    }
}
