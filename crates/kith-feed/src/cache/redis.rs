//! The Redis backend: one reconnecting multiplexed connection (the redis crate's
//! `ConnectionManager`: requests from all tasks are pipelined on it, and a dropped
//! connection is rebuilt in the background), keys under a prefix so several servers can
//! share one Redis.
//!
//! Every call is bounded in time (the connection timeout plus the response timeout) and
//! goes through the circuit breaker of `health.rs`: once Redis is found unavailable, calls
//! fail at once until a probe, every probe interval, gets a write through. The feed answers
//! failed reads from the store, so a Redis that is down, paused or refusing writes costs
//! speed, not answers.
//!
//! Keys: `<prefix>:p:<id>` holds a post's stored form, `<prefix>:f:<uid>` a friend list
//! (little-endian `u64`s, expiring after the time to live) and `<prefix>:t:<uid>` a timeline:
//! a sorted set of post ids scored by themselves (exact, ids are below 2^53). The floor is a
//! member of the same set (`f<floor>`, score -1; `b`, score -2, marks a build in progress),
//! so eviction removes a timeline and its floor together. Every timeline step that reads
//! the floor is a Lua script (`lua.rs`), so it is atomic against concurrent pushes and
//! builds. `<prefix>:probe` is the probe's key.

use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{AsyncCommands, RedisError, RedisResult};

use super::health::{Health, unavailable};
use super::lua::{LUA_ADD, LUA_BEGIN, LUA_FINISH, LUA_READ, script_text};
use crate::config::FeedConfig;
use crate::error::Result;
use crate::post::Post;

/// The Redis backend.
#[derive(Clone)]
pub struct Redis {
    shared: Arc<Shared>,
    read: redis::Script,
    begin: redis::Script,
    finish: redis::Script,
    add: redis::Script,
}

/// What the backend and its probe share.
struct Shared {
    con: ConnectionManager,
    prefix: String,
    friends_ttl: Duration,
    /// The longest one call may take: waiting for a connection, then for the reply.
    deadline: Duration,
    probe_interval: Duration,
    health: Health,
}

impl std::fmt::Debug for Redis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redis")
            .field("prefix", &self.shared.prefix)
            .field("failure", &self.shared.health.failure())
            .finish_non_exhaustive()
    }
}

/// Users whose pushes go in one pipeline.
const ADD_PIPELINE: usize = 512;

/// Keys deleted per command when Redis is back.
const REPAIR_BATCH: usize = 1000;

/// A call that took longer than the deadline.
fn timed_out(what: &str, deadline: Duration) -> RedisError {
    let msg = format!("{what} timed out after {} ms", deadline.as_millis());
    RedisError::from(std::io::Error::new(std::io::ErrorKind::TimedOut, msg))
}

