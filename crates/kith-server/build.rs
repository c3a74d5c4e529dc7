//! Fetches the dashboard's charting library (Apache ECharts, pinned by `ui/package-lock.json`)
//! from npm when it is missing or older than the lock file, so that `kith serve` embeds it and
//! fetches nothing at run time. Needs `npm` (Debian's package; `scripts/system-deps.sh`
//! installs it).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let ui = manifest.join("../../ui");
    let lock = ui.join("package-lock.json");
    let installed = ui.join("node_modules/.package-lock.json");
    let lib = ui.join("node_modules/echarts/dist/echarts.min.js");
    for path in [&lock, &ui.join("package.json"), &installed, &lib] {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    let modified = |p: &PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let stale = match (modified(&installed), modified(&lock)) {
        (Some(installed), Some(lock)) => installed < lock,
        _ => true,
    };
    if stale || !lib.exists() {
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&ui)
            .status();
        match status {
            Ok(s) if s.success() => {}
            Ok(s) => panic!(
                "`npm ci` in {} failed ({s}): the dashboard's charting library could not be fetched",
                ui.display()
            ),
            Err(e) => panic!(
                "cannot run npm ({e}): kith serve's dashboard embeds a charting library fetched \
                 from npm at build time; install Debian's `npm` (scripts/system-deps.sh does)"
            ),
        }
    }
    assert!(lib.exists(), "`npm ci` did not produce {}", lib.display());
    println!("cargo:rustc-env=KITH_UI_ECHARTS={}", lib.canonicalize().expect("exists").display());
}
