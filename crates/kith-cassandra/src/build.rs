//! Building a store on a cluster: the schema, then every user's rows written with prepared
//! statements, many in flight, profiles and data blocks grouped by partition into unlogged
//! batches (each batch one partition, so one replica set applies it).

use std::collections::BTreeMap;
use std::time::Instant;

use futures_util::{StreamExt, TryStreamExt, stream};
use kith_graph::Graph;
use kith_layout::Layout;
use kith_store::{DataSpec, LayoutMeta, synthetic_data, synthetic_profile};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::schema;
use crate::store::copies::needed_copies;
use crate::store::rows::key;
use crate::store::{
    CassandraOptions, CassandraStore, DATA_CHUNK_BYTES, Fixed, GenStatements, Writes, i,
};

/// Requests one build keeps in flight.
const IN_FLIGHT: usize = 96;

/// How [`build`] places and fills users.
#[derive(Clone, Debug)]
pub struct BuildConfig {
    /// Users per partition: runs of this many consecutive layout positions share one
    /// partition. 1 is one partition per user (`hash`, a Cassandra user's default).
    pub partition_users: u64,
    /// Friend copies: a partition holding at most this many of a user's friends is read from
    /// copies in the user's own partition (0: none); see `docs/cassandra.md`.
    pub friend_copies: u32,
    /// Data block sizes.
    pub data: DataSpec,
    /// Seed of profiles and data.
    pub seed: u64,
    /// Replication factor of a keyspace the build creates (one it finds keeps its own).
    /// Default min(3, nodes the driver sees).
    pub replication: Option<usize>,
    /// Show progress.
    pub progress: bool,
}

impl Default for BuildConfig {
    fn default() -> BuildConfig {
        BuildConfig {
            partition_users: 1,
            friend_copies: 0,
            data: DataSpec::Fixed(40),
            seed: 1,
            replication: None,
            progress: false,
        }
    }
}

/// What a build did.
#[derive(Clone, Debug, Serialize)]
pub struct BuildReport {
    /// Users written.
    pub users: u64,
    /// Friendship entries written (each friendship twice).
    pub friend_entries: u64,
    /// Partitions of the profile table.
    pub partitions: u64,
    /// Friend copies written (profile rows besides the users' own).
    pub copies: u64,
    /// Seconds writing rows (schema excluded).
    pub load_seconds: f64,
    /// Users per second while writing rows.
    pub users_per_second: f64,
    /// Seconds creating the keyspace and tables.
    pub schema_seconds: f64,
}

