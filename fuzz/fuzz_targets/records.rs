//! The store's record decoders (profiles, friend-list entries, data chunks, posts), fed both
//! raw values (the checksum must catch them) and payloads sealed with a valid checksum (the
//! structural checks must catch them). Never a panic, never an allocation the bytes do not
//! justify.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    kith_store::fuzzing::decode_records(data);
});
