//! [`CassandraStore`]: the store on a Cassandra cluster, opened over a session; what its
//! parts share (the current generation and its prepared statements, per-user locks, the
//! runtime the blocking `Engine` calls run the driver on).

mod batchlog;
pub(crate) mod copies;
mod engine;
mod feed;
mod follows;
mod intents;
mod leases;
pub(crate) mod listing;
mod posts;
mod relayout;
mod repushes;
pub(crate) mod rows;
pub(crate) mod servers;
mod statements;
mod users;
mod watermarks;

use std::collections::BTreeSet;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::Instant;

use kith_store::{Error as StoreError, LayoutMeta, ReadLevel};
use scylla::client::session::Session;
use scylla::serialize::row::SerializeRow;
use scylla::statement::batch::{Batch, BatchType};
use scylla::statement::prepared::PreparedStatement;

use crate::error::{Error, Result, driver};
use crate::schema;
pub use relayout::{RelayoutReport, StoredGraph};
pub(crate) use statements::{Fixed, GenStatements, OneReads};

/// Locks striped by uid: the read-modify-writes of one process (a friendship's "was it new",
/// a new user's position) do not race each other.
const STRIPES: usize = 1024;

/// The most friendship changes one `put_user` makes in its logged batch (each is a statement;
/// Cassandra refuses batches past its size threshold).
pub const MAX_BATCH_CHANGES: usize = 20_000;

/// Bytes per data-block row: a block is split into chunks of this size, clustered in order.
pub const DATA_CHUNK_BYTES: usize = 64 << 10;

/// How to reach a store on a cluster.
#[derive(Clone, Debug)]
pub struct CassandraOptions {
    /// Contact points, `host:port`.
    pub hosts: Vec<String>,
    /// The keyspace holding the store.
    pub keyspace: String,
    /// Friend-list entries one traversal may read.
    pub traversal_budget: u64,
    /// QUORUM (the default), or ONE on the named hosts alone.
    pub level: schema::Level,
}

impl CassandraOptions {
    /// Options for `hosts` and `keyspace` with the default budget.
    pub fn new(hosts: Vec<String>, keyspace: &str) -> CassandraOptions {
        CassandraOptions {
            hosts,
            keyspace: keyspace.to_string(),
            traversal_budget: kith_store::DEFAULT_TRAVERSAL_BUDGET,
            level: schema::Level::Quorum,
        }
    }
}

/// One layout generation: its placement and its tables' statements.
pub(crate) struct Gen {
    pub generation: u32,
    /// Users per partition of `users_g*` and `data_g*`: `part = pos / partition_users`.
    pub partition_users: u64,
    /// A partition holding at most this many of a user's friends is read from copies in the
    /// user's own partition (0: no copies); see [`copies`].
    pub friend_copies: u32,
    pub layout: LayoutMeta,
    pub st: GenStatements,
    /// The user reads again, at consistency ONE (`ReadLevel::One`).
    pub one: OneReads,
}

impl Gen {
    pub(crate) fn part(&self, pos: u64) -> i64 {
        (pos / self.partition_users) as i64
    }

    /// The partitions whose friends (of the user at `pos`, `friends` being (uid, position))
    /// are read from copies in the user's own partition.
    pub(crate) fn copied_parts(&self, pos: u64, friends: &[(u64, u64)]) -> BTreeSet<i64> {
        copies::copied_parts(
            self.part(pos),
            friends.iter().map(|&(_, p)| self.part(p)),
            self.friend_copies,
        )
    }
}

