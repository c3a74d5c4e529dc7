//! Accounting of a job's I/O: every read and write that reaches a file is recorded, and an
//! operation counts as sequential when it continues where the previous operation on the
//! device ended (same file, next byte) — what a disk head would do without seeking.

use std::fs::File;
use std::io::{self, Read, Write};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Bytes moved, and how.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoCounters {
    /// Bytes read (the graph file, spill runs, round outputs).
    pub read_bytes: u64,
    /// Bytes written (spill runs, merge passes, round outputs).
    pub written_bytes: u64,
    /// Bytes moved by operations that continued the previous one.
    pub sequential_bytes: u64,
    /// Operations that did not (a seek on a disk).
    pub random_ops: u64,
    /// Operations in all.
    pub ops: u64,
    /// Nanoseconds spent in those operations (and in syncing files, when the engine syncs):
    /// the medium's measured time, to put beside the cost models'.
    pub io_ns: u64,
}

impl IoCounters {
    /// Sequential bytes over all bytes moved (1 when nothing moved).
    pub fn sequential_fraction(&self) -> f64 {
        let total = self.read_bytes + self.written_bytes;
        if total == 0 { 1.0 } else { self.sequential_bytes as f64 / total as f64 }
    }

    /// Seconds spent in I/O calls.
    pub fn io_seconds(&self) -> f64 {
        self.io_ns as f64 * 1e-9
    }

    /// What was counted since `earlier` (counters of the same device, taken before).
    pub(crate) fn since(&self, earlier: &IoCounters) -> IoCounters {
        IoCounters {
            read_bytes: self.read_bytes - earlier.read_bytes,
            written_bytes: self.written_bytes - earlier.written_bytes,
            sequential_bytes: self.sequential_bytes - earlier.sequential_bytes,
            random_ops: self.random_ops - earlier.random_ops,
            ops: self.ops - earlier.ops,
            io_ns: self.io_ns - earlier.io_ns,
        }
    }
}

#[derive(Debug, Default)]
struct State {
    counters: IoCounters,
    /// (file, offset) where the last operation ended.
    head: Option<(u64, u64)>,
    next_file: u64,
}

/// One device's I/O log, shared by the files of a job.
#[derive(Clone, Debug, Default)]
pub(crate) struct Device(Arc<Mutex<State>>);

impl Device {
    pub(crate) fn counters(&self) -> IoCounters {
        self.0.lock().expect("io log").counters
    }

    /// A file on this device, tracked.
    pub(crate) fn track(&self, file: File) -> Tracked {
        let mut state = self.0.lock().expect("io log");
        state.next_file += 1;
        Tracked { file, id: state.next_file, offset: 0, device: self.clone() }
    }

    /// A read of `bytes` done elsewhere (the graph file, streamed once).
    pub(crate) fn record_stream_read(&self, bytes: u64) {
        let mut state = self.0.lock().expect("io log");
        state.next_file += 1;
        let id = state.next_file;
        drop(state);
        self.record(id, 0, bytes, false, Instant::now());
    }

    fn record(&self, file: u64, offset: u64, bytes: u64, write: bool, started: Instant) {
        let ns = started.elapsed().as_nanos() as u64;
        let mut state = self.0.lock().expect("io log");
        state.counters.io_ns += ns;
        if bytes == 0 {
            return;
        }
        let sequential =
            state.head == Some((file, offset)) || (state.head.is_none() && offset == 0);
        let c = &mut state.counters;
        c.ops += 1;
        if write {
            c.written_bytes += bytes;
        } else {
            c.read_bytes += bytes;
        }
        if sequential {
            c.sequential_bytes += bytes;
        } else {
            c.random_ops += 1;
        }
        state.head = Some((file, offset + bytes));
    }
}

/// A file whose reads and writes are logged on its device. Wrap it in a `BufReader` or
/// `BufWriter`: each buffer refill or flush is one operation.
#[derive(Debug)]
pub(crate) struct Tracked {
    file: File,
    id: u64,
    offset: u64,
    device: Device,
}

impl Tracked {
    /// Makes the file durable and drops its pages from the page cache, so that reading it
    /// back reads the medium (on tmpfs the pages are the medium and stay). The time counts
    /// as I/O.
    pub(crate) fn sync_and_evict(&mut self) -> io::Result<()> {
        use std::os::fd::AsRawFd as _;
        let started = Instant::now();
        self.file.sync_data()?;
        // SAFETY: the descriptor is this open file's; the call only advises the kernel.
        let err =
            unsafe { libc::posix_fadvise(self.file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if err != 0 {
            return Err(io::Error::from_raw_os_error(err));
        }
        self.device.record(self.id, self.offset, 0, true, started);
        Ok(())
    }
}

impl Read for Tracked {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let started = Instant::now();
        let n = self.file.read(buf)?;
        self.device.record(self.id, self.offset, n as u64, false, started);
        self.offset += n as u64;
        Ok(n)
    }
}

impl Write for Tracked {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let started = Instant::now();
        let n = self.file.write(buf)?;
        self.device.record(self.id, self.offset, n as u64, true, started);
        self.offset += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}
