//! Relayout on the cluster: the stored graph read from the index, a new layout computed
//! while writers go on, then (writers of this process paused) every user's rows copied into
//! the next generation's tables in the new order, and the store's row switched to it by a
//! lightweight transaction. Readers keep reading the old generation until the switch and the
//! new one after it; the old generation's tables stay until the next relayout, so a reader
//! (here or in another process, which notices the switch within a second) never finds its
//! tables gone.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError};
use std::time::Instant;

use futures_util::{StreamExt, TryStreamExt, stream};
use kith_graph::{Graph, VertexId};
use kith_layout::Layout;
use kith_store::{Error as StoreError, LayoutMeta, NewLayout};
use serde::Serialize;

use super::rows::{key, uid};
use super::{CassandraStore, Gen, Writes, bad_rows, i, load_generation, u};
use crate::error::{Error, Result, driver};
use crate::schema;

/// In-flight requests while copying.
const IN_FLIGHT: usize = 64;

/// The graph a store holds, as its index says.
#[derive(Debug)]
pub struct StoredGraph {
    /// The friendships, users by ascending uid.
    pub graph: Graph,
    /// Each user's (dense id's) position.
    pub position: Vec<u64>,
    /// Each user's data block size.
    pub data_bytes: Vec<u64>,
    /// The generation read.
    pub generation: u32,
}

impl StoredGraph {
    /// The dense ids in position order.
    pub fn order(&self) -> Vec<VertexId> {
        let mut order: Vec<VertexId> = (0..self.graph.num_nodes() as VertexId).collect();
        order.sort_by_key(|&v| self.position[v as usize]);
        order
    }
}

/// What a relayout did.
#[derive(Clone, Debug, Serialize)]
pub struct RelayoutReport {
    /// The generation before.
    pub from_generation: u32,
    /// The new generation.
    pub to_generation: u32,
    /// Users placed by the layout.
    pub users: u64,
    /// Users added while the layout was computed, appended after it.
    pub appended: u64,
    /// Users per partition in the new generation.
    pub partition_users: u64,
    /// The new generation's friend-copy limit.
    pub friend_copies: u32,
    /// Friend copies written.
    pub copies: u64,
    /// Seconds computing the layout (writers not paused).
    pub compute_seconds: f64,
    /// Seconds copying rows (this process's writers paused, readers not).
    pub rewrite_seconds: f64,
}

impl CassandraStore {
    /// The stored graph: a scan of the current generation's index.
    pub fn graph(&self) -> Result<StoredGraph> {
        let g = self.gen_now();
        self.wait(self.read_graph(&g))
    }

    async fn read_graph(&self, g: &Gen) -> Result<StoredGraph> {
        let pager =
            self.session().execute_iter(g.st.index_scan_all.clone(), ()).await.map_err(|e| {
                Error::Store(StoreError::Unavailable(format!("reading the index: {e}")))
            })?;
        let mut rows = pager
            .rows_stream::<(i64, Option<i64>, Option<i64>, Option<BTreeMap<i64, i64>>)>()
            .map_err(|e| Error::Store(bad_rows("index scan", e)))?;
        let mut users: Vec<(u64, u64, u64, Vec<u64>)> = Vec::new();
        while let Some(row) = rows.next().await {
            let (k, pos, bytes, friends) = row.map_err(|e| {
                Error::Store(StoreError::Unavailable(format!("reading the index: {e}")))
            })?;
            let (Some(pos), Some(bytes)) = (pos, bytes) else { continue };
            let friends = friends.unwrap_or_default().into_keys().map(uid).collect();
            users.push((uid(k), u(pos), u(bytes), friends));
        }
        users.sort_unstable_by_key(|r| r.0);
        let ids: Vec<u64> = users.iter().map(|r| r.0).collect();
        let mut edges = Vec::new();
        for (me, (who, _, _, friends)) in users.iter().enumerate() {
            for f in friends {
                let w = ids.binary_search(f).map_err(|_| {
                    Error::Store(StoreError::Corrupt {
                        key: format!("index row of user {who}"),
                        reason: format!("friend {f} is not in the index"),
                    })
                })?;
                if me < w {
                    edges.push((me as VertexId, w as VertexId));
                }
            }
        }
        let position = users.iter().map(|r| r.1).collect();
        let data_bytes = users.iter().map(|r| r.2).collect();
        Ok(StoredGraph {
            graph: Graph::from_edges(ids, false, edges),
            position,
            data_bytes,
            generation: g.generation,
        })
    }

