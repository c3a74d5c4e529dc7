//! Writing a whole generation of records with SstFileWriter and ingesting it atomically:
//! what `build` and `relayout` share.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use indicatif::{ProgressBar, ProgressStyle};
use kith_graph::{Graph, VertexId};
use rocksdb::{DB, IngestExternalFileOptions, Options, SstFileWriter};

use crate::error::{Error, Result};
use crate::keys;
use crate::meta::{LayoutMeta, meta_format, meta_layout, meta_u32};
use crate::progress::Progress;
use crate::record::{self, MAX_DATA_BYTES};

/// SST files roll over at this size, so no file is unwieldy.
const SST_ROLL_BYTES: u64 = 256 << 20;

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
    progress: &Progress,
) -> Result<Vec<PathBuf>> {
    let graph = plan.graph;
    let n = plan.order.len();
    let mut position = vec![0u64; graph.num_nodes()];
    for (p, &v) in plan.order.iter().enumerate() {
        position[v as usize] = p as u64;
    }
    let bar =
        if progress.shows_bar() { ProgressBar::new(3 * n as u64) } else { ProgressBar::hidden() };
    bar.set_style(
        ProgressStyle::with_template("{msg:>12} [{bar:40}] {pos}/{len} records ({eta})")
            .expect("template")
            .progress_chars("=> "),
    );
    let mut sink = SstSink::new(options, tmp)?;
    let g = plan.generation;
    bar.set_message("data");
    progress.phase("data", n as u64);
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
        progress.add(1);
    }
    bar.set_message("index");
    progress.phase("index", graph.num_nodes() as u64);
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
        progress.add(1);
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
    progress.phase("profiles", n as u64);
    for (p, &v) in plan.order.iter().enumerate() {
        let k = keys::profile(g, p as u64);
        let encoded = profile(v)?;
        sink.put(&k, &record::encode_header(&k, graph.original_id(v), &encoded), true)?;
        bar.inc(1);
        progress.add(1);
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