/// Parker's store on Apache Cassandra. Every write is acknowledged by a quorum of replicas
/// (each has synced its commit log, `commitlog_sync: batch`); every read is a quorum read,
/// so it sees every acknowledged write. It implements [`kith_store::Engine`].
pub struct CassandraStore {
    rt: tokio::runtime::Runtime,
    session: Arc<Session>,
    keyspace: String,
    hosts: Vec<String>,
    current: RwLock<Arc<Gen>>,
    fixed: Fixed,
    stripes: Vec<Mutex<()>>,
    /// Serialises this process's position allocations (the allocator itself is a lightweight
    /// transaction, safe across processes).
    allocating: tokio::sync::Mutex<()>,
    /// Serialise this process's unfollows by followed user (striped like `stripes`, but
    /// apart from them): an unfollow's count of the target's followers and the re-push it
    /// stores from it, and a re-push's removal, see no other unfollow of that target by
    /// this process between. Follows take none, and edits of one edge are safe side by side
    /// (each switch is conditioned on the edit it read, `follows.rs`); edits of other
    /// processes are arbitrated by the store.
    follow_stripes: Vec<Mutex<()>>,
    /// The next pending re-push token, seeded from the clock.
    next_token: AtomicU64,
    traversal_budget: u64,
    /// Writers of this process hold it shared; a relayout holds it exclusively while it copies.
    writers: RwLock<()>,
    /// When the store's row was last read for a switch made elsewhere.
    checked: Mutex<Instant>,
    /// The last timestamp this process gave a write to users (microseconds), or the latest
    /// write clock it read, whichever is later (`stamp_after`).
    last_stamp: AtomicI64,
    /// When the last follow repair that succeeded ran (ms; `intents.rs`).
    repaired_to: Mutex<Option<u64>>,
    /// The server-number rows as this process watched them (`leases.rs`).
    leases: Mutex<leases::Watch>,
    /// Per server number, the timestamp of the last watermark write this process made or
    /// read (`watermarks.rs`).
    watermark_stamps: Mutex<std::collections::HashMap<u16, i64>>,
}

impl fmt::Debug for CassandraStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CassandraStore")
            .field("hosts", &self.hosts)
            .field("keyspace", &self.keyspace)
            .field("generation", &self.gen_now().generation)
            .finish()
    }
}

