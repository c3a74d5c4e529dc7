//! Writing a whole generation of records with SstFileWriter and ingesting it atomically:
//! how a store is built and how it is relaid out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::PoisonError;
use std::time::{SystemTime, UNIX_EPOCH};

use indicatif::{ProgressBar, ProgressStyle};
use kith_graph::{Graph, VertexId};
use kith_layout::Layout;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use rocksdb::{DB, IngestExternalFileOptions, Options, ReadOptions, SstFileWriter};

use crate::error::{Error, Result};
use crate::keys;
use crate::page_model::PageModel;
use crate::record::{self, MAX_DATA_BYTES, Profile};
use crate::store::{
    CacheMode, DEFAULT_CHUNK_BYTES, LayoutMeta, OpenOptions, Store, db_options, meta_format,
    meta_layout, meta_u32,
};

/// SST files roll over at this size, so no file is unwieldy.
const SST_ROLL_BYTES: u64 = 256 << 20;

/// The sizes of the users' data blocks in a built store.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DataSpec {
    /// Every block has this many bytes.
    Fixed(u64),
    /// Power-law sizes between the bounds (exponent 2, as file and post sizes are), drawn
    /// per user from the seed.
    PowerLaw {
        /// The smallest block.
        min: u64,
        /// The largest block.
        max: u64,
    },
}

impl DataSpec {
    /// Parses `N` or `powerlaw:MIN,MAX`.
    pub fn parse(s: &str) -> Result<DataSpec> {
        let bad = |why: &str| Error::Invalid(format!("data size {s:?}: {why}"));
        let spec = if let Some(rest) = s.strip_prefix("powerlaw:") {
            let (a, b) = rest.split_once(',').ok_or_else(|| bad("expected powerlaw:MIN,MAX"))?;
            let min = a.trim().parse().map_err(|_| bad("MIN is not a byte count"))?;
            let max = b.trim().parse().map_err(|_| bad("MAX is not a byte count"))?;
            if min == 0 || min > max {
                return Err(bad("need 0 < MIN <= MAX"));
            }
            DataSpec::PowerLaw { min, max }
        } else {
            DataSpec::Fixed(s.trim().parse().map_err(|_| bad("not a byte count"))?)
        };
        let largest = match spec {
            DataSpec::Fixed(n) => n,
            DataSpec::PowerLaw { max, .. } => max,
        };
        if largest > MAX_DATA_BYTES {
            return Err(Error::TooLarge {
                what: "data block bytes",
                got: largest,
                limit: MAX_DATA_BYTES,
            });
        }
        Ok(spec)
    }

    /// The size of `uid`'s block.
    pub fn size_of(&self, uid: u64, seed: u64) -> u64 {
        match *self {
            DataSpec::Fixed(n) => n,
            DataSpec::PowerLaw { min, max } => {
                let mut rng =
                    Pcg64Mcg::seed_from_u64(seed ^ uid.wrapping_mul(0x9e37_79b9_7f4a_7c15));
                // Inverse CDF of p(x) ~ x^-2 on [min, max].
                let u: f64 = rng.random();
                let (a, b) = (1.0 / min as f64, 1.0 / max as f64);
                let x = 1.0 / (a - u * (a - b));
                (x.round() as u64).clamp(min, max)
            }
        }
    }

    /// The mean block size (exact for fixed, by the formula for the power law).
    pub fn mean(&self) -> f64 {
        match *self {
            DataSpec::Fixed(n) => n as f64,
            DataSpec::PowerLaw { min, max } => {
                let (a, b) = (min as f64, max as f64);
                if a == b { a } else { (b / a).ln() / (1.0 / a - 1.0 / b) }
            }
        }
    }
}

/// The bytes of `uid`'s synthetic data block: a seeded stream, so verification can
/// regenerate it.
pub fn synthetic_data(uid: u64, len: u64, seed: u64) -> Vec<u8> {
    let mut rng = Pcg64Mcg::seed_from_u64(seed.rotate_left(17) ^ uid);
    let mut out = vec![0u8; len as usize];
    rng.fill(&mut out[..]);
    out
}

/// The synthetic profile of a built user.
pub fn synthetic_profile(uid: u64, seed: u64) -> Profile {
    let mut rng = Pcg64Mcg::seed_from_u64(seed.rotate_left(29) ^ uid);
    Profile {
        name: format!("user {uid}"),
        age: Some(rng.random_range(13..90)),
        ..Profile::default()
    }
}

/// Options for [`build`].
#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// Data block sizes.
    pub data: DataSpec,
    /// Chunk size for data blocks.
    pub chunk_bytes: u32,
    /// Seed of profiles and data.
    pub seed: u64,
    /// Show a progress bar.
    pub progress: bool,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            data: DataSpec::Fixed(40),
            chunk_bytes: DEFAULT_CHUNK_BYTES,
            seed: 1,
            progress: false,
        }
    }
}

/// Writes SST files, rolling to a new one every [`SST_ROLL_BYTES`].
struct SstSink<'o> {
    options: &'o Options,
    dir: PathBuf,
    writer: Option<SstFileWriter<'o>>,
    files: Vec<PathBuf>,
}

