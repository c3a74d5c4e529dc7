//! `kith serve`: the HTTP/JSON service over an embedded store.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use kith_feed::{CacheMode, FeedConfig, Strategy};
use kith_server::{Limits, Secret, ServerConfig};
use kith_store::{Engine, OpenOptions, Store};

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The store directory (made by `kith store build`).
    #[arg(long, required_unless_present = "cassandra", conflicts_with = "cassandra")]
    dir: Option<PathBuf>,
    /// Serve the store on a Cassandra cluster instead (made by `kith store build --cassandra`).
    #[command(flatten)]
    cassandra: super::store::CassandraArgs,
    /// With --cassandra: the directory of the write-back journal (posts acknowledged before
    /// they reach the store are fsynced here first). Default `kith-feed-journal`.
    #[arg(long, requires = "cassandra")]
    journal_dir: Option<PathBuf>,
    /// Address to listen on (port 0 picks a free port; the address is printed).
    #[arg(long, default_value = "127.0.0.1:7070")]
    addr: SocketAddr,
    /// How feeds are assembled.
    #[arg(long, default_value = "pull", value_parser = ["pull", "push", "hybrid"])]
    feed: String,
    /// Hybrid: authors with more followers than this are pulled at read time.
    #[arg(long, default_value_t = 1000)]
    celebrity_threshold: u64,
    /// Push and hybrid: post ids kept per timeline.
    #[arg(long, default_value_t = 800)]
    timeline_len: usize,
    /// Caching of post bodies (and of friend lists for consistency=eventual).
    #[arg(long, default_value = "aside", value_parser = ["none", "aside", "write-back"])]
    cache: String,
    /// In-process backend: bytes of posts, friend lists and timelines kept.
    #[arg(long, default_value_t = 256 << 20)]
    cache_bytes: u64,
    /// Use Redis for caches and timelines, e.g. redis://127.0.0.1:6379.
    #[arg(long, conflicts_with = "redis_cluster")]
    redis: Option<String>,
    /// Use a Redis Cluster for caches and timelines: node URLs, comma-separated (any
    /// reachable one finds the others), e.g. what `kith cluster up` prints. Several servers
    /// over one store share it.
    #[arg(long, value_delimiter = ',')]
    redis_cluster: Vec<String>,
    /// Prefix of every Redis key, so several servers can share one Redis.
    #[arg(long, default_value = "kith")]
    redis_prefix: String,
    /// Seconds a cached friend list lives. Friendship changes made through any server sharing
    /// the Redis invalidate at once; the TTL bounds only what a failed invalidation (Redis
    /// down during the change) can leave behind for other servers.
    #[arg(long, default_value_t = 60.0)]
    friends_ttl_s: f64,
    /// Writes need `Authorization: Bearer <token>` (an empty token is refused).
    #[arg(long, env = "KITH_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Reads need the token too.
    #[arg(long, requires = "token")]
    token_reads: bool,
    /// Largest request body in bytes (routes that carry a data block also fit the largest
    /// block in base64).
    #[arg(long, default_value_t = 1 << 20)]
    body_limit: usize,
    /// A host name (optionally with a port) requests may name in `Host`, besides loopback
    /// names and addresses; repeat for several. On a loopback address other names are
    /// refused (421), against DNS rebinding.
    #[arg(long = "allowed-host", value_name = "HOST")]
    allowed_hosts: Vec<String>,
    /// Milliseconds a connection may take to send a request's headers; also the idle
    /// keep-alive timeout.
    #[arg(long, default_value_t = 10_000)]
    header_timeout_ms: u64,
    /// Milliseconds one request may take, its body included (then 408).
    #[arg(long, default_value_t = 30_000)]
    request_timeout_ms: u64,
    /// Most open connections; more are answered 503 and closed.
    #[arg(long, default_value_t = 4096)]
    max_connections: usize,
    /// Most requests in progress; more are answered 503 at once.
    #[arg(long, default_value_t = 1024)]
    max_concurrent_requests: usize,
    /// Milliseconds in-flight requests get to finish after SIGTERM/SIGINT before their
    /// connections are dropped.
    #[arg(long, default_value_t = 10_000)]
    shutdown_timeout_ms: u64,
    /// Most threads running store calls at once (tokio's blocking pool); more calls queue.
    #[arg(long, default_value_t = 64)]
    max_blocking_threads: usize,
    /// RocksDB block cache in bytes.
    #[arg(long)]
    block_cache_bytes: Option<usize>,
    /// Write-back: milliseconds between moves of journaled posts into the store.
    #[arg(long, default_value_t = 20)]
    flush_interval_ms: u64,
    /// Push and hybrid: followers read and delivered to at once by a fan-out job.
    #[arg(long, default_value_t = 1024)]
    fanout_batch: usize,
    /// The most followees one feed read merges; a reader following more gets 422
    /// too_expensive.
    #[arg(long, default_value_t = 2000)]
    max_followees_per_read: usize,
    /// Seconds an Idempotency-Key is remembered.
    #[arg(long, default_value_t = 24 * 3600)]
    idempotency_ttl_s: u64,
    /// Friend-list entries one shortest-path or neighbourhood request may read before it gets
    /// 422 too_expensive.
    #[arg(long, default_value_t = kith_store::DEFAULT_TRAVERSAL_BUDGET)]
    traversal_budget: u64,
    /// Redis: the longest a connection attempt may take.
    #[arg(long, default_value_t = 1000)]
    redis_connect_timeout_ms: u64,
    /// Redis: the longest a reply may take (that request is answered from the store); once
    /// replies keep timing out for twice this, Redis counts as down and every request is
    /// answered from the store until a probe gets a write through.
    #[arg(long, default_value_t = 250)]
    redis_response_timeout_ms: u64,
    /// Redis: while it is down, how often it is tried again.
    #[arg(long, default_value_t = 1000)]
    redis_probe_interval_ms: u64,
    /// Redis: MiB of posts kept in this process in front of Redis (posts never change, so a
    /// copy is never stale); 0 keeps none.
    #[arg(long, default_value_t = 64)]
    near_cache_mb: u64,
    /// Redis: keep copies of friend lists in this process for this long. An eventual read
    /// then may miss a change made through another server for at most this long (this
    /// server's own changes drop its copy at once); 0 (the default) keeps none, and eventual
    /// reads see every change any server acknowledged.
    #[arg(long, default_value_t = 0)]
    near_friends_ttl_ms: u64,
}

