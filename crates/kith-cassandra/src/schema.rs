//! The keyspace and its tables, connecting to a cluster, and waiting for nodes to know each
//! other. The design note is `docs/cassandra.md`.
//!
//! Users live in three tables per layout generation `N`:
//!
//! - `index_gN (uid) → pos, data_bytes, friends map<uid, pos>, copied_to set<part>`: where a
//!   user is and whom it befriends, with each friend's position, so "list all friends" needs
//!   no lookup per friend, and the partitions holding a copy of its profile;
//! - `users_gN ((part), pos) → uid, profile`: profiles, partitioned by runs of
//!   `partition_users` consecutive layout positions (`part = pos / partition_users`) and
//!   clustered by position, so a run of friends in the layout is one slice of one partition;
//!   `partition_users = 1` is one partition per user, what a Cassandra user writes by default;
//!   a partition also holds copies of its users' lone friends' profiles at the friends' own
//!   positions (outside its run), see [`crate::store::copies`];
//! - `data_gN ((part), pos, chunk) → bytes`: data blocks, placed like the profiles.
//!
//! The rest does not depend on the layout: the store's row (`store`: format and the current
//! generation, switched by a lightweight transaction), each generation's placement and
//! position allocator (`generations`), follows in both directions, posts by time bucket with
//! an author index, and the feed's bookkeeping (watermark, pending re-pushes, idempotency
//! records with a TTL).

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::policies::host_filter::AllowListHostFilter;
use scylla::policies::load_balancing::{NodeIdentifier, SingleTargetLoadBalancingPolicy};
use scylla::statement::unprepared::Statement;
use scylla::statement::{Consistency, SerialConsistency};

use crate::error::{Error, Result};

/// The keyspace `kith cluster up` creates and the store uses unless told otherwise.
pub const DEFAULT_KEYSPACE: &str = "kith";

/// The store's format on Cassandra; a newer one is refused.
/// Format 2 added friend copies (`generations.friend_copies`, `index_gN.copied_to`);
/// format 3 server numbers (`servers`) and follow counters (`follow_counts`), for several
/// servers on one store; format 4 a write clock on each index row (`index_gN.clock`, see
/// `CassandraStore::stamp_after`); format 5 follow edges switched on and off
/// (`follows.active`), with the intents of edits under way (`follow_intents`) and counts
/// counted from the lists (no more `follow_counts`); format 6 the intents by time
/// (`follow_intents_at`, `follow_intent_log`, replacing `follow_intents`, whose every read
/// went through every deleted intent); format 7 the edit that last switched each edge
/// (`follows.edit`), which the next switch names in its condition.
pub(crate) const FORMAT: i32 = 7;

/// How long one request may take before the driver gives up on it (the nodes' own timeouts,
/// 2 s for writes and 5 s for reads, come first).
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// Checks a keyspace name: CQL identifiers are letters, digits and underscores, at most 48.
pub fn check_keyspace(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 48
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if ok {
        Ok(())
    } else {
        Err(Error::Cluster(format!(
            "keyspace {name:?}: use 1 to 48 letters, digits and underscores, not starting with a digit"
        )))
    }
}

/// Parses `HOST[:PORT],HOST[:PORT],…` (port 9042 by default).
pub fn parse_hosts(hosts: &str) -> Result<Vec<String>> {
    let list: Vec<String> = hosts
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(|h| {
            if h.parse::<SocketAddr>().is_ok() || (h.contains(':') && !h.contains("::")) {
                h.to_string()
            } else {
                format!("{h}:{}", crate::local::CQL_PORT)
            }
        })
        .collect();
    if list.is_empty() {
        return Err(Error::Cluster(format!("--cassandra {hosts:?}: name at least one host")));
    }
    Ok(list)
}

/// How a store's requests reach the cluster.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Level {
    /// QUORUM reads and writes: a read sees every acknowledged write (replication factor 3).
    #[default]
    Quorum,
    /// ONE, and only the hosts named (others are never contacted): what one replica alone
    /// holds, as the fault trials read it with the other replicas down.
    OneNamedHostsOnly,
}

