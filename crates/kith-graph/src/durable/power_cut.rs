//! [`PowerCutFs`]: an in-memory [`Fs`] for tests that tracks what was fsynced and loses power
//! after a chosen number of steps, and [`PowerCutFs::check_every_cut`], which replaces a file
//! with power lost at every step in turn and checks that what survives is never torn.
//!
//! The model, adversarial where real file systems differ: a file's bytes survive up to the
//! length its last fsync covered (a truncation is durable at once, so a file rewritten in
//! place loses its old contents before the new ones are synced); directory entries survive
//! as of the directory's last fsync, or all of them where metadata reaches the disk early
//! ([`CutVariant`]). Each write call takes at most 4 KiB, so a large write is several steps.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::{Fs, FsFile};

/// What survives a power loss besides the fsynced bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CutVariant {
    /// Directory entries as of each directory's last fsync (un-synced renames are lost).
    DirSynced,
    /// Every directory change so far (metadata committed before the data).
    DirKept,
    /// As `DirKept`, and half of each file's un-synced tail too (a torn write).
    TornTail,
}

impl CutVariant {
    /// Every variant.
    pub const ALL: [CutVariant; 3] =
        [CutVariant::DirSynced, CutVariant::DirKept, CutVariant::TornTail];
}

#[derive(Debug, Default)]
struct Inode {
    data: Vec<u8>,
    synced_len: usize,
}

#[derive(Debug, Default)]
struct State {
    inodes: Vec<Inode>,
    names: BTreeMap<PathBuf, usize>,
    durable_names: BTreeMap<PathBuf, usize>,
    steps: u64,
    cut_after: Option<u64>,
    cut: bool,
}

impl State {
    /// Counts one step, failing it (and every later one) once power is lost.
    fn step(&mut self) -> io::Result<()> {
        if !self.cut && self.cut_after.is_some_and(|k| self.steps >= k) {
            self.cut = true;
        }
        if self.cut {
            return Err(io::Error::other("power lost (PowerCutFs)"));
        }
        self.steps += 1;
        Ok(())
    }
}

/// Something that writes a file through an [`Fs`], as [`PowerCutFs::check_every_cut`] runs it.
pub type FileWriter<'a> = dyn Fn(&dyn Fs) -> io::Result<()> + 'a;

/// An in-memory file system that can lose power; see the module docs.
#[derive(Clone, Debug, Default)]
pub struct PowerCutFs {
    state: Arc<Mutex<State>>,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

struct SimFile {
    state: Arc<Mutex<State>>,
    inode: usize,
}

impl Write for SimFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut s = lock(&self.state);
        s.step()?;
        let n = buf.len().min(4096);
        s.inodes[self.inode].data.extend_from_slice(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl FsFile for SimFile {
    fn sync_all(&mut self) -> io::Result<()> {
        let mut s = lock(&self.state);
        s.step()?;
        let inode = &mut s.inodes[self.inode];
        inode.synced_len = inode.data.len();
        Ok(())
    }
}

impl Fs for PowerCutFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let mut s = lock(&self.state);
        s.step()?;
        let inode = match s.names.get(path) {
            Some(&i) => {
                s.inodes[i] = Inode::default();
                i
            }
            None => {
                s.inodes.push(Inode::default());
                let i = s.inodes.len() - 1;
                s.names.insert(path.to_path_buf(), i);
                i
            }
        };
        Ok(Box::new(SimFile { state: Arc::clone(&self.state), inode }))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut s = lock(&self.state);
        s.step()?;
        let inode = s.names.remove(from).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        s.names.insert(to.to_path_buf(), inode);
        Ok(())
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut s = lock(&self.state);
        s.step()?;
        let in_dir = |p: &Path| p.parent().unwrap_or(Path::new("")) == dir;
        s.durable_names.retain(|p, _| !in_dir(p));
        let synced: Vec<(PathBuf, usize)> =
            s.names.iter().filter(|(p, _)| in_dir(p)).map(|(p, &i)| (p.clone(), i)).collect();
        s.durable_names.extend(synced);
        Ok(())
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut s = lock(&self.state);
        s.step()?;
        s.names.remove(path).map(drop).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }
}

