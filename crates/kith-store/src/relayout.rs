//! Relayout: a new layout of the current graph written as the next generation and switched
//! to atomically while readers keep reading and writers wait only for the rewrite.

use std::sync::PoisonError;

use kith_graph::VertexId;
use kith_layout::Layout;
use rocksdb::ReadOptions;

use crate::error::{Error, Result};
use crate::generation::{Plan, ingest, now_unix, write_generation};
use crate::keys;
use crate::meta::LayoutMeta;
use crate::progress::Progress;
use crate::record;
use crate::status::la_cost_of;
use crate::store::Store;

/// The order a relayout writes: `layout` (computed on `before`) mapped onto the graph `now`
/// read under the writers' lock, then every user who arrived since, in `now_order` (their
/// current order). Returns the order and how many users the layout placed. Every engine's
/// relayout uses it.
pub fn relayout_order(
    before: &kith_graph::Graph,
    layout: &Layout,
    now: &kith_graph::Graph,
    now_order: &[VertexId],
) -> (Vec<VertexId>, u64) {
    let mut order: Vec<VertexId> = Vec::with_capacity(now.num_nodes());
    let mut placed = vec![false; now.num_nodes()];
    for &v in layout.order() {
        if let Some(w) = now.dense_id(before.original_id(v)) {
            order.push(w);
            placed[w as usize] = true;
        }
    }
    let laid = order.len() as u64;
    order.extend(now_order.iter().copied().filter(|&w| !placed[w as usize]));
    (order, laid)
}

/// How `relayout` orders users.
#[derive(Debug)]
pub enum NewLayout<'a> {
    /// A layout computed by the caller on [`Store::graph`]'s graph.
    Given(&'a Layout, LayoutMeta),
    /// Compute one with this configuration.
    Compute(kith_layout::LayoutConfig),
}

/// What a relayout did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RelayoutReport {
    /// The generation before and after.
    pub from_generation: u32,
    /// The new generation.
    pub to_generation: u32,
    /// Users placed by the layout.
    pub users: u64,
    /// Users added while the layout was computed, appended after it.
    pub appended: u64,
    /// LA cost before and after.
    pub cost_before: u64,
    /// LA cost after.
    pub cost_after: u64,
    /// Seconds computing the layout (writers not blocked).
    pub compute_seconds: f64,
    /// Seconds writing and ingesting (writers blocked, readers not).
    pub rewrite_seconds: f64,
}

impl Store {
    /// Rewrites every record in a new order and switches to it atomically. Readers keep
    /// reading the old generation until the switch and the new one after it; writers wait
    /// only while the records are rewritten, not while the layout is computed.
    /// `progress` draws a bar on the terminal.
    pub fn relayout(&self, new: NewLayout<'_>, progress: bool) -> Result<RelayoutReport> {
        self.relayout_reporting(new, &Progress::terminal(progress))
    }

    /// [`Store::relayout`], reporting its phases to `progress`: `reading the graph`,
    /// `computing the layout`, `waiting for writers`, `data`, `index` and `profiles` (counted
    /// in records), `switching`, `done`.
    pub fn relayout_reporting(
        &self,
        new: NewLayout<'_>,
        progress: &Progress,
    ) -> Result<RelayoutReport> {
        let t0 = std::time::Instant::now();
        progress.phase("reading the graph", 0);
        let before = self.graph()?;
        let (layout, mut meta) = match new {
            NewLayout::Given(l, m) => (l.clone(), m),
            NewLayout::Compute(config) => {
                progress.phase("computing the layout", 0);
                let computed = kith_layout::compute(&before.graph, &config)?;
                (computed.layout, LayoutMeta::of(&config))
            }
        };
        if layout.len() != before.graph.num_nodes() {
            return Err(Error::Invalid(format!(
                "the layout places {} users but the store has {}",
                layout.len(),
                before.graph.num_nodes()
            )));
        }
        let compute_seconds = t0.elapsed().as_secs_f64();
        let t1 = std::time::Instant::now();
        progress.phase("waiting for writers", 0);
        let _exclusive = self.writers.write().unwrap_or_else(PoisonError::into_inner);
        let now = self.graph()?;
        let (order, laid) = relayout_order(&before.graph, &layout, &now.graph, &now.order);
        let old = now.generation;
        let new_generation = old
            .checked_add(1)
            .ok_or_else(|| Error::Invalid("generation counter exhausted".into()))?;
        meta.users = laid;
        meta.written_unix = now_unix();
        let shape = crate::store::BlockShape::of(&meta);
        let roll_every = shape.records;
        let plan = Plan {
            generation: new_generation,
            chunk_bytes: self.chunk_bytes,
            graph: &now.graph,
            order: &order,
            layout: meta,
            format: false,
            roll_every,
        };
        let read = ReadOptions::default();
        // Writers are excluded and only a relayout flips the generation, so this view reads
        // the old generation as it stands.
        let view = self.view();
        debug_assert_eq!(view.generation, old);
        let tmp = self.path.join("ingest");
        let files = write_generation(
            &self.options,
            &tmp,
            &plan,
            |v| {
                let pos = now.position[v as usize];
                let key = keys::profile(old, pos);
                let (_, profile) = self
                    .header_at(old, pos, &read)?
                    .ok_or_else(|| record::corrupt(&key, "missing profile".into()))?;
                profile.encode()
            },
            |v| {
                let pos = now.position[v as usize];
                Ok(self.read_data_at(&view, &[pos], None)?.pop().expect("one"))
            },
            progress,
        )?;
        progress.phase("switching", 0);
        {
            // Ingestion is atomic and carries the new generation number in its metadata;
            // the in-memory flip happens under the readers' lock right after it.
            let mut current = self.generation.write().unwrap_or_else(PoisonError::into_inner);
            ingest(&self.db, &files)?;
            *current = new_generation;
            *self.shape.write().unwrap_or_else(PoisonError::into_inner) = shape;
            self.next_position.store(order.len() as u64, std::sync::atomic::Ordering::SeqCst);
        }
        let _ = std::fs::remove_dir_all(&tmp);
        // Readers that took the old generation hold snapshots that predate these deletions.
        let mut batch = rocksdb::WriteBatch::default();
        for tag in keys::GENERATION_TAGS {
            batch.delete_range(keys::range_start(tag, old), keys::range_end(tag, old));
        }
        self.write(batch)?;
        for tag in keys::GENERATION_TAGS {
            let (lo, hi) = (keys::range_start(tag, old), keys::range_end(tag, old));
            self.db.compact_range(Some(lo), Some(hi));
        }
        let after = la_cost_of(&now.graph, &order);
        progress.phase("done", 0);
        Ok(RelayoutReport {
            from_generation: old,
            to_generation: new_generation,
            users: laid,
            appended: order.len() as u64 - laid,
            cost_before: la_cost_of(&now.graph, &now.order),
            cost_after: after,
            compute_seconds,
            rewrite_seconds: t1.elapsed().as_secs_f64(),
        })
    }
}
