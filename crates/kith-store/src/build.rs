//! Building a store from a graph and a layout, with synthetic profiles and data blocks of
//! fixed or power-law size.

use std::path::Path;

use kith_graph::Graph;
use kith_layout::Layout;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use rocksdb::DB;

use crate::error::{Error, Result};
use crate::generation::{Plan, ingest, now_unix, write_generation};
use crate::meta::LayoutMeta;
use crate::options::{CacheMode, DEFAULT_CHUNK_BYTES, OpenOptions, db_options};
use crate::page_model::PageModel;
use crate::record::{MAX_DATA_BYTES, Profile};
use crate::store::Store;

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

/// The largest data chunk a store may be built with: a whole data block.
pub const MAX_CHUNK_BYTES: u32 = MAX_DATA_BYTES as u32;

impl BuildOptions {
    /// Refuses options no store can be built with: a chunk size of 0 (every block would be
    /// infinitely many chunks) or over [`MAX_CHUNK_BYTES`].
    pub fn check(&self) -> Result<()> {
        if self.chunk_bytes == 0 || self.chunk_bytes > MAX_CHUNK_BYTES {
            return Err(Error::Invalid(format!(
                "chunk size of {} bytes: must be 1 to {MAX_CHUNK_BYTES}",
                self.chunk_bytes
            )));
        }
        Ok(())
    }
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
    options.check()?;
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
            &crate::progress::Progress::terminal(options.progress),
        )?;
        ingest(&db, &files)?;
        db.flush_wal(true)?;
        let _ = std::fs::remove_dir_all(&tmp);
    }
    Store::open(dir, &OpenOptions::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_chunk_sizes_are_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let graph = kith_layout::paper_example();
        let layout = kith_layout::Layout::identity(graph.num_nodes());
        for chunk_bytes in [0, MAX_CHUNK_BYTES + 1, u32::MAX] {
            let options = BuildOptions { chunk_bytes, ..BuildOptions::default() };
            let err =
                build(&dir.path().join("s"), &graph, &layout, LayoutMeta::default(), &options)
                    .unwrap_err()
                    .to_string();
            assert_eq!(err, format!("chunk size of {chunk_bytes} bytes: must be 1 to 4194304"));
            assert!(!dir.path().join("s").exists());
        }
        // The page model of a zero chunk size is not a division by zero either.
        assert_eq!(crate::record::chunk_count(10, 0), 10);
    }

    /// The data range's blocks fall exactly where `PageModel` says: two positions share a
    /// block if and only if they are in the same run of `records_per_block`.
    #[test]
    fn blocks_fall_where_the_page_model_says() {
        for data in [4u64, 40, 100, 400, 1000] {
            let dir = tempfile::tempdir().unwrap();
            let n = 700u64;
            let graph = Graph::from_edges((0..n).collect(), false, vec![(0, 1)]);
            let layout = kith_layout::Layout::identity(n as usize);
            let options = BuildOptions { data: DataSpec::Fixed(data), ..BuildOptions::default() };
            drop(
                build(&dir.path().join("s"), &graph, &layout, LayoutMeta::default(), &options)
                    .unwrap(),
            );
            let opts = OpenOptions { mode: CacheMode::Cold, ..OpenOptions::default() };
            let store = Store::open(&dir.path().join("s"), &opts).unwrap();
            let model = PageModel::for_data(data, DEFAULT_CHUNK_BYTES);
            let per = model.records_per_block;
            assert!(per >= 2, "{data} B: {model:?}");
            let view = store.view();
            for p in [0, per - 1, per, 3 * per - 1, 5 * per + 1] {
                store.drop_caches().unwrap();
                let (got, io) = crate::io::measure(|| store.read_data_at(&view, &[p, p + 1], None));
                got.unwrap();
                let same = p / per == (p + 1) / per;
                assert_eq!(
                    io.blocks,
                    if same { 1 } else { 2 },
                    "{data} B, positions {p} and {}: {model:?}",
                    p + 1
                );
            }
        }
    }
}