/// An idempotent request (a read, or a write that sets values) with no answer after this is
/// sent to another node too, up to [`SPECULATIVE_TRIES`] more times: a paused or cut-off
/// coordinator does not hold it until the request timeout.
const SPECULATIVE_AFTER: Duration = Duration::from_millis(250);
const SPECULATIVE_TRIES: usize = 2;
/// An idempotent lightweight transaction (`store/statements.rs`) is sent to a second node
/// once, later: two Paxos rounds on one partition at once contend, and each may have to
/// start over, so it waits for a round well past its usual time under load.
pub(crate) const LWT_SPECULATIVE_AFTER: Duration = Duration::from_millis(500);
/// Connections to a node that answers no keepalive within [`KEEPALIVE_WITHIN`] are closed, so
/// requests stop going to a paused or cut-off node within seconds (the driver's defaults:
/// every 30 s, closed after 30 s).
const KEEPALIVE_EVERY: Duration = Duration::from_secs(1);
const KEEPALIVE_WITHIN: Duration = Duration::from_secs(1);

/// The driver's default routing (replicas of the partition first), leaving out for a while a
/// node whose answers take [`SLOW_NODE_FACTOR`] times the fastest node's: a node cut off from
/// the others but not from kith answers every request it coordinates only after its timeout
/// (2 s for writes, 5 s for reads), and keepalives do not catch it, as it answers those.
/// Wrapped in [`Overtaken`](crate::overtaken::Overtaken), which puts last a node whose
/// requests keep going on to another node: the slow answers latency awareness would need are
/// mostly cancelled by speculative attempts.
fn balancing() -> std::sync::Arc<dyn scylla::policies::load_balancing::LoadBalancingPolicy> {
    use scylla::policies::load_balancing::{DefaultPolicy, LatencyAwarenessBuilder};
    let driver = DefaultPolicy::builder()
        .token_aware(true)
        .latency_awareness(
            LatencyAwarenessBuilder::new()
                .exclusion_threshold(SLOW_NODE_FACTOR)
                .retry_period(SLOW_NODE_LEFT_OUT)
                .minimum_measurements(SLOW_NODE_MEASURED),
        )
        .build();
    std::sync::Arc::new(crate::overtaken::Overtaken::new(driver))
}

/// How much slower than the fastest node a node's average answer must be to be left out,
/// and for how long after its last slow answer (then tried again). Trying a cut-off node
/// again sends it requests until their answers time out (2 s), and holds every client on
/// it meanwhile: after 5 s, a cut of 10 s became three such stalls. A node left out still
/// takes requests the others fail, and is a replica as before.
const SLOW_NODE_FACTOR: f64 = 3.0;
const SLOW_NODE_LEFT_OUT: Duration = Duration::from_secs(20);
/// Answers a node's average needs before it counts. Few of a cut-off node's slow answers
/// are measured (a read or write sent to another node after 250 ms cancels the first
/// attempt when the other answers), but counting after 4 instead made `partition-cassandra`
/// runs slower (`bench/results/trial-partition-measured-4-2026-11-30.json`).
const SLOW_NODE_MEASURED: usize = 20;

/// A session to the cluster: QUORUM by default, SERIAL for lightweight transactions, and a
/// client-side timeout on every request.
pub(crate) async fn connect(hosts: &[String]) -> Result<Session> {
    connect_at(hosts, Level::Quorum).await
}

/// A session at `level`.
pub(crate) async fn connect_at(hosts: &[String], level: Level) -> Result<Session> {
    let consistency = match level {
        Level::Quorum => Consistency::Quorum,
        Level::OneNamedHostsOnly => Consistency::One,
    };
    let profile = ExecutionProfile::builder()
        .consistency(consistency)
        .retry_policy(std::sync::Arc::new(crate::retries::Retries))
        .serial_consistency(Some(SerialConsistency::Serial))
        .request_timeout(Some(REQUEST_TIMEOUT))
        .load_balancing_policy(balancing())
        .speculative_execution_policy(Some(std::sync::Arc::new(
            scylla::policies::speculative_execution::SimpleSpeculativeExecutionPolicy {
                max_retry_count: SPECULATIVE_TRIES,
                retry_interval: SPECULATIVE_AFTER,
            },
        )))
        .build();
    let mut builder = SessionBuilder::new()
        .known_nodes(hosts)
        .connection_timeout(Duration::from_secs(5))
        .keepalive_interval(KEEPALIVE_EVERY)
        .keepalive_timeout(KEEPALIVE_WITHIN)
        .default_execution_profile_handle(profile.into_handle());
    if level == Level::OneNamedHostsOnly {
        let only = AllowListHostFilter::new(hosts.iter().map(String::as_str))
            .map_err(|e| Error::Cluster(format!("resolving {}: {e}", hosts.join(","))))?;
        builder = builder.host_filter(std::sync::Arc::new(only));
    }
    builder
        .build()
        .await
        .map_err(|e| Error::Cluster(format!("connecting to Cassandra at {}: {e}", hosts.join(","))))
}

