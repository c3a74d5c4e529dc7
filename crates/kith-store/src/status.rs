//! The store's graph, the current layout's cost and how far it has drifted from a fresh one.

use kith_graph::{Graph, VertexId};
use kith_layout::{Layout, LayoutConfig, metrics::mean_pages_of};
use rocksdb::{Direction, IteratorMode};
use serde::Serialize;

use crate::error::Result;
use crate::keys;
use crate::meta::LayoutMeta;
use crate::record;
use crate::store::Store;

/// The friendship graph as stored, with where each user is.
#[derive(Debug)]
pub struct StoreGraph {
    /// Users as vertices (original ids = uids), friendships as edges.
    pub graph: Graph,
    /// Vertices in position order.
    pub order: Vec<VertexId>,
    /// Each vertex's stored position.
    pub position: Vec<u64>,
    /// The generation read.
    pub generation: u32,
}

/// `kith store status`.
#[derive(Clone, Debug, Serialize)]
pub struct Status {
    /// Users stored.
    pub users: u64,
    /// Friendships (each counted once).
    pub friendships: u64,
    /// The current generation (1 = as built).
    pub generation: u32,
    /// How the current layout was made.
    pub layout: LayoutMeta,
    /// Users appended after the last layout.
    pub appended_since_layout: u64,
    /// Linear-arrangement cost of the stored order (Bondhu's eq. 2, unit weights).
    pub layout_cost: u64,
    /// The same for a fresh layout of the current graph by the same method.
    pub fresh_layout_cost: u64,
    /// `layout_cost / fresh_layout_cost - 1`: 0 = as good as fresh.
    pub degradation: f64,
    /// Modelled pages per "list all friends" of the stored order, at the mean data size.
    pub pages_mean: f64,
    /// The same for the fresh layout.
    pub fresh_pages_mean: f64,
    /// The record size the pages were modelled at (a data entry in a block).
    pub record_bytes: u64,
    /// The page size (a block's worth of entries).
    pub page_bytes: u64,
    /// Bytes of every file in the store's directory.
    pub bytes_on_disk: u64,
    /// Seconds the fresh layout took to compute.
    pub fresh_seconds: f64,
}

/// LA cost of placing `order[p]` at position `p`.
pub(crate) fn la_cost_of(graph: &Graph, order: &[VertexId]) -> u64 {
    let mut pos = vec![0u64; graph.num_nodes()];
    for (p, &v) in order.iter().enumerate() {
        pos[v as usize] = p as u64;
    }
    let mut cost = 0;
    for v in 0..graph.num_nodes() {
        for &w in graph.neighbors(v as VertexId) {
            if (w as usize) > v {
                cost += pos[v].abs_diff(pos[w as usize]);
            }
        }
    }
    cost
}

/// Bytes of every file under `dir`, recursively (0 for what cannot be read).
pub fn dir_bytes(dir: &std::path::Path) -> u64 {
    let mut total = 0;
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    for e in entries.flatten() {
        match e.metadata() {
            Ok(m) if m.is_dir() => total += dir_bytes(&e.path()),
            Ok(m) => total += m.len(),
            Err(_) => {}
        }
    }
    total
}

impl Store {
    /// Reads the friendship graph and positions of the current generation from one view.
    pub fn graph(&self) -> Result<StoreGraph> {
        let view = self.view();
        let g = view.generation;
        // The index, ascending by uid: dense ids, positions and friend lists in one scan.
        let mut uids = Vec::new();
        let mut positions = Vec::new();
        let mut lists = Vec::new();
        let mut read = view.read_options();
        read.set_iterate_upper_bound(keys::range_end(keys::INDEX, g).to_vec());
        let start = keys::range_start(keys::INDEX, g);
        for item in self.db.iterator_opt(IteratorMode::From(&start, Direction::Forward), read) {
            let (k, v) = item?;
            let Some((_, _, uid, _)) = keys::parse(&k) else {
                return Err(record::corrupt(&k, "malformed index key".into()));
            };
            let (pos, friends) = record::decode_entry(&k, &v)?;
            uids.push(uid);
            positions.push(pos);
            lists.push((k, friends));
        }
        let mut edges = Vec::new();
        for (me, (k, friends)) in lists.iter().enumerate() {
            for f in friends {
                let w = uids.binary_search(&f.uid).map_err(|_| {
                    record::corrupt(k, format!("friend {} is not in the index", f.uid))
                })?;
                if me < w {
                    edges.push((me as VertexId, w as VertexId));
                }
            }
        }
        let mut by_position: Vec<(u64, VertexId)> =
            positions.iter().enumerate().map(|(v, &p)| (p, v as VertexId)).collect();
        by_position.sort_unstable();
        let order = by_position.iter().map(|&(_, v)| v).collect();
        let graph = Graph::from_edges(uids, false, edges);
        Ok(StoreGraph { graph, order, position: positions, generation: g })
    }

    /// Users, friendships, the layout's cost now and that of a fresh layout of the same
    /// method (or of `fresh`), the modelled pages of both, and the space used.
    pub fn status(&self, fresh: Option<LayoutConfig>) -> Result<Status> {
        let sg = self.graph()?;
        let meta = self.layout_meta()?;
        let config = match fresh {
            Some(config) => config,
            None => meta.config().map_err(|e| e.in_store(&self.path))?,
        };
        let (record_bytes, page_bytes) = (config.record_bytes, config.page_bytes);
        let current = Layout::from_order(sg.order.clone())?;
        let t = std::time::Instant::now();
        let fresh = kith_layout::compute(&sg.graph, &config)?.layout;
        let fresh_seconds = t.elapsed().as_secs_f64();
        let layout_cost = kith_layout::la_cost(&sg.graph, &current);
        let fresh_layout_cost = kith_layout::la_cost(&sg.graph, &fresh);
        let degradation = if fresh_layout_cost == 0 {
            0.0
        } else {
            layout_cost as f64 / fresh_layout_cost as f64 - 1.0
        };
        Ok(Status {
            users: sg.graph.num_nodes() as u64,
            friendships: sg.graph.num_edges(),
            generation: sg.generation,
            appended_since_layout: (sg.graph.num_nodes() as u64).saturating_sub(meta.users),
            layout: meta,
            layout_cost,
            fresh_layout_cost,
            degradation,
            pages_mean: mean_pages_of(&sg.graph, &current, record_bytes, page_bytes),
            fresh_pages_mean: mean_pages_of(&sg.graph, &fresh, record_bytes, page_bytes),
            record_bytes,
            page_bytes,
            bytes_on_disk: dir_bytes(&self.path),
            fresh_seconds,
        })
    }
}
