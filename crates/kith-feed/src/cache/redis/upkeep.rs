//! The Redis backend's upkeep: the probe, which deletes what a failed write left stale and
//! closes the circuit once Redis takes writes again (running while the circuit is open or
//! any entry is marked stale), and a cluster's watcher, which reads the slot map and drops
//! the entries a failover may have left stale on a new master.

use std::sync::{Arc, PoisonError, Weak};

use redis::{AsyncCommands, RedisError, RedisResult};

use super::nodes::Lane;
use super::{REPAIR_BATCH, Shared, WATCH_INTERVAL, glob_escape, timed_out};
use crate::cache::List;
use crate::cache::con::{Con, Master, slot};
use crate::cache::health::{MAX_STALE, unavailable};

/// The longest a probe failing at the same step goes unreported.
const TELL_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

impl Shared {
    /// Reads a cluster's slot map again; returns the masters that took slots over from
    /// another master since the last read, and adds them to what the watcher owes. Empty
    /// when the map cannot be read now.
    pub(super) async fn refresh(&self) -> Vec<Master> {
        self.read_map().await.unwrap_or_default()
    }

    /// As [`Shared::refresh`], with why the map could not be read. Nothing on one Redis.
    async fn read_map(&self) -> RedisResult<Vec<Master>> {
        let Some(nodes) = &self.nodes else { return Ok(Vec::new()) };
        let now = nodes.slot_map(&self.masters()).await?;
        if now.is_empty() {
            return Ok(Vec::new());
        }
        let mut slot = self.masters.lock().unwrap_or_else(PoisonError::into_inner);
        let taken = now.taken_over_from(&slot);
        *slot = Arc::new(now.seen_since(&slot));
        drop(slot);
        let mut owed = self.owed.lock().unwrap_or_else(PoisonError::into_inner);
        for m in &taken {
            if !owed.contains(m) {
                owed.push(m.clone());
            }
        }
        Ok(taken)
    }

    /// A cluster's watcher, until the backend is dropped: reads the slot map every
    /// [`WATCH_INTERVAL`], and drops every timeline and friend list on a master that took
    /// slots over (retried on the next round until it succeeds).
    pub(super) async fn watch(shared: Weak<Shared>) {
        loop {
            tokio::time::sleep(WATCH_INTERVAL).await;
            let Some(s) = shared.upgrade() else { return };
            s.refresh().await;
            let owed = std::mem::take(&mut *s.owed.lock().unwrap_or_else(PoisonError::into_inner));
            let mut still = Vec::new();
            // A node no longer a master owes nothing: a replica's data follows its master's.
            let masters = s.masters();
            for m in owed.into_iter().filter(|m| masters.all().iter().any(|now| now.id == m.id)) {
                let node = (m.host.clone(), m.port);
                match s.drop_on(Some(&node), &["t", "f", "g"]).await {
                    Ok(n) => eprintln!(
                        "kith feed: redis master {}:{} took slots over; dropped {n} timelines, \
                         friend and followee lists it may hold stale (rebuilt from the store)",
                        m.host, m.port
                    ),
                    Err(e) => {
                        eprintln!(
                            "kith feed: dropping entries on redis master {}:{} after a \
                             failover failed (will retry): {e}",
                            m.host, m.port
                        );
                        still.push(m);
                    }
                }
            }
            s.owed.lock().unwrap_or_else(PoisonError::into_inner).extend(still);
        }
    }

    /// Every [`WATCH_INTERVAL`], until the backend is dropped, PINGs every replica seen
    /// through the connection that reads from replicas, so that its connections are made
    /// before a master's outage needs them (the first reads on a new one timed out while a
    /// master was paused). A task of its own: a ping waiting on a node that went away
    /// must not hold back the watcher's drops after a failover.
    pub(super) async fn keep_replicas(shared: Weak<Shared>) {
        loop {
            tokio::time::sleep(WATCH_INTERVAL).await;
            let Some(s) = shared.upgrade() else { return };
            s.ping_replicas().await;
        }
    }

    async fn ping_replicas(&self) {
        let Some(at) = &self.replica_reads else { return };
        let masters = self.masters();
        let pings = masters.all().iter().flat_map(|m| &m.seen).map(|node| {
            let mut con = at.read().unwrap_or_else(PoisonError::into_inner).clone();
            async move {
                let ping = redis::cmd("PING");
                let _ = self.bounded("replica ping", con.command_at(node, &ping)).await;
            }
        });
        futures_util::future::join_all(pings).await;
    }