/// Refuses a store of an older format (its tables lack columns this kith reads) with what to
/// do; a keyspace with no store passes (opening it then says so).
pub(crate) async fn check_format(session: &Session, keyspace: &str) -> Result<()> {
    let cql = format!("SELECT format FROM {keyspace}.store WHERE id = 0");
    let Ok(rows) = session.query_unpaged(cql, ()).await else { return Ok(()) };
    let format = rows
        .into_rows_result()
        .ok()
        .and_then(|r| r.maybe_first_row::<(Option<i32>,)>().ok().flatten())
        .and_then(|r| r.0);
    match format {
        Some(f) if f < FORMAT => Err(Error::Cluster(format!(
            "keyspace {keyspace} holds a kith store of format {f}, older than this kith's (format {FORMAT}: friend copies, server numbers, write clocks, follow edges switched by lightweight transactions, follow intents by time, each edge's last edit); rebuild it with `kith store build --cassandra`"
        ))),
        _ => Ok(()),
    }
}

/// A current-thread runtime for the few async calls made outside a store.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::io("starting a tokio runtime"))
}

/// Creates the keyspace (if missing) with SimpleStrategy and this replication factor.
pub fn create_keyspace(hosts: &[String], keyspace: &str, replication: usize) -> Result<()> {
    check_keyspace(keyspace)?;
    runtime()?.block_on(async {
        let session = connect(hosts).await?;
        ddl(&session, &keyspace_cql(keyspace, replication)).await
    })
}

fn keyspace_cql(keyspace: &str, replication: usize) -> String {
    format!(
        "CREATE KEYSPACE IF NOT EXISTS {keyspace} WITH replication = \
         {{'class': 'SimpleStrategy', 'replication_factor': {replication}}} AND durable_writes = true"
    )
}

/// Runs one schema statement; the driver waits for schema agreement after it.
pub(crate) async fn ddl(session: &Session, cql: &str) -> Result<()> {
    let mut statement = Statement::new(cql);
    statement.set_request_timeout(Some(Duration::from_secs(60)));
    session.query_unpaged(statement, ()).await.map_err(|e| {
        Error::Cluster(format!(
            "{}: {e}",
            cql.split_whitespace().take(6).collect::<Vec<_>>().join(" ")
        ))
    })?;
    Ok(())
}

/// Table options: a read waiting on a replica that died before the failure detector noticed
/// (4 to 5 s) is sent to another replica after 10 ms instead of timing out. At 50 ms, every
/// read of those seconds waited 50 ms, and the service ran at a third of its throughput.
const TABLE_OPTIONS: &str = "speculative_retry = '10ms'";

fn with_options(cql: String) -> String {
    if cql.contains(" WITH ") {
        format!("{cql} AND {TABLE_OPTIONS}")
    } else {
        format!("{cql} WITH {TABLE_OPTIONS}")
    }
}

/// The tables every store has, whatever its layout.
pub(crate) fn fixed_tables(ks: &str) -> Vec<String> {
    fixed_tables_plain(ks).into_iter().map(with_options).collect()
}

