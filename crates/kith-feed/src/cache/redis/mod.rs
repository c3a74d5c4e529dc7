//! The Redis backend, on one Redis or a Redis Cluster (`con.rs`): keys under a prefix so
//! several servers can share it, and one reconnecting multiplexed connection (requests from
//! all tasks are pipelined on it). On a cluster, calls whose node kith chooses (the slot
//! map's reading, fan-out, the probe, the repairs) go on kith's own connection to that
//! node (`nodes.rs`) instead.
//!
//! Every call is bounded in time (the connection timeout plus the response timeout) and
//! goes through the circuit breaker of `health.rs`: once Redis is found unavailable
//! (unreachable, refusing writes, or timing out for twice the response timeout), calls
//! fail at once until a probe, every probe interval, gets a write through (and, on a
//! cluster, finds every master of a fresh slot map answering and every slot served, then
//! replaces the cluster connections). The feed answers failed reads from the store, so a
//! Redis that is down, paused or refusing writes costs speed, not answers.
//!
//! Keys: `<prefix>:p:<id>` holds a post's stored form, `<prefix>:f:{<uid>}` a friend list
//! (little-endian `u64`s, expiring after the time to live) with its version at
//! `<prefix>:fv:{<uid>}`, and `<prefix>:t:{<uid>}` a timeline: a sorted set of post ids
//! scored by themselves (exact, ids are below 2^53). The floor is a member of the same set
//! (`f<floor>`, score -1; `b<token>`, score -2, marks a build in progress), so eviction removes a
//! timeline and its floor together. The user's id is the hash tag of each of the user's
//! keys, so on a cluster they share a slot, and every script (`lua.rs`) touches one slot.
//! Every timeline step that reads the floor is a script, so it is atomic against
//! concurrent pushes and builds. `<prefix>:probe` is the probe's key.
//!
//! A friend-list fill is cached only if the list's version is the one the filler read
//! before it read the store, and every change bumps the version before dropping the list:
//! so no server caches a list older than a change that any server sharing the Redis
//! acknowledged.
//!
//! On a cluster, a watcher reads the slot map every [`WATCH_INTERVAL`]: pushes go out as one
//! pipeline per master, and when a slot's master changes (a replica took over), every
//! timeline and friend list on the new master is dropped, since replication is
//! asynchronous and the old master may have acknowledged pushes and invalidations the new
//! one never got. They are rebuilt from the store on their next read.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use futures_util::future::try_join_all;
use redis::cluster_routing::{MultipleNodeRoutingInfo, ResponsePolicy, RoutingInfo};
use redis::{AsyncCommands, Cmd, RedisError, RedisResult};

use super::con::{At, Con, Masters, Node, slot};
use nodes::{Lane, timed_out};

mod connect;
mod lists;
mod near;
mod nodes;
mod timelines;
mod upkeep;
use super::health::Health;
use super::lua::{LUA_ADD, LUA_FRIENDS_DROP, script_text};
use crate::error::{Error, Result};
use crate::post::Post;

/// The Redis backend.
#[derive(Clone)]
pub struct Redis {
    shared: Arc<Shared>,
    read: redis::Script,
    begin: redis::Script,
    finish: redis::Script,
    add: redis::Script,
    remove: redis::Script,
    fill: redis::Script,
}