impl<'o> SstSink<'o> {
    fn new(options: &'o Options, dir: &Path) -> Result<SstSink<'o>> {
        if dir.exists() {
            std::fs::remove_dir_all(dir)
                .map_err(Error::io(format!("clearing {}", dir.display())))?;
        }
        std::fs::create_dir_all(dir).map_err(Error::io(format!("creating {}", dir.display())))?;
        Ok(SstSink { options, dir: dir.to_path_buf(), writer: None, files: Vec::new() })
    }

    /// Adds a key; `may_roll` says whether a new file may start here.
    fn put(&mut self, key: &[u8], value: &[u8], may_roll: bool) -> Result<()> {
        if may_roll && self.writer.as_ref().is_some_and(|w| w.file_size() >= SST_ROLL_BYTES) {
            self.finish_file()?;
        }
        if self.writer.is_none() {
            let path = self.dir.join(format!("{:06}.sst", self.files.len()));
            let w = SstFileWriter::create(self.options);
            w.open(&path)?;
            self.files.push(path);
            self.writer = Some(w);
        }
        self.writer.as_mut().expect("opened").put(key, value)?;
        Ok(())
    }

    fn finish_file(&mut self) -> Result<()> {
        if let Some(mut w) = self.writer.take() {
            w.finish()?;
        }
        Ok(())
    }

    fn finish(mut self) -> Result<Vec<PathBuf>> {
        self.finish_file()?;
        Ok(self.files)
    }
}

/// What a generation holds, in the new order.
pub(crate) struct Plan<'g> {
    pub(crate) generation: u32,
    pub(crate) chunk_bytes: u32,
    pub(crate) graph: &'g Graph,
    /// `order[p]` is the vertex at position `p`.
    pub(crate) order: &'g [VertexId],
    pub(crate) layout: LayoutMeta,
    pub(crate) format: bool,
    /// Files roll only at positions that are multiples of this, so a new file's first block
    /// starts where the layout's page does.
    pub(crate) roll_every: u64,
}