impl PowerCutFs {
    /// A file system with no files that never loses power until [`arm`](Self::arm)ed.
    pub fn new() -> PowerCutFs {
        PowerCutFs::default()
    }

    /// Loses power after `steps` more steps (every later operation fails).
    pub fn arm(&self, steps: u64) {
        let mut s = lock(&self.state);
        s.steps = 0;
        s.cut_after = Some(steps);
        s.cut = false;
    }

    /// Steps taken since the last [`arm`](Self::arm) (or since creation).
    pub fn steps(&self) -> u64 {
        lock(&self.state).steps
    }

    /// The files a restart would find if power were lost now, with their bytes.
    pub fn after_power_loss(&self, variant: CutVariant) -> BTreeMap<PathBuf, Vec<u8>> {
        let s = lock(&self.state);
        let names = if variant == CutVariant::DirSynced { &s.durable_names } else { &s.names };
        names
            .iter()
            .map(|(p, &i)| {
                let inode = &s.inodes[i];
                let keep = match variant {
                    CutVariant::TornTail => {
                        inode.synced_len + (inode.data.len() - inode.synced_len) / 2
                    }
                    _ => inode.synced_len,
                };
                (p.clone(), inode.data[..keep].to_vec())
            })
            .collect()
    }

    /// Writes `path` with `old`, then, for every step at which power can be lost, on a copy
    /// of that state writes it with `new`, loses power there, puts the surviving files on the
    /// real disk (under their own paths, which must be in a scratch directory) and checks:
    /// `path` holds exactly the old bytes or the new ones (the new ones if `new` returned
    /// `Ok`), and `accept` (the real reader) accepts it. `old` = `None` starts with no file.
    /// Returns the number of cut points tried.
    ///
    /// # Errors
    /// The first violation, naming the step and the variant.
    pub fn check_every_cut(
        path: &Path,
        old: Option<&FileWriter<'_>>,
        new: &FileWriter<'_>,
        accept: &dyn Fn(&Path) -> Result<(), String>,
    ) -> Result<u64, String> {
        let fresh = || -> Result<PowerCutFs, String> {
            let fs = PowerCutFs::new();
            if let Some(old) = old {
                old(&fs).map_err(|e| format!("writing the old file: {e}"))?;
            }
            Ok(fs)
        };
        let old_bytes = fresh()?.after_power_loss(CutVariant::DirSynced).remove(path);
        let reference = fresh()?;
        reference.arm(u64::MAX);
        new(&reference).map_err(|e| format!("writing the new file: {e}"))?;
        let total = reference.steps();
        let new_bytes = reference.after_power_loss(CutVariant::DirSynced).remove(path);
        if new_bytes.is_none() {
            return Err(format!("{}: not durable even after the write returned", path.display()));
        }
        for cut in 0..=total {
            let fs = fresh()?;
            fs.arm(cut);
            let returned = new(&fs).is_ok();
            for variant in CutVariant::ALL {
                let files = fs.after_power_loss(variant);
                let got = files.get(path);
                let at = format!("power lost after step {cut} of {total} ({variant:?})");
                let allowed = if returned {
                    got == new_bytes.as_ref()
                } else {
                    got == old_bytes.as_ref() || got == new_bytes.as_ref()
                };
                if !allowed {
                    let what = match got {
                        None => "missing".to_string(),
                        Some(b) => {
                            format!("{} bytes, neither the old file nor the new one", b.len())
                        }
                    };
                    let acked = if returned { " after the write returned Ok" } else { "" };
                    return Err(format!("{at}: {} is {what}{acked}", path.display()));
                }
                if got.is_some() {
                    restore(&files).map_err(|e| format!("{at}: restoring the files: {e}"))?;
                    accept(path).map_err(|e| format!("{at}: the reader refused it: {e}"))?;
                }
            }
        }
        Ok(total + 1)
    }
}

/// Puts `files` on the real disk, replacing what is there.
fn restore(files: &BTreeMap<PathBuf, Vec<u8>>) -> io::Result<()> {
    for (path, bytes) in files {
        std::fs::write(path, bytes)?;
    }
    Ok(())
}
