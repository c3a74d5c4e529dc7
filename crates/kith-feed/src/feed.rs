//! The feed service: the [`Feed`] type, opening it over an engine, and what every part of
//! it shares. Posting and reading are in `feed/posts.rs`, follows in `feed/follows.rs`,
//! friend-list writes and reads in `feed/friends.rs`, the fan-out queue, its watermark's
//! keeper, write-back flushing and shutdown in `feed/background.rs` (the watermark itself in
//! `feed/marks.rs`), idempotency keys in `feed/idempotent.rs`, opening's redo of the
//! fan-out in `feed/redo.rs`.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};

use kith_store::{Degree, Engine, Post};
use prometheus::Registry;
use tokio::sync::{Mutex as AsyncMutex, Notify, mpsc, watch};
use tokio::task::JoinHandle;

use crate::cache::{Backend, Target};
use crate::config::{CacheMode, FeedConfig, Strategy};
use crate::error::{Error, Result};
use crate::journal::{self, Journal, REPLAY_BATCH, RealFs, SharedPending, lock};
use crate::metrics::Metrics;
use crate::post::IdGen;
use crate::task::blocking;
use marks::Marks;

mod background;
mod claim;
mod follows;
mod friends;
mod idempotent;
mod keyed;
mod marks;
mod posts;
mod publish;
mod redo;

pub use idempotent::Applied;
pub use publish::{PostRequest, Posted};

/// The most posts one feed page holds.
pub const MAX_FEED_PAGE: usize = 1000;

/// A page of a feed.
#[derive(Clone, Debug)]
pub struct FeedPage {
    /// Newest first.
    pub posts: Vec<Arc<Post>>,
    /// The cursor for the next (older) page, if there may be one.
    pub next: Option<u64>,
}

/// The follow lists of a user.
#[derive(Clone, Debug)]
pub struct Follows {
    /// A page of whom the user follows.
    pub followees: Vec<u64>,
    /// A page of who follows the user.
    pub followers: Vec<u64>,
    /// Counts.
    pub degree: Degree,
}

/// How fresh a friend-list read must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Consistency {
    /// Reflects every acknowledged write: read from the engine.
    #[default]
    Strong,
    /// May be served from the cache, at most its time to live behind changes made through
    /// other servers sharing it.
    Eventual,
}

/// Hit and miss counts of one cache kind.
#[derive(Clone, Copy, Debug, Default)]
pub struct HitRate {
    /// Served from the cache.
    pub hits: u64,
    /// Not in the cache.
    pub misses: u64,
}

impl HitRate {
    /// hits / (hits + misses), or `None` before any request.
    pub fn rate(&self) -> Option<f64> {
        let n = self.hits + self.misses;
        (n > 0).then(|| self.hits as f64 / n as f64)
    }
}

#[derive(Clone, Copy, Debug)]
enum FanJob {
    /// A new post: add it to every follower's timeline.
    Post { author: u64, id: u64 },
    /// An author stopped being a celebrity: add its recent posts to followers' timelines.
    Author { author: u64 },
}

