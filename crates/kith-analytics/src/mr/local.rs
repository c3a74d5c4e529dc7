//! The local MapReduce engine, as the complex-network study ran its jobs on one machine:
//! map into a key-sorted memory buffer that spills sorted runs to disk whenever it outgrows
//! its budget, merge the runs at most [`MrConfig::sort_factor`] at a time, and reduce each
//! key's values into the round's output file, the next round's input. Every file operation
//! goes through the logged device (`io.rs`), so a job reports per-phase times and its I/O
//! profile.
//!
//! The knobs are Hadoop's, with its defaults (`mapred-default.xml`): the buffer
//! (`io.sort.mb`, 100 MB), the fill at which it spills (`io.sort.spill.percent`, 0.80), the
//! runs merged at once (`io.sort.factor`, 10) and the map outputs the reduce side copies at
//! once (`mapred.reduce.parallel.copies`, 5). On one machine there is no copy over the
//! network: a "copy" here is a run read ahead by its own thread while the merge consumes it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Instant;

use super::contract::{Emit, Group, Input, MrEngine};
use super::io::{Device, IoCounters, Tracked};
use super::records::{Output, RecordFile, read_record, write_record};
use super::report::{JobReport, Phases, RoundReport};
use crate::error::{Error, Result};

/// The buffer of every file read or written: one operation per refill or flush.
const IO_BUFFER: usize = 256 << 10;

/// How a job runs.
#[derive(Clone, Debug)]
pub struct MrConfig {
    /// The shuffle buffer's budget in bytes (`io.sort.mb`).
    pub memory_bytes: u64,
    /// The share of the budget at which the buffer is sorted and spilled as a run
    /// (`io.sort.spill.percent`), in (0, 1]. Hadoop spills in the background while the map
    /// fills the rest; here the map waits, so a lower share means smaller and more runs.
    pub spill_percent: f64,
    /// Runs merged at once (`io.sort.factor`, at least 2); more runs take extra merge passes.
    pub sort_factor: usize,
    /// Runs of a merge read ahead at once, each by its own thread
    /// (`mapred.reduce.parallel.copies`); the others are read by the merging thread, and 0
    /// reads them all there.
    pub parallel_copies: usize,
    /// Where spill runs and round outputs go (a fresh subdirectory, removed afterwards).
    pub spill_dir: PathBuf,
    /// Bytes of the input file, counted as one sequential read (0 when not from a file).
    pub input_bytes: u64,
    /// Sync every run and round output when written and drop it from the page cache, so
    /// that reading it back reads the spill directory's medium rather than memory: a job
    /// timed on its real disk. Off, files live in the page cache as Hadoop's usually do.
    pub uncached: bool,
}

impl Default for MrConfig {
    /// Hadoop's defaults, spilling to the system's temporary directory.
    fn default() -> Self {
        MrConfig {
            memory_bytes: 100 << 20,
            spill_percent: 0.80,
            sort_factor: 10,
            parallel_copies: 5,
            spill_dir: std::env::temp_dir(),
            input_bytes: 0,
            uncached: false,
        }
    }
}

impl MrConfig {
    /// Checks the knobs.
    ///
    /// # Errors
    /// A zero buffer, a spill share outside (0, 1], or a sort factor below 2.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: String| Err(Error::InvalidArgument(what));
        if self.memory_bytes == 0 {
            return bad("the shuffle buffer must be at least 1 byte".into());
        }
        if !(self.spill_percent > 0.0 && self.spill_percent <= 1.0) {
            return bad(format!("spill percent {} is not in (0, 1]", self.spill_percent));
        }
        if self.sort_factor < 2 {
            return bad(format!(
                "sort factor {} merges nothing: it must be at least 2",
                self.sort_factor
            ));
        }
        Ok(())
    }

    /// Bytes the buffer holds before it spills.
    fn spill_at(&self) -> u64 {
        ((self.memory_bytes as f64 * self.spill_percent) as u64).max(1)
    }
}

/// The map side's sink: a key-sorted buffer that spills.
pub(crate) struct Shuffle<'e> {
    engine: &'e LocalEngine,
    arena: Vec<u32>,
    index: Vec<(u64, u32)>,
    runs: Vec<PathBuf>,
    records: u64,
    bytes: u64,
    shuffle_s: f64,
    error: Option<Error>,
}

