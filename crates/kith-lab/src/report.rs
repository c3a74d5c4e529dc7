//! Where the harness's human-readable output goes. With `kith bench ... --json` stdout
//! carries only the results document (the JSON written under `bench/results/`), so the
//! tables and progress lines a benchmark prints move to stderr; [`say!`](crate::say) is
//! `println!` that follows that switch.

use std::sync::atomic::{AtomicBool, Ordering};

static JSON: AtomicBool = AtomicBool::new(false);

/// Sends the human-readable lines to stderr and the results document to stdout.
pub fn set_json(on: bool) {
    JSON.store(on, Ordering::Relaxed);
}

/// Whether stdout is reserved for the results document.
pub fn json() -> bool {
    JSON.load(Ordering::Relaxed)
}

/// `println!`, or `eprintln!` while stdout carries a results document.
#[macro_export]
macro_rules! say {
    ($($t:tt)*) => {
        if $crate::report::json() {
            eprintln!($($t)*)
        } else {
            println!($($t)*)
        }
    };
}
