//! Device models that replay a recorded block trace: what the same reads would cost on a
//! hard disk (the medium Bondhu measured) or a SATA SSD, estimated on whatever this machine
//! has.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

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

/// A 7,200 rpm disk serving one request at a time: a read that starts where the last one
/// ended costs only its transfer; any other pays a seek that grows with the square root of
/// the distance (the Ruemmler–Wilkes shape; none within a track) and half a rotation on
/// average, then the transfer. Reads are issued one after another (RocksDB's `MultiGet`
/// without io_uring), so even a short forward gap has usually rotated past the head by the
/// time the next request arrives.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Hdd {
    /// Track-to-track seek, ms.
    pub min_seek_ms: f64,
    /// Full-stroke seek, ms.
    pub max_seek_ms: f64,
    /// Spindle speed.
    pub rpm: f64,
    /// Sustained transfer, MB/s.
    pub transfer_mb_s: f64,
    /// The span of addresses a full stroke covers, bytes.
    pub capacity_bytes: f64,
    /// Bytes per track: moves shorter than this need no seek, only rotation.
    pub track_bytes: f64,
}

impl Default for Hdd {
    fn default() -> Self {
        Hdd {
            min_seek_ms: 0.8,
            max_seek_ms: 16.0,
            rpm: 7200.0,
            transfer_mb_s: 150.0,
            capacity_bytes: 1e12,
            track_bytes: 1.0 * 1024.0 * 1024.0,
        }
    }
}

/// A SATA SSD: a fixed latency per read plus the transfer, independent of distance.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Ssd {
    /// Per-read latency, µs.
    pub read_latency_us: f64,
    /// Transfer, MB/s.
    pub transfer_mb_s: f64,
}

impl Default for Ssd {
    fn default() -> Self {
        Ssd { read_latency_us: 90.0, transfer_mb_s: 500.0 }
    }
}

/// The model to replay a trace through.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceModel {
    /// A hard disk.
    Hdd(Hdd),
    /// A solid-state disk.
    Ssd(Ssd),
}

impl FromStr for DeviceModel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "hdd" => Ok(DeviceModel::Hdd(Hdd::default())),
            "ssd" => Ok(DeviceModel::Ssd(Ssd::default())),
            other => Err(format!("unknown device model {other:?}; expected hdd or ssd")),
        }
    }
}

impl fmt::Display for DeviceModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DeviceModel::Hdd(_) => "hdd",
            DeviceModel::Ssd(_) => "ssd",
        })
    }
}

/// Where the head is between reads.
#[derive(Clone, Copy, Debug, Default)]
pub struct Head {
    /// The address after the last byte read.
    pub address: u64,
}

impl DeviceModel {
    /// The modelled milliseconds to serve `reads` in order, starting with the head at `head`
    /// (updated).
    pub fn replay(&self, reads: &[DeviceRead], head: &mut Head) -> f64 {
        let mut ms = 0.0;
        for r in reads {
            ms += self.one(r.address, r.len, head.address);
            head.address = r.address + r.len;
        }
        ms
    }

    fn one(&self, address: u64, len: u64, head: u64) -> f64 {
        match *self {
            DeviceModel::Ssd(s) => {
                s.read_latency_us / 1000.0 + len as f64 / (s.transfer_mb_s * 1e3)
            }
            DeviceModel::Hdd(h) => {
                let transfer = |bytes: f64| bytes / (h.transfer_mb_s * 1e3);
                let positioning = if address == head {
                    0.0
                } else {
                    let distance = address.abs_diff(head) as f64;
                    let seek = if distance < h.track_bytes {
                        0.0
                    } else {
                        h.min_seek_ms
                            + (h.max_seek_ms - h.min_seek_ms)
                                * (distance / h.capacity_bytes).min(1.0).sqrt()
                    };
                    seek + 0.5 * 60_000.0 / h.rpm
                };
                positioning + transfer(len as f64)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(address: u64, len: u64) -> DeviceRead {
        DeviceRead { file: "x.sst".into(), address, len, at_us: 0.0 }
    }

    #[test]
    fn sequential_reads_are_cheap_and_far_seeks_dear_on_a_disk() {
        let hdd = DeviceModel::Hdd(Hdd::default());
        let seq: Vec<DeviceRead> = (0..8).map(|i| read((1 << 30) + i * 4096, 4096)).collect();
        let scattered: Vec<DeviceRead> = (0..8).map(|i| read(i * (50 << 30), 4096)).collect();
        let mut head = Head { address: 1 << 30 };
        let t_seq = hdd.replay(&seq, &mut head);
        let mut head = Head { address: 1 << 30 };
        let t_far = hdd.replay(&scattered, &mut head);
        // Eight 4 KiB pages in a row: transfer only, ~0.2 ms. Eight far seeks: ~8 x 13 ms.
        assert!(t_seq < 0.3, "{t_seq}");
        assert!(t_far > 60.0 && t_far < 200.0, "{t_far}");
        // A seek's cost grows with distance; a gap on the same track still waits for the
        // platter; a contiguous read does not.
        let near = hdd.one(10 << 20, 4096, 0);
        let far = hdd.one(500 << 30, 4096, 0);
        assert!(near < far);
        let same_track = hdd.one(8192, 4096, 0);
        assert!((same_track - (4.1667 + 4096.0 / 1.5e5)).abs() < 1e-3, "{same_track}");
        assert!(hdd.one(4096, 4096, 4096) < 0.03);
    }

    #[test]
    fn an_ssd_does_not_care_where() {
        let ssd = DeviceModel::Ssd(Ssd::default());
        let mut head = Head::default();
        let a = ssd.replay(&[read(0, 4096)], &mut head);
        let b = ssd.replay(&[read(900 << 30, 4096)], &mut head);
        assert!((a - b).abs() < 1e-12);
        assert!((a - (0.09 + 4096.0 / 5e5)).abs() < 1e-9);
    }
}