impl Emit for Shuffle<'_> {
    fn emit(&mut self, key: u64, value: &[u32]) {
        self.index.push((key, self.arena.len() as u32));
        self.arena.push(value.len() as u32);
        self.arena.extend_from_slice(value);
        self.records += 1;
        self.bytes += 12 + 4 * value.len() as u64;
        let held = 4 * self.arena.len() as u64 + 16 * self.index.len() as u64;
        let over =
            held > self.engine.config.spill_at() || self.arena.len() > (u32::MAX >> 1) as usize;
        if over
            && self.error.is_none()
            && let Err(e) = self.spill()
        {
            self.error = Some(e);
        }
    }
}

impl Shuffle<'_> {
    fn sort(&mut self) {
        let t = Instant::now();
        self.index.sort_unstable();
        self.shuffle_s += t.elapsed().as_secs_f64();
    }

    fn spill(&mut self) -> Result<()> {
        self.sort();
        let t = Instant::now();
        let path = self.engine.fresh("run");
        let mut out = self.engine.create(&path)?;
        for &(key, at) in &self.index {
            let len = self.arena[at as usize] as usize;
            let value = &self.arena[at as usize + 1..at as usize + 1 + len];
            write_record(&mut out, key, value).map_err(Error::io(&path))?;
        }
        self.engine.seal(&mut out, &path)?;
        self.runs.push(path);
        self.arena.clear();
        self.index.clear();
        self.shuffle_s += t.elapsed().as_secs_f64();
        Ok(())
    }
}

/// A job's scratch space, I/O log and round reports.
pub(crate) struct LocalEngine {
    config: MrConfig,
    dir: tempfile::TempDir,
    device: Device,
    next_file: std::cell::Cell<u64>,
    /// The device's counters at the end of the last round.
    counted: IoCounters,
    rounds: Vec<RoundReport>,
}

impl LocalEngine {
    /// A job in a fresh subdirectory of the spill directory.
    ///
    /// # Errors
    /// The spill directory cannot be created or written.
    pub(crate) fn new(config: &MrConfig) -> Result<LocalEngine> {
        config.validate()?;
        let unwritable = |e: std::io::Error| {
            Error::InvalidArgument(format!(
                "spill directory {} cannot be written: {e}",
                config.spill_dir.display()
            ))
        };
        std::fs::create_dir_all(&config.spill_dir).map_err(unwritable)?;
        let dir = tempfile::Builder::new()
            .prefix("kith-mr-")
            .tempdir_in(&config.spill_dir)
            .map_err(unwritable)?;
        // Creating a directory may be allowed where writing is not (a full disk): probe.
        std::fs::write(dir.path().join("probe"), b"kith").map_err(unwritable)?;
        let device = Device::default();
        device.record_stream_read(config.input_bytes);
        Ok(LocalEngine {
            config: config.clone(),
            dir,
            device,
            next_file: std::cell::Cell::new(0),
            counted: IoCounters::default(),
            rounds: Vec::new(),
        })
    }

    fn fresh(&self, what: &str) -> PathBuf {
        let n = self.next_file.get();
        self.next_file.set(n + 1);
        self.dir.path().join(format!("{what}-{n}"))
    }

    fn create(&self, path: &Path) -> Result<BufWriter<Tracked>> {
        let file = File::create(path).map_err(Error::io(path))?;
        Ok(BufWriter::with_capacity(IO_BUFFER, self.device.track(file)))
    }

    /// Flushes a finished file, and with `uncached` syncs it and drops it from the cache.
    fn seal(&self, out: &mut BufWriter<Tracked>, path: &Path) -> Result<()> {
        out.flush().map_err(Error::io(path))?;
        if self.config.uncached {
            out.get_mut().sync_and_evict().map_err(Error::io(path))?;
        }
        Ok(())
    }

    fn open(&self, path: &Path) -> Result<BufReader<Tracked>> {
        let file = File::open(path).map_err(Error::io(path))?;
        Ok(BufReader::with_capacity(IO_BUFFER, self.device.track(file)))
    }

    /// The job's report.
    pub(crate) fn finish(self) -> JobReport {
        let mut phases = Phases::default();
        for r in &self.rounds {
            phases.add(&r.phases);
        }
        // Everything the device saw: the input, every round, and the last output read back.
        let io = self.device.counters();
        JobReport {
            rounds: self.rounds,
            phases,
            io,
            memory_bytes: self.config.memory_bytes,
            spill_percent: self.config.spill_percent,
        }
    }
}

impl MrEngine for LocalEngine {
    type Data = RecordFile;

