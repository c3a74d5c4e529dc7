//! I/O accounting: what one operation read from the device.
//!
//! Two sources, both real:
//! - RocksDB's perf context counts the blocks and bytes a thread read from files
//!   (`block_read_count`, `block_read_byte`): block-cache misses, whatever the OS cache did.
//! - A trace of the `pread` calls the process makes while tracing is on: file and offset of
//!   every read RocksDB issues. The symbols `pread`/`pread64` are defined here and forward to
//!   the system call, so the statically linked RocksDB calls them. File offsets are mapped to
//!   device addresses with the `FIEMAP` ioctl, so the device model sees real block addresses.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use rocksdb::perf::{PerfContext, PerfMetric, PerfStatsLevel, set_perf_stats};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::store::lock;

/// The page size device reads are counted in.
pub const PAGE_BYTES: u64 = 4096;

static TRACING: AtomicBool = AtomicBool::new(false);
static TRACE: Mutex<Vec<RawRead>> = Mutex::new(Vec::new());

/// One `pread` as issued: file descriptor, file offset, bytes returned, when.
#[derive(Clone, Copy, Debug)]
pub struct RawRead {
    fd: c_int,
    offset: u64,
    len: u64,
    at: Instant,
}

/// Forwards to the system call and, while tracing, records the read.
///
/// # Safety
/// The same contract as POSIX `pread`: `buf` must be valid for `count` bytes of writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pread64(fd: c_int, buf: *mut c_void, count: usize, offset: i64) -> isize {
    // SAFETY: the caller upholds pread's contract; the kernel checks the rest.
    let r = unsafe { libc::syscall(libc::SYS_pread64, fd, buf, count, offset) } as isize;
    if r > 0 && TRACING.load(Ordering::Relaxed) {
        lock(&TRACE).push(RawRead { fd, offset: offset as u64, len: r as u64, at: Instant::now() });
    }
    r
}

/// `pread` is the same call on 64-bit Linux; RocksDB may link either name.
///
/// # Safety
/// As [`pread64`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pread(fd: c_int, buf: *mut c_void, count: usize, offset: i64) -> isize {
    // SAFETY: as pread64.
    unsafe { pread64(fd, buf, count, offset) }
}

/// Keeps the interposed symbols in every binary that opens a store.
pub(crate) fn keep_symbols() -> usize {
    std::hint::black_box(pread64 as *const () as usize)
        ^ std::hint::black_box(pread as *const () as usize)
}

/// What one measured operation read.
#[derive(Clone, Debug, Default, Serialize)]
pub struct IoCounters {
    /// Blocks RocksDB read from files (block-cache misses).
    pub blocks: u64,
    /// Their bytes.
    pub block_bytes: u64,
    /// The `pread` calls, in order.
    #[serde(skip)]
    pub reads: Vec<RawRead>,
}

impl IoCounters {
    /// Distinct 4 KiB file pages the reads touched.
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

    /// Bytes the `pread` calls returned.
    pub fn read_bytes(&self) -> u64 {
        self.reads.iter().map(|r| r.len).sum()
    }
}

/// Runs `f` on this thread and reports what it read. Not reentrant: one measured operation
/// at a time per process (the pread trace is global).
pub fn measure<T>(f: impl FnOnce() -> T) -> (T, IoCounters) {
    set_perf_stats(PerfStatsLevel::EnableCount);
    let mut perf = PerfContext::default();
    perf.reset();
    lock(&TRACE).clear();
    TRACING.store(true, Ordering::SeqCst);
    let out = f();
    TRACING.store(false, Ordering::SeqCst);
    let reads = std::mem::take(&mut *lock(&TRACE));
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

/// A read placed on the device: byte address, length, microseconds since the first read.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceRead {
    /// The file (its name in the store).
    pub file: String,
    /// Device byte address (from FIEMAP; a file-concatenation stand-in where unsupported).
    pub address: u64,
    /// Bytes.
    pub len: u64,
    /// When it was issued, µs after the first read of its batch.
    pub at_us: f64,
}