impl CassandraStore {
    /// Connects to the store in `options.keyspace` (made by [`crate::build`]).
    pub fn open(options: &CassandraOptions) -> Result<CassandraStore> {
        schema::check_keyspace(&options.keyspace)?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("kith-cassandra")
            .enable_all()
            .build()
            .map_err(Error::io("starting the driver's runtime"))?;
        let ks = options.keyspace.clone();
        let (session, fixed, generation) = rt.block_on(async {
            let session = schema::connect_at(&options.hosts, options.level).await?;
            schema::check_format(&session, &ks).await?;
            let fixed = Fixed::prepare(&session, &ks).await.map_err(|e| {
                Error::Cluster(format!(
                    "keyspace {ks} does not hold a kith store (`kith store build --cassandra` makes one): {e}"
                ))
            })?;
            let row = session
                .execute_unpaged(&fixed.store_get, ())
                .await
                .map_err(|e| driver("reading the store's row", e))?
                .into_rows_result()
                .map_err(|e| Error::Cluster(e.to_string()))?
                .maybe_first_row::<(Option<i32>, Option<i32>)>()
                .map_err(|e| Error::Cluster(e.to_string()))?;
            let Some((Some(format), Some(generation))) = row else {
                return Err(Error::Cluster(format!(
                    "keyspace {ks} has no finished kith store (a build that did not complete?); build it again"
                )));
            };
            if format > schema::FORMAT {
                return Err(Error::Cluster(format!(
                    "keyspace {ks}: store format {format} is newer than this kith supports ({}); upgrade kith",
                    schema::FORMAT
                )));
            }
            Ok::<_, Error>((Arc::new(session), fixed, generation as u32))
        })?;
        let g = rt.block_on(load_generation(&session, &fixed, &ks, generation))?;
        let store = CassandraStore {
            rt,
            session,
            keyspace: ks,
            hosts: options.hosts.clone(),
            current: RwLock::new(Arc::new(g)),
            fixed,
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            allocating: tokio::sync::Mutex::new(()),
            follow_stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            next_token: AtomicU64::new(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64),
            ),
            traversal_budget: options.traversal_budget,
            writers: RwLock::new(()),
            checked: Mutex::new(Instant::now()),
            repaired_to: Mutex::new(None),
            leases: Mutex::new(leases::Watch::default()),
            watermark_stamps: Mutex::default(),
            last_stamp: AtomicI64::new(0),
        };
        Ok(store)
    }

    /// The keyspace.
    pub fn keyspace(&self) -> &str {
        &self.keyspace
    }

    /// The current layout generation.
    pub fn generation(&self) -> u32 {
        self.gen_now().generation
    }

    /// Users per partition in the current generation (1: one partition per user).
    pub fn partition_users(&self) -> u64 {
        self.gen_now().partition_users
    }

    /// The current generation's friend-copy limit (0: no copies).
    pub fn friend_copies(&self) -> u32 {
        self.gen_now().friend_copies
    }

    /// How the current layout was made.
    pub fn layout_meta(&self) -> LayoutMeta {
        self.gen_now().layout.clone()
    }

    /// The current generation, after following a switch another process made (checked at
    /// most once a second).
    pub(crate) fn generation_now(&self) -> Result<Arc<Gen>, StoreError> {
        self.refresh()?;
        Ok(self.gen_now())
    }

    /// Pauses while a relayout of this process copies rows.
    pub(crate) fn writer_guard(&self) -> std::sync::RwLockReadGuard<'_, ()> {
        self.writers.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// The layout generation a read at `level` uses. A strong read checks the store's row
    /// (at QUORUM) for a newer generation; an eventual one takes the generation this process
    /// knows when that check fails, so that it is served with a quorum gone.
    pub(crate) fn generation_at(&self, level: ReadLevel) -> Result<Arc<Gen>, StoreError> {
        match level {
            ReadLevel::Strong => self.generation_now(),
            ReadLevel::One => {
                // A failed check leaves the known generation in place.
                let _ = self.refresh();
                Ok(self.gen_now())
            }
        }
    }

    pub(crate) fn gen_now(&self) -> Arc<Gen> {
        self.current.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    pub(crate) fn session(&self) -> &Session {
        &self.session
    }

    /// Runs a driver future to completion from a blocking caller: on the store's runtime,
    /// stepping out of a multi-threaded runtime's worker first (`block_in_place`) or onto a
    /// thread of its own under a current-thread runtime, so any caller may block on it.
    pub(crate) fn wait<F>(&self, fut: F) -> F::Output
    where
        F: Future + Send,
        F::Output: Send,
    {
        use tokio::runtime::{Handle, RuntimeFlavor};
        match Handle::try_current() {
            Err(_) => self.rt.block_on(fut),
            Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(|| self.rt.block_on(fut))
            }
            Ok(_) => std::thread::scope(|s| {
                s.spawn(|| self.rt.block_on(fut)).join().expect("driver thread panicked")
            }),
        }
    }

    /// The timestamp of a write to users whose rows' clocks read at most `seen` (the
    /// timestamps of the last writes to them, read at QUORUM before the write): strictly
    /// after `seen` and after the last one this process gave, and at least the clock. Each
    /// write carries this one timestamp on every cell (a hybrid logical clock), so that a
    /// write that begins after another was acknowledged wins over it whatever the servers'
    /// and nodes' clocks say: it reads the other's clock, or a later one.
    pub(crate) fn stamp_after(&self, seen: i64) -> i64 {
        self.last_stamp.fetch_max(seen, Ordering::Relaxed);
        self.stamp()
    }

    /// A client timestamp: the clock in microseconds (Cassandra's unit), strictly after the
    /// last one this process gave.
    pub(crate) fn stamp(&self) -> i64 {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64);
        let mut last = self.last_stamp.load(Ordering::Relaxed);
        loop {
            let next = now.max(last + 1);
            match self.last_stamp.compare_exchange_weak(
                last,
                next,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return next,
                Err(seen) => last = seen,
            }
        }
    }

    /// Locks the stripes of `uids` in ascending stripe order.
    pub(crate) fn lock_users(
        &self,
        uids: impl IntoIterator<Item = u64>,
    ) -> Vec<MutexGuard<'_, ()>> {
        lock_stripes(&self.stripes, uids)
    }

    /// Locks the follow stripes of the followed users `targets`, in ascending stripe order.
    pub(crate) fn lock_followed(
        &self,
        targets: impl IntoIterator<Item = u64>,
    ) -> Vec<MutexGuard<'_, ()>> {
        lock_stripes(&self.follow_stripes, targets)
    }
}

/// Reads generation `generation`'s row and prepares its statements.
pub(crate) async fn load_generation(
    session: &Session,
    fixed: &Fixed,
    ks: &str,
    generation: u32,
) -> Result<Gen> {
    let row = session
        .execute_unpaged(&fixed.generation_get, (generation as i32,))
        .await
        .map_err(|e| driver("reading the generation's row", e))?
        .into_rows_result()
        .map_err(|e| Error::Cluster(e.to_string()))?
        .maybe_first_row::<(Option<i64>, Option<i32>, Option<String>)>()
        .map_err(|e| Error::Cluster(e.to_string()))?;
    let Some((Some(partition_users), friend_copies, Some(layout))) = row else {
        return Err(Error::Cluster(format!("keyspace {ks}: generation {generation} has no row")));
    };
    let layout: LayoutMeta = serde_json::from_str(&layout).map_err(|e| {
        Error::Cluster(format!("keyspace {ks}: generation {generation}'s layout metadata: {e}"))
    })?;
    if partition_users < 1 {
        return Err(Error::Cluster(format!(
            "keyspace {ks}: generation {generation} has {partition_users} users per partition"
        )));
    }
    let st = GenStatements::prepare(session, ks, generation).await?;
    Ok(Gen {
        generation,
        partition_users: partition_users as u64,
        friend_copies: friend_copies.unwrap_or(0).max(0) as u32,
        layout,
        one: OneReads::of(&st),
        st,
    })
}