/// The feed service. Shared as `Arc<Feed>`; [`Feed::shutdown`] before dropping.
pub struct Feed {
    engine: Arc<dyn Engine>,
    journal_dir: PathBuf,
    backend: Backend,
    config: FeedConfig,
    pending: SharedPending,
    journal: Option<Journal>,
    /// Write-back through the Redis Cluster every server shares (`cache/writeback.rs`)
    /// rather than this server's journal.
    shared_writeback: bool,
    ids: Arc<IdGen>,
    /// This server's number on the store (its ids are congruent to it), held by a lease.
    server: u16,
    /// Who holds the lease: unique to this `Feed`.
    owner: String,
    /// Until when (milliseconds after `started`) the lease on `server` surely holds: the
    /// time its last renewal was sent, plus the lease, less a margin. No id is handed out
    /// past it, so no two live servers ever hand out ids under one number.
    lease_until_ms: std::sync::atomic::AtomicU64,
    /// Whether the last renewal held the lease (for the messages when that changes).
    fenced: AtomicBool,
    started: std::time::Instant,
    fanout: mpsc::Sender<FanJob>,
    depth: Arc<AtomicI64>,
    idle: Arc<Notify>,
    /// Fan-out jobs running (each holds the feed until it ends).
    running: Arc<AtomicUsize>,
    /// Set when the background tasks are to stop (they end between rounds).
    stop: watch::Sender<bool>,
    closing: AtomicBool,
    tasks: std::sync::Mutex<Vec<JoinHandle<()>>>,
    to_delete: AsyncMutex<Vec<PathBuf>>,
    /// Versions of friend-list cache stripes, bumped on every change.
    friend_stripes: Box<[AsyncMutex<u64>]>,
    /// Post ids whose fan-out has not finished, and the durable watermark below them.
    marks: Arc<Marks>,
    /// Fan-out jobs that failed, retried with backoff by the keeper task.
    failed: std::sync::Mutex<Vec<FanJob>>,
    /// Idempotency-key stripes: a key's lookup and write happen under its stripe, so two
    /// concurrent requests with one key are applied once.
    key_stripes: Box<[AsyncMutex<()>]>,
    metrics: Metrics,
}

impl std::fmt::Debug for Feed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feed")
            .field("config", &self.config)
            .field("backend", &self.backend.name())
            .finish_non_exhaustive()
    }
}

/// Friend-list cache stripes: a change bumps its users' stripes, see `feed/friends.rs`.
const FRIEND_STRIPES: usize = 256;
/// Idempotency-key stripes.
const KEY_STRIPES: usize = 64;
/// Posts read per batch when redoing fan-out at open.
const REDO_BATCH: usize = 1024;
/// How long a server number's lease lasts without renewal: a server killed without
/// releasing its number has its fan-out taken over about this long after.
pub(crate) const LEASE: std::time::Duration = std::time::Duration::from_secs(5);
/// How much sooner than its lease a server stops handing out ids. Its deadline runs from
/// when it sent its last renewal that held, and another server starts watching that
/// renewal's value only once it has read it (`kith-cassandra`'s `store/leases.rs`), so the
/// margin covers only the two monotonic clocks' rates and a renewal's answer arriving late.
pub(crate) const LEASE_MARGIN: std::time::Duration = std::time::Duration::from_secs(1);

/// A lease owner's name: unique to this process and moment.
fn owner_name() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("kith-{}-{nanos:x}", std::process::id())
}