/// `s` with the glob characters of SCAN's MATCH escaped.
fn glob_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl Redis {
    pub(super) const NAME: &'static str = "redis";

    /// Connects to `url` with the timeouts of `config`, checked with a PING.
    pub(super) async fn connect(url: &str, config: &FeedConfig) -> Result<Redis> {
        let client = redis::Client::open(url)?;
        // No reconnection retries inside the manager: a call waiting for them would wait
        // past its deadline. The probe retries instead, every probe interval.
        let manager = ConnectionManagerConfig::new()
            .set_connection_timeout(config.redis_connect_timeout)
            .set_response_timeout(config.redis_response_timeout)
            .set_number_of_retries(0);
        let mut con = ConnectionManager::new_with_config(client, manager).await?;
        let _: String = redis::cmd("PING").query_async(&mut con).await?;
        let script = |body| redis::Script::new(&script_text(body));
        let shared = Shared {
            con,
            prefix: config.redis_prefix.clone(),
            friends_ttl: config.friends_ttl,
            deadline: config.redis_connect_timeout + config.redis_response_timeout,
            probe_interval: config.redis_probe_interval,
            health: Health::default(),
        };
        Ok(Redis {
            shared: Arc::new(shared),
            read: script(LUA_READ),
            begin: script(LUA_BEGIN),
            finish: script(LUA_FINISH),
            add: script(LUA_ADD),
        })
    }

    /// Why Redis is not serving, or `None` while it is.
    pub(super) fn failure(&self) -> Option<String> {
        self.shared.health.failure()
    }

    fn post_key(&self, id: u64) -> String {
        format!("{}:p:{id}", self.shared.prefix)
    }

    fn friends_key(&self, uid: u64) -> String {
        self.shared.friends_key(uid)
    }

    fn timeline_key(&self, uid: u64) -> String {
        format!("{}:t:{uid}", self.shared.prefix)
    }

    fn con(&self) -> ConnectionManager {
        self.shared.con.clone()
    }

    /// Runs one call through the breaker, within the deadline. A failure that means Redis
    /// is unavailable opens the circuit and starts the probe.
    async fn run<T>(&self, what: &str, call: impl Future<Output = RedisResult<T>>) -> Result<T> {
        let shared = &self.shared;
        shared.health.check()?;
        let got = match tokio::time::timeout(shared.deadline, call).await {
            Ok(got) => got,
            Err(_) => Err(timed_out(what, shared.deadline)),
        };
        if let Err(e) = &got
            && unavailable(e)
            && shared.health.trip(e)
        {
            eprintln!(
                "kith feed: redis unavailable ({e}); answering from the store, probing every {} ms",
                shared.probe_interval.as_millis()
            );
            tokio::spawn(Shared::probe(Arc::downgrade(shared)));
        }
        Ok(got?)
    }

    /// One MGET.
    pub(super) async fn get_posts(&self, ids: &[u64]) -> Result<Vec<Option<Arc<Post>>>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<String> = ids.iter().map(|&id| self.post_key(id)).collect();
        let mut con = self.con();
        let got: Vec<Option<Vec<u8>>> =
            self.run("MGET", redis::cmd("MGET").arg(&keys).query_async(&mut con)).await?;
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
        let mut con = self.con();
        self.run("SET posts", pipe.query_async::<()>(&mut con)).await
    }

    pub(super) async fn del_posts(&self, ids: &[u64]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let keys: Vec<String> = ids.iter().map(|&id| self.post_key(id)).collect();
        let mut con = self.con();
        self.run("DEL posts", con.del::<_, ()>(keys)).await
    }

    /// A miss, without asking Redis, for a list whose invalidation failed.
    pub(super) async fn get_friends(&self, uid: u64) -> Result<Option<Arc<[u64]>>> {
        if self.shared.health.is_friends_stale(uid) {
            return Ok(None);
        }
        let mut con = self.con();
        let got: Option<Vec<u8>> = self.run("GET friends", con.get(self.friends_key(uid))).await?;
        Ok(got.map(|b| {
            b.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect()
        }))
    }

    /// SET with PX, at least one millisecond (zero would be refused). The list replaces
    /// any stale one.
    pub(super) async fn put_friends(&self, uid: u64, list: &[u64]) -> Result<()> {
        let mut con = self.con();
        let ttl = self.shared.friends_ttl.as_millis().max(1) as u64;
        let bytes: Vec<u8> = list.iter().flat_map(|f| f.to_le_bytes()).collect();
        let mut cmd = redis::cmd("SET");
        cmd.arg(self.friends_key(uid)).arg(bytes).arg("PX").arg(ttl);
        self.run("SET friends", cmd.query_async::<()>(&mut con)).await?;
        self.shared.health.friends_fresh(&[uid]);
        Ok(())
    }

    /// DEL; when it fails, the lists are remembered as stale and never served.
    pub(super) async fn del_friends(&self, uids: &[u64]) -> Result<()> {
        if uids.is_empty() {
            return Ok(());
        }
        let keys: Vec<String> = uids.iter().map(|&u| self.friends_key(u)).collect();
        let mut con = self.con();
        let health = &self.shared.health;
        match self.run("DEL friends", con.del::<_, ()>(keys)).await {
            Ok(()) => {
                health.friends_fresh(uids);
                Ok(())
            }
            Err(e) => {
                health.friends_stale(uids, self.shared.friends_ttl);
                Err(e)
            }
        }
    }

    /// `before` past 2^53 (no post id is that large) reads from the newest. A timeline
    /// that missed a push is a miss.
    pub(super) async fn timeline_read(
        &self,
        uid: u64,
        before: u64,
        limit: usize,
    ) -> Result<Option<(Vec<u64>, u64)>> {
        if self.shared.health.is_timeline_stale(uid) {
            return Ok(None);
        }
        let mut con = self.con();
        let max = if before > 1 << 53 { "+inf".to_string() } else { format!("({before}") };
        let mut inv = self.read.key(self.timeline_key(uid));
        inv.arg(max).arg(limit);
        let got: Option<(String, Vec<String>)> =
            self.run("timeline read", inv.invoke_async(&mut con)).await?;
        Ok(got.map(|(floor, ids)| {
            let ids = ids.iter().filter_map(|s| s.parse().ok()).collect();
            (ids, floor.parse().unwrap_or(u64::MAX))
        }))
    }

    /// Begins a build, which the feed completes from the store: so a timeline that missed
    /// a push is trusted again from here.
    pub(super) async fn timeline_begin(&self, uid: u64) -> Result<()> {
        let mut con = self.con();
        let inv = self.begin.key(self.timeline_key(uid));
        self.run("timeline begin", inv.invoke_async::<()>(&mut con)).await?;
        self.shared.health.timeline_rebuilding(uid);
        Ok(())
    }

    pub(super) async fn timeline_finish(
        &self,
        uid: u64,
        ids: &[u64],
        floor: u64,
        cap: usize,
    ) -> Result<()> {
        let mut con = self.con();
        let mut inv = self.finish.key(self.timeline_key(uid));
        inv.arg(cap).arg(floor);
        for id in ids {
            inv.arg(id);
        }
        self.run("timeline finish", inv.invoke_async::<()>(&mut con)).await
    }

    /// EVALSHA of the add script per user, [`ADD_PIPELINE`] users per pipeline; a Redis
    /// that does not know the script yet (NOSCRIPT) gets it loaded and the pipeline again.
    /// When a pipeline fails, these users' timelines are remembered as stale.
    pub(super) async fn timeline_add(&self, uids: &[u64], ids: &[u64], cap: usize) -> Result<()> {
        let added = self.timeline_add_all(uids, ids, cap).await;
        if added.is_err() {
            self.shared.health.timelines_stale(uids);
        }
        added
    }

    async fn timeline_add_all(&self, uids: &[u64], ids: &[u64], cap: usize) -> Result<()> {
        let mut con = self.con();
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
            match self.run("timeline push", pipe.query_async::<()>(&mut con)).await {
                Err(crate::Error::Redis(e)) if e.kind() == redis::ErrorKind::NoScriptError => {
                    let mut load = redis::cmd("SCRIPT");
                    load.arg("LOAD").arg(script_text(LUA_ADD));
                    self.run("SCRIPT LOAD", load.query_async::<String>(&mut con)).await?;
                    self.run("timeline push", pipe.query_async::<()>(&mut con)).await?;
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
        let mut con = self.con();
        let members: Vec<String> = ids.iter().map(u64::to_string).collect();
        self.run("timeline remove", con.zrem::<_, _, ()>(self.timeline_key(uid), members)).await
    }
}

impl Shared {
    fn friends_key(&self, uid: u64) -> String {
        format!("{}:f:{uid}", self.prefix)
    }

    /// Every probe interval, until the backend is dropped: repairs and closes the circuit
    /// once Redis takes a write.
    async fn probe(shared: Weak<Shared>) {
        loop {
            let interval = match shared.upgrade() {
                Some(s) => s.probe_interval,
                None => return,
            };
            tokio::time::sleep(interval).await;
            let Some(s) = shared.upgrade() else { return };
            match s.recover().await {
                Ok(()) if s.health.close() => {
                    eprintln!("kith feed: redis is serving again");
                    return;
                }
                Ok(()) => {}
                Err(e) => s.health.still_failing(&e),
            }
        }
    }

    /// A write (so a Redis that answers but refuses writes stays unavailable), then the
    /// repairs: stale friend lists deleted, and every timeline dropped if too many missed
    /// pushes to remember.
    async fn recover(&self) -> RedisResult<()> {
        let mut con = self.con.clone();
        let mut probe = redis::cmd("SET");
        probe.arg(format!("{}:probe", self.prefix)).arg(1).arg("PX").arg(60_000);
        let first = self.bounded("probe", probe.query_async::<()>(&mut con)).await;
        if let Err(e) = first {
            // The first call after a restart finds the old connection dropped and starts
            // a new one; the second waits for it.
            if !e.is_io_error() {
                return Err(e);
            }
            self.bounded("probe", probe.query_async::<()>(&mut con)).await?;
        }
        for _ in 0..=super::health::MAX_STALE / REPAIR_BATCH {
            let uids = self.health.some_stale_friends(REPAIR_BATCH);
            if uids.is_empty() {
                break;
            }
            let keys: Vec<String> = uids.iter().map(|&u| self.friends_key(u)).collect();
            self.bounded("DEL friends", con.del::<_, ()>(keys)).await?;
            self.health.friends_fresh(&uids);
        }
        if let Some(loss) = self.health.all_timelines_lost() {
            self.drop_timelines(&mut con).await?;
            self.health.timelines_dropped(loss);
        }
        Ok(())
    }

    /// Deletes every timeline under the prefix, a SCAN page at a time.
    async fn drop_timelines(&self, con: &mut ConnectionManager) -> RedisResult<()> {
        let pattern = format!("{}:t:*", glob_escape(&self.prefix));
        let mut cursor = 0u64;
        loop {
            let mut scan = redis::cmd("SCAN");
            scan.arg(cursor).arg("MATCH").arg(&pattern).arg("COUNT").arg(REPAIR_BATCH);
            let (next, keys): (u64, Vec<String>) =
                self.bounded("SCAN timelines", scan.query_async(con)).await?;
            if !keys.is_empty() {
                self.bounded("UNLINK timelines", con.unlink::<_, ()>(keys)).await?;
            }
            if next == 0 {
                return Ok(());
            }
            cursor = next;
        }
    }

    async fn bounded<T>(
        &self,
        what: &str,
        call: impl Future<Output = RedisResult<T>>,
    ) -> RedisResult<T> {
        tokio::time::timeout(self.deadline, call)
            .await
            .unwrap_or_else(|_| Err(timed_out(what, self.deadline)))
    }
}