    /// Writes the users in a new order (with `partition_users` per partition and
    /// `friend_copies`, or the current ones) as the next generation and switches to it.
    pub fn relayout(
        &self,
        new: NewLayout<'_>,
        partition_users: Option<u64>,
        friend_copies: Option<u32>,
        progress: bool,
    ) -> Result<RelayoutReport> {
        let t0 = Instant::now();
        let before = self.graph()?;
        let (layout, mut meta): (Layout, LayoutMeta) = match new {
            NewLayout::Given(l, m) => (l.clone(), m),
            NewLayout::Compute(config) => {
                let computed =
                    kith_layout::compute(&before.graph, &config).map_err(StoreError::from)?;
                (computed.layout, LayoutMeta::of(&config))
            }
        };
        if layout.len() != before.graph.num_nodes() {
            return Err(StoreError::Invalid(format!(
                "the layout places {} users but the store has {}",
                layout.len(),
                before.graph.num_nodes()
            ))
            .into());
        }
        let compute_seconds = t0.elapsed().as_secs_f64();
        let t1 = Instant::now();
        let _exclusive = self.writers.write().unwrap_or_else(PoisonError::into_inner);
        let old = self.gen_now();
        let now = self.wait(self.read_graph(&old))?;
        let (order, laid) =
            kith_store::relayout_order(&before.graph, &layout, &now.graph, &now.order());
        let k = partition_users.unwrap_or(old.partition_users).max(1);
        let copies = friend_copies.unwrap_or(old.friend_copies);
        let generation = old
            .generation
            .checked_add(1)
            .ok_or_else(|| Error::Cluster("generation counter exhausted".into()))?;
        meta.users = laid;
        meta.written_unix = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let next = self.wait(
            self.copy_generation(&old, &now, &order, generation, k, copies, &meta, progress),
        )?;
        let copies_written = next.1;
        let next = next.0;
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(next);
        // The generation before the old one is no longer read by anyone.
        if old.generation > 1 {
            let ks = self.keyspace.clone();
            let previous = old.generation - 1;
            self.wait(async move {
                for cql in schema::drop_generation(&ks, previous) {
                    schema::ddl(self.session(), &cql).await?;
                }
                Ok::<_, Error>(())
            })?;
        }
        Ok(RelayoutReport {
            from_generation: old.generation,
            to_generation: generation,
            users: laid,
            appended: order.len() as u64 - laid,
            partition_users: k,
            friend_copies: copies,
            copies: copies_written,
            compute_seconds,
            rewrite_seconds: t1.elapsed().as_secs_f64(),
        })
    }

