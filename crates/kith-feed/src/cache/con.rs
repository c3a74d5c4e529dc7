//! What the Redis backend talks through: one Redis (the redis crate's reconnecting
//! `ConnectionManager`) or a Redis Cluster (its cluster connection, which follows the slots,
//! handles MOVED and ASK redirections and reconnects); and, for a cluster, the slot map kept
//! here as well ([`Masters`]): which master serves each slot, so that fan-out sends one
//! pipeline per master, and which slots changed master, so that entries a failover may have
//! lost are dropped.
//!
//! Keys are spread by Redis Cluster's rule: the CRC16 (XMODEM) of the key's hash tag (the
//! text between the first `{` and the next `}`, if not empty) or of the whole key, modulo
//! 16384. Every key of one user carries the user's id as its hash tag, so every script
//! touches one slot.

use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{Cmd, Pipeline, RedisFuture, RedisResult, Value};

/// Hash slots of a Redis Cluster.
const SLOTS: u16 = 16384;

/// A connection to one Redis or to a cluster. Cloning shares it.
#[derive(Clone)]
pub(super) enum Con {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Con {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Con::Single(c) => c.req_packed_command(cmd),
            Con::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Con::Single(c) => c.req_packed_commands(cmd, offset, count),
            Con::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Con::Single(c) => c.get_db(),
            Con::Cluster(c) => c.get_db(),
        }
    }
}

/// Where a pipeline goes on a cluster: one node takes commands for any slot it serves.
#[derive(Clone, Debug)]
pub(super) enum At {
    /// The master serving this slot by the connection's own slot map.
    Slot(u16),
    /// The node at this address (a MOVED from it is followed like any other).
    Node(String, u16),
}

impl At {
    fn route(&self) -> SingleNodeRoutingInfo {
        match self {
            At::Slot(slot) => {
                SingleNodeRoutingInfo::SpecificNode(Route::new(*slot, SlotAddr::Master))
            }
            At::Node(host, port) => {
                SingleNodeRoutingInfo::ByAddress { host: host.clone(), port: *port }
            }
        }
    }
}

impl Con {
    /// Sends a pipeline whose commands all live on the node `at` names, or, on one Redis, as
    /// it is; returns every reply.
    pub(super) async fn pipeline_values_to(
        &mut self,
        at: &At,
        pipe: &Pipeline,
    ) -> RedisResult<Vec<Value>> {
        match self {
            Con::Single(c) => pipe.query_async(c).await,
            Con::Cluster(c) => {
                let count = pipe.cmd_iter().count();
                c.route_pipeline(pipe, 0, count, at.route()).await
            }
        }
    }

    /// Sends a command to the node at `host:port` (a cluster's), or to the one Redis.
    pub(super) async fn command_at(
        &mut self,
        node: &(String, u16),
        cmd: &Cmd,
    ) -> RedisResult<Value> {
        match self {
            Con::Single(c) => cmd.query_async(c).await,
            Con::Cluster(c) => {
                let (host, port) = node.clone();
                let route = SingleNodeRoutingInfo::ByAddress { host, port };
                c.route_command(cmd, RoutingInfo::SingleNode(route)).await
            }
        }
    }
}

/// The slot of a key, by Redis Cluster's rule.
pub(super) fn slot(key: &[u8]) -> u16 {
    crc16::State::<crc16::XMODEM>::calculate(hash_tag(key)) % SLOTS
}

/// The part of a key that decides its slot.
fn hash_tag(key: &[u8]) -> &[u8] {
    if let Some(open) = key.iter().position(|&b| b == b'{')
        && let Some(len) = key[open + 1..].iter().position(|&b| b == b'}')
        && len > 0
    {
        return &key[open + 1..open + 1 + len];
    }
    key
}

/// A node's address: host and port.
pub(super) type Node = (String, u16);

/// One master and the slots it serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Master {
    /// The node's id in the cluster.
    pub id: String,
    pub host: String,
    pub port: u16,
    /// Its replicas' addresses (host, port), as listed.
    pub replicas: Vec<Node>,
    /// Its replicas as listed, or, when none is, as the last map that listed some for it
    /// did: `CLUSTER SLOTS` leaves out a replica whose replication offset the answering
    /// node has not seen (as while its master is paused), and reads that fall back to the
    /// replicas need it most then.
    pub seen: Vec<Node>,
}

