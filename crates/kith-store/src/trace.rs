//! The device trace: the file, offset and length of every `pread` the process issues while
//! an operation is measured, so the device models can replay real block addresses.
//!
//! Only with the `io-trace` feature. The statically linked RocksDB reads through `pread`, so
//! the feature defines the C symbols `pread` and `pread64` in the binary: they forward to the
//! system call and, while tracing, record the read. That replaces libc's `pread` for the
//! whole process, which is why it is an explicit opt-in of the binary that wants device
//! traces (the harness), never a side effect of linking the store. Without the feature the
//! trace is always empty.

use std::ffi::c_int;
use std::time::Instant;

/// Whether this build records the trace (the `io-trace` feature).
pub(crate) const ENABLED: bool = cfg!(feature = "io-trace");

/// One `pread` as issued: file descriptor, file offset, bytes returned, when.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(not(feature = "io-trace"), allow(dead_code))]
pub struct RawRead {
    pub(crate) fd: c_int,
    pub(crate) offset: u64,
    pub(crate) len: u64,
    pub(crate) at: Instant,
}

#[cfg(feature = "io-trace")]
pub(crate) use interpose::{keep_symbols, start, stop};

/// Without the feature nothing is recorded.
#[cfg(not(feature = "io-trace"))]
pub(crate) fn start() {}

/// Without the feature the trace is empty.
#[cfg(not(feature = "io-trace"))]
pub(crate) fn stop() -> Vec<RawRead> {
    Vec::new()
}

#[cfg(feature = "io-trace")]
mod interpose {
    use std::ffi::{c_int, c_void};
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Instant;

    use super::RawRead;
    use crate::sync::lock;

    static TRACING: AtomicBool = AtomicBool::new(false);
    static TRACE: Mutex<Vec<RawRead>> = Mutex::new(Vec::new());

    /// Forwards to the system call and, while tracing, records the read.
    ///
    /// # Safety
    /// The same contract as POSIX `pread`: `buf` must be valid for `count` bytes of writes.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn pread64(
        fd: c_int,
        buf: *mut c_void,
        count: usize,
        offset: i64,
    ) -> isize {
        // SAFETY: the caller upholds pread's contract; the kernel checks the rest.
        let r = unsafe { libc::syscall(libc::SYS_pread64, fd, buf, count, offset) } as isize;
        if r > 0 && TRACING.load(Ordering::Relaxed) {
            let read = RawRead { fd, offset: offset as u64, len: r as u64, at: Instant::now() };
            lock(&TRACE).push(read);
        }
        r
    }

    /// `pread` is the same call on 64-bit Linux; RocksDB may link either name.
    ///
    /// # Safety
    /// As [`pread64`].
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn pread(
        fd: c_int,
        buf: *mut c_void,
        count: usize,
        offset: i64,
    ) -> isize {
        // SAFETY: as pread64.
        unsafe { pread64(fd, buf, count, offset) }
    }

    /// Keeps the interposed symbols in every binary that opens a store: the linker drops
    /// code nothing refers to, and RocksDB's C++ refers to `pread` only by name.
    pub(crate) fn keep_symbols() -> usize {
        std::hint::black_box(pread64 as *const () as usize)
            ^ std::hint::black_box(pread as *const () as usize)
    }

    /// Starts recording, with an empty trace.
    pub(crate) fn start() {
        lock(&TRACE).clear();
        TRACING.store(true, Ordering::SeqCst);
    }

    /// Stops recording and takes what was recorded.
    pub(crate) fn stop() -> Vec<RawRead> {
        TRACING.store(false, Ordering::SeqCst);
        std::mem::take(&mut *lock(&TRACE))
    }
}
