//! Small disks for the trials: a cluster started with `disk_mb` runs each node on a tmpfs of
//! that size mounted on its directory (this needs root), which [`LocalCluster::fill_disk`]
//! fills to the last byte and [`LocalCluster::unfill_disk`] empties again: a full disk
//! under one node, made and undone at will. The mounts, and the data on them, go with
//! `down`.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use super::LocalCluster;
use crate::error::{Error, Result};

/// The file that fills a node's disk.
const FILLER: &str = "filler";

impl LocalCluster {
    /// Mounts a tmpfs of `disk_mb` on the directory of each node of `which` not mounted yet.
    pub(super) fn mount_disks(&self, which: &[usize]) -> Result<()> {
        let Some(mb) = self.disk_mb else { return Ok(()) };
        for &i in which {
            let dir = &self.nodes[i].dir;
            if mounted(dir) {
                continue;
            }
            std::fs::create_dir_all(dir)
                .map_err(Error::io(format!("creating {}", dir.display())))?;
            run(Command::new("mount")
                .args(["-t", "tmpfs", "-o", &format!("size={mb}m")])
                .args(["kith-node".as_ref(), dir.as_os_str()]))?;
        }
        Ok(())
    }

    /// Unmounts the nodes' tmpfs (their data goes with them).
    pub(super) fn unmount_disks(&self) -> Result<()> {
        if self.disk_mb.is_none() {
            return Ok(());
        }
        for n in self.nodes.iter().filter(|n| mounted(&n.dir)) {
            // A process still holding a file there (a node not yet gone) keeps it busy:
            // then it is detached now and freed when that process ends.
            if run(Command::new("umount").arg(&n.dir)).is_err() {
                run(Command::new("umount").arg("-l").arg(&n.dir))?;
            }
        }
        Ok(())
    }

    /// Fills node `index`'s disk until nothing more can be written; returns the bytes
    /// written.
    pub fn fill_disk(&self, index: usize) -> Result<u64> {
        let dir = &self.nodes[self.position(index)?].dir;
        if self.disk_mb.is_none() || !mounted(dir) {
            return Err(Error::Cluster(format!(
                "{}: node {index} has no disk of its own to fill; start the cluster with `kith cluster up --disk-mb N`",
                self.dir.display()
            )));
        }
        let path = dir.join(FILLER);
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(Error::io(format!("creating {}", path.display())))?;
        let mut written = 0u64;
        // Large writes first, then small ones, until even 512 bytes do not fit.
        for size in [1 << 20, 64 << 10, 4 << 10, 512] {
            let chunk = vec![0u8; size];
            while file.write_all(&chunk).is_ok() {
                written += size as u64;
            }
        }
        Ok(written)
    }

    /// Removes what [`LocalCluster::fill_disk`] wrote on node `index`'s disk.
    pub fn unfill_disk(&self, index: usize) -> Result<()> {
        let path = self.nodes[self.position(index)?].dir.join(FILLER);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(Error::io(format!("removing {}", path.display()))(e))
            }
            _ => Ok(()),
        }
    }
}

/// Whether `dir` is a mount point (listed in /proc/self/mounts).
fn mounted(dir: &Path) -> bool {
    let Ok(dir) = dir.canonicalize() else { return false };
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    mounts.lines().filter_map(|l| l.split_whitespace().nth(1)).any(|m| Path::new(m) == dir)
}

fn run(command: &mut Command) -> Result<()> {
    let out = command.output().map_err(Error::io(format!("running {command:?}")))?;
    if !out.status.success() {
        return Err(Error::Cluster(format!(
            "{command:?} failed: {} (a node's own disk needs root)",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}