    /// Deletes every key of these kinds (`t` timelines, `f` friend lists, `g` followee
    /// lists) under the prefix on one node of a cluster, or on the one Redis, a SCAN page at
    /// a time. Returns how many.
    async fn drop_on(&self, node: Option<&(String, u16)>, kinds: &[&str]) -> RedisResult<usize> {
        let mut dropped = 0;
        for kind in kinds {
            let pattern = format!("{}:{kind}:*", glob_escape(&self.prefix));
            let mut cursor = 0u64;
            loop {
                let mut scan = redis::cmd("SCAN");
                scan.arg(cursor).arg("MATCH").arg(&pattern).arg("COUNT").arg(REPAIR_BATCH);
                let mut con = self.con();
                // A node of a cluster, on kith's connection to it; else the one Redis.
                let on = node.zip(self.nodes.as_ref());
                let reply = match on {
                    Some((node, nodes)) => nodes.command(node, Lane::Plain, &scan).await?,
                    None => self.bounded("SCAN", scan.query_async(&mut con)).await?,
                };
                let (next, keys): (u64, Vec<String>) = redis::from_redis_value(&reply)?;
                if !keys.is_empty() {
                    dropped += keys.len();
                    match on {
                        // One UNLINK per key: a node refuses one over keys of several slots.
                        Some((node, nodes)) => {
                            let mut unlink = redis::pipe();
                            for key in keys {
                                unlink.cmd("UNLINK").arg(key).ignore();
                            }
                            nodes.pipeline(node, Lane::Plain, &unlink).await?;
                        }
                        None => self.bounded("UNLINK", con.unlink::<_, ()>(keys)).await?,
                    }
                }
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        Ok(dropped)
    }

    /// Whether `e`, a call's failure, opens the circuit (logged when it does): Redis is
    /// unavailable, and for a timeout, timeouts have kept coming for
    /// [`Shared::open_after`](super::Shared), none more than the deadline after the last.
    pub(super) fn opens_on(&self, e: &RedisError) -> bool {
        let opens = unavailable(e)
            && (!e.is_timeout() || self.health.timed_out(self.deadline, self.open_after))
            && self.health.trip(e);
        if opens {
            eprintln!(
                "kith feed: redis unavailable ({e}); answering from the store, probing every {} ms",
                self.probe_interval.as_millis()
            );
        }
        opens
    }

    /// Starts the probe unless it runs already.
    pub(super) fn start_probe(self: &Arc<Self>) {
        if self.health.start_probe() {
            tokio::spawn(Shared::probe(Arc::downgrade(self)));
        }
    }

    /// Every probe interval, until the backend is dropped or nothing is left to do: repairs,
    /// and closes the circuit once Redis takes a write (on a cluster, once every master of
    /// a fresh slot map answers, past a replacement of the cluster connections); goes on
    /// while entries marked stale are left.
    pub(super) async fn probe(shared: Weak<Shared>) {
        let started = std::time::Instant::now();
        let mut told: Option<(std::time::Instant, &str)> = None;
        loop {
            let interval = match shared.upgrade() {
                Some(s) => s.probe_interval,
                None => return,
            };
            tokio::time::sleep(interval).await;
            let Some(s) = shared.upgrade() else { return };
            let trips = s.health.trips();
            let mut step = "probe";
            let got = s.recover(&mut step).await;
            if got.is_ok()
                && s.health.check().is_err()
                && let Err(e) = s.replace_connections().await
            {
                // Closed all the same: the old connections' calls are bounded, and timeouts
                // that keep coming open the circuit again, whose probe tries anew.
                eprintln!("kith feed: kept the old redis cluster connections: {e}");
            }
            match got {
                Ok(()) => {
                    if s.health.close(trips) {
                        eprintln!(
                            "kith feed: redis is serving again ({:.1} s after the probe started)",
                            started.elapsed().as_secs_f64()
                        );
                    }
                    if s.health.probe_done() {
                        return;
                    }
                }
                Err(e) => {
                    // Said when the failing step changes, and at most every few seconds.
                    if told.is_none_or(|(at, was)| was != step || at.elapsed() >= TELL_EVERY) {
                        eprintln!("kith feed: redis probe failed at {step}: {e}");
                        told = Some((std::time::Instant::now(), step));
                    }
                    // A probe that fails while the circuit is closed (repairing) counts as
                    // a call that failed.
                    s.opens_on(&e);
                    s.health.still_failing(&e);
                }
            }
        }
    }

    /// New cluster connections in place of all three, before the circuit closes: a cluster
    /// connection that asked a node while it was down may go on waiting on its slot-map
    /// refresh (`nodes.rs`), and a new one reads the map as it is now. They are made from
    /// the masters of the slot map the probe has just read, all three at once. Nothing to
    /// do on one Redis (its connection manager reconnects by itself).
    async fn replace_connections(&self) -> RedisResult<()> {
        let Some(nodes) = &self.nodes else { return Ok(()) };
        let masters = self.masters();
        let (client, replicas) =
            (nodes.cluster_client(&masters, false)?, nodes.cluster_client(&masters, true)?);
        let made = async {
            tokio::try_join!(client.get_async_connection(), client.get_async_connection(), async {
                match &self.replica_reads {
                    Some(_) => replicas.get_async_connection().await.map(Some),
                    None => Ok(None),
                }
            },)
        };
        let (con, waiting, replicas) = tokio::time::timeout(self.deadline * 2, made)
            .await
            .unwrap_or_else(|_| Err(timed_out("new cluster connections", self.deadline * 2)))?;
        *self.con.write().unwrap_or_else(PoisonError::into_inner) = Con::Cluster(con);
        *self.waiting.write().unwrap_or_else(PoisonError::into_inner) = Con::Cluster(waiting);
        if let (Some(at), Some(replicas)) = (&self.replica_reads, replicas) {
            *at.write().unwrap_or_else(PoisonError::into_inner) = Con::Cluster(replicas);
        }
        Ok(())
    }

    /// A write (so a Redis that answers but refuses writes stays unavailable), then the
    /// repairs: stale friend and followee lists and timelines deleted, and every timeline
    /// dropped if too many missed pushes to remember.
    async fn recover(&self, step: &mut &'static str) -> RedisResult<()> {
        let key = format!("{}:probe", self.prefix);
        let mut probe = redis::cmd("SET");
        probe.arg(&key).arg(1).arg("PX").arg(60_000);
        let mut con = self.con();
        // On a cluster, the probe key's master by a fresh slot map.
        let probed = match &self.nodes {
            Some(nodes) => {
                *step = "reading the slot map";
                self.read_map().await?;
                let masters = self.masters();
                *step = "probe";
                let Some(m) = masters.of(slot(key.as_bytes())) else {
                    return Err(not_served("the slot map does not cover the probe's key"));
                };
                let node = (m.host.clone(), m.port);
                nodes.command(&node, Lane::Plain, &probe).await?;
                *step = "pinging every master";
                nodes.ping_masters(&masters).await?;
                Some((nodes, node))
            }
            None => {
                let first = self.bounded("probe", probe.query_async::<()>(&mut con)).await;
                if let Err(e) = first {
                    // The first call after a restart finds the old connection dropped and
                    // starts a new one; the second waits for it.
                    if !e.is_io_error() {
                        return Err(e);
                    }
                    self.bounded("probe", probe.query_async::<()>(&mut con)).await?;
                }
                None
            }
        };
        // Only the marks made before this pass: later ones are left to the next pass, so
        // the pass ends however often entries are marked again meanwhile.
        let upto = self.health.clock();
        let mut first_error = None;
        *step = "dropping stale lists";
        for list in List::ALL {
            for _ in 0..=MAX_STALE / REPAIR_BATCH {
                let uids = self.health.some_stale_lists(list, REPAIR_BATCH, upto);
                if uids.is_empty() {
                    break;
                }
                let since = self.health.clock();
                match self.bounded("drop lists", self.drop_lists(list, &uids)).await {
                    Ok(()) => self.health.lists_fresh(list, &uids, since),
                    // A list drop waits for a replica; a missing one must not keep the
                    // timelines from being repaired.
                    Err(e) => {
                        first_error.get_or_insert(e);
                        break;
                    }
                }
            }
        }
        *step = "dropping stale timelines";
        for _ in 0..=MAX_STALE / REPAIR_BATCH {
            let uids = self.health.some_stale_timelines(REPAIR_BATCH, upto);
            if uids.is_empty() {
                break;
            }
            let since = self.health.clock();
            self.bounded("drop timelines", self.drop_timelines_of(&uids)).await?;
            self.health.timelines_fresh(&uids, since);
        }
        if let Some(e) = first_error {
            *step = "dropping stale lists";
            return Err(e);
        }
        *step = "CLUSTER INFO";
        if let Some((nodes, node)) = &probed {
            // Every slot served, as the cluster sees itself (asked of the probe key's master).
            let mut info = redis::cmd("CLUSTER");
            info.arg("INFO");
            let info = nodes.command(node, Lane::Plain, &info).await?;
            let info: String = redis::from_redis_value(&info)?;
            if !info.contains("cluster_state:ok") {
                return Err(not_served("some slots have no reachable master"));
            }
        }
        if let Some(loss) = self.health.all_timelines_lost() {
            *step = "dropping every timeline";
            self.drop_timelines().await?;
            self.health.timelines_dropped(loss);
        }
        Ok(())
    }

    /// Deletes these users' timelines: a timeline that missed a push (or a follow's
    /// backfill) here is otherwise served by every other server sharing the cache.
    async fn drop_timelines_of(&self, uids: &[u64]) -> RedisResult<()> {
        let cmds = uids.iter().map(|&u| {
            let key = self.timeline_key(u);
            let mut cmd = redis::cmd("UNLINK");
            cmd.arg(&key);
            (key, cmd)
        });
        self.per_master(cmds.collect(), "", false).await
    }

    /// Deletes every timeline under the prefix: on each master of a cluster, or on the
    /// one Redis.
    async fn drop_timelines(&self) -> RedisResult<()> {
        let masters = self.masters();
        if masters.is_empty() {
            return self.drop_on(None, &["t"]).await.map(drop);
        }
        for m in masters.all() {
            self.drop_on(Some(&(m.host.clone(), m.port)), &["t"]).await?;
        }
        Ok(())
    }
}

/// The cluster does not serve every slot.
fn not_served(why: &str) -> RedisError {
    RedisError::from((redis::ErrorKind::ClusterDown, "cluster not ok", why.to_string()))
}
