//! Per-user lists cached in Redis (friend lists for eventual reads, followee lists for feed
//! reads): `<prefix>:<tag>:{uid}` with its version at `<prefix>:<tag>v:{uid}`. A fill is
//! cached only if the version it read before the store is unchanged; a change bumps the
//! version and drops the list, confirmed by a replica on a cluster. Friend lists may also be
//! copied in this process (`near.rs`).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use redis::{AsyncCommands, RedisResult};

use super::{LUA_FRIENDS_DROP, Redis, Shared, VERSION_TTL};
use crate::cache::List;
use crate::error::Result;

/// List drops sent past an open circuit that may wait at once (each within the deadline).
const PAST_BREAKER: usize = 64;

impl Redis {
    /// A miss, without asking Redis, for a list whose invalidation failed.
    pub(in crate::cache) async fn get_list(
        &self,
        list: List,
        uid: u64,
    ) -> Result<Option<Arc<[u64]>>> {
        if self.shared.health.is_list_stale(list, uid) {
            return Ok(None);
        }
        let near = (list == List::Friends).then_some(&self.shared.near);
        if let Some(l) = near.and_then(|n| n.friends(uid)) {
            return Ok(Some(l));
        }
        let drops = self.shared.near.drops();
        let mut con = self.con();
        let key = self.shared.list_key(list, uid);
        let got: Option<Vec<u8>> = self.run("GET list", con.get(key)).await?;
        let got: Option<Arc<[u64]>> = got.map(|b| {
            b.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect()
        });
        if let (Some(n), Some(l)) = (near, &got) {
            n.keep_friends(uid, l.clone(), drops);
        }
        Ok(got)
    }

    /// The list's version now, to hand to [`Redis::put_list`] after reading the store:
    /// this server's mark clock (`Health::clock`), a space, and the version in Redis. A
    /// fill cached with it clears only the stale marks made before it was read, whose
    /// changes its store read sees.
    pub(in crate::cache) async fn list_version(&self, list: List, uid: u64) -> Result<String> {
        let since = self.shared.health.clock();
        let mut con = self.con();
        let key = self.shared.version_key(list, uid);
        let got: Option<String> = self.run("GET list version", con.get(key)).await?;
        Ok(format!("{since} {}", got.unwrap_or_default()))
    }

    /// Caches the list (with PX, at least one millisecond: zero would be refused) unless a
    /// change bumped its version since `version` was read. The list replaces any stale one.
    pub(in crate::cache) async fn put_list(
        &self,
        list: List,
        uid: u64,
        items: &[u64],
        version: &str,
    ) -> Result<()> {
        let (since, version) = match version.split_once(' ') {
            Some((since, v)) => (since.parse().unwrap_or(0), v),
            None => (0, version),
        };
        let mut con = self.con();
        let ttl = self.shared.friends_ttl.as_millis().max(1) as u64;
        let bytes: Vec<u8> = items.iter().flat_map(|f| f.to_le_bytes()).collect();
        let mut inv = self.fill.key(self.shared.list_key(list, uid));
        inv.key(self.shared.version_key(list, uid)).arg(version).arg(bytes).arg(ttl);
        let cached: i64 = self.run("list fill", inv.invoke_async(&mut con)).await?;
        if cached == 1 {
            self.shared.health.lists_fresh(list, &[uid], since);
        }
        Ok(())
    }

    /// Bumps each list's version and drops it (one script per user, one pipeline per
    /// master); when that fails, the lists are remembered as stale and never served here.
    pub(in crate::cache) async fn del_lists(&self, list: List, uids: &[u64]) -> Result<()> {
        if uids.is_empty() {
            return Ok(());
        }
        if list == List::Friends {
            self.shared.near.forget_friends(uids);
        }
        let health = &self.shared.health;
        let since = health.clock();
        match self.run("drop lists", self.shared.drop_lists(list, uids)).await {
            Ok(()) => {
                health.lists_fresh(list, uids, since);
                Ok(())
            }
            Err(e) => {
                health.lists_stale(list, uids, self.shared.friends_ttl);
                if health.check().is_err() {
                    self.drop_past_the_breaker(list, uids);
                }
                self.distrust(&e);
                Err(e)
            }
        }
    }

    /// While the circuit is open this server serves none of these lists, but the servers
    /// whose circuit is closed would serve the cached ones until this server's probe
    /// deletes them, and the probe waits for every master to take writes (in trials, for
    /// as long as a killed master stayed down). So the drop is sent anyway, past the
    /// breaker and within the deadline, not waited for: on a master that answers it lands
    /// at once. A list on a master that does not answer cannot be read there either; the
    /// probe deletes it once that master answers, or the watcher once a replica took over.
    /// At most [`PAST_BREAKER`] such drops wait at once; beyond that the probe's are left.
    fn drop_past_the_breaker(&self, list: List, uids: &[u64]) {
        let (shared, uids) = (self.shared.clone(), uids.to_vec());
        if shared.past_breaker.fetch_add(1, Ordering::SeqCst) >= PAST_BREAKER {
            shared.past_breaker.fetch_sub(1, Ordering::SeqCst);
            return;
        }
        let since = shared.health.clock();
        tokio::spawn(async move {
            if shared.bounded("drop lists", shared.drop_lists(list, &uids)).await.is_ok() {
                shared.health.lists_fresh(list, &uids, since);
            }
            shared.past_breaker.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

impl Shared {
    pub(super) fn list_key(&self, list: List, uid: u64) -> String {
        format!("{}:{}:{{{uid}}}", self.prefix, list.tag())
    }

    pub(super) fn version_key(&self, list: List, uid: u64) -> String {
        format!("{}:{}v:{{{uid}}}", self.prefix, list.tag())
    }

    /// Bumps the versions of these users' lists of this kind and drops the lists.
    pub(in crate::cache) async fn drop_lists(&self, list: List, uids: &[u64]) -> RedisResult<()> {
        let hash = self.drop_script.get_hash().to_string();
        let ttl = VERSION_TTL.max(self.friends_ttl).as_millis() as u64;
        let cmds = uids.iter().map(|&u| {
            let mut cmd = redis::cmd("EVALSHA");
            let key = self.list_key(list, u);
            cmd.arg(&hash).arg(2).arg(&key).arg(self.version_key(list, u)).arg(ttl);
            (key, cmd)
        });
        self.per_master(cmds.collect(), LUA_FRIENDS_DROP, true).await
    }
}