/// Which master serves each slot, from `CLUSTER SLOTS`.
#[derive(Clone, Debug, Default)]
pub(super) struct Masters {
    /// (first slot, last slot, index into `masters`), sorted.
    ranges: Vec<(u16, u16, usize)>,
    masters: Vec<Master>,
}

impl Masters {
    /// Asks the cluster (any node).
    pub(super) async fn fetch(con: &mut Con) -> RedisResult<Masters> {
        let reply: Value = redis::cmd("CLUSTER").arg("SLOTS").query_async(con).await?;
        Ok(Masters::parse(&reply))
    }

    /// Reads `CLUSTER SLOTS`: per range, the first and last slot, then the master as
    /// (host, port, id), then its replicas. Entries it cannot read are skipped.
    pub(super) fn parse(reply: &Value) -> Masters {
        let mut out = Masters::default();
        let Value::Array(ranges) = reply else { return out };
        for r in ranges {
            let Value::Array(fields) = r else { continue };
            let (Some(Value::Int(lo)), Some(Value::Int(hi)), Some(Value::Array(node))) =
                (fields.first(), fields.get(1), fields.get(2))
            else {
                continue;
            };
            let text = |v: Option<&Value>| match v {
                Some(Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
                Some(Value::SimpleString(s)) => s.clone(),
                _ => String::new(),
            };
            let (host, id) = (text(node.first()), text(node.get(2)));
            let Some(Value::Int(port)) = node.get(1) else { continue };
            let replicas: Vec<Node> = fields[3..]
                .iter()
                .filter_map(|r| match r {
                    Value::Array(r) => match r.get(1) {
                        Some(Value::Int(port)) => Some((text(r.first()), *port as u16)),
                        _ => None,
                    },
                    _ => None,
                })
                .collect();
            let seen = replicas.clone();
            let master = Master { id, host, port: *port as u16, replicas, seen };
            let at = match out.masters.iter().position(|m| m.id == master.id) {
                Some(at) => at,
                None => {
                    out.masters.push(master);
                    out.masters.len() - 1
                }
            };
            out.ranges.push((*lo as u16, *hi as u16, at));
        }
        out.ranges.sort_unstable();
        out
    }

    /// The master serving `slot`, if the map covers it.
    pub(super) fn of(&self, slot: u16) -> Option<&Master> {
        let i = self.ranges.partition_point(|&(lo, _, _)| lo <= slot).checked_sub(1)?;
        let (_, hi, at) = self.ranges[i];
        (slot <= hi).then(|| &self.masters[at])
    }

    /// Where a write to `slot` goes: the id of the master it is grouped under (empty when
    /// this map does not cover the slot), the route, and whether it waits for a replica.
    /// A write to `confirm` goes to the master this map names, by address, and waits when
    /// this map lists a replica for it: the connection's own map may still name a master
    /// that was replaced (paused, then resumed and not yet told), and that master's answer
    /// (no replica to wait for, or a write no replica confirmed) would be taken for the new
    /// master's, while the write is lost when the old master rejoins as a replica.
    pub(super) fn target(&self, slot: u16, confirm: bool) -> (String, At, bool) {
        match self.of(slot) {
            Some(m) if confirm => {
                (m.id.clone(), At::Node(m.host.clone(), m.port), !m.replicas.is_empty())
            }
            Some(m) => (m.id.clone(), At::Slot(slot), false),
            None => (String::new(), At::Slot(slot), false),
        }
    }

    /// Keeps, for each master listing no replica, the replicas `before` had seen for it.
    pub(super) fn seen_since(mut self, before: &Masters) -> Masters {
        for m in self.masters.iter_mut().filter(|m| m.seen.is_empty()) {
            if let Some(old) = before.masters.iter().find(|o| o.id == m.id) {
                m.seen = old.seen.clone();
            }
        }
        self
    }

    /// Every master.
    pub(super) fn all(&self) -> &[Master] {
        &self.masters
    }

    /// Whether the map covers no slot (not a cluster, or not fetched yet).
    pub(super) fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Masters serving a slot that another master served in `before`: a failover (or a
    /// slot moved), so what the old master acknowledged may not be on the new one.
    pub(super) fn taken_over_from(&self, before: &Masters) -> Vec<Master> {
        let mut out: Vec<Master> = Vec::new();
        for &(lo, hi, at) in &self.ranges {
            let now = &self.masters[at];
            let moved = (lo..=hi).any(|s| before.of(s).is_some_and(|m| m.id != now.id));
            if moved && !out.contains(now) {
                out.push(now.clone());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_follow_redis_cluster() {
        // Values from Redis's CLUSTER KEYSLOT.
        assert_eq!(slot(b"foo"), 12182);
        assert_eq!(slot(b"123456789"), 12739);
        assert_eq!(slot(b"kith:t:{42}"), slot(b"42"));
        assert_eq!(slot(b"kith:f:{42}"), slot(b"kith:fv:{42}"));
        assert_eq!(slot(b"a{}b"), slot(b"a{}b"), "an empty tag hashes the whole key");
        assert_ne!(slot(b"a{}b"), slot(b""));
    }

    fn node(host: &str, port: i64, id: &str) -> Value {
        Value::Array(vec![
            Value::BulkString(host.into()),
            Value::Int(port),
            Value::BulkString(id.into()),
        ])
    }

    #[test]
    fn slot_map_and_takeovers() {
        let range = |lo, hi, nodes: Vec<Value>| {
            let mut v = vec![Value::Int(lo), Value::Int(hi)];
            v.extend(nodes);
            Value::Array(v)
        };
        let before = Masters::parse(&Value::Array(vec![
            range(0, 5460, vec![node("127.0.0.1", 6390, "a"), node("127.0.0.4", 6390, "d")]),
            range(5461, 10922, vec![node("127.0.0.2", 6390, "b")]),
            range(10923, 16383, vec![node("127.0.0.3", 6390, "c")]),
        ]));
        assert_eq!(before.of(0).unwrap().id, "a");
        assert_eq!(before.of(0).unwrap().replicas.len(), 1);
        assert_eq!(before.of(5461).unwrap().id, "b");
        assert_eq!(before.of(16383).unwrap().port, 6390);
        // d replaced a.
        let after = Masters::parse(&Value::Array(vec![
            range(0, 5460, vec![node("127.0.0.4", 6390, "d")]),
            range(5461, 10922, vec![node("127.0.0.2", 6390, "b")]),
            range(10923, 16383, vec![node("127.0.0.3", 6390, "c")]),
        ]));
        let taken: Vec<String> = after.taken_over_from(&before).into_iter().map(|m| m.id).collect();
        assert_eq!(taken, vec!["d"]);
        assert!(after.taken_over_from(&after).is_empty());
        assert!(after.taken_over_from(&Masters::default()).is_empty());
        assert!(Masters::default().of(7).is_none());
    }

    #[test]
    fn a_write_to_confirm_goes_to_the_master_of_this_map_by_address() {
        let map = |lo, hi, nodes: Vec<Value>| {
            let mut v = vec![Value::Int(lo), Value::Int(hi)];
            v.extend(nodes);
            Masters::parse(&Value::Array(vec![Value::Array(v)]))
        };
        let with_replica =
            map(0, 16383, vec![node("127.0.0.1", 6390, "a"), node("127.0.0.4", 6390, "d")]);
        let (id, at, wait) = with_replica.target(42, true);
        assert_eq!(id, "a");
        assert!(matches!(at, At::Node(ref h, 6390) if h == "127.0.0.1"), "{at:?}");
        assert!(wait);
        // A promoted master with no replica yet: by address all the same, without a WAIT.
        let promoted = map(0, 16383, vec![node("127.0.0.4", 6390, "d")]);
        let (id, at, wait) = promoted.target(42, true);
        assert_eq!(id, "d");
        assert!(matches!(at, At::Node(ref h, 6390) if h == "127.0.0.4"), "{at:?}");
        assert!(!wait);
        // Writes that need no confirmation follow the connection's map.
        let (id, at, wait) = with_replica.target(42, false);
        assert_eq!(id, "a");
        assert!(matches!(at, At::Slot(42)) && !wait, "{at:?}");
        let (id, at, wait) = Masters::default().target(42, true);
        assert!(id.is_empty() && matches!(at, At::Slot(42)) && !wait, "{at:?}");
    }
}