    /// Map into a buffer that spills sorted runs, merge at most `sort_factor` runs at a
    /// time, reduce every key into the round's output file.
    fn round(
        &mut self,
        name: &'static str,
        input: Input<'_, RecordFile>,
        mut map: impl FnMut(u64, &[u32], &mut dyn Emit),
        mut reduce: impl FnMut(u64, &Group, &mut dyn Emit),
    ) -> Result<RecordFile> {
        let mut phases = Phases::default();
        // Map.
        let t = Instant::now();
        let mut shuffle = Shuffle {
            engine: self,
            arena: Vec::new(),
            index: Vec::new(),
            runs: Vec::new(),
            records: 0,
            bytes: 0,
            shuffle_s: 0.0,
            error: None,
        };
        let mut input_records = 0u64;
        match &input {
            Input::Graph(graph) => {
                for v in 0..graph.num_vertices() as u32 {
                    map(u64::from(v), graph.in_links(v), &mut shuffle);
                    input_records += 1;
                }
            }
            Input::Records(file) => {
                let mut reader = self.open(&file.path)?;
                let mut value = Vec::new();
                while let Some(key) =
                    read_record(&mut reader, &mut value).map_err(Error::io(&file.path))?
                {
                    map(key, &value, &mut shuffle);
                    input_records += 1;
                }
            }
        }
        if let Some(e) = shuffle.error.take() {
            return Err(e);
        }
        if let Input::Records(file) = &input {
            std::fs::remove_file(&file.path).map_err(Error::io(&file.path))?;
        }
        // Shuffle: sort what is buffered; spill it too when earlier buffers were spilled.
        if shuffle.runs.is_empty() {
            shuffle.sort();
        } else if !shuffle.index.is_empty() {
            shuffle.spill()?;
        }
        phases.shuffle_s = shuffle.shuffle_s;
        phases.map_s = t.elapsed().as_secs_f64() - phases.shuffle_s;
        let spill_runs = shuffle.runs.len() as u64;
        let (map_output_records, map_output_bytes) = (shuffle.records, shuffle.bytes);
        // Merge passes while there are too many runs.
        let t = Instant::now();
        let mut runs = std::mem::take(&mut shuffle.runs);
        let mut merge_passes = 0u64;
        let factor = self.config.sort_factor;
        while runs.len() > factor {
            let batch: Vec<PathBuf> = runs.drain(..factor).collect();
            let path = self.fresh("merged");
            let mut out = self.create(&path)?;
            self.merge(&batch, |key, group| {
                for value in group.values() {
                    write_record(&mut out, key, value).map_err(Error::io(&path))?;
                }
                Ok(())
            })?;
            self.seal(&mut out, &path)?;
            runs.push(path);
            merge_passes += 1;
        }
        let passes_s = t.elapsed().as_secs_f64();
        // Final merge feeding reduce.
        let out_path = self.fresh("output");
        let mut output =
            Output { writer: self.create(&out_path)?, path: out_path, records: 0, error: None };
        let t = Instant::now();
        let mut reduce_s = 0.0;
        let mut groups = 0u64;
        let mut reduce_one = |key: u64, group: &Group, output: &mut Output| {
            let t = Instant::now();
            reduce(key, group, output);
            reduce_s += t.elapsed().as_secs_f64();
            groups += 1;
        };
        if runs.is_empty() {
            let mut group = Group::default();
            let index = &shuffle.index;
            let mut i = 0;
            while i < index.len() {
                let key = index[i].0;
                group.clear();
                while i < index.len() && index[i].0 == key {
                    let at = index[i].1 as usize;
                    let len = shuffle.arena[at] as usize;
                    group.push(&shuffle.arena[at + 1..at + 1 + len]);
                    i += 1;
                }
                reduce_one(key, &group, &mut output);
            }
        } else {
            self.merge(&runs, |key, group| {
                reduce_one(key, group, &mut output);
                Ok(())
            })?;
        }
        drop(shuffle);
        self.seal(&mut output.writer, &output.path)?;
        if let Some(e) = output.error.take() {
            return Err(Error::Io { path: output.path, source: e });
        }
        let final_s = t.elapsed().as_secs_f64();
        phases.merge_s = passes_s + (final_s - reduce_s);
        phases.reduce_s = reduce_s;
        // Everything since the previous round (for the first, that includes reading the
        // input graph).
        let now = self.device.counters();
        let io = now.since(&self.counted);
        self.counted = now;
        self.rounds.push(RoundReport {
            name,
            input_records,
            map_output_records,
            map_output_bytes,
            groups,
            output_records: output.records,
            spill_runs,
            merge_passes,
            phases,
            io,
        });
        Ok(RecordFile { path: output.path })
    }

