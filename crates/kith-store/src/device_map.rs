//! Placing traced reads on the device: file offsets to device addresses with the `FIEMAP`
//! ioctl, descriptors resolved through `/proc/self/fd`. It serves only the device trace, so
//! it is compiled with the `io-trace` feature; without it [`DeviceMap`] places nothing.

use crate::device::DeviceRead;
use crate::trace::RawRead;

#[cfg(feature = "io-trace")]
pub(crate) use fiemap::DeviceMap;

/// Without the device trace there is nothing to place.
#[cfg(not(feature = "io-trace"))]
#[derive(Debug, Default)]
pub(crate) struct DeviceMap {
    /// Always false: no address was mapped.
    pub(crate) physical: bool,
}

#[cfg(not(feature = "io-trace"))]
impl DeviceMap {
    pub(crate) fn new() -> DeviceMap {
        DeviceMap::default()
    }

    pub(crate) fn place(&mut self, _reads: &[RawRead]) -> Vec<DeviceRead> {
        Vec::new()
    }
}

#[cfg(feature = "io-trace")]
mod fiemap {
    use std::collections::HashMap;
    use std::ffi::c_int;
    use std::os::fd::AsRawFd;
    use std::path::PathBuf;

    use super::{DeviceRead, RawRead};

    /// Maps file offsets to device addresses. Build one after the store is open and before
    /// measuring; file descriptors are resolved through `/proc/self/fd`.
    #[derive(Debug, Default)]
    pub(crate) struct DeviceMap {
        files: HashMap<c_int, Option<(String, Vec<Extent>)>>,
        /// Whether every file was mapped by FIEMAP (false = stand-in addresses).
        pub(crate) physical: bool,
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
        pub(crate) fn new() -> DeviceMap {
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
                    let name = path
                        .file_name()
                        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
                    (name, extents)
                });
                self.files.insert(fd, entry);
            }
            self.files.get(&fd).and_then(Option::as_ref)
        }

        /// Places the SST reads of a measurement on the device.
        pub(crate) fn place(&mut self, reads: &[RawRead]) -> Vec<DeviceRead> {
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
        let rc =
            unsafe { libc::ioctl(file.as_raw_fd(), FS_IOC_FIEMAP, &mut *request as *mut Fiemap) };
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
}