fn fixed_tables_plain(ks: &str) -> Vec<String> {
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {ks}.store (id int PRIMARY KEY, format int, generation int)"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {ks}.generations (generation int PRIMARY KEY, \
             partition_users bigint, friend_copies int, layout text, next_pos bigint, created_ms bigint)"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {ks}.follows (uid bigint, target bigint, active boolean, \
             edit bigint, PRIMARY KEY (uid, target))"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {ks}.followers (uid bigint, follower bigint, PRIMARY KEY (uid, follower))"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {ks}.posts (bucket bigint, id bigint, post blob, PRIMARY KEY (bucket, id))"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {ks}.post_buckets (shard int, bucket bigint, PRIMARY KEY (shard, bucket))"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {ks}.author_posts (author bigint, id bigint, PRIMARY KEY (author, id)) \
             WITH CLUSTERING ORDER BY (id DESC)"
        ),
        format!("CREATE TABLE IF NOT EXISTS {ks}.feed_state (name text PRIMARY KEY, value bigint)"),
        format!("CREATE TABLE IF NOT EXISTS {ks}.servers (n int PRIMARY KEY, owner text)"),
        format!(
            "CREATE TABLE IF NOT EXISTS {ks}.follow_intents_at (target bigint, at_ms bigint, uid bigint, \
             nonce bigint, PRIMARY KEY (target, at_ms, uid, nonce)) \
             WITH CLUSTERING ORDER BY (at_ms DESC) AND gc_grace_seconds = 3600"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {ks}.follow_intent_log (bucket bigint, shard int, target bigint, \
             uid bigint, nonce bigint, at_ms bigint, PRIMARY KEY ((bucket, shard), target, uid, nonce)) \
             WITH gc_grace_seconds = 3600 AND default_time_to_live = 86400"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {ks}.repushes (author bigint PRIMARY KEY, ticket bigint)"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {ks}.idempotency (key text PRIMARY KEY, fingerprint bigint, \
             expires_ms bigint, result blob)"
        ),
    ]
}

/// The tables of layout generation `generation`.
pub(crate) fn generation_tables(ks: &str, generation: u32) -> Vec<String> {
    generation_tables_plain(ks, generation).into_iter().map(with_options).collect()
}

fn generation_tables_plain(ks: &str, generation: u32) -> Vec<String> {
    vec![
        format!(
            "CREATE TABLE IF NOT EXISTS {ks}.index_g{generation} (uid bigint PRIMARY KEY, pos bigint, \
             data_bytes bigint, friends map<bigint, bigint>, copied_to set<bigint>, clock int)"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {ks}.users_g{generation} (part bigint, pos bigint, uid bigint, \
             profile blob, PRIMARY KEY (part, pos))"
        ),
        format!(
            "CREATE TABLE IF NOT EXISTS {ks}.data_g{generation} (part bigint, pos bigint, chunk int, \
             bytes blob, PRIMARY KEY (part, pos, chunk))"
        ),
    ]
}

/// Drops the tables of a generation no longer in use.
pub(crate) fn drop_generation(ks: &str, generation: u32) -> Vec<String> {
    ["index", "users", "data"]
        .iter()
        .map(|t| format!("DROP TABLE IF EXISTS {ks}.{t}_g{generation}"))
        .collect()
}

/// Waits until each node in `targets` lists every other node of `live` among its peers.
pub(crate) fn wait_peers(targets: &[Ipv4Addr], live: &[Ipv4Addr], deadline: Instant) -> Result<()> {
    let hosts: Vec<String> =
        live.iter().map(|a| format!("{a}:{}", crate::local::CQL_PORT)).collect();
    runtime()?.block_on(async {
        let session = loop {
            match connect(&hosts).await {
                Ok(s) => break s,
                Err(e) if Instant::now() > deadline => return Err(e),
                Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
            }
        };
        for &target in targets {
            loop {
                let peers = peers_of(&session, target).await.unwrap_or_default();
                let missing: Vec<&Ipv4Addr> =
                    live.iter().filter(|&&a| a != target && !peers.contains(&a)).collect();
                if missing.is_empty() {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(Error::Cluster(format!(
                        "node {target} does not know {missing:?} yet; the nodes' logs say why"
                    )));
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
        Ok(())
    })
}

/// The peers node `target` knows (its `system.peers_v2`).
async fn peers_of(session: &Session, target: Ipv4Addr) -> Result<Vec<Ipv4Addr>> {
    let mut statement = Statement::new("SELECT peer FROM system.peers_v2");
    statement.set_load_balancing_policy(Some(SingleTargetLoadBalancingPolicy::new(
        NodeIdentifier::NodeAddress(SocketAddr::from((target, crate::local::CQL_PORT))),
        None,
    )));
    statement.set_consistency(Consistency::One);
    let rows = session
        .query_unpaged(statement, ())
        .await
        .map_err(|e| Error::Cluster(e.to_string()))?
        .into_rows_result()
        .map_err(|e| Error::Cluster(e.to_string()))?;
    let peers = rows
        .rows::<(std::net::IpAddr,)>()
        .map_err(|e| Error::Cluster(e.to_string()))?
        .filter_map(|r| match r {
            Ok((std::net::IpAddr::V4(a),)) => Some(a),
            _ => None,
        })
        .collect();
    Ok(peers)
}