fn config(args: &ServeArgs) -> Result<ServerConfig> {
    anyhow::ensure!(
        args.friends_ttl_s.is_finite() && args.friends_ttl_s > 0.0,
        "--friends-ttl-s must be a positive number of seconds"
    );
    anyhow::ensure!(args.timeline_len > 0, "--timeline-len must be at least 1");
    anyhow::ensure!(
        args.token.as_ref().is_none_or(|t| !t.trim().is_empty()),
        "--token (or KITH_TOKEN) is empty; give a non-empty token, or leave it unset for no token"
    );
    for (name, value) in [
        ("--header-timeout-ms", args.header_timeout_ms),
        ("--request-timeout-ms", args.request_timeout_ms),
        ("--max-connections", args.max_connections as u64),
        ("--max-concurrent-requests", args.max_concurrent_requests as u64),
        ("--max-blocking-threads", args.max_blocking_threads as u64),
        ("--fanout-batch", args.fanout_batch as u64),
        ("--max-followees-per-read", args.max_followees_per_read as u64),
        ("--idempotency-ttl-s", args.idempotency_ttl_s),
        ("--traversal-budget", args.traversal_budget),
        ("--redis-connect-timeout-ms", args.redis_connect_timeout_ms),
        ("--redis-response-timeout-ms", args.redis_response_timeout_ms),
        ("--redis-probe-interval-ms", args.redis_probe_interval_ms),
    ] {
        anyhow::ensure!(value > 0, "{name} must be at least 1");
    }
    Ok(ServerConfig {
        addr: args.addr,
        body_limit: args.body_limit,
        token: args.token.clone().map(Secret::new),
        token_reads: args.token_reads,
        allowed_hosts: args.allowed_hosts.clone(),
        limits: Limits {
            header_read_timeout: Duration::from_millis(args.header_timeout_ms),
            request_timeout: Duration::from_millis(args.request_timeout_ms),
            max_connections: args.max_connections,
            max_concurrent_requests: args.max_concurrent_requests,
            shutdown_timeout: Duration::from_millis(args.shutdown_timeout_ms),
        },
        feed: FeedConfig {
            strategy: args.feed.parse::<Strategy>().map_err(anyhow::Error::msg)?,
            cache: args.cache.parse::<CacheMode>().map_err(anyhow::Error::msg)?,
            celebrity_threshold: args.celebrity_threshold,
            timeline_len: args.timeline_len,
            cache_bytes: args.cache_bytes,
            redis: args.redis.clone(),
            redis_cluster: args.redis_cluster.clone(),
            redis_prefix: args.redis_prefix.clone(),
            friends_ttl: Duration::from_secs_f64(args.friends_ttl_s),
            flush_interval: Duration::from_millis(args.flush_interval_ms.max(1)),
            fanout_batch: args.fanout_batch,
            max_followees_per_read: args.max_followees_per_read,
            idempotency_ttl: Duration::from_secs(args.idempotency_ttl_s),
            redis_connect_timeout: Duration::from_millis(args.redis_connect_timeout_ms),
            redis_response_timeout: Duration::from_millis(args.redis_response_timeout_ms),
            redis_probe_interval: Duration::from_millis(args.redis_probe_interval_ms),
            near_bytes: args.near_cache_mb.saturating_mul(1 << 20),
            near_friends_ttl: Duration::from_millis(args.near_friends_ttl_ms),
            ..FeedConfig::default()
        },
    })
}

