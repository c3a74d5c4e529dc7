//! Write-back journal replay over segments of any bytes: torn, zero-filled, damaged or
//! forged records are cut, skipped or kept aside, never a panic, never replayed twice.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    kith_feed::fuzzing::replay_segments(&common::scratch(), data);
});