/// Maps file offsets to device addresses. Build one after the store is open and before
/// measuring; file descriptors are resolved through `/proc/self/fd`.
#[derive(Debug, Default)]
pub struct DeviceMap {
    files: HashMap<c_int, Option<(String, Vec<Extent>)>>,
    /// Whether every file was mapped by FIEMAP (false = stand-in addresses).
    pub physical: bool,
    fallback_base: u64,
}

#[derive(Clone, Copy, Debug)]
struct Extent {
    logical: u64,
    physical: u64,
    len: u64,
}

impl DeviceMap {
    /// A map that resolves descriptors as it meets them.
    pub fn new() -> DeviceMap {
        DeviceMap { physical: true, ..DeviceMap::default() }
    }

    fn resolve_fd(&mut self, fd: c_int) -> Option<&(String, Vec<Extent>)> {
        if !self.files.contains_key(&fd) {
            let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok();
            let entry = link.map(|path| {
                let extents = fiemap(&path).unwrap_or_else(|| {
                    self.physical = false;
                    let size = std::fs::metadata(&path).map_or(0, |m| m.len());
                    let base = self.fallback_base;
                    self.fallback_base += size.next_multiple_of(1 << 20);
                    vec![Extent { logical: 0, physical: base, len: size.max(1) }]
                });
                let name =
                    path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
                (name, extents)
            });
            self.files.insert(fd, entry);
        }
        self.files.get(&fd).and_then(Option::as_ref)
    }

    /// Places the SST reads of a measurement on the device.
    pub fn place(&mut self, reads: &[RawRead]) -> Vec<DeviceRead> {
        let Some(t0) = reads.first().map(|r| r.at) else { return Vec::new() };
        let mut out = Vec::with_capacity(reads.len());
        for r in reads {
            let Some((name, extents)) = self.resolve_fd(r.fd) else { continue };
            if !name.ends_with(".sst") {
                continue;
            }
            let address = extents
                .iter()
                .find(|e| r.offset >= e.logical && r.offset < e.logical + e.len)
                .or(extents.last())
                .map_or(r.offset, |e| e.physical + (r.offset - e.logical));
            out.push(DeviceRead {
                file: name.clone(),
                address,
                len: r.len,
                at_us: r.at.duration_since(t0).as_secs_f64() * 1e6,
            });
        }
        out
    }
}

/// The file's extents from the `FS_IOC_FIEMAP` ioctl, or `None` where unsupported.
fn fiemap(path: &PathBuf) -> Option<Vec<Extent>> {
    const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
    const FIEMAP_FLAG_SYNC: u32 = 1;
    const MAX_EXTENTS: usize = 512;
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct FiemapExtent {
        logical: u64,
        physical: u64,
        length: u64,
        reserved64: [u64; 2],
        flags: u32,
        reserved: [u32; 3],
    }
    #[repr(C)]
    struct Fiemap {
        start: u64,
        length: u64,
        flags: u32,
        mapped_extents: u32,
        extent_count: u32,
        reserved: u32,
        extents: [FiemapExtent; MAX_EXTENTS],
    }
    let file = std::fs::File::open(path).ok()?;
    let empty = FiemapExtent {
        logical: 0,
        physical: 0,
        length: 0,
        reserved64: [0; 2],
        flags: 0,
        reserved: [0; 3],
    };
    let mut request = Box::new(Fiemap {
        start: 0,
        length: u64::MAX,
        flags: FIEMAP_FLAG_SYNC,
        mapped_extents: 0,
        extent_count: MAX_EXTENTS as u32,
        reserved: 0,
        extents: [empty; MAX_EXTENTS],
    });
    // SAFETY: `request` is a properly laid out struct fiemap with room for MAX_EXTENTS
    // extents, as extent_count tells the kernel.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), FS_IOC_FIEMAP, &mut *request as *mut Fiemap) };
    if rc != 0 || request.mapped_extents == 0 {
        return None;
    }
    let n = (request.mapped_extents as usize).min(MAX_EXTENTS);
    Some(
        request.extents[..n]
            .iter()
            .map(|e| Extent { logical: e.logical, physical: e.physical, len: e.length })
            .collect(),
    )
}
