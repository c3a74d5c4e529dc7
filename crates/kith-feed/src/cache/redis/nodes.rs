//! Connections of kith's own to each node of a Redis Cluster, by address, for the calls
//! whose node kith chooses from its slot map: the slot map's reading itself, fan-out
//! pipelines (one per master), the probe's writes and pings, and the repairs.
//!
//! The `redis` crate's cluster connection refreshes its slot map while holding a lock that
//! every call waits for, asking the nodes it knows one after another: while a killed
//! master is down, calls to healthy masters waited behind it (in trials, the probes of a
//! server timed out for as long as the node stayed down; upstream issue redis-rs #2092).
//! A node's connection here depends on that node alone: one that does not answer costs
//! only the calls sent to it, each within the timeouts.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::future::select_ok;
use redis::aio::MultiplexedConnection;
use redis::cluster::{ClusterClient, ClusterClientBuilder};
use redis::{
    AsyncConnectionConfig, Cmd, ConnectionAddr, ConnectionInfo, IntoConnectionInfo, Pipeline,
    RedisConnectionInfo, RedisError, RedisResult, Value,
};

use crate::cache::con::{Masters, Node};

/// Which of a node's two connections a call takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Lane {
    Plain,
    /// For pipelines that end with a `WAIT` (which holds the connection until a replica
    /// confirms), so that nothing else waits behind them.
    Waiting,
}

/// Per-node connections, made when first needed (by one caller at a time per node and
/// lane) and dropped after a call on them failed on the network or timed out (the next
/// call makes a new one).
pub(super) struct Nodes {
    /// The addresses the backend was given, asked for the slot map when no known node
    /// answers.
    seeds: Vec<Node>,
    /// The settings of the first address (credentials, database), used for every node.
    redis: RedisConnectionInfo,
    connect: Duration,
    response: Duration,
    config: AsyncConnectionConfig,
    deadline: Duration,
    lanes: Mutex<HashMap<(Node, Lane), Arc<Lock>>>,
    /// Numbers the connections made, so that a failed call forgets only the one it used.
    made: AtomicU64,
    /// The node whose slot map was read last, asked first next time.
    last: Mutex<Option<Node>>,
}

/// One node's connection on one lane, with its number; locked while it is being made.
type Lock = tokio::sync::Mutex<Option<(u64, MultiplexedConnection)>>;

impl Nodes {
    pub(super) fn new(
        urls: &[String],
        connect: Duration,
        response: Duration,
    ) -> RedisResult<Nodes> {
        let mut seeds = Vec::new();
        let mut redis = None;
        for url in urls {
            let info = url.as_str().into_connection_info()?;
            if let ConnectionAddr::Tcp(host, port) = &info.addr {
                seeds.push((host.clone(), *port));
            }
            redis.get_or_insert(info.redis);
        }
        Ok(Nodes {
            seeds,
            redis: redis.unwrap_or_default(),
            connect,
            response,
            config: AsyncConnectionConfig::new()
                .set_connection_timeout(connect)
                .set_response_timeout(response),
            deadline: connect + response,
            lanes: Mutex::new(HashMap::new()),
            made: AtomicU64::new(0),
            last: Mutex::new(None),
        })
    }

    fn info(&self, node: &Node) -> ConnectionInfo {
        ConnectionInfo {
            addr: ConnectionAddr::Tcp(node.0.clone(), node.1),
            redis: self.redis.clone(),
        }
    }

    fn lock(&self, node: &Node, lane: Lane) -> Arc<Lock> {
        let mut lanes = self.lanes.lock().unwrap_or_else(PoisonError::into_inner);
        lanes.entry((node.clone(), lane)).or_default().clone()
    }

    async fn con(&self, node: &Node, lane: Lane) -> RedisResult<(u64, MultiplexedConnection)> {
        let lock = self.lock(node, lane);
        let mut slot = lock.lock().await;
        if let Some(made) = &*slot {
            return Ok(made.clone());
        }
        let client = redis::Client::open(self.info(node))?;
        let made = client.get_multiplexed_async_connection_with_config(&self.config);
        let made = tokio::time::timeout(self.deadline, made).await.unwrap_or_else(|_| {
            Err(timed_out(&format!("connecting to {}:{}", node.0, node.1), self.deadline))
        })?;
        let made = (self.made.fetch_add(1, Ordering::Relaxed), made);
        *slot = Some(made.clone());
        Ok(made)
    }

