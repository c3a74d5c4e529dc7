//! Fetches the dashboard's charting library (Apache ECharts, pinned by `ui/package-lock.json`)
//! from npm into this build's own directory, so that `kith serve` embeds it and fetches
//! nothing at run time. Each build directory has its own copy: concurrent builds never share
//! a `node_modules`. Needs `npm` (Debian's package; `scripts/system-deps.sh` installs it);
//! npm's cache makes a second fetch local.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let ui = manifest.join("../../ui");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo")).join("ui");
    let (package, lock) = (ui.join("package.json"), ui.join("package-lock.json"));
    println!("cargo:rerun-if-changed={}", package.display());
    println!("cargo:rerun-if-changed={}", lock.display());
    let lib = out.join("node_modules/echarts/dist/echarts.min.js");
    let installed_lock = out.join("package-lock.json");
    let same_lock =
        std::fs::read(&lock).ok().is_some_and(|l| std::fs::read(&installed_lock).ok() == Some(l));
    if !(same_lock && lib.exists()) {
        std::fs::create_dir_all(&out).expect("create the build's ui directory");
        std::fs::copy(&package, out.join("package.json")).expect("copy ui/package.json");
        std::fs::copy(&lock, &installed_lock).expect("copy ui/package-lock.json");
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"])
            .current_dir(&out)
            .status();
        match status {
            Ok(s) if s.success() => {}
            Ok(s) => panic!(
                "`npm ci` in {} failed ({s}): the dashboard's charting library could not be fetched",
                out.display()
            ),
            Err(e) => panic!(
                "cannot run npm ({e}): kith serve's dashboard embeds a charting library fetched \
                 from npm at build time; install Debian's `npm` (scripts/system-deps.sh does)"
            ),
        }
    }
    assert!(lib.exists(), "`npm ci` did not produce {}", lib.display());
    println!("cargo:rustc-env=KITH_UI_ECHARTS={}", lib.display());
}
