//! SONETOR activity traces: any input gets events sorted by time with finite, non-negative
//! times, or an error naming the line.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let path = common::write("trace.tsv", data);
    match kith_workload::read_trace(&path) {
        Ok(events) => {
            assert!(events.iter().all(|e| e.ts.is_finite() && e.ts >= 0.0));
            assert!(events.windows(2).all(|w| w[0].ts <= w[1].ts));
        }
        Err(e) => assert!(e.to_string().contains("trace.tsv"), "error without the file: {e}"),
    }
});