/// Writes a generation's SST files into `tmp`: data chunks, friend lists, index, metadata and
/// profiles, in key order. `profile` and `data` give a vertex's encoded profile and block.
pub(crate) fn write_generation(
    options: &Options,
    tmp: &Path,
    plan: &Plan<'_>,
    mut profile: impl FnMut(VertexId) -> Result<Vec<u8>>,
    mut data: impl FnMut(VertexId) -> Result<Vec<u8>>,
    progress: bool,
) -> Result<Vec<PathBuf>> {
    let graph = plan.graph;
    let n = plan.order.len();
    let mut position = vec![0u64; graph.num_nodes()];
    for (p, &v) in plan.order.iter().enumerate() {
        position[v as usize] = p as u64;
    }
    let bar = if progress { ProgressBar::new(3 * n as u64) } else { ProgressBar::hidden() };
    bar.set_style(
        ProgressStyle::with_template("{msg:>12} [{bar:40}] {pos}/{len} records ({eta})")
            .expect("template")
            .progress_chars("=> "),
    );
    let mut sink = SstSink::new(options, tmp)?;
    let g = plan.generation;
    bar.set_message("data");
    for (p, &v) in plan.order.iter().enumerate() {
        let block = data(v)?;
        if block.len() as u64 > MAX_DATA_BYTES {
            return Err(Error::TooLarge {
                what: "data block bytes",
                got: block.len() as u64,
                limit: MAX_DATA_BYTES,
            });
        }
        let aligned = (p as u64).is_multiple_of(plan.roll_every.max(1));
        for (c, (k, value)) in
            record::encode_chunks(g, p as u64, &block, plan.chunk_bytes).into_iter().enumerate()
        {
            sink.put(&k, &value, c == 0 && aligned)?;
        }
        bar.inc(1);
    }
    bar.set_message("index");
    // Dense ids ascend with uids, so the index is written in key order, and each neighbour
    // list is already sorted by uid.
    for v in 0..graph.num_nodes() as VertexId {
        let list: Vec<record::Friend> = graph
            .neighbors(v)
            .iter()
            .map(|&w| record::Friend { uid: graph.original_id(w), position: position[w as usize] })
            .collect();
        let k = keys::index(g, graph.original_id(v));
        sink.put(&k, &record::encode_entry(&k, position[v as usize], &list), true)?;
        bar.inc(1);
    }
    let mut meta: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let entries = [meta_u32("generation", g), meta_layout(&plan.layout)];
    meta.extend(entries);
    if plan.format {
        meta.extend([meta_format(), meta_u32("chunk_bytes", plan.chunk_bytes)]);
    }
    for (k, v) in &meta {
        sink.put(k, v, true)?;
    }
    bar.set_message("profiles");
    for (p, &v) in plan.order.iter().enumerate() {
        let k = keys::profile(g, p as u64);
        let encoded = profile(v)?;
        sink.put(&k, &record::encode_header(&k, graph.original_id(v), &encoded), true)?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    sink.finish()
}

pub(crate) fn ingest(db: &DB, files: &[PathBuf]) -> Result<()> {
    let mut opts = IngestExternalFileOptions::default();
    opts.set_move_files(true);
    db.ingest_external_file_opts(&opts, files.to_vec())?;
    Ok(())
}

pub(crate) fn now_unix() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Builds a new store in `dir` holding `graph`'s users in `layout`'s order, with synthetic
/// profiles and data blocks.
pub fn build(
    dir: &Path,
    graph: &Graph,
    layout: &Layout,
    mut layout_meta: LayoutMeta,
    options: &BuildOptions,
) -> Result<Store> {
    if graph.is_directed() {
        return Err(Error::Invalid(
            "friendships are symmetric; build from an undirected graph".into(),
        ));
    }
    if layout.len() != graph.num_nodes() {
        return Err(Error::Invalid(format!(
            "the layout places {} users but the graph has {}",
            layout.len(),
            graph.num_nodes()
        )));
    }
    if options.chunk_bytes == 0 || u64::from(options.chunk_bytes) > MAX_DATA_BYTES {
        return Err(Error::Invalid(format!(
            "chunk size {} outside 1..={MAX_DATA_BYTES}",
            options.chunk_bytes
        )));
    }
    if dir.exists()
        && std::fs::read_dir(dir)
            .map_err(Error::io(format!("reading {}", dir.display())))?
            .next()
            .is_some()
    {
        return Err(Error::Exists(dir.to_path_buf()));
    }
    let cache = rocksdb::Cache::new_lru_cache(8 << 20);
    let mut db_opts = db_options(CacheMode::Warm, &cache);
    db_opts.create_if_missing(true);
    {
        let db = DB::open(&db_opts, dir)?;
        layout_meta.users = graph.num_nodes() as u64;
        layout_meta.written_unix = now_unix();
        let plan = Plan {
            generation: 1,
            chunk_bytes: options.chunk_bytes,
            graph,
            order: layout.order(),
            roll_every: match options.data {
                DataSpec::Fixed(n) => PageModel::for_data(n, options.chunk_bytes).records_per_block,
                DataSpec::PowerLaw { .. } => 1,
            },
            layout: layout_meta,
            format: true,
        };
        let seed = options.seed;
        let spec = options.data;
        let tmp = dir.join("ingest");
        let files = write_generation(
            &db_opts,
            &tmp,
            &plan,
            |v| synthetic_profile(graph.original_id(v), seed).encode(),
            |v| {
                let uid = graph.original_id(v);
                Ok(synthetic_data(uid, spec.size_of(uid, seed), seed))
            },
            options.progress,
        )?;
        ingest(&db, &files)?;
        db.flush_wal(true)?;
        let _ = std::fs::remove_dir_all(&tmp);
    }
    Store::open(dir, &OpenOptions::default())
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
    pub fn relayout(&self, new: NewLayout<'_>, progress: bool) -> Result<RelayoutReport> {
        let t0 = std::time::Instant::now();
        let before = self.graph()?;
        let (layout, mut meta) = match new {
            NewLayout::Given(l, m) => (l.clone(), m),
            NewLayout::Compute(config) => {
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
        let _exclusive = self.writers.write().unwrap_or_else(PoisonError::into_inner);
        let now = self.graph()?;
        // The computed order, then anyone who arrived since, in their current order.
        let mut order: Vec<VertexId> = Vec::with_capacity(now.graph.num_nodes());
        let mut placed = vec![false; now.graph.num_nodes()];
        for &v in layout.order() {
            if let Some(w) = now.graph.dense_id(before.graph.original_id(v)) {
                order.push(w);
                placed[w as usize] = true;
            }
        }
        let laid = order.len() as u64;
        for &w in &now.order {
            if !placed[w as usize] {
                order.push(w);
            }
        }
        let old = now.generation;
        let new_generation = old
            .checked_add(1)
            .ok_or_else(|| Error::Invalid("generation counter exhausted".into()))?;
        meta.users = laid;
        meta.written_unix = now_unix();
        let roll_every = match (meta.page_bytes, meta.record_bytes) {
            (page, record) if record > 0 && page > record => page / record,
            _ => 1,
        };
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
                Ok(self.read_data_at(old, &[pos], None, &read)?.pop().expect("one"))
            },
            progress,
        )?;
        {
            // Ingestion is atomic and carries the new generation number in its metadata;
            // the in-memory flip happens under the readers' lock right after it.
            let mut current = self.generation.write().unwrap_or_else(PoisonError::into_inner);
            ingest(&self.db, &files)?;
            *current = new_generation;
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
        let after = crate::status::la_cost_of(&now.graph, &order);
        Ok(RelayoutReport {
            from_generation: old,
            to_generation: new_generation,
            users: laid,
            appended: order.len() as u64 - laid,
            cost_before: crate::status::la_cost_of(&now.graph, &now.order),
            cost_after: after,
            compute_seconds,
            rewrite_seconds: t1.elapsed().as_secs_f64(),
        })
    }
}
