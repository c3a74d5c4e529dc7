//! Write-back shared by every server of a Redis Cluster: posts acknowledged before they
//! reach the store wait in Redis, where every server sees them, instead of in one server's
//! journal and memory.
//!
//! - `<prefix>:wq:{wq<s>}` (shard `s = id mod` [`SHARDS`]): the queue, a sorted set of
//!   posts in their stored form scored by id. It is the durable record until the store has
//!   the post: a post is acknowledged from here only once its master has it and a replica
//!   confirmed it (`WAIT`), so losing one Redis node loses no post; without a replica to
//!   confirm, the post is stored at once instead.
//! - `<prefix>:wa:{<author>}`: the author's waiting post ids, for pulls on any server
//!   (confirmed by a replica too, so a failover does not hide a waiting post).
//! - `<prefix>:wl:{wq<s>}`: a flusher's short lock on shard `s`, so one server at a time
//!   moves a shard into the store.
//!
//! A reader looks at the author index (pulls) or the queue (posts by id) before the store,
//! and a flusher removes a post from them only after the store has it, so a waiting post is
//! always found in one place or the other. When the key's master cannot answer (killed,
//! paused, cut off, or the circuit open), a reader asks the master directly and every
//! replica of it at once, and takes whichever answers whole first: the master, or all
//! replicas (every waiting entry was confirmed by one of them before it was acknowledged,
//! so their union holds it). So a master's outage does not make waiting posts unreadable
//! until its failover.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::future::{select_ok, try_join_all};
use redis::{Cmd, FromRedisValue, RedisResult};

use super::con::{At, slot};
use super::redis::Redis;
use crate::error::Result;
use crate::post::Post;

/// Queue shards, spread over the masters by their hash tags.
pub(crate) const SHARDS: u64 = 8;

/// How long a flusher's lock on a shard lasts if it is never released (a killed flusher).
const LOCK_MS: u64 = 5_000;

/// How long an acknowledgement waits for a replica.
const WAIT_MS: u64 = 200;

/// How long an author's index lives after its last post (a flush empties it long before).
const INDEX_TTL_MS: i64 = 3_600_000;

/// Posts moved into the store per shard and flush.
pub(crate) const FLUSH_BATCH: usize = 512;

/// Deletes the lock only if this flusher holds it.
const LUA_UNLOCK: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
";

impl Redis {
    fn queue_key(&self, shard: u64) -> String {
        format!("{}:wq:{{wq{shard}}}", self.prefix())
    }

    fn waiting_key(&self, author: u64) -> String {
        format!("{}:wa:{{{author}}}", self.prefix())
    }

    fn lock_key(&self, shard: u64) -> String {
        format!("{}:wl:{{wq{shard}}}", self.prefix())
    }

    /// Puts a post in the author's index, then in the queue (so a flusher, which works from
    /// the queue, never meets a post whose index entry is still to come). `Ok(true)` once
    /// both are durable in Redis: on their masters and confirmed by a replica of each
    /// (`WAIT`, on a connection of its own so that no other request waits behind it);
    /// `Ok(false)` if a master has no replica or none confirmed in time: the caller then
    /// stores the post itself.
    pub(crate) async fn wb_put(&self, post: &Post) -> Result<bool> {
        let waiting = self.waiting_key(post.author);
        let queue = self.queue_key(post.id % SHARDS);
        let mut index = redis::pipe();
        index.zadd(&waiting, post.id, post.id).ignore();
        // An index entry whose queue write failed points at a post stored at once; it
        // expires rather than staying forever.
        index.pexpire(&waiting, INDEX_TTL_MS).ignore();
        index.cmd("WAIT").arg(1).arg(WAIT_MS);
        let mut add = redis::pipe();
        add.zadd(&queue, post.encode(), post.id).ignore();
        add.cmd("WAIT").arg(1).arg(WAIT_MS);
        if self.replicas_of(&waiting) == 0 || self.replicas_of(&queue) == 0 {
            // No replica could confirm (a master just promoted, or none configured): a WAIT
            // would only hold the connection for its whole timeout.
            return Ok(false);
        }
        let mut con = self.waiting_con();
        let mut confirmed = true;
        for (key, pipe) in [(&waiting, &index), (&queue, &add)] {
            let replies: Vec<redis::Value> = self
                .run(
                    "write-back queue",
                    con.pipeline_values_to(&At::Slot(slot(key.as_bytes())), pipe),
                )
                .await?;
            confirmed &= matches!(replies.last(), Some(redis::Value::Int(n)) if *n >= 1);
        }
        Ok(confirmed)
    }