    /// Reads a round's output, record by record (the file is removed afterwards).
    fn read(&mut self, file: RecordFile, mut each: impl FnMut(u64, &[u32])) -> Result<()> {
        let mut reader = self.open(&file.path)?;
        let mut value = Vec::new();
        while let Some(key) = read_record(&mut reader, &mut value).map_err(Error::io(&file.path))? {
            each(key, &value);
        }
        std::fs::remove_file(&file.path).map_err(Error::io(&file.path))
    }

    fn sum(&mut self, local: u64) -> Result<u64> {
        Ok(local)
    }
}

impl LocalEngine {
    /// Merges sorted runs, calling `each` once per key with its values in run order; the runs
    /// are removed afterwards. The first `parallel_copies` runs are read ahead by their own
    /// threads.
    fn merge(
        &self,
        runs: &[PathBuf],
        mut each: impl FnMut(u64, &Group) -> Result<()>,
    ) -> Result<()> {
        std::thread::scope(|scope| {
            let mut readers: Vec<RunReader> = Vec::with_capacity(runs.len());
            for (i, path) in runs.iter().enumerate() {
                let file = self.device.track(File::open(path).map_err(Error::io(path))?);
                readers.push(if i < self.config.parallel_copies {
                    RunReader::ahead(scope, file)
                } else {
                    RunReader::Here(BufReader::with_capacity(IO_BUFFER, file))
                });
            }
            self.merge_from(runs, &mut readers, &mut each)
        })?;
        for path in runs {
            std::fs::remove_file(path).map_err(Error::io(path))?;
        }
        Ok(())
    }

    fn merge_from(
        &self,
        runs: &[PathBuf],
        readers: &mut [RunReader],
        each: &mut impl FnMut(u64, &Group) -> Result<()>,
    ) -> Result<()> {
        let mut heads: Vec<Vec<u32>> = vec![Vec::new(); runs.len()];
        let mut heap = BinaryHeap::new();
        for (i, reader) in readers.iter_mut().enumerate() {
            if let Some(key) = read_record(reader, &mut heads[i]).map_err(Error::io(&runs[i]))? {
                heap.push(Reverse((key, i)));
            }
        }
        let mut group = Group::default();
        while let Some(&Reverse((key, _))) = heap.peek() {
            group.clear();
            while let Some(&Reverse((k, i))) = heap.peek() {
                if k != key {
                    break;
                }
                heap.pop();
                group.push(&heads[i]);
                if let Some(next) =
                    read_record(&mut readers[i], &mut heads[i]).map_err(Error::io(&runs[i]))?
                {
                    heap.push(Reverse((next, i)));
                }
            }
            each(key, &group)?;
        }
        Ok(())
    }
}

/// A run as the merge reads it: buffered on the merging thread, or read ahead in
/// `IO_BUFFER` chunks by a thread of its own, at most two chunks ahead.
enum RunReader {
    Here(BufReader<Tracked>),
    Ahead { chunks: mpsc::Receiver<std::io::Result<Vec<u8>>>, chunk: Vec<u8>, at: usize },
}

impl RunReader {
    fn ahead<'s>(scope: &'s std::thread::Scope<'s, '_>, mut file: Tracked) -> RunReader {
        let (send, chunks) = mpsc::sync_channel(2);
        scope.spawn(move || {
            loop {
                let mut chunk = vec![0u8; IO_BUFFER];
                let n = match read_full(&mut file, &mut chunk) {
                    Ok(n) => n,
                    Err(e) => {
                        let _ = send.send(Err(e));
                        return;
                    }
                };
                chunk.truncate(n);
                // The merge stopped early (an error) when nobody receives.
                if n == 0 || send.send(Ok(chunk)).is_err() {
                    return;
                }
            }
        });
        RunReader::Ahead { chunks, chunk: Vec::new(), at: 0 }
    }
}

/// Fills `buf` unless the file ends first; the bytes read.
fn read_full(file: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

impl Read for RunReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            RunReader::Here(r) => r.read(buf),
            RunReader::Ahead { chunks, chunk, at } => {
                if *at == chunk.len() {
                    match chunks.recv() {
                        Ok(next) => *chunk = next?,
                        // The reader thread ended: the run is done.
                        Err(_) => return Ok(0),
                    }
                    *at = 0;
                }
                let n = buf.len().min(chunk.len() - *at);
                buf[..n].copy_from_slice(&chunk[*at..*at + n]);
                *at += n;
                Ok(n)
            }
        }
    }
}
