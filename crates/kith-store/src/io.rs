//! I/O accounting: what one operation read from the device.
//!
//! Two sources, both real:
//! - RocksDB's perf context counts the blocks and bytes a thread read from files
//!   (`block_read_count`, `block_read_byte`): block-cache misses, whatever the OS cache did.
//!   Always available.
//! - With the `io-trace` feature, a trace of the `pread` calls the thread makes while an
//!   operation is measured (see `trace.rs`): file and offset of every read RocksDB issues,
//!   which the device models replay. Without it the trace, and what is counted from it, is
//!   empty.

use std::ffi::c_int;
use std::os::fd::AsRawFd;
use std::path::Path;

use rocksdb::perf::{PerfContext, PerfMetric, PerfStatsLevel, set_perf_stats};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::trace::{self, RawRead};

/// The page size device reads are counted in.
pub const PAGE_BYTES: u64 = 4096;

/// What one measured operation read.
#[derive(Clone, Debug, Default, Serialize)]
pub struct IoCounters {
    /// Blocks RocksDB read from files (block-cache misses).
    pub blocks: u64,
    /// Their bytes.
    pub block_bytes: u64,
    /// The `pread` calls, in order (empty without the `io-trace` feature).
    #[serde(skip)]
    pub reads: Vec<RawRead>,
}

impl IoCounters {
    /// Distinct 4 KiB file pages the traced reads touched (0 without the `io-trace` feature).
    pub fn pages(&self) -> u64 {
        let mut pages: Vec<(c_int, u64)> = Vec::new();
        for r in &self.reads {
            let first = r.offset / PAGE_BYTES;
            let last = (r.offset + r.len.max(1) - 1) / PAGE_BYTES;
            pages.extend((first..=last).map(|p| (r.fd, p)));
        }
        pages.sort_unstable();
        pages.dedup();
        pages.len() as u64
    }

    /// Bytes the traced `pread` calls returned (0 without the `io-trace` feature).
    pub fn read_bytes(&self) -> u64 {
        self.reads.iter().map(|r| r.len).sum()
    }
}

/// Runs `f` on this thread and reports what this thread read meanwhile (the perf context and
/// the pread trace are both per thread). Not reentrant on one thread; threads may measure at
/// once.
pub fn measure<T>(f: impl FnOnce() -> T) -> (T, IoCounters) {
    set_perf_stats(PerfStatsLevel::EnableCount);
    let mut perf = PerfContext::default();
    perf.reset();
    trace::start();
    let out = f();
    let reads = trace::stop();
    let counters = IoCounters {
        blocks: perf.metric(PerfMetric::BlockReadCount),
        block_bytes: perf.metric(PerfMetric::BlockReadByte),
        reads,
    };
    (out, counters)
}

/// `posix_fadvise(DONTNEED)` on every file under `dir`, so the next reads come from the
/// device even without direct I/O.
pub fn fadvise_dontneed_dir(dir: &Path) -> Result<()> {
    let entries =
        std::fs::read_dir(dir).map_err(Error::io(format!("listing {}", dir.display())))?;
    for e in entries.flatten() {
        let path = e.path();
        if !path.is_file() {
            continue;
        }
        let Ok(file) = std::fs::File::open(&path) else { continue };
        // SAFETY: a valid open descriptor; fadvise only advises the kernel.
        let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            return Err(Error::Io {
                context: format!("posix_fadvise({})", path.display()),
                source: std::io::Error::from_raw_os_error(rc),
            });
        }
    }
    Ok(())
}