    /// A read of write-back keys on `key`'s master, through the breaker; when that fails,
    /// the same read on the master by address and on every replica the slot map lists for
    /// it, at once, each within the deadline: the replies of whichever answers whole first
    /// (the master alone, or every replica), one per node, for the caller to merge. The
    /// first error when neither does.
    async fn wb_read<T>(&self, what: &'static str, key: &str, cmd: Cmd) -> Result<Vec<T>>
    where
        T: FromRedisValue + Send + 'static,
    {
        let mut con = self.con();
        let first = match self.run(what, cmd.query_async::<T>(&mut con)).await {
            Ok(v) => return Ok(vec![v]),
            Err(e) => e,
        };
        let Some((master, replicas)) = self.nodes_of(key) else { return Err(first) };
        let said = format!("{}:{} and replicas {replicas:?}", master.0, master.1);
        type Read<'a, T> = Pin<Box<dyn Future<Output = RedisResult<Vec<T>>> + Send + 'a>>;
        let cmd = &cmd;
        let direct: Read<'_, T> = Box::pin(async move {
            let v = self.read_at(what, &master, cmd, false).await?;
            Ok(vec![T::from_redis_value(&v)?])
        });
        let mut tries = vec![direct];
        if !replicas.is_empty() {
            tries.push(Box::pin(async move {
                let reads = replicas.iter().map(|node| async move {
                    T::from_redis_value(&self.read_at(what, node, cmd, true).await?)
                });
                try_join_all(reads).await
            }));
        }
        match select_ok(tries).await {
            Ok((got, _)) => Ok(got),
            Err(e) => {
                // Once in a while: every read of the outage fails so.
                static LAST: AtomicU64 = AtomicU64::new(0);
                let now = crate::post::now_ms() / 5_000;
                if LAST.swap(now, Ordering::Relaxed) != now {
                    eprintln!("kith feed: {what} unreadable on master {said}: {e}");
                }
                Err(first)
            }
        }
    }

    /// Up to `limit` waiting post ids of each author below `before`, newest first.
    pub(crate) async fn wb_author_posts(
        &self,
        authors: &[u64],
        before: u64,
        limit: usize,
    ) -> Result<Vec<Vec<u64>>> {
        let max = if before > 1 << 53 { "+inf".to_string() } else { format!("({before}") };
        let reads = authors.iter().map(|&a| {
            let key = self.waiting_key(a);
            let mut cmd = redis::cmd("ZREVRANGEBYSCORE");
            cmd.arg(&key).arg(&max).arg("-inf").arg("LIMIT").arg(0).arg(limit);
            async move {
                let mut ids: Vec<u64> =
                    self.wb_read::<Vec<u64>>("write-back index", &key, cmd).await?.concat();
                ids.sort_unstable_by(|x, y| y.cmp(x));
                ids.dedup();
                ids.truncate(limit);
                Ok::<_, crate::error::Error>(ids)
            }
        });
        try_join_all(reads).await
    }

    /// The waiting posts with these ids, in their order.
    pub(crate) async fn wb_get(&self, ids: &[u64]) -> Result<Vec<Option<Arc<Post>>>> {
        let reads = ids.iter().map(|&id| {
            let key = self.queue_key(id % SHARDS);
            let mut cmd = redis::cmd("ZRANGEBYSCORE");
            cmd.arg(&key).arg(id).arg(id);
            async move {
                let found = self.wb_read::<Vec<Vec<u8>>>("write-back queue", &key, cmd).await?;
                match found.iter().flatten().next() {
                    None => Ok(None),
                    Some(b) => Ok(Some(Arc::new(Post::decode(b, || {
                        format!("waiting post {id} in redis")
                    })?))),
                }
            }
        });
        try_join_all(reads).await
    }

    /// Every waiting post above `after`, as (author, id), ascending: what a server that
    /// takes over another's fan-out must deliver besides the stored posts.
    pub(crate) async fn wb_after(&self, after: u64) -> Result<Vec<(u64, u64)>> {
        let mut out = Vec::new();
        for shard in 0..SHARDS {
            let mut con = self.con();
            let mut cmd = redis::cmd("ZRANGEBYSCORE");
            cmd.arg(self.queue_key(shard)).arg(format!("({after}")).arg("+inf");
            let got: Vec<Vec<u8>> = self.run("write-back queue", cmd.query_async(&mut con)).await?;
            for b in got {
                let p = Post::decode(&b, || format!("a waiting post in shard {shard}"))?;
                out.push((p.author, p.id));
            }
        }
        out.sort_unstable_by_key(|&(_, id)| id);
        Ok(out)
    }

    /// The largest waiting id (0 if none), so a starting server hands out larger ones.
    pub(crate) async fn wb_max_id(&self) -> Result<u64> {
        let mut max = 0;
        for shard in 0..SHARDS {
            let mut con = self.con();
            let mut cmd = redis::cmd("ZRANGE");
            cmd.arg(self.queue_key(shard)).arg(-1).arg(-1).arg("WITHSCORES");
            let got: Vec<(Vec<u8>, u64)> =
                self.run("write-back queue", cmd.query_async(&mut con)).await?;
            max = got.iter().map(|&(_, id)| id).fold(max, u64::max);
        }
        Ok(max)
    }

    /// How many posts wait, over every shard; read past an open circuit as the waiting
    /// posts are (`wb_read`), so that a server can tell while its circuit is open.
    pub(crate) async fn wb_len(&self) -> Result<u64> {
        let mut n = 0;
        for shard in 0..SHARDS {
            let key = self.queue_key(shard);
            let mut cmd = redis::cmd("ZCARD");
            cmd.arg(&key);
            let counts = self.wb_read::<u64>("write-back queue", &key, cmd).await?;
            n += counts.into_iter().max().unwrap_or(0);
        }
        Ok(n)
    }

    /// Locks shard `shard` for `owner` and takes its oldest waiting posts; `None` if another
    /// flusher holds it.
    pub(crate) async fn wb_take(&self, shard: u64, owner: &str) -> Result<Option<Vec<Post>>> {
        let mut con = self.con();
        let mut lock = redis::cmd("SET");
        lock.arg(self.lock_key(shard)).arg(owner).arg("NX").arg("PX").arg(LOCK_MS);
        let locked: Option<String> =
            self.run("write-back lock", lock.query_async(&mut con)).await?;
        if locked.is_none() {
            return Ok(None);
        }
        let mut cmd = redis::cmd("ZRANGE");
        cmd.arg(self.queue_key(shard)).arg(0).arg(FLUSH_BATCH as u64 - 1);
        let got: Vec<Vec<u8>> = self.run("write-back queue", cmd.query_async(&mut con)).await?;
        let posts = got
            .iter()
            .map(|b| Post::decode(b, || format!("a waiting post in shard {shard}")))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(Some(posts))
    }

    /// After the store has `posts` (from shard `shard`): removes them from the author
    /// indexes, then from the queue, and releases the lock.
    pub(crate) async fn wb_done(&self, shard: u64, owner: &str, posts: &[Post]) -> Result<()> {
        let removals = posts.iter().map(|p| {
            let mut con = self.con();
            let cmd = redis::cmd("ZREM").arg(self.waiting_key(p.author)).arg(p.id).clone();
            async move { cmd.query_async::<()>(&mut con).await }
        });
        self.run("write-back index", try_join_all(removals)).await?;
        let mut con = self.con();
        if !posts.is_empty() {
            let mut zrem = redis::cmd("ZREM");
            zrem.arg(self.queue_key(shard));
            for p in posts {
                zrem.arg(p.encode());
            }
            self.run("write-back queue", zrem.query_async::<()>(&mut con)).await?;
        }
        self.wb_unlock(shard, owner).await
    }

    /// Releases the shard's lock if `owner` holds it.
    pub(crate) async fn wb_unlock(&self, shard: u64, owner: &str) -> Result<()> {
        let mut con = self.con();
        let unlock = redis::Script::new(LUA_UNLOCK);
        let mut inv = unlock.key(self.lock_key(shard));
        inv.arg(owner);
        self.run("write-back unlock", inv.invoke_async::<()>(&mut con)).await
    }
}