impl Feed {
    /// Opens the feed over `engine`, with its write-back journal in `journal_dir`: replays
    /// any journal a previous run left into the engine, connects the backend and starts the
    /// background tasks. The engine's follows and posts are first reached here (the RocksDB
    /// store opens its feed database, `<store>/feed`, on this first call).
    ///
    /// With push or hybrid feeds it then redoes the fan-out of every stored post above the
    /// fan-out watermark (those whose delivery a crash may have cut short), and the pending
    /// re-pushes of authors that stopped being celebrities, in the background;
    /// [`Feed::drain`] waits for it.
    pub async fn open(
        engine: Arc<dyn Engine>,
        journal_dir: PathBuf,
        config: FeedConfig,
        registry: &Registry,
    ) -> Result<Arc<Feed>> {
        if config.timeline_len == 0 {
            return Err(Error::Invalid("timeline length must be at least 1".into()));
        }
        let e = engine.clone();
        let mut last = blocking(move || e.last_post_id()).await?;
        // A number without a watermark starts from here: posts a replay adds below are
        // redone rather than counted as delivered.
        let before_replay = last;
        let backend = match (&config.redis, config.redis_cluster.as_slice()) {
            (Some(_), [_, ..]) => {
                return Err(Error::Invalid("one Redis or a Redis Cluster, not both".into()));
            }
            (Some(url), []) => Backend::redis(url, &config).await?,
            (None, [_, ..]) => {
                Backend::redis_at(Target::Cluster(&config.redis_cluster), &config).await?
            }
            (None, []) => Backend::local(config.cache_bytes, config.friends_ttl),
        };
        let pending = SharedPending::default();
        let metrics = Metrics::new(registry);
        // Whatever a previous run acknowledged but did not store goes into the engine first,
        // streamed in bounded batches; damage is reported and kept aside (journal/replay.rs).
        let (e, dir, counters) = (engine.clone(), journal_dir.clone(), metrics.journal.clone());
        let replayed = blocking(move || {
            journal::replay(&RealFs, &dir, REPLAY_BATCH, &counters, &mut |posts| {
                Ok(e.put_posts(&posts.iter().collect::<Vec<_>>())?)
            })
        })
        .await?;
        last = last.max(replayed.last_id);
        // With a Redis Cluster, posts wait where every server sees them; else in this
        // server's journal.
        let shared_writeback =
            config.cache == CacheMode::WriteBack && backend.shared_writeback().is_ok();
        let journal = if config.cache == CacheMode::WriteBack && !shared_writeback {
            Some(Journal::open(&journal_dir, pending.clone(), metrics.journal.clone())?)
        } else {
            None
        };
        if let Ok(r) = backend.shared_writeback() {
            let what = "reading the write-back's highest post id";
            last = last.max(redo::patiently(redo::OPEN_WAIT, what, || r.wb_max_id()).await?);
        }
        // A server number of its own on the store, then its watermark. A number without a
        // watermark has never fanned out under one (new, or from before watermarks):
        // everything in the store counts as delivered, and the watermark is stored before
        // any new post can be acknowledged above it. A number with one was left by a
        // server that stopped: its fan-out above the watermark is redone below.
        let (e, owner) = (engine.clone(), owner_name());
        let who = owner.clone();
        // The lease's first deadline runs from before the claim was sent.
        let claim_sent = std::time::Instant::now();
        let (server, watermark, highest) =
            blocking(move || -> kith_store::Result<(u16, u64, u64)> {
                let Some(n) = claim::claim_number(&*e, &who)? else {
                    return Err(kith_store::Error::Unavailable(format!(
                        "every server number of this store ({}) is held by a running server",
                        e.server_slots()
                    )));
                };
                let stored_last = e.last_post_id()?;
                let w = match e.fanout_watermark(n)? {
                    Some(w) => w,
                    None => {
                        e.set_fanout_watermark(n, before_replay, true)?;
                        before_replay
                    }
                };
                Ok((n, w, stored_last))
            })
            .await?;
        let slots = engine.server_slots();
        let (tx, rx) = mpsc::channel(1 << 16);
        let feed = Arc::new(Feed {
            engine,
            journal_dir,
            backend,
            pending,
            journal,
            shared_writeback,
            ids: Arc::new(IdGen::new(last, server, slots)),
            server,
            owner,
            lease_until_ms: std::sync::atomic::AtomicU64::new(
                (LEASE - LEASE_MARGIN).as_millis() as u64
            ),
            fenced: AtomicBool::new(false),
            started: claim_sent,
            fanout: tx,
            depth: Arc::new(AtomicI64::new(0)),
            idle: Arc::new(Notify::new()),
            running: Arc::new(AtomicUsize::new(0)),
            stop: watch::Sender::new(false),
            closing: AtomicBool::new(false),
            tasks: std::sync::Mutex::new(Vec::new()),
            to_delete: AsyncMutex::new(Vec::new()),
            friend_stripes: (0..FRIEND_STRIPES).map(|_| AsyncMutex::new(0)).collect(),
            marks: Arc::new(Marks::new(server, watermark, highest.max(last))),
            failed: std::sync::Mutex::new(Vec::new()),
            key_stripes: (0..KEY_STRIPES).map(|_| AsyncMutex::new(())).collect(),
            metrics,
            config,
        });
        let dispatcher = tokio::spawn(Feed::dispatch(feed.clone(), rx));
        let mut tasks = vec![
            dispatcher,
            tokio::spawn(Feed::keeper(feed.clone())),
            tokio::spawn(Feed::leaser(feed.clone())),
        ];
        if feed.journal.is_some() || feed.shared_writeback {
            tasks.push(tokio::spawn(Feed::flusher(feed.clone())));
        }
        *feed.tasks.lock().expect("fresh mutex") = tasks;
        let redone = match feed.redo_fanout(watermark).await {
            Ok(()) => feed.redo_repushes().await,
            Err(e) => Err(e),
        };
        if let Err(e) = redone {
            // Not opened after all: stop the tasks and free the number.
            feed.stop_tasks().await;
            let (engine, server, owner) = (feed.engine.clone(), feed.server, feed.owner.clone());
            let _ = blocking(move || engine.release_server(server, &owner)).await;
            return Err(e);
        }
        Ok(feed)
    }