    /// Forgets the connection `used` a call failed on, unless the node answered (an error
    /// reply) or another connection replaced it meanwhile.
    fn after<T>(
        &self,
        node: &Node,
        lane: Lane,
        used: Option<u64>,
        got: RedisResult<T>,
    ) -> RedisResult<T> {
        if let (Err(e), Some(used)) = (&got, used)
            && (e.is_io_error() || e.is_timeout() || e.is_connection_dropped())
            && let Ok(mut slot) = self.lock(node, lane).try_lock()
            && slot.as_ref().is_some_and(|(n, _)| *n == used)
        {
            *slot = None;
        }
        got
    }

    /// A cluster client whose first nodes are the masters of `map` (the probe has just
    /// heard from each): the `redis` crate makes a new cluster connection only once every
    /// first node has answered or timed out, so a paused node among them would hold it.
    pub(super) fn cluster_client(
        &self,
        map: &Masters,
        from_replicas: bool,
    ) -> RedisResult<ClusterClient> {
        let first = map.all().iter().map(|m| self.info(&(m.host.clone(), m.port)));
        cluster_client(first, self.connect, self.response, from_replicas)
    }

    /// One command to the node at `node`, within the deadline; an error reply is an error.
    pub(super) async fn command(&self, node: &Node, lane: Lane, cmd: &Cmd) -> RedisResult<Value> {
        self.on(node, lane, |mut con| async move { cmd.query_async(&mut con).await }).await
    }

    /// A pipeline to the node at `node`, within the deadline: every reply not ignored, or
    /// the first error reply.
    pub(super) async fn pipeline(
        &self,
        node: &Node,
        lane: Lane,
        pipe: &Pipeline,
    ) -> RedisResult<Vec<Value>> {
        self.on(node, lane, |mut con| async move { pipe.query_async(&mut con).await }).await
    }

    /// Runs `call` on the node's connection of `lane`, within the deadline, and forgets the
    /// connection if the call failed on it (`Nodes::after`).
    async fn on<T, F: Future<Output = RedisResult<T>>>(
        &self,
        node: &Node,
        lane: Lane,
        call: impl FnOnce(MultiplexedConnection) -> F,
    ) -> RedisResult<T> {
        let mut used = None;
        let run = async {
            let (n, con) = self.con(node, lane).await?;
            used = Some(n);
            call(con).await
        };
        let got = self.bounded(node, run).await;
        self.after(node, lane, used, got)
    }

    async fn bounded<T>(
        &self,
        node: &Node,
        call: impl Future<Output = RedisResult<T>>,
    ) -> RedisResult<T> {
        tokio::time::timeout(self.deadline, call).await.unwrap_or_else(|_| {
            Err(timed_out(&format!("a call to {}:{}", node.0, node.1), self.deadline))
        })
    }

    /// The cluster's slot map (`CLUSTER SLOTS`): from the node that gave it last; when that
    /// one fails or has none, from whichever of the other nodes `known` lists (masters and
    /// replicas) or the backend was given answers first with a map that covers a slot.
    pub(super) async fn slot_map(&self, known: &Masters) -> RedisResult<Masters> {
        let mut slots = redis::cmd("CLUSTER");
        slots.arg("SLOTS");
        let ask = |node: Node| {
            let slots = &slots;
            Box::pin(async move {
                let map = Masters::parse(&self.command(&node, Lane::Plain, slots).await?);
                if map.is_empty() {
                    return Err(redis::RedisError::from((
                        redis::ErrorKind::ClusterDown,
                        "no slot map",
                        format!("{}:{} serves no slot", node.0, node.1),
                    )));
                }
                *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(node);
                Ok(map)
            })
        };
        let last = self.last.lock().unwrap_or_else(PoisonError::into_inner).clone();
        if let Some(node) = &last
            && let Ok(map) = ask(node.clone()).await
        {
            return Ok(map);
        }
        let mut others: Vec<Node> = Vec::new();
        let all = known
            .all()
            .iter()
            .flat_map(|m| std::iter::once((m.host.clone(), m.port)).chain(m.seen.iter().cloned()));
        for node in all.chain(self.seeds.iter().cloned()) {
            if Some(&node) != last.as_ref() && !others.contains(&node) {
                others.push(node);
            }
        }
        if others.is_empty() {
            return Err(redis::RedisError::from((
                redis::ErrorKind::ClusterDown,
                "no node to ask for the slot map",
            )));
        }
        Ok(select_ok(others.into_iter().map(ask)).await?.0)
    }

