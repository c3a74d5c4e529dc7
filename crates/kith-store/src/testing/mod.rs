//! Helpers for tests of kith and the crates above it (not part of the API): a small tmpfs
//! to fill a disk under a store or a journal, and the contract every engine keeps.

mod contract;
mod servers;

pub use contract::contract;

use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs mounted over a directory for one test, unmounted (lazily) when dropped, also
/// when the test fails.
#[derive(Debug)]
pub struct Tmpfs(PathBuf);

impl Tmpfs {
    /// Mounts `size` (as `mount -o size=` takes it: `16m`, `256k`) of tmpfs at `dir`,
    /// creating it, or says why not (not root, no `mount` here, refused).
    pub fn mount(dir: &Path, size: &str) -> Result<Tmpfs, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output()
            .map_err(|e| format!("running mount: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        Ok(Tmpfs(dir.to_path_buf()))
    }

    /// The mount point.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Grows (or shrinks) the tmpfs: space returns.
    ///
    /// # Panics
    /// If the remount fails.
    pub fn resize(&self, size: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .expect("running mount");
        assert!(status.success(), "remounting the tmpfs at {size}");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}
