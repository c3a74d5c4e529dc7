//! The feed's settings: strategy, caching, and their limits.

use std::time::Duration;

/// How feeds are assembled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Strategy {
    /// Merge the followees' recent posts at read time.
    #[default]
    Pull,
    /// Fan post ids out to followers' timelines on write.
    Push,
    /// Push for ordinary authors, pull for authors above the celebrity threshold.
    Hybrid,
}

/// How post bodies are cached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CacheMode {
    /// Every read goes to the feed database.
    None,
    /// Read-through; invalidated on write.
    #[default]
    Aside,
    /// Acknowledged once in the durable journal; stored in the background.
    WriteBack,
}

impl std::str::FromStr for Strategy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "pull" => Ok(Strategy::Pull),
            "push" => Ok(Strategy::Push),
            "hybrid" => Ok(Strategy::Hybrid),
            _ => Err(format!("unknown feed strategy {s:?}: expected pull, push or hybrid")),
        }
    }
}

impl std::str::FromStr for CacheMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(CacheMode::None),
            "aside" => Ok(CacheMode::Aside),
            "write-back" => Ok(CacheMode::WriteBack),
            _ => Err(format!("unknown cache mode {s:?}: expected none, aside or write-back")),
        }
    }
}

/// The feed's settings.
#[derive(Clone, Debug)]
pub struct FeedConfig {
    /// Pull, push or hybrid.
    pub strategy: Strategy,
    /// Caching of post bodies.
    pub cache: CacheMode,
    /// Hybrid: authors with more followers than this are pulled, not pushed.
    pub celebrity_threshold: u64,
    /// Push: the most post ids a timeline keeps.
    pub timeline_len: usize,
    /// In-process backend: bytes of posts, friend lists and timelines kept.
    pub cache_bytes: u64,
    /// The Redis URL, for the Redis backend on one Redis.
    pub redis: Option<String>,
    /// Node URLs of a Redis Cluster, for the Redis backend on a cluster (any reachable one
    /// finds the others). Exclusive with `redis`.
    pub redis_cluster: Vec<String>,
    /// Prefix of every Redis key.
    pub redis_prefix: String,
    /// How long a cached friend list lives: the staleness bound for changes made through
    /// other servers sharing the Redis (this server's own changes invalidate at once).
    pub friends_ttl: Duration,
    /// Fan-out jobs in flight at once.
    pub fanout_concurrency: usize,
    /// How often write-back moves journaled posts into the feed database.
    pub flush_interval: Duration,
    /// Followers loaded and delivered to at once by a fan-out job: its memory is bounded by
    /// one batch however many followers an author has. Default 1,024.
    pub fanout_batch: usize,
    /// The most followees one feed read merges. A reader who follows more gets
    /// `Error::TooExpensive` rather than a partial feed, which would silently leave out
    /// some followees' posts. Default 2,000 (a social network's usual follow cap is 5,000,
    /// and few users come near it).
    pub max_followees_per_read: usize,
    /// How long an idempotency key is remembered: a retry later than this is applied as a
    /// new request. Default 24 hours.
    pub idempotency_ttl: Duration,
    /// Redis: the longest a connection attempt may take (default 1 s).
    pub redis_connect_timeout: Duration,
    /// Redis: the longest a reply may take (default 250 ms, hundreds of times a healthy
    /// reply on a local network); a slower reply fails its call (answered from the store),
    /// and once replies keep timing out for twice this, Redis counts as unavailable.
    pub redis_response_timeout: Duration,
    /// Redis: while it is unavailable, how often it is tried again (default 1 s).
    pub redis_probe_interval: Duration,
    /// Redis backend: bytes of posts this process keeps copies of in front of Redis
    /// (posts never change, so a copy is never stale; default 64 MiB, 0 keeps none).
    pub near_bytes: u64,
    /// Redis backend: how long this process keeps copies of friend lists for
    /// `consistency=eventual` reads. Zero (the default) keeps none, and an eventual read
    /// sees every change acknowledged by any server; otherwise it may miss changes made
    /// through other servers for this long (this server's own changes drop its copy).
    pub near_friends_ttl: Duration,
}

impl Default for FeedConfig {
    fn default() -> Self {
        FeedConfig {
            strategy: Strategy::Pull,
            cache: CacheMode::Aside,
            celebrity_threshold: 1000,
            timeline_len: 800,
            cache_bytes: 256 << 20,
            redis: None,
            redis_cluster: Vec::new(),
            redis_prefix: "kith".into(),
            friends_ttl: Duration::from_secs(60),
            fanout_concurrency: 16,
            flush_interval: Duration::from_millis(20),
            fanout_batch: 1024,
            max_followees_per_read: 2000,
            idempotency_ttl: Duration::from_secs(24 * 3600),
            redis_connect_timeout: Duration::from_secs(1),
            redis_response_timeout: Duration::from_millis(250),
            redis_probe_interval: Duration::from_secs(1),
            near_bytes: 64 << 20,
            near_friends_ttl: Duration::ZERO,
        }
    }
}
