//! `.kgraph` snapshots. The first input byte says which checksums and header fields to make
//! right before reading, so the fuzzer reaches the structural checks behind the checksums (a
//! forged checksum over a malformed CSR must still be refused).

#![no_main]

use kith_graph::{Format, LoadConfig};
use libfuzzer_sys::fuzz_target;
use xxhash_rust::xxh3::xxh3_64;

#[path = "common.rs"]
mod common;

const HEADER: usize = 128;

fuzz_target!(|data: &[u8]| {
    let Some((&fix, body)) = data.split_first() else { return };
    let mut file = body.to_vec();
    if file.len() >= HEADER {
        if fix & 1 != 0 {
            file[0..8].copy_from_slice(b"KITHGRPH");
            file[8..12].copy_from_slice(&1u32.to_le_bytes());
        }
        if fix & 2 != 0 {
            let len = (file.len() - HEADER) as u64;
            file[56..64].copy_from_slice(&len.to_le_bytes());
        }
        if fix & 4 != 0 {
            let sum = xxh3_64(&file[HEADER..]);
            file[64..72].copy_from_slice(&sum.to_le_bytes());
        }
        if fix & 8 != 0 {
            let sum = xxh3_64(&file[..120]);
            file[120..128].copy_from_slice(&sum.to_le_bytes());
        }
    }
    let path = common::write("g.kgraph", &file);
    let config = LoadConfig { format: Some(Format::Kgraph), ..LoadConfig::default() };
    if let Ok(g) = kith_graph::load(&path, &config) {
        common::check_graph(&g);
    }
});