    #[allow(clippy::too_many_arguments)]
    async fn copy_generation(
        &self,
        old: &Gen,
        now: &StoredGraph,
        order: &[VertexId],
        generation: u32,
        partition_users: u64,
        friend_copies: u32,
        meta: &LayoutMeta,
        progress: bool,
    ) -> Result<(Gen, u64)> {
        let ks = &self.keyspace;
        let session = self.session();
        for cql in schema::generation_tables(ks, generation) {
            schema::ddl(session, &cql).await?;
        }
        let st = super::GenStatements::prepare(session, ks, generation).await?;
        let new_pos: Vec<u64> = {
            let mut p = vec![0u64; order.len()];
            for (pos, &v) in order.iter().enumerate() {
                p[v as usize] = pos as u64;
            }
            p
        };
        let graph = &now.graph;
        let copied_to = super::copies::needed_copies(
            graph,
            order,
            |f| new_pos[f as usize],
            partition_users,
            friend_copies,
        );
        let copies = copied_to.iter().map(|c| c.len() as u64).sum::<u64>();
        let bar = crate::progress::bar(progress, order.len() as u64, "copying users");
        let (st, new_pos, bar, copied_to) = (&st, &new_pos, &bar, &copied_to);
        stream::iter(order.iter().copied())
            .map(|v| async move {
                let who = graph.original_id(v);
                let (from, to) = (now.position[v as usize], new_pos[v as usize]);
                let (from_part, to_part) = (old.part(from), (to / partition_users) as i64);
                let friends: BTreeMap<i64, i64> = graph
                    .neighbors(v)
                    .iter()
                    .map(|&f| (key(graph.original_id(f)), i(new_pos[f as usize])))
                    .collect();
                let profile = session
                    .execute_unpaged(&old.st.user_get, (from_part, i(from)))
                    .await
                    .map_err(|e| driver("reading a profile to copy", e))?
                    .into_rows_result()
                    .map_err(|e| bad_rows("profile", e))?
                    .maybe_first_row::<(i64, Vec<u8>)>()
                    .map_err(|e| bad_rows("profile", e))?
                    .ok_or_else(|| StoreError::Corrupt {
                        key: format!("profile at position {from}"),
                        reason: format!("missing for indexed user {who}"),
                    })?
                    .1;
                let chunks: Vec<(i32, Vec<u8>)> = {
                    let rows = session
                        .execute_unpaged(&old.st.data_get, (from_part, i(from), i32::MAX))
                        .await
                        .map_err(|e| driver("reading a data block to copy", e))?
                        .into_rows_result()
                        .map_err(|e| bad_rows("data", e))?;
                    rows.rows::<(Vec<u8>,)>()
                        .map_err(|e| bad_rows("data", e))?
                        .enumerate()
                        .map(|(c, r)| r.map(|(b,)| (c as i32, b)).map_err(|e| bad_rows("data", e)))
                        .collect::<Result<_, StoreError>>()?
                };
                let copied = &copied_to[to as usize];
                // One timestamp on every copied cell of the user, the index row's clock
                // included: a write after the switch reads that clock and stamps past it, so
                // it wins over the copied profile too, whatever the coordinators' clocks.
                let at = self.stamp();
                let mut w = Writes::unlogged().at(at);
                w.push(&st.user_put, (to_part, i(to), key(who), profile.clone()));
                for (c, bytes) in chunks {
                    w.push(&st.data_put, (to_part, i(to), c, bytes));
                }
                w.run(session, "copying a user's profile and data").await?;
                // Friend copies, each in its own partition.
                stream::iter(copied.iter().copied())
                    .map(|part| {
                        let mut w = Writes::unlogged().at(at);
                        w.push(&st.user_put, (part, i(to), key(who), profile.clone()));
                        w.run(session, "writing a friend copy")
                    })
                    .buffer_unordered(8)
                    .try_for_each(|()| async { Ok(()) })
                    .await?;
                let mut w = Writes::unlogged().at(at);
                w.push(
                    &st.index_load,
                    (key(who), i(to), i(now.data_bytes[v as usize]), friends, copied.clone()),
                );
                w.run(session, "writing an index row").await?;
                bar.inc(1);
                Ok::<_, StoreError>(())
            })
            .buffer_unordered(IN_FLIGHT)
            .try_for_each(|()| async { Ok(()) })
            .await?;
        bar.finish_and_clear();
        let layout = serde_json::to_string(meta).expect("layout metadata serialises");
        let created_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        session
            .query_unpaged(
                format!(
                    "INSERT INTO {ks}.generations (generation, partition_users, friend_copies, layout, next_pos, created_ms) \
                     VALUES (?, ?, ?, ?, ?, ?)"
                ),
                (
                    generation as i32,
                    partition_users as i64,
                    friend_copies as i32,
                    layout,
                    order.len() as i64,
                    created_ms,
                ),
            )
            .await
            .map_err(|e| driver("writing the new generation's row", e))?;
        let switched = session
            .execute_unpaged(&self.fixed.store_switch, (generation as i32, old.generation as i32))
            .await
            .map_err(|e| driver("switching the store's generation", e))?
            .into_rows_result()
            .map_err(|e| bad_rows("switch", e))?;
        let (applied, found) = super::rows::lwt_outcome(&switched, "generation")?;
        if !applied {
            return Err(Error::Cluster(format!(
                "another relayout switched the store to generation {} first; generation {generation} was written and is unused",
                found.unwrap_or(0)
            )));
        }
        Ok((load_generation(session, &self.fixed, ks, generation).await?, copies))
    }

    /// Follows a switch made by another process: re-reads the store's row at most once a
    /// second and loads the generation it names.
    pub(crate) fn refresh(&self) -> Result<(), StoreError> {
        {
            let mut last = self.checked.lock().unwrap_or_else(PoisonError::into_inner);
            if last.elapsed() < std::time::Duration::from_secs(1) {
                return Ok(());
            }
            *last = Instant::now();
        }
        let current = self.gen_now().generation;
        let stored = self.wait(async {
            let rows = self
                .session()
                .execute_unpaged(&self.fixed.store_get, ())
                .await
                .map_err(|e| driver("reading the store's row", e))?
                .into_rows_result()
                .map_err(|e| bad_rows("store row", e))?;
            Ok::<_, StoreError>(
                rows.maybe_first_row::<(Option<i32>, Option<i32>)>()
                    .map_err(|e| bad_rows("store row", e))?
                    .and_then(|r| r.1),
            )
        })?;
        if let Some(g) = stored
            && g as u32 > current
        {
            let ks = self.keyspace.clone();
            let next = self
                .wait(load_generation(self.session(), &self.fixed, &ks, g as u32))
                .map_err(|e| StoreError::Backend { engine: "cassandra", detail: e.to_string() })?;
            let mut cur = self.current.write().unwrap_or_else(PoisonError::into_inner);
            if cur.generation < next.generation {
                *cur = Arc::new(next);
            }
        }
        Ok(())
    }
}