    /// PINGs every master of `map` at once; the first failure, if any.
    pub(super) async fn ping_masters(&self, map: &Masters) -> RedisResult<()> {
        let ping = redis::cmd("PING");
        let pings = map.all().iter().map(|m| {
            let node = (m.host.clone(), m.port);
            let ping = &ping;
            async move { self.command(&node, Lane::Plain, ping).await.map(drop) }
        });
        futures_util::future::try_join_all(pings).await.map(drop)
    }
}

/// A call that took longer than the deadline.
pub(super) fn timed_out(what: &str, deadline: Duration) -> RedisError {
    let msg = format!("{what} timed out after {} ms", deadline.as_millis());
    RedisError::from(std::io::Error::new(std::io::ErrorKind::TimedOut, msg))
}

/// A cluster's client: redirections (MOVED, ASK) need retries; two, quickly, keep a call
/// within its deadline. One that reads from replicas sends `READONLY` on every connection.
pub(super) fn cluster_client<T: IntoConnectionInfo>(
    first: impl IntoIterator<Item = T>,
    connect: Duration,
    response: Duration,
    from_replicas: bool,
) -> RedisResult<ClusterClient> {
    let builder = ClusterClientBuilder::new(first)
        .connection_timeout(connect)
        .response_timeout(response)
        .retries(2)
        .min_retry_wait(10)
        .max_retry_wait(100);
    if from_replicas { builder.read_from_replicas() } else { builder }.build()
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::redis_cluster::{LocalRedisCluster, RedisClusterConfig};

    /// The node that gave the slot map last is asked first; once it is gone, another
    /// answers, within the timeouts rather than after asking the nodes one by one.
    #[tokio::test]
    async fn the_slot_map_comes_from_another_node_once_the_last_one_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::net::Ipv4Addr::new(127, 0, 9, 1);
        let mut cluster = LocalRedisCluster::up(&RedisClusterConfig {
            replicas: 0,
            dir: dir.path().to_path_buf(),
            base,
            port: crate::testing::free_port_on(base, 3).unwrap(),
            ..RedisClusterConfig::default()
        })
        .unwrap();
        struct Down(LocalRedisCluster);
        impl Drop for Down {
            fn drop(&mut self) {
                let _ = self.0.clone().down(Duration::ZERO);
            }
        }
        let _down = Down(cluster.clone());
        let urls: Vec<String> = cluster.urls().split(',').map(str::to_string).collect();
        let (connect, response) = (Duration::from_secs(1), Duration::from_millis(250));
        let nodes = Nodes::new(&urls, connect, response).unwrap();

        let map = nodes.slot_map(&Masters::default()).await.unwrap();
        assert_eq!(map.all().len(), 3, "{map:?}");
        let first = nodes.last.lock().unwrap().clone().expect("a node answered");
        let victim = cluster
            .nodes
            .iter()
            .find(|n| (n.address.to_string(), n.port) == first)
            .map(|n| n.index)
            .unwrap();
        cluster.kill(victim).unwrap();

        let t = Instant::now();
        let again = nodes.slot_map(&map).await.unwrap();
        assert!(t.elapsed() < (connect + response) * 2, "{:?}", t.elapsed());
        assert_eq!(again.all().len(), 3, "the others still list every master: {again:?}");
        let now = nodes.last.lock().unwrap().clone().unwrap();
        assert_ne!(now, first);
        // A master gone (no replica to take over): the probe's ping of every master fails.
        assert!(nodes.ping_masters(&again).await.is_err());
    }
}