/// A batch and its values, built statement by statement.
pub(crate) struct Writes {
    batch: Batch,
    values: Vec<Box<dyn SerializeRow + Send + Sync>>,
}

impl Writes {
    /// A logged batch: Cassandra applies all of it or, after a failure, replays it from its
    /// batch log until all of it is applied.
    pub(crate) fn logged() -> Writes {
        Writes::new(BatchType::Logged)
    }

    /// An unlogged batch: for statements on one partition (applied together there).
    pub(crate) fn unlogged() -> Writes {
        Writes::new(BatchType::Unlogged)
    }

    fn new(kind: BatchType) -> Writes {
        let mut batch = Batch::new(kind);
        // Every other statement kith batches sets values (no list appends, no lightweight
        // transactions), so applying a batch twice is applying it once: the driver may send
        // it again through another node when its coordinator dies mid-way.
        batch.set_is_idempotent(true);
        Writes { batch, values: Vec::new() }
    }

    /// Gives every cell the batch writes timestamp `at` (microseconds) instead of its
    /// coordinator's clock.
    pub(crate) fn at(mut self, at: i64) -> Writes {
        self.batch.set_timestamp(Some(at));
        self
    }

    pub(crate) fn push(
        &mut self,
        statement: &PreparedStatement,
        values: impl SerializeRow + Send + Sync + 'static,
    ) {
        self.batch.append_statement(statement.clone());
        self.values.push(Box::new(values));
    }

    /// Runs the batch (nothing if empty); `what` names it in errors.
    pub(crate) async fn run(self, session: &Session, what: &str) -> Result<(), StoreError> {
        if self.values.is_empty() {
            return Ok(());
        }
        if self.values.len() == 1 {
            // One statement needs no batch (and no batch log).
            let mut statement = match &self.batch.statements[0] {
                scylla::statement::batch::BatchStatement::PreparedStatement(p) => p.clone(),
                _ => unreachable!("only prepared statements are pushed"),
            };
            if let Some(at) = self.batch.get_timestamp() {
                statement.set_timestamp(Some(at));
            }
            session
                .execute_unpaged(&statement, &self.values[0])
                .await
                .map_err(|e| driver(what, e))?;
            return Ok(());
        }
        if self.batch.get_type() != BatchType::Logged {
            session.batch(&self.batch, &self.values).await.map_err(|e| driver(what, e))?;
            return Ok(());
        }
        match batchlog::mode(session) {
            batchlog::Mode::Unlogged => {}
            mode => return batchlog::logged(session, &self.batch, &self.values, mode, what).await,
        }
        batchlog::unlogged(session, &self.batch, &self.values, what).await
    }
}

/// A driver result that is not the rows expected: the engine's own fault.
pub(crate) fn bad_rows(what: &str, e: impl fmt::Display) -> StoreError {
    StoreError::Backend { engine: "cassandra", detail: format!("{what}: unexpected result: {e}") }
}

/// Cassandra's bigint is signed; uids, positions and post ids are kept bit for bit.
pub(crate) fn i(v: u64) -> i64 {
    v as i64
}

pub(crate) fn u(v: i64) -> u64 {
    v as u64
}

/// Locks the stripes of `uids` among `stripes` in ascending stripe order (so two callers
/// never wait for each other's in a circle).
fn lock_stripes(
    stripes: &[Mutex<()>],
    uids: impl IntoIterator<Item = u64>,
) -> Vec<MutexGuard<'_, ()>> {
    let mut which: Vec<usize> = uids
        .into_iter()
        .map(|u| (u.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 54) as usize % stripes.len())
        .collect();
    which.sort_unstable();
    which.dedup();
    which.into_iter().map(|s| stripes[s].lock().unwrap_or_else(PoisonError::into_inner)).collect()
}