/// Builds a store in `options.keyspace` holding `graph`'s users in `layout`'s order, with
/// synthetic profiles and data blocks, and opens it. A keyspace that already holds a store is
/// refused ([`drop_store`] removes one).
pub fn build(
    options: &CassandraOptions,
    graph: &Graph,
    layout: &Layout,
    mut layout_meta: LayoutMeta,
    config: &BuildConfig,
) -> Result<(CassandraStore, BuildReport)> {
    if graph.is_directed() {
        return Err(kith_store::Error::Invalid(
            "friendships are symmetric; build from an undirected graph".into(),
        )
        .into());
    }
    if layout.len() != graph.num_nodes() {
        return Err(kith_store::Error::Invalid(format!(
            "the layout places {} users but the graph has {}",
            layout.len(),
            graph.num_nodes()
        ))
        .into());
    }
    if config.partition_users == 0 {
        return Err(Error::Cluster("--partition-users must be at least 1".into()));
    }
    schema::check_keyspace(&options.keyspace)?;
    let ks = options.keyspace.as_str();
    layout_meta.users = graph.num_nodes() as u64;
    layout_meta.written_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let rt = schema::runtime()?;
    let report = rt.block_on(async {
        let t0 = Instant::now();
        let session = schema::connect(&options.hosts).await?;
        let nodes = session.get_cluster_state().get_nodes_info().len();
        let rf = config.replication.unwrap_or(nodes.min(3)).max(1);
        schema::ddl(
            &session,
            &format!(
                "CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = \
                 {{'class': 'SimpleStrategy', 'replication_factor': {rf}}} AND durable_writes = true"
            ),
        )
        .await?;
        for cql in schema::fixed_tables(ks) {
            schema::ddl(&session, &cql).await?;
        }
        let fixed = Fixed::prepare(&session, ks).await?;
        let existing = session
            .execute_unpaged(&fixed.store_get, ())
            .await
            .map_err(|e| Error::Cluster(format!("reading keyspace {ks}: {e}")))?
            .into_rows_result()
            .map_err(|e| Error::Cluster(e.to_string()))?
            .rows_num();
        if existing > 0 {
            return Err(Error::Cluster(format!(
                "keyspace {ks} already holds a kith store; pick another --keyspace, or drop it first (`kith store drop --cassandra … --keyspace {ks}`)"
            )));
        }
        for cql in schema::generation_tables(ks, 1) {
            schema::ddl(&session, &cql).await?;
        }
        let st = GenStatements::prepare(&session, ks, 1).await?;
        let schema_seconds = t0.elapsed().as_secs_f64();

        let t1 = Instant::now();
        let n = graph.num_nodes();
        let k = config.partition_users;
        let progress = crate::progress::bar(config.progress, n as u64, "writing users");
        let copied_to = needed_copies(
            graph,
            layout.order(),
            |f| u64::from(layout.position(f)),
            k,
            config.friend_copies,
        );
        let mut copies_in: Vec<Vec<u64>> = vec![Vec::new(); n.div_ceil(k as usize)];
        for (p, parts) in copied_to.iter().enumerate() {
            for &part in parts {
                copies_in[part as usize].push(p as u64);
            }
        }
        let copies = copies_in.iter().map(|c| c.len() as u64).sum::<u64>();
        // Index rows: one partition each, written individually, many in flight.
        let entries = (0..n).map(|p| {
            let v = layout.order()[p];
            let uid = graph.original_id(v);
            let friends: BTreeMap<i64, i64> = graph
                .neighbors(v)
                .iter()
                .map(|&f| (key(graph.original_id(f)), i64::from(layout.position(f))))
                .collect();
            let bytes = config.data.size_of(uid, config.seed);
            (uid, p as i64, bytes as i64, friends, copied_to[p].clone())
        });
        let st_ref = &st;
        let session_ref = &session;
        stream::iter(entries)
            .map(|(uid, pos, bytes, friends, copied)| async move {
                session_ref
                    .execute_unpaged(&st_ref.index_load, (key(uid), pos, bytes, friends, copied))
                    .await
                    .map_err(|e| Error::Store(crate::error::driver("writing an index row", e)))
            })
            .buffer_unordered(IN_FLIGHT)
            .try_for_each(|_| async { Ok(()) })
            .await?;
        // Profiles, copies and data: one unlogged batch per partition (split if large).
        let parts = (n as u64).div_ceil(k);
        let batches = (0..parts).flat_map(|part| {
            let mut out = Vec::new();
            let mut w = Writes::unlogged();
            let mut bytes = 0usize;
            let (lo, hi) = (part * k, ((part + 1) * k).min(n as u64));
            for p in lo..hi {
                let v = layout.order()[p as usize];
                let uid = graph.original_id(v);
                let profile = synthetic_profile(uid, config.seed).encode().expect("synthetic profiles fit");
                bytes += profile.len();
                w.push(&st.user_put, (part as i64, i(p), key(uid), profile));
                let data = synthetic_data(uid, config.data.size_of(uid, config.seed), config.seed);
                for (c, chunk) in data.chunks(DATA_CHUNK_BYTES).enumerate() {
                    bytes += chunk.len();
                    w.push(&st.data_put, (part as i64, i(p), c as i32, chunk.to_vec()));
                }
                if bytes > 1 << 20 {
                    out.push((std::mem::replace(&mut w, Writes::unlogged()), 0u64));
                    bytes = 0;
                }
            }
            for &p in &copies_in[part as usize] {
                let uid = graph.original_id(layout.order()[p as usize]);
                let profile = synthetic_profile(uid, config.seed).encode().expect("synthetic profiles fit");
                bytes += profile.len();
                w.push(&st.user_put, (part as i64, i(p), key(uid), profile));
                if bytes > 1 << 20 {
                    out.push((std::mem::replace(&mut w, Writes::unlogged()), 0u64));
                    bytes = 0;
                }
            }
            out.push((w, hi - lo));
            out
        });
        stream::iter(batches)
            .map(|(w, users)| async move { w.run(session_ref, "writing profiles and data").await.map(|()| users) })
            .buffer_unordered(IN_FLIGHT / 4)
            .map_err(Error::Store)
            .try_for_each(|users| {
                progress.inc(users);
                async { Ok(()) }
            })
            .await?;
        progress.finish_and_clear();
        let meta = serde_json::to_string(&layout_meta).expect("layout metadata serialises");
        let created_ms =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
        session
            .query_unpaged(
                format!(
                    "INSERT INTO {ks}.generations (generation, partition_users, friend_copies, layout, next_pos, created_ms) \
                     VALUES (1, ?, ?, ?, ?, ?)"
                ),
                (k as i64, config.friend_copies as i32, meta, n as i64, created_ms),
            )
            .await
            .map_err(|e| Error::Store(crate::error::driver("writing the generation's row", e)))?;
        // Last: the store's row, which marks the build finished.
        session
            .query_unpaged(
                format!("INSERT INTO {ks}.store (id, format, generation) VALUES (0, ?, 1)"),
                (schema::FORMAT,),
            )
            .await
            .map_err(|e| Error::Store(crate::error::driver("writing the store's row", e)))?;
        let load_seconds = t1.elapsed().as_secs_f64();
        Ok::<_, Error>(BuildReport {
            users: n as u64,
            friend_entries: (0..n as u32).map(|v| graph.neighbors(v).len() as u64).sum(),
            partitions: parts,
            copies,
            load_seconds,
            users_per_second: n as f64 / load_seconds.max(1e-9),
            schema_seconds,
        })
    })?;
    drop(rt);
    let store = CassandraStore::open(options)?;
    Ok((store, report))
}

/// Drops the keyspace `options.keyspace` with everything in it.
pub fn drop_store(options: &CassandraOptions) -> Result<()> {
    schema::check_keyspace(&options.keyspace)?;
    let rt = schema::runtime()?;
    rt.block_on(async {
        let session = schema::connect(&options.hosts).await?;
        schema::ddl(&session, &format!("DROP KEYSPACE IF EXISTS {}", options.keyspace)).await
    })
}