/// Where the backend connects.
#[derive(Clone, Copy, Debug)]
pub enum Target<'a> {
    /// One Redis.
    One(&'a str),
    /// Nodes of a Redis Cluster (any reachable one is enough to find the others).
    Cluster(&'a [String]),
}

/// What the backend, its probe and its watcher share.
struct Shared {
    con: RwLock<Con>,
    /// A second connection, for write-back's `WAIT`s, which hold a connection until a
    /// replica confirms: nothing else waits behind them.
    waiting: RwLock<Con>,
    /// On a cluster, kith's own connections to each node (`nodes.rs`): the slot map's
    /// reading, fan-out, the probe and the repairs go to the node kith's map names.
    nodes: Option<nodes::Nodes>,
    /// On a cluster, a connection that reads from replicas (`READONLY`), for write-back's
    /// reads while a master cannot answer (`writeback.rs`).
    replica_reads: Option<RwLock<Con>>,
    /// Masters that took slots over, found by any reading of the slot map, for the watcher
    /// to drop entries on.
    owed: Mutex<Vec<super::con::Master>>,
    /// A cluster's slot map (empty on one Redis).
    masters: Mutex<Arc<Masters>>,
    drop_script: redis::Script,
    prefix: String,
    friends_ttl: Duration,
    /// The longest one call may take: waiting for a connection, then for the reply.
    deadline: Duration,
    /// How long timeouts must keep coming before the circuit opens on them (twice the
    /// response timeout), none more than `deadline` after the one before.
    open_after: Duration,
    probe_interval: Duration,
    health: Health,
    /// This process's copies of posts and (when asked for) friend lists.
    near: near::Near,
    /// List drops sent past an open circuit and not answered yet (`lists.rs`).
    past_breaker: std::sync::atomic::AtomicUsize,
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

/// How often a cluster's slot map is read again.
pub(super) const WATCH_INTERVAL: Duration = Duration::from_millis(500);

/// How long a friend list's version outlives its last change: far longer than any fill
/// (whose store read is bounded by the store's timeouts) can take, so a fill never
/// compares against a version that expired and came back.
const VERSION_TTL: Duration = Duration::from_secs(600);

/// How long a confirmed pipeline (a list's drop) waits for a replica.
const CONFIRM_WAIT_MS: u64 = 200;

/// Keys deleted per command when Redis is back.
const REPAIR_BATCH: usize = 1000;
/// The error of a write no replica confirmed in time.
const NOT_CONFIRMED: &str = "not confirmed";

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

    /// Whether this is a Redis Cluster.
    pub(crate) fn is_cluster(&self) -> bool {
        self.shared.nodes.is_some()
    }

    /// Why Redis is not serving, or `None` while it is.
    pub(super) fn failure(&self) -> Option<String> {
        self.shared.health.failure()
    }

    fn post_key(&self, id: u64) -> String {
        format!("{}:p:{id}", self.shared.prefix)
    }

    fn timeline_key(&self, uid: u64) -> String {
        self.shared.timeline_key(uid)
    }

    pub(super) fn con(&self) -> Con {
        self.shared.con()
    }

    pub(super) fn waiting_con(&self) -> Con {
        self.shared.waiting_con()
    }

    pub(super) fn prefix(&self) -> &str {
        &self.shared.prefix
    }

    /// Replicas the master of `key`'s slot has (0 on one Redis).
    pub(super) fn replicas_of(&self, key: &str) -> usize {
        self.shared.masters().of(slot(key.as_bytes())).map_or(0, |m| m.replicas.len())
    }

    /// The master (host, port) of `key`'s slot and its replicas seen, by the slot map; `None` on
    /// one Redis or when the map does not cover the slot.
    pub(super) fn nodes_of(&self, key: &str) -> Option<(Node, Vec<Node>)> {
        let masters = self.shared.masters();
        let m = masters.of(slot(key.as_bytes()))?;
        Some(((m.host.clone(), m.port), m.seen.clone()))
    }

    /// Sends a read to the node at `node`, past the breaker and within the deadline: on the
    /// connection that reads from replicas (`READONLY`) with `replica`, else on the main
    /// one. Only on a cluster.
    pub(super) async fn read_at(
        &self,
        what: &str,
        node: &(String, u16),
        cmd: &Cmd,
        replica: bool,
    ) -> RedisResult<redis::Value> {
        let shared = &self.shared;
        let mut con = match (&shared.replica_reads, replica) {
            (Some(at), true) => at.read().unwrap_or_else(PoisonError::into_inner).clone(),
            _ => shared.con(),
        };
        shared.bounded(what, con.command_at(node, cmd)).await
    }

    /// Runs one call through the breaker, within the deadline. A failure that means Redis
    /// is unavailable opens the circuit and starts the probe; a timeout does only once
    /// timeouts have kept coming for [`Shared::open_after`].
    pub(super) async fn run<T>(
        &self,
        what: &str,
        call: impl Future<Output = RedisResult<T>>,
    ) -> Result<T> {
        let shared = &self.shared;
        shared.health.check()?;
        let start = std::time::Instant::now();
        let got = match tokio::time::timeout(shared.deadline, call).await {
            Ok(got) => got,
            Err(_) => Err(timed_out(what, shared.deadline)),
        };
        crate::timing::add_cache(start.elapsed());
        if let Err(e) = &got
            && shared.opens_on(e)
        {
            shared.start_probe();
        }
        Ok(got?)
    }

    /// An update of cached entries failed, and the caller marked the entries stale here;
    /// the probe (started here) deletes them from Redis, as other servers sharing the cache
    /// would serve them. Unless the update only timed out (one slow moment: the circuit
    /// opens if timeouts keep coming, in [`Self::run`]), its replica's confirmation is
    /// missing, or the slot moved to another master, the circuit opens too. In the last two
    /// cases the update went to the master this server's slot map names
    /// (`per_master_once`); if that master is or gets replaced, this server's watcher sees
    /// the takeover after the update, and drops every list the new master holds.
    fn distrust(&self, e: &Error) {
        let shared = &self.shared;
        shared.start_probe();
        let why = match e {
            Error::Redis(r) if r.to_string().starts_with(NOT_CONFIRMED) => return,
            // The slot has another master: a failover, whose drop (the watcher's) covers it.
            Error::Redis(r)
                if matches!(r.kind(), redis::ErrorKind::Moved | redis::ErrorKind::Ask) =>
            {
                return;
            }
            Error::Redis(r) if r.is_timeout() && shared.health.all_timelines_lost().is_none() => {
                return;
            }
            e => RedisError::from((
                redis::ErrorKind::ResponseError,
                "an update failed",
                e.to_string(),
            )),
        };
        if shared.health.trip(&why) {
            eprintln!(
                "kith feed: a cache update failed ({why}); answering from the store until the \
                 entries it left stale are deleted, probing every {} ms",
                shared.probe_interval.as_millis()
            );
        }
    }

    /// This process's copies first (posts never change), then one MGET for the rest.
    pub(super) async fn get_posts(&self, ids: &[u64]) -> Result<Vec<Option<Arc<Post>>>> {
        let near = &self.shared.near;
        let mut out: Vec<Option<Arc<Post>>> = ids.iter().map(|&id| near.post(id)).collect();
        let missing: Vec<usize> = (0..ids.len()).filter(|&i| out[i].is_none()).collect();
        if missing.is_empty() {
            return Ok(out);
        }
        let keys: Vec<String> = missing.iter().map(|&i| self.post_key(ids[i])).collect();
        let mut con = self.con();
        let got: Vec<Option<Vec<u8>>> =
            self.run("MGET", redis::cmd("MGET").arg(&keys).query_async(&mut con)).await?;
        let mut found = Vec::new();
        for (v, &i) in got.into_iter().zip(&missing) {
            if let Some(b) = v {
                let id = ids[i];
                let post = Arc::new(Post::decode(&b, || format!("cached post {id} in redis"))?);
                found.push(post.clone());
                out[i] = Some(post);
            }
        }
        near.keep_posts(&found);
        Ok(out)
    }

    /// One MSET (split by slot on a cluster); kept here too.
    pub(super) async fn put_posts(&self, posts: &[Arc<Post>]) -> Result<()> {
        if posts.is_empty() {
            return Ok(());
        }
        let mut cmd = redis::cmd("MSET");
        for p in posts {
            cmd.arg(self.post_key(p.id)).arg(p.encode());
        }
        let mut con = self.con();
        self.run("MSET posts", cmd.query_async::<()>(&mut con)).await?;
        self.shared.near.keep_posts(posts);
        Ok(())
    }

    pub(super) async fn del_posts(&self, ids: &[u64]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        self.shared.near.forget_posts(ids);
        let keys: Vec<String> = ids.iter().map(|&id| self.post_key(id)).collect();
        let mut con = self.con();
        self.run("DEL posts", con.del::<_, ()>(keys)).await
    }
}

impl Shared {
    fn con(&self) -> Con {
        self.con.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn waiting_con(&self) -> Con {
        self.waiting.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn timeline_key(&self, uid: u64) -> String {
        format!("{}:t:{{{uid}}}", self.prefix)
    }

    fn masters(&self) -> Arc<Masters> {
        self.masters.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Sends script calls (each with the key that places it) as one pipeline per master
    /// (on one Redis, one pipeline), all masters at once. A Redis that does not know the
    /// script yet (NOSCRIPT: new, restarted, or a replica just promoted) gets it loaded on
    /// every master and the calls again.
    ///
    /// With `confirm`, each pipeline to a master with a replica ends with a `WAIT` for one
    /// replica (on the connection write-back waits on, so nothing else queues behind it),
    /// and a pipeline no replica confirmed in time is an error: what a replica has not
    /// confirmed could vanish in a failover.
    async fn per_master(
        &self,
        cmds: Vec<(String, Cmd)>,
        script: &str,
        confirm: bool,
    ) -> RedisResult<()> {
        match self.per_master_once(&cmds, confirm).await {
            Err(e) if e.kind() == redis::ErrorKind::NoScriptError => {
                self.load_everywhere(script).await?;
                self.per_master_once(&cmds, confirm).await
            }
            other => other,
        }
    }

    async fn per_master_once(&self, cmds: &[(String, Cmd)], confirm: bool) -> RedisResult<()> {
        let masters = self.masters();
        // Grouped by master, each group routed as its first key is (`Masters::target`; with
        // kith's own connections, to the master's address), with whether it waits for a
        // replica.
        let direct = self.nodes.is_some();
        let mut groups: HashMap<String, (At, redis::Pipeline, bool)> = HashMap::new();
        for (key, cmd) in cmds {
            let (node, at, wait) = masters.target(slot(key.as_bytes()), confirm || direct);
            let wait = wait && confirm;
            let (_, pipe, _) = groups.entry(node).or_insert_with(|| (at, redis::pipe(), wait));
            pipe.add_command(cmd.clone()).ignore();
        }
        let sends = groups.into_values().map(|(at, mut pipe, wait)| async move {
            if wait {
                pipe.cmd("WAIT").arg(1).arg(CONFIRM_WAIT_MS);
            }
            let values = match (&self.nodes, &at) {
                (Some(nodes), At::Node(host, port)) => {
                    let lane = if wait { Lane::Waiting } else { Lane::Plain };
                    nodes.pipeline(&(host.clone(), *port), lane, &pipe).await?
                }
                _ => {
                    let mut con = if wait { self.waiting_con() } else { self.con() };
                    con.pipeline_values_to(&at, &pipe).await?
                }
            };
            match values.last() {
                _ if !wait => Ok(()),
                Some(redis::Value::Int(n)) if *n >= 1 => Ok(()),
                // Not an outage (the circuit stays closed): the caller's entries are
                // stale here.
                _ => Err(RedisError::from((
                    redis::ErrorKind::ResponseError,
                    NOT_CONFIRMED,
                    format!("no replica confirmed it within {CONFIRM_WAIT_MS} ms"),
                ))),
            }
        });
        let got = try_join_all(sends).await.map(drop);
        if got.is_err() && !masters.is_empty() {
            // A slot may have moved: read the map again for the retry.
            self.refresh().await;
        }
        got
    }

    /// Loads a script on every master (on one Redis, on it).
    async fn load_everywhere(&self, body: &str) -> RedisResult<()> {
        let mut load = redis::cmd("SCRIPT");
        load.arg("LOAD").arg(script_text(body));
        let masters = self.masters();
        if let Some(nodes) = &self.nodes
            && !masters.is_empty()
        {
            let loads = masters.all().iter().map(|m| {
                let (node, load) = ((m.host.clone(), m.port), &load);
                async move { nodes.command(&node, Lane::Plain, load).await.map(drop) }
            });
            return try_join_all(loads).await.map(drop);
        }
        let mut con = self.con();
        match &mut con {
            Con::Single(c) => load.query_async::<String>(c).await.map(drop),
            Con::Cluster(c) => {
                let all = RoutingInfo::MultiNode((
                    MultipleNodeRoutingInfo::AllMasters,
                    Some(ResponsePolicy::AllSucceeded),
                ));
                c.route_command(&load, all).await.map(drop)
            }
        }
    }

    async fn bounded<T>(
        &self,
        what: &str,
        call: impl Future<Output = RedisResult<T>>,
    ) -> RedisResult<T> {
        let start = std::time::Instant::now();
        let got = tokio::time::timeout(self.deadline, call)
            .await
            .unwrap_or_else(|_| Err(timed_out(what, self.deadline)));
        crate::timing::add_cache(start.elapsed());
        got
    }
}