/// The warning for a server anyone on the network can reach and write to, if it is one.
fn exposure_warning(addr: SocketAddr, token: bool) -> Option<String> {
    (!addr.ip().is_loopback() && !token).then(|| {
        format!(
            "kith serve: warning: listening on {addr}, which is not a loopback address, without \
             --token: anyone who can reach it can change users, friendships and posts"
        )
    })
}

pub(crate) fn run(args: ServeArgs) -> Result<()> {
    let config = config(&args)?;
    if let Some(w) = exposure_warning(args.addr, args.token.is_some()) {
        eprintln!("{w}");
    }
    let (store, journal, engine): (Arc<dyn Engine>, PathBuf, &str) = match &args.dir {
        Some(dir) => {
            let options = OpenOptions {
                block_cache_bytes: args.block_cache_bytes,
                traversal_budget: args.traversal_budget,
                ..Default::default()
            };
            let store = Store::open(dir, &options)
                .with_context(|| format!("opening the store in {}", dir.display()))?;
            (Arc::new(store), dir.join("feed-journal"), "rocksdb")
        }
        None => {
            let mut options = args.cassandra.options()?;
            options.traversal_budget = args.traversal_budget;
            let store = kith_cassandra::CassandraStore::open(&options).with_context(|| {
                format!("opening keyspace {} on {}", options.keyspace, options.hosts.join(","))
            })?;
            let journal =
                args.journal_dir.clone().unwrap_or_else(|| PathBuf::from("kith-feed-journal"));
            (Arc::new(store), journal, "cassandra")
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(args.max_blocking_threads)
        .build()?;
    let describe = format!(
        "store {engine}, feed {}, cache {}, backend {}",
        args.feed,
        args.cache,
        match (&args.redis, args.redis_cluster.is_empty()) {
            (Some(_), _) => "redis",
            (None, false) => "redis cluster",
            (None, true) => "in-process",
        }
    );
    runtime
        .block_on(kith_server::serve(
            store.clone(),
            journal,
            config,
            |addr| {
                // Not println!: a parent that went away closed the pipe, and the server
                // should go on serving rather than panic on its first line.
                use std::io::Write;
                let mut out = std::io::stdout();
                let _ = writeln!(out, "kith serve: listening on http://{addr} ({describe})");
                let _ = out.flush();
            },
            kith_server::shutdown_signal(),
        ))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    runtime.shutdown_timeout(Duration::from_secs(5));
    drop(store);
    use std::io::Write;
    let _ = writeln!(
        std::io::stdout(),
        "kith serve: shut down cleanly (in-flight requests finished, write-back flushed, store closed)"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_non_loopback_address_without_a_token_is_warned_about() {
        let any: SocketAddr = "0.0.0.0:7070".parse().unwrap();
        let lo: SocketAddr = "127.0.0.1:7070".parse().unwrap();
        let w = exposure_warning(any, false).expect("a warning");
        assert!(w.contains("0.0.0.0:7070") && w.contains("--token"), "{w}");
        assert!(exposure_warning(any, true).is_none());
        assert!(exposure_warning(lo, false).is_none());
    }
}
