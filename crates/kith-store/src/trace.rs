//! The device trace: the file, offset and length of every `pread` a thread issues while it
//! measures an operation, so the device models can replay real block addresses. RocksDB's
//! point and multi reads run on the calling thread, so an operation's reads are its thread's;
//! other threads' reads meanwhile (compactions, other stores in the process) are not counted.
//!
//! Only with the `io-trace` feature. The statically linked RocksDB reads through `pread`, so
//! the feature defines the C symbols `pread` and `pread64` in the binary: they forward to the
//! system call and, while the calling thread traces, record the read. That replaces libc's `pread` for the
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
    use std::cell::RefCell;
    use std::ffi::{c_int, c_void};
    use std::time::Instant;

    use super::RawRead;

    thread_local! {
        /// This thread's trace while it measures, `None` otherwise. Per thread, so reads
        /// other threads make meanwhile (RocksDB's background work, other stores in the same
        /// process) are not charged to the measured operation, and threads may measure at
        /// once.
        static TRACE: RefCell<Option<Vec<RawRead>>> = const { RefCell::new(None) };
    }

    /// Forwards to the system call and, while this thread traces, records the read.
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
        if r > 0 {
            // `try_with`: a read during this thread's exit, after its trace is gone, is not
            // traced rather than a panic across the C boundary.
            let _ = TRACE.try_with(|t| {
                if let Ok(mut t) = t.try_borrow_mut()
                    && let Some(trace) = t.as_mut()
                {
                    let at = Instant::now();
                    trace.push(RawRead { fd, offset: offset as u64, len: r as u64, at });
                }
            });
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

    /// Starts recording this thread's reads, with an empty trace.
    pub(crate) fn start() {
        TRACE.with(|t| *t.borrow_mut() = Some(Vec::new()));
    }

    /// Stops recording this thread's reads and takes what was recorded.
    pub(crate) fn stop() -> Vec<RawRead> {
        TRACE.with(|t| t.borrow_mut().take()).unwrap_or_default()
    }
}

#[cfg(all(test, feature = "io-trace"))]
mod tests {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileExt;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// A thread that measures sees its own reads only, however busily another thread reads
    /// meanwhile: the race that once charged another test's RocksDB reads to a measured one.
    #[test]
    fn a_measuring_thread_sees_only_its_own_reads() {
        let dir = tempfile::tempdir().unwrap();
        let (mine, theirs) = (dir.path().join("mine"), dir.path().join("theirs"));
        std::fs::write(&mine, vec![1u8; 8192]).unwrap();
        std::fs::write(&theirs, vec![2u8; 8192]).unwrap();
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let other = s.spawn(|| {
                let f = std::fs::File::open(&theirs).unwrap();
                let mut buf = [0u8; 512];
                let mut n = 0u64;
                while !done.load(Ordering::Relaxed) || n < 1000 {
                    f.read_at(&mut buf, (n % 16) * 512).unwrap();
                    n += 1;
                }
                n
            });
            let f = std::fs::File::open(&mine).unwrap();
            let mut buf = [0u8; 100];
            super::start();
            for i in 0..200u64 {
                f.read_at(&mut buf, i * 7).unwrap();
                std::thread::yield_now();
            }
            let trace = super::stop();
            done.store(true, Ordering::Relaxed);
            assert!(other.join().unwrap() >= 1000);
            assert_eq!(trace.len(), 200);
            assert!(trace.iter().all(|r| r.fd == f.as_raw_fd() && r.len == 100));
            assert_eq!(
                trace.iter().map(|r| r.offset).collect::<Vec<_>>(),
                (0..200).map(|i| i * 7).collect::<Vec<_>>()
            );
        });
        // Not tracing: nothing is kept.
        assert!(super::stop().is_empty());
    }
}
