//! Helpers shared by the integration tests (included with `mod common;`).

use std::path::PathBuf;

/// `shared/datasets` beside the checkout, or `$KITH_DATASETS`. Tests that need the real
/// datasets fail (not skip) without them, so a missing directory is never a silent pass.
#[allow(dead_code)]
pub fn datasets() -> PathBuf {
    // The manifest directory as cargo gives it when running the test, not as it was when the
    // test was compiled: a build cache shared by checkouts at other paths may have compiled it.
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    let dir = std::env::var_os("KITH_DATASETS")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("../../../shared/datasets"));
    assert!(dir.is_dir(), "datasets not found at {}; set KITH_DATASETS", dir.display());
    dir
}