    /// This server's number on the store.
    pub fn server_number(&self) -> u16 {
        self.server
    }

    /// Whether the lease on the server number surely holds now.
    fn holds_number(&self) -> bool {
        let now = self.started.elapsed().as_millis() as u64;
        now < self.lease_until_ms.load(Ordering::SeqCst)
    }

    /// The settings.
    pub fn config(&self) -> &FeedConfig {
        &self.config
    }

    /// The backend's name ("in-process", "redis" or "redis-cluster").
    pub fn backend_name(&self) -> &'static str {
        self.backend.name()
    }

    /// Why the cache backend is not serving (Redis down, paused or refusing writes; reads
    /// are then answered from the store), or `None` while it is.
    pub fn cache_failure(&self) -> Option<String> {
        self.backend.health()
    }

    /// Bytes the in-process backend holds.
    pub fn cache_bytes_used(&self) -> Option<u64> {
        self.backend.bytes()
    }

    /// Hit and miss counts of a cache kind: "post", "friends" or "timeline".
    pub fn hit_rate(&self, kind: &str) -> HitRate {
        let get = |r: &str| self.metrics.cache.with_label_values(&[kind, r]).get();
        HitRate { hits: get("hit"), misses: get("miss") }
    }

    /// Fan-out jobs queued or running.
    pub fn fanout_depth(&self) -> i64 {
        self.depth.load(Ordering::SeqCst)
    }

    /// Posts whose fan-out has not finished (queued, running, or failed and waiting for a
    /// retry): they hold the fan-out watermark back.
    pub fn fanout_unfinished(&self) -> usize {
        self.marks.open_count()
    }

    /// Write-back journal appends and `fdatasync` calls so far.
    pub fn journal_counts(&self) -> (u64, u64) {
        (self.metrics.journal.appends.get(), self.metrics.journal.syncs.get())
    }

    /// Posts acknowledged but still only in this server's journal (with shared write-back,
    /// see [`Feed::waiting_posts`]).
    pub fn pending_posts(&self) -> usize {
        lock(&self.pending).posts.len()
    }

    /// Posts acknowledged through any server and still waiting in the shared write-back
    /// (0 without it).
    pub async fn waiting_posts(&self) -> Result<u64> {
        match (self.shared_writeback, self.backend.shared_writeback()) {
            (true, Ok(r)) => r.wb_len().await,
            _ => Ok(0),
        }
    }

    /// Whether the author's posts are fanned out to followers' timelines.
    async fn pushed(&self, author: u64) -> Result<bool> {
        Ok(match self.config.strategy {
            Strategy::Pull => false,
            Strategy::Push => true,
            Strategy::Hybrid => {
                let engine = self.engine.clone();
                let degree = blocking(move || engine.follow_degree(author)).await?;
                degree.followers <= self.config.celebrity_threshold
            }
        })
    }

    /// Fails with the first of `uids` that is not a user.
    async fn require_users(&self, uids: Vec<u64>) -> Result<()> {
        let engine = self.engine.clone();
        blocking(move || {
            for u in uids {
                if !engine.contains(u)? {
                    return Err(kith_store::Error::UnknownUser(u));
                }
            }
            Ok(())
        })
        .await
    }
}

/// A failure to read the shared write-back: the answer would miss acknowledged posts, so
/// the request fails as the store's would (503), rather than answer without them.
fn waiting_unavailable(e: Error) -> Error {
    Error::Store(kith_store::Error::Unavailable(format!(
        "posts waiting in the shared write-back cannot be read: {e}"
    )))
}
